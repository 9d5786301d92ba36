"""Stage eval_bon: Best-of-N with each PRM vs majority vote and pass@N.

For each evaluation problem, the N policy responses of `sample_eval` are scored step by step by
each PRM; a response's score is the `product` (paper default), `min` or `last` of its step scores;
prm@N picks the top response (ties: the earliest). maj@N (most common answer) and pass@N (any
correct) are reported alongside, per benchmark and averaged. Where the verifier's labels exist
(toy world), also the **process-verified** accuracy: the chosen response has the right answer and
no wrong step, the gap the paper says BoN hides.

Inputs: --problems, --samples (N per problem), --prm name=path (repeatable).
Params: `eval_bon`. Outputs: --metrics JSON, --scores JSONL (step scores per response and PRM).
Run: python -m stages.eval_bon --problems data/problems/eval.jsonl --samples data/eval_samples/eval.jsonl --prm consensus=models/prm/consensus --metrics metrics/eval_bon.json --scores data/eval/bon_scores.jsonl
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict
from dataclasses import dataclass, field

from prmlab.io import read_jsonl, write_json, write_jsonl
from prmlab.metrics import aggregate, maj_at_k, mean, pass_at_k
from prmlab.params import ParamsError, check, load_params
from prmlab.records import Problem, Response
from prmlab.tracking import stage_run, summary


@dataclass(frozen=True)
class EvalBoNConfig:
    n: int = 8
    aggregations: list[str] = field(default_factory=lambda: ["product", "min", "last"])
    scorer: str = "transformers"
    batch_size: int = 16
    max_length: int = 4096

    def __post_init__(self):
        check(self.n >= 1, "eval_bon.n must be >= 1")
        bad = set(self.aggregations) - {"product", "min", "last"}
        check(not bad, f"eval_bon.aggregations: unknown {sorted(bad)}; use product, min, last")


def group(responses: list[Response], n: int) -> dict[str, list[Response]]:
    by: dict[str, list[Response]] = defaultdict(list)
    for r in responses:
        by[r.problem_id].append(r)
    return {pid: rs[:n] for pid, rs in by.items()}


def bon_table(problems: dict[str, Problem], groups: dict[str, list[Response]],
              scores: dict[str, list[float]] | None, aggregations: list[str]) -> dict:
    """Per benchmark (problem.source) and averaged: maj@N, pass@N, and prm@N per aggregation."""
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for pid, rs in groups.items():
        bench = problems[pid].source
        correct = [r.correct for r in rs]
        per[bench]["maj"].append(float(maj_at_k([r.answer for r in rs], correct, len(rs))))
        per[bench]["pass"].append(float(pass_at_k(correct, len(rs))))
        if scores is None:
            continue
        for agg in aggregations:
            vals = [aggregate(scores[r.response_id], agg) for r in rs]
            best = max(range(len(rs)), key=lambda j: (vals[j], -j))
            per[bench][f"prm_{agg}"].append(float(rs[best].correct))
            if rs[best].true_first_error is not None:
                per[bench][f"prm_{agg}_process_verified"].append(float(rs[best].correct and rs[best].true_first_error == -1))
    table = {b: {k: 100.0 * mean(v) for k, v in d.items()} | {"problems": len(next(iter(d.values())))} for b, d in per.items()}
    keys = {k for d in table.values() for k in d if k != "problems"}
    table["average"] = {k: mean([table[b][k] for b in per if k in table[b]]) for k in sorted(keys)}
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description="Best-of-N evaluation of PRMs")
    ap.add_argument("--problems", required=True)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--prm", action="append", default=[])
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--scores", required=True)
    ap.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"))
    a = ap.parse_args()
    from stages._common import fail, set_threads

    try:
        cfg = load_params("eval_bon", EvalBoNConfig, a.params)
        prms = dict(p.split("=", 1) for p in a.prm)
    except (ParamsError, ValueError) as e:
        fail("eval_bon", e)
    problems = {p.id: p for p in read_jsonl(a.problems, Problem)}
    groups = group(read_jsonl(a.samples, Response), cfg.n)
    responses = [r for rs in groups.values() for r in rs]
    set_threads()
    from prmlab.prm import make_scorer

    results, rows = {}, []
    with stage_run("eval_bon", {"eval_bon": cfg, "prms": prms}, inputs=[a.problems, a.samples]) as run:
        base = bon_table(problems, groups, None, [])
        results["baselines"] = {b: {k: v for k, v in d.items() if k in ("maj", "pass", "problems")} for b, d in base.items()}
        for name, path in prms.items():
            with make_scorer(cfg.scorer, path, cfg.batch_size, cfg.max_length) as scorer:
                sc = scorer.score([(problems[r.problem_id].question, r.steps) for r in responses])
            scores = {r.response_id: s for r, s in zip(responses, sc)}
            results[name] = bon_table(problems, groups, scores, cfg.aggregations)
            rows += [{"prm": name, "response_id": r.response_id, "problem_id": r.problem_id, "correct": r.correct,
                      "true_first_error": r.true_first_error, "step_scores": scores[r.response_id]} for r in responses]
        write_jsonl(a.scores, rows)
        m = {"problems": len(groups), "responses": len(responses), "n": cfg.n, "results": results}
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    avg = results["baselines"]["average"]
    summary("eval_bon", f"{len(groups)} problems x <= {cfg.n}: maj@{cfg.n} {avg['maj']:.1f}, pass@{cfg.n} {avg['pass']:.1f}; "
            + ", ".join(f"{k} prm@{cfg.n} {v['average'].get('prm_product', 0):.1f}" for k, v in results.items() if k != "baselines"))


if __name__ == "__main__":
    main()
