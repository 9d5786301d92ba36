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

The reference PRMs the eval stages load (`<eval section>.reference_prms`: a folder or hub name, a `reference` model,
a generative verifier's model and `template_file`) are fingerprinted the same way into `data/models/references.json`,
a dependency of every eval stage, by each profile's first stage: inputs@real (which always runs, so a folder whose
weights changed reruns the evaluations) and problems@toy. problems@toy runs only when its own inputs change, so the toy
profile takes references only from inside the graph (models/prm/, the trained PRMs' folder: already a dependency of
every eval stage, and not fingerprinted here as it does not exist yet when the first stage runs), hub names, and
templates in src/prmlab/prompts/; anything else is one line naming the key.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from prmlab.core.params import ParamsError

BIG = 256 * 2**20
REFERENCE_SECTIONS = ("eval_processbench", "eval_bon", "eval_prmbench")  # the sections with `reference_prms`
IN_GRAPH = "models/prm/"  # the trained PRMs (train_prm, ceiling@toy): a dependency of every eval stage
PROMPTS = "src/prmlab/prompts/"  # the built-in templates: a dependency of every eval stage


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


def _md5(path: Path) -> str:
    return "md5:" + hashlib.md5(path.read_bytes()).hexdigest()


def references_manifest(raw: dict, toy: bool) -> dict:
    """{"<section>.reference_prms.<name>[.reference|.template_file]": identity} of every model folder, hub name and
    template file the eval sections' `reference_prms` name (raw params, as read); `toy`: the toy profile's first
    stage, which cannot notice a later change outside the graph, so such a folder or file is a ParamsError naming its key."""
    out: dict[str, dict] = {}
    for section in REFERENCE_SECTIONS:
        refs = (raw.get(section) or {}).get("reference_prms") or {}
        if not isinstance(refs, dict):
            continue  # the eval stage names the malformed value itself
        for name, v in sorted(refs.items()):
            key = f"{section}.reference_prms.{name}"
            named = {"": v} if isinstance(v, str) else {"": v.get("model"), ".reference": v.get("reference")} \
                if isinstance(v, dict) else {}
            for suffix, model in named.items():
                if not isinstance(model, str):
                    continue
                where = key + suffix
                if Path(model).as_posix().startswith(IN_GRAPH):
                    out[where] = {"model": model, "in_graph": True}
                elif toy and (is_local(model) or looks_like_path(model)):
                    raise ParamsError(f"{where}: folder {model} lies outside the DVC graph, so the toy profile would not "
                                      f"rerun the evaluations when its weights change: use a PRM under {IN_GRAPH} or a "
                                      "hub name (the real profile's inputs@real fingerprints any folder)")
                else:
                    try:
                        out[where] = model_manifest(where, model)
                    except FileNotFoundError as e:
                        raise ParamsError(str(e)) from None
            tf = v.get("template_file") if isinstance(v, dict) else None
            if isinstance(tf, str):
                where = f"{key}.template_file"
                if toy and not Path(tf).as_posix().startswith(PROMPTS):
                    raise ParamsError(f"{where}: {tf} lies outside the DVC graph, so the toy profile would not rerun "
                                      f"the evaluations when it changes: put it under {PROMPTS} (the real profile's "
                                      "inputs@real fingerprints any file)")
                if not Path(tf).is_file():
                    raise ParamsError(f"{where}: {tf} is not a file")
                out[where] = {"template_file": tf, "md5": _md5(Path(tf))}
    return out
