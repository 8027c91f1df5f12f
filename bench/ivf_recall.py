#!/usr/bin/env python3
"""Recall of an inverted file (IVF) over an index's dense vectors: could the
dense list find its window by probing the k-means cells nearest the query
instead of reading every row's sign code?

    bench/ivf_recall.py INDEX --headings CORPUS [--count 200] [--seed 7]
        [--cells 512,2048] [--two-level 64x64:4] [--window 50] [--binary B]
        [--probe 0.01,0.02,0.05,0.1,0.2,0.3]

INDEX is an index folder (or the folder holding `.memidx`); its base
generation's vectors (`vectors.i8` × `scales.f32`) are read. CORPUS gives the
queries as `bench/dense_recall.py --headings` draws them (same seed, same
queries). Each query is embedded by memidx itself: the queries are written one
per file into a temporary folder, indexed with the same binary and the
index's model (`--dense-index never`), and their chunks' vectors read back,
so a query vector is what the model makes of the query's text.

The dense list's second scan is what a search returns, so each query is
moved toward its three best rows first (`q + mean(rows)`, unit length), as
memidx's feedback does. The exact window is every row scoring at least the
`--window`-th best score (ties at the boundary are no miss). For each cell
count, spherical k-means (cells seeded from the rows, a sample of 64 rows per
cell, 8 rounds) assigns every row to its nearest cell; a query probes cells
nearest first until the probed cells hold the given share of the rows, and
its recall is the share of its window those cells hold (capped at the
window). `--two-level TOPxSUB:PROBE` also trains cells cheaply: TOP coarse
cells, each split into SUB trained on its own rows, every row assigned to
the nearest fine cell among the children of its PROBE nearest coarse cells. `--by-codes` compares rows
with cells by their sign codes (`sign(x) · c`, what memidx's code scan
computes, so its kernels could do the assignment) instead of their vectors.
Prints the mean recall per probed share, and the seconds the training and
assignment took (numpy, all cores).

Needs numpy (`bench/run.sh`'s venv has it:
`/tmp/memidx-bench-venv/bin/python bench/ivf_recall.py ...`).
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dense_recall import heading_queries  # noqa: E402


def index_dir(path):
    path = Path(path)
    return path if (path / "meta.json").exists() else path / ".memidx"


def base_vectors(index):
    """The base generation's rows (dequantized), from its manifest."""
    meta = json.loads((index / "meta.json").read_text())
    generation = index / f"gen-{meta['generation']}"
    dim = meta["embedder"]["dim"]
    values = np.fromfile(generation / "vectors.i8", dtype=np.int8).reshape(-1, dim)
    scales = np.fromfile(generation / "scales.f32", dtype=np.float32)
    return values.astype(np.float32) * scales[:, None], meta


def query_vectors(binary, queries, meta):
    """Each query's vector, as the index's model embeds its text."""
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for i, query in enumerate(queries):
            (folder / f"q{i:05d}.md").write_text(query + "\n", encoding="utf-8")
        command = [binary, "index", str(folder), "--quiet", "--dense-index", "never"]
        if meta.get("model_dir"):
            command += ["--model", meta["model_dir"]]
        subprocess.run(command, check=True)
        vectors, _ = base_vectors(folder / ".memidx")
    if len(vectors) != len(queries):
        sys.exit(f"expected one chunk per query, got {len(vectors)} for {len(queries)}")
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def moved(rows, units, query, seeds=3):
    """The query moved toward its best rows, as the dense list's feedback does."""
    scores = rows @ query
    best = np.argpartition(-scores, seeds)[:seeds]
    moved = query + units[best].mean(axis=0)
    return moved / np.linalg.norm(moved)


def kmeans(units, cells, rng, rounds=8, per_cell=64, keys=None):
    """Spherical k-means; `keys` (default `units`) are what each row is
    compared with the cells by (`--by-codes`: its signs)."""
    keys = units if keys is None else keys
    picked = rng.choice(len(units), min(len(units), per_cell * cells), replace=False)
    sample, sample_keys = units[picked], keys[picked]
    centroids = sample[rng.choice(len(sample), cells, replace=False)].copy()
    for _ in range(rounds):
        nearest = assign(sample_keys, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, sample)
        empty = ~sums.any(axis=1)
        sums[empty] = centroids[empty]
        centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return centroids


def assign(units, centroids, step=20000):
    return np.concatenate(
        [np.argmax(units[i:i + step] @ centroids.T, axis=1) for i in range(0, len(units), step)]
    )


def two_level(units, top, sub, probe, rng, step=20000, keys=None):
    """Cells trained cheaply: `top` coarse cells, each split into `sub`
    cells trained on its own rows; a row goes to the nearest fine cell among
    the children of its `probe` nearest coarse cells (compared by `keys`,
    as in `kmeans`)."""
    keys = units if keys is None else keys
    coarse = kmeans(units, top, rng, keys=keys)
    coarse_of = assign(keys, coarse)
    children = []
    for cell in range(top):
        mine = coarse_of == cell
        count = min(sub, int(mine.sum()))
        children.append(
            kmeans(units[mine], count, rng, keys=keys[mine]) if count
            else np.zeros((0, units.shape[1]))
        )
    starts = np.cumsum([0] + [len(c) for c in children])
    cell_of = np.empty(len(units), dtype=np.int64)
    for first in range(0, len(units), step):
        batch = keys[first:first + step]
        nearest = np.argpartition(-(batch @ coarse.T), probe, axis=1)[:, :probe]
        best = np.full(len(batch), -np.inf)
        for column in nearest.T:
            for cell in np.unique(column):
                rows = np.nonzero(column == cell)[0]
                if not len(children[cell]):
                    continue
                scores = batch[rows] @ children[cell].T
                fine = np.argmax(scores, axis=1)
                value = scores[np.arange(len(rows)), fine]
                better = value > best[rows]
                best[rows[better]] = value[better]
                cell_of[first + rows[better]] = starts[cell] + fine[better]
    return np.concatenate(children), cell_of


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("index")
    parser.add_argument("--headings", required=True, metavar="CORPUS")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cells", default="512,2048")
    parser.add_argument("--two-level", default="", metavar="TOPxSUB:PROBE,...",
                        help="also cells trained in two levels, e.g. 64x64:4")
    parser.add_argument("--probe", default="0.01,0.02,0.05,0.1,0.2,0.3")
    parser.add_argument("--window", type=int, default=50)
    parser.add_argument("--by-codes", action="store_true",
                        help="compare rows with cells by their sign codes, as memidx's code scan "
                        "would assign them, not by their vectors")
    parser.add_argument("--binary", default="target/release/memidx")
    args = parser.parse_args()

    rows, meta = base_vectors(index_dir(args.index))
    norms = np.linalg.norm(rows, axis=1)
    units = rows / np.maximum(norms, 1e-12)[:, None]
    keys = np.where(rows >= 0, 1.0, -1.0).astype(np.float32) if args.by_codes else units
    queries = heading_queries(args.headings, args.count, args.seed)
    vectors = [moved(rows, units, q) for q in query_vectors(args.binary, queries, meta)]
    windows = []
    for query in vectors:
        scores = rows @ query
        floor = scores[np.argpartition(-scores, args.window)[: args.window]].min()
        windows.append(np.nonzero(scores >= floor)[0])
    probes = [float(p) for p in args.probe.split(",")]
    print(f"{len(rows):,} rows, {len(queries)} heading queries, window {args.window}")
    print("| cells | train + assign | " + " | ".join(f"{p:.0%} probed" for p in probes) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in probes) + " |")
    rng = np.random.default_rng(1)
    layouts = [(f"{int(c):,}", int(c), None) for c in args.cells.split(",") if c]
    for spec in filter(None, args.two_level.split(",")):
        shape, probe = spec.split(":")
        top, sub = (int(n) for n in shape.split("x"))
        layouts.append((f"{top}×{sub} in two levels, {probe} probed", top, (sub, int(probe))))
    for name, cells, split in layouts:
        started = time.perf_counter()
        if split is None:
            centroids = kmeans(units, cells, rng, keys=keys)
            cell_of = assign(keys, centroids)
        else:
            centroids, cell_of = two_level(units, cells, split[0], split[1], rng, keys=keys)
        took = time.perf_counter() - started
        cells = len(centroids)
        sizes = np.bincount(cell_of, minlength=cells)
        recalls = {p: [] for p in probes}
        for query, window in zip(vectors, windows):
            order = np.argsort(-(centroids @ query))
            rank = np.empty(cells, dtype=np.int64)
            rank[order] = np.arange(cells)
            held = np.cumsum(sizes[order])
            for share in probes:
                probed = np.searchsorted(held, share * len(rows)) + 1
                found = (rank[cell_of[window]] < probed).sum()
                recalls[share].append(min(found, args.window) / args.window)
        cells_recall = " | ".join(f"{np.mean(recalls[p]):.4f}" for p in probes)
        print(f"| {name} | {took:.1f} s | {cells_recall} |")


if __name__ == "__main__":
    main()
