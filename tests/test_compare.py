"""compare: significance tests cross-checked against scipy and brute force; table formats."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import pytrec_eval
from scipy import stats

from ndcg_plugin import compare as cmp
from ndcg_plugin.cli.commands import main
from ndcg_plugin.compare import writers
from tests.conftest import msmarco_file


def dl19_runs(tmp_path):
    """The DL19 BM25 run, a copy with the top 20 of every query reversed, and a copy cut to 5 docs."""
    lines = msmarco_file("run.dl19-passage.bm25.trec").read_text().splitlines()
    rows = [line.split() for line in lines]
    base = "\n".join(lines) + "\n"
    rerank = "".join(f"{q} Q0 {d} {r} {(-float(s) if int(r) <= 20 else float(s) - 100):.6f} rr\n"
                     for q, _, d, r, s, _ in rows)
    cut = "".join(" ".join(r) + "\n" for r in rows if int(r[3]) <= 5)
    paths = {}
    for name, text in (("bm25", base), ("reversed20", rerank), ("top5", cut)):
        paths[name] = tmp_path / name
        paths[name].write_text(text)
    return paths


def pytrec_ndcg10(qrels_path, run_path) -> dict:
    q, r = {}, {}
    for line in open(qrels_path):
        a, _, d, rel = line.split()
        q.setdefault(a, {})[d] = int(rel)
    for line in open(run_path):
        a, _, d, _, s, _ = line.split()
        r.setdefault(a, {})[d] = float(s)
    res = pytrec_eval.RelevanceEvaluator(q, {"ndcg_cut.10"}).evaluate(r)
    return {qid: res.get(qid, {}).get("ndcg_cut_10", 0.0) for qid in sorted(q)}


def test_t_test_p_values_equal_scipy_on_pytrec_eval_values(tmp_path):
    qrels = msmarco_file("qrels.dl19-passage.txt")
    runs = dl19_runs(tmp_path)
    table = cmp.compare(str(qrels), {n: str(p) for n, p in runs.items()}, ["NDCG_lin@10"], correction="none").table()
    base = pytrec_ndcg10(qrels, runs["bm25"])
    for name in ("reversed20", "top5"):
        other = pytrec_ndcg10(qrels, runs[name])
        expected = stats.ttest_rel([other[q] for q in base], [base[q] for q in base]).pvalue
        assert table.loc[name, "p:NDCG_lin@10"] == pytest.approx(expected, rel=1e-9, abs=1e-300)
        assert table.loc[name, "NDCG_lin@10"] == pytest.approx(np.mean(list(other.values())), abs=1e-12)


def test_randomization_equals_brute_force_on_tiny_inputs():
    rng = np.random.default_rng(3)
    for n in range(1, 11):
        d = rng.normal(size=n).round(2)
        observed = abs(d.mean())
        flips = [abs(np.dot(s, d)) / n for s in itertools.product((-1, 1), repeat=n)]
        brute = sum(f >= observed - 1e-12 for f in flips) / len(flips)
        assert cmp.randomization_test(d, 10_000, seed=0) == pytest.approx(brute, abs=1e-12)


def test_randomization_monte_carlo_is_seeded_and_close_to_exact():
    d = np.random.default_rng(5).normal(0.1, 1.0, size=16)  # 2^16 > 10,000: Monte Carlo
    exact = cmp.randomization_test(d, 2 ** 16, seed=0)  # 2^16 flips: exact
    approx = cmp.randomization_test(d, 10_000, seed=1)
    assert approx == cmp.randomization_test(d, 10_000, seed=1)
    assert abs(approx - exact) < 0.02


def test_holm_correction():
    assert cmp.correct_pvalues([0.01, 0.04, 0.03], "holm") == pytest.approx([0.03, 0.06, 0.06])
    assert cmp.correct_pvalues([0.01, 0.04], "bonferroni") == pytest.approx([0.02, 0.08])


def test_markdown_and_latex_tables_for_three_runs(tmp_path):
    qrels = msmarco_file("qrels.dl19-passage.txt")
    runs = dl19_runs(tmp_path)
    result = cmp.compare(str(qrels), {n: str(p) for n, p in runs.items()},
                         ["NDCG_lin@10", "MRR_zero(rel=2)@10", "MRR_ignore(rel=2)@10"], test="randomization")
    md = writers.to_markdown(result).splitlines()
    assert md[0] == "| run | NDCG_lin@10 | MRR_zero(rel=2)@10 | MRR_ignore(rel=2)@10 |"
    assert [line.split(" | ")[0] for line in md[2:5]] == ["| bm25", "| reversed20", "| top5"]
    assert "**" in md[2] and "†" in md[3]  # bm25 best on NDCG; reversing the top 20 is significant
    assert "MRR_ignore pairs only the queries with a value in both runs" in md[-1]
    tex = writers.to_latex(result)
    assert tex.count(r"\toprule") == tex.count(r"\midrule") == tex.count(r"\bottomrule") == 1
    assert r"\begin{tabular}{lrrr}" in tex and tex.count(r"\\") == 4 and r"\textbf{" in tex
    assert r"NDCG\_lin@10" in tex and "$^{\\dagger}$" in tex
    body = [line for line in tex.splitlines() if line.endswith(r"\\")]
    assert all(line.count("&") == 3 for line in body)


def _same_p(text: str, p: float) -> None:
    """A p-value printed with 6 decimals: the number, or "< 0.000001" below it."""
    if p < 1e-6:
        assert text == "< 0.000001", (text, p)
    else:
        assert float(text) == pytest.approx(p, abs=1e-6), (text, p)


def test_the_comparisons_table_equals_scipy_and_a_hand_count(tmp_path, capsys):
    # --show tests: each comparison's numbers in Markdown and LaTeX, against scipy on pytrec_eval's values
    qrels = msmarco_file("qrels.dl19-passage.txt")
    runs = dl19_runs(tmp_path)
    result = cmp.compare(str(qrels), {n: str(p) for n, p in runs.items()}, ["NDCG_lin@10"])
    base = pytrec_ndcg10(qrels, runs["bm25"])
    rows = {r[0]: r for r in writers.comparison_rows(result, places=6)}
    raw = {}
    for name in ("reversed20", "top5"):
        other = pytrec_ndcg10(qrels, runs[name])
        d = np.array([other[q] - base[q] for q in base])
        n, mean, sd = len(d), d.mean(), d.std(ddof=1)
        half = stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)
        raw[name] = stats.ttest_rel([other[q] for q in base], [base[q] for q in base]).pvalue
        row = rows[name]
        assert row[:3] == [name, "bm25", "NDCG_lin@10"]
        assert float(row[3]) == pytest.approx(mean, abs=1e-6)
        lo, hi = (float(x) for x in row[4].strip("[]").split(", "))
        assert lo == pytest.approx(mean - half, abs=1e-6) and hi == pytest.approx(mean + half, abs=1e-6)
        _same_p(row[5], raw[name])
        assert float(row[7]) == pytest.approx(mean / sd, abs=1e-6)
        assert row[8] == f"{int((d > 0).sum())}/{int((d == 0).sum())}/{int((d < 0).sum())}" and row[9] == str(n)
    # Holm over the two comparisons, by hand: the smaller p times 2; the larger p, or that if above it
    (first, p1), (second, p2) = sorted(raw.items(), key=lambda item: item[1])
    _same_p(rows[first][6], min(1.0, 2 * p1))
    _same_p(rows[second][6], min(1.0, max(2 * p1, p2)))
    md = writers.to_markdown(result, show=("tests",)).splitlines()
    table = [line for line in md if line.startswith("| reversed20 | bm25 |") or line.startswith("| top5 | bm25 |")]
    assert len(table) == 2 and all(line.count(" | ") == 9 for line in table)
    tex = writers.to_latex(result, show=("tests",))
    assert tex.count(r"\begin{tabular}") == 2 and r"\begin{tabular}{lllrrrrrrr}" in tex and r"d\_z" in tex
    args = ["compare", str(qrels), *(str(p) for p in runs.values()), "-m", "NDCG_lin@10"]
    assert main([*args, "--show", "tests", "ci"]) == 0
    out = capsys.readouterr().out
    assert "| run | against | measure | difference | 0.95 t CI of the difference | p | p (holm) |" in out
    with pytest.raises(SystemExit) as refused:
        main([*args, "--show", "effects"])
    assert refused.value.code == 2 and "invalid choice: 'effects'" in capsys.readouterr().err


def test_compare_cli_formats(tmp_path, capsys):
    qrels = msmarco_file("qrels.dl19-passage.txt")
    runs = dl19_runs(tmp_path)
    args = ["compare", str(qrels), *(str(p) for p in runs.values()), "-m", "NDCG_lin@10"]
    assert main(args) == 0 and "| bm25 |" in capsys.readouterr().out
    assert main([*args, "-o", "csv"]) == 0 and "p:NDCG_lin@10" in capsys.readouterr().out.splitlines()[0]
    assert main([*args, "-o", "jsonl", "--test", "bootstrap", "--permutations", "500"]) == 0
    out = capsys.readouterr().out
    assert '"diff_low:NDCG_lin@10": ' in out and '"diff_high:NDCG_lin@10": ' in out
    assert main([*args, "--baseline", "nope"]) == 2


def test_plot_writes_a_png(tmp_path):
    qrels = msmarco_file("qrels.dl19-passage.txt")
    runs = dl19_runs(tmp_path)
    out = tmp_path / "diff.png"
    assert main(["compare", str(qrels), *(str(p) for p in runs.values()), "-m", "NDCG_lin@10", "MRR_zero@10",
                 "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_plot_puts_every_run_in_one_query_order(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import ir_measures
    import matplotlib.axes

    # by hand: qrels q1..q3 each with one relevant doc "r"; base ranks it 1st everywhere (RR 1, 1, 1);
    # run a ranks it 1st, 2nd, 4th (diff 0, -1/2, -3/4); run b 2nd, 1st, 1st (diff -1/2, 0, 0)
    qrels = {q: {"r": 1} for q in ("q1", "q2", "q3")}

    def run(ranks):
        return {q: {"r": 10.0 - k, **{f"x{i}": 10.0 - i for i in range(1, 5) if i != k}}
                for q, k in zip(("q1", "q2", "q3"), ranks, strict=True)}
    runs = {"base": run([1, 1, 1]), "a": run([1, 2, 4]), "b": run([2, 1, 1])}
    result = cmp.compare(qrels, runs, [ir_measures.RR @ 10])
    bars = []
    monkeypatch.setattr(matplotlib.axes.Axes, "bar", lambda self, x, h, **k: bars.append(list(h)))
    writers.plot(result, str(tmp_path / "x.png"))
    # a's differences descending: q1 (0), q2 (-1/2), q3 (-3/4); b in that same query order
    assert bars == [[0.0, -0.5, -0.75], [-0.5, 0.0, 0.0]]


def test_the_table_shows_each_measures_aggregate_as_eval_does(tmp_path):
    # by hand: q1 returns 2 docs (1 relevant), q2 returns 1 (relevant); HitRate_item@10 is the
    # micro average (1 + 1) / (2 + 1) = 2/3 as eval prints it, not the mean of ratios (1/2 + 1)/2
    qrels = {"q1": {"a": 1}, "q2": {"c": 1}, "q3": {"d": 1}}
    run = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}}  # q3 missing: 0 for nDCG (trec_eval -c), not left out
    other = {"q1": {"b": 2.0, "a": 1.0}, "q2": {"c": 1.0}, "q3": {"d": 1.0}}
    result = cmp.compare(qrels, {"r": run, "o": other}, ["HitRate_item@10", "nDCG@10"])
    assert result.means["r"]["HitRate_item@10"] == pytest.approx(2 / 3)
    assert result.means["r"]["nDCG@10"] == pytest.approx((1 + 1 + 0) / 3)
    assert result.means["o"]["nDCG@10"] == pytest.approx((1 / np.log2(3) + 1 + 1) / 3)
    assert result.per_query["r"]["nDCG@10"].tolist() == [1.0, 1.0, 0.0]
    table = result.table()
    assert table.loc["r", "HitRate_item@10"] == pytest.approx(2 / 3) and "p:nDCG@10" in table.columns
