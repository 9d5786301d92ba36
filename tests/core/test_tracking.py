"""prmlab.core.tracking on a real SQLite MLflow store: what a researcher browsing the UI relies on."""

from __future__ import annotations

import shutil
from pathlib import Path

from mlflow.tracking import MlflowClient

from prmlab.core.tracking import stage_run


def _store(monkeypatch, d: Path) -> str:
    uri = f"sqlite:///{d / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("PRMLAB_EXPERIMENT", "tracking-test")
    monkeypatch.chdir(d)
    return uri


def test_stage_run_tags_the_experiment_kind_the_dvc_experiment_and_logs_inputs_as_datasets(tmp_path, monkeypatch):
    uri = _store(monkeypatch, tmp_path)
    (tmp_path / "train.jsonl").write_text('{"id": 1}\n')
    monkeypatch.setenv("DVC_EXP_NAME", "two-aggs")
    with stage_run("label_mc", {"k": 8}, inputs=["train.jsonl", "missing.jsonl"]) as run:
        run.metrics({"kept": 0.5})
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("tracking-test")
    # The UI opens a model-development experiment on its runs, not on the GenAI traces overview.
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    r = client.get_run(run.id)
    assert r.data.tags["dvc.exp_name"] == "two-aggs" and r.data.tags["mlflow.source.git.commit"] == r.data.tags["git_commit"]
    # The input that exists is a dataset with its md5 as digest; the missing one is not invented.
    ds = [i.dataset for i in r.inputs.dataset_inputs]
    import hashlib

    assert [(d.name, d.digest) for d in ds] == [("train.jsonl", hashlib.md5(b'{"id": 1}\n').hexdigest())], ds


def test_a_copied_project_writes_artifacts_into_its_own_store(tmp_path, monkeypatch):
    """MLflow records artifact locations as absolute paths: the copy's runs must not write into the original."""
    orig = tmp_path / "orig"
    orig.mkdir()
    _store(monkeypatch, orig)
    (orig / "a.txt").write_text("first")
    with stage_run("report") as run:
        run.artifact(orig / "a.txt")
    copy = tmp_path / "copy"
    shutil.copytree(orig, copy)
    shutil.rmtree(orig)  # the original is gone: a write there would recreate it
    uri = _store(monkeypatch, copy)
    (copy / "b.txt").write_text("second")
    with stage_run("report") as run2:
        run2.artifact(copy / "b.txt")
    client = MlflowClient(uri)
    assert not orig.exists()
    assert (copy / "mlartifacts").is_dir() and list((copy / "mlartifacts").rglob("b.txt"))
    # The first run's artifacts, copied with the project, are found where the copy keeps them.
    assert [a.path for a in client.list_artifacts(run.id)] == ["a.txt"]
    assert client.get_experiment_by_name("tracking-test").artifact_location == (copy / "mlartifacts").as_uri()


def test_a_checkpoint_is_logged_as_a_model_of_its_run(tmp_path, monkeypatch):
    uri = _store(monkeypatch, tmp_path)
    ck = tmp_path / "prm"
    ck.mkdir()
    (ck / "config.json").write_text("{}")
    (ck / "model.safetensors").write_bytes(b"\0" * 64)
    with stage_run("train_prm@oracle") as run:
        mid = run.model(ck, "prm-oracle", "prm", {"source": "oracle"})
        big = run.model(ck, "prm-big", "prm", max_bytes=10)  # over the limit: config.json alone
    client = MlflowClient(uri)
    m = client.get_logged_model(mid)
    assert (m.name, m.source_run_id, m.model_type, str(m.status)) == ("prm-oracle", run.id, "prm", "READY")
    assert m.params == {"source": "oracle"}
    import mlflow

    mlflow.set_tracking_uri(uri)
    assert sorted(a.path for a in mlflow.artifacts.list_artifacts(f"models:/{mid}")) == ["config.json", "model.safetensors"]
    assert [a.path for a in mlflow.artifacts.list_artifacts(f"models:/{big}")] == ["config.json"]


def test_the_prms_view_lists_each_stages_latest_finished_run_once(tmp_path, monkeypatch):
    """Before: the `prms` view listed every train_prm run ever made (superseded and failed rows of dashes).
    `prmlab ui` tags each stage's latest finished run `prmlab.latest` = 'yes' and the runs it superseded 'no'; the
    view's own filter, run through MLflow's search, then finds the latest of each PRM and nothing else."""
    import time

    from prmlab.report.dashboards import VIEWS, tag_latest

    uri = _store(monkeypatch, tmp_path)
    client = MlflowClient(uri)
    eid = client.create_experiment("tracking-test")

    def made(name: str, status: str = "FINISHED", stage: bool = True) -> str:
        r = client.create_run(eid, run_name=name, tags={"prmlab.stage": name.split("@")[0]} if stage else {})
        client.set_terminated(r.info.run_id, status)
        time.sleep(0.01)  # distinct start times: the later run is the newer
        return r.info.run_id

    old, new, _failed = made("train_prm@mc_hard"), made("train_prm@mc_hard"), made("train_prm@mc_hard", "FAILED")
    judge, adhoc, sample = made("train_prm@judge"), made("train_prm@x", stage=False), made("sample")
    ceiling = made("ceiling")  # the toy's ceiling PRM is a row of the view too
    assert tag_latest(client, eid) == {"yes": 4, "no": 1}
    assert client.get_run(old).data.tags["prmlab.latest"] == "no" and "prmlab.latest" not in client.get_run(adhoc).data.tags
    shown = client.search_runs([eid], VIEWS["prms"]["searchFilter"])
    assert sorted(r.info.run_id for r in shown) == sorted([new, judge, ceiling])
    newer = made("train_prm@judge")  # a rerun supersedes it the next time `prmlab ui` starts
    assert tag_latest(client, eid) == {"yes": 4, "no": 2}
    assert sorted(r.info.run_id for r in client.search_runs([eid], VIEWS["prms"]["searchFilter"])) == sorted([new, newer, ceiling])
    assert sample in {r.info.run_id for r in client.search_runs([eid], "tags.`prmlab.latest` = 'yes'")}


def test_a_stage_run_logs_only_the_params_dvc_declares_and_its_metrics_under_one_name(tmp_path, monkeypatch):
    """Before: train_prm's run logged all 16 `policy.*` serving settings though it reads policy.model alone. Under
    `dvc repro`, a section dvc.yaml narrows (`params: [train_prm, policy.model]`, a foreach stage's `do`) logs those
    keys only; a section DVC does not track (engine) is logged whole. The metrics file is `metrics.json` in every run,
    so MLflow's compare view finds a common artifact in two runs of different sources."""
    from prmlab.core.stage import declared_params
    from prmlab.core.tracking import logged_params

    uri = _store(monkeypatch, tmp_path)
    (tmp_path / "dvc.yaml").write_text("stages:\n  train_prm:\n    foreach: [a, b]\n    do:\n      cmd: x\n"
                                       "      params: [train_prm, policy.model, {other.yaml: [z]}]\n")
    monkeypatch.delenv("DVC_STAGE", raising=False)
    assert declared_params(tmp_path / "dvc.yaml") is None  # outside `dvc repro`: all logged
    monkeypatch.setenv("DVC_STAGE", "train_prm@a")
    declared = declared_params(tmp_path / "dvc.yaml")
    assert declared == ["train_prm", "policy.model"]
    cfg = {"train_prm": {"lr": 1e-5}, "policy": {"model": "m", "temperature": 0.7}, "engine": {"kind": "local"}}
    assert sorted(logged_params({"train_prm.lr": 1e-5, "policy.model": "m", "policy.temperature": 0.7,
                                 "engine.kind": "local"}, declared)) == ["engine.kind", "policy.model", "train_prm.lr"]
    monkeypatch.setenv("DVC_STAGE", "nowhere")
    assert declared_params(tmp_path / "dvc.yaml") is None
    (tmp_path / "metrics" / "train_prm").mkdir(parents=True)
    runs = []
    for src in ("a", "b"):
        f = tmp_path / "metrics" / "train_prm" / f"{src}.json"
        f.write_text('{"loss": 1}')
        with stage_run(f"train_prm@{src}", cfg, declared=declared) as run:
            run.artifact(f, name="metrics.json")
        runs.append(run.id)
    client = MlflowClient(uri)
    assert set(client.get_run(runs[0]).data.params) == {"train_prm.lr", "policy.model", "engine.kind"}
    assert [[a.path for a in client.list_artifacts(r)] for r in runs] == [["metrics.json"], ["metrics.json"]]


def test_a_metric_name_from_the_data_is_one_mlflow_accepts(tmp_path, monkeypatch):
    """ProcessBench items without a subset are counted as `items_outside_subsets: {"(none)": n}`: MLflow refused the
    name `items_outside_subsets/(none)`, so the stage died after all its scoring and its run ended FAILED."""
    uri = _store(monkeypatch, tmp_path)
    with stage_run("eval_processbench", {}) as run:
        run.metrics({"items_outside_subsets": {"(none)": 3, "gsm8k": 1}, "f1": float("nan")})
    r = MlflowClient(uri).get_run(run.id)
    assert r.info.status == "FINISHED" and r.data.metrics == {"items_outside_subsets/_none_": 3.0,
                                                               "items_outside_subsets/gsm8k": 1.0}
