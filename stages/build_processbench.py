"""Stage build_processbench: a toy ProcessBench built the way the real one was.

Held-out problems, several policy responses each, labelled by the exact verifier (the earliest
wrong step, -1 if none), balanced between responses with a wrong and a correct final answer. So,
like the real benchmark, it holds correct answers reached through flawed steps.

Inputs: --problems (held-out split). Params: `build_processbench`, `policy`.
Outputs: --out JSONL (ProcessBenchItem, subset "toy"), --metrics JSON.
Run: python -m stages.build_processbench --problems data/problems/processbench.jsonl --out data/processbench/toy.jsonl --metrics metrics/build_processbench.json
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from prmlab.generation import BackendConfig, Sampling
from prmlab.io import read_jsonl, write_json, write_jsonl
from prmlab.params import ParamsError, check, load_params
from prmlab.prompts import policy_messages
from prmlab.records import Problem, ProcessBenchItem, Response
from prmlab.tracking import stage_run, summary
from stages.sample import to_response


@dataclass(frozen=True)
class BuildPBConfig:
    n: int = 4
    temperature: float = 0.9
    top_p: float = 0.95
    max_tokens: int = 160
    seed: int = 2
    max_items: int = 200

    def __post_init__(self):
        check(self.n >= 1 and self.max_items >= 2, "build_processbench: n >= 1, max_items >= 2")


def balance(problems: dict[str, Problem], responses: list[Response], max_items: int, seed: int) -> list[ProcessBenchItem]:
    """At most one response per problem, half with a wrong final answer and half with a right one."""
    rng = random.Random(seed)
    rng.shuffle(responses)
    wrong, right, seen = [], [], set()
    for r in responses:
        if r.problem_id in seen or r.true_first_error is None:
            continue
        (right if r.correct else wrong).append(r)
        seen.add(r.problem_id)
    k = min(len(wrong), len(right), max_items // 2)
    picked = wrong[:k] + right[:k]
    return [ProcessBenchItem(id=r.response_id, generator="toy-policy", problem=problems[r.problem_id].question,
                             steps=r.steps, final_answer_correct=r.correct, label=r.true_first_error, subset="toy",
                             gold_answer=problems[r.problem_id].gold_answer)
            for r in sorted(picked, key=lambda r: r.response_id)]


def main() -> None:
    from stages._common import fail, parse_args, set_threads

    a = parse_args("toy ProcessBench", problems="held-out problems JSONL", out="items JSONL", metrics="metrics JSON")
    try:
        cfg = load_params("build_processbench", BuildPBConfig, a.params)
        bcfg = load_params("policy", BackendConfig, a.params)
    except ParamsError as e:
        fail("build_processbench", e)
    problems = read_jsonl(a.problems, Problem)
    set_threads()
    from prmlab.generation import make_generator

    with stage_run("build_processbench", {"build_processbench": cfg, "policy": bcfg}, inputs=[a.problems]) as run:
        responses: list[Response] = []
        if problems:
            with make_generator(bcfg) as gen:
                outs = gen.chat([policy_messages(p.question) for p in problems],
                                Sampling(n=cfg.n, temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_tokens, seed=cfg.seed))
            for p, comps in zip(problems, outs):
                for j, c in enumerate(comps):
                    r, _ = to_response(p, f"{p.id}/r{j}", c.text, c.num_tokens)
                    if r is not None:
                        responses.append(r)
        items = balance({p.id: p for p in problems}, responses, cfg.max_items, cfg.seed)
        write_jsonl(a.out, items)
        m = {"items": len(items), "error_items": sum(i.label != -1 for i in items),
             "correct_answer_flawed_items": sum(i.final_answer_correct and i.label != -1 for i in items),
             "candidates": len(responses)}
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    summary("build_processbench", f"{m['items']} items ({m['error_items']} with an error, "
            f"{m['correct_answer_flawed_items']} right answers with a flawed step) from {len(responses)} responses")


if __name__ == "__main__":
    main()
