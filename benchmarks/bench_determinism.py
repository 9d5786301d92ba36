"""Benchmark: is PRM training deterministic, and what moves its weights? (issue #26, item 5)

    python -m benchmarks.bench_determinism --steps 40 --out reports/benchmarks/determinism.json

The same commit on another machine gave byte-identical labels but different PRM weights. This trains
the same PRM (policy init, the study's `train_prm` params, --steps optimizer steps on --examples toy
solutions written and labelled by the world, no sampling) several times, each in its own process, and
compares the saved weights bit for bit:
- twice at 1 torch thread, twice at 2 (run-to-run nondeterminism on one machine, per thread count);
- 1 thread against 2 (what differs between machines with different core counts: CPU kernels split
  their reductions by thread, so float sums are added in another order).
Prints and writes, per pair, whether the weights are identical, the largest absolute difference and
the final losses.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import positive_int


def train_once(out: Path, threads: int, steps: int, examples: int, params: str) -> dict:
    """One training run in a fresh process with `threads` torch threads; returns its metrics."""
    code = f"""
import json, torch
torch.set_num_threads({threads})
from prmlab.params import load_params
from prmlab.toy.annotators import annotate
from prmlab.toy.world import make_problems
from prmlab.training import TrainPRMConfig, train
import dataclasses
cfg = dataclasses.replace(load_params("train_prm", TrainPRMConfig, {params!r}), steps={steps}, seed=0)
ex, _ = annotate(make_problems(11, {examples}, "det"), 0, 0.6, {{"slip": 0.5, "operand": 0.5}}, 0.0)
m = train(ex, "models/policy", {str(out)!r}, cfg, soft=False)
print(json.dumps({{"final_logged_loss": m["final_logged_loss"], "optimizer_steps": m["optimizer_steps"],
                  "seconds": m["seconds"], "threads": torch.get_num_threads()}}))
"""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def compare(a: Path, b: Path) -> dict:
    import torch
    from safetensors.torch import load_file

    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    diff = max(float((wa[k].double() - wb[k].double()).abs().max()) for k in wa)
    return {"identical": all(torch.equal(wa[k], wb[k]) for k in wa), "max_abs_diff": diff}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=positive_int, default=40)
    ap.add_argument("--examples", type=positive_int, default=400)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--out", default="reports/benchmarks/determinism.json")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for name, threads in (("t1a", 1), ("t1b", 1), ("t2a", 2), ("t2b", 2)):
            runs[name] = train_once(Path(tmp) / name, threads, a.steps, a.examples, a.params)
            print(f"{name}: {runs[name]}", flush=True)
        pairs = {f"{x} vs {y}": compare(Path(tmp) / x, Path(tmp) / y)
                 for x, y in (("t1a", "t1b"), ("t2a", "t2b"), ("t1a", "t2a"))}
    for k, v in pairs.items():
        print(f"{k}: identical {v['identical']}, max |diff| {v['max_abs_diff']:.3g}")
    import torch

    res = {"steps": a.steps, "examples": a.examples, "torch": torch.__version__, "cpus": os.cpu_count(),
           "runs": runs, "pairs": pairs}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
