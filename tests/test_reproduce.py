"""reproduce: worked examples computed by hand, repro_eval 0.5.0 as the oracle on real and random
runs, the differences from repro_eval and from the paper shown case by case, table mode, the CLI."""
from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ndcg_plugin import reproduce
from ndcg_plugin.cli.commands import main
from ndcg_plugin.reproduce import lists
from tests.conftest import ROOT, msmarco_file

# --- helpers ----------------------------------------------------------------------------------------


def write_run(path: Path, run: dict, tag: str = "r") -> Path:
    """A TREC run file, each topic's docs in trec_eval's order (score descending, doc id descending),
    so that repro_eval's file order is that order too."""
    with open(path, "w") as f:
        for topic, docs in run.items():
            ranked = sorted(docs, key=lambda d: d[0], reverse=True)
            ranked.sort(key=lambda d: d[1], reverse=True)
            for i, (doc, score) in enumerate(ranked, 1):
                f.write(f"{topic} Q0 {doc} {i} {score!r} {tag}\n")
    return path


def listed(topic_docs: dict) -> dict:
    """{topic: [doc, ...]} in rank order as a run with scores n..1."""
    return {t: [(d, float(len(docs) - i)) for i, d in enumerate(docs)] for t, docs in topic_docs.items()}


def write_qrels(path: Path, qrels: dict) -> Path:
    with open(path, "w") as f:
        for topic, docs in qrels.items():
            for doc, rel in docs.items():
                f.write(f"{topic} 0 {doc} {rel}\n")
    return path


def value(frame: pd.DataFrame, **where) -> float:
    rows = frame
    for key, v in where.items():
        rows = rows[rows[key].isna()] if v is None else rows[rows[key] == v]
    assert len(rows) == 1, (where, rows)
    return rows["value"].iloc[0]


def per_topic(frame: pd.DataFrame, **where) -> dict:
    rows = frame[frame["topic"].notna()]
    for key, v in where.items():
        rows = rows[rows[key] == v]
    return dict(zip(rows["topic"], rows["value"], strict=True))


# --- worked examples, by hand ---------------------------------------------------------------------

# three topics; the original (O) and reproduced (R) lists:
#   1: O = c a d b, R = a c b d   codes in the union a<b<c<d: O -> 2 0 3 1, R -> 0 2 1 3
#      pairs (i<j), sign(dO)*sign(dR): (0,1) - (0,2) + (0,3) - (1,2) - (1,3) + (2,3) -: C=2, D=4, KTU = -2/6
#   2: O = d1 d2 d3, R = d1 d2 d4 codes d1<d2<d3<d4: O -> 0 1 2, R -> 0 1 3: all concordant, KTU = 1
#      (KTU is not a correlation of each doc's two ranks: d3 and d4 are different docs)
#   3: O = x y, R = y x: KTU = -1
LISTS_O = {"1": ["c", "a", "d", "b"], "2": ["d1", "d2", "d3"], "3": ["x", "y"]}
LISTS_R = {"1": ["a", "c", "b", "d"], "2": ["d1", "d2", "d4"], "3": ["y", "x"]}
KTU_BY_HAND = {"1": Fraction(-1, 3), "2": Fraction(1), "3": Fraction(-1)}
# prefix overlaps X_d = |O_{:d} & R_{:d}|, d = 1..4 (a list that ended keeps its docs)
OVERLAP_BY_HAND = {"1": [0, 2, 2, 4], "2": [1, 2, 2, 2], "3": [0, 2, 2, 2]}


def rbo_truncated_by_hand(x: list[int], p: Fraction, depth: int) -> Fraction:
    """sum_{d=1..depth} p^(d-1) X_d / d  /  sum_{d=1..depth} p^(d-1)."""
    num = sum(p ** (d - 1) * Fraction(x[d - 1], d) for d in range(1, depth + 1))
    return num / sum(p ** (d - 1) for d in range(1, depth + 1))


def lists_example(tmp_path) -> dict:
    qrels = write_qrels(tmp_path / "qrels", {t: {docs[0]: 1} for t, docs in LISTS_O.items()})
    orig = write_run(tmp_path / "orig", listed(LISTS_O))
    rep = write_run(tmp_path / "rep", listed(LISTS_R))
    return {"qrels": qrels, "orig": orig, "rep": rep}


def test_ktu_and_truncated_rbo_on_a_worked_example(tmp_path):
    f = lists_example(tmp_path)
    frame = reproduce.runs(f["qrels"], f["orig"], None, f["rep"], None, ["RR"], cutoffs=[2, 4], per_topic=True)
    ktu = per_topic(frame, statistic="KTU", cutoff=4)
    assert ktu == pytest.approx({t: float(v) for t, v in KTU_BY_HAND.items()}, abs=1e-15)
    summary = frame[frame["topic"].isna()]
    assert value(summary, statistic="KTU", cutoff=4) == pytest.approx(float(sum(KTU_BY_HAND.values()) / 3), abs=1e-15)
    # at cutoff 2: 1: O = c a, R = a c -> -1; 2: d1 d2 both -> 1; 3: x y / y x -> -1
    assert per_topic(frame, statistic="KTU", cutoff=2) == {"1": -1.0, "2": 1.0, "3": -1.0}
    for k in (2, 4):
        expected = {t: float(rbo_truncated_by_hand(x, Fraction(95, 100), k)) for t, x in OVERLAP_BY_HAND.items()}
        assert per_topic(frame, statistic="RBO", cutoff=k) == pytest.approx(expected, abs=1e-15)
    # topic 1 at depth 4, written out: (0/1 + .95*2/2 + .95^2*2/3 + .95^3*4/4) / (1 + .95 + .95^2 + .95^3)
    one = (0 + 0.95 + 0.9025 * 2 / 3 + 0.857375) / (1 + 0.95 + 0.9025 + 0.857375)
    assert per_topic(frame, statistic="RBO", cutoff=4)["1"] == pytest.approx(one, abs=1e-15)


def test_extrapolated_rbo_on_the_worked_example(tmp_path):
    # Webber et al. eq. 32 with p = 0.8; equal lengths k: (1-p)/p sum_{d<=k} X_d/d p^d + X_k/k p^k
    f = lists_example(tmp_path)
    frame = reproduce.runs(f["qrels"], f["orig"], None, f["rep"], None, ["RR"], cutoffs=[4], rbo="ext",
                           per_topic=True)
    p = 0.8
    one = 0.25 * (0 / 1 * p + 2 / 2 * p**2 + 2 / 3 * p**3 + 4 / 4 * p**4) + 4 / 4 * p**4
    three = 0.25 * (0 / 1 * p + 2 / 2 * p**2) + 2 / 2 * p**2  # lists of 2: s = l = 2
    two = 0.25 * (1 / 1 * p + 2 / 2 * p**2 + 2 / 3 * p**3) + 2 / 3 * p**3
    got = per_topic(frame, statistic="RBO", cutoff=4)
    assert got == pytest.approx({"1": one, "2": two, "3": three}, abs=1e-15)
    rows = frame[(frame["statistic"] == "RBO") & frame["topic"].isna()]
    assert set(rows["rbo"]) == {"ext"} and set(rows["p"]) == {0.8}
    assert one != pytest.approx(per_topic(reproduce.runs(f["qrels"], f["orig"], None, f["rep"], None, ["RR"],
                                                         cutoffs=[4], per_topic=True), statistic="RBO", cutoff=4)["1"])


def rbo_ext_reference(a: list, b: list, p: float) -> float:
    """Webber et al. (2010) eq. 32, term by term, for lists of any lengths (s <= l)."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    s, ll = len(short), len(long_)
    if s == 0:
        return 0.0 if ll else math.nan

    def x(d):
        return len(set(short[:d]) & set(long_[:d]))

    total = sum(x(d) / d * p**d for d in range(1, ll + 1))
    total += sum(x(s) * (d - s) / (s * d) * p**d for d in range(s + 1, ll + 1))
    return (1 - p) / p * total + ((x(ll) - x(s)) / ll + x(s) / s) * p**ll


def test_extrapolated_rbo_equals_equation_32_on_uneven_random_lists():
    rng = random.Random(5)
    o_lists, r_lists, cases = [], [], []
    for _ in range(300):
        pool = [f"d{i}" for i in range(rng.randint(1, 40))]
        o = rng.sample(pool, rng.randint(0, len(pool)))
        r = rng.sample(pool, rng.randint(0, len(pool)))
        o_lists.append(o)
        r_lists.append(r)
    keys = {d: i for i, d in enumerate(sorted({d for x in o_lists + r_lists for d in x}))}
    depth = 40
    mats = []
    for group in (o_lists, r_lists):
        m = np.full((len(group), depth), lists.PAD, dtype=np.int64)
        for t, docs in enumerate(group):
            m[t, :len(docs)] = [keys[d] for d in docs]
        mats.append(lists.Lists(m, np.array([len(x) for x in group])))
    x = lists.pair(*mats).overlap
    for k in (5, 17, 40):
        got = lists.rbo_ext(x, mats[0].lengths, mats[1].lengths, [k], 0.8)[k]
        cases = [rbo_ext_reference(o[:k], r[:k], 0.8) for o, r in zip(o_lists, r_lists, strict=True)]
        np.testing.assert_allclose(got, cases, rtol=1e-12, atol=1e-15)


def test_ktu_equals_scipy_kendall_tau_b_of_union_codes_on_random_lists():
    rng = np.random.default_rng(7)
    for n in (2, 3, 7, 8, 9, 31, 64, 100, 257):
        topics = 40
        o = np.array([rng.choice(3 * n, n, replace=False) for _ in range(topics)], dtype=np.int64)
        r = np.array([rng.choice(3 * n, n, replace=False) for _ in range(topics)], dtype=np.int64)
        got = lists.ktu(lists.pair(lists.Lists(o, np.full(topics, n)), lists.Lists(r, np.full(topics, n))), n)
        for t in range(topics):
            union = sorted(set(o[t].tolist()) | set(r[t].tolist()))
            code = {d: i for i, d in enumerate(union)}
            expected = stats.kendalltau([code[d] for d in o[t].tolist()], [code[d] for d in r[t].tolist()]).statistic
            assert got[t] == pytest.approx(expected, abs=1e-13), (n, t)


def test_inversion_count_equals_brute_force():
    rng = np.random.default_rng(2)
    for width in (8, 16, 64, 512):
        perms = np.array([rng.permutation(width) for _ in range(20)])
        brute = [sum(int(p[i] > p[j]) for i in range(width) for j in range(i + 1, width)) for p in perms]
        assert lists.inversions(perms).tolist() == brute


def test_doc_keys_order_ids_as_their_bytes_on_both_paths():
    import pyarrow as pa
    ids = ["1", "10", "2", "a", "ab", "a\x00b", "zz", "é", "9999999"]
    for docs in (ids, ids + ["abcdefgh"], ids + ["a-very-long-document-id", "a-very-long-document-iz"]):
        run = pd.DataFrame({"query_id": "t", "doc_id": docs, "score": 1.0})
        ranked = lists.rank_run(run, pa.array(["t"], type=pa.large_string()), 100)
        keys = lists.doc_keys([ranked])[0]
        ranked_docs = [docs[i] for i in ranked.rows]
        assert ranked_docs == sorted(docs, key=lambda d: d.encode(), reverse=True)  # ties: doc id descending
        by_key = [d for _, d in sorted(zip(keys.tolist(), ranked_docs, strict=True))]
        assert by_key == sorted(docs, key=lambda d: d.encode())
        assert len(set(keys.tolist())) == len(docs)
    assert lists.rank_run(pd.DataFrame({"query_id": "t", "doc_id": ["a\x00", "a"], "score": 1.0}),
                          pa.array(["t"], type=pa.large_string()), 10).keys is not None  # 2 bytes: with the length


@pytest.mark.parametrize("seed", range(6))
def test_rank_run_orders_as_trec_eval_sorted_or_not_short_ids_or_long(seed):
    import pyarrow as pa
    rng = random.Random(seed)
    rows = []
    for t in ["3", "1", "20"]:
        for d in rng.sample(range(10**6), rng.randint(1, 60)):
            doc = str(d) if seed % 2 else f"clueweb-{d:08d}"
            rows.append((t, doc, float(rng.randint(0, 5))))
    if seed % 3 == 0:
        rows.sort(key=lambda r: (r[0], -r[2]))  # grouped, sorted by score, ties in random order
    else:
        rng.shuffle(rows)
    topics = pa.array(["1", "20", "3"], type=pa.large_string())
    ranked = lists.rank_run(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]), topics, 25)
    got = [(ranked.topic[i], ranked.rank[i], rows[r][1]) for i, r in enumerate(ranked.rows)]
    expected = []
    for ti, t in enumerate(["1", "20", "3"]):
        docs = sorted((r for r in rows if r[0] == t), key=lambda r: r[1].encode(), reverse=True)
        docs.sort(key=lambda r: r[2], reverse=True)
        expected += [(ti, k, r[1]) for k, r in enumerate(docs[:25])]
    assert sorted(got) == expected


def effects_example(tmp_path) -> dict:
    """RR per topic (relevant doc r at the rank given): orig_b 1, 1/2, 1/3; orig_a 1, 1, 1/2;
    rep_b 1/2, 1/2, 1/3; rep_a 1, 1, 1."""
    qrels = write_qrels(tmp_path / "qrels", {t: {"r": 1} for t in "123"})

    def run(ranks, name):
        return write_run(tmp_path / name, {t: [(d, 10.0 - i) for i, d in enumerate(["x", "y", "z"][: k - 1] + ["r"])]
                                           for t, k in zip("123", ranks, strict=True)})

    return {"qrels": qrels, "ob": run([1, 2, 3], "ob"), "oa": run([1, 1, 2], "oa"), "rb": run([2, 2, 3], "rb"),
            "ra": run([1, 1, 1], "ra")}


def test_arp_rmse_er_deltari_and_p_values_on_a_worked_example(tmp_path):
    f = effects_example(tmp_path)
    frame = reproduce.runs(f["qrels"], f["ob"], f["oa"], f["rb"], f["ra"], ["RR"], cutoffs=[3])
    arp = {"ob": Fraction(11, 18), "oa": Fraction(5, 6), "rb": Fraction(4, 9), "ra": Fraction(1)}
    for (version, run), key in {("original", "baseline"): "ob", ("original", "advanced"): "oa",
                                ("reproduced", "baseline"): "rb", ("reproduced", "advanced"): "ra"}.items():
        assert value(frame, statistic="ARP", run=run, version=version) == pytest.approx(float(arp[key]), abs=1e-15)
    # ER = (1 - 4/9) / (5/6 - 11/18) = (5/9) / (2/9) = 5/2
    assert value(frame, statistic="ER") == pytest.approx(2.5, abs=1e-14)
    # RI_orig = (5/6 - 11/18) / (11/18) = 4/11; RI_rep = (1 - 4/9) / (4/9) = 5/4; DeltaRI = 4/11 - 5/4 = -39/44
    assert value(frame, statistic="DeltaRI") == pytest.approx(-39 / 44, abs=1e-14)
    # differences rep - orig: baseline -1/2 0 0, advanced 0 0 1/2: RMSE sqrt(1/12) each
    for run in ("baseline", "advanced"):
        assert value(frame, statistic="RMSE", run=run) == pytest.approx(math.sqrt(1 / 12), abs=1e-15)
        # paired t: mean -1/6 (or 1/6), sd sqrt(1/12), t = (1/6) / (sqrt(1/12)/sqrt(3)) = 1, df 2:
        # two-sided p = 1 - t / sqrt(2 + t^2) = 1 - 1/sqrt(3)
        assert value(frame, statistic="p_value", run=run) == pytest.approx(1 - 1 / math.sqrt(3), abs=1e-12)
    assert set(frame.loc[frame["statistic"] == "p_value", "test"]) == {"paired t"}


def test_unpaired_t_test_on_another_collection_is_students_pooled_test(tmp_path):
    f = effects_example(tmp_path)
    rep_qrels = write_qrels(tmp_path / "rep_qrels", {t: {"r": 1} for t in "1234"})
    rb = write_run(tmp_path / "rb4", {t: [("x", 2.0), ("r", 1.0)] for t in "1234"})  # RR 1/2 on 4 topics
    ra = write_run(tmp_path / "ra4", {t: [("r", 2.0)] for t in "1234"})  # RR 1
    frame = reproduce.runs(f["qrels"], f["ob"], f["oa"], rb, ra, ["RR"], rep_qrels=rep_qrels)
    assert set(frame["statistic"]) == {"ARP", "p_value", "ER", "DeltaRI"}  # no KTU, RBO, RMSE across collections
    # baseline: [1, 1/2, 1/3] against [1/2] * 4, Student's t with pooled variance, df 5
    expected = stats.ttest_ind([1, 1 / 2, 1 / 3], [1 / 2] * 4, equal_var=True).pvalue
    assert value(frame, statistic="p_value", run="baseline") == pytest.approx(expected, rel=1e-12)
    assert value(frame, statistic="p_value", run="baseline", test="unpaired t") > 0
    assert value(frame, statistic="ER") == pytest.approx((1 - 0.5) / (5 / 6 - 11 / 18), rel=1e-12)


# --- repro_eval 0.5.0 as the oracle -------------------------------------------------------------------

MEASURES = ["nDCG@10", "P@10", "AP", "nDCG", "RR", "R@100", "Bpref"]  # names repro_eval 0.5.0 computes too


def repro_eval_report(qrels, ob, oa, rb, ra, cutoffs, rep_qrels=None) -> dict:
    """repro_eval's numbers: measures after trim() (1000), KTU and RBO after trim(k) with depth k."""
    from repro_eval.Evaluator import RpdEvaluator, RplEvaluator
    from repro_eval.util import arp_scores
    paths = {"run_b_orig_path": str(ob), "run_a_orig_path": str(oa), "run_b_rep_path": str(rb),
             "run_a_rep_path": str(ra)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if rep_qrels is None:
            ev = RpdEvaluator(qrels_orig_path=str(qrels), **paths)
        else:
            ev = RplEvaluator(qrels_orig_path=str(qrels), qrels_rpl_path=str(rep_qrels), **paths)
        ev.trim()
        ev.evaluate()
        out = {"er": ev.er(), "dri": ev.dri(), "ttest": ev.ttest(),
               "arp": {(v, r): arp_scores(getattr(ev, f"run_{r[0]}_{v}_score"))
                       for v in ("orig", "rep") for r in ("baseline", "advanced")}}
        if rep_qrels is None:
            out["rmse"] = ev.rmse()
            for k in sorted(cutoffs, reverse=True):
                ev.trim(k)
                out[("KTU", k)] = ev.ktu(per_topic=True)
                out[("RBO", k)] = ev.rbo(per_topic=True, depth=k)
    return out


def assert_same_as_repro_eval(frame: pd.DataFrame, theirs: dict, measures: list, cutoffs: list, paired=True):
    summary = frame[frame["topic"].isna()]
    for m in measures:
        for (v, r), arp in theirs["arp"].items():
            version = "original" if v == "orig" else "reproduced"
            ours = value(summary, statistic="ARP", measure=m, run=r, version=version)
            assert ours == pytest.approx(arp[m], rel=1e-12)
        for r in ("baseline", "advanced"):
            if paired:
                assert value(summary, statistic="RMSE", measure=m, run=r) == pytest.approx(theirs["rmse"][r][m],
                                                                                           rel=1e-12, abs=1e-15)
            p, expected = value(summary, statistic="p_value", measure=m, run=r), theirs["ttest"][r][m]
            if math.isnan(expected):  # repro_eval: NaN when every difference is 0; ours 1.0 (docs/reproduce.md)
                assert p == 1.0
            else:
                assert p == pytest.approx(expected, rel=1e-9, abs=1e-300)
        assert value(summary, statistic="ER", measure=m) == pytest.approx(theirs["er"][m], rel=1e-9, nan_ok=True)
        assert value(summary, statistic="DeltaRI", measure=m) == pytest.approx(theirs["dri"][m], rel=1e-9, abs=1e-14,
                                                                                           nan_ok=True)
    for k in cutoffs if paired else []:
        for r in ("baseline", "advanced"):
            ktu, rbo = theirs[("KTU", k)][r], theirs[("RBO", k)][r]
            ours_ktu = per_topic(frame, statistic="KTU", cutoff=k, run=r)
            ours_rbo = per_topic(frame, statistic="RBO", cutoff=k, run=r)
            assert set(ours_ktu) == set(ktu)
            for t in ktu:  # repro_eval rounds KTU to 14 decimals
                assert ours_ktu[t] == pytest.approx(ktu[t], abs=1e-13, nan_ok=True)
            assert ours_rbo == rbo  # the same sums in the same order: bit for bit
            # repro_eval's mean is NaN when a topic's KTU is (a list of 1 doc); ours is over the others
            expected = np.nanmean(list(ktu.values())) if not all(math.isnan(v) for v in ktu.values()) else math.nan
            assert value(summary, statistic="KTU", cutoff=k, run=r) == pytest.approx(expected, abs=1e-13, nan_ok=True)


def perturb(run: dict, qrels: dict, rng: random.Random, noise: float, swaps: int, drop: int, boost: float) -> dict:
    """A copy of a run with score noise, relevant docs boosted, adjacent swaps, and docs dropped and
    replaced at the bottom by unseen ids (every list keeps its length: repro_eval's KTU needs it)."""
    out = {}
    for topic, docs in run.items():
        rel = qrels.get(topic, {})
        items = [(d, s + rng.gauss(0, noise) + (boost if rel.get(d, 0) > 0 else 0.0)) for d, s in docs]
        items = [(d, round(s, 2)) for d, s in items]  # rounded: ties
        items.sort(key=lambda x: (-x[1], tuple(-b for b in x[0].encode())))
        for _ in range(swaps):
            i = rng.randrange(len(items) - 1)
            (d1, s1), (d2, s2) = items[i], items[i + 1]
            items[i], items[i + 1] = (d1, s2), (d2, s1)
        n, seen = len(items), {d for d, _ in docs}
        for _ in range(min(drop, n - 1)):
            items.pop(rng.randrange(len(items)))
        low = min(s for _, s in items)
        while len(items) < n:
            d = f"{rng.randrange(10**7)}"
            if d not in seen:
                seen.add(d)
                low -= 0.01
                items.append((d, round(low, 2)))
        out[topic] = items
    return out


def read_dicts(qrels_path, run_path) -> tuple[dict, dict]:
    qrels, run = {}, {}
    for line in open(qrels_path):
        t, _, d, r = line.split()
        qrels.setdefault(t, {})[d] = int(r)
    for line in open(run_path):
        t, _, d, _, s, _ = line.split()
        run.setdefault(t, []).append((d, float(s)))
    return qrels, run


_DL19: dict = {}  # the seeded copies, made once per module: {"dicts": ..., "files": {name: bytes}}


def dl19_reproduction(tmp_path) -> dict:
    """The DL19 BM25 run as the original baseline, and perturbed copies of it (seeded), written to
    ``tmp_path``. The copies are drawn once (the same seed gives the same copies; ~13 tests use
    them): later calls write the first call's bytes into their own ``tmp_path``."""
    qrels_path = msmarco_file("qrels.dl19-passage.txt")
    if not _DL19:
        qrels, bm25 = read_dicts(qrels_path, msmarco_file("run.dl19-passage.bm25.trec"))
        rng = random.Random(19)
        runs = {"ob": bm25, "oa": perturb(bm25, qrels, rng, 0.3, 50, 30, 1.5),
                "rb": perturb(bm25, qrels, rng, 0.3, 50, 30, 0), "ra": perturb(bm25, qrels, rng, 0.5, 80, 60, 1.2)}
        paths = {k: write_run(tmp_path / f"{k}.trec", v, k) for k, v in runs.items()}
        _DL19.update(dicts=(qrels, runs), files={k: p.read_bytes() for k, p in paths.items()})
    paths = {k: tmp_path / f"{k}.trec" for k in _DL19["files"]}
    for k, path in paths.items():
        if not path.exists():
            path.write_bytes(_DL19["files"][k])
    qrels, runs = _DL19["dicts"]
    copies = ({t: dict(d) for t, d in qrels.items()}, {k: {t: list(v) for t, v in r.items()} for k, r in runs.items()})
    return {"qrels": qrels_path, **paths, "dicts": copies}


def test_equals_repro_eval_on_the_dl19_bm25_run_and_perturbed_copies(tmp_path):
    pytest.importorskip("repro_eval", reason="the test extra's repro-eval==0.5.0 is not installed")
    f = dl19_reproduction(tmp_path)
    cutoffs = [5, 10, 100, 1000]
    frame = reproduce.runs(f["qrels"], f["ob"], f["oa"], f["rb"], f["ra"], MEASURES, cutoffs=cutoffs, per_topic=True)
    theirs = repro_eval_report(f["qrels"], f["ob"], f["oa"], f["rb"], f["ra"], cutoffs)
    assert_same_as_repro_eval(frame, theirs, MEASURES, cutoffs)
    assert 0 < value(frame, statistic="KTU", cutoff=1000, run="baseline", topic=None) < 0.5  # a real difference


def test_equals_repro_eval_on_another_collection_with_unpaired_tests(tmp_path):
    pytest.importorskip("repro_eval", reason="the test extra's repro-eval==0.5.0 is not installed")
    f = dl19_reproduction(tmp_path)
    qrels, runs = f["dicts"]
    other = sorted(qrels)[1::2]  # the "other collection": the odd DL19 topics
    rep_qrels = write_qrels(tmp_path / "qrels.other", {t: qrels[t] for t in other})
    rng = random.Random(4)
    sub = {t: runs["ob"][t] for t in other}
    rb = write_run(tmp_path / "rb.other", perturb(sub, qrels, rng, 0.3, 50, 30, 0))
    ra = write_run(tmp_path / "ra.other", perturb(sub, qrels, rng, 0.3, 50, 30, 1.0))
    frame = reproduce.runs(f["qrels"], f["ob"], f["oa"], rb, ra, MEASURES, rep_qrels=rep_qrels)
    theirs = repro_eval_report(f["qrels"], f["ob"], f["oa"], rb, ra, [], rep_qrels=rep_qrels)
    assert_same_as_repro_eval(frame.assign(topic=None), theirs, MEASURES, [], paired=False)
    assert value(frame, statistic="ARP", measure="AP", run="baseline", version="reproduced") != value(
        frame, statistic="ARP", measure="AP", run="baseline", version="original")


def random_reproduction(tmp_path, seed: int, long_ids: bool) -> dict:
    """Random topics, docs (ids of 1 to 7 bytes, or some of 20), scores with ties and list lengths;
    each reproduced list as long as its original (repro_eval's KTU needs that), a qrels topic that
    no run has."""
    rng = random.Random(seed)
    topics = [f"q{i}" for i in range(rng.randint(3, 12))]

    def doc():
        return f"doc-{rng.randrange(10**15):015d}" if long_ids and rng.random() < 0.3 else str(rng.randrange(300))

    def docs(n):
        out = []
        while len(out) < n:
            d = doc()
            if d not in out:
                out.append(d)
        return out

    qrels = {t: {d: rng.choice([0, 1, 1, 2]) for d in docs(rng.randint(1, 15))} for t in topics + ["unretrieved"]}
    lengths = {t: rng.randint(2, 40) for t in topics}
    runs = {}
    for name in ("ob", "oa", "rb", "ra"):
        base = runs.get({"rb": "ob", "ra": "oa"}.get(name, ""), None)
        runs[name] = {}
        for t in topics:
            ids = [d for d, _ in base[t]] if base else docs(lengths[t])
            if base:  # a reproduction: some docs replaced, all scores redrawn
                fresh = [d for d in docs(2 * len(ids)) if d not in ids]
                ids = [fresh.pop() if rng.random() < 0.3 and fresh else d for d in ids]
            runs[name][t] = [(d, float(rng.randint(0, 8))) for d in ids]
    paths = {k: write_run(tmp_path / f"{k}.{seed}", v, k) for k, v in runs.items()}
    return {"qrels": write_qrels(tmp_path / f"qrels.{seed}", qrels), **paths}


@pytest.mark.parametrize("seed", range(8))
def test_equals_repro_eval_on_random_runs(tmp_path, seed):
    pytest.importorskip("repro_eval", reason="the test extra's repro-eval==0.5.0 is not installed")
    f = random_reproduction(tmp_path, seed, long_ids=seed % 2 == 1)
    cutoffs = [1, 3, 10, 1000]
    measures = ["nDCG@10", "P@5", "AP", "RR"]
    frame = reproduce.runs(f["qrels"], f["ob"], f["oa"], f["rb"], f["ra"], measures, cutoffs=cutoffs, per_topic=True)
    theirs = repro_eval_report(f["qrels"], f["ob"], f["oa"], f["rb"], f["ra"], cutoffs)
    assert_same_as_repro_eval(frame, theirs, measures, cutoffs)


# --- where repro_eval 0.5.0 differs, case by case (docs/reproduce.md) --------------------------------

def small_qrels(tmp_path, topics="12") -> Path:
    return write_qrels(tmp_path / "qrels.small", {t: {"d1": 1, "d7": 2} for t in topics})


def test_a_file_not_sorted_by_score_is_read_in_trec_eval_order_not_in_file_order(tmp_path):
    pytest.importorskip("repro_eval", reason="the test extra's repro-eval==0.5.0 is not installed")
    qrels = small_qrels(tmp_path)
    docs = {t: [(f"d{i}", float(i)) for i in range(20)] for t in "12"}
    sorted_run = write_run(tmp_path / "sorted", docs)
    ascending = tmp_path / "ascending"  # the same lines, lowest score first
    ascending.write_text("".join(reversed(sorted_run.read_text().splitlines(keepends=True))))
    frame = reproduce.runs(qrels, sorted_run, sorted_run, ascending, ascending, ["AP"], cutoffs=[1000])
    assert value(frame, statistic="KTU", run="baseline") == 1.0  # the same ranking, whatever the file order
    penalised = rbo_truncated_by_hand([min(d, 20) for d in range(1, 1001)], Fraction(95, 100), 1000)
    assert value(frame, statistic="RBO", run="baseline") == pytest.approx(float(penalised), abs=1e-13)
    theirs = repro_eval_report(qrels, sorted_run, sorted_run, ascending, ascending, [1000])
    ranked = [f"d{i}" for i in reversed(range(20))]  # file order: the reproduction reversed
    code = {d: i for i, d in enumerate(sorted(ranked))}
    reversed_ktu = stats.kendalltau([code[d] for d in ranked], [code[d] for d in reversed(ranked)]).statistic
    assert theirs[("KTU", 1000)]["baseline"]["1"] == pytest.approx(reversed_ktu, abs=1e-13)
    assert reversed_ktu == pytest.approx(-0.66315789473684, abs=1e-13)
    assert value(frame, statistic="RMSE", measure="AP", run="baseline") == theirs["rmse"]["baseline"]["AP"] == 0


def test_lists_of_different_lengths_compare_their_common_prefix_where_repro_eval_fails(tmp_path):
    pytest.importorskip("repro_eval", reason="the test extra's repro-eval==0.5.0 is not installed")
    qrels = small_qrels(tmp_path, "1")
    orig = write_run(tmp_path / "o", listed({"1": ["a", "b", "c", "d", "e"]}))
    rep = write_run(tmp_path / "r", listed({"1": ["b", "a", "c"]}))
    frame = reproduce.runs(qrels, orig, None, rep, None, ["AP"], cutoffs=[1000])
    # the first 3 positions: a b c / b a c, codes 0 1 2 / 1 0 2: C = 2, D = 1, KTU = 1/3
    assert value(frame, statistic="KTU") == pytest.approx(1 / 3, abs=1e-15)
    with pytest.raises(ValueError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        repro_eval_report(qrels, orig, orig, rep, rep, [1000])  # scipy: shapes incompatible


def test_a_topic_missing_from_the_reproduced_run_has_rbo_0_where_repro_eval_skips_it(tmp_path):
    pytest.importorskip("repro_eval", reason="the test extra's repro-eval==0.5.0 is not installed")
    qrels = small_qrels(tmp_path, "123")
    docs = {t: [f"d{i}" for i in range(10)] for t in "123"}
    orig = write_run(tmp_path / "o", listed(docs))
    rep = write_run(tmp_path / "r", listed({t: d for t, d in docs.items() if t != "3"}))
    frame = reproduce.runs(qrels, orig, orig, rep, rep, ["AP"], cutoffs=[10], per_topic=True)
    assert per_topic(frame, statistic="RBO", run="baseline", cutoff=10) == {"1": 1.0, "2": 1.0, "3": 0.0}
    ktu = per_topic(frame, statistic="KTU", run="baseline", cutoff=10)
    assert ktu["1"] == ktu["2"] == 1.0 and math.isnan(ktu["3"])
    assert value(frame, statistic="RBO", run="baseline", topic=None) == pytest.approx(2 / 3)
    assert value(frame, statistic="KTU", run="baseline", topic=None) == 1.0
    assert value(frame, statistic="KTU", run="baseline", topic=None, cutoff=10) == 1.0
    theirs = repro_eval_report(qrels, orig, orig, rep, rep, [10])
    assert set(theirs[("RBO", 10)]["baseline"]) == {"1", "2"}  # repro_eval leaves topic 3 out: mean 1.0
    # both score the missing topic 0 for the measures
    assert value(frame, statistic="RMSE", measure="AP", run="baseline") == pytest.approx(
        theirs["rmse"]["baseline"]["AP"], rel=1e-12)


def test_a_one_doc_topic_has_no_ktu_and_leaves_the_mean_to_the_others(tmp_path):
    pytest.importorskip("repro_eval", reason="the test extra's repro-eval==0.5.0 is not installed")
    qrels = small_qrels(tmp_path)
    orig = write_run(tmp_path / "o", listed({"1": ["a", "b", "c"], "2": ["a"]}))
    rep = write_run(tmp_path / "r", listed({"1": ["a", "c", "b"], "2": ["a"]}))
    frame = reproduce.runs(qrels, orig, orig, rep, rep, ["AP"], cutoffs=[1000])
    assert value(frame, statistic="KTU", run="baseline") == pytest.approx(1 / 3)  # topic 1 only: C 2, D 1
    assert value(frame, statistic="KTU", run="baseline", topics=1) == pytest.approx(1 / 3)
    theirs = repro_eval_report(qrels, orig, orig, rep, rep, [1000])
    assert math.isnan(np.mean(list(theirs[("KTU", 1000)]["baseline"].values())))


def test_p_value_of_a_measure_equal_on_every_topic_is_1_where_repro_eval_gives_nan(tmp_path):
    pytest.importorskip("repro_eval", reason="the test extra's repro-eval==0.5.0 is not installed")
    qrels = write_qrels(tmp_path / "q", {t: {"d0": 1, "d15": 1} for t in "123"})
    docs = {t: [f"d{i}" for i in range(20)] for t in "123"}
    orig = write_run(tmp_path / "o", listed(docs))
    moved = {t: d[:10] + list(reversed(d[10:])) for t, d in docs.items()}  # the same top 10
    rep = write_run(tmp_path / "r", listed(moved))
    frame = reproduce.runs(qrels, orig, orig, rep, rep, ["P@10", "AP"], cutoffs=[10])
    theirs = repro_eval_report(qrels, orig, orig, rep, rep, [10])
    assert math.isnan(theirs["ttest"]["baseline"]["P@10"])
    assert value(frame, statistic="p_value", measure="P@10", run="baseline") == 1.0
    assert value(frame, statistic="p_value", measure="AP", run="baseline") == pytest.approx(
        theirs["ttest"]["baseline"]["AP"], rel=1e-12)


def test_paired_p_values_follow_the_paper_where_repro_eval_readme_lists_others():
    # per-topic P@10, AP and nDCG of WCrobust04 / WCrobust0405 and their replication no. 14 (core17),
    # from the paper's own results (tests/data/sigir2020_wcrobust_run14.csv)
    data = pd.read_csv(Path(__file__).parent / "data" / "sigir2020_wcrobust_run14.csv", comment="#",
                       dtype={"topic": str})
    readme = {("baseline", "P@10"): 0.6547, ("baseline", "AP"): 0.7001, ("baseline", "nDCG"): 0.5679,
              ("advanced", "P@10"): 0.6977, ("advanced", "AP"): 0.6543, ("advanced", "nDCG"): 0.5655}
    paper = {("baseline", "P@10"): 0.4016, ("baseline", "AP"): 0.1815, ("baseline", "nDCG"): 0.0299,
             ("advanced", "P@10"): 0.1678, ("advanced", "AP"): 0.0147, ("advanced", "nDCG"): 0.0010}
    for (run, m), listed_p in readme.items():
        rows = data[(data["run"] == run) & (data["measure"] == m)]
        o, r = rows["original"].to_numpy(), rows["reproduced"].to_numpy()
        paired = reproduce.paired_pvalue(o, r)
        assert round(paired, 4) == paper[(run, m)]  # topic by topic, as the paper's Matlab ttest pairs them
        assert abs(paired - listed_p) > 0.2  # the README's numbers are not a paired test of these scores ...
        assert reproduce.unpaired_pvalue(o, r) == pytest.approx(listed_p, abs=0.03)  # ... they are near an unpaired one
        # the same data gives the README's RMSE, so the scores are the README's: only the pairing differs
    rmse = {m: math.sqrt(np.mean((g["original"] - g["reproduced"]) ** 2))
            for m, g in data[data["run"] == "baseline"].groupby("measure")}
    assert {m: round(v, 4) for m, v in rmse.items()} == {"P@10": 0.2, "AP": 0.0748, "nDCG": 0.0742}


def test_rbo_of_the_paper_is_the_extrapolated_one_repro_eval_computes_the_truncated_one(tmp_path):
    # identical lists of 10 docs: extrapolated RBO 1 at any cutoff; the truncated RBO at depth 1000
    # (repro_eval's default) 0.6724215401753183 (its value on the same lists), 1 at depth 10
    qrels = small_qrels(tmp_path, "1")
    run = write_run(tmp_path / "o", listed({"1": [f"d{i}" for i in range(10)]}))
    truncated = reproduce.runs(qrels, run, None, run, None, ["AP"], cutoffs=[10, 1000])
    assert value(truncated, statistic="RBO", cutoff=1000) == 0.6724215401753183
    assert value(truncated, statistic="RBO", cutoff=10) == 1.0
    ext = reproduce.runs(qrels, run, None, run, None, ["AP"], cutoffs=[10, 1000], rbo="ext")
    assert value(ext, statistic="RBO", cutoff=1000) == pytest.approx(1.0, abs=1e-15)
    assert set(ext.loc[ext["statistic"] == "RBO", "p"]) == {0.8}
    assert set(truncated.loc[truncated["statistic"] == "RBO", "p"]) == {0.95}


# --- the measures: as eval computes them -----------------------------------------------------------

def test_measures_per_topic_and_aggregates_equal_evals_when_evaluated_in_blocks(tmp_path, monkeypatch):
    from ndcg_plugin.evaluation import Evaluation
    from ndcg_plugin.measures import parse_measures
    from ndcg_plugin.reproduce import scores as reproduce_scores
    qrels = reproduce_scores.read_qrels(msmarco_file("qrels.dl19-passage.txt"))
    topics = reproduce_scores.topics_of(qrels)
    lines = msmarco_file("run.dl19-passage.bm25.trec").read_text().splitlines(keepends=True)
    path = tmp_path / "run"
    path.write_text("".join(line for line in lines if not line.startswith(topics[3] + " ")))  # a topic missing
    measures = parse_measures(["nDCG@10", "RR", "MRR_ignore@10", "HitRate_item@10", "AP", "P@10"])
    whole = Evaluation(measures, qrels=qrels).compute(str(path), per_query=True)
    expected = {(m.query_id, str(m.measure)): m.value for m in whole.metrics()}
    from ndcg_plugin import sizes
    from ndcg_plugin.engine import block as engine
    monkeypatch.setattr(sizes, "BLOCK_ROWS", 3000)
    pieces = []
    real = engine.compute_block
    monkeypatch.setattr(engine, "compute_block", lambda *a, **k: pieces.append(1) or real(*a, **k))
    run = reproduce_scores.read_run(path)
    scored = reproduce_scores.evaluate(Evaluation(measures, qrels=qrels), run, topics)
    assert len(pieces) > 10  # the run evaluated in blocks of whole topics
    assert scored.aggregates == {str(m): v for m, v in whole.aggregates.items()}  # exactly eval's numbers
    for j, m in enumerate(scored.measures):
        for i, t in enumerate(topics):
            want = expected.get((t, m), float("nan"))
            assert scored.values[i, j] == pytest.approx(want, abs=1e-15, nan_ok=True), (t, m)
    assert scored.column("AP")[3] == 0 and math.isnan(scored.column("MRR_ignore@10")[3])


def test_t_tests_equal_scipys_and_handle_degenerate_samples():
    rng = np.random.default_rng(11)
    for n in (2, 3, 10, 43, 500):
        a, b = rng.random(n), rng.random(n)
        assert reproduce.paired_pvalue(a, b) == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-10)
        c = rng.random(n + 3)
        assert reproduce.unpaired_pvalue(a, c) == pytest.approx(stats.ttest_ind(a, c).pvalue, rel=1e-10)
    assert reproduce.paired_pvalue(np.array([0.1, 0.5, 0.7]), np.array([0.1, 0.5, 0.7])) == 1.0  # scipy: nan
    assert reproduce.paired_pvalue(np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0])) == 0.0  # scipy: 0
    assert math.isnan(reproduce.paired_pvalue(np.array([0.1]), np.array([0.2])))
    assert reproduce.unpaired_pvalue(np.array([0.5, 0.5]), np.array([0.5, 0.5, 0.5])) == 1.0  # scipy: nan
    assert reproduce.unpaired_pvalue(np.array([0.5, 0.5]), np.array([0.2, 0.2])) == 0.0  # scipy: 0
    assert math.isnan(reproduce.unpaired_pvalue(np.array([0.5]), np.array([0.2])))


# --- table mode --------------------------------------------------------------------------------------

def trec_eval_table(tmp_path, extra: str = "") -> Path:
    """trec_eval's own printed numbers for the DL19 BM25 run (shared data: trec_eval -c -l 2 ...) as a
    paper's table: nDCG@10 0.5058, nDCG@100 0.5018, R(rel=2)@1000 0.7501, AP(rel=2)@10 0.1272, AP(rel=2)@100 0.2476."""
    text = msmarco_file("run.dl19-passage.bm25.trec_eval.txt").read_text()
    names = {"ndcg_cut_10": "nDCG@10", "ndcg_cut_100": "nDCG@100", "recall_1000": "R(rel=2)@1000",
             "map_cut_10": "AP(rel=2)@10", "map_cut_100": "AP(rel=2)@100"}
    rows = [(names[f[0]], f[2]) for f in (line.split() for line in text.splitlines()) if f[1] == "all"]
    assert len(rows) == 5
    path = tmp_path / "published.csv"
    path.write_text("run,measure,value\n" + "".join(f'bm25,"{m}",{v}\n' for m, v in rows) + extra)
    return path


def bm25_copy(tmp_path) -> Path:
    path = tmp_path / "bm25.trec"
    path.write_text(msmarco_file("run.dl19-passage.bm25.trec").read_text())
    return path


def test_table_mode_matches_trec_evals_printed_numbers(tmp_path):
    frame = reproduce.table(trec_eval_table(tmp_path), msmarco_file("qrels.dl19-passage.txt"), [bm25_copy(tmp_path)])
    assert list(frame.columns) == ["run", "measure", "published", "decimals", "ours", "difference", "units",
                                   "within_rounding"]
    assert frame["within_rounding"].all() and len(frame) == 5
    assert set(frame["decimals"]) == {4} and (frame["units"].abs() <= 0.5).all()
    row = frame[frame["measure"] == "nDCG@10"].iloc[0]
    assert row["published"] == 0.5058 and round(row["ours"], 4) == 0.5058 and row["run"] == "bm25.trec"


def test_table_mode_flags_a_cell_off_by_more_than_the_rounding_and_exits_1(tmp_path, capsys):
    # ours: nDCG@10 0.50583..., so 0.506 with 3 decimals matches, 0.505 (3) and 0.5059 (4) do not
    published = trec_eval_table(tmp_path, "bm25,RR,0.9\n")
    published.write_text(published.read_text().replace("bm25,\"nDCG@10\",0.5058", "bm25,nDCG@10,0.506")
                         .replace("bm25,\"nDCG@100\",0.5018", "bm25,nDCG@100,0.5028"))
    frame = reproduce.table(published, msmarco_file("qrels.dl19-passage.txt"), {"bm25": bm25_copy(tmp_path)})
    match = dict(zip(frame["measure"], frame["within_rounding"], strict=True))
    assert match == {"nDCG@10": True, "nDCG@100": False, "R(rel=2)@1000": True, "AP(rel=2)@10": True,
                     "AP(rel=2)@100": True, "RR": False}
    units = dict(zip(frame["measure"], frame["units"], strict=True))
    assert units["nDCG@100"] == pytest.approx(-10, abs=0.5)  # 0.5018 printed by trec_eval vs 0.5028: 10 units
    code = main(["reproduce", "table", str(published), str(msmarco_file("qrels.dl19-passage.txt")),
                 str(bm25_copy(tmp_path))])
    out = capsys.readouterr().out
    assert code == 1 and "4 of 6 cells match the paper within its rounding" in out
    assert "| bm25.trec | nDCG@10 | 0.506 | 0.506 |" in out


def test_table_mode_percent_decimals_column_and_names(tmp_path):
    published = tmp_path / "p.csv"
    published.write_text("run,measure,value,decimals\nBM25,nDCG@10,50.6,1\nBM25,AP(rel=2)@100,24.76,\n")
    frame = reproduce.table(published, msmarco_file("qrels.dl19-passage.txt"), [bm25_copy(tmp_path)], names=["BM25"],
                            percent=True)
    assert frame["within_rounding"].all() and frame["decimals"].tolist() == [1, 2]
    assert frame["ours"].iloc[0] == pytest.approx(50.583, abs=1e-3)


@pytest.mark.parametrize("csv, message", [
    ("run,measure\nbm25,AP\n", "lacks the column(s) value"),
    ("run,measure,value,note\nbm25,AP,0.3,x\n", "unknown column(s) note"),
    ("run,measure,value\nbm25,AP,n/a\n", ":2: value 'n/a' is not a decimal number"),
    ("run,measure,value\nbm25,AP,0.3\nbm25,AP,0.31\n", ":3: run 'bm25', measure 'AP' is also on line 2"),
    ("run,measure,value\nbm26,AP,0.3\n", ":2: run 'bm26' is none of the runs given (bm25.trec)"),
    ("run,measure,value\nbm25,NotAMeasure@5,0.3\n", ":2:"),
    ("run,measure,value,decimals\nbm25,AP,0.3,x\n", ":2: decimals 'x' is not an integer"),
    ("", "not a CSV table"),
])
def test_table_mode_bad_published_tables_end_in_one_line_and_status_2(tmp_path, capsys, csv, message):
    published = tmp_path / "p.csv"
    published.write_text(csv)
    code = main(["reproduce", "table", str(published), str(msmarco_file("qrels.dl19-passage.txt")),
                 str(bm25_copy(tmp_path))])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err


def test_table_mode_refuses_a_run_the_table_does_not_name(tmp_path, capsys):
    other = tmp_path / "other.trec"
    other.write_text(bm25_copy(tmp_path).read_text())
    code = main(["reproduce", "table", str(trec_eval_table(tmp_path)), str(msmarco_file("qrels.dl19-passage.txt")),
                 str(bm25_copy(tmp_path)), str(other)])
    err = capsys.readouterr().err
    assert code == 2 and "run other.trec is in no row of" in err and err.count("\n") == 1


# --- the command -------------------------------------------------------------------------------------

def test_runs_jsonl_carries_the_fields_scripts_rely_on(tmp_path, capsys):
    f = dl19_reproduction(tmp_path)
    code = main(["reproduce", "runs", str(f["qrels"]), str(f["ob"]), str(f["oa"]), str(f["rb"]), str(f["ra"]),
                 "-m", "nDCG@10", "MRR_ignore(rel=2)@10", "-o", "jsonl", "--cutoffs", "10", "1000"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    assert {r["statistic"] for r in lines} == {"ARP", "RMSE", "KTU", "RBO", "ER", "DeltaRI", "p_value"}
    for r in lines:
        assert isinstance(r["value"], float)
        assert ("run" in r) == (r["statistic"] not in ("ER", "DeltaRI"))
        assert ("measure" in r) == (r["statistic"] not in ("KTU", "RBO"))
        assert ("cutoff" in r) == (r["statistic"] in ("KTU", "RBO"))
        assert r.get("run") in (None, "baseline", "advanced")
    arp = [r for r in lines if r["statistic"] == "ARP" and r["measure"] == "nDCG@10" and r["run"] == "baseline"]
    assert {r["version"] for r in arp} == {"original", "reproduced"}
    original = next(r["value"] for r in arp if r["version"] == "original")
    assert round(original, 4) == 0.5058  # trec_eval's nDCG@10 of the DL19 BM25 run
    ignore = [r for r in lines if r["statistic"] == "RMSE" and r["measure"] == "MRR_ignore(rel=2)@10"]
    assert all(0 < r["topics"] < 43 for r in ignore)  # only the topics with a value in both runs


def test_runs_markdown_latex_csv_and_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    f = dl19_reproduction(tmp_path)
    args = ["reproduce", "runs", str(f["qrels"]), str(f["ob"]), str(f["oa"]), str(f["rb"]), str(f["ra"]), "-m", "AP",
            "--cutoffs", "10"]
    assert main([*args, "--plot", str(tmp_path / "d.png")]) == 0
    out = capsys.readouterr()
    assert "| cutoff | KTU baseline | KTU advanced | RBO baseline | RBO advanced |" in out.out
    assert "| AP | 0.3773 |" in out.out and "< 0.0001" in out.out and "wrote" in out.err
    assert (tmp_path / "d.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main([*args, "-o", "latex"]) == 0
    latex = capsys.readouterr().out
    assert latex.count(r"\toprule") == 2 and "$<$ 0.0001" in latex
    assert main([*args, "-o", "csv", "--per-topic"]) == 0
    frame = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert list(frame.columns) == reproduce.COLUMNS and frame["topic"].notna().sum() == 2 * 2 * 43 + 4 * 43


@pytest.mark.parametrize("change, message", [
    ({"ob": "missing.trec"}, "missing.trec: file not found"),
    ({"rb": "foreign"}, "1 of the run's 44 topics are not in the qrels (e.g. 'foreign-topic')"),
    ({"-m": "NotAMeasure@3"}, "NotAMeasure"),
    ({"--cutoffs": "0"}, "cutoffs must be integers >= 1"),
    ({"--rbo-p": "1.5"}, "persistence p must be between 0 and 1"),
    ({"--rep-qrels": "nowhere/qrels"}, "nowhere/qrels"),
    ({"--plot": "x.png", "--rep-qrels": "Q"}, "--plot x.png: --plot draws per-topic differences"),
])
def test_runs_bad_input_ends_in_one_line_and_status_2(tmp_path, capsys, change, message):
    f = dl19_reproduction(tmp_path)
    foreign = tmp_path / "foreign"
    foreign.write_text(f["rb"].read_text() + "foreign-topic Q0 d1 1 1.0 x\n")
    files = {k: str(f[k]) for k in ("ob", "oa", "rb", "ra")}
    files.update({k: str(foreign) if v == "foreign" else v for k, v in change.items() if k in files})
    options = {"-m": "AP", **{k: (str(f["qrels"]) if v == "Q" else v) for k, v in change.items() if k not in files}}
    argv = ["reproduce", "runs", str(f["qrels"]), *files.values()]
    for k, v in options.items():
        argv += [k, v]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err


def test_qrels_by_dataset_id_give_the_same_report(tmp_path, capsys):
    f = dl19_reproduction(tmp_path)
    runs = [str(f[k]) for k in ("ob", "oa", "rb", "ra")]
    by_file = main(["reproduce", "runs", str(f["qrels"]), *runs, "-m", "AP", "-o", "csv"]), capsys.readouterr().out
    by_id = main(["reproduce", "runs", "msmarco-passage/trec-dl-2019/judged", *runs, "-m", "AP", "-o", "csv"])
    assert by_id == by_file[0] == 0 and capsys.readouterr().out == by_file[1]


def test_bench_reproduce_runs_and_agrees_with_repro_eval_at_a_small_size():
    pytest.importorskip("repro_eval", reason="the test extra's repro-eval==0.5.0 is not installed")
    msmarco_file("qrels.dev-small.txt")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks_data" / "bench_reproduce.py"), "--queries", "25",
                           "--repeat", "1"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "numbers both compute agree" in proc.stdout and "ratio reproduce / eval" in proc.stdout


@pytest.mark.parametrize("published, matches", [("0.50583", True), ("0.50582", False), ("0.50584", False),
                                                ("0.5058", True), ("0.5059", False), ("0.506", True),
                                                ("0.505", False), ("0.51", True), ("0.50", False), ("0.5", True)])
def test_within_rounding_is_half_a_unit_of_the_last_printed_digit(tmp_path, published, matches):
    # ours: nDCG@10 of the DL19 BM25 run = 0.5058310024...
    path = tmp_path / "p.csv"
    path.write_text(f"run,measure,value\nbm25,nDCG@10,{published}\n")
    frame = reproduce.table(path, msmarco_file("qrels.dl19-passage.txt"), [bm25_copy(tmp_path)])
    assert frame["ours"].iloc[0] == pytest.approx(0.5058310024, abs=1e-10)
    assert bool(frame["within_rounding"].iloc[0]) is matches


def test_ids_short_in_one_run_and_long_in_the_other_are_coded_alike(tmp_path):
    # O = b a c, R = a <long> b: union a < b < c < <long>; codes 1 0 2 / 0 3 1: C = 1, D = 2, KTU = -1/3
    qrels = small_qrels(tmp_path, "1")
    orig = write_run(tmp_path / "o", listed({"1": ["b", "a", "c"]}))
    rep = write_run(tmp_path / "r", listed({"1": ["a", "zzzzzzzzzz-a-long-id", "b"]}))
    frame = reproduce.runs(qrels, orig, None, rep, None, ["AP"], cutoffs=[3])
    assert value(frame, statistic="KTU") == pytest.approx(-1 / 3, abs=1e-15)
    # overlaps 0 1 2 (b from depth 3 on: ranks 1 and 3): (0 + .95 * 1/2 + .95^2 * 2/3) / (1 + .95 + .95^2)
    expected = (0.95 * 0.5 + 0.9025 * 2 / 3) / (1 + 0.95 + 0.9025)
    assert value(frame, statistic="RBO") == pytest.approx(expected, abs=1e-15)


def test_the_plugins_six_measures_in_a_report_are_evals_numbers(tmp_path):
    from ndcg_plugin.evaluation import Evaluation
    from ndcg_plugin.measures import parse_measures
    from ndcg_plugin.reproduce import scores as reproduce_scores
    f = dl19_reproduction(tmp_path)
    six = ["NDCG_lin@10", "NDCG_exp@10", "HitRate@10", "HitRate_item(rel=2)@10", "MRR_zero@10", "MRR_ignore(rel=2)@10"]
    frame = reproduce.runs(f["qrels"], f["ob"], f["oa"], f["rb"], f["ra"], six, cutoffs=[10])
    qrels = reproduce_scores.read_qrels(f["qrels"])
    for key, run, version in (("ob", "baseline", "original"), ("ra", "advanced", "reproduced")):
        evaluated = Evaluation(parse_measures(six), qrels=qrels).compute(str(f[key])).aggregates
        for m, v in evaluated.items():
            assert value(frame, statistic="ARP", measure=str(m), run=run, version=version) == v
    assert value(frame, statistic="ER", measure="NDCG_exp@10") == pytest.approx(
        (value(frame, statistic="ARP", measure="NDCG_exp@10", run="advanced", version="reproduced")
         - value(frame, statistic="ARP", measure="NDCG_exp@10", run="baseline", version="reproduced"))
        / (value(frame, statistic="ARP", measure="NDCG_exp@10", run="advanced", version="original")
           - value(frame, statistic="ARP", measure="NDCG_exp@10", run="baseline", version="original")), rel=1e-12)
