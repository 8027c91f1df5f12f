#!/usr/bin/env python3
"""How well `strong_match` tells an answer from the best available chunk.

    bench/coverage.py [--binary B] [--eval-dir D] [--work W] [--model bundled]
                      [--queries N]

For each judged collection under D (default ../shared/eval) it searches the
collection's own index with (at most N, default 80, seeded) of its queries
and the index of every other collection with the same number of that
collection's queries — queries nothing there answers. It reads the top
result's `coverage` and the response's `strong_coverage` (`memidx search
--json`; `strong_match` is the one compared with the other, and a query's
own document, passed over, may be the top) and prints, per collection: of the queries whose top result is
judged relevant, how many are strong; of the others, how many; and of the
queries searched in another collection's index, how many are strong (these
should be few). A query the search answers with nothing (exit 1) counts as
not strong.

The indexes are the ones `bench/quality.py` builds (W/<docs>-<model>, built
here when missing). Python 3 stdlib only; the scorer's qrels reader is the
collection's own (`score.py` beside it).
"""

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

import quality


def top_result(binary, index, text, own=None):
    """The top result and `strong_match` of one search; (None, False) when it returned none.

    A result from the document `own` (the query's own, in a collection whose
    queries are documents) is passed over, as BEIR's rule drops it.
    """
    done = subprocess.run(
        [binary, "search", text, "--index", index, "--json", "-k", "3", "--no-text"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    if done.returncode == 1:
        return None, False
    if done.returncode != 0:
        sys.exit(f"coverage: search {text!r} in {index} failed:\n{done.stderr}")
    response = json.loads(done.stdout)
    results = [r for r in response["results"] if Path(r["source"]).stem != own]
    if not results:
        return None, False
    # strong_match judges the first result; strong_coverage judges any.
    return results[0], results[0].get("coverage", 0) >= response.get("strong_coverage", 2)


def sample(collection, count):
    """At most `count` of the collection's queries, the same ones every run."""
    with open(collection / "queries.jsonl", encoding="utf-8") as lines:
        queries = [json.loads(line) for line in lines if line.strip()]
    random.Random(1).shuffle(queries)
    return queries[:count]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parent
    parser.add_argument("--binary", default=str(here.parent / "target/release/memidx"))
    parser.add_argument("--eval-dir", type=Path, default=here.parent.parent / "shared/eval")
    parser.add_argument("--work", type=Path, default=Path("/tmp/memidx-quality"))
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--queries", type=int, default=80)
    args = parser.parse_args()

    collections = quality.collections(args.eval_dir)
    sys.path.insert(0, str(args.eval_dir))
    import score  # the collections' scorer: ../shared/eval/score.py

    indexes = {}
    for collection in collections:
        index = args.work / f"{(collection / 'docs').resolve().parent.name}-{args.model}"
        if not index.exists():
            quality.run([args.binary, "index", collection / "docs", "--index", index, "--quiet"])
        indexes[collection.name] = index

    print(f"| collection | relevant top result: strong | other top result: strong | in other indexes: strong |")
    print("| --- | --- | --- | --- |")
    for collection in collections:
        qrels = score.load_qrels(str(collection / "qrels.tsv"))
        queries = sample(collection, args.queries)
        relevant = [0, 0]
        other = [0, 0]
        for query in queries:
            own = str(query["id"])
            result, strong = top_result(args.binary, indexes[collection.name], query["text"], own)
            doc = Path(result["source"]).stem if result else None
            judged = qrels.get(str(query["id"]), {}).get(doc, 0) > 0
            tally = relevant if judged else other
            tally[0] += strong
            tally[1] += 1
        elsewhere = [0, 0]
        for name, index in indexes.items():
            if name == collection.name:
                continue
            for query in queries:
                _, strong = top_result(args.binary, index, query["text"])
                elsewhere[0] += strong
                elsewhere[1] += 1

        def share(tally):
            return f"{tally[0]} of {tally[1]} ({100 * tally[0] / max(tally[1], 1):.0f} %)"

        print(f"| {collection.name} | {share(relevant)} | {share(other)} | {share(elsewhere)} |")


if __name__ == "__main__":
    main()
