#!/usr/bin/env bash
# How memidx's costs grow with the corpus: the corpus at 1x, 4x and 10x its
# size (bench/scale_corpus.py), each measured by bench/run.sh (full index,
# re-index after one change, size, whole-process search per mode, bm25s as
# the anchor in the same run) and bench/mcp_latency.py (a warm in-process
# search loop: the MCP server), then one table; see bench/README.md.
#
#   bench/scaling.sh CORPUS_DIR [BINARY] [--times 1,4,10] [--runs N] [--keep DIR]
#
# CORPUS_DIR is only read. The scaled corpora are written under a temp dir
# (or --keep DIR, which keeps them for another run) and removed at the end.
set -euo pipefail
{

die() { echo "scaling: error: $*" >&2; exit 2; }

[ $# -ge 1 ] || die "usage: bench/scaling.sh CORPUS_DIR [BINARY] [--times 1,4,10] [--runs N] [--keep DIR]"
CORPUS=$(cd "$1" && pwd -P) || die "no folder $1"
shift
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
BINARY=$REPO/target/release/memidx
if [ $# -ge 1 ] && [ "${1#--}" = "$1" ]; then BINARY=$1; shift; fi
TIMES=1,4,10
RUNS=1
KEEP=
while [ $# -gt 0 ]; do
    case $1 in
        --times) TIMES=${2:?--times needs a list}; shift 2 ;;
        --runs) RUNS=${2:?--runs needs a number}; shift 2 ;;
        --keep) KEEP=${2:?--keep needs a folder}; shift 2 ;;
        *) die "unknown argument $1" ;;
    esac
done
[ -x "$BINARY" ] || (cd "$REPO" && cargo build --release --quiet) || die "cannot build memidx"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/memidx-scaling.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
SCALED=${KEEP:-$WORK/corpora}
mkdir -p "$SCALED"

for n in ${TIMES//,/ }; do
    dir="$SCALED/x$n"
    if [ ! -d "$dir" ]; then
        python3 "$REPO/bench/scale_corpus.py" "$CORPUS" "$dir" --times "$n"
    fi
    echo "== ${n}x: bench/run.sh"
    "$REPO/bench/run.sh" "$dir" "$BINARY" --runs "$RUNS" --json "$WORK/run-$n.json" > "$WORK/run-$n.log" 2>&1 ||
        { tail -20 "$WORK/run-$n.log"; die "bench/run.sh failed at ${n}x"; }
    echo "== ${n}x: bench/mcp_latency.py"
    python3 "$REPO/bench/mcp_latency.py" "$dir" "$BINARY" --runs "$RUNS" --mode hybrid \
        --json "$WORK/mcp-$n.json" > "$WORK/mcp-$n.log" 2>&1 ||
        { tail -20 "$WORK/mcp-$n.log"; die "bench/mcp_latency.py failed at ${n}x"; }
    [ -n "$KEEP" ] || rm -rf "$dir"
done

python3 - "$WORK" "$TIMES" <<'EOF'
import json, os, sys
work, times = sys.argv[1], sys.argv[2].split(",")
def ms(s):
    return "n/a" if s is None else f"{s * 1000:.1f} ms"
def sec(s):
    return "n/a" if s is None else f"{s:.2f} s"
rows = {}
for n in times:
    run = json.load(open(os.path.join(work, f"run-{n}.json")))
    mcp = json.load(open(os.path.join(work, f"mcp-{n}.json")))
    m, s = run["memidx"], run["search"]
    files = run["corpus"]["md_files"]
    mib = float(run["corpus"]["md_bytes"] or 0) / 2**20
    rss = m.get("full_index_peak_rss_kb")
    ratio = run.get("ratios", {}).get("index_ours_over_bm25s")
    rows[n] = [
        f"{files} files, {mib:.0f} MiB",
        sec(m.get("full_index_s")) + ("" if ratio is None else f" ({ratio:.2f}x bm25s)"),
        "n/a" if rss is None else f"{float(rss) / 1024:.0f} MiB",
        "n/a" if m.get("index_over_markdown") is None else f"{m['index_over_markdown']:.2f}x",
        sec(m.get("reindex_modify_s")),
        "n/a" if m.get("reindex_modify_peak_rss_kb") is None
        else f"{float(m['reindex_modify_peak_rss_kb']) / 1024:.0f} MiB",
        sec(m.get("reindex_remember_s")),
    ] + [
        f"{ms(s[mode]['median_s'])} / {ms(s[mode]['p90_s'])}" if mode in s else "n/a"
        for mode in ("hybrid", "sparse", "dense")
    ] + [f"{ms(mcp['mcp']['median_s'])} / {ms(mcp['mcp']['p90_s'])}"]
labels = ["corpus", "full index (vs bm25s)", "full index peak RSS", "index / markdown",
          "one-file re-index", "one-file re-index peak RSS",
          "remember of one note (a run told its path)",
          "hybrid search, whole process (median / p90)",
          "sparse search, whole process", "dense search, whole process",
          "warm hybrid search, MCP server (median / p90)"]
print()
print("| measure | " + " | ".join(f"{n}x" for n in times) + " |")
print("| --- |" + " --- |" * len(times))
for i, label in enumerate(labels):
    print(f"| {label} | " + " | ".join(rows[n][i] for n in times) + " |")
EOF
echo
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $("$BINARY" --version)"

}
