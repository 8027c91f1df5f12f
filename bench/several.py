#!/usr/bin/env python3
"""Searching several indexes as one against searching one index of it all.

usage: bench/several.py CORPUS WORK [--binary B] [--runs N] [--json OUT]
                        [--dense-index auto|always|never]

Splits the markdown files of CORPUS (as memidx walks them, sorted by path)
into 2 and into 8 folders of consecutive files under WORK, as hard links
(CORPUS is never written; WORK/whole links all of it), indexes the whole and
every part with the same binary (and `--dense-index` when given: under
the default, `auto`, an index of 10,000 rows or more has sign codes, which
a search uses when all the indexes it searches hold 100,000 rows or more),
then times whole-process hybrid searches
(`memidx search Q --json`) of bench/queries.txt over 1, 2 and 8 indexes,
interleaved query by query and run by run so that a noisy machine weighs on
all three alike. Prints the medians, their ratios to one index, and how
many queries' top 10 (ids without the index's name) equal one index's.
Standard library only.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import markdown_files  # noqa: E402

SPLITS = (1, 2, 8)


def link_tree(files, root, dest):
    """Hard-links `files` (paths under `root`) into `dest`, keeping their
    relative paths (copies where a link cannot be made)."""
    for path in files:
        target = os.path.join(dest, os.path.relpath(path, root))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)


def parts(files, count):
    """`files` cut into `count` runs of consecutive files, near equal."""
    size = -(-len(files) // count)
    return [files[i:i + size] for i in range(0, len(files), size)]


def index(binary, folder, dense_index):
    started = time.perf_counter()
    setting = ["--dense-index", dense_index] if dense_index else []
    subprocess.run([binary, "index", "--quiet", *setting, folder], check=True)
    return time.perf_counter() - started


def search(binary, query, folders):
    args = [binary, "search", query, "--json"]
    for folder in folders:
        args += ["--index", folder]
    started = time.perf_counter()
    out = subprocess.run(args, check=False, capture_output=True)
    elapsed = time.perf_counter() - started
    if out.returncode not in (0, 1):
        sys.exit(f"search failed: {out.stderr.decode()}")
    ids = [r["chunk_id"].split(":", 1)[-1] if len(folders) > 1 else r["chunk_id"]
           for r in json.loads(out.stdout)["results"]]
    return elapsed, ids


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("work")
    parser.add_argument("--binary", default=os.path.join(HERE, "..", "target", "release", "memidx"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--dense-index", choices=["auto", "always", "never"])
    args = parser.parse_args()
    corpus = os.path.abspath(args.corpus)
    files = markdown_files(corpus)
    layouts = {}
    for count in SPLITS:
        base = os.path.join(args.work, f"split{count}")
        folders = [os.path.join(base, f"p{i}") for i in range(count)]
        if not all(os.path.isdir(f) for f in folders):
            shutil.rmtree(base, ignore_errors=True)
            for folder, chunk in zip(folders, parts(files, count)):
                link_tree(chunk, corpus, folder)
        # An index already built with these settings is only checked.
        for folder in folders:
            seconds = index(args.binary, folder, args.dense_index)
            print(f"indexed {folder} in {seconds:.1f} s", file=sys.stderr)
        layouts[count] = folders
    with open(os.path.join(HERE, "queries.txt"), encoding="utf-8") as f:
        queries = [line.strip() for line in f if line.strip()]
    times = {count: [] for count in SPLITS}
    same = {count: 0 for count in SPLITS}
    for run in range(args.runs):
        for query in queries:
            answers = {}
            for count in SPLITS if run % 2 == 0 else reversed(SPLITS):
                elapsed, ids = search(args.binary, query, layouts[count])
                times[count].append(elapsed)
                answers[count] = ids
            if run == 0:
                for count in SPLITS:
                    same[count] += answers[count] == answers[1]
    one = statistics.median(times[1])
    rows = []
    print("| indexes | hybrid search, whole process, median | ratio to one index | top 10 equal to one index's |")
    print("| --- | --- | --- | --- |")
    for count in SPLITS:
        median = statistics.median(times[count])
        rows.append({"indexes": count, "median_ms": median * 1e3, "ratio": median / one,
                     "same_top10": same[count], "queries": len(queries)})
        print(f"| {count} | {median * 1e3:.1f} ms | {median / one:.2f}× | {same[count]} of {len(queries)} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"files": len(files), "runs": args.runs, "dense_index": args.dense_index,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
