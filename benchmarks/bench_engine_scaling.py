"""Benchmark: label_mc's shards on 1 and 2 engine replicas, side by side in one run.

    python -m benchmarks.bench_engine_scaling --responses 384

The same shards of the study's responses (label_mc's params: exhaustive search, its k, temperature, shard
seeds) run four ways: the local engine at 1 and at all threads (the stage's default), and a private Ray
cluster on this machine (`engine.ray.address: local`) with 1 and with 2 replicas of `--threads` thread(s)
each. Printed: shards per minute once the engines are loaded (their load time apart), the ratio of 2
replicas to 1 (ideal 2.0 where the machine has a core per replica), and whether every way wrote the same
labels (md5). Writes JSON (--out) with the machine named; benchmarks/write_report.py renders it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import time


def machine() -> str:
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), platform.processor())
    return f"{cpu}, {os.cpu_count()} cores"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", default="data/samples/train.jsonl")
    ap.add_argument("--problems", default="data/problems/train.jsonl")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--responses", type=int, default=384)
    ap.add_argument("--shard-size", type=int, default=48)
    ap.add_argument("--threads", type=int, default=1, help="threads per Ray replica")
    ap.add_argument("--out", default="reports/benchmarks/engine_scaling.json")
    a = ap.parse_args()

    import dataclasses

    import torch

    from prmlab.core.io import read_problems_and_responses, write_json
    from prmlab.core.params import load_params
    from prmlab.engines.cluster import Engine, RayConfig
    from prmlab.engines.config import BackendConfig
    from prmlab.pipeline.labeling import mc_shard
    from prmlab.pipeline.labeling_config import LabelMCConfig

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    c = dataclasses.replace(load_params("label_mc", LabelMCConfig, a.params), shard_size=a.shard_size, search="exhaustive")
    backend = load_params("policy", BackendConfig, a.params)
    problems, responses = read_problems_and_responses(a.problems, a.samples)
    responses = responses[: a.responses]
    n_shards = (len(responses) + c.shard_size - 1) // c.shard_size
    res: dict = {"machine": machine(), "responses": len(responses), "shards": n_shards, "shard_size": c.shard_size,
                 "k": c.k, "temperature": c.temperature, "threads_per_replica": a.threads, "ways": {}}
    ways = [("local_1_thread", "local", 1, None), (f"local_{os.cpu_count()}_threads", "local", os.cpu_count(), None),
            ("ray_1_replica", "ray", None, 1), ("ray_2_replicas", "ray", None, 2)]
    for name, kind, threads, replicas in ways:
        if threads:
            torch.set_num_threads(threads)
        rc = RayConfig(address="local", replicas=replicas or 0, threads=a.threads)
        with Engine(backend, kind, rc, desc=name) as eng:
            t0 = time.monotonic()
            eng.start()
            load = time.monotonic() - t0
            t0 = time.monotonic()
            labels, _ = eng.shards(responses, c.shard_size, None, mc_shard(problems, c), unit="responses")
            secs = time.monotonic() - t0
        md5 = hashlib.md5(json.dumps([lab.to_dict() for lab in labels]).encode()).hexdigest()
        res["ways"][name] = {"load_seconds": load, "seconds": secs, "shards_per_minute": 60 * n_shards / secs, "labels_md5": md5}
        print(f"{name:18s} load {load:5.1f}s  shards {secs:6.1f}s  {60 * n_shards / secs:6.2f} shards/min  labels {md5}", flush=True)
    w = res["ways"]
    res["two_over_one_replica"] = w["ray_2_replicas"]["shards_per_minute"] / w["ray_1_replica"]["shards_per_minute"]
    res["ray_2_over_local_all_threads"] = (w["ray_2_replicas"]["shards_per_minute"]
                                           / w[f"local_{os.cpu_count()}_threads"]["shards_per_minute"])
    res["same_labels"] = len({v["labels_md5"] for v in w.values()}) == 1
    write_json(a.out, res)
    print(f"2 replicas / 1 replica: {res['two_over_one_replica']:.2f}x (ideal 2.0); 2 replicas / local at "
          f"{os.cpu_count()} threads: {res['ray_2_over_local_all_threads']:.2f}x; same labels every way: {res['same_labels']}")


if __name__ == "__main__":
    main()
