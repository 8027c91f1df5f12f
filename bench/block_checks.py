#!/usr/bin/env python3
"""What checking the tables block by block costs a whole-process search.

    bench/block_checks.py INDEX [--binary B] [--runs N] [--work W]

INDEX is an index of format 24 or later (its tables carry `NAME.blocks`,
see src/store/checked.rs), e.g. of corpus-big. The script copies it twice
into W: once as it is, once with the sidecars left out of `meta.json`
(re-sealed), which this build then reads unchecked, exactly as it reads an
index written before the sidecars. Both copies are written the same way, so
the page cache holds them alike. For each search below it runs the binary on
the two copies in turn, N times each (after one warm-up of each), and prints
the median wall time of each and the median of the pairwise ratios
checked / unchecked: the cost of the checks, measured in one run against a
baseline taken beside it.

Python 3 stdlib only.
"""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

SEARCHES = {
    "hybrid": ["search", "connection pool timeout", "--json"],
    "sparse": ["search", "list files", "--json", "--mode", "sparse"],
    "filter": ["search", "list files", "--json", "--filter", "dir=tldr/pages/common"],
    "since": ["search", "list files", "--json", "--since", "2020-01-01"],
}


def unchecked(index):
    """Rewrites index/meta.json without the block sidecars, sealed again."""
    path = index / "meta.json"
    manifest = json.loads(path.read_bytes())
    manifest.pop("meta_crc32")
    manifest["checksums"] = {
        name: check for name, check in manifest["checksums"].items() if not name.endswith(".blocks")
    }
    head = json.dumps(manifest, indent=2, ensure_ascii=False).encode()
    head = head.removesuffix(b"\n}")
    path.write_bytes(head + b',\n  "meta_crc32": %d\n}\n' % zlib.crc32(head))


def wall(cmd):
    """Seconds one run of cmd takes; stops the script if it fails."""
    started = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"block_checks: {' '.join(map(str, cmd))} failed:\n{done.stderr.decode()}")
    return elapsed


def main():
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index", type=Path)
    parser.add_argument("--binary", type=Path, default=here.parent / "target/release/memidx")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--work", type=Path, default=Path("/tmp/memidx-block-checks"))
    args = parser.parse_args()
    if not any(name.endswith(".blocks") for name in json.loads((args.index / "meta.json").read_bytes())["checksums"]):
        sys.exit(f"block_checks: {args.index} has no block sidecars (format 23 or older?)")
    shutil.rmtree(args.work, ignore_errors=True)
    checked, plain = args.work / "checked", args.work / "unchecked"
    shutil.copytree(args.index, checked)
    shutil.copytree(args.index, plain)
    unchecked(plain)
    print("| search | checked, median ms | unchecked, median ms | checked / unchecked (median of pairs) |")
    print("| --- | --- | --- | --- |")
    for name, search in SEARCHES.items():
        a = [str(args.binary), *search, "--index", str(checked)]
        b = [str(args.binary), *search, "--index", str(plain)]
        wall(a), wall(b)
        pairs = [(wall(a), wall(b)) for _ in range(args.runs)]
        ratio = statistics.median(x / y for x, y in pairs)
        a_ms = statistics.median(x for x, _ in pairs) * 1000
        b_ms = statistics.median(y for _, y in pairs) * 1000
        print(f"| {name} | {a_ms:.1f} | {b_ms:.1f} | {ratio:.3f} |", flush=True)
    shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
