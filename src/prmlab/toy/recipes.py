"""How the toy models are taught and measured: training problems, training pairs, measurements.

Shared by stages bootstrap@toy (tokenizer, base, policy) and train_judge@toy (the judge, from the
base). Every label here comes from the exact verifier (prmlab.toy.world), never from a generator's
claim; the models never see the policy's own outputs in training.

    probs = training_problems(seed=0, shape=WorldShape(), n_corpus=6000, n_judge=4000, n_heldout=300)
    pairs = policy_pairs(probs["corpus"], render, seed=0, flawed_share=0.95, flaw_mix={"slip": 1.0})
    m, steps = measure_policy("models/policy", probs["heldout"], temperature=0.7, seed=0)
    m |= measure_judge("models/judge", probs["heldout"], steps, "critic", template, max_tokens=256)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from prmlab.records import Problem
from prmlab.toy.world import (
    canonical_solution,
    check_steps,
    make_flawed,
    make_problems,
    sample_flaw_kind,
    verify,
)


@dataclass(frozen=True)
class WorldShape:
    """The problems' size (params `toy.min_steps`, `toy.max_steps`): the models train on the same."""

    min_steps: int = 2
    max_steps: int = 5


def training_problems(seed: int, shape: WorldShape, n_corpus: int, n_judge: int, n_heldout: int) -> dict[str, list[Problem]]:
    # Seeds seed*1000 + 4..6; stage problems@toy draws the study's splits from toy.seed*1000 + 1..3,
    # so no two generator streams coincide whatever the two seeds are.
    mk = lambda off, n, name: make_problems(seed * 1000 + off, n, f"toy-{name}", shape.min_steps, shape.max_steps)  # noqa: E731
    return {"corpus": mk(4, n_corpus, "pc"), "judge": mk(5, n_judge, "jc"), "heldout": mk(6, n_heldout, "ho")}


def base_pairs(problems: list[Problem], render) -> list[tuple[str, str]]:
    return [(render(p.question), canonical_solution(p)) for p in problems]


def policy_pairs(problems: list[Problem], render, seed: int, flawed_share: float, flaw_mix: dict[str, float]) -> list[tuple[str, str]]:
    """Canonical solutions, a `flawed_share` of them with one habitual flaw (make_flawed systematic)."""
    rng = random.Random(seed + 11)
    pairs = []
    for p in problems:
        if rng.random() < flawed_share:
            steps, _ = make_flawed(rng, p, sample_flaw_kind(rng, flaw_mix), systematic=True)
            text = "\n\n".join(steps)
        else:
            text = canonical_solution(p)
        pairs.append((render(p.question), text))
    return pairs


def judge_pairs(problems: list[Problem], render_chat, seed: int, flawed_share: float, flaw_mix: dict[str, float],
                style: str, template: str, near_miss_share: float = 0.0,
                blind_spots: dict[str, float] | None = None) -> list[tuple[str, str]]:
    """Judge prompts over canonical or flawed solutions, and the reply a careful judge writes: a check
    per paragraph up to the first wrong one, then the verdict. Flaws are random (any value, any kind),
    except a `near_miss_share` of them that are off by one (make_flawed's systematic flaws): the
    slips a copying judge cannot catch, so the checks must be computed. `blind_spots` ({flaw kind:
    share}): that share of the solutions with a flaw of that kind get the reply of a grader blind to it
    (check_steps' `blind`), so the judge learns an LLM judge's systematic blind spot."""
    from prmlab.prompts import judge_messages, judge_target

    rng = random.Random(seed + 13)
    pairs = []
    for p in problems:
        blind: frozenset[str] = frozenset()
        if rng.random() < flawed_share:
            kind = sample_flaw_kind(rng, flaw_mix)
            steps, _ = make_flawed(rng, p, kind, systematic=rng.random() < near_miss_share)
            true_kind = check_steps(p, steps)[0].kind
            # Drawn only when a blind spot is set, so a judge without one sees the old stream exactly.
            if blind_spots and true_kind in blind_spots and rng.random() < blind_spots[true_kind]:
                blind = frozenset({true_kind})
        else:
            steps = canonical_solution(p).split("\n\n")
        verdict, checks = check_steps(p, steps, blind)
        pairs.append((render_chat(judge_messages(template, style, p.question, steps)),
                      judge_target(style, steps, verdict.first_error, checks)))
    return pairs


def measure_policy(policy_dir: str | Path, problems: list[Problem], temperature: float, seed: int) -> tuple[dict, list[list[str]]]:
    """Accuracy, right answers through a wrong step, error kinds (the verifier's); and the responses' steps."""
    from prmlab.generation import BackendConfig, Sampling, make_generator
    from prmlab.prompts import policy_messages
    from prmlab.steps import split_steps

    with make_generator(BackendConfig(backend="transformers", model=str(policy_dir), batch_size=128)) as gen:
        outs = gen.chat([policy_messages(p.question) for p in problems],
                        Sampling(n=1, temperature=temperature, top_p=0.8, max_tokens=160, seed=seed))
    verdicts = [verify(p, o[0].text) for p, o in zip(problems, outs)]
    n, right = len(problems), sum(v.final_correct for v in verdicts)
    m = {"policy_accuracy": right / n,
         "policy_flawed_correct_share": sum(v.final_correct and v.first_error != -1 for v in verdicts) / max(right, 1),
         "policy_error_free_share": sum(v.first_error == -1 for v in verdicts) / n, "eval_problems": n}
    for kind in ("slip", "operand", "answer", "unparseable", "empty"):
        m[f"policy_first_error_{kind}_share"] = sum(v.kind == kind for v in verdicts) / n
    return m, [split_steps(o[0].text) or [""] for o in outs]


def measure_judge(judge_dir: str | Path, problems: list[Problem], steps: list[list[str]], style: str, template: str,
                  max_tokens: int) -> tuple[dict, list[str]]:
    """First-error accuracy against the verifier, overall and on erroneous / error-free responses,
    beside always answering -1; and the judge's replies."""
    from prmlab.generation import BackendConfig, Sampling, make_generator
    from prmlab.prompts import judge_messages, parse_judgement

    with make_generator(BackendConfig(backend="transformers", model=str(judge_dir), batch_size=64)) as gen:
        outs = gen.chat([judge_messages(template, style, p.question, s) for p, s in zip(problems, steps)],
                        Sampling(n=1, temperature=0.0, max_tokens=max_tokens))
    preds = [parse_judgement(style, o[0].text, len(s)) for o, s in zip(outs, steps)]
    truth = [verify(p, s).first_error for p, s in zip(problems, steps)]
    kinds = [verify(p, s).kind for p, s in zip(problems, steps)]
    hit = [p == t for p, t in zip(preds, truth)]
    err = [h for h, t in zip(hit, truth) if t != -1]
    ok = [h for h, t in zip(hit, truth) if t == -1]
    n = len(problems)
    by_kind = {f"judge_accuracy_on_{k}_errors": sum(h for h, kk in zip(hit, kinds) if kk == k) / max(kinds.count(k), 1)
               for k in sorted({k for k in kinds if k})}  # where its errors concentrate (blind spots, issue #26)
    return {"judge_first_error_accuracy": sum(hit) / n, "judge_baseline_always_none": len(ok) / n,
            "judge_accuracy_on_erroneous": sum(err) / max(len(err), 1), "judge_accuracy_on_correct": sum(ok) / max(len(ok), 1),
            "judge_unparsed_share": sum(p is None for p in preds) / n, "judge_eval_responses": n, **by_kind}, [o[0].text for o in outs]
