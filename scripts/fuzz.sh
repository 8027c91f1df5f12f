#!/usr/bin/env bash
# Runs the property suite (tests/integration/properties.rs: tokenizer, chunker, front
# matter, request parser, fusion) with far more generated cases than CI does,
# for a fixed time budget. cargo-fuzz needs a nightly toolchain, which this
# project's machines do not have, so proptest is the fuzzer.
#
#   scripts/fuzz.sh [SECONDS]        # default 300; PROPTEST_CASES overrides the case count
#
# A failure prints proptest's minimal failing input: fix the bug and keep the
# input as a plain regression test next to the found_* tests.
set -uo pipefail
cd "$(dirname "$0")/.."
budget=${1:-300}
cases=${PROPTEST_CASES:-100000}
cargo build --release --tests --quiet || exit 2
PROPTEST_CASES=$cases timeout "$budget" cargo test --release --quiet --test integration properties::
status=$?
case $status in
  0) echo "fuzz: all properties held for $cases cases each" ;;
  124) echo "fuzz: time budget of ${budget}s used up with no failure"; status=0 ;;
  *) echo "fuzz: a property failed (see the minimal input above)" ;;
esac
exit $status
