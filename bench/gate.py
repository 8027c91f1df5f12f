#!/usr/bin/env python3
"""What the "nothing matches" gate refuses, on every judged collection and model.

    bench/gate.py [--binary B] [--eval-dir D] [--hard] [--work W]
                  [--minilm DIR] [--models bundled,minilm] [--words N]

For each collection and model it searches the collection's index (the one
bench/quality.py builds, built when missing) with every judged query as
`memidx search` does by default, and counts the queries the gate drops (no
result, exit 1). Each dropped query is searched again with --keep-all and
counted when a document judged relevant is in that top 10: what the gate
costs, and none may be. Then it searches each index with N made-up words of
two kinds: pronounceable ones (consonants and vowels in turn, five to nine
letters) and random letters (five to eleven), and counts those the gate lets
through (and of them, those a near miss let through: a word one typing
slip from a word the index holds, which vouches for any model): what the
gate is for, and none should be. A made-up word that any
collection's documents hold is a word, and is drawn again. The draws are
seeded (the same words every run), and neither kind is the one memidx
measures its own word floor on (`src/lists/dense/floor.rs`).

Python 3 stdlib only; the qrels reader is the collections' scorer (`score.py`
beside them).
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import hard_cases
import quality

CONSONANTS = "bcdfghjklmnprstvwz"
VOWELS = "aeiou"


def search(binary, index, text, keep_all=False):
    """The sources of a search's top 10, or None when it dropped its results (exit 1)."""
    cmd = [binary, "search", "--index", index, "--json", "-k", "10", "--no-text", "--", text]
    if keep_all:
        cmd.insert(2, "--keep-all")
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode == 1:
        return None
    if done.returncode != 0:
        sys.exit(f"gate: search {text!r} in {index} failed ({done.returncode}):\n{done.stderr}")
    return [Path(r["source"]).stem for r in json.loads(done.stdout)["results"]]


def made_up(count, seed, corpus_words):
    """`count` pronounceable and `count` random-letter words no document holds."""
    draw = random.Random(seed)

    def fresh(make):
        words = []
        while len(words) < count:
            word = make()
            if word not in corpus_words and word not in words:
                words.append(word)
        return words

    def pronounceable():
        letters = draw.randint(5, 9)
        start = draw.randrange(2)
        return "".join(
            draw.choice(CONSONANTS if (i + start) % 2 == 0 else VOWELS) for i in range(letters)
        )

    def random_letters():
        return "".join(chr(97 + draw.randrange(26)) for _ in range(draw.randint(5, 11)))

    return {"pronounceable": fresh(pronounceable), "random letters": fresh(random_letters)}


def corpus_words(collections):
    """Every lowercase word of every collection's documents."""
    words = set()
    for collection in collections:
        for path in (collection / "docs").rglob("*.md"):
            words.update(re.findall(r"[a-z]+", path.read_text(encoding="utf-8", errors="replace").lower()))
    return words


def judged_queries(collection, score):
    """The collection's queries that have a relevant document, with their relevant ids."""
    qrels = score.load_qrels(str(collection / "qrels.tsv"))
    with open(collection / "queries.jsonl", encoding="utf-8") as lines:
        queries = [json.loads(line) for line in lines if line.strip()]
    judged = []
    for query in queries:
        relevant = {doc for doc, grade in qrels.get(str(query["id"]), {}).items() if grade > 0}
        if relevant:
            judged.append((str(query["id"]), query["text"], relevant))
    return judged


def costs(binary, index, collection, queries):
    """(dropped queries, of them those with a relevant document in --keep-all's top 10)."""
    own = collection.name in quality.IGNORE_IDENTICAL

    def judge(query):
        qid, text, relevant = query
        if search(binary, index, text) is not None:
            return None
        kept = [doc for doc in search(binary, index, text, keep_all=True) if not (own and doc == qid)]
        return text, bool(relevant & set(kept[:10]))

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        dropped = [d for d in pool.map(judge, queries) if d is not None]
    return dropped, [text for text, lost in dropped if lost]


def passed(binary, index, words):
    """The words a search answers, and of them those a near miss vouched for (`explain`)."""
    def answers(word):
        cmd = [binary, "explain", "--index", index, "--json", "-k", "1", "--", word]
        report = json.loads(quality.run(cmd))
        if report["nothing_matched"]:
            return None
        return any(listed["near_miss"] for listed in report["lists"])

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        verdicts = list(pool.map(answers, words))
    through = [word for word, slip in zip(words, verdicts) if slip is not None]
    return through, [word for word, slip in zip(words, verdicts) if slip]


def main():
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", type=Path, default=here.parent / "target/release/memidx")
    parser.add_argument("--eval-dir", type=Path, default=here.parent.parent / "shared/eval")
    parser.add_argument("--hard", action="store_true",
                        help="also the hard cases bench/hard_cases.py makes from the eval folder")
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "memidx-quality")
    parser.add_argument("--minilm", type=Path, default=os.environ.get("MEMIDX_MINILM_DIR"))
    parser.add_argument("--models", default="bundled,minilm")
    parser.add_argument("--words", type=int, default=50, help="made-up words of each kind")
    args = parser.parse_args()

    if not args.binary.is_file():
        sys.exit(f"gate: no binary at {args.binary} (cargo build --release)")
    models = quality.chosen_models(args.models, args.minilm)
    collections = quality.collections(args.eval_dir)
    if args.hard:
        hard = args.work / "hard"
        hard_cases.make(args.eval_dir, hard)
        collections += quality.collections(hard)
    sys.path.insert(0, str(args.eval_dir))
    import score  # the collections' scorer: ../shared/eval/score.py

    words = made_up(args.words, 7, corpus_words(collections))
    print("| collection | model | judged | dropped | dropped with a relevant result in the top 10 "
          "| pronounceable answered | random letters answered |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for model, model_dir in models.items():
        for collection in collections:
            print(f"gate: {collection.name}, {model}", file=sys.stderr)
            index = quality.build_index(args.binary, collection, model, model_dir, args.work)
            queries = judged_queries(collection, score)
            dropped, lost = costs(args.binary, index, collection, queries)
            through = {kind: passed(args.binary, index, made) for kind, made in words.items()}
            lost_cell = f"{len(lost)}" + (f" ({', '.join(lost)})" if lost else "")
            cells = []
            for kind, (answered, slips) in through.items():
                shown = ", ".join(f"{w}{' (slip)' if w in slips else ''}" for w in answered)
                cells.append(f"{len(answered)} of {args.words}, {len(slips)} by a near miss"
                             + (f": {shown}" if answered else ""))
            print(f"| {collection.name} | {model} | {len(queries)} | {len(dropped)} | {lost_cell} | "
                  + " | ".join(cells) + " |", flush=True)

if __name__ == "__main__":
    main()
