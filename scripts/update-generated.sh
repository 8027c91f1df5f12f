#!/usr/bin/env bash
# Regenerates the shell completions in completions/ and the man page in man/
# from the current CLI (tests/integration/completions.rs fails when they are out of date).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
bin=target/debug/memidx
"$bin" completions bash > completions/memidx.bash
"$bin" completions zsh > completions/_memidx
"$bin" completions fish > completions/memidx.fish
"$bin" completions powershell > completions/_memidx.ps1
"$bin" completions elvish > completions/memidx.elv
"$bin" man > man/memidx.1
for command in index search get explain mcp status remember eval graph push completions man; do
    "$bin" man "$command" > "man/memidx-$command.1"
done
