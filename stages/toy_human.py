"""Stage toy_human@toy (toy profile only): the toy's PRM800K, a `human` label source.

Off-policy solutions (the world's flaw generator, not the policy), fewer of them than the MC/judge
sets, labelled by an annotator who errs at params `toy_human.noise` (prmlab.toy.annotators), on
problems drawn from their own stream (toy.seed * 1000 + 7), with the study's difficulty mix (PRM800K
spans MATH's levels as the policy's problems do), minus any an evaluation set holds. The paper's human
labels have these three properties; the `oracle` source (the exact verifier on the
policy's own responses) stays beside it as an upper bound.

Inputs: --eval-texts (problems@toy). Params: `toy_human`, `toy` (seed, steps and the difficulty mix).
Outputs: --out JSONL (PRMExample; prm_data@human reads it), --metrics JSON.
Run: python -m stages.toy_human --eval-texts data/problems/eval_texts.json --out data/human/human.jsonl --metrics metrics/toy_human.json
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prmlab.human_labels import drop_eval_problems
from prmlab.io import read_json, write_json, write_jsonl
from prmlab.params import check, load_params
from prmlab.toy.annotators import annotate
from prmlab.toy.world import FLAW_KINDS, make_problems
from prmlab.tracking import stage_run, summary


@dataclass(frozen=True)
class ToyHumanConfig:
    n: int = 300
    flawed_share: float = 0.6
    flaw_mix: dict[str, float] = field(default_factory=lambda: {"slip": 0.3, "operand": 0.3, "skip": 0.2,
                                                                 "compensate": 0.1, "answer": 0.1})
    noise: float = 0.1

    def __post_init__(self):
        check(self.n >= 1, "toy_human.n must be >= 1")
        check(0 <= self.flawed_share <= 1, "toy_human.flawed_share must be in [0, 1]")
        check(0 <= self.noise <= 1, "toy_human.noise must be in [0, 1]")
        unknown = sorted(set(self.flaw_mix) - set(FLAW_KINDS))
        check(not unknown and sum(self.flaw_mix.values()) > 0 and min(self.flaw_mix.values()) >= 0,
              f"toy_human.flaw_mix: kinds of {list(FLAW_KINDS)} with weights >= 0, not all 0" + (f" (unknown {unknown})" if unknown else ""))


def main() -> None:
    from stages._common import parse_args
    from stages.problems import ToyWorldConfig

    a = parse_args(__doc__.splitlines()[0], eval_texts="evaluation problem texts JSON", out="PRM examples JSONL",
                   metrics="metrics JSON")
    cfg = load_params("toy_human", ToyHumanConfig, a.params)
    toy = load_params("toy", ToyWorldConfig, a.params)
    seed = toy.seed
    problems = make_problems(seed * 1000 + 7, cfg.n, "toy-human", toy.min_steps, toy.max_steps, toy.hard_share,
                             toy.hard_max_steps, toy.hard_max_value)
    examples, counts = annotate(problems, seed, cfg.flawed_share, cfg.flaw_mix, cfg.noise)
    kept, removed = drop_eval_problems(examples, read_json(a.eval_texts))
    m = {**counts, **removed, "examples": len(kept), "hard_problems": sum(bool(p.meta.get("hard")) for p in problems), "with_wrong_step": sum(0 in ex.labels for ex in kept),
         "label_accuracy": counts["agree_with_verifier"] / max(counts["solutions"], 1)}
    with stage_run("toy_human", {"toy_human": cfg, "seed": seed}, inputs=[a.eval_texts]) as run:
        write_jsonl(a.out, kept)
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    summary("toy_human", f"{counts['solutions']} off-policy solutions ({counts['flawed']} flawed), annotator right on "
            f"{100 * m['label_accuracy']:.1f}% (noise {cfg.noise}); {removed['removed_total']} dropped as evaluation "
            f"problems; {len(kept)} examples -> {a.out}")


if __name__ == "__main__":
    from stages._common import run_main

    run_main("toy_human", main)
