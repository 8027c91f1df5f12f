#!/usr/bin/env python3
"""Words grep finds that `memidx search --mode sparse` misses, per collection.

    bench/findability.py [--binary B] [--eval-dir D] [--work W] [--json OUT]
                         [--examples N] [FOLDER...]

For each folder (default: fixtures/corpus and the docs/ of every collection
under the eval folder, default ../shared/eval), it indexes the folder into
W/<name> (kept between runs: a re-run only checks the files), reads every
markdown file's body (front matter is metadata, searched by filters, not
words) and collects its distinct words the way `grep -w` sees them: runs of
letters, digits and `_`, joined by `'`, `-`, `.`, `/`, `:` or `@` between two
of them (`max_connections`, `INC-2023-Q4-011`, `don't`). Lucene's English stop
words are left out, with or without a possessive `'s` (the sparse list drops
them by design), and invisible (default-ignorable) characters are dropped
first, as a reader does not see them: `hyper\u00adinflation` is one word. Every word is then
searched, exactly as written, through one `memidx mcp` session (JSON-RPC on
stdio, one process for all the searches) with `mode: sparse`; a word is
missed when the search returns nothing. It prints, per folder, the words
checked, the words missed and a few of them.

Python 3 stdlib only.
"""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

# Lucene's English stop set, as in src/text/tokenize.rs.
STOP_WORDS = set(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)

WORD = re.compile(r"\w+(?:['’\-./:@]\w+)*")

# Unicode's default-ignorable code points (the soft hyphen, zero-width space
# and joiners, …): invisible, so a reader sees `hyper\u00adinflation` as one
# word, as the tokenizer does (src/text/tokenize.rs).
IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)

FRONT_MATTER = re.compile(r"\A(?:\ufeff)?---[ \t]*\r?\n.*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)


def run(cmd):
    """Runs cmd; stops the script with its stderr on failure."""
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"findability: {' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stderr}")


def is_stop_word(word):
    """Whether the sparse list drops word by design: a stop word, also with
    a possessive `'s` (`it's`, `that’s`), which the tokenizer strips."""
    lower = word.lower()
    for suffix in ("'s", "’s"):
        if lower.endswith(suffix):
            lower = lower[: -len(suffix)]
    return lower in STOP_WORDS


def words(folder):
    """The distinct words of the markdown bodies under folder, sorted."""
    found = set()
    for path in sorted(folder.rglob("*.md")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        text = IGNORABLE.sub("", FRONT_MATTER.sub("", text, count=1))
        found.update(
            w for w in WORD.findall(text)
            if not is_stop_word(w) and any(c.isalnum() for c in w)
        )
    return sorted(found)


class Session:
    """One `memidx mcp` process driven with newline-delimited JSON-RPC."""

    def __init__(self, binary, index, cwd):
        self.process = subprocess.Popen(
            [binary, "mcp", "--index", index],
            cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, encoding="utf-8",
        )
        self.next_id = 0
        self.call("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "findability", "version": "1"},
        })
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def call(self, method, params):
        """The result of one request (the script stops on a protocol error)."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        answer = json.loads(self.process.stdout.readline())
        if "error" in answer:
            sys.exit(f"findability: {method} failed: {answer['error']}")
        return answer["result"]

    def finds(self, word):
        """Whether a sparse search for word returns anything."""
        result = self.call("tools/call", {
            "name": "search", "arguments": {"query": word, "mode": "sparse", "top_k": 1},
        })
        if result.get("isError"):
            sys.exit(f"findability: search {word!r} failed: {result['content'][0]['text']}")
        return bool(result["structuredContent"]["results"])

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def measure(binary, folder, index, examples):
    """Words checked and missed in one folder."""
    run([binary, "index", folder, "--index", index, "--quiet"])
    checked = words(folder)
    session = Session(binary, index, folder)
    missed = [w for w in checked if not session.finds(w)]
    session.close()
    return {"words": len(checked), "missed": len(missed), "examples": missed[:examples]}


def main():
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", type=Path, default=here.parent / "target/release/memidx")
    parser.add_argument("--eval-dir", type=Path, default=here.parent.parent / "shared/eval")
    parser.add_argument("--work", type=Path, default=Path("/tmp/memidx-findability"))
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--examples", type=int, default=8, help="missed words shown per folder")
    parser.add_argument("folders", nargs="*", type=Path)
    args = parser.parse_args()
    folders = args.folders or [here.parent / "fixtures/corpus"] + sorted(
        d / "docs" for d in args.eval_dir.iterdir() if (d / "docs").is_dir()
    )
    report = {}
    print(f"{'folder':<12} {'words':>8} {'missed':>7}  examples")
    for folder in folders:
        name = folder.parent.name if folder.name == "docs" else folder.name
        row = measure(args.binary.resolve(), folder.resolve(), (args.work / name).resolve(), args.examples)
        report[name] = row
        shown = " ".join(row["examples"])
        print(f"{name:<12} {row['words']:>8} {row['missed']:>7}  {shown}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
