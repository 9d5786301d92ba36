"""The ten-minute demo: the study's whole graph, run for real at a size 2 CPU cores finish in about ten minutes.

    make demo                  # or: python -m flows.demo [--out runs/demo]

Inputs: the project's committed HEAD (its toy models are in git: nothing is trained from scratch) and
params/demo.yaml, the sizes laid over params.yaml (prmlab.runs.store.demo_params). Output: a clone in runs/demo/ with
those params, run end to end by the study's own Prefect flow, so it fills what the study fills: its report, DVC
plots and metrics, the Prefect flow run and MLflow runs in this project's store under experiment `prmlab-demo`.
It ends by printing where to look. A rerun reruns only what changed; the committed study's files are never touched.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import yaml

from prmlab.runs.processes import interrupt_on_sigterm, venv_tool
from prmlab.runs.store import clone_head, demo_params

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = "prmlab-demo"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m flows.demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="runs/demo", help="the demo's clone (default runs/demo, ignored by git)")
    ap.add_argument("--project-dir", default=str(ROOT))
    a = ap.parse_args(argv)
    project = Path(a.project_dir).resolve()
    over = yaml.safe_load((project / "params" / "demo.yaml").read_text())
    d = (project / a.out).resolve()
    commit = clone_head(project, d)
    (d / "params.yaml").write_text(yaml.safe_dump(demo_params(yaml.safe_load((d / "params.yaml").read_text()), over),
                                                  sort_keys=False))
    # The clone's own library first (its stages run HEAD's code, not a working tree's edits); MLflow runs go to this
    # project's store, where `make ui` looks, under their own experiment.
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (str(d / "src"), os.environ.get("PYTHONPATH", "")) if x)
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{project / 'mlflow.db'}")
    os.environ.setdefault("PRMLAB_EXPERIMENT", EXPERIMENT)
    from flows.pipeline import pipeline  # deferred: prefect, once the environment above is set

    interrupt_on_sigterm()
    t0 = time.monotonic()
    print(f"demo: the study's graph at params/demo.yaml's size in {d} (commit {commit[:7]})", flush=True)
    pipeline(project_dir=str(d))
    rel = os.path.relpath(d, Path.cwd())
    print(f"\ndemo: done in {(time.monotonic() - t0) / 60:.1f} min. Where to look:\n"
          f"  report        {rel}/reports/report.md\n"
          f"  headline      {venv_tool('prmlab')} metrics --file {rel}/reports/headline.json\n"
          f"  DVC plots     cd {rel} && {venv_tool('dvc')} plots show   (then open dvc_plots/index.html)\n"
          f"  MLflow        make ui   (experiment {os.environ['PRMLAB_EXPERIMENT']})\n"
          f"  Prefect       make prefect-ui   (flow prmlab-pipeline)\n"
          f"The full study (hours on 2 cores): make repro", flush=True)


if __name__ == "__main__":
    sys.exit(main())
