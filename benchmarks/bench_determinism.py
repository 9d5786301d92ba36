"""Benchmark: is PRM training deterministic, and what moves its weights? (a seed's verdicts rest on it)

    python -m benchmarks.bench_determinism --steps 40 --out reports/benchmarks/determinism.json

The same commit on another machine gave byte-identical labels but different PRM weights. This trains
the same PRM (policy init, the study's `train_prm` params, --steps optimizer steps on --examples toy
solutions written and labelled by the world, no sampling) several times, each in its own process, and
compares the saved weights bit for bit:
- twice at 1 torch thread, twice at 2 (run-to-run nondeterminism on one machine, per thread count);
- 1 thread against 2 (what differs between machines with different core counts where CPU kernels
  split their reductions by thread: float sums added in another order; with the packed trainer
  the two came out identical, where the Trainer's padded batches had differed by 4.5e-6);
- 2 threads on the machine's own kernels against 2 with the kernels pinned to AVX2 (`PINNED`: torch,
  oneDNN and MKL each pick kernels by instruction set; what differs between an AVX-512 machine and an
  AVX2 one, measured on one machine);
and samples the toy policy (16 problems x 4 responses, temperature 0.7) on both kernel sets: are the
generated texts, which become the labels, identical?
Prints and writes, per pair, whether the weights are identical, the largest absolute difference and
the final losses; the machine (prmlab.core.provenance.machine) beside them.
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

# The three settings that pin CPU kernels to AVX2 (on an AVX2-only machine they change nothing).
PINNED = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"}


def sample_once(pinned: bool) -> str:
    """md5 of the toy policy's sampled texts (16 train problems x 4, seed 3) in a fresh process."""
    code = """
import hashlib, json
from prmlab.engines.generation import make_generator
from prmlab.engines.config import BackendConfig, Sampling
from prmlab.core.io import read_jsonl
from prmlab.prompts import policy_messages
from prmlab.core.records import Problem
probs = read_jsonl("data/problems/train.jsonl", Problem)[:16]
with make_generator(BackendConfig(model="models/policy")) as gen:
    outs = gen.chat([policy_messages(p.question) for p in probs], Sampling(n=4, temperature=0.7, top_p=0.8, max_tokens=200, seed=3))
print(hashlib.md5(json.dumps([[c.text for c in o] for o in outs]).encode()).hexdigest())
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **(PINNED if pinned else {})})
    if p.returncode != 0:
        raise SystemExit(p.stderr[-3000:])
    return p.stdout.strip().splitlines()[-1]


def train_once(out: Path, threads: int, steps: int, examples: int, params: str, pinned: bool = False) -> dict:
    """One training run in a fresh process with `threads` torch threads; returns its metrics."""
    code = f"""
import json, os, torch
os.cpu_count = lambda: {threads}  # the trainer takes its threads from the cores (as scripts/seeds_plain's PRMLAB_CPUS does)
torch.set_num_threads({threads})
import dataclasses, random
from prmlab.core.records import labels_from_first_error
from prmlab.core.params import load_params
from prmlab.core.records import PRMExample
from prmlab.toy.world import canonical_steps, make_flawed, make_problems
from prmlab.prms.training import TrainPRMConfig, train
cfg = dataclasses.replace(load_params("train_prm", TrainPRMConfig, {params!r}), steps={steps}, seed=0)
rng, ex = random.Random(0), []
for i, p in enumerate(make_problems(11, {examples}, "det")):  # 60% flawed (a slip or a wrong operand), exact labels
    steps, first = make_flawed(rng, p, rng.choice(["slip", "operand"])) if rng.random() < 0.6 else (canonical_steps(p), -1)
    labels = labels_from_first_error(len(steps), first)
    ex.append(PRMExample(prompt=p.question, completions=steps[: len(labels)], labels=labels, response_id=f"det-{{i}}"))
m = train(ex, "models/policy", {str(out)!r}, cfg, soft=False)
print(json.dumps({{"final_logged_loss": m["final_logged_loss"], "optimizer_steps": m["optimizer_steps"],
                  "seconds": m["seconds"], "threads": torch.get_num_threads(),
                  "kernels": torch.backends.cpu.get_cpu_capability()}}))
"""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), **(PINNED if pinned else {})}
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
        for name, threads, pinned in (("t1a", 1, False), ("t1b", 1, False), ("t2a", 2, False), ("t2b", 2, False),
                                      ("t2_avx2", 2, True)):
            runs[name] = train_once(Path(tmp) / name, threads, a.steps, a.examples, a.params, pinned)
            print(f"{name}: {runs[name]}", flush=True)
        pairs = {f"{x} vs {y}": compare(Path(tmp) / x, Path(tmp) / y)
                 for x, y in (("t1a", "t1b"), ("t2a", "t2b"), ("t1a", "t2a"), ("t2a", "t2_avx2"))}
    for k, v in pairs.items():
        print(f"{k}: identical {v['identical']}, max |diff| {v['max_abs_diff']:.3g}")
    samples = {"own kernels": sample_once(False), "AVX2 kernels": sample_once(True)}
    print(f"sampled texts: {samples} -> identical {len(set(samples.values())) == 1}")
    import torch

    from prmlab.core.provenance import machine

    res = {"steps": a.steps, "examples": a.examples, "torch": torch.__version__, "cpus": os.cpu_count(),
           "machine": machine(), "runs": runs, "pairs": pairs, "samples": samples,
           "samples_identical": len(set(samples.values())) == 1}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
