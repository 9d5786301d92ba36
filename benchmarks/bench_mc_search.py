"""Benchmark: what each MC search (label_mc.search) spends and how its labels compare, on the study's responses.

    python -m benchmarks.bench_mc_search --samples data/samples/train.jsonl --problems data/problems/train.jsonl

Walks the responses in label_mc's own shards (shard_size, seed + shard index from params.yaml), so the
exhaustive pass is the stage's run itself: its labels are written to --labels and their md5 printed beside
the one dvc.lock records for data/labels/mc.jsonl (equal: the benchmark measured the committed labels). Each
other search then runs on exhaustive's very estimates (`labeling.compare_with_exhaustive`'s shared cache):
its rollouts are exactly what it would generate in a run of its own (a prefix's draws are the shard's), and
its labels differ from exhaustive's only by the search's rule. Printed per search, side by side: rollouts per
labelled response and as a share of exhaustive's, first-error and step-label agreement with exhaustive MC,
first-error accuracy against the toy verifier, and the same split by the response's final answer (right
or wrong). Counts do not depend on the machine (the labels are byte-identical across x86 CPUs).
Writes JSON (--out) that benchmarks/write_report.py turns into reports/benchmarks.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import time
from pathlib import Path

from prmlab.pipeline.labeling import agreement
from prmlab.pipeline.labeling_config import SEARCHES


def locked_md5(stage: str, path: str) -> str | None:
    """The md5 dvc.lock records for `stage`'s output `path` (None without a lock or that output)."""
    import yaml

    lock = Path("dvc.lock")
    outs = (yaml.safe_load(lock.read_text())["stages"].get(stage) or {}).get("outs", []) if lock.exists() else []
    return next((o["md5"] for o in outs if o["path"] == path), None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", default="data/samples/train.jsonl")
    ap.add_argument("--problems", default="data/problems/train.jsonl")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--max-responses", type=int, default=0, help="0: all")
    ap.add_argument("--temperature", type=float, help="the completer's temperature instead of label_mc.temperature")
    ap.add_argument("--top-p", type=float, help="instead of label_mc.top_p")
    ap.add_argument("--floor-responses", type=int, default=960,
                    help="responses also labelled by a second exhaustive pass on other draws: MC's own agreement")
    ap.add_argument("--labels", default="/tmp/bench_mc_search_exhaustive.jsonl", help="the exhaustive labels written here")
    ap.add_argument("--out", default="reports/benchmarks/mc_search.json")
    a = ap.parse_args()

    from prmlab.core.io import read_problems_and_responses, write_json, write_jsonl
    from prmlab.core.params import load_params
    from prmlab.core.stage import set_threads
    from prmlab.engines.config import BackendConfig
    from prmlab.engines.generation import make_generator
    from prmlab.pipeline.labeling import MCStats, _Rollouts, mc_exhaustive, mc_search
    from prmlab.pipeline.labeling_config import LabelMCConfig

    set_threads()
    c = load_params("label_mc", LabelMCConfig, a.params)
    c = dataclasses.replace(c, temperature=c.temperature if a.temperature is None else a.temperature,
                            top_p=c.top_p if a.top_p is None else a.top_p)
    problems, responses = read_problems_and_responses(a.problems, a.samples)
    responses = responses[: a.max_responses or None]
    asked = {s: 0 for s in SEARCHES}  # distinct prefixes each search asks for, summed over shards
    labels: dict[str, list] = {s: [] for s in SEARCHES}
    floor: list = []
    t0 = time.monotonic()
    with make_generator(load_params("policy", BackendConfig, a.params)) as gen:
        for i in range(0, len(responses), c.shard_size):
            chunk, shard = responses[i: i + c.shard_size], i // c.shard_size
            ex_roll = _Rollouts(gen, c.sampling(shard), MCStats())
            labels["exhaustive"] += mc_exhaustive(gen, problems, chunk, c.sampling(shard), c.threshold, MCStats(), ex_roll)
            asked["exhaustive"] += len(ex_roll.asked)
            for s in SEARCHES[1:]:
                view = _Rollouts(gen, c.sampling(shard), MCStats(), cache=ex_roll.cache)
                labels[s] += mc_search(s, gen, problems, chunk, c.sampling(shard), c.threshold, MCStats(), view)
                asked[s] += len(view.asked)
            if i < a.floor_responses:  # the same prefixes on other draws (another shard's seed range)
                floor += mc_exhaustive(gen, problems, chunk, c.sampling(shard + 10**6), c.threshold, MCStats())
            print(f"[bench_mc_search] {i + len(chunk)}/{len(responses)} responses, {time.monotonic() - t0:.0f}s", flush=True)
    write_jsonl(a.labels, labels["exhaustive"])
    md5 = hashlib.md5(Path(a.labels).read_bytes()).hexdigest()
    locked = locked_md5("label_mc", "data/labels/mc.jsonl")
    right = [j for j, r in enumerate(responses) if r.correct]
    wrong = [j for j, r in enumerate(responses) if not r.correct]
    res: dict = {"responses": len(responses), "right_answers": len(right), "k": c.k, "threshold": c.threshold,
                 "temperature": c.temperature, "shard_size": c.shard_size, "seconds": time.monotonic() - t0,
                 "exhaustive_labels_md5": md5, "dvc_lock_mc_md5": locked, "searches": {}}
    ex = labels["exhaustive"]
    # MC against itself: exhaustive MC on other draws, on the first --floor-responses responses
    res["exhaustive_other_draws"] = {"responses": len(floor), **agreement(ex[: len(floor)], floor, responses[: len(floor)])}
    for s in SEARCHES:
        row = {"rollouts": c.k * asked[s], "rollouts_per_response": c.k * asked[s] / max(len(responses), 1),
               "share_of_exhaustive": asked[s] / max(asked["exhaustive"], 1), **agreement(ex, labels[s], responses)}
        for name, idx in (("right", right), ("wrong", wrong)):
            sub = agreement([ex[j] for j in idx], [labels[s][j] for j in idx], [responses[j] for j in idx])
            row.update({f"{k}_{name}_answers": v for k, v in sub.items()})
        res["searches"][s] = row
    write_json(a.out, res)
    print(f"exhaustive labels md5 {md5} (dvc.lock: {res['dvc_lock_mc_md5']}); {len(responses)} responses, "
          f"{len(right)} with a right answer; {res['seconds']:.0f}s")
    print(f"{'search':12s} {'rollouts':>9s} {'/resp':>6s} {'share':>6s} {'FE agree':>8s} {'step agree':>10s} "
          f"{'verifier':>8s} {'FE agree right':>14s} {'FE agree wrong':>14s}")
    for s, r in res["searches"].items():
        print(f"{s:12s} {r['rollouts']:9d} {r['rollouts_per_response']:6.2f} {r['share_of_exhaustive']:6.3f} "
              f"{r['first_error_agreement']:8.3f} {r['step_label_agreement']:10.3f} "
              f"{r.get('verifier_first_error_accuracy', float('nan')):8.3f} {r['first_error_agreement_right_answers']:14.3f} "
              f"{r['first_error_agreement_wrong_answers']:14.3f}")
    f = res["exhaustive_other_draws"]
    print(f"exhaustive MC against itself on other draws ({f['responses']} responses): first errors agree on "
          f"{f['first_error_agreement']:.3f}, step labels on {f['step_label_agreement']:.3f}")


if __name__ == "__main__":
    main()
