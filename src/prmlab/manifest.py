"""Model manifests: what a stage depends on when it uses a model named in params.

A model is named once, in params (`policy.model`, `judge.model`): a local folder or a hub name. DVC
cannot declare a dependency on a hub name, and a folder outside the graph only by a fixed path, so
the stages that load a model depend on its manifest, `data/models/<role>.json`, instead:

    {"role": "policy", "model": "models/policy", "local": true, "files": {"model.safetensors": "md5:…", …}}
    {"role": "judge", "model": "Qwen/Qwen2.5-72B-Instruct", "local": false}

For a local folder every file is fingerprinted (md5 of the bytes; files over `BIG` by size and
modification time, so a 145 GB checkpoint is not re-read on every `dvc repro`). The manifest
changes exactly when the weights, tokenizer or config change, or the name does; a hub model is
identified by its name only (pin a revision by downloading it to a folder).

Written by bootstrap@toy and train_judge@toy for the models they train, by inputs@real for whatever params name.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

BIG = 256 * 2**20


def _file_id(f: Path) -> str:
    st = f.stat()
    if st.st_size > BIG:
        return f"size:{st.st_size}:mtime_ns:{st.st_mtime_ns}"
    h = hashlib.md5()
    with open(f, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return f"md5:{h.hexdigest()}"


def is_local(model: str) -> bool:
    return Path(model).is_dir()


def looks_like_path(model: str) -> bool:
    """A name that can only be meant as a folder (hub names are `org/name` with no leading ./ or /)."""
    return model.startswith((".", "/", "~")) or model.count("/") != 1


def model_manifest(role: str, model: str) -> dict:
    """The identity of the model params name for `role`; a missing folder is an error, not a hub name."""
    if is_local(model):
        root = Path(model)
        files = {f.relative_to(root).as_posix(): _file_id(f) for f in sorted(root.rglob("*"))
                 if f.is_file() and not any(part.startswith(".") for part in f.relative_to(root).parts)}
        if not files:
            raise FileNotFoundError(f"{role}.model: folder {model} is empty")
        return {"role": role, "model": model, "local": True, "files": files}
    if looks_like_path(model):
        raise FileNotFoundError(f"{role}.model: no model folder at {model} (and it is not a hub name like org/name)")
    return {"role": role, "model": model, "local": False}
