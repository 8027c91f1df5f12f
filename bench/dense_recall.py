#!/usr/bin/env python3
"""Recall of the dense index: the dense list's window through the approximate
index against the exact scan (`--exact`), query by query.

    bench/dense_recall.py INDEX QUERIES [--binary B] [--window N] [--limit N]
    bench/dense_recall.py INDEX --headings CORPUS [--count 200] [--seed 7] ...
        [--rescore N] [--feedback N] [--probe 0.1,0.2,1] [--filter KEY=VALUE]

QUERIES is a `../shared/eval` queries.jsonl (one {"id", "text"} per line) or a
text file of one query per line. `--headings CORPUS` draws `--count` queries
instead: the text of markdown headings picked at random (seeded) from the
corpus's files, the kind of short query a person types.

Each query runs twice through the real binary, `memidx search --mode dense
-k N --window N --json`, with and without `--exact`. Recall counts the
approximate window's chunks whose score reaches the exact window's last
score (so a tie at the boundary is no miss), over the exact window's size.
Prints the mean, the worst query and the share of queries at recall 1, and,
from `explain --json` on the first `--work` queries, how many of those the
codes served and the rows they rescored. `--probe` runs the approximate
window once per share given (`--dense-probe`: the share of the rows whose
cells are probed) against the one exact window, and reports each.
`--filter` (repeatable) filters both runs as `memidx search --filter` does;
the report then says how many chunks the filter allowed and what share of
them had their codes scored.
"""

import argparse
import json
import random
import re
import statistics
import subprocess
import sys
from pathlib import Path


def read_queries(path):
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if path.endswith(".jsonl"):
        return [json.loads(line)["text"] for line in lines if line.strip()]
    return [line.strip() for line in lines if line.strip()]


def heading_queries(corpus, count, seed):
    files = sorted(p for p in Path(corpus).rglob("*.md") if ".memidx" not in p.parts)
    rng = random.Random(seed)
    queries = []
    while len(queries) < count and files:
        path = rng.choice(files)
        headings = [
            re.sub(r"[`*_\[\]()<>#]", " ", line.lstrip("#")).strip()
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
            if re.match(r"^#{1,4} \S", line)
        ]
        headings = [h for h in headings if 2 <= len(h.split()) <= 12]
        if headings:
            queries.append(" ".join(rng.choice(headings).split()))
    return queries


def dense_window(binary, index, query, window, exact, extra=()):
    """The dense window (chunk id, score), from `memidx search --json`."""
    # --keep-all: the window is measured whether or not the query means
    # anything to the index.
    command = [binary, "search", query, "--index", index, "--mode", "dense",
               "-k", str(window), "--window", str(window), "--json", "--per-file", "0",
               "--keep-all"]
    command += ["--exact"] if exact else []
    command += list(extra)
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode not in (0, 1):
        sys.exit(f"memidx failed on {query!r}: {run.stderr.strip()}")
    response = json.loads(run.stdout)
    return [(r["chunk_id"], r["ranks"]["dense"]["score"]) for r in response["results"]]


def dense_work(binary, index, query, window, extra=()):
    """How the codes served the query (None for an exact scan) and the dense
    list's time, from `memidx explain --json` (which also ranks every chunk
    for its absences, so it runs once per query, for these two figures)."""
    command = [binary, "explain", query, "--index", index, "--mode", "dense",
               "-k", "1", "--window", str(window), "--json"] + list(extra)
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode not in (0, 1):
        sys.exit(f"memidx failed on {query!r}: {run.stderr.strip()}")
    dense = next(l for l in json.loads(run.stdout)["lists"] if l["name"] == "dense")
    return dense["approximate"], dense["matched"]


def recall(approximate, exact):
    if not exact:
        return 1.0
    last = exact[-1][1]
    reached = sum(1 for _, score in approximate if score >= last - 1e-6)
    return min(1.0, reached / len(exact))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("index")
    parser.add_argument("queries", nargs="?")
    parser.add_argument("--headings", metavar="CORPUS")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--binary", default="target/release/memidx")
    parser.add_argument("--window", type=int, default=50)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--rescore", type=int, help="--dense-rescore for the approximate runs")
    parser.add_argument("--feedback", type=int, help="--dense-feedback for both runs")
    parser.add_argument("--probe", help="--dense-probe shares for the approximate runs, by commas")
    parser.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                        help="--filter for both runs (repeatable)")
    parser.add_argument("--work", type=int, default=10,
                        help="queries explained for the rows rescored (default 10)")
    args = parser.parse_args()
    if args.headings:
        queries = heading_queries(args.headings, args.count, args.seed)
    elif args.queries:
        queries = read_queries(args.queries)
    else:
        parser.error("give QUERIES or --headings CORPUS")
    queries = queries[: args.limit]
    both = ["--dense-feedback", str(args.feedback)] if args.feedback is not None else []
    both += [arg for pair in args.filter for arg in ("--filter", pair)]
    rescored = both + (["--dense-rescore", str(args.rescore)] if args.rescore else [])
    shares = args.probe.split(",") if args.probe else [None]
    runs = {share: rescored + (["--dense-probe", share] if share else []) for share in shares}
    recalls = {share: [] for share in shares}
    scored = {share: [] for share in shares}
    shares_scored = {share: [] for share in shares}
    allowed = []
    for i, query in enumerate(queries):
        exact = dense_window(args.binary, args.index, query, args.window, True, both)
        for share, extra in runs.items():
            approximate = dense_window(args.binary, args.index, query, args.window, False, extra)
            recalls[share].append(recall(approximate, exact))
            if i < args.work:
                work, matched = dense_work(args.binary, args.index, query, args.window, extra)
                allowed.append(matched)
                if work:
                    scored[share].append(work["rescored"])
                    shares_scored[share].append(work["scanned"] / max(matched, 1))
    reports = []
    for share in shares:
        found = recalls[share]
        worst = min(range(len(found)), key=found.__getitem__)
        reports.append({
            "queries": len(queries),
            "window": args.window,
            **({"probe": float(share)} if share else {}),
            "mean_recall": round(statistics.mean(found), 4),
            "at_recall_1": round(sum(r == 1.0 for r in found) / len(found), 4),
            "worst": {"recall": round(found[worst], 4), "query": queries[worst]},
            "rows_rescored_median": statistics.median(scored[share]) if scored[share] else None,
            "allowed_median": statistics.median(allowed) if allowed else None,
            "codes_scored_of_allowed_median": (round(statistics.median(shares_scored[share]), 4)
                                               if shares_scored[share] else None),
            "approximate_of_explained": f"{len(scored[share])} of {min(args.work, len(queries))}",
        })
    print(json.dumps(reports[0] if len(reports) == 1 else reports, indent=1))


if __name__ == "__main__":
    main()
