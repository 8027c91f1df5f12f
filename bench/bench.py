#!/usr/bin/env python3
"""Helpers for bench/run.sh (see bench/README.md). Not meant to be run alone.

Subcommands:
  mdstats CORPUS                 markdown files memidx indexes: count, bytes, a median-size file
  bm25s CORPUS QUERIES OUT       the bm25s anchor: read + tokenize + index, per-query timings
                                 (needs bm25s and PyStemmer: run it with the throwaway venv's python)
  report RESULTS_DIR [--json F]  print the results table (markdown) and optionally write JSON

mdstats and report use the standard library only (any python3 >= 3.8).
"""
import json
import os
import statistics
import sys
import time

MARKDOWN_EXTENSIONS = ("md", "markdown")


def markdown_files(root):
    """The files memidx's walker indexes: *.md / *.markdown (any case), regular
    files, symlinks not followed, names starting with '.' (files or folders)
    skipped below the root. Sorted by relative path."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.startswith("."):
                continue
            ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
            if ext not in MARKDOWN_EXTENSIONS:
                continue
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            out.append(path)
    out.sort(key=lambda p: os.path.relpath(p, root))
    return out


def cmd_mdstats(args):
    root = args[0]
    files = markdown_files(root)
    sizes = [(os.path.getsize(p), os.path.relpath(p, root)) for p in files]
    total = sum(s for s, _ in sizes)
    print(f"md_files\t{len(files)}")
    print(f"md_bytes\t{total}")
    if sizes:
        # A median-size file in a deterministic order (size, then path): the one
        # the re-index steps touch, modify and delete.
        ordered = sorted(sizes)
        size, rel = ordered[len(ordered) // 2]
        print(f"pick_file\t{rel}")
        print(f"pick_size\t{size}")


def read_doc(path):
    """As /work/shared/eval/bm25_baseline.py: the text without YAML front matter."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            text = text[end + 5:]
    return text


def write_json(path, value):
    """Writes `value` to `path` as indented JSON ending in a newline (a run's --json figures)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=1)
        f.write("\n")


def percentile(values, q):
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil
    return ordered[int(rank) - 1]


def cmd_bm25s(args):
    import bm25s  # noqa: imported here so mdstats/report need no venv
    import Stemmer

    root, queries_path, out_path = args[0], args[1], args[2]
    runs = int(args[3]) if len(args) > 3 else 3
    queries = [q for q in open(queries_path, encoding="utf-8").read().splitlines() if q.strip()]

    t0 = time.perf_counter()
    paths = markdown_files(root)
    corpus, undecodable = [], 0
    for p in paths:
        try:
            corpus.append(read_doc(p))
        except (UnicodeDecodeError, OSError):
            undecodable += 1  # memidx skips these too (invalid UTF-8, unreadable)
    t1 = time.perf_counter()
    stemmer = Stemmer.Stemmer("english")
    ctoks = bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False)
    t2 = time.perf_counter()
    retriever = bm25s.BM25()  # method="lucene", k1=1.5, b=0.75 (the baseline's settings)
    retriever.index(ctoks, show_progress=False)
    t3 = time.perf_counter()
    k = min(10, len(corpus))

    def one(q):
        qt = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, show_progress=False)
        return retriever.retrieve(qt, k=k, show_progress=False)

    for q in queries:  # warm-up, like the memidx validation pass
        one(q)
    times = []
    for q in queries:
        for _ in range(runs):
            s = time.perf_counter()
            one(q)
            times.append(time.perf_counter() - s)

    kernel = None
    try:
        from threadpoolctl import threadpool_info

        kernel = ";".join(
            f"{i.get('internal_api')}:{i.get('architecture')}" for i in threadpool_info()
        )
    except Exception:
        pass
    res = {
        "bm25s_version": getattr(bm25s, "__version__", "?"),
        "docs": len(corpus),
        "undecodable": undecodable,
        "read_s": t1 - t0,
        "tokenize_s": t2 - t1,
        "index_s": t3 - t2,
        "build_s": t3 - t0,
        "query_runs": len(times),
        "query_median_s": statistics.median(times),
        "query_p90_s": percentile(times, 90),
        "query_mean_s": statistics.fmean(times),
        "blas_kernel": kernel,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1)


# --------------------------------------------------------------------- report


def load_kv(path):
    kv = {}
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            line = line.rstrip("\n")
            if "\t" in line:
                k, v = line.split("\t", 1)
                kv[k] = v
    return kv


# The timed searches run.sh writes (search-KEY-N.json), and what each row is.
SEARCH_ROWS = {
    "hybrid": "search --mode hybrid --no-server, whole process",
    "sparse": "search --mode sparse --no-server, whole process",
    "dense": "search --mode dense --no-server, whole process",
    "served": "search --mode hybrid, whole process answered by a running server",
}


def search_times(results_dir, mode):
    """Pooled whole-process times (s) of every run of every query for one mode:
    hyperfine JSON exports (search-MODE-N.json) or the fallback loop's file."""
    times = []
    for name in sorted(os.listdir(results_dir)):
        if name.startswith(f"search-{mode}-") and name.endswith(".json"):
            data = json.load(open(os.path.join(results_dir, name), encoding="utf-8"))
            for r in data["results"]:
                times.extend(r["times"])
    loop = os.path.join(results_dir, f"search-{mode}.loop")
    if os.path.exists(loop):
        for line in open(loop, encoding="utf-8"):
            if line.strip():
                times.append(int(line.split("\t")[-1]) / 1e9)
    return times


def fnum(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def fmt_s(v):
    if v is None:
        return "n/a"
    if v < 0.01:
        return f"{v * 1000:.3f} ms"
    return f"{v * 1000:.1f} ms" if v < 1 else f"{v:.2f} s"


def fmt_mb(kb):
    return "n/a" if kb is None else f"{kb / 1024:.0f} MB"


def verdict(ok):
    return "n/a" if ok is None else ("yes" if ok else "**MISSED**")


def cmd_report(args):
    results_dir = args[0]
    json_out = None
    if "--json" in args:
        json_out = args[args.index("--json") + 1]
    kv = load_kv(os.path.join(results_dir, "results.tsv"))
    bm = None
    bm_path = os.path.join(results_dir, "bm25s.json")
    if os.path.exists(bm_path):
        bm = json.load(open(bm_path, encoding="utf-8"))

    rows = []  # (measure, value, target, ok)
    out = {"machine": {}, "corpus": {}, "memidx": {}, "search": {}, "bm25s": bm, "ratios": {}}
    for k in ("date", "nproc", "cpu", "mem", "kernel", "memidx_version", "binary", "repo_rev", "model",
              "timer", "load_start", "load_end"):
        out["machine"][k] = kv.get(k)
    for k in ("corpus", "md_files", "md_bytes", "pick_file", "pick_size"):
        out["corpus"][k] = kv.get(k)

    full_s = fnum(kv.get("full_s"))
    full_rss = fnum(kv.get("full_rss_kb"))
    rows.append(("full index, wall", fmt_s(full_s), "≤ 60 s", None if full_s is None else full_s <= 60))
    rows.append(("full index, peak RSS", fmt_mb(full_rss), "≤ 1.5 GB",
                 None if full_rss is None else full_rss <= 1.5 * 1024 * 1024))
    out["memidx"]["full_index_s"] = full_s
    out["memidx"]["full_index_peak_rss_kb"] = full_rss
    out["memidx"]["full_index_warnings"] = fnum(kv.get("full_warnings"))
    labels = [
        ("noop", "re-index, nothing changed", None),
        ("touch", "re-index, 1 file touched (mtime only)", 2.0),
        ("modify", "re-index, 1 file modified", 2.0),
        ("add", "re-index, 1 file added", 2.0),
        ("delete", "re-index, 1 file deleted", 2.0),
        ("remember", "remember, 1 note written and indexed", None),
    ]
    for key, label, target in labels:
        s = fnum(kv.get(f"reindex_{key}_s"))
        rss = fnum(kv.get(f"reindex_{key}_rss_kb"))
        out["memidx"][f"reindex_{key}_s"] = s
        out["memidx"][f"reindex_{key}_peak_rss_kb"] = rss
        value = fmt_s(s) + ("" if rss is None else f" ({fmt_mb(rss)} RSS)")
        rows.append((label, value, "—" if target is None else f"≤ {target:g} s",
                     None if (s is None or target is None) else s <= target))

    idx = fnum(kv.get("index_bytes"))
    md = fnum(kv.get("md_bytes"))
    ratio = idx / md if idx is not None and md else None
    rows.append(("index size / markdown",
                 "n/a" if ratio is None else f"{idx / 2**20:.1f} MiB / {md / 2**20:.1f} MiB = {ratio:.2f}×",
                 "≤ 1.5×", None if ratio is None else ratio <= 1.5))
    out["memidx"]["index_bytes"] = idx
    out["memidx"]["index_over_markdown"] = ratio
    out["memidx"]["index_parts"] = kv.get("index_parts")

    medians = {}
    for mode in SEARCH_ROWS:
        t = search_times(results_dir, mode)
        if not t:
            continue
        med, p90 = statistics.median(t), percentile(t, 90)
        medians[mode] = med
        rss = fnum(kv.get(f"search_{mode}_rss_kb"))
        out["search"][mode] = {"runs": len(t), "median_s": med, "p90_s": p90,
                               "mean_s": statistics.fmean(t), "min_s": min(t), "max_s": max(t),
                               "peak_rss_kb": rss}
        target = 0.030 if mode == "hybrid" else None
        rows.append((f"{SEARCH_ROWS[mode]} (median / p90, {len(t)} runs)",
                     f"{fmt_s(med)} / {fmt_s(p90)}" + ("" if rss is None else f" ({fmt_mb(rss)} RSS)"),
                     "median ≤ 30 ms" if target else "—",
                     None if target is None else med <= target))

    lines = []
    m = out["machine"]
    lines.append(f"machine: {m['nproc']} cores, {m['cpu']}, {m['mem']} memory; {m['kernel']}")
    lines.append(f"load average (1, 5, 15 min) at start: {m['load_start']}, at end: {m['load_end']} "
                 f"(other work on the machine shows up here)")
    lines.append(f"date: {m['date']}; memidx: {m['memidx_version']} ({m['binary']}, repo {m['repo_rev']}); "
                 f"model: {m['model'] or 'bundled'}; timer: {m['timer']}")
    c = out["corpus"]
    lines.append(f"corpus: {c['corpus']}: {c['md_files']} markdown files, "
                 f"{(fnum(c['md_bytes']) or 0) / 2**20:.1f} MiB; re-index steps use {c['pick_file']} ({c['pick_size']} B)")
    if kv.get("index_parts"):
        lines.append(f"index parts: {kv['index_parts']}")
    if kv.get("full_warnings") not in (None, "0"):
        lines.append(f"full index printed {kv['full_warnings']} warning line(s) (first ones in the log above)")
    lines.append("")
    lines.append("| measure | value | target | met |")
    lines.append("| --- | --- | --- | --- |")
    for measure, value, target, ok in rows:
        lines.append(f"| {measure} | {value} | {target} | {verdict(ok)} |")

    if bm:
        lines.append("")
        lines.append(f"anchor: bm25s {bm['bm25s_version']} + PyStemmer over the same {bm['docs']} files "
                     f"(front matter stripped, one document per file, in-process, no save to disk"
                     + (f"; BLAS {bm['blas_kernel']}" if bm.get("blas_kernel") else "") + ")")
        lines.append("")
        lines.append("| bm25s | value |")
        lines.append("| --- | --- |")
        lines.append(f"| read files | {fmt_s(bm['read_s'])} |")
        lines.append(f"| tokenize (stop words + stemmer) | {fmt_s(bm['tokenize_s'])} |")
        lines.append(f"| index | {fmt_s(bm['index_s'])} |")
        lines.append(f"| read + tokenize + index | {fmt_s(bm['build_s'])} |")
        bm_rss = fnum(kv.get("bm25s_rss_kb"))
        if bm_rss is not None:
            lines.append(f"| peak RSS (whole python process) | {fmt_mb(bm_rss)} |")
        lines.append(f"| per query, tokenize + retrieve k=10 (median / p90, {bm['query_runs']} runs) | "
                     f"{fmt_s(bm['query_median_s'])} / {fmt_s(bm['query_p90_s'])} |")
        ratios = {}
        if full_s is not None:
            ratios["index_ours_over_bm25s"] = full_s / bm["build_s"]
        for mode, med in medians.items():
            ratios[f"query_{mode}_ours_over_bm25s"] = med / bm["query_median_s"]
        out["ratios"] = ratios
        lines.append("")
        lines.append("| ratio (ours / bm25s; < 1 = memidx faster) | value |")
        lines.append("| --- | --- |")
        if "index_ours_over_bm25s" in ratios:
            lines.append(f"| full index (ours: walk, read, chunk, tokenize, BM25 + embed, write to disk) "
                         f"/ (read + tokenize + index in memory) | {ratios['index_ours_over_bm25s']:.2f} |")
        for mode in SEARCH_ROWS:
            r = ratios.get(f"query_{mode}_ours_over_bm25s")
            if r is not None:
                lines.append(f"| per query: {SEARCH_ROWS[mode]} (start, search, JSON) "
                             f"/ bm25s in-process | {r:.2f} |")
    text = "\n".join(lines)
    print(text)
    if json_out:
        write_json(json_out, out)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    {"mdstats": cmd_mdstats, "bm25s": cmd_bm25s, "report": cmd_report}.get(
        cmd, lambda _a: sys.exit(f"unknown subcommand {cmd!r}\n{__doc__}"))(args)


if __name__ == "__main__":
    main()
