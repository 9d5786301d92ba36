"""Benchmark: a study's PRMs retrained over seeds, with intervals, at a chosen number of optimizer steps.

    python -m benchmarks.bench_prm_seeds --data DIR/data --steps 3000 --seeds 0 1 2 \
        --sources oracle judge consensus mc_hard

The PRM targets (`prm_learned`) are to hold over 3 seeds. A study run trains each PRM once; this takes a study
workspace's labelled training sets (DIR/data/prm_train/<source>.jsonl, e.g. the workspace `make
study-long` leaves) and, for each source and seed, trains a PRM from the policy for --steps optimizer
steps (the study's `train_prm` params otherwise, `seed` replaced), then measures it as
bench_prm_budget does: held-out F1 and step AUC on DIR's toy ProcessBench, Best-of-8 (product) on
--eval-problems held-out problems of the benchmarks' own draw, sampled once and cached under --work,
against a random pick and maj@8.

Only the training seed varies (the head's draw, the data order): labels and evaluation sets are fixed,
so the interval is training's spread alone, narrower than `make study-seeds`', which redraws the
world. 12 PRMs at 3,000 steps take ~2 hours on 2 cores and 19 min on an H100 (CUDA is used when present);
--deadline stops starting new PRMs after that many seconds, and a rerun skips what --out holds.
Results merge into --out by "source:steps:seed", with a per-source "summary" (mean, 95% t-interval
across seeds) that benchmarks/write_report.py turns into a table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from benchmarks.bench_prm_budget import eval_draw, load_items, machine, measure, sample_cached
from prmlab.report.benchmarks import runs_at

METRICS = ("f1_heldout", "step_auc_heldout", "bon_product")


def seed_spread(results: dict, steps: int) -> dict:
    """source -> metric -> mean, 95% t-interval across the seeds measured at `steps`, and the points."""
    from prmlab.analysis.findings import t_interval

    by_source: dict[str, list[dict]] = {}
    for r in runs_at(results, steps):
        by_source.setdefault(r["source"], []).append(r)
    out = {}
    for source, rs in by_source.items():
        out[source] = {"seeds": [r["seed"] for r in rs]}
        for m in METRICS + ("bon_random", "bon_maj"):
            pts = [r[m] for r in rs]
            mu, lo, hi = t_interval(pts)
            out[source][m] = {"mean": mu, "lo": lo, "hi": hi, "points": pts}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="a study workspace's data folder (prm_train/, processbench/)")
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--sources", nargs="+", default=["oracle", "judge", "consensus", "mc_hard"])
    ap.add_argument("--eval-problems", type=int, default=500)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--work", default="/tmp/prmlab_prm_seeds")
    ap.add_argument("--deadline", type=float, default=float("inf"), help="seconds after which no new PRM starts")
    ap.add_argument("--out", default="reports/benchmarks/prm_seeds.json")
    a = ap.parse_args()

    from types import SimpleNamespace

    from prmlab.core.io import write_json
    from prmlab.core.params import load_params
    from prmlab.core.result import Unrecorded
    from prmlab.core.stage import set_threads
    from prmlab.engines.cluster import Engine
    from prmlab.engines.config import BackendConfig
    from prmlab.pipeline.processbench import EvalPBConfig
    from prmlab.pipeline.sampling import SampleConfig
    from prmlab.prms.training import TrainPRMConfig, prepare_train, train_prm
    from prmlab.toy.world import ToyWorldConfig

    t0 = time.perf_counter()
    set_threads()
    data, work = Path(a.data), Path(a.work)
    toy = load_params("toy", ToyWorldConfig, a.params)
    policy = load_params("policy", BackendConfig, a.params)
    scfg = load_params("sample", SampleConfig, a.params)
    tcfg = load_params("train_prm", TrainPRMConfig, a.params)
    tune = load_params("eval_processbench", EvalPBConfig, a.params).threshold_subset
    items = load_items(str(data / "processbench" / "items.jsonl"))
    eval_probs = eval_draw(toy, a.eval_problems)
    with Engine(policy, desc="bench_prm_seeds sample") as eng:
        bon_rs, sample_s = sample_cached(eng, work / f"eval_{a.eval_problems}.jsonl", eval_probs,
                                     dataclasses.replace(scfg, n=8, seed=scfg.seed + 1, keep_unanswered=True))
    print(f"[bench_prm_seeds] {len(bon_rs)} Best-of-8 candidates ({sample_s:.0f} s to sample)", flush=True)
    results = json.loads(Path(a.out).read_text()) if Path(a.out).exists() else {}
    # seed-major: a deadline leaves whole seeds missing, not whole sources
    todo = [(seed, src) for seed in a.seeds for src in a.sources if f"{src}:{a.steps}:{seed}" not in results]
    for seed, source in todo:
        key = f"{source}:{a.steps}:{seed}"
        if time.perf_counter() - t0 > a.deadline:
            print(f"[bench_prm_seeds] deadline: {key} and {len(todo) - todo.index((seed, source)) - 1} more not started", flush=True)
            break
        # stage train_prm@<source>'s own prepare and core (a soft source trains on MC values), recording nothing
        cfg = {"policy": policy, "train_prm": dataclasses.replace(tcfg, seed=seed, steps=a.steps)}  # steps: a params `steps` would win
        out = str(work / f"prm_{source}_{a.steps}_{seed}")
        inputs = prepare_train(SimpleNamespace(source=source, train=str(data / "prm_train" / f"{source}.jsonl"), out=out), cfg)
        m = train_prm(cfg, inputs, Unrecorded()).metrics
        results[key] = {"source": source, "seed": seed, "examples": len(inputs.examples), "optimizer_steps_asked": a.steps,
                        "optimizer_steps": m["optimizer_steps"], "train_seconds": m["seconds"],
                        **measure(out, items, tune, eval_probs, bon_rs), "machine": machine()}
        print(json.dumps({key: results[key]}), flush=True)
        results.setdefault("summary", {})[str(a.steps)] = seed_spread(results, a.steps)
        write_json(a.out, results)  # after each PRM: a deadline or a crash keeps what was measured


if __name__ == "__main__":
    main()
