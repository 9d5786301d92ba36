"""Small helpers shared by stage `main()`s: argument parsing and the stage run context."""

from __future__ import annotations

import argparse
import os
import sys


def parse_args(description: str, **paths: str) -> argparse.Namespace:
    """Each keyword becomes a required `--name PATH` option (paths live in dvc.yaml only)."""
    ap = argparse.ArgumentParser(description=description)
    for name, help_ in paths.items():
        ap.add_argument(f"--{name.replace('_', '-')}", dest=name, required=not help_.startswith("?"), help=help_.lstrip("?"))
    ap.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"), help="params file")
    return ap.parse_args()


def fail(stage: str, err: Exception) -> None:
    print(f"[{stage}] error: {err}", file=sys.stderr)
    sys.exit(2)


def run_main(stage: str, main) -> None:
    """Run a stage's `main()`: bad params or data (ParamsError, DataError: messages that name the key,
    or the file, line and field) end as one line `[stage] error: ...` and exit 2, never a traceback.
    Other exceptions are bugs or environment failures and keep their traceback."""
    from prmlab.io import DataError
    from prmlab.params import ParamsError

    try:
        main()
    except (ParamsError, DataError) as e:
        fail(stage, e)


def set_threads() -> None:
    """Torch on every core; and no per-load "Loading weights" bar from transformers (a stage loads
    models many times; its own progress lines say what it is doing)."""
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    torch.set_num_threads(max(1, os.cpu_count() or 1))


def prms_to_evaluate(prm_dir: str | None, cli: list[str], params_path: str, reference: dict,
                     layouts: list[str] = (), references: list[str] = ()) -> dict:
    """name -> PRMSpec of every PRM an eval stage scores: `<prm_dir>/<source>` for each of
    `train_prm.sources`, then params' `reference_prms` (a folder or hub name, or {model, layout,
    reference}), then `--prm name=path` flags, with `--layout name=layout` and `--reference name=model`."""
    import dataclasses
    from pathlib import Path

    from prmlab.layouts import PRMSpec
    from prmlab.params import ParamsError, read_params

    def pairs(flag: str, values, what: str) -> dict[str, str]:
        out = {}
        for p in values:
            name, sep, val = p.partition("=")
            if not sep or not name or not val:
                raise ParamsError(f"{flag} {p!r}: expected name={what}, e.g. {flag} qwen=Qwen/Qwen2.5-Math-PRM-7B"
                                  if flag == "--prm" else f"{flag} {p!r}: expected name={what}")
            out[name] = val
        return out

    out: dict[str, PRMSpec] = {}
    if prm_dir:
        sources = read_params(params_path).get("train_prm", {}).get("sources") or []
        out |= {s: PRMSpec(str(Path(prm_dir) / s), "qwen") for s in sources}
    for name, v in reference.items():
        if isinstance(v, str):
            out[name] = PRMSpec(v)
        elif isinstance(v, dict) and isinstance(v.get("model"), str) and set(v) <= {"model", "layout", "reference"}:
            out[name] = PRMSpec(v["model"], v.get("layout"), v.get("reference"))
        else:
            raise ParamsError(f"reference_prms.{name}: expected a folder or hub name, or {{model, layout, reference}}, got {v!r}")
    out |= {name: PRMSpec(path) for name, path in pairs("--prm", cli, "path (a PRM folder or hub name)").items()}
    for flag, values, field_ in (("--layout", layouts, "layout"), ("--reference", references, "reference")):
        for name, val in pairs(flag, values, field_).items():
            if name not in out:
                raise ParamsError(f"{flag} {name}={val}: no PRM named {name!r} (known: {sorted(out)})")
            out[name] = dataclasses.replace(out[name], **{field_: val})
    if not out:
        raise ParamsError("no PRM to evaluate: give --prm-dir (with train_prm.sources), reference_prms or --prm name=path")
    from prmlab.layouts import LAYOUTS

    for name, spec in out.items():  # checked here for hub names too, which check_model cannot open before loading
        if spec.layout is not None and spec.layout not in LAYOUTS:
            raise ParamsError(f"PRM {name!r}: unknown layout {spec.layout!r} (known: {list(LAYOUTS)})")
        if spec.reference and spec.layout != "eurus":
            raise ParamsError(f"PRM {name!r}: a reference model is for layout eurus only (layout {spec.layout!r})")
    return out


def vllm_layout_check(scorer: str, name: str, spec) -> None:
    """vLLM's pooling runner serves the qwen layout only: a PRM in another layout is refused before any
    model loads (a local folder's layout is read from its files; a hub name's must be given)."""
    from pathlib import Path

    from prmlab.layouts import detect_layout
    from prmlab.params import ParamsError

    if scorer != "vllm":
        return
    layout = spec.layout or (detect_layout(spec.model) if Path(spec.model).is_dir() else "qwen")
    if layout != "qwen":
        raise ParamsError(f"PRM {name!r}: scorer vllm serves the qwen layout only, and this PRM is {layout}: "
                          "set the eval stage's scorer to transformers")
