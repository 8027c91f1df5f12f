#!/usr/bin/env bash
# Benchmark memidx on a corpus folder; see bench/README.md.
#
#   bench/run.sh CORPUS_DIR [BINARY] [--json OUT] [--runs N] [--no-bm25s] [--venv DIR] [--model DIR]
#
# Writes only CORPUS_DIR/.memidx (removed and rebuilt). The re-index steps touch,
# modify, add and delete one file and 'memidx remember' one note (in a folder of its
# own), and put everything back as it was (content, mode, mtimes, folder mtimes)
# from a backup in a temp dir, also on failure or Ctrl-C.
set -euo pipefail
# The whole script is one { ... } block, parsed before it runs: editing this
# file during a run cannot change what the run executes.
{

usage() {
    cat <<'EOF'
usage: bench/run.sh CORPUS_DIR [BINARY] [options]

  CORPUS_DIR      folder of markdown to benchmark on (outside the repository;
                  its .memidx is deleted and rebuilt)
  BINARY          memidx binary [default: target/release/memidx, built with
                  'cargo build --release' if missing]
  --json OUT      also write the results as JSON to OUT
  --runs N        timed runs per query and mode [default: 3; 25 queries, so 75 per mode]
  --no-bm25s      skip the bm25s anchor
  --venv DIR      venv for the anchor [default: /tmp/memidx-bench-venv; created and
                  'pip install bm25s PyStemmer' run only if it lacks them]
  --model DIR     index with this sentence-transformers folder (memidx index --model)
                  instead of the bundled model; every later step uses it
  -h, --help      this text
EOF
}

die() { echo "bench: error: $*" >&2; exit 2; }
say() { echo "bench: $*" >&2; }

# --- arguments ---------------------------------------------------------------
JSON_OUT="" RUNS=3 DO_BM25S=1 VENV=/tmp/memidx-bench-venv MODEL=""
POS=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --json) [ $# -ge 2 ] || die "--json needs a file"; JSON_OUT=$2; shift 2 ;;
        --runs) [ $# -ge 2 ] || die "--runs needs a number"; RUNS=$2; shift 2 ;;
        --no-bm25s) DO_BM25S=0; shift ;;
        --venv) [ $# -ge 2 ] || die "--venv needs a folder"; VENV=$2; shift 2 ;;
        --model) [ $# -ge 2 ] || die "--model needs a folder"; MODEL=$2; shift 2 ;;
        --) shift; POS+=("$@"); break ;;
        -*) usage >&2; die "unknown option $1" ;;
        *) POS+=("$1"); shift ;;
    esac
done
[ ${#POS[@]} -ge 1 ] && [ ${#POS[@]} -le 2 ] || { usage >&2; die "expected CORPUS_DIR [BINARY]"; }
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer, not '$RUNS'"
[ -z "$MODEL" ] || [ -d "$MODEL" ] || die "--model: '$MODEL' is not a folder"
[ -z "$MODEL" ] || MODEL=$(cd "$MODEL" && pwd -P)

# Everything measured runs at nice 10 (the machine is shared): re-exec the
# whole script niced once, so every child (memidx, hyperfine, python) inherits it.
if [ "$(nice)" -lt 10 ] && [ -z "${MEMIDX_BENCH_NICED:-}" ]; then
    MEMIDX_BENCH_NICED=1 exec nice -n $((10 - $(nice))) bash "$0" "${POS[@]}" \
        ${JSON_OUT:+--json "$JSON_OUT"} --runs "$RUNS" \
        $([ "$DO_BM25S" = 1 ] || echo --no-bm25s) --venv "$VENV" ${MODEL:+--model "$MODEL"}
fi

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
HELPER="$REPO/bench/bench.py"
[ -f "$HELPER" ] || die "missing $HELPER"
command -v python3 >/dev/null || die "python3 is needed (tables and statistics)"

CORPUS_ARG=${POS[0]}
[ -e "$CORPUS_ARG" ] || die "corpus folder '$CORPUS_ARG' does not exist (unpack it first, e.g.
  mkdir -p /tmp/memidx-bench && tar --zstd -xf ../shared/bench/corpus-big.tar.zst -C /tmp/memidx-bench)"
[ -d "$CORPUS_ARG" ] || die "'$CORPUS_ARG' is not a folder"
CORPUS=$(cd "$CORPUS_ARG" && pwd -P)
case "$CORPUS/" in
    "$REPO"/*) die "refusing to run inside the repository ($CORPUS): copy the corpus elsewhere first,
  e.g. cp -r $CORPUS /tmp/bench-small" ;;
esac
[ -w "$CORPUS" ] || die "corpus folder $CORPUS is not writable (memidx writes $CORPUS/.memidx)"

if [ ${#POS[@]} -ge 2 ]; then
    BIN=${POS[1]}
    [ -x "$BIN" ] || die "binary '$BIN' does not exist or is not executable"
else
    BIN="$REPO/target/release/memidx"
    if [ ! -x "$BIN" ]; then
        say "no $BIN: running 'cargo build --release' in $REPO"
        (cd "$REPO" && cargo build --release) || die "cargo build --release failed"
    fi
fi
BIN=$(cd "$(dirname "$BIN")" && pwd -P)/$(basename "$BIN")

GNU_TIME=0
if [ -z "${MEMIDX_BENCH_NO_GNU_TIME:-}" ] && [ -x /usr/bin/time ] && /usr/bin/time -v true >/dev/null 2>&1; then
    GNU_TIME=1
else
    say "warning: GNU time not found: no peak RSS. Install it with 'apt-get install time' (Debian package 'time')."
fi
HYPERFINE=0
if [ -z "${MEMIDX_BENCH_NO_HYPERFINE:-}" ] && command -v hyperfine >/dev/null && hyperfine --help 2>/dev/null | grep -q -- '--shell'; then
    HYPERFINE=1
else
    say "note: hyperfine not found ('apt-get install hyperfine'); timing searches with a date +%s%N loop"
fi

# --- temp dir, restore-on-exit -------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/memidx-bench.XXXXXX")
BACKUP="$TMP/backup"
RESULTS="$TMP/results"
mkdir -p "$BACKUP" "$RESULTS"
PICK=""          # corpus file the re-index steps change (absolute path)
PICK_SAVED=0     # 1 while $BACKUP holds it and it may differ from the original
ADDED=""         # file the 'add' step created, to remove
REMEMBERED=""    # folder the 'remember' step wrote its note into, to remove
SERVER_PID=""    # the 'memidx mcp' answering the served searches, while it runs
SERVER_IN=""     # the descriptor holding its stdin open

restore_corpus() {
    local ok=0
    if [ -n "$ADDED" ]; then
        rm -f -- "$ADDED" || ok=1
        ADDED=""
    fi
    if [ -n "$REMEMBERED" ]; then
        rm -rf -- "$REMEMBERED" || ok=1
        REMEMBERED=""
    fi
    if [ "$PICK_SAVED" = 1 ]; then
        # content, mode, owner and mtime from the backup, then the folders' mtimes
        cp -p -- "$BACKUP/file" "$PICK" || ok=1
        touch -r "$BACKUP/dir.ref" -- "$(dirname "$PICK")" || ok=1
        if cmp -s -- "$BACKUP/file" "$PICK" &&
            [ "$(stat -c '%s %Y %a' -- "$PICK")" = "$(stat -c '%s %Y %a' -- "$BACKUP/file")" ]; then
            PICK_SAVED=0
        else
            ok=1
        fi
    fi
    return $ok
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        stop_server
    fi
    if ! restore_corpus; then
        echo "bench: ERROR: could not restore $PICK; its original is kept in $BACKUP/file" >&2
        exit 3
    fi
    rm -rf -- "$TMP"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

rec() { printf '%s\t%s\n' "$1" "$2" >>"$RESULTS/results.tsv"; }

# time_loop NAME N CMD...: one untimed run of CMD, then $RUNS timed ones, each
# appended to $RESULTS/NAME.loop as "N<TAB>nanoseconds" (without hyperfine).
time_loop() {
    local name=$1 n=$2 t0 t1; shift 2
    "$@" >/dev/null 2>&1 || true
    for _ in $(seq "$RUNS"); do
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        t1=$(date +%s%N)
        printf '%s\t%s\n' "$n" "$((t1 - t0))" >>"$RESULTS/$name.loop"
    done
}

# stop_server: closes the running server's stdin and waits for it to end.
stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    [ -z "$SERVER_IN" ] || exec {SERVER_IN}>&-
    SERVER_IN=""
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# run_timed LABEL CMD...: runs CMD with stdout/stderr to $TMP/LABEL.{out,err};
# sets T_S (wall seconds, from date +%s%N) and T_RSS (peak RSS in KB, or "").
# A failing command stops the benchmark with its exit code and stderr tail.
# (A search-* label may exit 1: nothing found.)
run_timed() {
    local label=$1; shift
    local t0 t1 rc=0
    t0=$(date +%s%N)
    if [ "$GNU_TIME" = 1 ]; then
        /usr/bin/time -v -o "$TMP/$label.time" "$@" >"$TMP/$label.out" 2>"$TMP/$label.err" || rc=$?
    else
        "$@" >"$TMP/$label.out" 2>"$TMP/$label.err" || rc=$?
    fi
    t1=$(date +%s%N)
    T_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    T_RSS=""
    if [ "$GNU_TIME" = 1 ] && [ -f "$TMP/$label.time" ]; then
        T_RSS=$(awk -F': *' '/Maximum resident set size/ { print $2 }' "$TMP/$label.time")
    fi
    # A search that finds nothing exits 1, like grep: an answer, not a failure.
    if [ $rc -ne 0 ] && ! { [ $rc = 1 ] && [[ $label == search-* ]]; }; then
        echo "bench: FAILED ($label): exit $rc after ${T_S} s${T_RSS:+, peak RSS ${T_RSS} KB}: $*" >&2
        if [ "$GNU_TIME" = 1 ]; then
            grep -E 'Command terminated by signal|Exit status' "$TMP/$label.time" >&2 || true
        fi
        echo "bench: last lines of its stderr:" >&2
        tail -n 20 "$TMP/$label.err" >&2 || true
        exit $rc
    fi
}

# --- machine -------------------------------------------------------------------
CPU=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
MEM=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null || true)
REV=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo "?")
if [ "$REV" != "?" ] && [ -n "$(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    REV="$REV+dirty"
fi
rec date "$(date -u '+%Y-%m-%d %H:%M UTC')"
rec nproc "$(nproc)"
rec cpu "${CPU:-unknown}"
rec mem "${MEM:-unknown}"
rec kernel "$(uname -sr)"
# Run a snapshot of the binary: a concurrent 'cargo build' must not swap it mid-run.
BIN_ORIG=$BIN
BIN_STAMP=$(date -u -r "$BIN_ORIG" '+%Y-%m-%d %H:%M:%S UTC')
cp -- "$BIN_ORIG" "$TMP/memidx"
BIN="$TMP/memidx"
rec memidx_version "$("$BIN" --version 2>/dev/null || echo '?')"
rec binary "$BIN_ORIG, built $BIN_STAMP"
rec model "${MODEL:-bundled}"
rec repo_rev "$REV"
rec load_start "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
rec timer "$([ "$HYPERFINE" = 1 ] && echo "hyperfine $(hyperfine --version | awk '{print $2}')" || echo 'date +%s%N loop'), $([ "$GNU_TIME" = 1 ] && echo '/usr/bin/time -v' || echo 'no RSS')"
echo "== machine: $(nproc) cores, ${CPU:-unknown CPU}, ${MEM:-?} memory, $(uname -sr); nice $(nice)"
echo "== memidx: $BIN_ORIG, built $BIN_STAMP ($("$BIN" --version 2>/dev/null || echo '?'), repo $REV)"

# --- corpus --------------------------------------------------------------------
python3 "$HELPER" mdstats "$CORPUS" >"$TMP/mdstats"
MD_FILES=$(awk -F'\t' '$1 == "md_files" { print $2 }' "$TMP/mdstats")
MD_BYTES=$(awk -F'\t' '$1 == "md_bytes" { print $2 }' "$TMP/mdstats")
PICK_REL=$(awk -F'\t' '$1 == "pick_file" { print $2 }' "$TMP/mdstats")
PICK_SIZE=$(awk -F'\t' '$1 == "pick_size" { print $2 }' "$TMP/mdstats")
[ "${MD_FILES:-0}" -gt 0 ] || die "no markdown files (.md, .markdown) under $CORPUS"
rec corpus "$CORPUS"; rec md_files "$MD_FILES"; rec md_bytes "$MD_BYTES"
rec pick_file "$PICK_REL"; rec pick_size "$PICK_SIZE"
echo "== corpus: $CORPUS: $MD_FILES markdown files, $MD_BYTES bytes"

ADD_NAME="memidx-bench-added-$$.md"
ADD_PATH="$(dirname "$CORPUS/$PICK_REL")/$ADD_NAME"
[ ! -e "$ADD_PATH" ] || die "$ADD_PATH already exists"

# Warm the page cache so memidx and bm25s both read from memory.
say "warming the page cache (reading every markdown file once)"
find "$CORPUS" -mindepth 1 -name '.*' -prune -o -type f \( -iname '*.md' -o -iname '*.markdown' \) \
    -print0 | xargs -0 -r cat >/dev/null

# The fixed queries (tldr, C++ docs and PowerShell docs flavoured), one a line;
# bench/mcp_latency.py reads the same file.
[ -f "$REPO/bench/queries.txt" ] || die "missing $REPO/bench/queries.txt"
mapfile -t QUERIES <"$REPO/bench/queries.txt"
[ ${#QUERIES[@]} -gt 0 ] || die "$REPO/bench/queries.txt holds no query"
printf '%s\n' "${QUERIES[@]}" >"$TMP/queries.txt"

# --- 1. full index -------------------------------------------------------------
if [ -e "$CORPUS/.memidx" ]; then
    say "removing the existing $CORPUS/.memidx (a full index is measured from scratch)"
    rm -rf -- "$CORPUS/.memidx"
fi
say "full index: memidx index $CORPUS --full --quiet"
run_timed full "$BIN" index "$CORPUS" --full --quiet ${MODEL:+--model "$MODEL"}
rec full_s "$T_S"; rec full_rss_kb "$T_RSS"
WARN=$(wc -l <"$TMP/full.err" | tr -d ' ')
rec full_warnings "$WARN"
echo "== full index: ${T_S} s${T_RSS:+, peak RSS $((T_RSS / 1024)) MB}, $WARN warning line(s)"
[ "$WARN" = 0 ] || head -n 5 "$TMP/full.err" | sed 's/^/   | /'

# --- 3. index size -------------------------------------------------------------
IDX_BYTES=$(du -sb "$CORPUS/.memidx" | awk '{ print $1 }')
rec index_bytes "$IDX_BYTES"
PARTS=$(cd "$CORPUS/.memidx" && for g in gen-*; do
            [ -d "$g" ] && (cd "$g" && du -sb -- * | awk '{ printf "%s %.1f MiB; ", $2, $1 / 1048576 }')
        done; du -sb -- *.json 2>/dev/null | awk '{ printf "%s %.1f MiB; ", $2, $1 / 1048576 }')
rec index_parts "${PARTS%; }"
echo "== index size: $IDX_BYTES bytes (${PARTS%; })"

# --- 4. searches -----------------------------------------------------------------
MODES=(hybrid sparse dense)
sq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }   # single-quote for hyperfine's word splitting
# time_search NAME N ARGS...: times 'memidx ARGS' for query number N, into
# $RESULTS/NAME-N.json (hyperfine) or $RESULTS/NAME.loop (the date loop).
time_search() {
    local name=$1 n=$2 cmd arg; shift 2
    if [ "$HYPERFINE" = 1 ]; then
        cmd=$(sq "$BIN")
        for arg in "$@"; do cmd+=" $(sq "$arg")"; done
        hyperfine -N --style none -i --warmup 1 --runs "$RUNS" \
            --export-json "$RESULTS/$name-$(printf %02d "$n").json" "$cmd" \
            >>"$TMP/hyperfine.log" 2>&1 || { tail -n 5 "$TMP/hyperfine.log" >&2; die "hyperfine failed"; }
    else
        time_loop "$name" "$n" "$BIN" "$@"
    fi
}
say "checking every query in every mode once"
for mode in "${MODES[@]}"; do
    for q in "${QUERIES[@]}"; do
        rc=0
        "$BIN" search "$q" --index "$CORPUS" --mode "$mode" -k 10 --json --no-server >"$TMP/check.out" 2>"$TMP/check.err" || rc=$?
        if [ $rc -gt 1 ]; then
            echo "bench: FAILED: memidx search --mode $mode '$q' exited $rc:" >&2
            tail -n 5 "$TMP/check.err" >&2
            exit $rc
        fi
    done
done
say "timing searches: ${#QUERIES[@]} queries x ${#MODES[@]} modes x $RUNS runs"
n=0
for q in "${QUERIES[@]}"; do
    n=$((n + 1))
    for mode in "${MODES[@]}"; do   # modes interleaved per query, so drift hits all three
        time_search "search-$mode" "$n" search "$q" --index "$CORPUS" --mode "$mode" -k 10 --json --no-server
    done
done

# The same hybrid searches answered by a running server through the index's
# socket (the resident path): 'memidx mcp --read-only' serves the index while
# its stdin stays open; each command must give the bytes the baseline gave.
say "timing hybrid searches answered by a running 'memidx mcp' (the resident path)"
mkfifo "$TMP/server.in"
"$BIN" mcp --read-only --index "$CORPUS" <"$TMP/server.in" >/dev/null 2>"$TMP/server.err" &
SERVER_PID=$!
exec {SERVER_IN}>"$TMP/server.in"   # held open: the server runs until it is closed
for _ in $(seq 300); do
    [ -S "$CORPUS/.memidx/serve.sock" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 5 "$TMP/server.err" >&2; die "memidx mcp stopped"; }
    sleep 0.1
done
[ -S "$CORPUS/.memidx/serve.sock" ] || die "memidx mcp opened no socket in 30 s"
for q in "${QUERIES[@]}"; do
    rc=0; "$BIN" search "$q" --index "$CORPUS" -k 10 --json --no-server >"$TMP/alone.out" 2>"$TMP/alone.err" || rc=$?
    served_rc=0; "$BIN" search "$q" --index "$CORPUS" -k 10 --json >"$TMP/served.out" 2>"$TMP/served.err" || served_rc=$?
    { [ "$rc" = "$served_rc" ] && cmp -s "$TMP/alone.out" "$TMP/served.out" && cmp -s "$TMP/alone.err" "$TMP/served.err"; } ||
        die "the server answered '$q' differently"
done
n=0
for q in "${QUERIES[@]}"; do
    n=$((n + 1))
    time_search search-served "$n" search "$q" --index "$CORPUS" --mode hybrid -k 10 --json
done
stop_server
if [ "$GNU_TIME" = 1 ]; then
    for mode in "${MODES[@]}"; do
        run_timed "search-rss-$mode" "$BIN" search "${QUERIES[0]}" --index "$CORPUS" --mode "$mode" -k 10 --json
        rec "search_${mode}_rss_kb" "$T_RSS"
    done
fi

# --- 2. re-index after one change ------------------------------------------------
PICK="$CORPUS/$PICK_REL"
cp -p -- "$PICK" "$BACKUP/file"
touch -r "$(dirname "$PICK")" -- "$BACKUP/dir.ref"
PICK_SAVED=1
echo "== re-index steps on $PICK_REL ($PICK_SIZE bytes)"

reindex() {   # reindex LABEL [timed]: incremental 'memidx index'
    run_timed "reindex-$1" "$BIN" index "$CORPUS" --quiet
    if [ "${2:-}" = timed ]; then
        rec "reindex_$1_s" "$T_S"; rec "reindex_$1_rss_kb" "$T_RSS"
        echo "   $1: ${T_S} s${T_RSS:+, peak RSS $((T_RSS / 1024)) MB}"
    fi
}
resync() {    # put the corpus back, then bring the index back in line with it
    restore_corpus || die "could not restore $PICK (original kept in $BACKUP/file)"
    PICK_SAVED=1
    reindex "$1-restore"
}

reindex noop timed

touch -- "$PICK"                                        # mtime only
reindex touch timed
resync touch

printf '\nEdited by the memidx benchmark, run %s.\n' "$$-$(date +%s%N)" >>"$PICK"
reindex modify timed
resync modify

ADDED="$ADD_PATH"                                       # set first: removed on any exit
{
    printf '# memidx benchmark note %s\n\n' "$$"
    for i in 1 2 3 4; do
        printf '## Section %s of run %s\n\n' "$i" "$$-$(date +%s%N)"
        printf 'This file was added by bench/run.sh to time an incremental re-index of one new file.\n'
        printf 'Its text is unique to run %s, section %s, so no cached vector can be reused.\n\n' "$$" "$i"
        printf '```sh\nmemidx index . --quiet  # section %s\n```\n\n' "$i"
    done
} >"$ADD_PATH"
reindex add timed
resync add

rm -- "$PICK"
reindex delete timed
resync delete

# 'memidx remember': one note written and indexed, its run told the note's
# path (no walk), into a folder of its own that the restore removes.
REMEMBERED="$CORPUS/memidx-bench-remember-$$"            # set first: removed on any exit
run_timed remember "$BIN" remember "Benchmark note of run $$-$(date +%s%N), indexed at once." \
    --index "$CORPUS/.memidx" --dir "$(basename "$REMEMBERED")" --json
rec "reindex_remember_s" "$T_S"; rec "reindex_remember_rss_kb" "$T_RSS"
echo "   remember: ${T_S} s${T_RSS:+, peak RSS $((T_RSS / 1024)) MB}"
resync remember

restore_corpus || die "could not restore $PICK (original kept in $BACKUP/file)"
say "corpus restored: $PICK_REL identical to the backup (content, size, mode, mtime)"

# --- 5. bm25s anchor -------------------------------------------------------------
if [ "$DO_BM25S" = 1 ]; then
    if ! { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import bm25s, Stemmer' 2>/dev/null; }; then
        say "setting up $VENV: python3 -m venv + pip install bm25s PyStemmer"
        { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q bm25s PyStemmer; } >"$TMP/pip.log" 2>&1 || {
            tail -n 5 "$TMP/pip.log" >&2
            say "warning: could not install bm25s into $VENV: no anchor, no ratios"
            DO_BM25S=0
        }
    fi
fi
if [ "$DO_BM25S" = 1 ]; then
    say "bm25s anchor: read + tokenize + index $MD_FILES files, then $((${#QUERIES[@]} * RUNS)) queries"
    # A current numpy is slowed by the machine's OPENBLAS_* overrides: unset them here only.
    run_timed bm25s env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
        "$VENV/bin/python" "$HELPER" bm25s "$CORPUS" "$TMP/queries.txt" "$RESULTS/bm25s.json" "$RUNS"
    rec bm25s_rss_kb "$T_RSS"
fi

# --- table -----------------------------------------------------------------------
rec load_end "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo
python3 "$HELPER" report "$RESULTS" ${JSON_OUT:+--json "$JSON_OUT"}
[ -z "$JSON_OUT" ] || say "JSON written to $JSON_OUT"
exit 0
}
