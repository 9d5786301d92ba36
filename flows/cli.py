"""`prmlab`: the few commands a researcher types, thin over the stages and flows (no second implementation).

    prmlab run [--stages sample label_mc ...]       # the study: the Prefect flow over `dvc repro` (as make repro)
    prmlab eval PRM [PRM ...] [--layout L] [--reference M] [--name NAME] [--only processbench|bon|prmbench] [--out DIR]
                                                    # PRM folders or hub names, any layout of the paper's Table 7
                                                    # (prmlab.layouts), on ProcessBench and Best-of-N (and PRMBench
                                                    # with --only prmbench), outside the DVC graph, with this
                                                    # project's items and params
    prmlab score --benchmark processbench|prmbench FILE [--threshold T | --threshold-subset S] [--data PATH]
                                                    # the official metrics of per-step scores any tool wrote
                                                    # (prmlab.scorefile), one JSON object on stdout, in points
    prmlab metrics                                  # the headline numbers (reports/headline.json)
    prmlab ui [--port 5000] [--workers 1]            # MLflow's UI on the study's store, with links that open its runs

`ui` writes two shared views into the experiment (MLflow's `mlflow.sharedViewState.<key>` experiment
tags, what the UI's "Share" button writes): `study` (every run, the study's key metrics as columns) and
`prms` (the runs that trained a PRM, the ceiling's included, ranked by held-out ProcessBench F1, their
evaluation results as columns, rounded as the report shows them: the report logs them onto each PRM's run). MLflow 3.17 opens a bare experiment link on its GenAI
overview whatever `mlflow.experimentKind` says; the printed links open the runs table.

`eval` runs stages.eval_processbench and stages.eval_bon for each PRM on the graph's evaluation inputs
(data/processbench/items.jsonl; data/problems/eval.jsonl and data/eval_samples/eval.jsonl), with a
copy of params.yaml that drops the critic and the reference PRMs; writes DIR/NAME/{processbench,bon}.json
plus per-item scores, and DIR/table.{md,json} (prmlab.report.tables): ProcessBench like Table 7 (the paper's number beside a
known checkpoint) and Best-of-N like Table 6, with Fig. 8's min-on-final-step share. One MLflow run per
PRM, the stages' runs nested under it (default DIR: runs/eval-NAME, or runs/eval for several). Missing inputs are named with the `dvc repro`
target that makes them, before any model loads. `--only prmbench` runs stages.eval_prmbench on the PRMBench
folder params `eval_prmbench.data` names (DIR/NAME/prmbench.json; its table sets PRMBench's harness row beside a known
checkpoint).

`score` reads a JSONL of `{"id": ..., "step_scores": [...]}` rows (ids as the benchmark's: ProcessBench's `id`,
PRMBench's `<classification>_<idx>`) and prints the benchmark's official numbers as one JSON object: ProcessBench
per subset and `f1_avg` at the threshold tuned on --threshold-subset (default: gsm8k on the real benchmark, params
`eval_processbench.threshold_subset` on the toy's) unless --threshold is given, the items from --data (a folder of
`<subset>.json` or an items JSONL; default the real ProcessBench in ../shared/data/processbench where it is, else the
toy study's data/processbench/items.jsonl); PRMBench `prmscore` overall, per class and per category at the harness's
0.5, the items from --data (default params `eval_prmbench.data`). Numbers keep full precision. Bad rows end in one line naming the file, line and field.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from flows import venv_tool

INPUTS = {"processbench": [("data/processbench/items.jsonl", "build_processbench@toy or inputs@real")],
          "bon": [("data/problems/eval.jsonl", "problems@toy or inputs@real"),
                  ("data/eval_samples/eval.jsonl", "sample_eval")],
          "prmbench": []}  # its folder is params' eval_prmbench.data, checked in `evaluate`


def _stage(module: str, args: list[str], env: dict) -> None:
    p = subprocess.run([sys.executable, "-m", f"stages.{module}", *args], env=env)
    if p.returncode != 0:
        sys.exit(p.returncode)


def _run_stages(which: list[str], name: str, spec_args: list[str], out: Path, params: str, env: dict) -> None:
    from prmlab.credentials import stage_env

    env = stage_env(params, env)  # the secrets the eval stages' own work sends, no other
    if "processbench" in which:
        _stage("eval_processbench", ["--items", "data/processbench/items.jsonl", *spec_args, "--metrics", str(out / "processbench.json"),
                                     "--scores", str(out / "processbench_scores.jsonl"), "--params", params], env)
    if "bon" in which:
        _stage("eval_bon", ["--problems", "data/problems/eval.jsonl", "--samples", "data/eval_samples/eval.jsonl", *spec_args,
                            "--metrics", str(out / "bon.json"), "--scores", str(out / "bon_scores.jsonl"), "--params", params], env)
    if "prmbench" in which:
        _stage("eval_prmbench", [*spec_args, "--metrics", str(out / "prmbench.json"), "--scores", str(out / "prmbench_scores.jsonl"),
                                 "--params", params], env)


def mark_adhoc(client, parent, name: str) -> None:
    """The eval stages' runs under an ad-hoc parent: renamed `adhoc <stage> <name>`, their `prmlab.stage`
    tag removed (kept as `prmlab.adhoc`), so no report takes them for the pipeline's own stage runs."""
    for r in client.search_runs([parent.experiment_id], f"tags.mlflow.parentRunId = '{parent.run_id}'"):
        stage = r.data.tags.get("prmlab.stage")
        if stage:
            client.delete_tag(r.info.run_id, "prmlab.stage")
            client.set_tag(r.info.run_id, "prmlab.adhoc", stage)
            client.update_run(r.info.run_id, name=f"adhoc {r.info.run_name} {name}")


def evaluate(models: list[str], names: list[str], layout: str | None, reference: str | None, only: str | None,
             out: Path, params: Path, sampling: dict | None = None) -> list[dict]:
    """Each model on ProcessBench and Best-of-N through the eval stages, one MLflow run per model
    (the stages' runs nested under it); writes out/<name>/ and out/table.{md,json}. `sampling`: a generative
    layout's votes and temperature (prmlab.generative.VerifierConfig), passed as the model's `reference_prms` entry."""
    import mlflow
    import yaml

    from prmlab.io import atomic_write_text, write_json
    from prmlab.provenance import tracking_uri
    from prmlab.report.tables import markdown_table, table_row
    from prmlab.tracking import ensure_experiment

    which = [only] if only else ["processbench", "bon"]
    missing = [f"{path} (make it with `dvc repro {target}`)" for w in which for path, target in INPUTS[w] if not Path(path).exists()]
    if missing:
        sys.exit(f"prmlab eval: missing input(s): {'; '.join(missing)}")
    cfg = yaml.safe_load(params.read_text())
    if "prmbench" in which and not Path((cfg.get("eval_prmbench") or {}).get("data", "")).is_dir():
        sys.exit(f"prmlab eval: PRMBench folder {(cfg.get('eval_prmbench') or {}).get('data')!r} not found "
                 f"(params eval_prmbench.data in {params}; see ../shared/data/README.md)")
    sections = [s for s in ("eval_processbench", "eval_bon", "eval_prmbench") if s in cfg]
    cfg["eval_processbench"] = {**cfg["eval_processbench"], "critic": False}

    def params_file(entries: dict) -> str:
        """A params file for this evaluation: the eval sections' reference_prms replaced by `entries`."""
        for s in sections:
            cfg[s] = {**cfg[s], "reference_prms": entries}
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=out, delete=False) as f:
            yaml.safe_dump(cfg, f, sort_keys=False)
        return f.name

    out.mkdir(parents=True, exist_ok=True)
    files = [params_file({})]
    rows = []
    mlflow.set_tracking_uri(tracking_uri())
    ensure_experiment(mlflow, os.environ.get("PRMLAB_EXPERIMENT", "prmlab"))
    try:
        for model, name in zip(models, names):
            spec = ["--prm", f"{name}={model}"] + (["--layout", f"{name}={layout}"] if layout else []) \
                + (["--reference", f"{name}={reference}"] if reference else [])
            run_params = files[0]
            if sampling:  # a generative verifier's sampling lives in its reference_prms entry, not in a flag
                spec, run_params = [], params_file({name: {"model": model, "layout": layout, **sampling}})
                files.append(run_params)
            # Ad hoc, never a stage's run: no `prmlab.stage` tag (the report's provenance reads the latest
            # finished run of each stage by that tag and name), so the children are retagged as they end.
            with mlflow.start_run(run_name=f"adhoc eval {name}", tags={"prmlab.adhoc": "prmlab eval", "prmlab.model": model}) as run:
                mlflow.log_params({"model": model, "layout": layout or "auto", "reference": reference or "-", **(sampling or {})})
                _run_stages(which, name, spec, out / name, run_params, {**os.environ, "PRMLAB_PARENT_RUN_ID": run.info.run_id})
                mark_adhoc(mlflow.MlflowClient(), run.info, name)
                row = table_row(name, model, out / name, which)
                mlflow.log_metrics({k: v for k, v in row.items() if isinstance(v, float)})
            rows.append(row)
    finally:
        for f in files:
            os.unlink(f)
    write_json(out / "table.json", rows)
    atomic_write_text(out / "table.md", markdown_table(rows))
    print(markdown_table(rows))
    print(f"prmlab eval: results in {out}/ (table.md, table.json, one folder per model)")
    return rows


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
    view lists the study's PRMs once each, not every train_prm run ever made (issue #56). Returns the counts."""
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
    import mlflow

    from prmlab.provenance import tracking_uri
    from prmlab.tracking import ensure_experiment

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


def port(text: str) -> int:
    """argparse type: a TCP port (1-65535), refused before anything starts (70000 had given a traceback, exit 0)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"{n} is not a TCP port (1-65535)")
    return n


def positive(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1")
    return n


def ui(host: str, port: int, workers: int = 1) -> None:
    from prmlab.params import ParamsError
    from prmlab.provenance import tracking_uri
    from prmlab.tracking import check_store

    try:  # the store answers, as MLflow's, within its bound (a refusing one had cost 249 s of retries and a traceback)
        check_store()
    except ParamsError as e:
        print(f"prmlab ui: {e}", file=sys.stderr)
        sys.exit(2)
    links = ui_links(host, port)
    print("prmlab ui: open the study's runs at\n  " + "\n  ".join(f"{k}: {u}" for k, u in links.items()), flush=True)
    os.execv(mlflow := venv_tool("mlflow"), [mlflow, "ui", "--backend-store-uri", tracking_uri(), "--host", host,
                                             "--port", str(port), "--workers", str(workers)])


def show_metrics(path: Path) -> None:
    if not path.exists():
        sys.exit(f"prmlab metrics: {path} not found (run the study: `prmlab run` or `dvc repro`)")

    def rows(d: dict, prefix: str = ""):
        for k, v in d.items():
            yield from rows(v, f"{prefix}{k}.") if isinstance(v, dict) else [(f"{prefix}{k}", v)]

    try:
        data = json.loads(path.read_text())
    except ValueError as e:  # truncated, empty or not UTF-8: one line naming the file (issue #52)
        sys.exit(f"prmlab metrics: {path} is not valid JSON ({e}); rerun the stage that writes it (`dvc repro`)")
    board = data.pop("leaderboard", []) if isinstance(data, dict) else []
    if board:  # the PRMs first, one line each (issue #56); the per-PRM dicts it covers are not repeated below
        for key in ("processbench_f1", "processbench_step_auc", "best_of_n", "min_on_final_step_share"):
            data.pop(key, None)
    items = list(rows(data)) if isinstance(data, dict) else []
    if not items and not board:
        sys.exit(f"prmlab metrics: {path} holds no metrics; rerun the stage that writes it (`dvc repro`)")
    if board:
        print(leaderboard_text(board) + "\n")
    width = max((len(k) for k, _ in items), default=0)
    for k, v in items:
        print(f"{k:<{width}}  {v}")


def leaderboard_text(board: list[dict]) -> str:
    """The headline's leaderboard as a fixed-width table (`prmlab metrics`), sorted as the report's."""
    from prmlab.report.markdown import ci, f3, with_ci

    head = ["PRM", "kind", "PB F1", "step AUC", "BoN min", "BoN product", "BoN last", "min on last %"]
    body = [[r["name"], r["kind"], with_ci(r["processbench_f1"], r.get("processbench_f1_ci")), f3(r["step_auc"]),
             *(ci(r["bon"].get(a)) for a in ("min", "product", "last")),
             with_ci(r["min_on_final_step"], r.get("min_on_final_step_ci"))] for r in board]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    return "\n".join("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in [head, *body])


# The real ProcessBench (Qwen/ProcessBench's <subset>.json) where the project's data sits beside the checkout.
REAL_PROCESSBENCH = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "processbench"


def score(benchmark: str, path: str, data: str | None, threshold: float | None, subset: str | None, params: Path) -> dict:
    """`prmlab score`: the library computes (prmlab.scorefile); this prints one JSON object, or one error line."""
    from prmlab.io import DataError
    from prmlab.params import ParamsError, read_params
    from prmlab.scorefile import score_file

    try:
        cfg = read_params(params) if params.exists() else {}
        if data is None and benchmark == "processbench":  # the real benchmark first, else the toy study's build
            found = [p for p in (REAL_PROCESSBENCH, Path("data/processbench/items.jsonl")) if p.exists()]
            if not found:
                raise DataError(f"no ProcessBench items at {REAL_PROCESSBENCH} or data/processbench/items.jsonl: "
                                "pass --data (a folder of <subset>.json or an items JSONL)")
            data = str(found[0])
        elif data is None:
            data = (cfg.get("eval_prmbench") or {}).get("data", "../shared/data/prmbench")
        # the real benchmark's threshold subset is gsm8k (the paper's); the toy's is its params' (toy_tune)
        real = Path(data).is_dir()
        subset = subset or ("gsm8k" if real else (cfg.get("eval_processbench") or {}).get("threshold_subset", "gsm8k"))
        res = score_file(benchmark, path, data, threshold, subset)
    except (DataError, ParamsError) as e:
        sys.exit(f"prmlab score: {e}")
    print(json.dumps(res))
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="prmlab", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the study (Prefect flow over dvc repro)")
    r.add_argument("--stages", nargs="*", default=None, help="stage groups, e.g. sample label_mc (default: all)")
    r.add_argument("--project-dir", default=".")
    e = sub.add_parser("eval", help="evaluate PRM folders or hub names on ProcessBench and/or Best-of-N")
    e.add_argument("prm", nargs="+", help="PRM checkpoint folders or hub names (e.g. Qwen/Qwen2.5-Math-PRM-7B)")
    e.add_argument("--name", default=None, help="its name in the results, for one PRM (default: the folder's or model's name)")
    e.add_argument("--layout", default=None, help="the PRMs' layout (prmlab.layouts: qwen, math_shepherd, rlhflow, skywork, "
                                                  "orm, eurus; generative verifiers, prmlab.generative: genprm, rprm, "
                                                  "thinkprm, toy_judge, one vote per step with the family's sampling "
                                                  "unless --votes/--temperature say otherwise); default: read from each checkpoint)")
    e.add_argument("--reference", default=None, help="layout eurus: the reference model (default Qwen/Qwen2.5-Math-7B-Instruct)")
    e.add_argument("--votes", type=int, default=None, help="a generative --layout: sampled replies per step (maj@k; a "
                                                           "step's score is the share calling it correct; default 1)")
    e.add_argument("--temperature", type=float, default=None,
                   help="a generative --layout: sampling temperature (default: the family's, from its inference code)")
    e.add_argument("--only", choices=["processbench", "bon", "prmbench"], default=None,
                   help="one benchmark (default: processbench and bon; prmbench only when named)")
    e.add_argument("--out", default=None, help="results folder (default runs/eval-NAME, or runs/eval for several PRMs)")
    e.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"))
    s = sub.add_parser("score", help="official ProcessBench / PRMBench metrics of per-step scores from any tool")
    s.add_argument("file", help='JSONL: one {"id": ..., "step_scores": [...]} row per item')
    s.add_argument("--benchmark", choices=["processbench", "prmbench"], required=True)
    s.add_argument("--threshold", type=float, default=None,
                   help="ProcessBench: default tuned on --threshold-subset; PRMBench: default 0.5 (the harness's)")
    s.add_argument("--threshold-subset", default=None,
                   help="ProcessBench: the subset the threshold is tuned on (default: params eval_processbench.threshold_subset)")
    s.add_argument("--data", default=None, help="the benchmark's items (default: ProcessBench from ../shared/data/processbench, "
                                                "else the toy study's data/processbench/items.jsonl; PRMBench from params "
                                                "eval_prmbench.data)")
    s.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"))
    u = sub.add_parser("ui", help="MLflow's UI on the study's store; prints links that open its runs table")
    u.add_argument("--host", default="127.0.0.1")
    u.add_argument("--port", type=port, default=5000)
    u.add_argument("--workers", type=positive, default=1, help="the server's worker processes (MLflow's default 4; one serves one "
                                                           "person, with fewer processes and a faster start on a laptop)")
    m = sub.add_parser("metrics", help="print the headline numbers")
    m.add_argument("--file", default="reports/headline.json")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        from flows.pipeline import interrupt_on_sigterm, pipeline

        interrupt_on_sigterm()
        pipeline(project_dir=a.project_dir, stages=a.stages)
    elif a.cmd == "eval":
        if a.name and len(a.prm) > 1:
            sys.exit("prmlab eval: --name names one PRM; several get their folder's or model's name")
        names = [a.name] if a.name else [Path(p.rstrip("/")).name for p in a.prm]
        from prmlab.layouts import check_prm_name
        from prmlab.params import ParamsError

        try:
            for n in names:
                check_prm_name("--name" if a.name else f"the name of {n}", n)
        except ParamsError as err:
            sys.exit(f"prmlab eval: {err}")
        if len(set(names)) < len(names):
            sys.exit(f"prmlab eval: two PRMs share a name ({names}); evaluate them apart with --name")
        out = Path(a.out or (f"runs/eval-{names[0]}" if len(names) == 1 else "runs/eval"))
        sampling = {k: v for k, v in (("votes", a.votes), ("temperature", a.temperature)) if v is not None}
        if sampling:  # checked before any model loads: one line naming the flag
            from prmlab.generative import GENERATIVE, VerifierConfig

            if a.layout not in GENERATIVE:
                sys.exit(f"prmlab eval: --votes and --temperature are for a generative --layout ({', '.join(GENERATIVE)}); "
                         f"got --layout {a.layout}")
            try:
                VerifierConfig(**sampling)
            except ParamsError as err:
                sys.exit(f"prmlab eval: --votes/--temperature: {err}")
        evaluate(a.prm, names, a.layout, a.reference, a.only, out, Path(a.params), sampling)
    elif a.cmd == "score":
        score(a.benchmark, a.file, a.data, a.threshold, a.threshold_subset, Path(a.params))
    elif a.cmd == "ui":
        ui(a.host, a.port, a.workers)
    else:
        show_metrics(Path(a.file))


if __name__ == "__main__":
    main()
