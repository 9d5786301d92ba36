"""Views of the study outside its report: MLflow's shared views and run tags (`prmlab ui`), the ad hoc runs of
`prmlab eval`, the Prefect artifact that ends a study's flow, and the headline in a terminal (`prmlab metrics`).

What: MLflow 3.17 opens a bare experiment link on its GenAI overview whatever `mlflow.experimentKind` says, so
`ui_links` writes two shared views into each prmlab experiment (MLflow's `mlflow.sharedViewState.<key>` experiment
tags, what the UI's "Share" button writes), `study` (every run, the study's key metrics as columns) and `prms` (the
runs that trained a PRM, the ceiling's included, ranked by held-out ProcessBench F1), tags each stage's latest
finished run (`tag_latest`), and returns links that open the runs table. The rest formats files the study wrote.
Inputs: the MLflow store (prmlab.core.tracking.tracking_uri), reports/findings.json and reports/headline.json.
Outputs: experiment and run tags in the MLflow store; text (Markdown or fixed-width) for the caller to show.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from prmlab.core.io import DataError
from prmlab.core.provenance import tracking_uri
from prmlab.core.tracking import ensure_experiment
from prmlab.report.markdown import ci, f3, with_ci
from prmlab.report.seeds import glance, glance_lines, glance_text

# Columns of the shared views `prmlab ui` writes (MLflow's run-table keys: "metrics.`name`", "params.`name`").
# MLflow 3.17 orders the metric columns it shows by name, whatever the order here: three of them keep held-out F1 on
# the first screen beside Best-of-N (eval.bon_product, eval.processbench_heldout_f1, ..._step_auc); with six, F1 was the
# fifth and off-screen. Each PRM's run page holds every other figure the report logs onto it.
PRM_COLUMNS = ["metrics.`eval.processbench_heldout_f1`", "metrics.`eval.processbench_heldout_step_auc`",
               "metrics.`eval.bon_product`", "params.`source`", "params.`train_prm.steps`"]
# The study view leads with the label stage's figure: MLflow renders only the columns in view (at 1,500 px with its
# assistant panel open, about four metric columns), and the PRMs' own figures lead the prms view.
STUDY_COLUMNS = ["metrics.`consensus_kept_share`"] + PRM_COLUMNS[:3] + ["metrics.`examples`", "metrics.`seconds`",
                                   "params.`source`", "params.`sample.n`", "params.`label_mc.k`", "params.`train_prm.steps`"]
# The study view lists every run; MLflow folds a flow's stage runs under its `pipeline` run (a row to unfold,
# whatever the filter: neither a filter nor the shared state's `runsExpanded` unfolded them in 3.17).
VIEWS = {"study": {"selectedColumns": STUDY_COLUMNS, "orderByKey": "attributes.start_time", "orderByAsc": False},
         "prms": {"selectedColumns": PRM_COLUMNS,
                  "searchFilter": "tags.`prmlab.prm` = 'yes' AND tags.`prmlab.latest` = 'yes'",
                  "orderByKey": "metrics.`eval.processbench_heldout_f1`", "orderByAsc": False}}


LATEST = "prmlab.latest"  # tag: 'yes' on each stage's latest finished run (the study's), 'no' on the runs it superseded
PRM = "prmlab.prm"  # tag: 'yes' on the runs that train a PRM (train_prm@<source>, and the toy's ceiling), the prms view's rows


def trains_prm(run_name: str) -> bool:
    return run_name.startswith("train_prm@") or run_name.split("@")[0] == "ceiling"


def tag_latest(client, experiment_id: str) -> dict[str, int]:
    """Tag every stage run (tag `prmlab.stage`; ad hoc runs have none) `prmlab.latest` = 'yes' where it is its stage's
    latest finished run (the one the report reads) and 'no' where a later finished run superseded it, so the `prms`
    view lists the study's PRMs once each, not every train_prm run ever made (superseded and failed ones were rows of dashes). Returns the counts."""
    runs, token = [], None
    while True:
        page = client.search_runs([experiment_id], "attributes.status = 'FINISHED'", max_results=1000, page_token=token)
        runs += page
        if not (token := page.token):
            break
    latest: dict[str, object] = {}
    for r in sorted(runs, key=lambda r: r.info.start_time):
        if "prmlab.stage" in r.data.tags:
            latest[r.info.run_name] = r  # a later start wins
    counts = {"yes": 0, "no": 0}
    keep = {r.info.run_id for r in latest.values()}
    for r in runs:
        if "prmlab.stage" in r.data.tags:
            want = "yes" if r.info.run_id in keep else "no"
            counts[want] += 1
            if r.data.tags.get(LATEST) != want:
                client.set_tag(r.info.run_id, LATEST, want)
            if trains_prm(r.info.run_name) and r.data.tags.get(PRM) != "yes":
                client.set_tag(r.info.run_id, PRM, "yes")
    return counts


def ui_links(host: str, port: int) -> dict[str, str]:
    """Tag each stage's latest run, write the shared views into the study's experiment; return {view: URL that opens
    it}."""
    import mlflow  # only `prmlab ui` needs the client: the other views are plain text

    mlflow.set_tracking_uri(tracking_uri())
    name = os.environ.get("PRMLAB_EXPERIMENT", "prmlab")
    ensure_experiment(mlflow, name)
    client = mlflow.MlflowClient()
    # the study's experiment, and the demo's (flows.demo) or any other prmlab-* one the store holds
    exps = [mlflow.get_experiment_by_name(name)] + [e for e in client.search_experiments(filter_string="name LIKE 'prmlab-%'")
                                                    if e.name != name]
    links = {}
    for exp in exps:
        tag_latest(client, exp.experiment_id)
        for key, view in VIEWS.items():
            client.set_experiment_tag(exp.experiment_id, f"mlflow.sharedViewState.{key}", json.dumps(view))
            links[key if exp.name == name else f"{key} ({exp.name})"] = (
                f"http://{host}:{port}/#/experiments/{exp.experiment_id}/runs?viewStateShareKey={key}"
                "&workflowType=machine_learning")
    return links


def project_store(project: Path) -> str:
    """The tracking store's URI for a flow over `project`: a relative SQLite store made absolute in the project (as
    the stages, which run there, see it), so the stages and the flow's process share one store."""
    uri = tracking_uri()
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        uri = f"sqlite:///{project / uri[len('sqlite:///'):]}"
    return uri


def flow_run_links(client, parent, base_url: str) -> dict[str, str]:
    """{run name: URL} of a flow's MLflow run and its stage runs, in start order; {} and the parent run deleted where
    no stage opened a run (every stage up to date: an empty parent would only clutter the UI)."""
    kids = client.search_runs([parent.experiment_id], f"tags.mlflow.parentRunId = '{parent.run_id}'")
    if not kids:
        client.delete_run(parent.run_id)
        return {}
    url = f"{base_url}/#/experiments/{parent.experiment_id}/runs/"
    return {"pipeline (this flow run)": url + parent.run_id,
            **{k.info.run_name: url + k.info.run_id for k in sorted(kids, key=lambda k: k.info.start_time)}}


def end_killed(client, parent) -> None:
    """Mark the flow's MLflow runs of stages still RUNNING (a stage killed mid-run cannot end its own) as KILLED."""
    for r in client.search_runs([parent.experiment_id], f"tags.mlflow.parentRunId = '{parent.run_id}' "
                                                        "and attributes.status = 'RUNNING'"):
        client.set_terminated(r.info.run_id, "KILLED")


def stopped_artifact(stage: str, done: list[str], why: str, bad_input: bool) -> str:
    """The Prefect artifact's markdown when stage `stage` stopped the study: what ran before it, its error line."""
    return (f"# prmlab study: stopped at stage {stage}\n\n" + (f"Done before it: {', '.join(done)}.\n\n" if done else "")
            + f"`{why}`\n\n{'Bad input: fix it and rerun (not retried).' if bad_input else ''}\n")


def headline_text(path: Path) -> str:
    """`prmlab metrics`: the study's verdicts first (the report's glance in findings.json beside the headline file:
    across seeds where there are, `glance_text`), then the headline file's numbers as text (`metrics_text`); or a
    DataError naming the file to rebuild."""
    def read(f: Path):
        try:
            return json.loads(f.read_text())
        except ValueError as e:  # truncated, empty or not UTF-8: one line naming the file
            raise DataError(f"{f} is not valid JSON ({e}); rerun the stage that writes it (`dvc repro`)") from None

    if not path.exists():
        raise DataError(f"{path} not found (run the study: `prmlab run` or `dvc repro`)")
    if not (text := metrics_text(read(path))):
        raise DataError(f"{path} holds no metrics; rerun the stage that writes it (`dvc repro`)")
    got = read(found) if (found := path.parent / "findings.json").exists() else None
    g = got.get("glance") if isinstance(got, dict) else None
    return ("\n".join(glance_text(g)) + "\n\n" if g else "") + text


def metrics_text(data) -> str:
    """`prmlab metrics`: the headline's leaderboard first (`leaderboard_text`; the per-PRM dicts it covers are not
    repeated), then every other number, one `key  value` line each; "" where the file holds none."""
    def rows(d: dict, prefix: str = ""):
        for k, v in d.items():
            yield from rows(v, f"{prefix}{k}.") if isinstance(v, dict) else [(f"{prefix}{k}", v)]

    board = data.pop("leaderboard", []) if isinstance(data, dict) else []
    if board:  # the PRMs first, one line each
        for key in ("processbench_f1", "processbench_step_auc", "best_of_n", "min_on_final_step_share"):
            data.pop(key, None)
    items = list(rows(data)) if isinstance(data, dict) else []
    width = max((len(k) for k, _ in items), default=0)
    return "\n".join(([leaderboard_text(board) + "\n"] if board else []) + [f"{k:<{width}}  {v}" for k, v in items])


def leaderboard_text(board: list[dict]) -> str:
    """The headline's leaderboard as a fixed-width table (`prmlab metrics`), sorted as the report's."""
    head = ["PRM", "kind", "PB F1", "step AUC", "BoN min", "BoN product", "BoN last", "min on last %"]
    body = [[r["name"], r["kind"], with_ci(r["processbench_f1"], r.get("processbench_f1_ci")), f3(r["step_auc"]),
             *(ci(r["bon"].get(a)) for a in ("min", "product", "last")),
             with_ci(r["min_on_final_step"], r.get("min_on_final_step_ci"))] for r in board]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    return "\n".join("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in [head, *body])


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
