#!/usr/bin/env python3
"""Hard cases for fusion, made from the judged collections by fixed rules.

    bench/hard_cases.py [--eval-dir D] [--out DIR]

The dev collections hold few queries where one list is far stronger than the
other, yet those are the queries a fusion must not lose (a paraphrase the
keyword list cannot see, an identifier the embedding blurs). This script
derives such collections from them, deterministically (no randomness, no
model, no query picked by hand), into DIR (default $TMPDIR/memidx-hard),
each a folder `bench/quality.py --eval-dir DIR` reads:

- `<base>-typos` (the dense list should lead): every query word of five or
  more letters that also occurs in one of the query's relevant documents is
  misspelt by swapping its two middle letters, so the query shares almost no
  word with what it should find, as a hurried user's query would. The
  queries' meaning survives for a model that reads word pieces. Docs are
  the base collection's (a symlink).
- `<base>-known-item` (the sparse list should lead): one query per sampled
  document, made of a word only that document holds (the document's first
  word of six or more letters with a document frequency of 1) and its two
  most frequent words; the one relevant document is that document.
- `cranfield-sessions` (long documents on several topics): the base's
  documents in files of five, in id order, as plain paragraphs (no
  headings, so chunks cross topics), the base's queries, and a file as
  relevant as the most relevant document it holds.

Python 3 stdlib only.
"""

import argparse
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

# Words too common to be the point of a query.
STOP_WORDS = set(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers him his how i if in into is
    it its itself just me more most my no nor not now of off on once only or other our out
    over own same she should so some such than that the their them then there these they
    this those through to too under until up very was we were what when where which while
    who whom why will with would you your""".split()
)

WORD = re.compile(r"[a-z0-9]+")

# Known-item queries per collection: at most this many, from documents sampled
# evenly in id order.
KNOWN_ITEMS = 200

# Documents per file in a sessions collection.
SESSION_SIZE = 5


def words(text):
    """Lower-case alphanumeric words of text."""
    return WORD.findall(text.lower())


def body(path):
    """A document's text without its front matter."""
    text = path.read_text(encoding="utf-8")
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end >= 0:
            return text[end + 5 :]
    return text


def read_queries(path):
    """Queries as (id, text) pairs, in file order."""
    with path.open(encoding="utf-8") as lines:
        return [(q["id"], q["text"]) for q in map(json.loads, lines) if q.get("text")]


def read_qrels(path):
    """Relevance judgments as {query id: {doc id: relevance}}."""
    qrels = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            parts = line.split()
            if len(parts) != 3 or not parts[2].lstrip("-").isdigit():
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return qrels


def write_collection(out, name, docs, queries, qrels):
    """Writes a collection folder: docs (a folder, or a symlink to one),
    queries.jsonl and qrels.tsv."""
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "docs"
    if isinstance(docs, Path):
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(docs.resolve())
    else:
        link.mkdir(exist_ok=True)
        for doc_id, text in docs.items():
            (link / f"{doc_id}.md").write_text(text, encoding="utf-8")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as f:
        for qid, text in queries:
            f.write(json.dumps({"id": qid, "text": text}) + "\n")
    with (folder / "qrels.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tdoc-id\trelevance\n")
        for qid, _ in queries:
            for doc_id, rel in sorted(qrels.get(qid, {}).items()):
                f.write(f"{qid}\t{doc_id}\t{rel}\n")
    print(f"hard_cases: {folder}: {len(queries)} queries", file=sys.stderr)


def misspell(word):
    """word with its two middle letters swapped (unchanged if they are equal)."""
    mid = len(word) // 2
    return word[: mid - 1] + word[mid] + word[mid - 1] + word[mid + 1 :]


def typos(base, out):
    """The `<base>-typos` collection (see the module doc)."""
    queries, qrels = read_queries(base / "queries.jsonl"), read_qrels(base / "qrels.tsv")
    doc_words = {}
    kept = []
    for qid, text in queries:
        relevant = [d for d, rel in qrels.get(qid, {}).items() if rel > 0]
        if not relevant:
            continue
        shared = set()
        for doc_id in relevant:
            if doc_id not in doc_words:
                path = base / "docs" / f"{doc_id}.md"
                doc_words[doc_id] = set(words(body(path))) if path.is_file() else set()
            shared |= doc_words[doc_id]

        def swap(match):
            word = match.group(0)
            lower = word.lower()
            if len(word) >= 5 and lower.isalpha() and lower in shared and lower not in STOP_WORDS:
                return misspell(word)
            return word

        kept.append((qid, re.sub(r"[A-Za-z]+", swap, text)))
    write_collection(out, f"{base.name}-typos", base / "docs", kept, qrels)


def known_items(base, out):
    """The `<base>-known-item` collection (see the module doc)."""
    paths = sorted((base / "docs").glob("*.md"), key=lambda p: p.stem)
    texts = {p.stem: words(body(p)) for p in paths}
    df = Counter(w for ws in texts.values() for w in set(ws))
    step = max(1, len(paths) // KNOWN_ITEMS)
    queries, qrels = [], {}
    for path in paths[::step][:KNOWN_ITEMS]:
        ws = texts[path.stem]
        rare = next((w for w in ws if len(w) >= 6 and w.isalpha() and df[w] == 1), None)
        if rare is None:
            continue
        counts = Counter(w for w in ws if len(w) >= 4 and w.isalpha() and w not in STOP_WORDS and w != rare)
        context = [w for w, _ in sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))[:2]]
        qid = f"ki-{path.stem}"
        queries.append((qid, " ".join([rare, *context])))
        qrels[qid] = {path.stem: 1}
    write_collection(out, f"{base.name}-known-item", base / "docs", queries, qrels)


def sessions(base, out):
    """The `<base>-sessions` collection (see the module doc)."""
    def order(path):
        return (0, int(path.stem), "") if path.stem.isdigit() else (1, 0, path.stem)

    paths = sorted((base / "docs").glob("*.md"), key=order)
    docs, file_of = {}, {}
    for start in range(0, len(paths), SESSION_SIZE):
        group = paths[start : start + SESSION_SIZE]
        name = f"s{start // SESSION_SIZE + 1:04d}"
        parts = []
        for path in group:
            text = body(path).strip()
            # The title heading becomes a plain line: no heading splits topics.
            parts.append(re.sub(r"^#+\s*", "", text, flags=re.MULTILINE))
            file_of[path.stem] = name
        docs[name] = f"---\ndoc_id: {name}\n---\n\n" + "\n\n".join(parts) + "\n"
    qrels = {}
    for qid, judged in read_qrels(base / "qrels.tsv").items():
        for doc_id, rel in judged.items():
            name = file_of.get(doc_id)
            if name is not None:
                qrels.setdefault(qid, {})
                qrels[qid][name] = max(rel, qrels[qid].get(name, rel))
    queries = [q for q in read_queries(base / "queries.jsonl") if q[0] in qrels]
    write_collection(out, f"{base.name}-sessions", docs, queries, qrels)


def main():
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval-dir", type=Path, default=here.parent.parent / "shared/eval")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "memidx-hard")
    args = parser.parse_args()
    make(args.eval_dir, args.out)


def make(eval_dir, out):
    """Writes every hard case made from the collections in eval_dir into out."""
    for name in ("cranfield", "nfcorpus"):
        typos(eval_dir / name, out)
    for name in ("cranfield", "nfcorpus", "arguana"):
        known_items(eval_dir / name, out)
    sessions(eval_dir / "cranfield", out)


if __name__ == "__main__":
    main()
