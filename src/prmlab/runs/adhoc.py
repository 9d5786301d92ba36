"""`prmlab eval`'s library side: PRMs evaluated outside the DVC graph, through the graph's own eval stages.

What: `evaluate` runs stages eval_processbench and eval_bon (or eval_prmbench) for each PRM as processes, on the
graph's evaluation inputs (data/processbench/items.jsonl; data/problems/eval.jsonl and data/eval_samples/eval.jsonl;
PRMBench's folder params `eval_prmbench.data` names), each with a copy of params.yaml that turns the critic off and
replaces the reference PRMs (`eval_params`), under one MLflow run per PRM with the stages' runs nested under it and
retagged ad hoc (`mark_adhoc`). The request is checked (`check_request`) and missing inputs are named with the `dvc
repro` target that makes them (`missing_inputs`) before any model loads. The tables (prmlab.report.tables):
ProcessBench like the paper's Table 7, Best-of-N like Table 6 with Fig. 8's min-on-final-step share, PRMBench with
its harness's row beside a known checkpoint. flows/cli.py parses the command.
Inputs: the PRMs' folders or hub names and the flags given; params.yaml; the graph's evaluation inputs.
Outputs: DIR/NAME/{processbench,bon,prmbench}.json with per-item scores, DIR/table.{md,json}, MLflow runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from prmlab.core.credentials import stage_env
from prmlab.core.io import DataError, atomic_write_text, write_json
from prmlab.core.params import ParamsError
from prmlab.core.provenance import tracking_uri
from prmlab.core.tracking import ensure_experiment
from prmlab.prms.generative import GENERATIVE, VerifierConfig
from prmlab.prms.layouts import check_prm_name
from prmlab.report.tables import markdown_table, table_row


class StageFailed(RuntimeError):
    """An eval stage exited non-zero (its own error line is on its stderr); `returncode` is its exit status."""

    def __init__(self, returncode: int):
        super().__init__(f"an eval stage exited with {returncode}")
        self.returncode = returncode


INPUTS = {"processbench": [("data/processbench/items.jsonl", "build_processbench@toy or inputs@real")],
          "bon": [("data/problems/eval.jsonl", "problems@toy or inputs@real"),
                  ("data/eval_samples/eval.jsonl", "sample_eval")],
          "prmbench": []}  # its folder is params' eval_prmbench.data, checked in `missing_inputs`


def check_request(prms: list[str], name: str | None, layout: str | None, votes: int | None,
                  temperature: float | None) -> tuple[list[str], dict]:
    """The PRMs' names in the results (`name` for one PRM, else each folder's or model's name) and a generative
    layout's sampling ({} unless --votes or --temperature); a ParamsError naming the flag otherwise."""
    if name and len(prms) > 1:
        raise ParamsError("--name names one PRM; several get their folder's or model's name")
    names = [name] if name else [Path(p.rstrip("/")).name for p in prms]
    for n in names:
        check_prm_name("--name" if name else f"the name of {n}", n)
    if len(set(names)) < len(names):
        raise ParamsError(f"two PRMs share a name ({names}); evaluate them apart with --name")
    sampling = {k: v for k, v in (("votes", votes), ("temperature", temperature)) if v is not None}
    if sampling:
        if layout not in GENERATIVE:
            raise ParamsError(f"--votes and --temperature are for a generative --layout ({', '.join(GENERATIVE)}); "
                              f"got --layout {layout}")
        try:
            VerifierConfig(**sampling)
        except ParamsError as err:
            raise ParamsError(f"--votes/--temperature: {err}") from None
    return names, sampling


def missing_inputs(which: list[str], params: Path) -> str | None:
    """What the benchmarks `which` lack of the graph's inputs (PRMBench's: the folder `params` names), as one line,
    or None."""
    missing = [f"{path} (make it with `dvc repro {target}`)" for w in which for path, target in INPUTS[w] if not Path(path).exists()]
    if missing:
        return f"missing input(s): {'; '.join(missing)}"
    cfg = yaml.safe_load(params.read_text())
    if "prmbench" in which and not Path((cfg.get("eval_prmbench") or {}).get("data", "")).is_dir():
        return (f"PRMBench folder {(cfg.get('eval_prmbench') or {}).get('data')!r} not found "
                f"(params eval_prmbench.data in {params}; see ../shared/data/README.md)")
    return None


def eval_params(cfg: dict, out: Path, entries: dict) -> str:
    """A params file in `out` for one evaluation: `cfg` with the critic off and the eval sections' reference_prms
    replaced by `entries` (a generative verifier's sampling lives in its entry, not in a flag)."""
    cfg = {**cfg, "eval_processbench": {**cfg["eval_processbench"], "critic": False}}
    for s in ("eval_processbench", "eval_bon", "eval_prmbench"):
        if s in cfg:
            cfg[s] = {**cfg[s], "reference_prms": entries}
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=out, delete=False) as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    return f.name


def stage_args(which: list[str], spec: list[str], out: Path, params: str) -> list[tuple[str, list[str]]]:
    """(stage module, its arguments) for each benchmark of `which`, in order: the PRM (`spec`: its --prm, --layout,
    --reference options) on the graph's inputs, its metrics and scores into `out`, with the params file `params`."""
    args = {"processbench": ("eval_processbench", ["--items", "data/processbench/items.jsonl"]),
            "bon": ("eval_bon", ["--problems", "data/problems/eval.jsonl", "--samples", "data/eval_samples/eval.jsonl"]),
            "prmbench": ("eval_prmbench", [])}
    return [(args[w][0], [*args[w][1], *spec, "--metrics", str(out / f"{w}.json"), "--scores", str(out / f"{w}_scores.jsonl"),
                          "--params", params]) for w in ("processbench", "bon", "prmbench") if w in which]


def write_tables(out: Path, rows: list[dict]) -> str:
    """out/table.json and out/table.md (prmlab.report.tables); returns the Markdown."""
    write_json(out / "table.json", rows)
    atomic_write_text(out / "table.md", md := markdown_table(rows))
    return md


def mark_adhoc(client, parent, name: str) -> None:
    """The eval stages' runs under an ad-hoc parent: renamed `adhoc <stage> <name>`, their `prmlab.stage`
    tag removed (kept as `prmlab.adhoc`), so no report takes them for the pipeline's own stage runs."""
    for r in client.search_runs([parent.experiment_id], f"tags.mlflow.parentRunId = '{parent.run_id}'"):
        stage = r.data.tags.get("prmlab.stage")
        if stage:
            client.delete_tag(r.info.run_id, "prmlab.stage")
            client.set_tag(r.info.run_id, "prmlab.adhoc", stage)
            client.update_run(r.info.run_id, name=f"adhoc {r.info.run_name} {name}")


def evaluate(models: list[str], name: str | None, layout: str | None, reference: str | None, only: str | None,
             out: str | None, params: Path, votes: int | None = None, temperature: float | None = None) -> list[dict]:
    """Each model on ProcessBench and Best-of-N (or `only` one benchmark) through the eval stages, one MLflow run per
    model (the stages' runs nested under it); writes out/<name>/ and out/table.{md,json} (default `out`: runs/eval-NAME,
    or runs/eval for several) and prints the table. `votes`, `temperature`: a generative layout's sampling
    (prmlab.prms.generative.VerifierConfig), passed as the model's `reference_prms` entry. A bad request or a missing input
    raises ParamsError or DataError before any model loads; a stage that fails, StageFailed."""
    import mlflow  # the client only here: the checks above it load nothing of it

    names, sampling = check_request(models, name, layout, votes, temperature)  # before any model loads
    out = Path(out or (f"runs/eval-{names[0]}" if len(names) == 1 else "runs/eval"))
    which = [only] if only else ["processbench", "bon"]
    if why := missing_inputs(which, params):
        raise DataError(why)
    cfg = yaml.safe_load(params.read_text())
    out.mkdir(parents=True, exist_ok=True)
    files = [eval_params(cfg, out, {})]
    rows = []
    mlflow.set_tracking_uri(tracking_uri())
    ensure_experiment(mlflow, os.environ.get("PRMLAB_EXPERIMENT", "prmlab"))
    try:
        for model, name in zip(models, names):
            spec = ["--prm", f"{name}={model}"] + (["--layout", f"{name}={layout}"] if layout else []) \
                + (["--reference", f"{name}={reference}"] if reference else [])
            run_params = files[0]
            if sampling:  # a generative verifier's sampling lives in its reference_prms entry, not in a flag
                spec, run_params = [], eval_params(cfg, out, {name: {"model": model, "layout": layout, **sampling}})
                files.append(run_params)
            # Ad hoc, never a stage's run: no `prmlab.stage` tag (the report's provenance reads the latest
            # finished run of each stage by that tag and name), so the children are retagged as they end.
            with mlflow.start_run(run_name=f"adhoc eval {name}", tags={"prmlab.adhoc": "prmlab eval", "prmlab.model": model}) as run:
                mlflow.log_params({"model": model, "layout": layout or "auto", "reference": reference or "-", **(sampling or {})})
                env = stage_env(run_params, {**os.environ, "PRMLAB_PARENT_RUN_ID": run.info.run_id})  # its secrets only
                for module, args in stage_args(which, spec, out / name, run_params):
                    if rc := subprocess.run([sys.executable, "-m", f"stages.{module}", *args], env=env).returncode:
                        raise StageFailed(rc)
                mark_adhoc(mlflow.MlflowClient(), run.info, name)
                row = table_row(name, model, out / name, which)
                mlflow.log_metrics({k: v for k, v in row.items() if isinstance(v, float)})
            rows.append(row)
    finally:
        for f in files:
            os.unlink(f)
    print(write_tables(out, rows))
    print(f"prmlab eval: results in {out}/ (table.md, table.json, one folder per model)")
    return rows
