"""compare's intervals, effect sizes, wins/ties/losses, all-pairs tests and letters, several
baselines: against scipy.stats / statsmodels, a hand computation, and a brute-force reading of the
corrected p-value table."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from ndcg_plugin import compare as cmp
from ndcg_plugin.compare import writers
from tests import helpers
from tests.conftest import msmarco_file
from tests.test_compare import dl19_runs

# by hand: four queries; x against y
X = np.array([0.5, 0.7, 0.2, 0.9])
Y = np.array([0.4, 0.4, 0.2, 0.5])


def test_a_hand_computed_comparison():
    # d = x - y = [0.1, 0.3, 0.0, 0.4]; mean 0.2; deviations -0.1, 0.1, -0.2, 0.2: SS 0.10,
    # sd = sqrt(0.10 / 3) = 0.1825742; d_z = 0.2 / 0.1825742 = 1.0954451
    # J(3) = Gamma(1.5) / (sqrt(1.5) Gamma(1)) = 0.8862269 / 1.2247449 = 0.7236012; g_z = 0.7926655
    # t interval: sem = 0.1825742 / 2 = 0.0912871; t(0.975, 3) = 3.1824463; half 3.1824463 x 0.0912871 = 0.2905163
    dz, gz = cmp.effect_sizes(X - Y)
    assert dz == pytest.approx(1.0954451, abs=1e-7)
    assert gz == pytest.approx(0.7926655, abs=1e-7)
    assert cmp.wins_ties_losses(X, Y) == (3, 1, 0)
    lo, hi = cmp.mean_interval(X - Y, "t", 0.95, 1000, 0)
    assert (lo, hi) == (pytest.approx(0.2 - 0.2905163, abs=1e-7), pytest.approx(0.2 + 0.2905163, abs=1e-7))


def test_hedges_correction_matches_its_approximation_for_many_pairs():
    d = np.random.default_rng(1).normal(0.1, 0.3, size=200)
    dz, gz = cmp.effect_sizes(d)
    assert gz / dz == pytest.approx(1 - 3 / (4 * 199 - 1), rel=1e-5)
    assert math.isnan(cmp.effect_sizes(np.array([0.1, 0.1, 0.1]))[0])  # no spread: undefined
    assert math.isnan(cmp.effect_sizes(np.array([0.1, 0.3]))[1])      # g_z needs 3 pairs


@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_t_intervals_equal_scipy(level):
    rng = np.random.default_rng(7)
    x, y = rng.uniform(size=30), rng.uniform(size=30)
    lo, hi = cmp.mean_interval(x, "t", level, 1000, 0)
    expected = stats.t.interval(level, 29, loc=x.mean(), scale=stats.sem(x))
    assert (lo, hi) == (pytest.approx(expected[0], abs=1e-12), pytest.approx(expected[1], abs=1e-12))
    ci = stats.ttest_rel(x, y).confidence_interval(level)
    lo, hi = cmp.mean_interval(x - y, "t", level, 1000, 0)
    assert (lo, hi) == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))


@pytest.mark.parametrize("n, resamples", [(43, 2000), (7, 1500)])
def test_bootstrap_intervals_equal_scipy_with_the_same_seed(n, resamples):
    d = np.random.default_rng(n).normal(size=n)
    expected = stats.bootstrap((d,), np.mean, n_resamples=resamples, batch=1000, method="percentile",
                               confidence_level=0.9, rng=np.random.default_rng(11), vectorized=True)
    lo, hi = cmp.mean_interval(d, "bootstrap", 0.9, resamples, 11)
    ci = expected.confidence_interval
    assert (lo, hi) == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))


def test_compare_intervals_and_effects_on_dl19_equal_scipy(tmp_path):
    qrels = msmarco_file("qrels.dl19-passage.txt")
    runs = {n: str(p) for n, p in dl19_runs(tmp_path).items()}
    result = cmp.compare(str(qrels), runs, ["NDCG_lin@10"], ci_level=0.9)
    base = result.per_query["bm25"]["NDCG_lin@10"].to_numpy()
    for name in ("bm25", "reversed20", "top5"):
        v = result.per_query[name]["NDCG_lin@10"].to_numpy()
        expected = stats.t.interval(0.9, len(v) - 1, loc=v.mean(), scale=stats.sem(v))
        assert result.intervals[(name, "NDCG_lin@10")] == pytest.approx(expected, abs=1e-12)
        if name == "bm25":
            continue
        t = result.tests[(name, "bm25", "NDCG_lin@10")]
        ci = stats.ttest_rel(v, base).confidence_interval(0.9)
        assert t.interval == pytest.approx((ci.low, ci.high), abs=1e-12)
        assert t.diff == pytest.approx((v - base).mean(), abs=1e-12)
        assert t.d_z == pytest.approx((v - base).mean() / (v - base).std(ddof=1), abs=1e-12)
        assert (t.wins, t.ties, t.losses) == (int((v > base).sum()), int((v == base).sum()), int((v < base).sum()))
        back = result.tests[("bm25", name, "NDCG_lin@10")]  # the other direction
        assert (back.diff, back.wins, back.losses) == (-t.diff, t.losses, t.wins)
    table = result.table()
    assert table.loc["top5", "ci_low:NDCG_lin@10"] < table.loc["top5", "NDCG_lin@10"] < \
        table.loc["top5", "ci_high:NDCG_lin@10"]


def test_a_micro_averaged_measure_has_no_interval_of_its_mean():
    qrels = {"q1": {"a": 1}, "q2": {"c": 1}, "q3": {"d": 1}}
    run = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}, "q3": {"x": 1.0}}
    result = cmp.compare(qrels, [run, run], ["HitRate_item@10", "nDCG@10"])
    assert all(math.isnan(v) for v in result.intervals[("0", "HitRate_item@10")])
    assert not math.isnan(result.intervals[("0", "nDCG@10")][0])


def test_a_list_of_runs_is_named_by_position_and_anything_else_is_a_type_error():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 1.0}, "q2": {"b": 1.0}}
    result = cmp.compare(qrels, [run, run], ["nDCG@10"], baseline=1)
    assert result.runs == ["0", "1"] and result.baselines == ["1"]
    with pytest.raises(TypeError, match="a dict {name: run} or a list of runs"):
        cmp.compare(qrels, "run.trec", ["nDCG@10"])


def test_a_baseline_is_named_by_name_position_path_or_stem_and_an_ambiguous_stem_is_refused():
    names = ["bm25.trec", "rm3.trec.gz", "rm3.txt"]
    assert cmp.resolve_run("bm25", names) == "bm25.trec"
    assert cmp.resolve_run("/some/where/bm25.trec", names) == "bm25.trec"
    assert cmp.resolve_run(2, names) == "rm3.txt"
    assert cmp.resolve_run("rm3.trec", names) == "rm3.trec.gz"
    with pytest.raises(ValueError, match="names several runs"):
        cmp.resolve_run("rm3", names)
    with pytest.raises(ValueError, match="is not one of the runs"):
        cmp.resolve_run("bm26", names)


def test_holm_over_nan_leaves_untested_comparisons_out():
    assert cmp.correct_pvalues([0.01, math.nan, 0.04], "holm") == pytest.approx([0.02, math.nan, 0.04], nan_ok=True)


# ---- all pairs --------------------------------------------------------------------------------

def _four_runs(tmp_path):
    runs = {n: str(p) for n, p in dl19_runs(tmp_path).items()}
    lines = (tmp_path / "bm25").read_text().splitlines()
    rng = np.random.default_rng(3)
    noisy = "".join(f"{q} Q0 {d} {r} {float(s) + rng.normal(0, 1.5):.6f} n\n"
                    for q, _, d, r, s, _ in (line.split() for line in lines))
    (tmp_path / "noisy").write_text(noisy)
    return {**runs, "noisy": str(tmp_path / "noisy")}


def _letters_by_brute_force(result, pvalues: dict) -> dict:
    """Per (run, measure): the letters of the runs with a lower mean and a corrected p < alpha."""
    letters = dict(zip(result.runs, "abcdefghijklmnopqrstuvwxyz", strict=False))
    out = {}
    for m in result.measure_names:
        for r in result.runs:
            out[(r, m)] = "".join(letters[o] for o in result.runs if o != r and pvalues[frozenset((r, o)), m] < 0.05
                                  and result.means[r][m] > result.means[o][m])
    return out


def test_all_pairs_holm_letters_equal_a_brute_force_reading_of_the_corrected_p_table(tmp_path):
    from statsmodels.stats.multitest import multipletests
    qrels = msmarco_file("qrels.dl19-passage.txt")
    measures = ["NDCG_lin@10", "AP"]
    result = cmp.compare(str(qrels), _four_runs(tmp_path), measures, all_pairs=True)
    keys, raw = [], []
    for m in result.measure_names:  # the family: every pair on every measure, p from scipy
        for a, b in itertools.combinations(result.runs, 2):
            keys.append((frozenset((a, b)), m))
            raw.append(stats.ttest_rel(result.per_query[a][m], result.per_query[b][m]).pvalue)
    corrected = dict(zip(keys, multipletests(raw, method="holm")[1], strict=True))
    for (a, b, m), t in result.tests.items():
        assert t.pvalue == pytest.approx(corrected[frozenset((a, b)), m], rel=1e-9)
    expected = _letters_by_brute_force(result, corrected)
    table = result.table()
    assert {(r, m): table.loc[r, f"better:{m}"] for r in result.runs for m in measures} == expected
    assert any(expected.values())  # the case has letters to check
    md = writers.to_markdown(result).splitlines()
    for line, r in zip(md[2:6], result.runs, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        for cell, m in zip(cells[2:], measures, strict=True):
            sup = expected[(r, m)]
            assert cell.endswith(f"<sup>{sup}</sup>") if sup else "<sup>" not in cell
    tex = writers.to_latex(result)
    assert all(f"$^{{{sup}}}$" in tex for sup in expected.values() if sup)
    pairs = result.pairs()
    assert len(pairs) == 6 * 2 and set(pairs.columns) >= {"diff", "diff_low", "diff_high", "p", "d_z", "wins"}


def test_tukey_hsd_equals_the_two_way_anova_and_the_studentized_range():
    import pandas as pd
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm
    rng = np.random.default_rng(4)
    n, k = 25, 4
    matrix = rng.uniform(size=(n, 1)) * 0.5 + rng.uniform(size=(n, k)) * 0.5 + np.array([0, 0.05, 0.15, 0.2])
    long = pd.DataFrame({"v": matrix.ravel(), "run": np.tile(np.arange(k), n), "q": np.repeat(np.arange(n), k)})
    anova = anova_lm(smf.ols("v ~ C(run) + C(q)", data=long).fit())
    mse, df = anova.loc["Residual", "mean_sq"], anova.loc["Residual", "df"]
    p = cmp.tukey_hsd(matrix)
    means = matrix.mean(axis=0)
    for i, j in itertools.combinations(range(k), 2):
        expected = stats.studentized_range.sf(abs(means[i] - means[j]) / math.sqrt(mse / n), k, df)
        assert p[i, j] == p[j, i] == pytest.approx(expected, rel=1e-9)
    # scipy's tukey_hsd (one-way, unpaired) tests the same mean differences
    assert stats.tukey_hsd(*matrix.T).statistic == pytest.approx(means[:, None] - means[None, :], abs=1e-12)


@pytest.mark.parametrize("k, df", [(2, 3), (4, 126), (5, 1), (20, 60), (7, 6)])
def test_studentized_range_tail_equals_scipys(k, df):
    q = np.array([0.05, 0.3, 1.0, 2.5, 4.0, 6.0, 9.0])
    ours = cmp.stats.studentized_range_sf(q, k, df)
    expected = np.array([stats.studentized_range.sf(x, k, df) for x in q])
    for a, b in zip(ours, expected, strict=True):
        assert a == pytest.approx(b, rel=1e-9 if b >= 1e-4 else 1e-5, abs=1e-12 if b < 1e-8 else 0)


def test_randomized_tukey_hsd_is_close_to_the_exact_permutation_distribution():
    matrix = np.array([[0.1, 0.5, 0.9], [0.2, 0.3, 0.8]])  # 2 queries x 3 runs: (3!)^2 = 36 permutations
    ranges = []
    for p1 in itertools.permutations(matrix[0]):
        for p2 in itertools.permutations(matrix[1]):
            means = (np.array(p1) + np.array(p2)) / 2
            ranges.append(means.max() - means.min())
    means = matrix.mean(axis=0)
    p = cmp.randomized_tukey_hsd(matrix, 20_000, seed=5)
    for i, j in itertools.combinations(range(3), 2):
        exact = np.mean(np.array(ranges) >= abs(means[i] - means[j]) - 1e-12)
        assert p[i, j] == pytest.approx(exact, abs=0.01)
    assert np.array_equal(p, cmp.randomized_tukey_hsd(matrix, 20_000, seed=5))  # seeded


@pytest.mark.parametrize("test", ["tukey", "randomized-tukey"])
def test_tukey_letters_in_every_output_format(tmp_path, test):
    qrels = msmarco_file("qrels.dl19-passage.txt")
    result = cmp.compare(str(qrels), _four_runs(tmp_path), ["NDCG_lin@10"], all_pairs=True, test=test,
                         permutations=2000)
    frame = np.column_stack([result.per_query[r]["NDCG_lin@10"].to_numpy() for r in result.runs])
    p = cmp.tukey_hsd(frame) if test == "tukey" else cmp.randomized_tukey_hsd(frame, 2000, 0)
    table = {frozenset((result.runs[i], result.runs[j])): p[i, j] for i, j in itertools.combinations(range(4), 2)}
    expected = _letters_by_brute_force(result, {(k, "NDCG_lin@10"): v for k, v in table.items()})
    assert any(expected.values())
    assert result.table()["better:NDCG_lin@10"].to_dict() == {r: expected[(r, "NDCG_lin@10")] for r in result.runs}
    assert "better:NDCG_lin@10" in writers.to_csv(result).splitlines()[0]
    assert '"better:NDCG_lin@10": "' in writers.to_jsonl(result)


# ---- several baselines; the command line ------------------------------------------------------

def test_each_baseline_has_its_own_symbol(tmp_path):
    qrels = msmarco_file("qrels.dl19-passage.txt")
    runs = _four_runs(tmp_path)
    result = cmp.compare(str(qrels), runs, ["NDCG_lin@10"], baseline=["bm25", "noisy"])
    md = writers.to_markdown(result).splitlines()
    rows = {line.split(" | ")[0][2:]: line for line in md[2:6]}
    for r in result.runs:
        for b, symbol in zip(["bm25", "noisy"], "†‡", strict=True):
            t = result.tests.get((r, b, "NDCG_lin@10"))
            assert (symbol in rows[r]) == bool(t is not None and t.significant), (r, b)
    assert "† significantly different from bm25, ‡ significantly different from noisy" in md[-1]
    header = writers.to_csv(result).splitlines()[0]
    assert "p:NDCG_lin@10:bm25" in header and "p:NDCG_lin@10:noisy" in header
    # bm25 against noisy is one comparison, counted once in the family: 3 + 2 = 5
    assert "over 5 comparisons" in md[-1]


def test_cli_csv_has_no_blank_line_interval_columns_and_a_baseline_by_its_stem(tmp_path):
    qrels = msmarco_file("qrels.dl19-passage.txt")
    runs = dl19_runs(tmp_path)
    files = []
    for name, path in runs.items():
        files.append(tmp_path / f"{name}.trec")
        path.rename(files[-1])
    proc = helpers.run_cli("compare", str(qrels), *map(str, files), "-m", "NDCG_lin@10", "-o", "csv",
                           "--baseline", "reversed20")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("\n") and not proc.stdout.endswith("\n\n")
    header = proc.stdout.splitlines()[0].split(",")
    assert {"diff_low:NDCG_lin@10", "diff_high:NDCG_lin@10", "ci_low:NDCG_lin@10"} <= set(header)
    rows = {line.split(",")[0]: line.split(",") for line in proc.stdout.splitlines()[1:]}
    assert rows["reversed20.trec"][header.index("p:NDCG_lin@10")] == ""  # the baseline
    assert rows["bm25.trec"][header.index("p:NDCG_lin@10")] != ""


@pytest.mark.parametrize("args, words", [
    (["--test", "tukey"], ["--all-pairs"]),
    (["--all-pairs", "--baseline", "a"], ["no baseline"]),
    (["--all-pairs", "--test", "tukey", "--correction", "holm"], ["corrects over the pairs itself"]),
    (["--baseline", "nope"], ["'nope' is not one of the runs"]),
    (["--ci-level", "1.5"], ["--ci-level", "confidence level between 0 and 1"]),
])
def test_cli_refusals_are_one_line(tmp_path, args, words):
    q = str(msmarco_file("qrels.dl19-passage.txt"))
    runs = dl19_runs(tmp_path)
    proc = helpers.run_main("compare", q, str(runs["bm25"]), str(runs["top5"]), "-m", "RR", "--names", "a", "b",
                            *args)
    last = proc.stderr.strip().splitlines()[-1]  # argparse's usage before it: issue 42's item 10
    assert proc.returncode == 2 and (len(proc.stderr.strip().splitlines()) == 1 or "usage:" in proc.stderr)
    assert all(w in last for w in words), proc.stderr


def test_cli_baseline_by_its_path_when_runs_are_renamed(tmp_path):
    q = str(msmarco_file("qrels.dl19-passage.txt"))
    runs = dl19_runs(tmp_path)
    proc = helpers.run_main("compare", q, str(runs["bm25"]), str(runs["top5"]), "-m", "NDCG_lin@10", "--names", "a",
                            "b", "--baseline", str(runs["top5"]), "-o", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split(",")[0]: line for line in proc.stdout.splitlines()[1:]}
    assert rows["b"].endswith(",,,,,,,,,,,,")  # b is the baseline: no comparison columns filled
    assert not rows["a"].endswith(",")


def test_cli_show_ci_prints_the_interval(tmp_path):
    q = str(msmarco_file("qrels.dl19-passage.txt"))
    runs = dl19_runs(tmp_path)
    result = cmp.compare(q, {"a": str(runs["bm25"]), "b": str(runs["top5"])}, ["NDCG_lin@10"])
    lo, hi = result.intervals[("a", "NDCG_lin@10")]
    proc = helpers.run_main("compare", q, str(runs["bm25"]), str(runs["top5"]), "-m", "NDCG_lin@10", "--names", "a",
                            "b", "--show", "ci")
    assert proc.returncode == 0, proc.stderr
    assert f"**{result.means['a']['NDCG_lin@10']:.4f}** ± {(hi - lo) / 2:.4f}" in proc.stdout
    boot = helpers.run_main("compare", q, str(runs["bm25"]), str(runs["top5"]), "-m", "NDCG_lin@10", "--names", "a",
                            "b", "--show", "ci", "--ci", "bootstrap", "--permutations", "500", "-o", "latex")
    assert boot.returncode == 0 and "percentile bootstrap" in boot.stdout and " [0." in boot.stdout


# ---- fast paths against slow paths -----------------------------------------------------------

def test_batched_randomization_tests_equal_one_test_at_a_time():
    rng = np.random.default_rng(9)
    for n in (5, 12, 40):  # exact (2^n <= 10,000) and Monte Carlo
        d = rng.normal(0.05, 0.3, size=(n, 7))
        batched = cmp.randomization_tests(d, 10_000, seed=2)
        alone = [cmp.randomization_test(d[:, j], 10_000, seed=2) for j in range(7)]
        assert batched.tolist() == alone


def test_batched_bootstraps_equal_one_bootstrap_at_a_time():
    rng = np.random.default_rng(10)
    for n in (1, 7, 43):
        d = rng.normal(0.05, 0.3, size=(n, 5))
        batched = cmp.stats.bootstrap_tests(d, 2500, seed=4, level=0.9)
        for j in range(5):
            assert tuple(batched[j]) == cmp.bootstrap_test(d[:, j], 2500, seed=4, level=0.9)
            if n >= 2:
                assert tuple(batched[j, 1:]) == cmp.mean_interval(d[:, j], "bootstrap", 0.9, 2500, 4)


def test_compare_streaming_run_files_equals_compare_of_tables_read_whole(tmp_path):
    import ndcg_plugin
    qrels = msmarco_file("qrels.dl19-passage.txt")
    files = _four_runs(tmp_path)
    measures = ["NDCG_lin@10", "MRR_ignore(rel=2)@10", "HitRate_item@10", "R(rel=2)@1000"]
    streamed = cmp.compare(str(qrels), files, measures, all_pairs=True, test="randomization", permutations=2000)
    tables = {n: ndcg_plugin.read(p, "run") for n, p in files.items()}
    whole = cmp.compare(ndcg_plugin.read(str(qrels), "qrels"), tables, measures, all_pairs=True,
                        test="randomization", permutations=2000)
    assert streamed.means == whole.means
    for r in files:
        for m in streamed.measure_names:
            assert streamed.per_query[r][m].equals(whole.per_query[r][m]), (r, m)
    assert streamed.pairs().equals(whole.pairs())


def test_a_pair_with_no_query_valued_in_both_runs_has_no_p_value_and_the_note_says_why():
    # by hand: MRR_ignore@1 has a value only where the relevant doc is at rank 1; run "miss" never
    # has it there, so no query pairs: no p-value (not 1.0 from zero pairs), left out of the family
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    hit = {"q1": {"a": 2.0, "x": 1.0}, "q2": {"b": 2.0, "x": 1.0}}
    miss = {"q1": {"x": 2.0, "a": 1.0}, "q2": {"x": 2.0, "b": 1.0}}
    result = cmp.compare(qrels, {"hit": hit, "miss": miss}, ["MRR_ignore@1", "nDCG@10"])
    t = result.tests[("miss", "hit", "MRR_ignore@1")]
    assert t.pairs == 0 and math.isnan(t.pvalue) and not t.significant
    assert "not tested (no query has a value in both runs): hit and miss on MRR_ignore@1" in writers.to_markdown(result)
    assert "over 1 comparisons" in writers.to_markdown(result)  # nDCG@10 only
