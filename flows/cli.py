"""`prmlab`: the few commands a researcher types, thin over the stages and flows (no second implementation).

    prmlab run [--stages sample label_mc ...]       # the study: the Prefect flow over `dvc repro` (as make repro)
    prmlab eval PRM [--name NAME] [--only processbench|bon] [--out DIR]
                                                    # a PRM folder or hub name on ProcessBench and Best-of-N,
                                                    # outside the DVC graph, with this project's items and params
    prmlab metrics                                  # the headline numbers (reports/headline.json)

`eval` runs stages.eval_processbench and stages.eval_bon on the graph's evaluation inputs
(data/processbench/items.jsonl; data/problems/eval.jsonl and data/eval_samples/eval.jsonl), with a
copy of params.yaml that drops the critic and the reference PRMs, and writes DIR/{processbench,bon}.json
plus per-item scores (default DIR: runs/eval-NAME). Missing inputs are named with the `dvc repro`
target that makes them, before any model loads.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

INPUTS = {"processbench": [("data/processbench/items.jsonl", "build_processbench@toy or inputs@real")],
          "bon": [("data/problems/eval.jsonl", "problems@toy or inputs@real"),
                  ("data/eval_samples/eval.jsonl", "sample_eval")]}


def _stage(module: str, args: list[str]) -> None:
    p = subprocess.run([sys.executable, "-m", f"stages.{module}", *args])
    if p.returncode != 0:
        sys.exit(p.returncode)


def evaluate(prm: str, name: str, only: str | None, out: Path, params: Path) -> None:
    import yaml

    which = [only] if only else ["processbench", "bon"]
    missing = [f"{path} (make it with `dvc repro {target}`)" for w in which for path, target in INPUTS[w] if not Path(path).exists()]
    if missing:
        sys.exit(f"prmlab eval: missing input(s): {'; '.join(missing)}")
    cfg = yaml.safe_load(params.read_text())
    cfg["eval_processbench"] = {**cfg["eval_processbench"], "critic": False, "reference_prms": {}}
    cfg["eval_bon"] = {**cfg["eval_bon"], "reference_prms": {}}
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=out, delete=False) as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    try:
        if "processbench" in which:
            _stage("eval_processbench", ["--items", "data/processbench/items.jsonl", "--prm", f"{name}={prm}",
                                         "--metrics", str(out / "processbench.json"), "--scores",
                                         str(out / "processbench_scores.jsonl"), "--params", f.name])
        if "bon" in which:
            _stage("eval_bon", ["--problems", "data/problems/eval.jsonl", "--samples", "data/eval_samples/eval.jsonl",
                                "--prm", f"{name}={prm}", "--metrics", str(out / "bon.json"),
                                "--scores", str(out / "bon_scores.jsonl"), "--params", f.name])
    finally:
        os.unlink(f.name)
    print(f"prmlab eval: results in {out}/")


def show_metrics(path: Path) -> None:
    if not path.exists():
        sys.exit(f"prmlab metrics: {path} not found (run the study: `prmlab run` or `dvc repro`)")

    def rows(d: dict, prefix: str = ""):
        for k, v in d.items():
            yield from rows(v, f"{prefix}{k}.") if isinstance(v, dict) else [(f"{prefix}{k}", v)]

    items = list(rows(json.loads(path.read_text())))
    width = max(len(k) for k, _ in items)
    for k, v in items:
        print(f"{k:<{width}}  {v}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="prmlab", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the study (Prefect flow over dvc repro)")
    r.add_argument("--stages", nargs="*", default=None, help="stage groups, e.g. sample label_mc (default: all)")
    r.add_argument("--project-dir", default=".")
    e = sub.add_parser("eval", help="evaluate a PRM folder or hub name on ProcessBench and/or Best-of-N")
    e.add_argument("prm", help="a PRM checkpoint folder or a hub name (e.g. Qwen/Qwen2.5-Math-PRM-7B)")
    e.add_argument("--name", default=None, help="its name in the results (default: the folder's or model's name)")
    e.add_argument("--only", choices=["processbench", "bon"], default=None)
    e.add_argument("--out", default=None, help="results folder (default runs/eval-NAME)")
    e.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"))
    m = sub.add_parser("metrics", help="print the headline numbers")
    m.add_argument("--file", default="reports/headline.json")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        from flows.pipeline import pipeline

        pipeline(project_dir=a.project_dir, stages=a.stages)
    elif a.cmd == "eval":
        name = a.name or Path(a.prm.rstrip("/")).name
        evaluate(a.prm, name, a.only, Path(a.out or f"runs/eval-{name}"), Path(a.params))
    else:
        show_metrics(Path(a.file))


if __name__ == "__main__":
    main()
