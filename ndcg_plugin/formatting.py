"""How numbers are printed by every command: a fixed number of decimal places, or (``-1``) every
digit of the float (its shortest round-tripping form)."""
from __future__ import annotations

import argparse

ALL_DIGITS = -1


def format_value(value: float, places: int) -> str:
    """``value`` with ``places`` decimals, or its full precision when ``places`` is -1."""
    return repr(float(value)) if places == ALL_DIGITS else f"{value:.{places}f}"


def places_option(text: str) -> int:
    """The ``-p/--places`` option: an integer >= 0, or -1 for every digit."""
    try:
        places = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0 or -1 (every digit), got {text!r}") from None
    if places < ALL_DIGITS:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0 or -1 (every digit), got {places}")
    return places
