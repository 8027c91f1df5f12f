#!/usr/bin/env python3
"""An OpenAI-compatible embedding server against the same model loaded with --model.

Indexes a collection's documents twice — `--embed-url URL --embed-model NAME` (the server) and
`--model DIR` (memidx's own encoder, the same weights) — then reports:

- indexing throughput: chunks/s of each, from the "embedding N chunks: S s" figure of the index
  summary line (tokenizing and running the model over every chunk, requests included for the
  server);
- parity: for the first N queries, whether the top 10 of each mode (dense, hybrid) are the same
  chunks in the same order, and where they are not, how far apart (overlap of the two top 10s).

Usage: bench/endpoint.py --binary target/release/memidx --url http://127.0.0.1:7997/v1 \
           --name all-MiniLM-L6-v2 --model DIR [--collection ../shared/eval/cranfield] [--queries 50]
Writes nothing outside its temp dir. Start the server first (.ci/embed-server shows how).
"""

import argparse
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

SUMMARY = re.compile(r"\(embedding (\d+) chunks?: ([0-9.]+) s[;)]")


def index(binary, corpus, model_args):
    """A full index of `corpus`; returns (chunks embedded, seconds embedding)."""
    out = subprocess.run(
        [binary, "index", str(corpus), "--full", *model_args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = SUMMARY.search(out)
    if not found:
        raise SystemExit(f"no embedding figure in: {out}")
    return int(found.group(1)), float(found.group(2))


def top10(binary, corpus, query, mode):
    """The chunk ids of a search's top 10 (kept even without confidence)."""
    out = subprocess.run(
        [binary, "search", query, "--index", str(corpus), "--json", "--top-k", "10",
         "--keep-all", "--mode", mode, "--no-server"],
        capture_output=True,
        text=True,
    )
    if out.returncode not in (0, 1):
        raise SystemExit(f"search failed: {out.stderr}")
    return [r["chunk_id"] for r in json.loads(out.stdout)["results"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--collection", default=str(Path(__file__).parent / "../../shared/eval/cranfield"))
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    collection = Path(args.collection)
    with tempfile.TemporaryDirectory() as tmp:
        remote, local = Path(tmp) / "remote", Path(tmp) / "local"
        shutil.copytree(collection / "docs", remote)
        shutil.copytree(collection / "docs", local)
        remote_chunks, remote_s = index(args.binary, remote, ["--embed-url", args.url, "--embed-model", args.name])
        local_chunks, local_s = index(args.binary, local, ["--model", args.model])
        print(f"collection {collection.name}: {remote_chunks} chunks")
        print("| model | embedding time | chunks/s |")
        print("| --- | --- | --- |")
        print(f"| --embed-url ({args.name}) | {remote_s:.1f} s | {remote_chunks / remote_s:.1f} |")
        print(f"| --model | {local_s:.1f} s | {local_chunks / local_s:.1f} |")
        queries = [json.loads(line)["text"] for line in (collection / "queries.jsonl").open()][: args.queries]
        print()
        print("| mode | queries | same top 10, same order | same top 10 as a set | mean overlap of the top 10s |")
        print("| --- | --- | --- | --- | --- |")
        for mode in ("dense", "hybrid"):
            same = same_set = 0
            overlap = 0.0
            differ = []
            for query in queries:
                a, b = top10(args.binary, remote, query, mode), top10(args.binary, local, query, mode)
                same += a == b
                same_set += set(a) == set(b)
                overlap += len(set(a) & set(b)) / max(len(a), len(b), 1)
                if a != b:
                    differ.append(query)
            print(f"| {mode} | {len(queries)} | {same} | {same_set} | {overlap / len(queries):.3f} |")
            for query in differ[:5]:
                print(f"    differs: {query}")


if __name__ == "__main__":
    main()
