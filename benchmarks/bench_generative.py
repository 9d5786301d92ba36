"""Benchmark: a generative verifier's cost per item at k = 1 and k = 8 votes per step.

    python -m benchmarks.bench_generative --items 24 --votes 1 8 [--out reports/benchmarks/generative_cpu.json]

The toy judge (models/judge) as the `toy_judge` layout (prmlab.prms.generative.ToyJudgeScorer) scores `--items` toy
responses (seeded toy-world problems, half with a slip), batched through the transformers backend on this
machine, with the family's sampling at each k (k = 1: greedy; k > 1: T 1.0, top_p 0.9). Prints, per k: seconds
per item (median of --repeats runs, the model loaded once outside the timing), prompt and generated tokens per
item, generated tokens per vote, the unparsed votes, and the F1 of first-error predictions at threshold 0.5 on
these items (a sanity figure, not a result). Measured, never asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from benchmarks import positive_int


def toy_items(n: int, seed: int = 0) -> tuple[list[tuple[str, list[str]]], list[int]]:
    from prmlab.toy.world import canonical_steps, make_flawed, make_problem

    rng, items, labels = random.Random(seed), [], []
    for k in range(n):
        p = make_problem(rng, f"b{k}")
        steps, first = make_flawed(rng, p, "slip") if k % 2 else (canonical_steps(p), -1)
        items.append((p.question, steps))
        labels.append(first)
    return items, labels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="models/judge")
    ap.add_argument("--items", type=positive_int, default=24)
    ap.add_argument("--votes", type=positive_int, nargs="+", default=[1, 8])
    ap.add_argument("--repeats", type=positive_int, default=3)
    ap.add_argument("--batch-size", type=positive_int, default=64, help="prompts per generate() call (transformers)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import torch

    from prmlab.analysis.metrics import first_below, processbench_scores
    from prmlab.prms.generative import ToyJudgeScorer, VerifierConfig

    items, labels = toy_items(a.items)
    rows = []
    for k in a.votes:
        with ToyJudgeScorer(a.model, VerifierConfig(votes=k), batch_size=a.batch_size) as scorer:
            prompt_tokens = [len(scorer.gen.tokenizer.encode(scorer.requests(q, s))) for q, s in items]
            times, scores = [], None
            for _ in range(a.repeats):
                before = (scorer.reply_tokens, scorer.unparsed_votes)
                t0 = time.perf_counter()
                scores = scorer.score(items)
                times.append(time.perf_counter() - t0)
                gen_tokens, unparsed = scorer.reply_tokens - before[0], scorer.unparsed_votes - before[1]
            s = scorer.sampling
        f1 = processbench_scores(labels, [first_below(x, 0.5) for x in scores])["f1"]
        rows.append({"votes": k, "temperature": s.temperature, "top_p": s.top_p, "items": len(items),
                     "steps_per_item": sum(len(st) for _, st in items) / len(items),
                     "seconds_per_item": statistics.median(times) / len(items),
                     "prompt_tokens_per_item": sum(prompt_tokens) / len(items),
                     "generated_tokens_per_item": gen_tokens / len(items),
                     "generated_tokens_per_vote": gen_tokens / len(items) / k,
                     "unparsed_votes": unparsed, "f1_at_0.5": f1})
    base = rows[0]
    print(f"toy judge ({a.model}), {len(items)} toy items, {base['steps_per_item']:.1f} steps/item, transformers on "
          f"{'cuda' if torch.cuda.is_available() else 'cpu'} ({torch.get_num_threads()} threads), median of {a.repeats}")
    print(f"{'k':>3} {'T':>4} {'s/item':>8} {'x k=' + str(base['votes']):>7} {'prompt tok':>10} {'gen tok/item':>12} "
          f"{'gen tok/vote':>12} {'unparsed':>8} {'F1@0.5':>7}")
    for r in rows:
        print(f"{r['votes']:>3} {r['temperature']:>4.1f} {r['seconds_per_item']:>8.3f} "
              f"{r['seconds_per_item'] / base['seconds_per_item']:>7.2f} {r['prompt_tokens_per_item']:>10.1f} "
              f"{r['generated_tokens_per_item']:>12.1f} {r['generated_tokens_per_vote']:>12.1f} {r['unparsed_votes']:>8} "
              f"{r['f1_at_0.5']:>7.1f}")
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps({"model": a.model, "threads": torch.get_num_threads(), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
