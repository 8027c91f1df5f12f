#!/usr/bin/env bash
# How a full index grows with the corpus: time, peak RSS and index size on
# 1/4, 1/2 and all of a corpus's markdown files; see bench/README.md.
#
#   bench/scaling.sh CORPUS_DIR [BINARY]
#
# The subsets are every 4th / every 2nd markdown file in sorted path order,
# hard-linked (or copied, across file systems) into a temp dir; each is
# indexed from scratch with `memidx index --full --quiet --index TEMP`, so
# CORPUS_DIR itself is only read. Needs GNU time (`apt-get install time`).
set -euo pipefail
{

die() { echo "scaling: error: $*" >&2; exit 2; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: bench/scaling.sh CORPUS_DIR [BINARY]"
CORPUS=$(cd "$1" && pwd -P) || die "no folder $1"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
BINARY=${2:-$REPO/target/release/memidx}
[ -x "$BINARY" ] || (cd "$REPO" && cargo build --release --quiet) || die "cannot build memidx"
[ -x /usr/bin/time ] || die "GNU time is needed for peak RSS (apt-get install time)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/memidx-scaling.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cp "$BINARY" "$WORK/memidx"

# The markdown files memidx would index (hidden names skipped, no symlinks).
(cd "$CORPUS" && find . -mindepth 1 -name '.*' -prune -o -type f \( -name '*.md' -o -name '*.markdown' \) -print |
    LC_ALL=C sort) > "$WORK/files"
TOTAL=$(wc -l < "$WORK/files")
[ "$TOTAL" -gt 0 ] || die "no markdown files under $CORPUS"

echo "| share | files | MiB of markdown | chunks | full index (s) | peak RSS (MiB) | index (MiB) |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for step in 4 2 1; do
    subset="$WORK/subset-$step"
    mkdir -p "$subset"
    awk -v n="$step" '(NR - 1) % n == 0' "$WORK/files" > "$WORK/list-$step"
    (cd "$CORPUS" && xargs -d '\n' cp -l --parents -t "$subset" < "$WORK/list-$step" 2>/dev/null) ||
        (cd "$CORPUS" && xargs -d '\n' cp --parents -t "$subset" < "$WORK/list-$step")
    files=$(wc -l < "$WORK/list-$step")
    bytes=$(cd "$subset" && xargs -d '\n' stat -c %s < "$WORK/list-$step" | awk '{s += $1} END {print s}')
    index="$WORK/index-$step"
    start=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$WORK/rss" "$WORK/memidx" index "$subset" --full --quiet \
        --index "$index" 2>/dev/null >/dev/null
    end=$(date +%s%N)
    chunks=$("$WORK/memidx" status --index "$index" --json |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["counts"]["chunks"])')
    size=$(du -sb "$index" | cut -f1)
    share=$([ "$step" = 1 ] && echo "all" || echo "1/$step")
    awk -v share="$share" -v f="$files" -v b="$bytes" -v c="$chunks" -v ns=$((end - start)) \
        -v rss="$(cat "$WORK/rss")" -v size="$size" 'BEGIN {
        printf "| %s | %d | %.1f | %d | %.1f | %.0f | %.1f |\n",
            share, f, b / 1048576, c, ns / 1e9, rss / 1024, size / 1048576 }'
    rm -rf "$subset" "$index"
done
echo
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $("$WORK/memidx" --version)"

}
