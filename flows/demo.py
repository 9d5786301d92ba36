"""The ten-minute demo: the study's whole graph, run for real at a size 2 CPU cores finish in about ten minutes.

    make demo                  # or: python -m flows.demo [--out runs/demo]

Inputs: the project's committed HEAD (its toy models are in git, so nothing is trained from scratch) and
params/demo.yaml, the sizes the demo lays over params.yaml. Output: a clone of the project in runs/demo/ with
those params, run end to end by the study's own Prefect flow (flows.pipeline), so it fills what the study fills:
its report (runs/demo/reports/report.md), DVC plots and metrics, the Prefect flow run (`make prefect-ui`) and
MLflow runs in this project's store under experiment `prmlab-demo` (`make ui`). It ends by printing where to
look. A rerun reruns only what changed (DVC); the committed study's files are never touched.
"""

from __future__ import annotations

import argparse
import copy
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from flows import venv_tool

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = "prmlab-demo"


def demo_params(params: dict, over: dict) -> dict:
    """params.yaml with each section's keys in `over` (params/demo.yaml) put over its own: a key given replaces
    that key's value whole, a section's other keys stay. A section or key params.yaml lacks is an error (a typo
    would otherwise run the study's size silently)."""
    out = copy.deepcopy(params)
    for sec, keys in over.items():
        if sec not in out or not isinstance(keys, dict):
            raise SystemExit(f"params/demo.yaml: section {sec!r} is not a params.yaml section of mappings")
        for k, v in keys.items():
            if k not in out[sec]:
                raise SystemExit(f"params/demo.yaml: {sec}.{k} is not a params.yaml key")
            out[sec][k] = v
    return out


def clone(project: Path, d: Path) -> str:
    """runs/demo as a git clone of the project at its HEAD (a rerun moves it to the new HEAD); returns the commit."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, check=True, capture_output=True,
                          text=True).stdout.strip()
    if not (d / ".git").exists():
        d.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(project), str(d)], check=True)
    else:
        subprocess.run(["git", "fetch", "-q", str(project), "HEAD"], cwd=d, check=True)
    subprocess.run(["git", "checkout", "-q", "-f", head], cwd=d, check=True)
    return head


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m flows.demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="runs/demo", help="the demo's clone (default runs/demo, ignored by git)")
    ap.add_argument("--project-dir", default=str(ROOT))
    a = ap.parse_args(argv)
    project = Path(a.project_dir).resolve()
    over = yaml.safe_load((project / "params" / "demo.yaml").read_text())
    d = (project / a.out).resolve()
    commit = clone(project, d)
    (d / "params.yaml").write_text(yaml.safe_dump(demo_params(yaml.safe_load((d / "params.yaml").read_text()), over),
                                                  sort_keys=False))
    # The clone's own library first (its stages run HEAD's code, not a working tree's edits); MLflow runs go to this
    # project's store, where `make ui` looks, under their own experiment.
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (str(d / "src"), os.environ.get("PYTHONPATH", "")) if x)
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{project / 'mlflow.db'}")
    os.environ.setdefault("PRMLAB_EXPERIMENT", EXPERIMENT)
    from flows.pipeline import interrupt_on_sigterm, pipeline

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
