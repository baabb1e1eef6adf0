"""Exact sums of doubles, so that an aggregate does not depend on the order its per-query values
are added in (the blocks of a streamed run, the partitions of a Spark job, numpy's pairwise sum).

Every finite double is an integer multiple of 2^-1074, so a sum of doubles is an integer number
of those units: :class:`ExactSum` holds it in a Python int. A value is split as
``M * 2^(E - 1074)`` with ``M`` a 53-bit integer mantissa and ``E >= 0`` (read off the IEEE 754
bits); the mantissas are cut into three pieces of at most 18 bits, and each piece is summed per
``E`` by ``np.bincount`` in float64, which is exact while a sum stays below 2^53 (up to 2^35
values per call). A few hundred Python-int operations then combine them. The Spark engine sends
the same per-``E`` sums of the pieces (:meth:`ExactSum.add_parts`), computed by Spark with 64-bit
integers.

:meth:`ExactSum.mean` and :func:`ratio` divide exactly and round once: the result is the double
nearest to the true mean (Python's ``int / int`` is correctly rounded).
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

#: units of a sum: 2^-1074, the smallest subnormal double
UNIT_EXPONENT = 1074
PIECE_BITS = 18
_SLICE = 1 << 16
_PIECE_MASK = (1 << PIECE_BITS) - 1


def split(values: Any) -> tuple[Any, Any, Any, Any]:
    """(E, hi, mid, lo) per value (numpy arrays), read off the IEEE 754 bits: value =
    (hi * 2^36 + mid * 2^18 + lo) * 2^(E - 1074), with 0 <= E, |hi| < 2^17 and 0 <= mid, lo < 2^18."""
    import numpy as np

    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    biased = (bits >> 52) & 0x7FF                        # 0 for zeros and subnormals
    fraction = bits & ((1 << 52) - 1)
    mantissa = np.where(biased > 0, fraction | (1 << 52), fraction)  # the implicit leading 1 of normals
    mantissa = np.where(bits < 0, -mantissa, mantissa)
    shift = np.maximum(biased - 1, 0)                   # a normal is mantissa * 2^(biased - 1075)
    lo = mantissa & _PIECE_MASK
    mid = (mantissa >> PIECE_BITS) & _PIECE_MASK
    hi = mantissa >> (2 * PIECE_BITS)                    # floor: negative values keep lo, mid >= 0
    return shift, hi, mid, lo


def split_sums(values: Any) -> list[tuple[int, int, int, int, int]]:
    """(E, sum of hi, sum of mid, sum of lo, how many) for each E among the values' :func:`split`, a
    numpy array of finite doubles (at most 2^35), summed a slice at a time (the temporaries stay in
    cache); exact (each sum stays below 2^53 in float64). What :meth:`ExactSum.add_parts` takes.
    In one C loop when it is at hand (:mod:`ndcg_plugin.arrays.speedups`; the same sums)."""
    import numpy as np

    from . import speedups
    values = np.asarray(values, dtype=np.float64)
    found = speedups.split_sums(values)
    if found is not None:
        return found
    if not np.isfinite(values).all():
        raise ValueError("an exact sum takes finite values only")
    sums = np.zeros((4, 2047))  # per E (0..2046): the sums of hi, mid, lo, and the count
    for start in range(0, len(values), _SLICE):
        shift, *pieces = split(values[start: start + _SLICE])
        for row, piece in zip(sums, pieces, strict=False):
            row += np.bincount(shift, weights=piece, minlength=2047)
        sums[3] += np.bincount(shift, minlength=2047)
    return [(int(e), int(sums[0, e]), int(sums[1, e]), int(sums[2, e]), int(sums[3, e]))
            for e in np.flatnonzero(sums[3])]


#: :func:`integer_sum` takes integers up to this magnitude: 2^35 of them sum below 2^62
_INTEGER_MAX = 1 << 27


def integer_sum(values: Any) -> int | None:
    """The exact sum of a numpy array of doubles that are all integers of magnitude at most 2^27
    (at most 2^35 of them), summed in int64 (which cannot overflow there); None for any other
    array (a fraction, a larger number, NaN or an infinity), which :func:`split_sums` then sums."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0 or len(values) > 1 << 35:
        return None
    with np.errstate(invalid="ignore"):  # NaN and infinities cast to some integer, then differ from it
        ints = values.astype(np.int64)
    if not np.array_equal(ints, values) or int(np.abs(ints).max()) > _INTEGER_MAX:
        return None
    return int(ints.sum())


class ExactSum:
    """The exact sum of the values added (in units of 2^-1074) and how many there were."""

    def __init__(self) -> None:
        self.units = 0
        self.count = 0

    def add(self, values: Any) -> ExactSum:
        """Add a numpy array of finite doubles (at most 2^35 per call). Small integers (counts,
        0/1 values) are summed as integers: the same sum, in a few passes."""
        whole = integer_sum(values)
        if whole is not None:
            self.units += whole << UNIT_EXPONENT
            self.count += len(values)
            return self
        self.add_parts((part[:4] for part in split_sums(values)), len(values))
        return self

    def add_value(self, value: float) -> ExactSum:
        """Add one finite double (for aggregators fed a value at a time)."""
        num, den = float(value).as_integer_ratio()  # den: a power of two, at most 2^1074
        self.units += num << (UNIT_EXPONENT + 1 - den.bit_length())
        self.count += 1
        return self

    def add_parts(self, parts: Iterable[tuple[int, int, int, int]], count: int = 0) -> ExactSum:
        """Add sums already split: (E, sum of hi, sum of mid, sum of lo) per E, and ``count`` values."""
        for e, hi, mid, lo in parts:
            self.units += ((hi << (2 * PIECE_BITS)) + (mid << PIECE_BITS) + lo) << e
        self.count += count
        return self

    def merge(self, other: ExactSum) -> ExactSum:
        self.units += other.units
        self.count += other.count
        return self

    def total(self) -> float:
        """The sum, correctly rounded to a double (an infinity beyond the largest double)."""
        return _divide(self.units, 1 << UNIT_EXPONENT)

    def mean(self) -> float:
        """The mean of the values added, correctly rounded; NaN when none was added."""
        if self.count == 0:
            return math.nan
        return _divide(self.units, self.count << UNIT_EXPONENT)


def _divide(num: int, den: int) -> float:
    try:
        return num / den  # int / int: correctly rounded
    except OverflowError:
        return math.inf if (num > 0) == (den > 0) else -math.inf


def ratio(num: ExactSum, den: ExactSum) -> float:
    """num's sum over den's, correctly rounded; 0.0 when den's sum is 0."""
    return _divide(num.units, den.units) if den.units else 0.0


def exact_mean(values: Any) -> float:
    """The mean of a numpy array of finite doubles, correctly rounded (NaN when empty)."""
    return ExactSum().add(values).mean()
