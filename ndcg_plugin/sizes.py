"""How the work is cut, in one place: the reader's blocks of text, the engine's blocks of a run in
memory, the pieces side by side evaluates a block in, and how many are evaluated at once. The
modules that cut read them here, as ``sizes.NAME`` when they run (a test sets one with
``monkeypatch.setattr(sizes, "BLOCK_ROWS", 3)``); the reader's block is also its functions'
default ``block_bytes`` and the CLI's ``--block-size``."""
from __future__ import annotations

#: the reader's block: 8 MiB of text, cut at a line's end (ndcg_plugin.reading.sources.blocks)
BLOCK_BYTES = 1 << 23
#: the longest line the reader takes, in bytes (its newline not counted): a longer one is refused
#: as soon as a block shows it, never held whole (ndcg_plugin.reading.sources.blocks). trec_eval's
#: reader is written for lines of MAXLINE = 10,000 bytes (get_trec_results.c: the buffer standard
#: input is read in; a longer line is joined from pieces, each rescanned for every byte it holds)
#: and reads a longer line from a file whole, into memory. A hundred times MAXLINE keeps every line
#: trec_eval was written for (ids of thousands of bytes) and refuses a file without line ends (a
#: stream from /dev/zero, a binary file) after 1 MiB and a block
LINE_BYTES = 1 << 20
#: rows per block of a run in memory (about a streamed text block's rows): engine.block.compute_in_blocks
BLOCK_ROWS = 1 << 18
#: a block is evaluated in pieces of whole queries of about this many rows (an 8 MiB block of a log
#: in two): a piece's arrays then stay in the cache between the steps of its evaluation; measured
#: on 10^6 users (two 8 MiB runs, alternating, 7 each): 3.4-3.5 s against 3.7-3.8 s in whole blocks
PIECE_ROWS = 150_000
#: blocks (or pieces) evaluated at once on worker threads: numpy and Arrow release the GIL for most
#: of a block's work, and the machines this is measured on have two cores
WORKERS = 2
