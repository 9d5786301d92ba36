"""Benchmark: what a PRM needs to learn the toy world's exact labels, in minutes on this machine.

    python -m benchmarks.bench_prm_budget --budget 160x6:480 --budget 960x6:3000 \
        --budget 2880x2:3000 --budget 2880x2:8000

Issue #19's PRM targets, measured on the oracle PRM (the one trained on the verifier's exact labels,
so nothing but the training budget stands between it and them). For each budget PROBLEMSxN:STEPS:
- sample N responses to each of PROBLEMS toy training problems from the policy (the study's
  `sample` params; the first 160 problems are the study's own `toy.n_train` draw), cached per shape
  under --work;
- label them with the verifier (source `oracle`: no MC or judge cost);
- train a PRM from the policy for STEPS optimizer steps (the study's `train_prm` params otherwise);
- measure it: Best-of-8 (product) on --eval-problems held-out problems of its own draw, against a
  random pick and maj@8 (the study's 64 problems are too few to separate them); step AUC and
  held-out F1 on the study's toy ProcessBench (data/processbench/items.jsonl).
Minutes are measured per phase. Results merge into --out by budget (the numbers repeat exactly; the
minutes are this machine's), and benchmarks/write_report.py turns them into a table in
reports/benchmarks.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path


def parse_budget(s: str) -> tuple[int, int, int]:
    """'960x6:3000' -> (960 problems, 6 responses each, 3000 optimizer steps)."""
    try:
        shape, steps = s.split(":")
        p, n = shape.split("x")
        out = int(p), int(n), int(steps)
    except ValueError:
        raise argparse.ArgumentTypeError(f"budget {s!r}: expected PROBLEMSxN:STEPS, e.g. 960x6:3000") from None
    if min(out) < 1:
        raise argparse.ArgumentTypeError(f"budget {s!r}: every number must be >= 1")
    return out


def machine() -> str:
    import torch

    return f"1 GPU ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else f"{os.cpu_count()} CPU cores"


def eval_draw(toy, n: int):
    """The benchmarks' own held-out Best-of-N problems: a world seed none of the study's splits uses."""
    from prmlab.toy.world import make_problems

    return make_problems(900_001, n, "toy-budget-eval", toy.min_steps, toy.max_steps)


def sample_cached(gen, path: Path, problems, cfg) -> tuple[list, float]:
    """Responses (cached with the seconds they took), shard by shard as the sample stage draws them."""
    from prmlab.io import read_jsonl, write_jsonl
    from prmlab.records import Response
    from stages.sample import sample_responses

    if path.exists():
        meta = json.loads(path.with_suffix(".json").read_text())
        return read_jsonl(path, Response), meta["seconds"]
    t = time.perf_counter()
    rows = []
    for i in range(0, len(problems), cfg.shard_size):
        rows += sample_responses(gen, problems[i: i + cfg.shard_size], cfg, i // cfg.shard_size)[0]
    sec = time.perf_counter() - t
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(path, rows)
    path.with_suffix(".json").write_text(json.dumps({"seconds": sec}))
    return rows, sec


def measure(prm: str, items: dict, tune: str, eval_probs, bon_rs) -> dict:
    """A trained PRM's step AUC and F1 on the held-out toy ProcessBench subsets, and its Best-of-8
    (product) on eval_probs against a random pick and maj@8."""
    from prmlab.prm import make_scorer
    from stages.eval_bon import bon_table, group
    from stages.eval_processbench import eval_prm

    questions = {p.id: p.question for p in eval_probs}
    t = time.perf_counter()
    with make_scorer("transformers", prm, 32, 4096) as scorer:
        pb, _ = eval_prm(scorer, items, tune)  # its step AUC included
        bon_scores = dict(zip([r.response_id for r in bon_rs], scorer.score([(questions[r.problem_id], r.steps) for r in bon_rs])))
    bon = bon_table({p.id: p for p in eval_probs}, group(bon_rs, 8), bon_scores, ["product"])["average"]
    return {"eval_seconds": time.perf_counter() - t, "bon_product": bon["prm_product"], "bon_random": bon["random"],
            "bon_maj": bon["maj"], "bon_pass": bon["pass"], "bon_problems": len(eval_probs),
            "step_auc_heldout": pb["step_auc"]["heldout_average"], "f1_heldout": pb["tuned"]["heldout_average_f1"]}


def load_items(path: str) -> dict:
    from prmlab.io import read_jsonl
    from prmlab.records import ProcessBenchItem

    items_all = read_jsonl(path, ProcessBenchItem)
    return {s: [i for i in items_all if i.subset == s] for s in dict.fromkeys(i.subset for i in items_all)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=parse_budget, action="append", required=True, help="PROBLEMSxN:STEPS (repeatable)")
    ap.add_argument("--eval-problems", type=int, default=300)
    ap.add_argument("--items", default="data/processbench/items.jsonl")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--work", default="/tmp/prmlab_prm_budget")
    ap.add_argument("--out", default="reports/benchmarks/prm_budget.json")
    a = ap.parse_args()

    from prmlab.generation import BackendConfig, make_generator
    from prmlab.io import write_json
    from prmlab.labeling import build_training_sets
    from prmlab.params import load_params
    from prmlab.toy.world import make_problems
    from stages._common import set_threads
    from stages.eval_processbench import EvalPBConfig
    from stages.problems import ToyWorldConfig
    from stages.sample import SampleConfig
    from stages.train_prm import TrainPRMConfig, train

    set_threads()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    toy = load_params("toy", ToyWorldConfig, a.params)
    policy = load_params("policy", BackendConfig, a.params)
    scfg = load_params("sample", SampleConfig, a.params)
    tcfg = load_params("train_prm", TrainPRMConfig, a.params)
    tune = load_params("eval_processbench", EvalPBConfig, a.params).threshold_subset
    eval_probs = eval_draw(toy, a.eval_problems)
    items = load_items(a.items)
    results = json.loads(Path(a.out).read_text()) if Path(a.out).exists() else {}

    for n_problems, n, steps in a.budget:
        key = f"{n_problems}x{n}:{steps}"
        print(f"[bench_prm_budget] {key}", flush=True)
        probs = make_problems(toy.seed * 1000 + 1, n_problems, "toy-train", toy.min_steps, toy.max_steps)  # the study's train split, extended
        with make_generator(policy) as gen:
            bon_rs, _ = sample_cached(gen, work / f"eval_{a.eval_problems}.jsonl", eval_probs,
                                      dataclasses.replace(scfg, n=8, seed=scfg.seed + 1, keep_unanswered=True))
            train_rs, sample_s = sample_cached(gen, work / f"train_{n_problems}x{n}.jsonl", probs, dataclasses.replace(scfg, n=n))
        examples = build_training_sets({p.id: p for p in probs}, train_rs, {}, {}, with_oracle=True)[0]["oracle"]
        distinct = len({(e.prompt, tuple(e.completions)) for e in examples})
        cfg = dataclasses.replace(tcfg, epochs=steps * tcfg.batch_size * tcfg.grad_accum / len(examples))
        out = str(work / f"prm_{key.replace(':', '_')}")
        m = train(examples, policy.model, out, cfg, soft=False)
        results[key] = {
            "problems": n_problems, "n": n, "examples": len(examples), "distinct_responses": distinct,
            "optimizer_steps": m["optimizer_steps"], "sample_seconds": sample_s, "train_seconds": m["seconds"],
            **measure(out, items, tune, eval_probs, bon_rs), "machine": machine()}
        print(json.dumps({key: results[key]}), flush=True)
        write_json(a.out, results)  # after each budget: a long sweep keeps what it measured


if __name__ == "__main__":
    main()
