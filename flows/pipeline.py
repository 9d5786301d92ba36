"""Prefect flow: run the DVC stages one after another as tasks, under one parent MLflow run.

    python -m flows.pipeline                      # whole study, in this repo
    python -m flows.pipeline --stages sample label_mc

Each task runs `dvc repro <stage>` (DVC locks the repo: one at a time), streams its output to the Prefect log and
retries once, but not on bad input (a stage's exit code 2: the same input fails again). Every stage run is a child
of the flow's MLflow run (PRMLAB_PARENT_RUN_ID). A flow stopped by a stage, or killed (SIGTERM or Ctrl-C: its stage's
processes stopped, Crashed in Prefect and KILLED in MLflow), says so; a finished one publishes the `prmlab-study`
markdown artifact (prmlab.report.dashboards). Without PREFECT_API_URL, Prefect starts a temporary local server (5-10 s).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
from pathlib import Path

from prefect import flow, get_run_logger, task  # flows/__init__.py set Prefect's environment first
from prefect.artifacts import create_markdown_artifact

from prmlab.core.provenance import git_commit, ui_url
from prmlab.core.tracking import ensure_experiment
from prmlab.report import dashboards
from prmlab.runs import processes
from prmlab.runs.store import profile_stages


class StageInputError(RuntimeError):
    """A stage stopped on bad input (its exit code 2, prmlab.core.stage's one-line error): the same input fails again, so
    the task is not retried (a retry of a config error only fails again, later)."""


def retriable(task, task_run, state) -> bool:
    """Prefect's retry condition: anything but a StageInputError (a crash, a killed process, a full disk) is retried."""
    try:
        state.result()
    except StageInputError:
        return False
    except Exception:
        return True
    return True


@task(retries=1, retry_delay_seconds=5, retry_condition_fn=retriable, task_run_name="dvc repro {stage}")
def repro_stage(stage: str, project_dir: str, parent_run_id: str | None) -> str:
    log = get_run_logger()
    env = processes.venv_env(Path(project_dir) / "params.yaml")
    if parent_run_id:
        env["PRMLAB_PARENT_RUN_ID"] = parent_run_id
    # Its own process group, so an interrupted flow stops dvc and the stage's python together (killpg below).
    proc = subprocess.Popen([processes.venv_tool("dvc"), "repro", stage], cwd=project_dir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    tail: list[str] = []
    upstream = 0
    try:
        for line in proc.stdout:  # stream, so long stages show their progress lines in Prefect
            line = line.rstrip()
            skipped = processes.UNCHANGED.match(line)
            if skipped and skipped.group(1).split("@")[0] != stage.split("@")[0]:
                upstream += 1  # an earlier task's stage, checked again by `dvc repro`: counted, not repeated
            elif line:
                log.info(line)
                tail = (tail + [line])[-20:]
    except BaseException:  # interrupted (KeyboardInterrupt from Ctrl-C or our SIGTERM handler): stop the stage too
        processes.stop_group(proc)
        raise
    if proc.wait() != 0:
        error = processes.stage_error(tail)
        log.error(f"dvc repro {stage} failed (exit {proc.returncode}): {error}")
        bad_input = any(re.search(r"exited with 2\b", ln) for ln in tail)
        raise (StageInputError if bad_input else RuntimeError)(
            f"dvc repro {stage} failed (exit {proc.returncode}):\n" + "\n".join(tail))
    if upstream:
        log.info(f"({upstream} upstream stages up to date)")
    return stage


@flow(name="prmlab-pipeline", log_prints=True)
def pipeline(project_dir: str = ".", stages: list[str] | None = None) -> list[str]:
    """Run the study's stages in order; every stage's MLflow run nests under this flow's run."""
    import mlflow  # its client only here: `python -m flows.serve --help` and the other entry points start without it

    ui_url()  # the study's run links' base, refused before any stage runs
    project = Path(project_dir).resolve()
    known = profile_stages(project)
    stages = stages or known
    unknown = [s for s in stages if s.split("@")[0] not in known]
    if unknown:
        raise ValueError(f"unknown stage(s) {unknown} for this profile; known: {known}")
    uri = dashboards.project_store(project)
    os.environ["MLFLOW_TRACKING_URI"] = uri  # absolute now, so the stages and this process share one store
    mlflow.set_tracking_uri(uri)
    ensure_experiment(mlflow, os.environ.get("PRMLAB_EXPERIMENT", "prmlab"))
    done = []
    commit = git_commit()
    with mlflow.start_run(run_name="pipeline", tags={"prmlab.stage": "pipeline", "git_commit": commit,
                                                     "mlflow.source.git.commit": commit}) as run:
        mlflow.log_param("stages", ",".join(stages))
        for s in stages:
            try:
                done.append(repro_stage(s, str(project), run.info.run_id))
            except Exception as e:  # the study's artifact says which stage stopped it, and why, before the flow fails
                why = processes.stage_error(str(e).splitlines()[1:])  # the message's first line is ours: "dvc repro ... failed"
                create_markdown_artifact(dashboards.stopped_artifact(s, done, why, isinstance(e, StageInputError)),
                                         key="prmlab-study", description=f"the study stopped at stage {s}")
                raise
            except BaseException:  # killed (Ctrl-C, SIGTERM): the stage runs left open and this one end KILLED
                dashboards.end_killed(mlflow.MlflowClient(), run.info)
                mlflow.end_run("KILLED")  # before the `with` ends it FAILED
                raise
    if not (links := dashboards.flow_run_links(mlflow.MlflowClient(), run.info, ui_url())):
        print("every stage was up to date: nothing ran, no MLflow run kept")
    create_markdown_artifact(dashboards.study_artifact(project, links), key="prmlab-study",
                             description="the study's verdicts, headline and MLflow runs")
    return done


def main() -> None:
    processes.interrupt_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project-dir", default=".")
    ap.add_argument("--stages", nargs="*", default=None)
    a = ap.parse_args()
    pipeline(project_dir=a.project_dir, stages=a.stages)


if __name__ == "__main__":
    main()
