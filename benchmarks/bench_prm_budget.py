"""Benchmark: what a PRM needs to learn the toy world's exact labels, in minutes on this machine.

    python -m benchmarks.bench_prm_budget --budget 160x6:480 --budget 960x6:3000 \
        --budget 2880x2:3000 --budget 2880x2:8000
    python -m benchmarks.bench_prm_budget --mix --budget 2880x2:8000 --eval-problems 400 --train-seed 2 --train-seed 3 \
        --out reports/benchmarks/prm_world.json   # the same budget over training seeds
    git show <seed-2 experiment>:params.yaml > /tmp/params_seed2.yaml   # a study seed's world (flows/seeds.py)
    python -m benchmarks.bench_prm_budget --mix --budget 5760x2:8000 --eval-problems 400 --params /tmp/params_seed2.yaml \
        --items /tmp/items_seed2.jsonl --out reports/benchmarks/prm_world.json
        # items_seed2.jsonl: .dvc/cache/files/md5/<md5[:2]>/<md5[2:]>, the md5 of data/processbench/items.jsonl in
        # `git show <seed-2 experiment>:dvc.lock`

The PRM targets (`prm_learned`), measured on the oracle PRM (the one trained on the verifier's exact labels,
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

import yaml


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


def difficulty(toy, mix: bool) -> tuple:
    """make_problems' difficulty arguments: the toy's mix (`toy.hard_share` and the hard kind's shape),
    or without `mix` normal problems only."""
    return (toy.hard_share, toy.hard_max_steps, toy.hard_max_value) if mix else (0.0,)


def eval_draw(toy, n: int, mix: bool = False):
    """The benchmarks' own held-out Best-of-N problems: a world seed none of the study's splits uses;
    with `mix`, the toy's difficulty mix."""
    from prmlab.toy.world import make_problems

    return make_problems(900_001, n, "toy-budget-eval", toy.min_steps, toy.max_steps, *difficulty(toy, mix))


def sample_cached(eng, path: Path, problems, cfg) -> tuple[list, float]:
    """Responses (cached with the seconds they took) from an engine (prmlab.engines.cluster), by the sample stage's shards."""
    from prmlab.core.io import read_jsonl, write_jsonl
    from prmlab.core.records import Response
    from prmlab.pipeline.sampling import sample_shard

    if path.exists():
        meta = json.loads(path.with_suffix(".json").read_text())
        return read_jsonl(path, Response), meta["seconds"]
    eng.start()  # the model loads before the clock starts: the seconds are sampling's
    t = time.perf_counter()
    rows, _ = eng.shards(problems, cfg.shard_size, None, sample_shard(cfg), unit="problems")
    sec = time.perf_counter() - t
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(path, rows)
    path.with_suffix(".json").write_text(json.dumps({"seconds": sec}))
    return rows, sec


def measure(prm: str, items: dict, tune: str, eval_probs, bon_rs) -> dict:
    """A trained PRM's step AUC and F1 on the held-out toy ProcessBench subsets (none without items),
    and its Best-of-8 (product, min) on eval_probs against a random pick and maj@8 (the paired
    difference with its interval), overall and on normal and hard problems apart, with the
    within-problem response AUC."""
    from prmlab.pipeline.bon import bon_table, bon_within_auc, group, prm_bon, response_scores
    from prmlab.pipeline.processbench import eval_prm
    from prmlab.prms.layouts import make_scorer

    t = time.perf_counter()
    with make_scorer("transformers", prm, 32, 4096) as scorer:  # eval_processbench's and eval_bon's pieces
        pb = eval_prm(scorer, items, tune)[0] if items else None  # its step AUC included
        bon_scores = response_scores(scorer, {p.id: p for p in eval_probs}, bon_rs, prm)
    groups = group(bon_rs, 8)
    table, vs_maj, within = prm_bon({p.id: p for p in eval_probs}, groups, bon_scores, ["product", "min"], n_boot=2000)
    bon = table["average"]
    out = {"eval_seconds": time.perf_counter() - t, "bon_product": bon["prm_product"], "bon_min": bon["prm_min"],
           "bon_random": bon["random"], "bon_maj": bon["maj"], "bon_pass": bon["pass"], "bon_problems": len(eval_probs),
           "within_problem_auc": within["min"], **{f"{agg}_over_maj": vs_maj[agg] for agg in ("product", "min")},
           "step_auc_heldout": pb["step_auc"]["heldout_average"] if pb else None,
           "f1_heldout": pb["tuned"]["heldout_average_f1"] if pb else None}
    for kind in ("normal", "hard"):
        probs = {p.id: p for p in eval_probs if bool(p.meta.get("hard")) == (kind == "hard")}
        if probs:
            b = bon_table(probs, groups, bon_scores, ["product", "min"])["average"]
            sub = {pid: groups.get(pid, []) for pid in probs}
            out[kind] = {"problems": len(probs), "product": b["prm_product"], "min": b["prm_min"], "random": b["random"],
                         "maj": b["maj"], "pass": b["pass"], "within_problem_auc": bon_within_auc(sub, bon_scores, "min")}
    return out


def load_items(path: str) -> dict:
    from prmlab.core.io import read_jsonl
    from prmlab.core.records import ProcessBenchItem

    items_all = read_jsonl(path, ProcessBenchItem)
    return {s: [i for i in items_all if i.subset == s] for s in dict.fromkeys(i.subset for i in items_all)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=parse_budget, action="append", required=True, help="PROBLEMSxN:STEPS (repeatable)")
    ap.add_argument("--eval-problems", type=int, default=300)
    ap.add_argument("--items", default="data/processbench/items.jsonl", help="toy ProcessBench items ('' for none: "
                    "they belong to the study's world, not to one --hard-* changes)")
    ap.add_argument("--mix", action="store_true", help="the toy's difficulty mix (params toy.hard_*) in training and "
                    "evaluation problems; without it, normal problems only (the benchmark's earlier rows)")
    ap.add_argument("--hard-share", type=float, help="with --mix: replaces toy.hard_share")
    ap.add_argument("--hard-max-value", type=int, help="with --mix: replaces toy.hard_max_value")
    ap.add_argument("--hard-max-steps", type=int, help="with --mix: replaces toy.hard_max_steps")
    ap.add_argument("--train-seed", type=int, action="append", help="PRM training seed (repeatable; default: "
                    "params' train_prm.seed): the same data and evaluation, another head draw and data order")
    ap.add_argument("--train-set", action="append", default=[], metavar="FIELD=VALUE", help="replaces a train_prm "
                    "setting, e.g. lr=0.001 or weight_decay=0.1 (repeatable); the row's key ends in ~FIELD=VALUE")
    ap.add_argument("--remeasure", action="store_true", help="measure again the PRMs --work still holds for rows --out "
                    "has (after the measures changed), without training")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--work", default="/tmp/prmlab_prm_budget")
    ap.add_argument("--out", default="reports/benchmarks/prm_budget.json")
    a = ap.parse_args()

    from prmlab.core.io import write_json
    from prmlab.core.params import from_mapping, load_params
    from prmlab.core.result import Unrecorded
    from prmlab.core.stage import set_threads
    from prmlab.engines.cluster import Engine
    from prmlab.engines.config import BackendConfig
    from prmlab.pipeline.processbench import EvalPBConfig
    from prmlab.pipeline.sampling import SampleConfig
    from prmlab.pipeline.training_sets import training_set
    from prmlab.prms.training import TrainInputs, TrainPRMConfig, train_prm
    from prmlab.toy.world import ToyWorldConfig, make_problems

    set_threads()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    toy = load_params("toy", ToyWorldConfig, a.params)
    policy = load_params("policy", BackendConfig, a.params)
    scfg = load_params("sample", SampleConfig, a.params)
    tcfg = load_params("train_prm", TrainPRMConfig, a.params)
    tune = load_params("eval_processbench", EvalPBConfig, a.params).threshold_subset
    train_set = {}
    for kv in a.train_set:  # a YAML value, as `dvc exp run -S` reads one; from_mapping checks the key and its type
        k, sep, v = kv.partition("=")
        if not sep or k in ("steps", "seed", "sources"):
            ap.error(f"--train-set {kv!r}: expected FIELD=VALUE with a train_prm field other than steps, seed, sources")
        train_set[k] = yaml.safe_load(v)
    tcfg = from_mapping(TrainPRMConfig, {**dataclasses.asdict(tcfg), **train_set}, "train_prm")
    over = {k: v for k, v in (("hard_share", a.hard_share), ("hard_max_value", a.hard_max_value),
                              ("hard_max_steps", a.hard_max_steps)) if v is not None}
    toy = dataclasses.replace(toy, **over)
    # a row's world: "" (normal problems only), else the mix, e.g. "mix0.25v60s8"; "w2" at its end when the params draw
    # the world with toy.seed 2 (a study seed's params, e.g. `git show <seed-2 experiment>:params.yaml`)
    world = f"mix{toy.hard_share:g}v{toy.hard_max_value}s{toy.hard_max_steps}" if a.mix else ""
    world += f"w{toy.seed}" if toy.seed else ""  # also names --work's cached samples: one world's never serve another
    eval_probs = eval_draw(toy, a.eval_problems, a.mix)
    items = load_items(a.items) if a.items else {}
    results = json.loads(Path(a.out).read_text()) if Path(a.out).exists() else {}

    runs = [(b, seed) for b in a.budget for seed in (a.train_seed or [tcfg.seed])]
    for (n_problems, n, steps), seed in runs:
        # a row per budget and training seed; seed 0 keeps the key earlier rows had
        key = f"{n_problems}x{n}:{steps}" + (f"@{world}" if world else "") + (f"#seed{seed}" if seed else "")
        key += "".join(f"~{k}={v}" for k, v in train_set.items())
        print(f"[bench_prm_budget] {key}", flush=True)
        # the study's train split, extended
        probs = make_problems(toy.seed * 1000 + 1, n_problems, "toy-train", toy.min_steps, toy.max_steps, *difficulty(toy, a.mix))
        with Engine(policy, desc="bench_prm_budget sample") as eng:  # the model loads only if a sample is not cached
            bon_rs, _ = sample_cached(eng, work / f"eval_{a.eval_problems}{world}.jsonl", eval_probs,
                                      dataclasses.replace(scfg, n=8, seed=scfg.seed + 1, keep_unanswered=True))
            train_rs, sample_s = sample_cached(eng, work / f"train_{n_problems}x{n}{world}.jsonl", probs,
                                               dataclasses.replace(scfg, n=n))
        out = str(work / f"prm_{key.replace(':', '_')}")
        if a.remeasure:
            if key in results and Path(out, "config.json").exists():
                results[key].update(measure(out, items, tune, eval_probs, bon_rs))
                write_json(a.out, results)
            else:
                print(f"[bench_prm_budget] {key}: no row in {a.out} or no PRM in {out}: not remeasured", flush=True)
            continue
        examples = training_set("oracle", {p.id: p for p in probs}, train_rs, {}, {})
        distinct = len({(e.prompt, tuple(e.completions)) for e in examples})
        # stage train_prm's core on the oracle's set, recording nothing; steps, not epochs: params may set steps, which wins
        cfg = {"policy": policy, "train_prm": dataclasses.replace(tcfg, steps=steps, seed=seed)}
        m = train_prm(cfg, TrainInputs("oracle", f"{n_problems}x{n} oracle set", out, examples), Unrecorded()).metrics
        results[key] = {
            "problems": n_problems, "n": n, "world": world or "normal only", "train_seed": seed, "items": bool(items),
            **({"train_set": train_set} if train_set else {}),
            "examples": len(examples), "distinct_responses": distinct,
            "optimizer_steps": m["optimizer_steps"], "sample_seconds": sample_s, "train_seconds": m["seconds"],
            **measure(out, items, tune, eval_probs, bon_rs), "machine": machine()}
        print(json.dumps({key: results[key]}), flush=True)
        write_json(a.out, results)  # after each budget: a long sweep keeps what it measured


if __name__ == "__main__":
    main()
