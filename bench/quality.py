#!/usr/bin/env python3
"""Retrieval quality on every judged collection, for every model, in one run.

    bench/quality.py [--binary B] [--eval-dir D]... [--hard] [--work W]
                     [--minilm DIR] [--models bundled,minilm] [--json OUT]
                     [--compare OLD.json] [-- EVAL FLAGS...]

For each collection under the eval folders (a folder with docs/,
queries.jsonl and qrels.tsv; default ../shared/eval) and each model, it
indexes the collection's docs into W/<docs>-<model> (named by the folder that
holds the docs, so collections sharing docs share an index; kept between
runs: a re-run only checks the files), runs `memidx eval --json` with the
flags after `--`, and prints nDCG@10 of sparse, dense and hybrid, hybrid's
gap to the better of the two lists, and per model and group (each eval
folder) the mean and the worst collection. A collection whose queries carry
a `type` (msdocs-howto: paraphrase, deep-section, identifier, keyword) also
gets a table per query kind, nDCG@10 and MRR@10 of each mode, scored from
the run files by the collection's own scorer (`score.py` beside it). --hard adds the hard cases
`bench/hard_cases.py` makes from ../shared/eval (into W/hard) as a group of
their own. With --compare, every figure is shown against a previous --json
output, and the rule for defaults (docs/eval.md) is checked per group: the
mean hybrid nDCG@10 of each model rises and no collection's hybrid falls by
more than 0.005.

Python 3 stdlib only. The MiniLM model is all-MiniLM-L6-v2 in the
sentence-transformers folder layout (--minilm, else $MEMIDX_MINILM_DIR; the
model is skipped with a note when neither is set).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import hard_cases

# Collections whose queries are themselves documents: a hit on the query's own
# document is dropped, as ../shared/eval/README.md prescribes (BEIR's rule).
IGNORE_IDENTICAL = {"arguana"}

# A default may lower no collection's hybrid nDCG@10 by more than this.
TOLERANCE = 0.005

MODES = ("sparse", "dense", "hybrid")


def collections(eval_dir):
    """The judged collections under eval_dir, by name."""
    found = [
        d
        for d in sorted(eval_dir.iterdir())
        if (d / "docs").is_dir() and (d / "queries.jsonl").is_file() and (d / "qrels.tsv").is_file()
    ]
    if not found:
        sys.exit(f"quality: no collection (docs/, queries.jsonl, qrels.tsv) under {eval_dir}")
    return found


def run(cmd):
    """Runs cmd, returning its stdout; stops the script with its stderr on failure."""
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"quality: {' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def query_kinds(collection):
    """Each query's `type`, by id; empty when the collection's queries carry none."""
    kinds = {}
    with open(collection / "queries.jsonl", encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                query = json.loads(line)
                if "type" in query:
                    kinds[str(query["id"])] = query["type"]
    return kinds


def by_kind(collection, runs, kinds):
    """nDCG@10 and MRR@10 per query kind and mode, scored by the scorer beside the collection."""
    sys.path.insert(0, str(collection.parent))
    try:
        import score  # the collection's own scorer: ../shared/eval/score.py
    finally:
        sys.path.pop(0)
    qrels = score.load_qrels(str(collection / "qrels.tsv"))
    table = {}
    for mode in MODES:
        per_query, _, _ = score.evaluate(qrels, score.load_run(str(runs / f"{mode}.trec")))
        for kind in sorted(set(kinds.values())):
            chosen = [values for qid, values in per_query.items() if kinds.get(qid) == kind]
            table.setdefault(kind, {})[mode] = {
                measure: sum(v[measure] for v in chosen) / len(chosen)
                for measure in ("nDCG@10", "MRR@10")
            }
    return table


def chosen_models(names, minilm):
    """The models named (comma-separated: bundled, minilm) with their folders (None: bundled)."""
    chosen = {}
    for model in names.split(","):
        if model == "bundled":
            chosen[model] = None
        elif model == "minilm":
            if minilm:
                chosen[model] = minilm
            else:
                print("MiniLM skipped (no --minilm and no MEMIDX_MINILM_DIR)", file=sys.stderr)
        else:
            sys.exit(f"unknown model '{model}' (bundled, minilm)")
    return chosen


def build_index(binary, collection, model, model_dir, work):
    """Indexes the collection's docs into W/<docs>-<model> (named by the folder that holds
    the docs, so collections sharing docs share an index; a re-run only checks the files)."""
    index = work / f"{(collection / 'docs').resolve().parent.name}-{model}"
    index_cmd = [binary, "index", collection / "docs", "--index", index, "--quiet"]
    if model_dir:
        index_cmd += ["--model", model_dir]
    run(index_cmd)
    return index


def measure(binary, collection, model, model_dir, work, eval_flags):
    """nDCG@10 and MRR@10 per mode of one collection under one model (and per query kind)."""
    index = build_index(binary, collection, model, model_dir, work)
    eval_cmd = [
        binary, "eval", "--index", index, "--json", "--quiet",
        "--queries", collection / "queries.jsonl", "--qrels", collection / "qrels.tsv",
    ]
    if collection.name in IGNORE_IDENTICAL:
        eval_cmd.append("--ignore-identical")
    kinds = query_kinds(collection)
    with tempfile.TemporaryDirectory() as runs:
        if kinds:
            eval_cmd += ["--run-out", runs]
        report = json.loads(run(eval_cmd + eval_flags))
        kind_table = by_kind(collection, Path(runs), kinds) if kinds else None
    metrics = {m["mode"]: m["metrics"] for m in report["modes"]}
    row = {mode: metrics[mode]["nDCG@10"] for mode in MODES}
    row["mrr"] = {mode: metrics[mode]["MRR@10"] for mode in MODES}
    if kind_table:
        row["kinds"] = kind_table
    return row | {"seconds": report["elapsed"]}


def gap(row):
    """Hybrid's nDCG@10 minus the better list's."""
    return row["hybrid"] - max(row["sparse"], row["dense"])


def group_of(row):
    """The group a result row belongs to (rows written before groups: the dev collections)."""
    return row.get("group", "eval")


def groups(rows):
    """Per group, the names of its collections, in first-seen order."""
    found = {}
    for name, row in rows.items():
        found.setdefault(group_of(row), []).append(name)
    return found


def print_table(results, old):
    """The per-collection table, then per model and group the mean and the worst gap."""
    def cell(model, name, key):
        value = results[model][name][key] if key != "gap" else gap(results[model][name])
        shown = "{:+.4f}" if key == "gap" else "{:.4f}"
        if old and name in old.get(model, {}):
            before = old[model][name][key] if key != "gap" else gap(old[model][name])
            return f"{shown.format(before)} → {shown.format(value)}"
        return shown.format(value)

    print("| collection | model | sparse | dense | hybrid | hybrid − better list |")
    print("| --- | --- | --- | --- | --- | --- |")
    for model, rows in results.items():
        for name in rows:
            cells = " | ".join(cell(model, name, key) for key in (*MODES, "gap"))
            print(f"| {name} | {model} | {cells} |")
    print()
    print("| model | group | mean sparse | mean dense | mean hybrid | mean gap | worst gap (collection) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for model, rows in results.items():
        for group, names in groups(rows).items():
            chosen = [rows[n] for n in names]
            mean = {key: sum(r[key] for r in chosen) / len(chosen) for key in MODES}
            gaps = {name: gap(rows[name]) for name in names}
            worst = min(gaps, key=gaps.get)
            mean_gap = sum(gaps.values()) / len(gaps)
            print(
                f"| {model} | {group} | {mean['sparse']:.4f} | {mean['dense']:.4f} | {mean['hybrid']:.4f} "
                f"| {mean_gap:+.4f} | {gaps[worst]:+.4f} ({worst}) |"
            )
    print_kinds(results, old)


def print_kinds(results, old):
    """Per collection with query kinds: nDCG@10 / MRR@10 of each mode per kind."""
    for model, rows in results.items():
        for name, row in rows.items():
            if "kinds" not in row:
                continue
            before = (old or {}).get(model, {}).get(name, {}).get("kinds", {})
            print()
            print(f"{name}, {model}, by query kind (nDCG@10 / MRR@10):")
            print()
            print("| kind | sparse | dense | hybrid |")
            print("| --- | --- | --- | --- |")
            for kind, modes in row["kinds"].items():
                def cell(mode):
                    now = modes[mode]
                    shown = f"{now['nDCG@10']:.3f} / {now['MRR@10']:.3f}"
                    was = before.get(kind, {}).get(mode)
                    if was:
                        shown = f"{was['nDCG@10']:.3f} / {was['MRR@10']:.3f} → {shown}"
                    return shown
                print(f"| {kind} | {' | '.join(cell(mode) for mode in MODES)} |")


def check_rule(results, old):
    """The rule for defaults against `old`, per model and group: True when it holds for all."""
    holds = True
    for model, rows in results.items():
        before = old.get(model, {})
        for group, names in groups(rows).items():
            common = [name for name in names if name in before]
            if not common:
                continue
            mean_new = sum(rows[n]["hybrid"] for n in common) / len(common)
            mean_old = sum(before[n]["hybrid"] for n in common) / len(common)
            if all(rows[n]["hybrid"] == before[n]["hybrid"] for n in common):
                print(f"rule ({model}, {group}): mean hybrid {mean_new:.4f}, unchanged")
                continue
            drops = [n for n in common if rows[n]["hybrid"] < before[n]["hybrid"] - TOLERANCE]
            ok = mean_new > mean_old and not drops
            holds &= ok
            verdict = "holds" if ok else "fails"
            print(
                f"rule ({model}, {group}): mean hybrid {mean_old:.4f} → {mean_new:.4f}"
                f"{'; lower by more than %.3f: %s' % (TOLERANCE, ', '.join(drops)) if drops else ''}"
                f" — {verdict}"
            )
    return holds


def main():
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", type=Path, default=here.parent / "target/release/memidx")
    parser.add_argument("--eval-dir", type=Path, action="append",
                        help="a folder of collections (repeatable; default ../shared/eval)")
    parser.add_argument("--hard", action="store_true",
                        help="also the hard cases bench/hard_cases.py makes from ../shared/eval")
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "memidx-quality")
    parser.add_argument("--minilm", type=Path, default=os.environ.get("MEMIDX_MINILM_DIR"))
    parser.add_argument("--models", default="bundled,minilm")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--compare", type=Path, help="a previous --json output to compare with")
    parser.add_argument("eval_flags", nargs="*", help="flags passed to every `memidx eval`")
    args = parser.parse_args()

    if not args.binary.is_file():
        sys.exit(f"quality: no binary at {args.binary} (cargo build --release)")
    models = chosen_models(args.models, args.minilm)
    args.work.mkdir(parents=True, exist_ok=True)
    dev = here.parent.parent / "shared/eval"
    eval_dirs = args.eval_dir or [dev]
    if args.hard:
        hard = args.work / "hard"
        hard_cases.make(dev, hard)
        eval_dirs.append(hard)

    results = {}
    for model, model_dir in models.items():
        results[model] = {}
        for eval_dir in eval_dirs:
            for collection in collections(eval_dir):
                print(f"quality: {collection.name}, {model}", file=sys.stderr)
                row = measure(args.binary, collection, model, model_dir, args.work, args.eval_flags)
                results[model][collection.name] = row | {"group": eval_dir.name}
    old = json.loads(args.compare.read_text()) if args.compare else None
    print_table(results, old)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    if old is not None:
        print()
        sys.exit(0 if check_rule(results, old) else 1)


if __name__ == "__main__":
    main()
