#!/usr/bin/env python3
"""Builds an N-times larger markdown corpus from a real one, deterministically.

Usage: bench/scale_corpus.py SOURCE_DIR OUT_DIR --times N [--seed S]

OUT_DIR gets N copies of SOURCE_DIR's markdown files (`*.md`, `*.markdown`,
hidden names skipped, as memidx walks): copy 0 is the files as they are, under
OUT_DIR/0/; copy k (1 <= k < N), under OUT_DIR/k/ with the same relative paths,
recombines sections across files. Each file of copy k keeps its own front
matter and first section, with " (k)" added to its first heading, and every
later section is swapped, with probability 1/2, for a section drawn from
another file of the same top-level folder. So folder structure, front matter,
headings and identifiers stay realistic, while the texts (and their heading
paths) differ from every other copy's, and no chunk's text key repeats one of
another copy (memidx would otherwise reuse its vector).

The same SOURCE_DIR, N and seed give the same bytes: the random choices are
seeded per (seed, copy, path), and files are visited in sorted order. Standard
library only. Writes only under OUT_DIR, which must not exist yet.
"""

import argparse
import os
import random
import sys


def markdown_files(root):
    """Relative paths of the markdown files under root, sorted, hidden names skipped."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.startswith(".") or not name.endswith((".md", ".markdown")):
                continue
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            found.append(os.path.relpath(path, root))
    return sorted(found)


def split(text):
    """(front matter, sections): each section starts at an ATX heading outside a code fence."""
    front = ""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            front, text = text[: end + 5], text[end + 5 :]
    sections, current, fence = [], [], None
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = None if fence == marker else (fence or marker)
        if fence is None and stripped.startswith("#") and any(l.strip() for l in current):
            sections.append("".join(current))
            current = []
        current.append(line)
    if current:
        sections.append("".join(current))
    return front, sections


def retitled(section, copy):
    """The section with " (copy)" added to its first heading, or under a new one."""
    lines = section.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        if line.lstrip().startswith("#"):
            lines[i] = f"{line.rstrip()} ({copy})\n"
            return "".join(lines)
        break
    return f"# copy {copy}\n\n{section}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("out")
    parser.add_argument("--times", type=int, required=True)
    parser.add_argument("--seed", default="memidx")
    args = parser.parse_args()
    if args.times < 1:
        sys.exit("scale_corpus: --times must be at least 1")
    if os.path.exists(args.out):
        sys.exit(f"scale_corpus: {args.out} exists; give a new folder")
    paths = markdown_files(args.source)
    if not paths:
        sys.exit(f"scale_corpus: no markdown files under {args.source}")
    parsed = {}
    for rel in paths:
        with open(os.path.join(args.source, rel), encoding="utf-8", errors="surrogateescape") as f:
            parsed[rel] = split(f.read())
    # Sections to draw from, per top-level folder (files at the top: one pool).
    pools = {}
    for rel in paths:
        pools.setdefault(rel.split(os.sep, 1)[0] if os.sep in rel else "", []).append(rel)
    for copy in range(args.times):
        for rel in paths:
            front, sections = parsed[rel]
            if copy == 0:
                body = "".join(sections)
            else:
                rng = random.Random(f"{args.seed}:{copy}:{rel}")
                pool = pools[rel.split(os.sep, 1)[0] if os.sep in rel else ""]
                out = [retitled(sections[0], copy)] if sections else []
                for section in sections[1:]:
                    other = parsed[rng.choice(pool)][1]
                    if len(other) > 1 and rng.random() < 0.5:
                        section = other[rng.randrange(1, len(other))]
                    out.append(section if section.endswith("\n") else section + "\n")
                body = "".join(out)
            target = os.path.join(args.out, str(copy), rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(front + body)
    print(f"scale_corpus: {len(paths)} files x {args.times} -> {args.out}")


if __name__ == "__main__":
    main()
