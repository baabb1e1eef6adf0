"""Generate a recommendation-log shaped workload: many users, short recommendation lists, and qrels
as large as the run (every held-out interaction of every user).

    python benchmarks_data/make_logs.py                          # 10^6 users x ~15 items, ids u0000042
    python benchmarks_data/make_logs.py --users 100000 --ids int  # plain integer ids (1, 2, ..., 10, 11)
    python benchmarks_data/make_logs.py --users 10000000          # 10^7 users (150M run lines)
    python benchmarks_data/make_logs.py --parquet                # also Parquet files (query_id, doc_id, ...)

Items are drawn with Zipf popularity (exponent 1.1 over --items items). Each user gets 12 to 22
recommended items (about 15 distinct ones once repeats are dropped), scores descending in rank
order with some exact ties, and a Poisson(4) number of held-out interactions (about 2% of users
have none) with graded labels 0-5, some of them among the user's recommendations. Both files
are grouped by user, users in ascending order (for ``--ids int`` numeric order, which is not
the string order trec_eval prints in). Files go to benchmarks_data/cache/ (not committed);
existing files are reused unless --force.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

HERE = Path(__file__).resolve().parent


def zipf_items(rng: np.random.Generator, n: int, items: int, exponent: float = 1.1) -> np.ndarray:
    weights = 1.0 / np.arange(1, items + 1) ** exponent
    cdf = np.cumsum(weights / weights.sum())
    return np.minimum(np.searchsorted(cdf, rng.random(n)), items - 1)


def distinct_per_user(user: np.ndarray, item: np.ndarray, items: int) -> tuple[np.ndarray, np.ndarray]:
    """The (user, item) pairs without repeats, grouped by user (ascending), in drawing order within a user."""
    key = user.astype(np.int64) * items + item
    _, first = np.unique(key, return_index=True)
    first.sort()  # drawing order: users were drawn in ascending order
    return user[first], item[first]


def make_logs(users: int, items: int, rng: np.random.Generator) -> tuple[dict, dict]:
    """(run columns, qrels columns) as integer users and items."""
    lengths = rng.integers(12, 23, size=users)
    user = np.repeat(np.arange(users), lengths)
    run_user, run_item = distinct_per_user(user, zipf_items(rng, len(user), items), items)
    starts = np.r_[0, np.flatnonzero(np.diff(run_user)) + 1]
    rank = np.arange(len(run_user)) - np.repeat(starts, np.diff(np.r_[starts, len(run_user)]))
    # scores descending in rank order; one step in ten is 0: a tie with the rank above
    step = np.where((rank > 0) & (rng.random(len(rank)) >= 0.1), rng.integers(1, 50, size=len(rank)), 0)
    drop = np.cumsum(step)
    score = np.round(1.0 - (drop - np.repeat(drop[starts], np.diff(np.r_[starts, len(rank)]))) / 1000, 3)
    held = rng.poisson(4.0, size=users)
    q_user = np.repeat(np.arange(users), held)
    q_item = zipf_items(rng, len(q_user), items)
    # about a sixth of held-out interactions are among the user's own recommendations
    own = rng.random(len(q_user)) < 1 / 6
    first = np.searchsorted(run_user, q_user[own])
    q_item[own] = run_item[np.minimum(first + rng.integers(0, 10, size=int(own.sum())), len(run_item) - 1)]
    q_user, q_item = distinct_per_user(q_user, q_item, items)
    labels = rng.choice(6, size=len(q_user), p=[0.1, 0.3, 0.25, 0.15, 0.12, 0.08])
    return ({"user": run_user, "item": run_item, "rank": rank + 1, "score": score},
            {"user": q_user, "item": q_item, "label": labels})


def ids(values: np.ndarray, kind: str, prefix: str) -> pa.Array:
    width = len(str(int(values.max()))) if len(values) else 1
    text = values.astype(str) if kind == "int" else np.char.add(prefix, np.char.zfill(values.astype(str), width))
    return pa.array(text, type=pa.string())


def write(path: Path, columns: list[pa.Array]) -> None:
    table = pa.table({f"c{i}": c for i, c in enumerate(columns)})
    pacsv.write_csv(table, path, write_options=pacsv.WriteOptions(include_header=False, delimiter=" ",
                                                                  quoting_style="none"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--items", type=int, default=200_000)
    ap.add_argument("--ids", choices=["padded", "int"], default="padded",
                    help="u0000042 / i0000042 (string and numeric order agree), or plain integers")
    ap.add_argument("--parquet", action="store_true", help="also write qrels.parquet and run.parquet")
    ap.add_argument("--out", type=Path, default=HERE / "cache")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    out = args.out / f"logs-{args.users}-{args.ids}"
    qrels_path, run_path = out / "qrels.txt", out / "run.trec"
    if qrels_path.exists() and run_path.exists() and not args.force and (
            not args.parquet or (out / "run.parquet").exists()):
        print(f"{qrels_path}\n{run_path}\n(reused; --force regenerates)")
        return
    out.mkdir(parents=True, exist_ok=True)
    run, qrels = make_logs(args.users, args.items, np.random.default_rng(args.seed))
    run_q, run_d = ids(run["user"], args.ids, "u"), ids(run["item"], args.ids, "i")
    qrels_q, qrels_d = ids(qrels["user"], args.ids, "u"), ids(qrels["item"], args.ids, "i")
    n_run, n_qrels = len(run["user"]), len(qrels["user"])
    write(run_path, [run_q, pa.array(np.full(n_run, "Q0")), run_d, pa.array(run["rank"]),
                     pa.array(run["score"]), pa.array(np.full(n_run, "rec"))])
    write(qrels_path, [qrels_q, pa.array(np.zeros(n_qrels, dtype=np.int64)), qrels_d, pa.array(qrels["label"])])
    if args.parquet:
        import pyarrow.parquet as pq
        pq.write_table(pa.table({"query_id": run_q, "doc_id": run_d, "score": run["score"]}), out / "run.parquet")
        pq.write_table(pa.table({"query_id": qrels_q, "doc_id": qrels_d, "relevance": qrels["label"]}),
                       out / "qrels.parquet")
    print(f"{qrels_path}\n{run_path}\n({args.users:,} users, {n_run:,} run lines, {n_qrels:,} qrels lines, "
          f"ids {args.ids})")


if __name__ == "__main__":
    main()
