"""The toy world's PRM800K: human-like step labels on another generator's solutions.

The paper's human labels (PRM800K) differ from its MC and judge labels in three ways that matter for
"human labels are best" (Table 4): the solutions come from another policy (off-policy), there are
fewer of them, and people make mistakes. The toy analogue has all three, so the claim no longer holds
by construction (the `oracle` source, the verifier on the policy's own responses, stays as an upper
bound):
- off-policy: solutions written by the world's own flaw generator (`make_flawed`, random rather than
  the policy's habitual flaws, with its own mix of flaw kinds), not sampled from the policy;
- fewer: one solution for each of `n` problems (the MC/judge sets label every policy response);
- annotator noise: with probability `noise` a solution's label is wrong: an error-free solution gets a
  step flagged, a flawed one has its error missed (half of such cases) or placed on the next or
  previous step (the other half).

    examples, counts = annotate(problems, seed=0, flawed_share=0.6, flaw_mix={"slip": 1.0}, noise=0.1)

`toy_human_labels` is stage toy_human@toy's core (prmlab.stage runs it), with params `toy_human` (ToyHumanConfig).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from prmlab.labeling import labels_from_first_error
from prmlab.params import check
from prmlab.records import PRMExample, Problem
from prmlab.toy.world import FLAW_KINDS, canonical_steps, make_flawed, sample_flaw_kind, verify


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


def annotator_label(rng: random.Random, first_error: int, n_steps: int, noise: float) -> tuple[int, str | None]:
    """The first error an annotator reports, and the kind of mistake made (None: none)."""
    if rng.random() >= noise:
        return first_error, None
    if first_error == -1:
        return rng.randrange(n_steps), "false_alarm"
    if rng.random() < 0.5 or n_steps == 1:
        return -1, "missed"
    moved = [k for k in (first_error - 1, first_error + 1) if 0 <= k < n_steps]
    return rng.choice(moved), "misplaced"


def annotate(problems: list[Problem], seed: int, flawed_share: float, flaw_mix: dict[str, float],
             noise: float) -> tuple[list[PRMExample], dict[str, int]]:
    """One solution per problem, labelled by a noisy annotator; counts of what was written and mislabelled.
    The true first error is the verifier's, on the very text written (never the generator's claim)."""
    rng = random.Random(seed)
    out, counts = [], {"solutions": 0, "flawed": 0, "false_alarm": 0, "missed": 0, "misplaced": 0, "agree_with_verifier": 0}
    for p in problems:
        if rng.random() < flawed_share:
            steps, _ = make_flawed(rng, p, sample_flaw_kind(rng, flaw_mix))
        else:
            steps = canonical_steps(p)
        truth = verify(p, steps).first_error
        given, mistake = annotator_label(rng, truth, len(steps), noise)
        counts["solutions"] += 1
        counts["flawed"] += truth != -1
        counts["agree_with_verifier"] += given == truth
        if mistake:
            counts[mistake] += 1
        labels = labels_from_first_error(len(steps), given)
        out.append(PRMExample(prompt=p.question, completions=steps[: len(labels)], labels=labels, response_id=p.id))
    return out, counts


def read_eval_texts(a, cfg: dict) -> dict[str, list[str]]:
    from prmlab.io import read_json

    return read_json(a.eval_texts)


def toy_human_labels(a, cfg: dict, eval_texts: dict[str, list[str]], run):
    """Stage toy_human@toy: `toy_human.n` problems from their own stream (toy.seed * 1000 + 7) with the study's
    difficulty mix, one annotated solution each, minus the problems an evaluation set holds."""
    from prmlab.human_labels import drop_eval_problems
    from prmlab.stage import Done

    c, toy = cfg["toy_human"], cfg["toy"]
    problems = toy.problems(7, c.n, "toy-human")
    examples, counts = annotate(problems, toy.seed, c.flawed_share, c.flaw_mix, c.noise)
    kept, removed = drop_eval_problems(examples, eval_texts)
    m = {**counts, **removed, "examples": len(kept), "hard_problems": sum(bool(p.meta.get("hard")) for p in problems),
         "with_wrong_step": sum(0 in ex.labels for ex in kept),
         "label_accuracy": counts["agree_with_verifier"] / max(counts["solutions"], 1)}
    return Done(m, f"{counts['solutions']} off-policy solutions ({counts['flawed']} flawed), annotator right on "
                   f"{100 * m['label_accuracy']:.1f}% (noise {c.noise}); {removed['removed_total']} dropped as evaluation "
                   f"problems; {len(kept)} examples -> {a.out}", outputs={a.out: kept})
