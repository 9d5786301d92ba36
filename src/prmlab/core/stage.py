"""The one stage runner: every DVC stage's `main()` is a `run_stage(...)` call over a core in this library.

A stage declares its name, its paths (each a `--name PATH` option: paths live in dvc.yaml only), its params
sections (frozen dataclasses), a `prepare(a, cfg)` that reads and cross-checks its inputs before any model
loads and returns them as the stage's frozen inputs dataclass (`MCInputs`, `TrainInputs`, ...), and a
`core(cfg, inputs, run)` that does the work inside the stage's MLflow run and returns a `Done`. Only `prepare` sees
the command line: the core takes values (what prepare read, the few paths it writes itself, as a checkpoint
folder), keys its outputs by option name, and a benchmark can call it with `prmlab.core.result.Unrecorded()` as its
run. The runner owns the rest:

  argument parsing  ->  outputs locked, their folders writable  ->  the tracking store checked  ->  params
  loading  ->  prepare  ->  MLflow run { core }  ->  outputs and --metrics written atomically, metrics
  logged  ->  the one summary line

Bad params or data (ParamsError, DataError: messages that name the params key, or the file, line and field)
end as one line `[stage] error: ...` and exit 2, never a traceback, wherever they are raised. A failure of what
the stage runs on (prmlab.core.io.Fault: a server, a Ray cluster's replicas) is one line too, with exit 1, which a flow
may retry. Other exceptions are bugs and keep their traceback.

Example (a whole stage module's main):

    def main() -> None:
        run_stage("label_mc", __doc__, paths={"problems": "problems JSONL", "samples": "responses JSONL",
                  "out": "labels JSONL", "metrics": "metrics JSON"},
                  sections={"label_mc": LabelMCConfig, "policy": BackendConfig},
                  prepare=prepare_mc, core=label_mc, inputs=["problems", "samples"], torch=True)
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prmlab.core.io import DataError, Fault, check_writable, output_lock, write_json, write_jsonl
from prmlab.core.params import ParamsError, load_params
from prmlab.core.provenance import machine
from prmlab.core.result import LOG_MAX_BYTES, Done
from prmlab.core.tracking import check_store, done_line, stage_run


def fail(stage: str, err: Exception, code: int = 2) -> None:
    print(f"[{stage}] error: {err}", file=sys.stderr)
    sys.exit(code)


def set_threads() -> None:
    """Torch on every core; and no per-load "Loading weights" bar from transformers (a stage loads
    models many times; its own progress lines say what it is doing)."""
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    torch.set_num_threads(max(1, os.cpu_count() or 1))


def parse(description: str, paths: dict[str, Any], argv: list[str] | None = None) -> argparse.Namespace:
    """Each entry of `paths` is a `--name` option: a help text (required; "?help": optional; "*help":
    repeatable, a list) or a dict of argparse keywords. Plus --params (default $PRMLAB_PARAMS or params.yaml)."""
    ap = argparse.ArgumentParser(description=description.strip().splitlines()[0] if description else None)
    for name, spec in paths.items():
        flag = f"--{name.replace('_', '-')}"
        if isinstance(spec, dict):
            ap.add_argument(flag, dest=name, **spec)
        elif spec.startswith("*"):
            ap.add_argument(flag, dest=name, action="append", default=[], help=spec[1:])
        else:
            ap.add_argument(flag, dest=name, required=not spec.startswith("?"), help=spec.lstrip("?"))
    ap.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"), help="params file")
    return ap.parse_args(argv)


def foreach_key(group: str) -> str | None:
    """The key of stage `group@<key>` that `dvc repro` runs now (DVC sets DVC_STAGE, e.g. `train_prm@judge`),
    or None. dvc.yaml's foreach commands carry no params string: DVC pastes `${item}` into a shell command
    unquoted, so a source named ``judge`touch PWNED` `` ran its backticks before Python could refuse the name.
    Such a stage reads its key here instead, and its paths name it as `{source}`."""
    stage = os.environ.get("DVC_STAGE", "").split("dvc.yaml:", 1)[-1]  # `sub/dvc.yaml:name` outside the root
    got, sep, key = stage.partition("@")
    return key if sep and got == group else None


def fill_source(a: argparse.Namespace, group: str) -> None:
    """--source, else the key of the `group@<source>` stage DVC runs; then `{source}` in every path option.
    The name must be a label source's (letters, digits, `_`): it becomes part of paths."""
    a.source = a.source or foreach_key(group)
    if not a.source:
        raise ParamsError(f"--source is required (under `dvc repro`, stage {group}@<source> names it)")
    if not re.fullmatch(r"[A-Za-z0-9_]+", a.source):
        raise ParamsError(f"source {a.source!r} ({group}@...): not a label source name (letters, digits, _); "
                          "see params train_prm.sources and human_labels")
    for k, v in vars(a).items():
        if isinstance(v, str) and k != "source":
            setattr(a, k, v.replace("{source}", a.source))


def declared_params(dvc_yaml: Path = Path("dvc.yaml")) -> list[str] | None:
    """The params.yaml keys dvc.yaml declares for the stage `dvc repro` runs now (DVC_STAGE; a foreach stage's `do`),
    e.g. ["train_prm", "policy.model"]; None outside `dvc repro` or where dvc.yaml does not name it. The stage's MLflow
    run logs only these of a section DVC narrows (train_prm had logged 16 unused `policy.*` serving settings)."""
    import yaml

    stage = os.environ.get("DVC_STAGE", "").split("dvc.yaml:", 1)[-1].split("@")[0]
    if not stage or not dvc_yaml.exists():
        return None
    spec = ((yaml.safe_load(dvc_yaml.read_text()) or {}).get("stages") or {}).get(stage)
    if not isinstance(spec, dict):
        return None
    spec = spec.get("do", spec)
    out: list[str] = []
    for p in spec.get("params") or []:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict):  # {file: [keys]}: params.yaml's only
            out += [k for f, keys in p.items() if f == "params.yaml" for k in keys or []]
    return out


def check_dvc_params(params: str) -> None:
    """Under `dvc repro` (DVC sets DVC_STAGE) a stage must read the params DVC records in dvc.lock: the
    repo's params.yaml. A PRMLAB_PARAMS left set in the shell had made the run and its record disagree."""
    stage = os.environ.get("DVC_STAGE")
    # The repo's params.yaml (DVC_ROOT), or the one in the stage's folder: a queued experiment (flows.seeds) runs in
    # a temporary copy of the repo, and DVC sets DVC_ROOT to the original there.
    recorded = {(Path(os.environ.get("DVC_ROOT", ".")) / "params.yaml").resolve(), Path("params.yaml").resolve()}
    if stage and Path(params).resolve() not in recorded:
        raise ParamsError(f"--params {params} (from PRMLAB_PARAMS?) under `dvc repro` ({stage}): DVC records params.yaml "
                          "in dvc.lock, so this run would disagree with its record; unset PRMLAB_PARAMS or copy the file "
                          "to params.yaml")


def output_path(a: argparse.Namespace, key: str) -> str | None:
    """Where a core's output goes: `out` -> --out, `problems_dir/train.jsonl` -> a file in that folder; None: not asked."""
    opt, _, rest = key.partition("/")
    return getattr(a, opt) and (str(Path(getattr(a, opt)) / rest) if rest else getattr(a, opt))


def run_stage(name: str, description: str, *, paths: dict[str, Any], core: Callable[..., Done],
              sections: dict[str, type] | None = None, prepare: Callable[..., Any] | None = None,
              inputs: list[str] = (), tags: dict[str, str] | None = None, torch: bool = False,
              worker: Callable[..., None] | None = None, argv: list[str] | None = None) -> None:
    """Run one stage (see the module docstring). `name` and section names may hold `{option}` fields,
    filled from the options (`train_prm@{source}`); `inputs` names the options whose files the MLflow run
    records by digest; `torch` sets torch's threads before the core; `worker(cfg, data)` runs instead of the
    core in a process of `torchrun` other than the first, which records nothing."""
    a = parse(description, paths, argv)
    if "source" in paths:
        try:
            fill_source(a, name.split("@")[0])
        except ParamsError as e:
            fail(name.split("@")[0], e)
    name = name.format(**vars(a))
    metrics = getattr(a, "metrics", None)
    first = os.environ.get("RANK", "0") == "0"  # torchrun's other processes (RANK > 0) record and write nothing
    locks = []
    try:
        try:
            check_dvc_params(a.params)
            if first:
                # One run per output: a second run of the stage on its outputs stops here, before any model
                # loads (two train_prm on one folder had both succeeded; only sharded outputs were locked).
                locks += [output_lock(p) for p in dict.fromkeys(getattr(a, k, None) for k in ("out", "metrics")) if p]
                for k in ("out", "metrics", "scores"):  # a read-only or full folder: before the work, not after
                    if getattr(a, k, None):
                        check_writable(getattr(a, k))
            check_store()
            named = {s.format(**vars(a)): cls for s, cls in (sections or {}).items()}
            cfg = {s: load_params(s, cls, a.params) for s, cls in named.items()}
            data = prepare(a, cfg) if prepare else None
        except (ParamsError, DataError, ValueError) as e:  # prepare validates: its ValueErrors are bad input
            fail(name, e)
        if torch:
            set_threads()
        if worker is not None and not first:
            worker(cfg, data)
            return
        try:
            with stage_run(name, cfg, inputs=[getattr(a, k) for k in inputs if getattr(a, k, None)], tags=tags,
                           declared=declared_params()) as run:
                if "source" in paths:  # a label source's stage: the run's param and tag
                    run.params({"source": a.source})
                    run.tag("prmlab.source", a.source)
                done = core(cfg, data, run)
                if torch:  # a stage that runs a model: its figures can move with the CPU (prmlab.core.provenance.machine)
                    done.metrics["machine"] = machine()
                    done.file_only.append("machine")
                written = {p: obj for key, obj in done.outputs.items() if (p := output_path(a, key))}
                for path, obj in written.items():
                    (write_jsonl if isinstance(obj, list) else write_json)(path, obj)
                if metrics:
                    write_json(metrics, done.metrics)
                run.metrics({k: v for k, v in done.metrics.items() if k not in done.file_only} | done.logged)
                # Outputs go to the run up to LOG_MAX_BYTES each: the tables and training sets a reader opens
                # from the UI; larger files (per-response score files, 12 MB a study) are DVC's to keep.
                small = [p for p in written if os.path.getsize(p) <= LOG_MAX_BYTES]
                for path in [*small, *done.artifacts]:
                    run.artifact(path)
                if metrics:  # one name in every run (metrics/train_prm/<source>.json and the like), so MLflow's
                    run.artifact(metrics, name="metrics.json")  # compare view finds it in any two runs
        except (ParamsError, DataError) as e:
            fail(name, e)
        except Fault as e:  # a server or a cluster failed, not the input: one line, exit 1 (a flow may retry it)
            fail(name, " ".join(str(e).split("\n")), code=1)
        done_line(name, done.summary)
    finally:
        for lock in locks:
            lock.close()
