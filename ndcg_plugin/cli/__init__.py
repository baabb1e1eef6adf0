"""The command line: the parser (``parser``), the commands (``commands``, the only module that
sets exit codes), ``explain`` and ``reproduce``'s layouts, and the terminal. The argparse
namespace stops here: the code below gets typed options."""
