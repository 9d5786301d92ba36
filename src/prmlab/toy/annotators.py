"""The toy world's PRM800K: human-like step labels on another policy's solutions.

The paper's human labels (PRM800K) differ from its MC and judge labels in three ways that matter for
"human labels are best" (Table 4): the solutions come from another policy (GPT-4's samples, not the
policy under study: off-policy), there are fewer of them, and people make mistakes. The toy analogue
has all three, so the claim no longer holds by construction (the `oracle` source, the verifier on the
policy's own responses, stays as an upper bound):
- off-policy: solutions sampled from a *writer*, another policy: the toy base LM fine-tuned as the
  policy is (params toy_models: steps, batch, lr, flawed share) but on its own corpus and seed
  (`writer_seed`) and with its own habits (`flaw_mix`), sampled as the policy is (params `sample`).
  Model text, not templates: template solutions with injected flaws taught a PRM far less (held-out
  F1 30.6 against 38.3 for the writer's samples, same size and noise; docs/study.md);
- fewer: one solution for each of `n` problems, picked from the writer's `samples`: a flawed one with
  probability `flawed_share` when the problem has one (PRM800K's second phase chose convincing wrong
  solutions), else a clean one (the MC/judge sets label every policy response);
- annotator noise: with probability `noise` a solution's label is wrong: an error-free solution gets a
  step flagged, a flawed one has its error missed (half of such cases) or placed on the next or
  previous step (the other half). The true first error is always the verifier's, on the very text.

    examples, counts = pick_and_annotate(problems, responses, seed=0, flawed_share=0.6, noise=0.1)

Its controls, written by the same stage: `human_exact`, the same picked solutions with the
verifier's labels (what the annotator's noise costs), and `human_onpolicy`, the same annotator picking as
many of the policy's own responses to its training problems (what off-policy solutions cost).

`toy_human_labels` is stage toy_human@toy's core (prmlab.core.stage runs it), with params `toy_human` (ToyHumanConfig).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from prmlab.core.io import DataError, read_json, read_jsonl
from prmlab.core.params import ParamsError, check
from prmlab.core.records import PRMExample, Problem, Response, distinct_responses, labels_from_first_error
from prmlab.core.result import Done
from prmlab.engines.cluster import check_engine, open_engine
from prmlab.pipeline.human_labels import drop_eval_problems
from prmlab.pipeline.sampling import sample_metrics, sample_shard
from prmlab.prompts import policy_messages
from prmlab.toy.recipes import fine_tune_policy, training_problems
from prmlab.toy.world import FLAW_KINDS


@dataclass(frozen=True)
class ToyHumanConfig:
    n: int = 300
    samples: int = 4
    flawed_share: float = 0.6
    flaw_mix: dict[str, float] = field(default_factory=lambda: {"slip": 0.3, "operand": 0.3, "skip": 0.2,
                                                                 "compensate": 0.1, "answer": 0.1})
    writer_seed: int = 1
    noise: float = 0.1

    def __post_init__(self):
        check(self.n >= 1 and self.samples >= 1, "toy_human.n and toy_human.samples must be >= 1")
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


def pick_and_annotate(problems: list[Problem], responses: list[Response], seed: int, flawed_share: float,
                      noise: float, n: int | None = None, exact: list[PRMExample] | None = None
                      ) -> tuple[list[PRMExample], dict[str, int]]:
    """One solution per problem (of its responses; a problem with none is skipped and counted), a flawed one
    with probability `flawed_share` when there is one, labelled by a noisy annotator; counts of what was
    picked and mislabelled. The true first error is the verifier's (Response.true_first_error).
    `n`: exactly that many solutions where the responses allow, in further rounds over the problems (another of
    a problem's responses each round, never one twice) when one each is too few, and stopping at n.
    `exact`: gets the same solutions with the verifier's labels, in the same order."""
    rng = random.Random(seed)
    by: dict[str, list[Response]] = {}
    for r in responses:
        by.setdefault(r.problem_id, []).append(r)
    out, counts = [], {"solutions": 0, "no_solution": 0, "flawed": 0, "false_alarm": 0, "missed": 0, "misplaced": 0,
                       "agree_with_verifier": 0}
    used: set[str] = set()
    for round_ in range(max(len(v) for v in by.values()) if by and n is not None else 1):
        before = len(out)
        for p in problems:
            if n is not None and len(out) >= n:
                break
            cands = [r for r in by.get(p.id, []) if r.response_id not in used]
            if not cands:
                counts["no_solution"] += round_ == 0
                continue
            flawed = [r for r in cands if r.true_first_error != -1]
            clean = [r for r in cands if r.true_first_error == -1]
            r = rng.choice(flawed if flawed and (not clean or rng.random() < flawed_share) else clean)
            used.add(r.response_id)
            truth = r.true_first_error
            given, mistake = annotator_label(rng, truth, len(r.steps), noise)
            counts["solutions"] += 1
            counts["flawed"] += truth != -1
            counts["agree_with_verifier"] += given == truth
            if mistake:
                counts[mistake] += 1
            labels = labels_from_first_error(len(r.steps), given)
            out.append(PRMExample(prompt=p.question, completions=r.steps[: len(labels)], labels=labels,
                                  response_id=r.response_id))
            if exact is not None:
                true_labels = labels_from_first_error(len(r.steps), truth)
                exact.append(PRMExample(prompt=p.question, completions=r.steps[: len(true_labels)], labels=true_labels,
                                        response_id=r.response_id))
        if n is None or len(out) >= n or len(out) == before:
            break
    return out, counts


def train_writer(base: Path, out: Path, c: ToyHumanConfig, models, world, run=None) -> dict:
    """The writer: the base fine-tuned as bootstrap@toy fine-tunes the policy (params toy_models), on its own
    corpus and seed (`c.writer_seed`) with its own flaw mix (`c.flaw_mix`), saved with its tokenizer to `out`."""
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    # Its corpus is stream writer_seed*1000 + 4: the policy's is toy_models.seed*1000 + 4, so they differ.
    corpus = training_problems(c.writer_seed, world, models.corpus, 0, 0)["corpus"]
    tok = AutoTokenizer.from_pretrained(base)
    render = lambda q: tok.apply_chat_template(policy_messages(q), tokenize=False, add_generation_prompt=True)  # noqa: E731
    metrics: dict = {}
    fine_tune_policy("writer", Qwen2ForCausalLM.from_pretrained(base, use_safetensors=True), tok, render, corpus,
                     c.writer_seed, c.flaw_mix, models, out, metrics, run)
    return metrics


@dataclass(frozen=True)
class ToyHumanInputs:
    """What stage toy_human@toy works on, read and checked by `prepare_toy_human`."""
    eval_texts: dict[str, list[str]]  # the evaluation sets' problem texts, by set (never annotated)
    base: Path  # the toy base LM's folder (the writer is fine-tuned from it)
    writer: str  # the writer's folder the core writes
    policy_problems: list[Problem]  # the policy's training problems ...
    policy_responses: list[Response]  # ... and responses: the on-policy control's


def prepare_toy_human(a, cfg: dict) -> ToyHumanInputs:
    """A writer that would be the policy refused; the evaluation sets' problem texts, the base and writer folders,
    and the policy's training problems and responses (the on-policy control's), checked before any model loads."""
    if cfg["toy_human"].writer_seed == cfg["toy_models"].seed:
        raise ParamsError("toy_human.writer_seed equals toy_models.seed: the writer would be the policy (set another seed)")

    check_engine(cfg["engine"], "toy_human", cfg["policy"])
    problems, responses = read_jsonl(a.problems, Problem), read_jsonl(a.samples, Response)
    if (bad := next((r for r in responses if r.true_first_error is None), None)) is not None:
        raise DataError(f"{a.samples}: response {bad.response_id!r} has no verifier label (field 'true_first_error'): "
                        "the on-policy control needs the toy world's responses")
    return ToyHumanInputs(read_json(a.eval_texts), Path(a.base), a.writer, problems, responses)


def toy_human_labels(cfg: dict, data: ToyHumanInputs, run) -> Done:
    """Stage toy_human@toy: the writer into --writer, `samples` solutions from it to each of `toy_human.n`
    problems of their own stream (toy.seed * 1000 + 7, the study's difficulty mix), one picked and annotated
    per problem, minus the problems an evaluation set holds (--out); the same solutions with the verifier's
    labels (--exact-out); and as many of the policy's own training responses, picked and annotated alike
    (--onpolicy-out; the policy's problems are training problems, none an evaluation set holds)."""
    import dataclasses

    eval_texts, base, writer = data.eval_texts, data.base, data.writer
    policy_problems, policy_responses, c, toy = data.policy_problems, data.policy_responses, cfg["toy_human"], cfg["toy"]
    m = train_writer(base, Path(writer), c, cfg["toy_models"], toy, run)
    problems = toy.problems(7, c.n, "toy-human")
    scfg = dataclasses.replace(cfg["sample"], n=c.samples, max_problems=0)
    with open_engine(cfg, "toy_human", dataclasses.replace(cfg["policy"], model=writer)) as eng:
        responses, metas = eng.shards(problems, scfg.shard_size, None, sample_shard(scfg), unit="problems")
    dropped = {k: sum(m[k] for m in metas.values()) for k in ("no_steps", "no_answer", "truncated")}
    exact: list[PRMExample] = []
    examples, counts = pick_and_annotate(problems, responses, toy.seed, c.flawed_share, c.noise, exact=exact)
    kept, removed = drop_eval_problems(examples, eval_texts)
    exact_kept, _ = drop_eval_problems(exact, eval_texts)
    # the on-policy control: as many solutions as `human` keeps, its own stream of picks and mistakes
    onpolicy, on_counts = pick_and_annotate(policy_problems, policy_responses, toy.seed * 1000 + 8, c.flawed_share,
                                            c.noise, n=len(kept))
    m |= {"onpolicy_examples": len(onpolicy), "onpolicy_flawed": on_counts["flawed"],
          "onpolicy_label_accuracy": on_counts["agree_with_verifier"] / max(on_counts["solutions"], 1),
          "exact_examples": len(exact_kept)}
    m |= {**counts, **removed, **{f"dropped_{k}": v for k, v in dropped.items()}, "examples": len(kept),
          **{f"writer_{k}": v for k, v in sample_metrics(responses, len(problems), scfg).items()},
          "writer_distinct": distinct_responses(responses),
          "hard_problems": sum(bool(p.meta.get("hard")) for p in problems),
          "with_wrong_step": sum(0 in ex.labels for ex in kept),
          "label_accuracy": counts["agree_with_verifier"] / max(counts["solutions"], 1)}
    return Done(m, f"writer right on {100 * m['writer_accuracy']:.1f}% of {m['writer_kept']} samples; {counts['solutions']} "
                   f"picked ({counts['flawed']} flawed), annotator right on {100 * m['label_accuracy']:.1f}% (noise {c.noise}); "
                   f"{removed['removed_total']} dropped as evaluation problems; {len(kept)} examples; controls: "
                   f"{len(exact_kept)} exact, {len(onpolicy)} on-policy ({100 * m['onpolicy_label_accuracy']:.1f}% right)",
                outputs={"out": kept, "exact_out": exact_kept, "onpolicy_out": onpolicy})
