"""Prefect flow: run the DVC stages one after another as tasks, under one parent MLflow run.

    python -m flows.pipeline                      # whole study, in this repo
    python -m flows.pipeline --stages sample label_mc

Each task runs `dvc repro <stage>` (one at a time: DVC locks the repo), with a Prefect retry on
failure (not on bad input, a stage's exit code 2: the same input fails again) and the stage's output streamed to
the Prefect log, its error line at ERROR. A flow stopped by a stage publishes the `prmlab-study` artifact naming
that stage and its error line. A flow killed (SIGTERM, as `kill` or a scheduler sends; or Ctrl-C) stops its stage's
processes and ends as Crashed in Prefect and KILLED in MLflow, never left "Running". The flow opens a parent MLflow run and
passes its id to the stages through PRMLAB_PARENT_RUN_ID, so every stage run is its child. A task
logs what its stage did (the upstream stages' "didn't change" lines are counted, not repeated); the
flow ends by publishing a Prefect markdown artifact (key `prmlab-study`): the findings' verdicts, the
headline and links to the MLflow runs. Without PREFECT_API_URL, Prefect starts a temporary local
server for the flow (5-10 s).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from prefect import flow, get_run_logger, task  # flows/__init__.py set Prefect's environment first

from flows import venv_env, venv_tool
from prmlab.params import STAGES, ProfileConfig, load_params, read_params
from prmlab.report.seeds import glance, glance_lines


def profile_stages(project_dir: str | Path = ".") -> list[str]:
    """The stage groups the project's params.yaml profile has, in order."""
    path = Path(project_dir) / "params.yaml"
    profile = load_params("profile", ProfileConfig, path)
    human = bool(read_params(path).get("human_labels"))
    # human_data exists only where params human_labels names a file
    return [s for s in STAGES if profile.has(s) and (s != "human_data" or human)]


class StageInputError(RuntimeError):
    """A stage stopped on bad input (its exit code 2, prmlab.stage's one-line error): the same input fails again, so
    the task is not retried (issue #56: a deterministic config error was retried)."""


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
    env = venv_env(Path(project_dir) / "params.yaml")
    if parent_run_id:
        env["PRMLAB_PARENT_RUN_ID"] = parent_run_id
    # Its own process group, so an interrupted flow stops dvc and the stage's python together (killpg below).
    proc = subprocess.Popen([venv_tool("dvc"), "repro", stage], cwd=project_dir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    tail: list[str] = []
    upstream = 0
    try:
        for line in proc.stdout:  # stream, so long stages show their progress lines in Prefect
            line = line.rstrip()
            skipped = UNCHANGED.match(line)
            if skipped and skipped.group(1).split("@")[0] != stage.split("@")[0]:
                upstream += 1  # an earlier task's stage, checked again by `dvc repro`: counted, not repeated
            elif line:
                log.info(line)
                tail = (tail + [line])[-20:]
    except BaseException:  # interrupted (KeyboardInterrupt from Ctrl-C or our SIGTERM handler): stop the stage too
        stop_group(proc)
        raise
    if proc.wait() != 0:
        error = stage_error(tail)
        log.error(f"dvc repro {stage} failed (exit {proc.returncode}): {error}")
        bad_input = any(re.search(r"exited with 2\b", ln) for ln in tail)
        raise (StageInputError if bad_input else RuntimeError)(
            f"dvc repro {stage} failed (exit {proc.returncode}):\n" + "\n".join(tail))
    if upstream:
        log.info(f"({upstream} upstream stages up to date)")
    return stage


def group_alive(pgid: int) -> bool:
    """Whether a process of group pgid still runs. Zombies do not count: where PID 1 does not reap orphans (this
    project's containers) a stage's python killed after dvc stays a zombie, dead but visible to killpg(pgid, 0)."""
    proc = Path("/proc")
    if not proc.is_dir():  # not Linux: killpg's probe, zombies included
        try:
            os.killpg(pgid, 0)
            return True
        except ProcessLookupError:
            return False
    for stat in proc.glob("[0-9]*/stat"):
        try:
            state, _ppid, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except OSError:  # it ended while we looked
            continue
        if int(pgrp) == pgid and state != "Z":
            return True
    return False


def stop_group(proc: subprocess.Popen, grace_s: float = 20) -> None:
    """SIGTERM a stage's process group (dvc and the stage it runs), SIGKILL what is left after grace_s. Waits for the
    whole group, not dvc alone: a stage that handles SIGTERM (or outlives dvc by a moment) must not be left running."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not group_alive(proc.pid):
            break
    try:
        proc.wait(timeout=5)  # reap dvc
    except subprocess.TimeoutExpired:
        pass


def interrupt_on_sigterm() -> None:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does: Prefect then ends the flow run Crashed ("aborted by an
    interrupt signal") where a plain SIGTERM left it "Running" for good (issue #56), and the stage is stopped."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, handler)


UNCHANGED = re.compile(r"^Stage '([^']+)' didn't change, skipping$")


def stage_error(lines: list[str]) -> str:
    """The stage's own last line before DVC's "ERROR: failed to reproduce ..." (which wraps over lines): its one-line
    error where it stopped on bad input, else the end of its traceback."""
    end = next((i for i, ln in enumerate(lines) if ln.startswith("ERROR: failed to reproduce")), len(lines))
    return lines[end - 1] if end else (lines[-1] if lines else "")


def study_artifact(project: Path, links: dict[str, str]) -> str:
    """The Prefect artifact's markdown: each finding's verdict (`prmlab.report.seeds.glance_lines`: across seeds where
    the report found this study's, then one seed's), the headline numbers, the MLflow runs."""
    lines = ["# prmlab study", ""]
    findings = project / "reports" / "findings.json"
    if findings.exists():
        got = json.loads(findings.read_text())
        # the report's glance: verdict first, the claim short, across seeds where this run's study has them
        lines += glance_lines(got.get("glance") or glance(got.get("findings", []), None))
    headline = project / "reports" / "headline.json"
    if headline.exists():
        flat, board = {}, []
        for k, v in json.loads(headline.read_text()).items():
            if k == "leaderboard":
                board = v
            else:
                flat.update({f"{k}.{kk}": vv for kk, vv in v.items()} if isinstance(v, dict) else {k: v})
        lines += leaderboard_table(board)
        lines += ["| headline | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in flat.items()] + [""]
    lines += ["MLflow runs (`make ui` serves them):", ""] + [f"- [{name}]({url})" for name, url in links.items()]
    return "\n".join(lines) + "\n"


def leaderboard_table(board: list[dict]) -> list[str]:
    """The headline's leaderboard (prmlab.report.study.leaderboard's rows) as a Markdown table: ProcessBench F1 first,
    then step AUC, Best-of-N (product aggregation) and min-on-final-step, each with its 95% interval where it has one."""
    if not board:
        return []

    def cell(v, ci=None) -> str:
        if v is None:
            return ""
        return f"{v} [{ci[0]}, {ci[1]}]" if ci else f"{v}"

    out = ["| PRM | kind | ProcessBench F1 [95% CI] | step AUC | BoN product [95% CI] | min on final step % |",
           "|---|---|---|---|---|---|"]
    for r in board:
        bon = (r.get("bon") or {}).get("product") or [None]
        out.append(f"| {r['name']} | {r.get('kind', '')} | {cell(r.get('processbench_f1'), r.get('processbench_f1_ci'))} "
                   f"| {cell(r.get('step_auc'))} | {cell(bon[0], bon[1:] if len(bon) == 3 else None)} "
                   f"| {cell(r.get('min_on_final_step'), r.get('min_on_final_step_ci'))} |")
    return out + [""]


@flow(name="prmlab-pipeline", log_prints=True)
def pipeline(project_dir: str = ".", stages: list[str] | None = None) -> list[str]:
    """Run the study's stages in order; every stage's MLflow run nests under this flow's run."""
    import mlflow

    from prmlab.provenance import git_commit, tracking_uri, ui_url
    from prmlab.tracking import ensure_experiment

    ui_url()  # the study's run links' base, refused before any stage runs
    project = Path(project_dir).resolve()
    known = profile_stages(project)
    stages = stages or known
    unknown = [s for s in stages if s.split("@")[0] not in known]
    if unknown:
        raise ValueError(f"unknown stage(s) {unknown} for this profile; known: {known}")
    # The SQLite store is relative to the project, as the stages see it.
    uri = tracking_uri()
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        uri = f"sqlite:///{project / uri[len('sqlite:///'):]}"
    os.environ["MLFLOW_TRACKING_URI"] = uri  # absolute now, so the stages and this process share one store
    mlflow.set_tracking_uri(uri)
    ensure_experiment(mlflow, os.environ.get("PRMLAB_EXPERIMENT", "prmlab"))
    done = []
    commit = git_commit()
    from prefect.artifacts import create_markdown_artifact

    with mlflow.start_run(run_name="pipeline", tags={"prmlab.stage": "pipeline", "git_commit": commit,
                                                     "mlflow.source.git.commit": commit}) as run:
        mlflow.log_param("stages", ",".join(stages))
        for s in stages:
            try:
                done.append(repro_stage(s, str(project), run.info.run_id))
            except Exception as e:  # the study's artifact says which stage stopped it, and why, before the flow fails
                why = stage_error(str(e).splitlines()[1:])  # the message's first line is ours: "dvc repro ... failed"
                create_markdown_artifact(
                    f"# prmlab study: stopped at stage {s}\n\n"
                    + (f"Done before it: {', '.join(done)}.\n\n" if done else "")
                    + f"`{why}`\n\n{'Bad input: fix it and rerun (not retried).' if isinstance(e, StageInputError) else ''}\n",
                    key="prmlab-study", description=f"the study stopped at stage {s}")
                raise
            except BaseException:  # killed (Ctrl-C, SIGTERM): the stage runs left open and this one end KILLED
                end_killed(mlflow.MlflowClient(), run.info)
                mlflow.end_run("KILLED")  # before the `with` ends it FAILED
                raise
    # Every stage up to date: no stage opened a run, and an empty parent would only clutter the UI.
    client = mlflow.MlflowClient()
    kids = client.search_runs([run.info.experiment_id], f"tags.mlflow.parentRunId = '{run.info.run_id}'")
    url = f"{ui_url()}/#/experiments/{run.info.experiment_id}/runs/"
    links = {} if not kids else {"pipeline (this flow run)": url + run.info.run_id,
                                 **{k.info.run_name: url + k.info.run_id for k in sorted(kids, key=lambda k: k.info.start_time)}}
    if not kids:
        client.delete_run(run.info.run_id)
        print("every stage was up to date: nothing ran, no MLflow run kept")
    create_markdown_artifact(study_artifact(project, links), key="prmlab-study",
                             description="the study's verdicts, headline and MLflow runs")
    return done


def end_killed(client, parent) -> None:
    """Mark the flow's MLflow runs of stages still RUNNING (a stage killed mid-run cannot end its own) as KILLED."""
    for r in client.search_runs([parent.experiment_id], f"tags.mlflow.parentRunId = '{parent.run_id}' "
                                                        "and attributes.status = 'RUNNING'"):
        client.set_terminated(r.info.run_id, "KILLED")


def main() -> None:
    interrupt_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project-dir", default=".")
    ap.add_argument("--stages", nargs="*", default=None)
    a = ap.parse_args()
    pipeline(project_dir=a.project_dir, stages=a.stages)


if __name__ == "__main__":
    main()
