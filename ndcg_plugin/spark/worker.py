"""What the engine plan (:mod:`.partitions`) runs in Spark's Python workers: Arrow tables in,
Arrow tables out, numpy and the local engine in between (no pyspark here, so that it is tested
without a Spark session).

Before the shuffle, :func:`shipped_rows` takes one input partition of the run (columns q, d, s
and ``split``, a number per file split) and keeps what the shuffle must carry:

- the rows that can rank within the largest cutoff K in this partition (:func:`ranking.candidates`:
  each query's K best scores, ties at the K-th included), tagged :data:`CAND`: a query's K best
  rows over the whole run are among the union of these over the partitions;
- every row of the queries whose rows here all lie in the first or last run of rows of a file
  split (a query a grouped run continues in the next split or partition), tagged :data:`WHOLE`;
- every row of a (query, doc) pair repeated within the partition (found exactly, by
  :func:`ndcg_plugin.reading.duplicates.mask_of`), so that the evaluation sees the repeat.

The shuffled rows are four columns (q, d, s, x), the fewest Spark hands to a Python worker (each
column costs the JVM per row): a qrels row has no score (s NULL) and its label in x; a run row
has its score (never NULL: the input check refuses a missing one) and x = :func:`source` (its
partition and tag), so every shipped row carries its partition. After the shuffle,
:func:`evaluated` has all the rows of a query that were shipped, and its qrels. A repeated pair
of the run lies within one partition (seen there), or across partitions: then both copies were
shipped when the query was WHOLE in each, and the check is exact; a query that came from several
partitions with CAND rows cannot be checked and is flagged ``unverified`` (the plan then runs
again with every row shipped). A run grouped by query never has such a query.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from ..arrays.block import Block

#: tags of the shuffled run rows
CAND, WHOLE = 0, 1


def source(pid: int | np.ndarray, tag: int | np.ndarray) -> int | np.ndarray:
    """The x column of a shuffled run row: its input partition and its tag, in one number."""
    return pid * 2 + tag


def _tag_and_partition(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x & 1, x >> 1


EXAMPLE = pa.struct([("pair", pa.list_(pa.string())), ("n", pa.int64())])


def strings(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray:
    """Ids as Arrow strings: integer ids as their decimal strings (Spark's cast to string)."""
    if isinstance(col, pa.Array):
        col = pa.chunked_array([col], type=col.type)
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        return col
    return pc.cast(col, pa.string())


def shipped_rows(table: pa.Table, k: int, pid: int) -> pa.Table:
    """The rows of one input partition of the run (q, d, s, split) that go to the shuffle, as
    (q, d, s, x): see the module's docstring."""
    from ..arrays.block import Block
    from ..arrays.columns import group_codes
    from ..ranking.ranked import candidates
    from ..reading.duplicates import mask_of
    from ..reading.formats import LAYOUTS
    from ..reading.lines import Parsed
    n = table.num_rows
    qs, ds = table.column("q"), table.column("d")
    keys = None
    if pa.types.is_integer(qs.type) and pa.types.is_integer(ds.type):
        # integer ids: a value is its one decimal string, so the values themselves are exact keys
        # (grouped as they are, the doc ids as their own fingerprints): no string made per row
        keys = ds.to_numpy().astype(np.int64, copy=False).view(np.uint64)
    else:
        qs, ds = strings(qs), strings(ds)
    score = table.column("s").to_numpy()
    split = table.column("split").to_numpy()
    groups = group_codes(qs)
    codes, sizes = groups.codes, groups.sizes
    new_split = np.ones(n, dtype=bool)
    new_split[1:] = split[1:] != split[:-1]
    new_run = new_split.copy()
    new_run[1:] |= codes[1:] != codes[:-1]
    starts = np.flatnonzero(new_run)
    run_of_row = np.cumsum(new_run) - 1
    first_runs = run_of_row[np.flatnonzero(new_split)]
    edge = np.zeros(len(starts), dtype=bool)
    edge[first_runs] = True
    edge[np.append(first_runs[1:] - 1, len(starts) - 1)] = True       # the last run of each split
    inner = np.bincount(codes[starts][~edge], minlength=len(sizes))
    whole = (inner == 0)[codes]
    keep = whole.copy()
    top = candidates(codes, score, k, False, sizes)
    if top is None:
        keep[:] = True
    else:
        keep[top] = True
    repeated = mask_of(Block(Parsed(LAYOUTS["trec"], qs, ds, score, None), groups, keys))
    if repeated is not None:
        keep |= repeated
    rows = pa.array(np.flatnonzero(keep))
    tag = np.where(whole[rows.to_numpy()], WHOLE, CAND).astype(np.int64)
    return pa.table({"q": table.column("q").take(rows), "d": table.column("d").take(rows),
                     "s": table.column("s").take(rows), "x": pa.array(source(np.int64(pid), tag))})


def _examples(qids: pa.ChunkedArray, docs: pa.ChunkedArray, mask: np.ndarray | None) -> dict:
    """{query id: (the smallest repeated (query, doc) pair of that query, its count)}."""
    if mask is None:
        return {}
    rows = pa.array(np.flatnonzero(mask))
    counts = Counter(zip(qids.take(rows).to_pylist(), docs.take(rows).to_pylist(), strict=True))
    best: dict = {}
    for (q, d), c in counts.items():
        if q not in best or [q, d] < best[q][0]:
            best[q] = ([q, d], c)
    return best


def _example_column(qids: pa.Array, found: dict) -> pa.Array:
    """Per query id, its example of :func:`_examples` (NULL for a query without a repeated pair)."""
    if not found:
        return pa.nulls(len(qids), EXAMPLE)
    return pa.array([{"pair": found[q][0], "n": found[q][1]} if q in found else None for q in qids.to_pylist()],
                    type=EXAMPLE)


def _unverified(run_codes: np.ndarray, nq: int, x: np.ndarray) -> np.ndarray:
    """Per run query: shipped from several partitions, some of them with only its best rows."""
    tag, pids = _tag_and_partition(x.astype(np.int64, copy=False))
    cand = tag == CAND
    if not cand.any():  # every row shipped (ship='all', or no K)
        return np.zeros(nq, dtype=bool)
    cut = np.bincount(run_codes, weights=cand, minlength=nq) > 0
    low, span = int(pids.min()), int(pids.max() - pids.min()) + 1
    pairs = np.unique(run_codes.astype(np.int64) * span + (pids - low))   # (query, partition) once each
    partitions = np.bincount(pairs // span, minlength=nq)
    return (partitions > 1) & cut


_DDL = {pa.string(): "string", pa.bool_(): "boolean", pa.int32(): "int", pa.int64(): "bigint",
        pa.float64(): "double", EXAMPLE: "struct<pair:array<string>,n:bigint>"}


def ddl(schema: pa.Schema) -> str:
    """``schema`` as Spark's DDL string (what ``mapInArrow`` is told its function returns), for the
    column types this module's tables have; another type is refused by name."""
    unknown = [f"{f.name}: {f.type}" for f in schema if f.type not in _DDL]
    if unknown:
        raise ValueError(f"no Spark type for {', '.join(unknown)}; expected one of {sorted(map(str, _DDL))}")
    return ", ".join(f"{f.name} {_DDL[f.type]}" for f in schema)


def wide_schema(outputs: list) -> pa.Schema:
    """The per-query table :func:`evaluated` returns, for ``outputs`` (:class:`.partitions.Output`):
    each query id, whether the qrels have it, the rows the run returned for it, its repeated pairs
    (an example), whether its rows could be checked (``unverified``: see the module), and each
    measure's columns."""
    fields = [("q", pa.string()), ("has_qrels", pa.bool_()), ("returned", pa.int64()), ("dup_qrels", EXAMPLE),
              ("dup_run", EXAMPLE), ("unverified", pa.bool_())]
    for o in outputs:
        fields.append((o.value, pa.float64()))
        if o.hits is not None:
            fields += [(o.hits, pa.float64()), (o.den, pa.float64())]
    return pa.schema(fields)


#: what :func:`evaluated` does with a repeated (query, doc) pair: refuse it, as trec_eval does, or
#: keep the copy with the highest score or label, as the local engine's ``duplicates='max'``
POLICIES = ("error", "max")


def _resolved(block: Block, kind: str, x: np.ndarray | None) -> tuple[Block, np.ndarray | None, pa.Array | None]:
    """``duplicates='max'``: (the block of the rows with each repeated pair kept once, at its highest
    value, as :func:`ndcg_plugin.reading.duplicates.kept_rows` keeps them, or ``block`` when no pair
    is repeated; their ``x``; the query ids whose repeated pair has a CAND row, or None). A query
    shipped with only its best rows cannot drop a copy here: the row that would move up into its
    top K was not shipped."""
    from ..arrays.block import Block
    from ..reading.duplicates import kept_rows, mask_of
    from ..reading.lines import Parsed
    parsed = block.rows
    mask = mask_of(block)
    if mask is None or not mask.any():
        return block, x, None
    doubtful = None
    if x is not None:
        cut = mask & (_tag_and_partition(x.astype(np.int64))[0] == CAND)
        doubtful = pc.unique(parsed.query_id.filter(pa.array(cut))) if cut.any() else None
    numbered = Parsed(parsed.layout, parsed.query_id, parsed.doc_id, parsed.value, np.arange(1, len(parsed) + 1))
    keep = kept_rows(replace(block, rows=numbered), kind, "max", kind)
    if keep is None:
        return block, x, doubtful
    idx = pa.array(keep)
    kept = Parsed(parsed.layout, parsed.query_id.take(idx), parsed.doc_id.take(idx), parsed.value[keep], None)
    return Block.of(kept), None if x is None else x[keep], doubtful


def _applied(duplicates: str, qrels: Block, run: Block, x: np.ndarray) -> tuple:
    """(qrels, run, x, repeated qrels pairs, repeated run pairs, doubtful query ids) under the
    policy, for the blocks of the qrels and of the run: ``error`` finds the repeated pairs
    (:func:`_examples`), ``max`` keeps one copy of each (:func:`_resolved`: then a block of
    fewer rows is made anew)."""
    from ..reading.duplicates import mask_of
    if duplicates == "max":
        qrels, _, _ = _resolved(qrels, "qrels", None)
        run, x, doubtful = _resolved(run, "run", x)
        return qrels, run, x, {}, {}, doubtful
    if duplicates == "error":
        return (qrels, run, x, _examples(qrels.rows.query_id, qrels.rows.doc_id, mask_of(qrels)),
                _examples(run.rows.query_id, run.rows.doc_id, mask_of(run)), None)
    raise ValueError(f"duplicates must be one of {POLICIES}, got {duplicates!r}")


def _sides(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(the qrels rows, the run rows) of a shuffled partition: a qrels row has no score. Batch by
    batch: the shuffle hands over the rows of each map task together, and a map task reads either
    the run or the qrels, so most batches are all one or the other and only the few mixed ones
    are filtered."""
    judged, ranked = [], []
    for batch in table.to_batches():
        nulls = batch.column("s").null_count
        if nulls == 0:
            ranked.append(batch)
        elif nulls == batch.num_rows:
            judged.append(batch)
        else:
            is_qrels = batch.column("s").is_null()
            judged.append(batch.filter(is_qrels))
            ranked.append(batch.filter(pc.invert(is_qrels)))
    return pa.Table.from_batches(judged, table.schema), pa.Table.from_batches(ranked, table.schema)


def evaluated(table: pa.Table, specs: list, outputs: list, duplicates: str = "error") -> pa.Table:
    """One row per query of a shuffled partition (q, d, s, x): its values by the
    local engine (:func:`ndcg_plugin.engine.block.compute`), and the checks (repeated pairs, queries
    that could not be checked), in :func:`wide_schema`. ``duplicates``: one of :data:`POLICIES`;
    under ``max`` a query whose repeated pair came with only its best rows is ``unverified``."""
    from ..arrays.block import Block
    from ..engine import block as engine
    from ..ranking.qrels_index import QrelsIndex
    from ..reading.formats import LAYOUTS
    from ..reading.lines import Parsed
    qt, rt = _sides(table)
    qrels = Parsed(LAYOUTS["trec"], strings(qt.column("q")), strings(qt.column("d")),
                   qt.column("x").to_numpy(), None)
    run = Parsed(LAYOUTS["trec"], strings(rt.column("q")), strings(rt.column("d")),
                 rt.column("s").to_numpy(), None)
    # the group codes and doc fingerprints of each, computed once: for the checks and the engine
    qrels, run, x, dup_qrels, dup_run, doubtful = _applied(duplicates, Block.of(qrels).hashed(), Block.of(run).hashed(),
                                                           rt.column("x").to_numpy())
    codes, run_ids, sizes = run.groups
    unverified = _unverified(codes, len(sizes), x)
    if doubtful is not None:
        unverified |= pc.is_in(run_ids, value_set=doubtful).to_numpy(zero_copy_only=False)
    values: dict = {}
    if len(qrels):
        index = QrelsIndex(qrels)
        run = run.with_q_map(index)
        nq, q_of_run, qids = index.nq, run.q_map, index.qid_values.cast(pa.string())
        values = (engine.empty_values(index, specs) if dup_qrels or dup_run or not len(run)
                  else engine.compute(index, run, specs, engine.Unmatched()))  # counted (returned): not warned of
    else:
        nq, q_of_run, qids = 0, np.full(len(sizes), -1), pa.array([], pa.string())
    matched, only_run = q_of_run >= 0, np.flatnonzero(q_of_run < 0)
    returned, flag = np.zeros(nq, dtype=np.int64), np.zeros(nq, dtype=bool)
    returned[q_of_run[matched]] = sizes[matched]
    flag[q_of_run[matched]] = unverified[matched]
    all_q = pa.concat_arrays([qids, run_ids.take(pa.array(only_run)).cast(pa.string())])
    n = len(all_q)
    columns: dict[str, Any] = {
        "q": all_q, "has_qrels": pa.array(np.arange(n) < nq),
        "returned": pa.array(np.r_[returned, sizes[only_run]].astype(np.int64)),
        "dup_qrels": _example_column(all_q, dup_qrels), "dup_run": _example_column(all_q, dup_run),
        "unverified": pa.array(np.r_[flag, unverified[only_run]])}
    for spec, o in zip(specs, outputs, strict=True):
        vals = values.get(spec)
        for name, arr in ((o.value, None if vals is None else vals.values),
                          (o.hits, None if vals is None else vals.hits),
                          (o.den, None if vals is None else vals.returned)):
            if name is None:
                continue
            full = np.full(n, np.nan)
            if arr is not None:
                full[:nq] = np.asarray(arr, dtype=np.float64)
            # NULL: no value (run-only queries; a measure that leaves misses out, at NaN)
            none = np.arange(n) >= nq
            if o.ignore and name == o.value:
                none |= np.isnan(full)
            columns[name] = pa.array(full, mask=none)
    return pa.table(columns)


#: the rows :func:`sums` returns (those :func:`.jobs.result_rows` groups, before they are grouped)
SUMS = pa.schema([("kind", pa.string()), ("key", pa.string()), ("i", pa.int32()), ("part", pa.string()),
                  ("shift", pa.int32()), ("hi", pa.int64()), ("mid", pa.int64()), ("lo", pa.int64()),
                  ("n", pa.int64()), ("example", EXAMPLE)])


def sums(wide: pa.Table, outputs: list) -> pa.Table:
    """What :func:`.jobs.result_rows` makes of a per-query table (:func:`wide_schema`), without a
    key: per measure i and part, the exact partial sums of the qrels queries' values per binary
    exponent (:func:`ndcg_plugin.arrays.exact.split_sums`; NULL, "no value", left out), and the
    validation rows (``unmatched``, ``run_queries``, ``unverified``: n; ``dup_qrels``,
    ``dup_run``: the smallest example). The partial sums of several partitions add up exactly."""
    from ..arrays.exact import split_sums
    has = wide.column("has_qrels").to_numpy(zero_copy_only=False)
    returned = wide.column("returned").to_numpy()
    out: dict[str, list] = {name: [] for name in SUMS.names}

    def row(kind: str, **given: Any) -> None:
        for name in SUMS.names:
            out[name].append(given.get(name))
        out["kind"][-1] = kind

    for i, o in enumerate(outputs):
        parts = {"hits": o.hits, "den": o.den} if o.hits is not None else {"value": o.value}
        for part, column in parts.items():
            col = wide.column(column)
            values = col.to_numpy(zero_copy_only=False)[has & col.is_valid().to_numpy(zero_copy_only=False)]
            for e, hi, mid, lo, n in split_sums(values):
                row("sum", i=i, part=part, shift=e, hi=hi, mid=mid, lo=lo, n=n)
    row("unmatched", n=int(np.count_nonzero(~has & (returned > 0))))
    row("run_queries", n=int(np.count_nonzero(returned > 0)))
    row("unverified", n=int(np.count_nonzero(wide.column("unverified").to_numpy(zero_copy_only=False))))
    for kind in ("dup_qrels", "dup_run"):
        column = wide.column(kind)
        found = [x for x in column.to_pylist() if x is not None] if column.null_count < len(column) else []
        if found:
            row(kind, example=min(found, key=lambda x: (x["pair"], x["n"])))
    return pa.table(out, schema=SUMS)
