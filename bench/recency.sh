#!/usr/bin/env bash
# nDCG@10 of hybrid and hybrid+recency on the dated fixture (fixtures/dated:
# all questions, the time-sensitive ones, the time-neutral ones) for each
# recency weight, with the bundled model and, given a model folder, another.
#
#   bench/recency.sh [BINARY] [MODEL_DIR]
#
# The weights tried and the one shipped are in docs/searching.md, Time.
set -euo pipefail
cd "$(dirname "$0")/.."
binary="${1:-target/release/memidx}"
model="${2:-}"
fixture=fixtures/dated
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
weights=(0.05 0.1 0.2 0.3 0.5 1.0)
for name in bundled ${model:+model}; do
  index="$work/$name"
  "$binary" index "$fixture/docs" --index "$index" --quiet ${model:+$([ "$name" = model ] && echo --model "$model")}
  for set in "" -time -neutral; do
    for w in "${weights[@]}"; do
      "$binary" eval --index "$index" --queries "$fixture/queries$set.jsonl" \
        --qrels "$fixture/qrels$set.tsv" --recency-weight "$w" --json --quiet |
        python3 -c '
import json, sys
r = json.load(sys.stdin)
m = {x["mode"]: x["metrics"]["nDCG@10"] for x in r["modes"]}
name, subset, w = sys.argv[1], sys.argv[2] or "-all", sys.argv[3]
h, hr = m["hybrid"], m["hybrid+recency"]
print(f"{name:8} {subset:9} w={w:4}  hybrid {h:.4f}  +recency {hr:.4f}  ({hr - h:+.4f})")
' "$name" "$set" "$w"
    done
  done
done
