"""The Spark SQL plan: every measure from one shuffle of the run and the qrels by query id.

1. run rows and qrels rows are put in one DataFrame (a union, tagged) and hash-partitioned by
   query id: the only shuffle of the data. Every later step needs rows clustered by query id
   (or by (query id, doc id), which that partitioning also satisfies), so it runs within a
   partition after a local sort;
2. a window over (query, doc) gives each run row its qrels label (the join) and counts repeated
   pairs; a window over the query tells whether the qrels hold it;
3. a window over the query, ordered by score descending then doc id descending (trec_eval's
   order; Spark compares strings by their UTF-8 bytes), numbers the run rows (the rank), and
   counts judged rows above each row (the rank under ``judged_only``, trec_eval -J);
4. the ideal rankings: for ``ideal='qrels'`` a window over the qrels alone (shuffled on their
   own by query id: a small shuffle), label (or gain) descending, then the IDCG per query, joined
   to the per-query table; for ``ideal='run'`` a window over the run's judged rows;
5. one grouped aggregation per query computes every measure (sums and minima of conditional
   expressions), then one global aggregation gives the means. Only that row reaches the driver.

``ties="average"`` is refused (:func:`ndcg_plugin.spark._specs`): the local engine computes it.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ..specs import Spec

WHITESPACE = r"[ \t\n\x0B\f\r]"


def gain(spec: Spec, label: Column) -> Column:
    """Gain of a label as the local engine's ``gain_of``: rel or 2^rel - 1 for labels >= 0, 0
    for negative labels, then the ``gains`` overrides (whose keys are >= 0)."""
    pos = F.greatest(label, F.lit(0)).cast("double")
    g = pos if spec.variant == "linear" else F.pow(F.lit(2.0), pos) - F.lit(1.0)
    for value, override in spec.gains:
        g = F.when(label == F.lit(int(value)), F.lit(float(override))).otherwise(g)
    return g


def _disc(rank: Column) -> Column:
    return F.lit(1.0) / F.log2(rank.cast("double") + F.lit(1.0))


def _within(rank: Column, cutoff: int | None) -> Column:
    return F.lit(True) if cutoff is None else rank <= F.lit(cutoff)


def _ratio(num: Column, den: Column) -> Column:
    """num / den, 0 where den is 0 (never a division by zero, whatever spark.sql.ansi.enabled)."""
    return F.when(den > 0, num / F.when(den > 0, den).otherwise(F.lit(1.0))).otherwise(F.lit(0.0))


@dataclass(frozen=True)
class Output:
    """Per-query columns of one measure: ``value``; for HitRate_item also ``hits``/``den``."""
    name: str        # str(measure)
    value: str
    hits: str | None = None
    den: str | None = None
    ignore: bool = False   # MRR_ignore: NULL is "no value"


def _gain_key(spec: Spec) -> tuple:
    """Specs with the same key share an ideal ranking: without ``gains`` overrides, ordering by
    label descending orders linear and exponential gains descending alike."""
    return ("label",) if not spec.gains else (spec.variant, spec.gains)


def _gain_order(spec: Spec, label: Column) -> Column:
    return label.desc() if not spec.gains else gain(spec, label).desc()


def align(run: DataFrame, qrels: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Integer ids stay integers through the shuffle (fewer bytes), unless the other input has
    strings there: then both sides are compared as strings."""
    for c in ("q", "d"):
        if run.schema[c].dataType != qrels.schema[c].dataType:
            run, qrels = run.withColumn(c, F.col(c).cast("string")), qrels.withColumn(c, F.col(c).cast("string"))
    return run, qrels


def ranked_rows(run: DataFrame, qrels: DataFrame, specs: list[Spec]) -> tuple[DataFrame, dict]:
    """Steps 1-3, and step 4 for ``ideal='run'``: the tagged rows with label, rank, judged rank
    and ideal ranks as columns. ``run`` has (q, d, s), ``qrels`` (q, d, lab), as from
    :func:`align`. Returns (rows, {ideal key: column name})."""
    r = run.select("q", "d", F.when(F.col("s") == 0, F.lit(0.0)).otherwise(F.col("s")).alias("s"),
                   F.lit(None).cast("long").alias("lab"), F.lit(True).alias("is_run"))
    j = qrels.select("q", "d", F.lit(None).cast("double").alias("s"), F.col("lab").cast("long").alias("lab"),
                     F.lit(False).alias("is_run"))
    rows = r.unionByName(j).repartition("q")
    pair = Window.partitionBy("q", "d")
    query = Window.partitionBy("q")
    rows = rows.select(
        "q", "d", "s", "is_run",
        F.max("lab").over(pair).alias("label"),
        F.count("lab").over(pair).alias("n_qrels_pair"),
        F.sum(F.col("is_run").cast("int")).over(pair).alias("n_run_pair"),
    ).withColumn("has_qrels", F.max((~F.col("is_run")).cast("int")).over(query) > 0)
    judged = F.col("label").isNotNull()
    rows = rows.withColumn("judged", judged).withColumn("kept", F.col("judged") & (F.col("label") >= 0))
    doc = F.col("d").cast("string")  # trec_eval's tie rule compares doc ids as strings (bytes)
    order = Window.partitionBy("q").orderBy(F.col("is_run").desc(), F.col("s").desc(), doc.desc())
    rows = rows.withColumn("rank", F.row_number().over(order))
    if any(s.judged_only for s in specs):
        running = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        rows = rows.withColumn("jrank", F.sum(F.col("kept").cast("int")).over(running))
    ideal_cols: dict = {}
    for spec in specs:
        key = _gain_key(spec)
        if spec.family != "ndcg" or spec.ideal != "run" or key in ideal_cols:
            continue
        name = f"irank{len(ideal_cols)}"
        # the ideal ranking from the run: its judged rows first, by gain descending
        w = Window.partitionBy("q").orderBy((F.col("is_run") & judged).desc(), _gain_order(spec, F.col("label")))
        rows = rows.withColumn(name, F.row_number().over(w))
        ideal_cols[key] = name
    return rows, ideal_cols


def qrels_ideal(qrels: DataFrame, specs: list[tuple[str, Spec]]) -> DataFrame | None:
    """Step 4 for ``ideal='qrels'``, on the qrels alone (a small shuffle of the qrels by query
    id, one sort per ideal ranking): (q, idcg<i>) for each such spec i; None if there is none."""
    wanted = [(i, spec) for i, (_, spec) in enumerate(specs) if spec.family == "ndcg" and spec.ideal == "qrels"]
    if not wanted:
        return None
    rows = qrels.select("q", F.col("lab").cast("long").alias("label")).repartition("q")
    ranks: dict = {}
    for _, spec in wanted:
        key = _gain_key(spec)
        if key not in ranks:
            ranks[key] = f"irank{len(ranks)}"
            rows = rows.withColumn(ranks[key], F.row_number().over(
                Window.partitionBy("q").orderBy(_gain_order(spec, F.col("label")))))
    sums = []
    for i, spec in wanted:
        g, irank = gain(spec, F.col("label")), F.col(ranks[_gain_key(spec)])
        sums.append(F.coalesce(F.sum(F.when((g > 0) & _within(irank, spec.cutoff), g * _disc(irank))),
                               F.lit(0.0)).alias(f"idcg{i}"))
    return rows.groupBy("q").agg(*sums)


def per_query(rows: DataFrame, specs: list[tuple[str, Spec]], ideal_cols: dict,
              ideal: DataFrame | None) -> tuple[DataFrame, list[Output]]:
    """Step 5: one row per query id (run-only queries too, flagged by ``has_qrels``), with each
    measure's per-query value, and the validation counts."""
    is_run, judged, label = F.col("is_run"), F.col("judged"), F.col("label")
    pair = F.concat_ws(" ", F.col("q").cast("string"), F.col("d").cast("string"))
    aggs = [
        F.max(F.col("has_qrels")).alias("has_qrels"),
        F.sum(is_run.cast("long")).alias("returned"),
        F.max(F.when(is_run, F.col("n_run_pair"))).alias("max_run_pair"),
        F.max(F.when(~is_run, F.col("n_qrels_pair"))).alias("max_qrels_pair"),
        F.min(F.when(is_run & (F.col("n_run_pair") > 1), pair)).alias("dup_run"),
        F.min(F.when(~is_run & (F.col("n_qrels_pair") > 1), pair)).alias("dup_qrels"),
    ]
    outputs: list[Output] = []
    post: list[Column] = []
    for i, (name, spec) in enumerate(specs):
        rank = F.col("jrank") if spec.judged_only else F.col("rank")
        eligible = is_run & (F.col("kept") if spec.judged_only else F.lit(True))
        inside = eligible & _within(rank, spec.cutoff)
        relevant = judged & (label >= F.lit(spec.rel))
        v = f"v{i}"
        if spec.family == "ndcg":
            g = F.when(judged, gain(spec, label)).otherwise(F.lit(0.0))
            aggs.append(F.coalesce(F.sum(F.when(inside, g * _disc(rank))), F.lit(0.0)).alias(f"dcg{i}"))
            if spec.ideal == "run":
                irank = F.col(ideal_cols[_gain_key(spec)])
                pool = is_run & judged & (g > 0) & _within(irank, spec.cutoff)
                aggs.append(F.coalesce(F.sum(F.when(pool, g * _disc(irank))), F.lit(0.0)).alias(f"idcg{i}"))
                idcg = F.col(f"idcg{i}")
            else:
                idcg = F.coalesce(F.col(f"idcg{i}"), F.lit(0.0))  # from qrels_ideal, joined below
            post.append(_ratio(F.col(f"dcg{i}"), idcg).alias(v))
            outputs.append(Output(name, v))
        elif spec.family == "hitrate":
            aggs.append(F.count(F.when(inside & relevant, True)).cast("double").alias(f"h{i}"))
            if spec.variant == "query":
                post.append(F.when(F.col(f"h{i}") > 0, F.lit(1.0)).otherwise(F.lit(0.0)).alias(v))
                outputs.append(Output(name, v))
            else:
                den = F.col("returned").cast("double")
                if spec.cutoff is not None:
                    den = F.least(den, F.lit(float(spec.cutoff)))
                post += [den.alias(f"n{i}"), _ratio(F.col(f"h{i}"), den).alias(v)]
                outputs.append(Output(name, v, f"h{i}", f"n{i}"))
        else:
            aggs.append(F.min(F.when(inside & relevant, rank)).alias(f"first{i}"))
            first = F.col(f"first{i}").cast("double")
            miss = F.lit(0.0) if spec.variant == "zero" else F.lit(None).cast("double")
            post.append(F.when(first.isNotNull(), F.lit(1.0) / first).otherwise(miss).alias(v))
            outputs.append(Output(name, v, ignore=spec.variant == "ignore"))
    grouped = rows.groupBy("q").agg(*aggs)
    if ideal is not None:
        grouped = grouped.join(ideal, "q", "left")
    keep = ["q", "has_qrels", "returned", "max_run_pair", "max_qrels_pair", "dup_run", "dup_qrels"]
    keep += [c for o in outputs for c in (o.hits,) if c is not None]
    return grouped.select(*keep, *post), outputs


def aggregate_columns(outputs: list[Output]) -> list[Column]:
    """The aggregate of each measure over the rows of a per-query table restricted to qrels
    queries: the mean; the mean of the values that exist (MRR_ignore); sum(hits)/sum(den)
    (HitRate_item). Columns are named by position (a0, a1, ...), plus ``queries``."""
    cols = [F.count(F.lit(1)).alias("queries")]
    for i, o in enumerate(outputs):
        if o.hits is not None:
            cols.append(_ratio(F.sum(o.hits), F.sum(o.den)).alias(f"a{i}"))
        else:
            cols.append(F.avg(o.value).alias(f"a{i}"))
    return cols


def check_columns() -> list[Column]:
    """Global counts that say whether the input was valid, over the per-query table of all queries."""
    return [
        F.sum(F.when(~F.col("has_qrels"), 1).otherwise(0)).alias("unmatched"),
        F.sum(F.when(F.col("returned") > 0, 1).otherwise(0)).alias("run_queries"),
        F.max("max_run_pair").alias("max_run_pair"),
        F.max("max_qrels_pair").alias("max_qrels_pair"),
        F.min("dup_run").alias("dup_run"),
        F.min("dup_qrels").alias("dup_qrels"),
    ]
