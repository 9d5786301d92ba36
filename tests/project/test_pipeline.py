"""End to end on a real DVC repo in a temp folder: the Prefect flow runs every stage (tiny params),
then DVC sees nothing to do, MLflow holds every stage's run under the flow's, and the report exists.
Also: real ProcessBench text, and a scheduled run on a real local Prefect server. The study runs once
(`ran`); a test that changes it (a commit, an experiment, a param, a rerun, MLflow runs) gets its own
copy (`study`), so what each test sees does not depend on the order they run in."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow

TINY = {
    # n_processbench x build_processbench.n responses: the barely trained tiny policy is right ~1 time in 13,
    # and the balanced ProcessBench needs a right and a wrong answer (16 x 2 once gave none: CI, stop 33).
    "toy": {"n_train": 8, "n_eval": 6, "n_processbench": 32},
    "toy_human": {"n": 12},
    "toy_models": {"corpus": 300, "vocab_size": 400, "base_steps": 300, "policy_steps": 20, "batch_size": 16,
                   "eval_problems": 8, "lr": 0.006,
                   "policy": {"hidden_size": 64, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1, "intermediate_size": 128}},
    "toy_judge": {"corpus": 150, "steps": 40, "batch_size": 16, "lr": 0.006, "max_tokens": 48},
    "sample": {"n": 3, "max_tokens": 80},
    "sample_eval": {"n": 4, "max_tokens": 80},
    "label_mc": {"k": 2, "max_tokens": 60, "shard_size": 8},
    "label_judge": {"max_tokens": 24},
    "train_prm": {"epochs": 1.0, "steps": 0, "batch_size": 8, "max_length": 512, "lr": 0.001},
    "build_processbench": {"n": 4, "max_items": 8, "max_tokens": 160},
    "ceiling": {"problems": 10, "n": 2, "steps": 4},
    "eval_processbench": {"critic_max_tokens": 24, "max_length": 1024},
    "eval_bon": {"max_length": 1024, "n": 4},  # N cannot exceed sample_eval.n
}


def run(cmd, cwd, env=None, check=True, timeout=900):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **(env or {})}
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def tiny_params(src: Path) -> dict:
    params = yaml.safe_load(src.read_text())
    for sec, over in TINY.items():
        for k, v in over.items():
            if isinstance(v, dict):
                params[sec][k] = {**params[sec].get(k, {}), **v}
            else:
                params[sec][k] = v
    return params


@pytest.fixture(scope="session")
def project(tmp_path_factory):
    from conftest import new_project

    d = new_project(tmp_path_factory.mktemp("project"), tiny_params(ROOT / "params.yaml"))
    run(["git", "add", "-A"], d)
    run(["git", "commit", "-qm", "init"], d)
    return d


@pytest.fixture(scope="session")
def ran(project):
    """The whole study through the Prefect flow (a Prefect test harness server), once per session."""
    from graph_audit import audit_env
    from prefect.testing.utilities import prefect_test_harness

    from flows.pipeline import pipeline, profile_stages

    audit = project.parent / f"{project.name}-audit"
    audit.mkdir()
    old = dict(os.environ)
    # Every stage process logs what it reads and imports (tests/audit/sitecustomize.py), for the graph check.
    os.environ.update(audit_env(audit, project, {"PATH": f"{BIN}{os.pathsep}{old['PATH']}",
                                                 "PYTHONPATH": old.get("PYTHONPATH", "")}))
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    try:
        with prefect_test_harness(server_startup_timeout=120):
            done = pipeline(project_dir=str(project))
            # what a researcher sees in Prefect's UI: the study artifact, and a task's log lines
            from prefect.artifacts import Artifact

            art = Artifact.get("prmlab-study")
            (project.parent / f"{project.name}-prefect-artifact.md").write_text(art.data if art else "")
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert done == profile_stages(project)
    return project


@pytest.fixture
def study(ran, tmp_path):
    """A copy of the finished study, this test's own (its MLflow store repoints itself at its own artifacts)."""
    return Path(shutil.copytree(ran, tmp_path / "study", symlinks=True))


def test_flow_ran_every_stage_and_wrote_the_report(ran):
    report = (ran / "reports" / "report.md").read_text()
    for heading in ("ProcessBench (like Table 7)", "Best-of-N (like Table 6)", "Findings", "Label quality"):
        assert heading in report
    assert len(list((ran / "reports" / "figures").glob("*.png"))) >= 3
    for src in ("mc_hard", "mc_soft", "judge", "consensus", "oracle"):
        assert (ran / "models" / "prm" / src / "model.safetensors").exists()
    pb = json.loads((ran / "metrics" / "eval_processbench.json").read_text())
    assert {"prm/oracle", "prm/consensus", "prm/oracle_ceiling", "critic/judge"} <= set(pb["models"])
    # The oracle's ceiling (ceiling@toy): its own draw of the train split extended, scored by both eval stages,
    # and each oracle PRM judged against the exact-label targets with its paired interval over maj@N.
    ceil = json.loads((ran / "metrics" / "ceiling.json").read_text())
    assert ceil["problems"] == 10 and ceil["optimizer_steps"] == 4 and 0 < ceil["distinct_responses"] <= ceil["examples"]
    bon = json.loads((ran / "metrics" / "eval_bon.json").read_text())
    assert set(bon["over_maj"]["oracle_ceiling"]) == {"product", "min", "last"}
    assert "### The PRMs trained on exact labels against issue #26's targets" in report and "| oracle_ceiling |" in report
    built = json.loads((ran / "metrics" / "build_processbench.json").read_text())
    assert built["items"] >= 2 and pb["items"].get("toy"), built  # the held-out subset the report headlines
    # Rollouts cut by a length limit are counted from the labels and shown in the report.
    mc = json.loads((ran / "metrics" / "label_mc.json").read_text())
    labels = [json.loads(x) for x in (ran / "data" / "labels" / "mc.jsonl").read_text().splitlines()]
    assert mc["truncated_rollouts"] == sum(x["truncated"] for x in labels)
    assert f"{mc['rollouts']} rollouts ({mc['truncated_rollouts']} cut by a length limit" in report


def test_report_html_renders_with_every_image_in_a_real_browser(ran):
    """reports/report.html in Chromium: the summary comes first, tables render as tables, and every figure
    loads (an image that failed has naturalWidth 0). Screenshot in test-artifacts/."""
    from browser import page, screenshot

    with page() as pg:
        pg.goto((ran / "reports" / "report.html").as_uri())
        heads = pg.eval_on_selector_all("h2", "hs => hs.map(h => h.textContent)")
        imgs = pg.eval_on_selector_all("img", "is => is.map(i => [i.getAttribute('src'), i.complete && i.naturalWidth])")
        tables = pg.eval_on_selector_all("table", "ts => ts.length")
        screenshot(pg, "report_html")
    assert heads[0] == "Summary" and "Findings in detail: the paper's claims and ours" in heads, heads
    assert len(imgs) >= 5 and all(w for _, w in imgs), imgs
    assert tables >= 5


def test_the_flow_publishes_the_study_as_a_prefect_artifact(ran):
    """The flow's Prefect artifact carries every finding's verdict, the headline and links to the MLflow
    runs (the stage runs under this flow's parent run); the experiment's MLflow description the same glance."""
    art = (ran.parent / f"{ran.name}-prefect-artifact.md").read_text()
    findings = json.loads((ran / "reports" / "findings.json").read_text())["findings"]
    # verdict first, the claim short (on screen at a glance); this project's reports/seeds.json is another study's: one seed
    from prmlab.analysis.findings import short
    from prmlab.report.seeds import MARKS

    assert findings and all(f"| {MARKS[f['verdict']]} | {short(f['id'], f['claim'])} |" in art for f in findings), art
    assert "**This run, one seed**" in art and art.isascii()
    from mlflow.tracking import MlflowClient

    note = MlflowClient(tracking_uri=f"sqlite:///{ran / 'mlflow.db'}").get_experiment_by_name("prmlab").tags.get("mlflow.note.content", "")
    assert "**This run, one seed**" in note and all(short(f["id"], f["claim"]) in note for f in findings), note
    assert "## PRM leaderboard" in note and "| oracle |" in note, note  # the PRMs ranked and rounded, in MLflow too
    # the report says where its MLflow links open: the store that made it, named relative to the project
    assert "(`sqlite:///mlflow.db`, not committed)" in (ran / "reports" / "report.md").read_text()
    assert "| policy_accuracy |" in art or "| processbench_f1." in art
    # the leaderboard as a table, a row per PRM, not a Python list in one cell
    assert "| PRM | kind | ProcessBench F1 [95% CI] |" in art and "| oracle | trained |" in art and "| leaderboard |" not in art, art
    assert re.search(r"- \[train_prm@oracle\]\(http://127\.0\.0\.1:5000/#/experiments/\d+/runs/[0-9a-f]{32}\)", art), art[-800:]


def test_every_stage_declares_what_it_reads_and_imports(ran):
    from graph_audit import undeclared

    models = {role: ran / "models" / role for role in ("policy", "judge")}
    assert undeclared(ran, ran.parent / f"{ran.name}-audit", models) == {}


def test_recording_writes_no_stage_output(ran):
    """The recorder (prmlab.core.tracking: MLflow runs, progress lines) is no DVC dependency, which holds only while it
    decides no output: in the whole audited study, no file under any stage's outputs, nor anywhere in the project but
    the tracking store, was written with a recorder frame on the stack; and the static closure leaves it out."""
    from graph_audit import recorder_writes
    from import_graph import RECORDERS

    audit = ran.parent / f"{ran.name}-audit"
    assert any(json.loads(f.read_text()).get("recorder_writes") for f in audit.glob("*.json")), \
        "no recorder write seen at all: is the audit hook watching the recorder?"  # MLflow's store is written from it
    assert recorder_writes(ran, audit) == {}
    deps = {d for spec in yaml.safe_load((ran / "dvc.yaml").read_text())["stages"].values() for d in spec.get("do", spec)["deps"]}
    assert not {r.relative_to(ROOT).as_posix() for r in RECORDERS} & deps


def test_dvc_second_repro_is_a_noop_and_metrics_show(study):
    out = run(["dvc", "repro"], study).stdout
    assert "Running stage" not in out, out
    st = run(["dvc", "status", "--json"], study).stdout
    assert json.loads(st) == {}
    metrics = json.loads(run(["dvc", "metrics", "show", "--json"], study).stdout)
    files = {f for ws in metrics.values() for f in ws.get("data", {})}
    assert files == {"reports/metrics.json"}, files  # a few numbers: a table a terminal can show
    table = run(["dvc", "metrics", "show"], study).stdout
    assert max(len(line) for line in table.splitlines()) <= 120 and "f1.mc_hard" in table, table
    detail = json.loads(run(["dvc", "metrics", "show", "--json", "metrics/eval_bon.json"], study).stdout)
    assert "results" in detail[""]["data"]["metrics/eval_bon.json"]["data"]  # a detailed file on request


def test_dvc_plots_render_from_the_reports_data(ran):
    """dvc.yaml's data-driven plots render, each with rows from the run (so `dvc plots diff` can overlay
    experiments); the Best-of-N curve has a row per N for maj, pass and every PRM."""
    shown = json.loads(run(["dvc", "plots", "show", "--json"], ran).stdout)["data"]
    vega = {k: v[0]["content"]["data"]["values"] for k, v in shown.items() if v and v[0]["type"] == "vega"}
    assert len(vega) == 6 and all(vega.values()), list(vega)
    # the seeds' forest plot: a row per estimate with its interval (the committed seeds' here, a clone's file)
    forest = vega["Findings across seeds (mean and 95% interval per estimate; reports/seeds.md)"]
    assert forest and all(r["lo"] <= r["mean"] <= r["hi"] for r in forest), forest[:2]
    curve = vega["Best-of-N accuracy against N (95% binomial intervals)"]
    methods = {r["method"] for r in curve}
    assert {"maj", "pass", "oracle", "mc_hard"} <= methods, methods
    bon = json.loads((ran / "metrics" / "eval_bon.json").read_text())
    assert [r["n"] for r in bon["by_n"]] == sorted({r["n"] for r in curve})
    assert all(r["lo"] <= r["accuracy"] <= r["hi"] for r in curve)
    # each PRM's within-problem AUC per aggregation, in [0, 1] (None only where no problem has both kinds)
    assert set(bon["within_problem_auc"]) == set(bon["results"]) - {"baselines"}
    assert all(v is None or 0 <= v <= 1 for by in bon["within_problem_auc"].values() for v in by.values())


def test_dvc_plots_page_draws_every_plot_offline_in_a_real_browser(ran, tmp_path):
    """`dvc plots show` writes a page that carries Vega itself (vendor/vega, .dvc/config's html_template):
    opened in Chromium with every network request refused, each plot draws (a canvas or SVG with marks,
    not an empty box), and the Best-of-N curve has one colour per method. Screenshot in test-artifacts/."""
    from browser import page, screenshot

    run(["dvc", "plots", "show", "-o", str(tmp_path / "dvc_plots")], ran)
    html = tmp_path / "dvc_plots" / "index.html"
    assert "cdn.jsdelivr" not in html.read_text()
    with page() as pg:
        refused = []
        pg.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                 else (refused.append(route.request.url), route.abort()))
        pg.goto(html.as_uri())
        pg.wait_for_function("document.querySelectorAll('.vega-embed').length >= 6", timeout=60_000)
        # vega-embed renders SVG or canvas; count each plot's drawn marks (paths, rects, symbols)
        drawn = pg.evaluate("""() => [...document.querySelectorAll('.vega-embed')].map(e => {
            const c = e.querySelector('canvas'); const s = e.querySelector('svg.marks');
            if (c) { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                     let ink = 0; for (let i = 3; i < d.length; i += 4) ink += d[i] > 0; return ink; }
            if (s) return s.querySelectorAll('path, rect, line').length;
            return 0; })""")
        screenshot(pg, "dvc_plots")
    assert len(drawn) >= 6 and all(n > 20 for n in drawn), drawn
    assert not refused, refused[:3]


def test_changing_a_param_reruns_only_what_depends_on_it(study):
    p = study / "params.yaml"
    params = yaml.safe_load(p.read_text())
    params["eval_bon"]["aggregations"] = ["product", "min"]
    p.write_text(yaml.safe_dump(params, sort_keys=False))
    out = run(["dvc", "repro", "--dry"], study).stdout
    assert "Running stage 'eval_bon'" in out
    for s in ("bootstrap", "sample", "label_mc", "train_prm@oracle", "eval_processbench"):
        assert f"Running stage '{s}'" not in out, out


def test_a_prompt_edit_changes_only_the_stages_that_read_that_prompt(study):
    """Rewording the critic prompt leaves the toy models (their tokenizer learns from a frozen corpus,
    not the prompts), sampling, MC labels and the PRMs up to date: only the stages that prompt the judge
    with it change (before, the toy tokenizer read every prompt and the whole study reran)."""
    def changed() -> set[str]:
        return set(json.loads(run(["dvc", "status", "--json"], study).stdout or "{}"))

    assert changed() == set()
    critic = study / "src" / "prmlab" / "prompts" / "critic.txt"
    critic.write_text(critic.read_text().replace("paragraph", "step"))
    # eval_bon too: it can score with a generative verifier, whose prompts live beside it
    assert changed() == {"train_judge@toy", "label_judge", "eval_processbench", "eval_bon"}
    policy = study / "src" / "prmlab" / "prompts" / "policy_system.txt"
    policy.write_text(policy.read_text() + " ")
    assert {"bootstrap@toy", "sample", "label_mc", "sample_eval"} <= changed()


def test_a_code_edit_reruns_only_the_stages_that_import_it(study):
    """Before: dvc.yaml listed each stage's imports by hand, generation.py for 16 of 19 stage groups, so an
    edit to an LLM backend reran stages that never call an LLM. The deps are now each stage's imports
    (tests/project/test_layers.py): an edit to generation.py changes the stages that generate, one to a report
    section the report alone."""
    def changed() -> set[str]:
        return set(json.loads(run(["dvc", "status", "--json"], study).stdout or "{}"))

    assert changed() == set()
    for rel, expected in (("src/prmlab/engines/generation.py", {"bootstrap@toy", "train_judge@toy", "sample", "label_mc",
                                                         "label_judge", "toy_human@toy", "ceiling@toy",
                                                         "build_processbench@toy", "sample_eval", "eval_processbench",
                                                         "eval_bon"}),  # eval_bon: a generative verifier generates
                          ("src/prmlab/report/study.py", {"report"})):
        f = study / rel
        before = f.read_text()
        f.write_text(before + "\n# an edit\n")
        assert changed() == expected, rel
        f.write_text(before)
    assert changed() == set()


def test_mlflow_logged_every_stage_under_the_flow_run(ran):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{ran / 'mlflow.db'}")
    exp = client.get_experiment_by_name("prmlab")
    runs = client.search_runs([exp.experiment_id], max_results=500)
    parent = [r for r in runs if r.data.tags.get("prmlab.stage") == "pipeline"]
    assert len(parent) == 1
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent[0].info.run_id]
    names = {r.info.run_name for r in children}
    expected = {"bootstrap", "train_judge", "sample", "label_mc", "label_judge", "consensus", "toy_human", "build_processbench",
                "sample_eval", "eval_processbench", "eval_bon", "analyze_bias", "report", "ceiling"} | {
        f"{stage}@{s}" for stage in ("prm_data", "train_prm")
        for s in ("mc_hard", "mc_soft", "judge", "consensus", "human", "human_onpolicy", "human_exact", "oracle", "outcome")}
    assert expected <= names, expected - names
    for r in children:
        assert r.info.status == "FINISHED"
        assert r.data.tags.get("git_commit")
        assert r.data.tags.get("prmlab.cpu.model") and "prmlab.cpu.isa" in r.data.tags, r.info.run_name  # other CPU kernels train other weights
        if r.info.run_name != "report":
            assert r.data.metrics, r.info.run_name
        assert client.list_artifacts(r.info.run_id), r.info.run_name
    mc = next(r for r in children if r.info.run_name == "label_mc")
    assert mc.data.params["label_mc.k"] == "2" and "first_error_share" in mc.data.metrics
    # the labels' audit against the toy verifier: once, in consensus's run
    assert "audit/mc/first_error_accuracy" in next(r for r in children if r.info.run_name == "consensus").data.metrics
    assert any(k.startswith("dep.") for k in mc.data.tags)
    assert [i.dataset.name for i in mc.inputs.dataset_inputs] == ["data/problems/train.jsonl", "data/samples/train.jsonl"]
    # The report names the commit and the run each stage's numbers came from.
    report = (ran / "reports" / "report.md").read_text()
    # the CPU that trained the PRMs, in their metrics, the report and findings.json (a seed's file keeps it)
    from prmlab.core.provenance import machine

    cpu = json.loads((ran / "metrics" / "train_prm" / "oracle.json").read_text())["machine"]
    assert cpu["model"] == machine()["model"] and cpu["torch_kernels"]
    assert f"This run's PRMs were trained on: {cpu['vendor']} {cpu['model']}" in report
    assert json.loads((ran / "reports" / "findings.json").read_text())["machines"]
    # and the machine and torch build, which a seed's file names (seeds.md splits verdicts by machine)
    dev = json.loads((ran / "reports" / "findings.json").read_text())["device"]
    assert cpu["model"] in dev["machine"] and dev["torch"] == cpu["torch"]
    rep = next(r for r in children if r.info.run_name == "report")
    eid = mc.info.experiment_id
    link = f"| label_mc | [`{mc.info.run_id}`](http://127.0.0.1:5000/#/experiments/{eid}/runs/{mc.info.run_id}) |"
    assert link in report and rep.info.run_id in report and parent[0].info.run_id in report
    # Each PRM is a logged model of its train_prm run.
    models = {m.name: m for m in client.search_logged_models([exp.experiment_id])}
    oracle_run = next(r for r in children if r.info.run_name == "train_prm@oracle")
    assert models["prm-oracle"].source_run_id == oracle_run.info.run_id and models["prm-oracle"].model_type == "prm"


@pytest.mark.realdata
def test_eval_processbench_on_real_text(ran, tmp_path):
    from conftest import need_data

    from prmlab.analysis.metrics import harmonic
    from prmlab.core.io import write_jsonl
    from prmlab.pipeline.data import load_processbench

    root = need_data("processbench")
    params = tiny_params(ran / "params.yaml")
    params["eval_processbench"].update(subsets=["gsm8k", "math", "olympiadbench", "omnimath"],
                                       threshold_subset="gsm8k", max_items=3, max_length=4096, critic_max_tokens=16)
    pf = tmp_path / "params.yaml"
    pf.write_text(yaml.safe_dump(params))
    items = tmp_path / "items.jsonl"
    write_jsonl(items, [i for s in params["eval_processbench"]["subsets"] for i in load_processbench(s, str(root))])
    m = tmp_path / "pb.json"
    run([sys.executable, "-m", "stages.eval_processbench", "--params", str(pf), "--items", str(items),
         "--prm", "oracle=models/prm/oracle", "--metrics", str(m), "--scores", str(tmp_path / "s.jsonl")], ran,
        env={"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'ml.db'}"})
    res = json.loads(m.read_text())
    assert res["items"] == {"gsm8k": 3, "math": 3, "olympiadbench": 3, "omnimath": 3}
    for model in ("prm/oracle", "critic/judge"):
        t = res["models"][model].get("tuned", res["models"][model])
        subs = ("gsm8k", "math", "olympiadbench", "omnimath")
        assert set(t) >= set(subs)
        for s in subs:  # ProcessBench's definition: F1 is the harmonic mean of the two accuracies
            assert t[s]["f1"] == pytest.approx(harmonic(t[s]["error_acc"], t[s]["correct_acc"]))
        assert t["average_f1"] == pytest.approx(sum(t[s]["f1"] for s in subs) / 4)
    # Stratified cap: every subset keeps erroneous and error-free items (a plain head has only errors).
    rows = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    for s in ("gsm8k", "math", "olympiadbench", "omnimath"):
        assert {r["label"] == -1 for r in rows if r["subset"] == s and r["model"] == "prm/oracle"} == {True, False}


def wait_healthy(url: str, log: Path, timeout: float = 120) -> None:
    """Poll a server's health URL until it answers 200; fail with the tail of its log."""
    import httpx

    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(1)
    raise AssertionError(log.read_text()[-3000:])


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def prefect_api(tmp_path_factory):
    """A real local Prefect server for this module's tests: (api url, env for its clients)."""

    d = tmp_path_factory.mktemp("prefect")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PREFECT_HOME": str(d / "home"),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_API_URL": api}
    env.pop("MLFLOW_TRACKING_URI", None)
    server = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                              env=env, stdout=open(d / "server.log", "w"), stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"{api}/health", d / "server.log")
        yield api, env
    finally:
        stop(server)


def test_scheduled_run_on_a_real_prefect_server(study, tmp_path, prefect_api):
    import httpx

    api, env = prefect_api
    serve = None
    try:
        serve = subprocess.Popen([sys.executable, "-m", "flows.serve", "--name", "test-schedule", "--interval", "15",
                                  "--project-dir", str(study), "--stages", "report"], cwd=ROOT, env=env,
                                 stdout=open(tmp_path / "serve.log", "w"), stderr=subprocess.STDOUT)
        deadline = time.time() + 240
        completed = []
        while time.time() < deadline and not completed:
            time.sleep(2)
            try:
                r = httpx.post(f"{api}/flow_runs/filter", json={"flow_runs": {"state": {"type": {"any_": ["COMPLETED"]}}}},
                               timeout=30)
            except httpx.TimeoutException:
                # On 2 busy cores the server's sqlite can stall past a poll (CI saw one ReadTimeout at 10 s);
                # a slow poll is not the failure under test, so poll again until the deadline.
                continue
            completed = [fr for fr in r.json() if fr.get("deployment_id")]
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
        assert completed, (tmp_path / "serve.log").read_text()[-3000:]
        dep = httpx.get(f"{api}/deployments/{completed[0]['deployment_id']}", timeout=30).json()
        assert dep["name"] == "test-schedule" and dep["schedules"]
        # The scheduled runs found the report up to date: they leave no empty parent run in MLflow.
        from mlflow.entities import ViewType
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=f"sqlite:///{study / 'mlflow.db'}")
        eid = client.get_experiment_by_name("prmlab").experiment_id
        # FINISHED only: with a 15 s interval, another scheduled run may be in flight (its parent still open).
        tagged = "tags.`prmlab.stage` = 'pipeline' and attributes.status = 'FINISHED'"
        assert len(client.search_runs([eid], tagged)) == 1  # the study's own flow run
        assert client.search_runs([eid], tagged, run_view_type=ViewType.DELETED_ONLY)
    finally:
        if serve is not None:
            stop(serve)


def test_work_pool_deployment_is_picked_up_and_completed_by_a_local_worker(study, tmp_path, prefect_api):
    """README's scale-out path: a process work pool, flows.deploy, a run requested, a `prefect worker`
    (the one a GPU node would start) runs it to completion."""
    import httpx

    api, env = prefect_api
    prefect = str(BIN / "prefect")
    run([prefect, "work-pool", "create", "test-pool", "--type", "process"], ROOT, env=env)
    out = run([sys.executable, "-m", "flows.deploy", "--pool", "test-pool", "--name", "test-pool-dep", "--cron", "0 3 * * *",
               "--project-dir", str(study), "--stages", "report"], ROOT, env=env).stdout
    assert "deployment prmlab-pipeline/test-pool-dep" in out, out
    dep = httpx.get(f"{api}/deployments/name/prmlab-pipeline/test-pool-dep", timeout=30).json()
    assert dep["work_pool_name"] == "test-pool"
    assert dep["schedules"][0]["schedule"]["cron"] == "0 3 * * *" and dep["schedules"][0]["schedule"]["timezone"] == "UTC"
    run([prefect, "deployment", "run", "prmlab-pipeline/test-pool-dep"], ROOT, env=env)
    run([prefect, "worker", "start", "--pool", "test-pool", "--run-once"], tmp_path, env=env, timeout=600)
    r = httpx.post(f"{api}/flow_runs/filter", json={"deployments": {"id": {"any_": [dep["id"]]}}}, timeout=30).json()
    states = sorted(fr["state"]["type"] for fr in r)
    assert "COMPLETED" in states, states


def test_dvc_exp_sweep_reruns_only_what_the_param_touches(study):
    """docs/getting-started.md's `dvc exp run -S` on a committed study reruns only the stages
    downstream of the param and records the experiment with its params and metrics."""
    run(["git", "add", "-A"], study)  # what a user commits after a repro: dvc.lock, metrics, reports
    run(["git", "commit", "-qm", "the study"], study)
    out = run(["dvc", "exp", "run", "-n", "two-aggs", "-S", "eval_bon.aggregations=[product,min]"], study).stdout
    assert "Running stage 'eval_bon'" in out and "Running stage 'report'" in out, out
    for s in ("bootstrap", "sample", "label_mc", "label_judge", "train_prm@oracle", "eval_processbench"):
        assert f"Running stage '{s}'" not in out, out
    shown = json.loads(run(["dvc", "exp", "show", "--json"], study).stdout)
    revs = [r for top in shown for e in top.get("experiments") or [] for r in e["revs"] if r.get("name") == "two-aggs"]
    assert len(revs) == 1, shown
    data = revs[0]["data"]
    assert data["params"]["params.yaml"]["data"]["eval_bon"]["aggregations"] == ["product", "min"]
    assert data["metrics"]["reports/metrics.json"]["data"]["f1"]["mc_hard"] is not None
    # The detailed file is an out, not a declared metric: the experiment's run left it in the workspace.
    bon = json.loads((study / "metrics" / "eval_bon.json").read_text())["results"]["oracle"]["average"]
    assert "prm_min" in bon and "prm_product" in bon and "prm_last" not in bon, bon
    # Back to the committed baseline, as a user would after looking at the experiment.
    run(["git", "checkout", "HEAD", "--", "."], study)
    run(["dvc", "checkout", "--force"], study)
    assert json.loads(run(["dvc", "status", "--json"], study).stdout) == {}
    assert "prm_last" in (study / "metrics" / "eval_bon.json").read_text()


def test_mc_dose_sweep_runs_a_point_per_value_and_seed_as_experiments(study):
    """`python -m flows.sweep label_mc.temperature 1.3 0.7` (the MC dose-response, one seed): the study's own
    value at seed 0 is the committed study, read; 0.7 is a DVC experiment whose params say so; each point's measures
    are its study's consensus audit and findings; the page has a row per value, the study's marked."""
    run(["git", "add", "-A"], study)
    run(["git", "commit", "-qm", "the study", "--allow-empty"], study)
    p = run([sys.executable, "-m", "flows.sweep", "label_mc.temperature", "1.3", "0.7", "--project-dir", str(study)], study,
            timeout=1500)
    from prmlab.runs.store import experiments

    name = "sweep-label_mc_temperature-0.7-s0"
    sha = experiments(str(study))[name]
    shown = json.loads(run(["dvc", "exp", "show", "--json"], study).stdout)
    revs = {r["name"]: r for top in shown for e in top.get("experiments") or [] for r in e["revs"] if r.get("name")}
    assert revs[name]["data"]["params"]["params.yaml"]["data"]["label_mc"]["temperature"] == 0.7
    here = json.loads((study / "reports" / "sweeps" / "label_mc.temperature" / "0.7-seed-0.json").read_text())
    cons = json.loads(run(["git", "show", f"{sha}:metrics/consensus.json"], study).stdout)
    assert here["ran"] == f"dvc exp run -n {name}" and here["measures"]["mc_first_error_accuracy"] == pytest.approx(
        100 * cons["audit"]["mc"]["first_error_accuracy"])
    home = json.loads((study / "reports" / "sweeps" / "label_mc.temperature" / "1.3-seed-0.json").read_text())
    assert home["ran"] == "the committed study" and home["study"] == here["study"]
    assert home["measures"]["consensus_kept"] == pytest.approx(
        100 * json.loads((study / "metrics" / "consensus.json").read_text())["consensus_kept_share"])
    md = (study / "reports" / "sweeps" / "label_mc.temperature.md").read_text()
    assert "| 1.3 (the study) | 0 |" in md and "| 0.7 | 0 |" in md and "2 values" in p.stdout
    # the experiment ran in a copy: the workspace keeps the committed study
    assert run(["git", "status", "--porcelain", "--", "params.yaml", "dvc.lock", "data", "metrics"], study).stdout == ""
    bad = run([sys.executable, "-m", "flows.sweep", "label_mc.no_such_key", "1", "--project-dir", str(study)], study, check=False)
    assert bad.returncode == 2 and "label_mc.no_such_key: no such params key" in bad.stderr


def test_seeds_run_from_the_pinned_study_and_the_development_seed_never_counts(study, tmp_path):
    """`make study-seeds` on tiny settings, as reports/protocol.md says: the protocol committed, the study pinned at
    that commit, confirmation seeds 1 and 2 each run by `dvc repro` in a clone of the pinned commit with the
    protocol's seed params (no ceiling, no human-label arms, only the deciding PRMs); seed 0, the development seed,
    filed from HEAD's committed study, shown beside the verdicts and never counted; an edit at HEAD after the pin
    neither invalidates a finished seed nor mixes into it."""
    from prmlab.analysis.protocol import SEED_SOURCES

    seeds = [sys.executable, "-m", "flows.seeds", "--seeds", "2", "--project-dir", str(study)]
    run([*seeds, "--protocol"], study)
    run(["git", "add", "-A"], study)
    run(["git", "commit", "-qm", "the study and its protocol", "--allow-empty"], study)
    head = run(["git", "rev-parse", "--short", "HEAD"], study).stdout.strip()
    refused = run(seeds, study, check=False)  # no pin yet: one line, nothing runs
    assert refused.returncode == 2 and "no pinned study" in refused.stderr, refused.stderr
    run([*seeds, "--pin", "HEAD"], study)
    pin = json.loads((study / "reports" / "study.json").read_text())
    assert pin["commit"] == head
    run(["git", "add", "reports/study.json"], study)
    run(["git", "commit", "-qm", "pin the study"], study)
    run([*seeds, "--only", "0"], study)  # the development seed: HEAD's committed study, read
    p = run(seeds, study, timeout=2400)
    agg = json.loads((study / "reports" / "seeds.json").read_text())
    assert agg["runs"] == {"seed-1": head, "seed-2": head} and agg["wall_seconds"] > 0 and agg["commit"] == head
    assert set(agg["development_seed"]["findings"]) == {f["id"] for f in json.loads((study / "reports" / "findings.json").read_text())["findings"]}
    for f in agg["findings"]:
        assert f["verdict"] in ("reproduced", "not reproduced", "inconclusive", "not testable in this world")
    assert all(f"{f['verdict']:>15}  {f['claim']}" in p.stdout for f in agg["findings"]), p.stdout
    md = (study / "reports" / "seeds.md").read_text()
    assert "95% across seeds" in md and "Development seed 0" in md and "are not counted" in md
    # README's results block rewritten from the study's own files by the aggregate
    from prmlab.report.seeds import README_END, README_START, readme_results

    readme = (study / "README.md").read_text()
    assert readme[readme.index(README_START): readme.index(README_END) + len(README_END)] == readme_results(
        json.loads((study / "reports" / "findings.json").read_text()), agg)
    # each seed ran in its own clone of the pinned commit, with the protocol's params, and left the workspace alone
    clone = study / "runs" / "seeds" / pin["study"] / "seed-1"
    cp, hp = (yaml.safe_load(f.read_text()) for f in (clone / "params.yaml", study / "params.yaml"))
    assert cp["toy"]["seed"] == hp["toy"]["seed"] + 1 and cp["train_prm"]["seed"] == hp["train_prm"]["seed"] + 1
    assert cp["profile"]["toy_arms"] == [] and set(cp["train_prm"]["sources"]) <= set(SEED_SOURCES)
    # nor do the development seed's committed files of stages a seed does not run (its report reads the metrics folder)
    assert not (clone / "models" / "prm" / "oracle_ceiling").exists() and not (clone / "metrics" / "toy_human.json").exists()
    assert not (clone / "metrics" / "ceiling.json").exists() and not (clone / "metrics" / "train_prm" / "oracle.json").exists()
    assert run(["git", "rev-parse", "--short", "HEAD"], clone).stdout.strip() == head
    seed1 = json.loads((study / "reports" / "seeds" / pin["study"] / "seed-1.json").read_text())
    assert seed1["study"] == pin["study"] and f"clone of {head}" in seed1["ran"] and seed1["headline"]
    assert seed1["findings"] == json.loads((clone / "reports" / "findings.json").read_text())["findings"]
    # its cost, the protocol's per-seed target: wall minutes and each stage's own seconds (from the clone's MLflow runs)
    cost = json.loads((study / "reports" / "benchmarks" / "seed_cost.json").read_text())[f"{pin['study']}/seed-1"]
    assert cost["seed_minutes"] > 0 and "train_prm@judge" in cost["stages_seconds"] and "ceiling@toy" not in cost["stages_seconds"]
    assert run(["git", "status", "--porcelain", "--", "params.yaml", "dvc.lock", "data", "metrics"], study).stdout == ""
    # A code edit at HEAD after the pin: the pinned study's seeds still count, the same aggregate
    with open(study / "src" / "prmlab" / "analysis" / "findings.py", "a") as f:
        f.write("# an edit after the pin\n")
    run(["git", "commit", "-qam", "an edit after the pin"], study)
    run([*seeds, "--aggregate-only"], study)
    assert json.loads((study / "reports" / "seeds.json").read_text())["findings"] == agg["findings"]
    # a seed run elsewhere (scripts/seeds_plain.py) is recorded only for a commit of the pinned study
    found = clone / "reports" / "findings.json"
    run([*seeds, "--record", "1", "--findings", str(found), "--commit", head, "--ran-on", "this machine"], study)
    assert json.loads((study / "reports" / "seeds" / pin["study"] / "seed-1.json").read_text())["ran"] == "scripts.seeds_plain on this machine"
    other = run(["git", "rev-parse", "--short", "HEAD"], study).stdout.strip()
    refused = run([*seeds, "--record", "1", "--findings", str(found), "--commit", other], study, check=False)
    assert refused.returncode == 2 and "another study than the pinned one" in refused.stderr, refused.stderr


def test_cli_evaluates_a_prm_outside_the_graph_with_the_graphs_numbers(study, tmp_path):
    """`prmlab eval` is thin over the eval stages: the oracle PRM scored through it matches the graph's
    own evaluation of it, number for number; `prmlab metrics` prints the headline file."""
    prmlab = str(BIN / "prmlab")
    out = tmp_path / "o"
    run([prmlab, "eval", "models/prm/oracle", "--name", "oracle", "--out", str(out)], study)
    pb, graph_pb = (json.loads(p.read_text()) for p in (out / "oracle" / "processbench.json", study / "metrics" / "eval_processbench.json"))
    assert set(pb["models"]) == {"prm/oracle"}  # no critic, no reference PRMs
    assert pb["models"]["prm/oracle"] == graph_pb["models"]["prm/oracle"]
    bon, graph_bon = (json.loads(p.read_text()) for p in (out / "oracle" / "bon.json", study / "metrics" / "eval_bon.json"))
    assert bon["results"]["oracle"] == graph_bon["results"]["oracle"]
    # The table: Table 7's and Table 6's shape, the graph's numbers, Fig. 8's share as analyze_bias computes it.
    row = json.loads((out / "table.json").read_text())[0]
    assert row["processbench_avg_f1"] == graph_pb["models"]["prm/oracle"]["tuned"]["average_f1"]
    assert row["bon"]["product"] == graph_bon["results"]["oracle"]["average"]["prm_product"]
    bias = json.loads((study / "metrics" / "analyze_bias.json").read_text())["prms"]["oracle"]
    assert row["min_on_final_step"] == bias["min_on_last_step_all"] and row["paper_table7_f1"] is None
    table = (out / "table.md").read_text()
    assert "| oracle | " in table and "paper avg F1 (Table 7)" in table and "min on final step (%)" in table
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{study / 'mlflow.db'}")
    eid = client.get_experiment_by_name("prmlab").experiment_id
    parent = client.search_runs([eid], "tags.`prmlab.adhoc` = 'prmlab eval'")
    assert len(parent) == 1 and parent[0].data.metrics["processbench_avg_f1"] == row["processbench_avg_f1"]
    # Held out vs tuning, labelled: the held-out average is the graph's (the report's) figure
    assert row["processbench_heldout_avg_f1"] == graph_pb["models"]["prm/oracle"]["tuned"]["heldout_average_f1"]
    assert "held-out avg F1 (without toy_tune)" in table and "avg F1, all subsets (with toy_tune)" in table
    kids = client.search_runs([eid], f"tags.`mlflow.parentRunId` = '{parent[0].info.run_id}'")
    # Ad hoc, never a stage's run: renamed, and without the stage tag the report's provenance reads
    assert sorted(r.info.run_name for r in kids) == ["adhoc eval_bon oracle", "adhoc eval_processbench oracle"]
    assert all("prmlab.stage" not in r.data.tags and r.data.tags["prmlab.adhoc"].startswith("eval_") for r in kids)
    assert not client.search_runs([eid], "tags.`prmlab.stage` != 'pipeline' and attributes.run_name LIKE '%eval %'")
    shown = run([prmlab, "metrics"], study).stdout
    # the verdicts first (the tiny study has one seed), then the leaderboard (a row per PRM, reference and baseline),
    # then the study's own numbers
    assert shown.startswith("This run, one seed") and re.search(r"^\[[+?n/a-]+\] ", shown, re.M), shown
    assert re.search(r"^PRM ", shown, re.M) and re.search(r"^maj@\d+ +baseline ", shown, re.M), shown
    assert re.search(r"^oracle +trained ", shown, re.M) and "policy_accuracy" in shown, shown
    missing = run([prmlab, "eval", "models/prm/oracle", "--only", "bon"], tmp_path, check=False)
    assert missing.returncode != 0 and "data/eval_samples/eval.jsonl (make it with `dvc repro sample_eval`)" in missing.stderr


def test_mlflow_ui_opens_the_study_on_its_runs_in_a_real_browser(ran, tmp_path):
    """`prmlab ui` (make ui) on the study's store, opened in headless Chromium as a fresh browser would:
    its link lands on the runs table (not MLflow 3's GenAI overview) with the PRMs' evaluation results as
    columns; a PRM's run page shows them, and so does its logged model; the stage runs carry the commit and
    their datasets. Screenshots in test-artifacts/."""
    import httpx
    from browser import page, screenshot

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # without the venv on PATH (`prmlab ui` once died there with FileNotFoundError): it finds the mlflow beside it
    env = {**os.environ, "PATH": os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                                 if not p or Path(p).resolve() != BIN.resolve())}
    env.pop("MLFLOW_TRACKING_URI", None)  # the project's own store, as `make ui` in the project opens it
    log = tmp_path / "ui.log"
    ui = subprocess.Popen([str(BIN / "prmlab"), "ui", "--port", str(port)], cwd=ran, env=env, stdout=open(log, "w"),
                          stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"{url}/health", log)
        links = dict(re.findall(r"^  (\w+): (http\S+)$", log.read_text(), re.M))
        assert set(links) == {"study", "prms"}, log.read_text()[-2000:]
        api = f"{url}/ajax-api/2.0/mlflow"
        exp = httpx.get(f"{api}/experiments/get-by-name", params={"experiment_name": "prmlab"}, timeout=30).json()["experiment"]
        runs = httpx.post(f"{api}/runs/search", json={"experiment_ids": [exp["experiment_id"]], "max_results": 500},
                          timeout=30).json()["runs"]
        by_name = {r["info"]["run_name"]: r for r in reversed(runs)}  # the search lists the newest first: it wins
        for stage in ("label_mc", "eval_bon", "train_prm@oracle"):
            r = by_name[stage]
            assert r["data"].get("metrics") and any(t["key"] == "mlflow.source.git.commit" for t in r["data"]["tags"]), stage
        assert by_name["eval_bon"]["inputs"]["dataset_inputs"]  # the Dataset column
        bon = json.loads((ran / "metrics" / "eval_bon.json").read_text())["results"]["oracle"]["average"]["prm_product"]
        oracle = {m["key"]: m["value"] for m in by_name["train_prm@oracle"]["data"]["metrics"]}
        assert oracle["eval.bon_product"] == round(bon, 1) and "eval.processbench_heldout_f1" in oracle
        models = httpx.post(f"{api}/logged-models/search", json={"experiment_ids": [exp["experiment_id"]]},
                            timeout=30).json()["models"]
        rid = by_name["train_prm@oracle"]["info"]["run_id"]
        prm = next(m for m in models if m["info"]["name"] == "prm-oracle" and m["info"]["source_run_id"] == rid)
        assert any(m["key"] == "eval.bon_product" for m in prm["data"]["metrics"])  # the model page's Metrics
        # the loss curve is its own series (steps 1..N); the run's mean loss is one point of another
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=f"sqlite:///{ran / 'mlflow.db'}")
        assert min(m.step for m in client.get_metric_history(rid, "loss")) >= 1
        assert len(client.get_metric_history(rid, "train_loss")) == 1
        # a PRM's run page: the rate and gradient norm as curves too, only the params it reads (policy.model, not
        # the policy's serving settings), the metrics file under one name, a description with its figures
        steps = len(client.get_metric_history(rid, "loss"))
        assert len(client.get_metric_history(rid, "lr")) == len(client.get_metric_history(rid, "grad_norm")) == steps
        run_ = client.get_run(rid)
        assert "policy.model" in run_.data.params and "policy.batch_size" not in run_.data.params
        assert "metrics.json" in {a.path for a in client.list_artifacts(rid)}
        assert run_.data.tags["mlflow.note.content"].startswith("Held-out ProcessBench F1 **")
        by_n = json.loads((ran / "metrics" / "eval_bon.json").read_text())["by_n"]
        assert sorted(m.step for m in client.get_metric_history(rid, "eval.bon_at_n_product")) == [r["n"] for r in by_n]
        outputs = by_name["train_prm@oracle"].get("outputs", {}).get("model_outputs", [])
        assert prm["info"]["model_id"] in {o["model_id"] for o in outputs}  # the run page's "Logged models"
        with page() as pg:
            pg.goto(links["prms"])
            pg.get_by_text("train_prm@oracle").first.wait_for(timeout=60_000)
            # the runs table, with an evaluation metric as a column header, on a first visit
            assert "/runs" in pg.url and "overview" not in pg.url
            f1 = pg.get_by_role("columnheader", name=re.compile("eval.processbench_heldout_f1"))
            assert f1.count() >= 1
            box = f1.first.bounding_box()  # on the first screen, not scrolled off to the right
            assert box and box["x"] + box["width"] <= pg.viewport_size["width"], box
            assert pg.get_by_text("train_prm@mc_hard").first.is_visible()
            assert pg.get_by_text("ceiling", exact=True).count() >= 1  # the ceiling PRM is a row of the PRMs' view too
            screenshot(pg, "mlflow_prms_view")
        with page() as pg:
            pg.goto(links["study"])
            pg.get_by_text("pipeline", exact=True).first.wait_for(timeout=60_000)  # the flow's run, its stages folded in
            screenshot(pg, "mlflow_study_view")  # before the check: a failure leaves what the page showed
            # on the first screen (MLflow renders only the columns in view: the study's own figure leads its view)
            assert pg.get_by_role("columnheader", name=re.compile("consensus_kept_share")).count() >= 1
            rid = by_name["train_prm@oracle"]["info"]["run_id"]
            pg.goto(f"{url}/#/experiments/{exp['experiment_id']}/runs/{rid}")
            pg.get_by_text("eval.bon_product").first.wait_for(timeout=60_000)
            screenshot(pg, "mlflow_prm_run")
    finally:
        stop(ui)
