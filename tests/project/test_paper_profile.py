"""The paper's profile end to end: `dvc repro` of the whole real graph on CPU, on the real data
capped small, with the hub models replaced by local stand-ins (the tiny toy policy and judge)
through a params override. Also: the unmodified params/paper.yaml lists every stage, and every
stage read and imported only what dvc.yaml declares."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import DATA, ROOT, need_data, new_project
from graph_audit import audit_env, undeclared

BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.slow, pytest.mark.realdata]

SOURCES = ["mc_hard", "mc_soft", "judge", "consensus"]  # params/paper.yaml's as shipped
TRAINED = SOURCES + ["prm800k"]  # the run below adds human labels: PRM800K's staged rows
BON = ["gsm8k", "math", "minerva_math", "gaokao2023en", "olympiadbench", "college_math", "mmlu_stem"]
PB = ["gsm8k", "math", "olympiadbench", "omnimath"]


def run(cmd, cwd, env=None, check=True, timeout=1500):
    # A given env is the whole environment (so a variable it leaves out stays out), else this process's.
    env = dict(env if env is not None else os.environ)
    env.pop("PRMLAB_PARENT_RUN_ID", None)
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} failed ({p.returncode}):\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    return p


def paper_small(standins: dict[str, str]) -> dict:
    """params/paper.yaml with the real data capped small, local stand-in models and CPU engines."""
    p = yaml.safe_load((ROOT / "params" / "paper.yaml").read_text())
    real = p["real"]
    real["train"] = {"gsm8k_train": str(DATA / "train/gsm8k_train.jsonl"), "math_train": str(DATA / "train/math_train")}
    real["eval"] = {b: str(DATA / (f"bon_benchmarks/{b}/test" if b == "math" else f"bon_benchmarks/{b}/test.jsonl"))
                    for b in BON}
    real.update(processbench=str(DATA / "processbench"), max_train=8, max_per_benchmark=4)
    for role in ("policy", "judge"):
        p[role] = {"backend": "transformers", "model": standins[role], "dtype": "float32", "seed": 0,
                   "max_model_len": 2048, "batch_size": 64}
    # The tiny stand-in never writes a \\boxed{} answer on real problems: keep its responses (as wrong ones),
    # so every later stage has data to work on.
    p["sample"].update(n=2, max_tokens=48, shard_size=4, keep_unanswered=True)
    p["sample_eval"].update(n=4, max_tokens=48, shard_size=16)
    p["label_mc"].update(k=2, max_tokens=32, shard_size=8, compare_sample=4)
    p["label_judge"].update(max_tokens=32, shard_size=8)
    # a CPU: no bf16, and packed rows take the per-example sdpa (the paper profile's varlen kernel is a GPU's)
    p["train_prm"].update(lr=1e-3, batch_size=4, grad_accum=2, max_length=1024, bf16=False, attn_implementation="sdpa")
    for sec in ("eval_processbench", "eval_bon"):
        p[sec].update(scorer="transformers", batch_size=8, max_length=1024, dtype="float32", tensor_parallel_size=1)
    p["eval_processbench"].update(max_items=8, critic_n=1, critic_max_tokens=16)
    p["eval_prmbench"].update(data=str(DATA / "prmbench"), max_items=2, scorer="transformers", batch_size=8,
                              max_length=1024, dtype="float32", tensor_parallel_size=1)
    p["eval_bon"]["n"] = 4  # as many as sample_eval draws: N cannot exceed it
    p["human_labels"] = {"prm800k": str(DATA / "prm_samples/samples_prm800k.jsonl")}
    p["train_prm"]["sources"] = TRAINED
    return p


@pytest.fixture(scope="module")
def paper_run(toy, tmp_path_factory):
    need_data("train/math_train")
    need_data("bon_benchmarks/math/test")
    need_data("prm_samples/samples_prm800k.jsonl")
    need_data("prmbench")
    d = tmp_path_factory.mktemp("paper")
    standins = {}
    for role in ("policy", "judge"):
        shutil.copytree(toy[role], d / "standins" / role)
        standins[role] = f"standins/{role}"
    new_project(d, paper_small(standins))
    audit = d.parent / f"{d.name}-audit"
    audit.mkdir()
    env = audit_env(audit, d, {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"})
    p = run(["dvc", "repro"], d, env=env)
    assert (d / "mlflow.db").exists(), "the stages logged to another MLflow store"
    return {"dir": d, "out": p.stdout + p.stderr, "audit": audit, "standins": standins}


def load(d: Path, rel: str):
    return json.loads((d / rel).read_text())


def lines(d: Path, rel: str) -> list[dict]:
    return [json.loads(x) for x in (d / rel).read_text().splitlines()]


def test_every_stage_of_the_real_graph_ran_with_the_expected_counts(paper_run):
    d, out = paper_run["dir"], paper_run["out"]
    expected = ["inputs@real", "sample", "label_mc", "label_judge", "consensus", "sample_eval", "eval_processbench",
                "eval_bon", "eval_prmbench@real", "analyze_bias", "report", "human_data@prm800k"] + [f"{s}@{x}" for s in ("prm_data", "train_prm") for x in TRAINED]
    for stage in expected:
        assert f"Running stage '{stage}'" in out, stage
    for toy_only in ("bootstrap", "problems@toy", "train_judge", "build_processbench", "@oracle"):
        assert toy_only not in out.replace("bootstrap.json", "")
    inputs = load(d, "metrics/inputs.json")
    assert inputs["train_problems"] == 8 and inputs["eval_problems"] == 4 * 7
    assert inputs["train_gsm8k_train"] == 7473 and inputs["train_math_train"] == 7500
    assert "removed_total" in inputs and inputs["processbench_items"] == 3400
    assert load(d, "data/models/policy.json")["local"] is True
    sample = load(d, "metrics/sample.json")
    assert sample["problems"] == 8 and sample["generated"] == 16
    assert len(lines(d, "data/labels/judge.jsonl")) == sample["kept"] == len(lines(d, "data/labels/mc.jsonl"))
    for s in TRAINED:
        assert (d / "models/prm" / s / "model.safetensors").exists()
        assert (d / f"data/prm_train/{s}.jsonl").exists()
        assert load(d, f"metrics/train_prm/{s}.json")["examples"] == len(lines(d, f"data/prm_train/{s}.jsonl"))
    assert not (d / "models/prm/oracle").exists()
    # PRM800K's staged rows: 6, one a screening row; 4 of the 5 problems are MATH test problems (full benchmark,
    # though the run evaluates 4 of them): dropped. The one left is the PRM800K PRM's training set.
    human = load(d, "metrics/human_data/prm800k.json")
    assert (human["rows"], human["skipped_screening"], human["converted"], human["removed_math"], human["examples"]) == (6, 1, 5, 4, 1)
    assert len(lines(d, "data/prm_train/prm800k.jsonl")) == 1
    report = (d / "reports/report.md").read_text()
    assert "## Released step labels (PRM800K, Math-Shepherd)" in report and "| prm800k | 6 | 0 / 1 / 0 | 5 | 4 | 1 | 0 |" in report
    assert "56.5 (human annotation, PRM800K (Table 4))" in report and "prm800k - judge" in report
    # real PRM800K decides Table 4's human half here (the toy's human labels cannot: reports/protocol.md)
    judge_human = next(f for f in json.loads((d / "reports/findings.json").read_text())["findings"] if f["id"] == "judge_human")
    assert "f1_prm800k_minus_judge" in judge_human["estimates"] and judge_human["verdict"] != "not testable in this world"
    # PRMBench: the first 2 items of each classification (20 with the `correct` copies), every PRM scored
    pbm = load(d, "metrics/eval_prmbench.json")
    assert pbm["items"] == 20 and set(pbm["models"]) == {f"prm/{s}" for s in TRAINED}
    assert all(0 <= m["prmscore"] <= 100 for m in pbm["models"].values())


def test_processbench_used_four_subsets_with_the_threshold_tuned_on_gsm8k(paper_run):
    pb = load(paper_run["dir"], "metrics/eval_processbench.json")
    assert pb["items"] == {s: 8 for s in PB}
    assert set(pb["models"]) == {f"prm/{s}" for s in TRAINED} | {"critic/judge"}
    for s in TRAINED:
        res = pb["models"][f"prm/{s}"]
        assert res["tuned"]["threshold_subset"] == "gsm8k" and set(PB) <= set(res["tuned"])
    rows = lines(paper_run["dir"], "data/eval/processbench_scores.jsonl")
    # Stratified cap: both erroneous and error-free items in every subset (a plain head has only errors).
    for s in PB:
        labels = {r["label"] == -1 for r in rows if r["subset"] == s and r["model"] == "critic/judge"}
        assert labels == {True, False}, s


def test_best_of_n_covered_the_seven_benchmarks(paper_run):
    bon = load(paper_run["dir"], "metrics/eval_bon.json")
    assert set(bon["results"]["baselines"]) == set(BON) | {"average"}
    for s in TRAINED:
        assert set(bon["results"][s]) == set(BON) | {"average"}
        assert all(bon["results"][s][b]["problems"] == 4 for b in BON)
    report = (paper_run["dir"] / "reports/report.md").read_text()
    assert "Best-of-N per benchmark (like Table 6)" in report and "mmlu_stem" in report


def test_mlflow_has_a_run_per_stage(paper_run):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{paper_run['dir'] / 'mlflow.db'}")
    exp = client.get_experiment_by_name("prmlab")
    names = {r.info.run_name for r in client.search_runs([exp.experiment_id], max_results=500)}
    expected = {"inputs", "sample", "label_mc", "label_judge", "consensus", "sample_eval", "eval_processbench",
                "eval_bon", "analyze_bias", "report", "human_data@prm800k"} | {f"{s}@{x}" for s in ("prm_data", "train_prm") for x in TRAINED}
    assert expected <= names, expected - names


def test_every_stage_declares_what_it_reads_and_imports(paper_run):
    d = paper_run["dir"]
    models = {role: d / path for role, path in paper_run["standins"].items()}
    assert undeclared(d, paper_run["audit"], models) == {}


def test_a_second_repro_reruns_only_the_always_changed_inputs_stage(paper_run):
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    out = run(["dvc", "repro"], paper_run["dir"], env=env).stdout
    ran = [line for line in out.splitlines() if line.startswith("Running stage")]
    assert ran == ["Running stage 'inputs@real':"], out


def test_unmodified_paper_params_list_every_stage_with_no_missing_input(tmp_path):
    """`dvc repro --dry -f` on params/paper.yaml as shipped (hub names, the full data): every stage is
    listed, and every dependency is either a project file or another stage's output. (A plain `--dry`
    on a never-run graph stops at the first output that does not exist yet, a DVC limitation.)"""
    d = new_project(tmp_path / "p", yaml.safe_load((ROOT / "params" / "paper.yaml").read_text()))
    if (ROOT.parent / "shared").exists():  # a checkout sits beside ../shared, whose data eval_prmbench.data names
        (tmp_path / "shared").symlink_to(ROOT.parent / "shared")
    out = run(["dvc", "repro", "--dry", "-f"], d).stdout
    listed = [line.split("'")[1] for line in out.splitlines() if line.startswith("Running stage")]
    assert listed == (["inputs@real", "sample", "label_mc", "label_judge", "consensus"]
                      + [f"prm_data@{s}" for s in SOURCES] + [f"train_prm@{s}" for s in SOURCES]
                      + ["sample_eval", "eval_processbench", "eval_bon", "eval_prmbench@real", "analyze_bias", "report"]), out
    from dvc.repo import Repo

    with Repo(str(d)) as repo:
        outs = {Path(o.fs_path) for st in repo.index.stages for o in st.outs}
        for st in repo.index.stages:
            for dep in st.deps:
                p = Path(dep.fs_path)
                assert p.exists() or p in outs or any(o in p.parents or p in o.parents for o in outs), (st.addressing, p)
