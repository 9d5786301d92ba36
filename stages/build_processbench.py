"""Stage build_processbench@toy (toy profile only): a toy ProcessBench built the way the real one was.

Held-out problems, several policy responses each, labelled by the exact verifier (the earliest
wrong step, -1 if none), balanced between responses with a wrong and a correct final answer. So,
like the real benchmark, it holds correct answers reached through flawed steps.

Inputs: --problems (held-out split). Params: `build_processbench`, `policy`.
Outputs: --out JSONL (ProcessBenchItem), --metrics JSON. The items are split by problem into subset
`toy_tune` (a `tune_share` of them: eval_processbench tunes the PRM threshold there, as ProcessBench
does on GSM8K) and subset `toy` (held out: the F1 the report headlines).
Run: python -m stages.build_processbench --problems data/problems/processbench.jsonl --out data/processbench/items.jsonl --metrics metrics/build_processbench.json
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass

from prmlab.generation import BackendConfig, Sampling, check_sampling
from prmlab.grading import to_response
from prmlab.io import read_jsonl, write_json, write_jsonl
from prmlab.params import ParamsError, check, load_params
from prmlab.preflight import check_backend
from prmlab.prompts import policy_messages
from prmlab.records import Problem, ProcessBenchItem, Response
from prmlab.tracking import stage_run, summary


@dataclass(frozen=True)
class BuildPBConfig:
    n: int = 4
    temperature: float = 0.9
    top_p: float = 0.95
    max_tokens: int = 160
    seed: int = 2
    max_items: int = 200
    tune_share: float = 0.5  # items in subset toy_tune (threshold tuning); the rest are subset toy (reported)

    def __post_init__(self):
        check(self.n >= 1 and self.max_items >= 2, "build_processbench: n >= 1, max_items >= 2")
        check(0 <= self.tune_share < 1, "build_processbench.tune_share must be in [0, 1)")
        check_sampling("build_processbench", lambda: Sampling(n=self.n, temperature=self.temperature, top_p=self.top_p,
                                                              max_tokens=self.max_tokens, seed=self.seed))


def balance(problems: dict[str, Problem], responses: list[Response], max_items: int, seed: int,
            tune_share: float = 0.0) -> list[ProcessBenchItem]:
    """At most one response per problem, half with a wrong final answer and half with a right one;
    a `tune_share` of each half goes to subset toy_tune, the rest to subset toy."""
    rng = random.Random(seed)
    responses = list(responses)  # shuffle a copy: the caller's list keeps its order
    rng.shuffle(responses)
    wrong, right, seen = [], [], set()
    for r in responses:
        if r.problem_id in seen or r.true_first_error is None:
            continue
        (right if r.correct else wrong).append(r)
        seen.add(r.problem_id)
    k = min(len(wrong), len(right), max_items // 2)
    n_tune = round(k * tune_share)
    # Both halves split the same way, so tuning and reporting subsets are balanced alike.
    subset = {r.response_id: ("toy_tune" if i < n_tune else "toy") for half in (wrong[:k], right[:k])
              for i, r in enumerate(half)}
    picked = wrong[:k] + right[:k]
    return [ProcessBenchItem(id=r.response_id, generator="toy-policy", problem=problems[r.problem_id].question,
                             steps=r.steps, final_answer_correct=r.correct, label=r.true_first_error,
                             subset=subset[r.response_id], gold_answer=problems[r.problem_id].gold_answer)
            for r in sorted(picked, key=lambda r: r.response_id)]


def main() -> None:
    from stages._common import fail, parse_args, set_threads

    a = parse_args("toy ProcessBench", problems="held-out problems JSONL", out="items JSONL", metrics="metrics JSON")
    try:
        cfg = load_params("build_processbench", BuildPBConfig, a.params)
        bcfg = load_params("policy", BackendConfig, a.params)
        check_backend("policy", bcfg)  # before any model loads
    except ParamsError as e:
        fail("build_processbench", e)
    problems = read_jsonl(a.problems, Problem)
    set_threads()
    from prmlab.generation import make_generator

    with stage_run("build_processbench", {"build_processbench": cfg, "policy": bcfg}, inputs=[a.problems]) as run:
        responses: list[Response] = []
        if problems:
            with make_generator(bcfg) as gen:
                gen.progress = "build_processbench"
                outs = gen.chat([policy_messages(p.question) for p in problems],
                                Sampling(n=cfg.n, temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_tokens, seed=cfg.seed))
            for p, comps in zip(problems, outs):
                for j, c in enumerate(comps):
                    r, _ = to_response(p, f"{p.id}/r{j}", c.text, c.num_tokens)
                    if r is not None:
                        responses.append(r)
        items = balance({p.id: p for p in problems}, responses, cfg.max_items, cfg.seed, cfg.tune_share)
        if problems and not items:  # every F1 downstream would be "-": say why here, where it can be fixed
            right = sum(r.correct for r in responses)
            print(f"[build_processbench] WARNING: 0 items: of {len(responses)} usable responses {right} have the right "
                  f"final answer and {len(responses) - right} a wrong one; a balanced set needs both (raise "
                  f"toy.n_processbench or build_processbench.n)", file=sys.stderr)
        write_jsonl(a.out, items)
        m = {"items": len(items), "error_items": sum(i.label != -1 for i in items),
             "correct_answer_flawed_items": sum(i.final_answer_correct and i.label != -1 for i in items),
             "candidates": len(responses),
             "truncated": sum(c.truncated for comps in outs for c in comps) if problems else 0}
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    summary("build_processbench", f"{m['items']} items ({m['error_items']} with an error, "
            f"{m['correct_answer_flawed_items']} right answers with a flawed step) from {len(responses)} responses, "
            f"{m['truncated']} cut by a length limit")


if __name__ == "__main__":
    from stages._common import run_main

    run_main("build_processbench", main)
