"""ProcessBench: the toy benchmark built the way the real one was (stage build_processbench), and the
evaluation of PRMs and a critic on it or on the real one (stage eval_processbench): configs and cores.

A PRM predicts the earliest step scored below a threshold (`prediction`), a critic the step its reply
names; `subset_table` scores predictions per subset as ProcessBench defines them (error / correct
accuracy, their harmonic mean F1), plus the PRM paper's accuracy on right answers reached through a
flawed step.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from typing import Literal

from prmlab.analysis.metrics import (
    best_threshold,
    first_below,
    mean,
    processbench_scores,
    refuse_nan,
    step_auc,
)
from prmlab.core.grading import to_response
from prmlab.core.io import read_jsonl
from prmlab.core.params import ParamsError, check
from prmlab.core.preflight import check_backend
from prmlab.core.records import Problem, ProcessBenchItem, Response
from prmlab.core.result import Done
from prmlab.engines.config import Sampling, SamplingParams, check_sampling
from prmlab.engines.generation import make_generator
from prmlab.prms.layouts import PRMScoring, PRMSpec, checked_prms
from prmlab.prompts import (
    critic_sampling_defaults,
    judge_messages,
    load_template,
    majority,
    parse_judgement,
    policy_messages,
)


@dataclass(frozen=True)
class BuildPBConfig(SamplingParams):
    n: int = 4
    temperature: float = 0.9
    top_p: float = 0.95
    max_tokens: int = 160
    seed: int = 2
    max_items: int = 200
    tune_share: float = 0.5  # items in subset toy_tune (threshold tuning); the rest are subset toy (reported)

    def __post_init__(self):
        check(self.n >= 1, "build_processbench.n must be >= 1")
        check(self.max_items >= 2, "build_processbench.max_items must be >= 2")
        check(0 <= self.tune_share < 1, "build_processbench.tune_share must be in [0, 1)")
        check_sampling("build_processbench", self.sampling)



def stratified_head(items: list[ProcessBenchItem], k: int) -> list[ProcessBenchItem]:
    """The first `k` items with erroneous (label >= 0) and error-free items in their proportions
    (at least one of each where both exist), in file order. ProcessBench lists erroneous items
    first, so a plain head would hold no error-free item and F1 would be 0 by construction."""
    if k >= len(items):
        return list(items)
    err = [i for i in items if i.label != -1]
    ok = [i for i in items if i.label == -1]
    n_err = round(k * len(err) / len(items))
    if err and ok:
        n_err = min(max(n_err, 1), k - 1)
    n_err = min(n_err, len(err))
    keep = {id(i) for i in err[:n_err] + ok[: k - n_err]}
    return [i for i in items if id(i) in keep]


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


@dataclass(frozen=True)
class BuildInputs:
    """What stage build_processbench@toy works on: the held-out problems (`prepare_build`)."""
    problems: list[Problem]


def prepare_build(a, cfg: dict) -> BuildInputs:
    check_backend("policy", cfg["policy"])  # before any model loads
    return BuildInputs(read_jsonl(a.problems, Problem))


def build_processbench(cfg: dict, data: BuildInputs, run) -> Done:
    """Stage build_processbench@toy: sample held-out problems, label by the verifier, balance (`balance`)."""
    c, problems = cfg["build_processbench"], data.problems
    responses: list[Response] = []
    if problems:
        with make_generator(cfg["policy"]) as gen:
            gen.progress = "build_processbench"
            outs = gen.chat([policy_messages(p.question) for p in problems], c.sampling())
        for p, comps in zip(problems, outs):
            for j, comp in enumerate(comps):
                r, _ = to_response(p, f"{p.id}/r{j}", comp.text, comp.num_tokens)
                if r is not None:
                    responses.append(r)
    items = balance({p.id: p for p in problems}, responses, c.max_items, c.seed, c.tune_share)
    if problems and not items:  # every F1 downstream would be "-": say why here, where it can be fixed
        right = sum(r.correct for r in responses)
        print(f"[build_processbench] WARNING: 0 items: of {len(responses)} usable responses {right} have the right "
              f"final answer and {len(responses) - right} a wrong one; a balanced set needs both (raise "
              f"toy.n_processbench or build_processbench.n)", file=sys.stderr)
    m = {"items": len(items), "error_items": sum(i.label != -1 for i in items),
         "correct_answer_flawed_items": sum(i.final_answer_correct and i.label != -1 for i in items),
         "candidates": len(responses),
         "truncated": sum(comp.truncated for comps in outs for comp in comps) if problems else 0}
    return Done(m, f"{m['items']} items ({m['error_items']} with an error, {m['correct_answer_flawed_items']} right "
                   f"answers with a flawed step) from {len(responses)} responses, {m['truncated']} cut by a length limit",
                outputs={"out": items})


@dataclass(frozen=True)
class EvalPBConfig(PRMScoring):
    subsets: list[str] = field(default_factory=lambda: ["toy"])
    threshold_subset: str = "toy"
    max_items: int = 0  # per subset, stratified; 0: all
    critic: bool = True
    critic_n: int = 1
    critic_style: Literal["critic", "paper"] = "critic"
    critic_template_file: str | None = None
    # None: the official default for the judge model's family (prmlab.prompts.critic_sampling_defaults)
    critic_temperature: float | None = None
    critic_top_p: float | None = None
    critic_top_k: int | None = None
    critic_max_tokens: int = 2048

    def __post_init__(self):
        check(bool(self.subsets), "eval_processbench.subsets must not be empty")
        check(self.threshold_subset in self.subsets, "eval_processbench.threshold_subset must be one of subsets")
        self.check_scoring("eval_processbench")
        check(self.critic_n >= 1, "eval_processbench.critic_n must be >= 1")
        check(self.critic_n == 1 or self.critic_temperature is None or self.critic_temperature > 0,
              "eval_processbench: critic_n > 1 needs critic_temperature > 0 (or null: the model family's default)")
        check(self.critic_temperature is None or self.critic_temperature >= 0,
              "eval_processbench.critic_temperature must be >= 0")
        check(self.critic_top_p is None or 0 < self.critic_top_p <= 1, "eval_processbench.critic_top_p must be in (0, 1]")
        check(self.critic_top_k is None or self.critic_top_k == -1 or self.critic_top_k >= 1,
              "eval_processbench.critic_top_k must be -1 (off) or >= 1")

    def critic_sampling(self, model_name: str) -> Sampling:
        """The critic's sampling, unset values resolved as ProcessBench's run_eval.py does for `model_name`."""
        t, p, k = critic_sampling_defaults(model_name, self.critic_n, self.critic_temperature, self.critic_top_p,
                                           self.critic_top_k)
        check(self.critic_n == 1 or t > 0, f"eval_processbench: critic_n > 1 needs temperature > 0 (resolved to {t})")
        return Sampling(n=self.critic_n, temperature=t, top_p=p, top_k=k, max_tokens=self.critic_max_tokens)


def load_items(cfg: EvalPBConfig, path: str) -> tuple[dict[str, list[ProcessBenchItem]], dict[str, int]]:
    """Items per configured subset (toy: built by build_processbench@toy; real: written by inputs@real),
    capped per subset by `max_items`, stratified so a capped run keeps both erroneous and error-free items;
    and the count of items left out per other subset ("(none)" for an item without one): said on stderr and kept in
    the metrics (`items_outside_subsets`), never dropped unseen."""
    from collections import Counter

    rows = read_jsonl(path, ProcessBenchItem)
    outside = dict(sorted(Counter(i.subset or "(none)" for i in rows if i.subset not in cfg.subsets).items()))
    if outside:
        print(f"[eval_processbench] WARNING: {path}: {sum(outside.values())} of {len(rows)} items are in no subset of "
              f"eval_processbench.subsets and are not evaluated: {outside} ((none): no subset field)", file=sys.stderr)
    out = {}
    for s in cfg.subsets:
        items = [i for i in rows if i.subset == s]
        if not items:
            # E.g. a weak toy policy gave no balanced items: a counted skip (metrics `empty_subsets`), not a crash.
            print(f"[eval_processbench] WARNING: {path}: no items of subset '{s}'; skipped "
                  f"(subsets present: {sorted({i.subset for i in rows})})", file=sys.stderr)
            continue
        out[s] = stratified_head(items, cfg.max_items) if cfg.max_items else items
    return out, outside


def subset_table(items: dict[str, list[ProcessBenchItem]], preds: dict[str, list[int | None]]) -> dict:
    table = {}
    for s, its in items.items():
        sc = processbench_scores([i.label for i in its], preds[s])
        flawed = [(i.label, p) for i, p in zip(its, preds[s]) if i.final_answer_correct and i.label != -1]
        sc["flawed_correct_answer_acc"] = 100.0 * mean([float(y == p) for y, p in flawed]) if flawed else 0.0
        sc["n_flawed_correct_answer"] = len(flawed)
        table[s] = sc
    table["average_f1"] = mean([table[s]["f1"] for s in items])
    return table


def prediction(item: ProcessBenchItem, scores: list[float], threshold: float) -> int | None:
    """The PRM's earliest wrong step; None (graded wrong, like an unparsed critic answer) when the item
    was truncated to fit max_length and no scored step is below the threshold: the dropped steps were
    never judged, so "no error" would be a guess."""
    p = first_below(scores, threshold)
    return None if p == -1 and len(scores) < len(item.steps) else p


def eval_prm(scorer, items: dict[str, list[ProcessBenchItem]], threshold_subset: str, name: str = "PRM") -> tuple[dict, dict]:
    scores = {s: scorer.score([(i.problem, i.steps) for i in its]) for s, its in items.items()}
    refuse_nan(name, [x for sc in scores.values() for x in sc])
    at05 = subset_table(items, {s: [prediction(i, x, 0.5) for i, x in zip(items[s], scores[s])] for s in items})
    # No items to tune on: 0.5, flagged (`threshold_fallback`), never a threshold tuned on the reported items.
    t = best_threshold(scores[threshold_subset], [i.label for i in items[threshold_subset]])[0] \
        if threshold_subset in items else 0.5
    tuned = subset_table(items, {s: [prediction(i, x, t) for i, x in zip(items[s], scores[s])] for s in items})
    held = [s for s in items if s != threshold_subset]
    for tab in (at05, tuned):  # the F1 of the subsets the threshold never saw (none if only one subset)
        tab["heldout_average_f1"] = mean([tab[s]["f1"] for s in held]) if held else None
    # Threshold-free: how well step scores separate the steps before the first error from it.
    auc = {s: step_auc(scores[s], [i.label for i in its]) for s, its in items.items()}
    held_auc = [auc[s] for s in held if auc[s] is not None]
    return {"threshold_0.5": at05, "tuned": {**tuned, "threshold": t, "threshold_subset": threshold_subset,
                                             "threshold_fallback": threshold_subset not in items},
            "step_auc": auc | {"heldout_average": mean(held_auc) if held_auc else None}}, scores


def eval_critic(gen, items: dict[str, list[ProcessBenchItem]], cfg: EvalPBConfig, model_name: str = "") -> tuple[dict, dict]:
    """The judge model as a critic; `model_name` (the judge's `model`) picks the official sampling defaults."""
    style = cfg.critic_style
    template = load_template(style, cfg.critic_template_file)
    sp = cfg.critic_sampling(model_name)
    preds, unparsed, truncated = {}, 0, 0
    gen.progress = f"critic {model_name}"
    for s, its in items.items():
        outs = gen.chat([judge_messages(template, style, i.problem, i.steps) for i in its], sp)
        preds[s] = [majority([parse_judgement(style, c.text, len(i.steps)) for c in comps]) for i, comps in zip(its, outs)]
        unparsed += sum(p is None for p in preds[s])
        truncated += sum(c.truncated for comps in outs for c in comps)
    table = subset_table(items, preds)
    table["unparsed"] = unparsed
    table["truncated_replies"] = truncated  # cut by critic_max_tokens / max_model_len
    table["sampling"] = {"style": style, "template_file": cfg.critic_template_file, "n": sp.n,
                         "temperature": sp.temperature, "top_p": sp.top_p, "top_k": sp.top_k}
    return table, preds


@dataclass(frozen=True)
class EvalPBInputs:
    """What stage eval_processbench works on, read and checked by `prepare_eval`."""
    prms: dict[str, PRMSpec]  # by name, each checked (its layout, files)
    items: dict[str, list[ProcessBenchItem]]  # by subset, the subsets eval_processbench.subsets names
    outside: dict[str, int]  # items of other subsets, by subset: counted, not evaluated


def prepare_eval(a, cfg: dict) -> EvalPBInputs:
    """The PRMs (checked) and the items per subset; the critic's template and sampling checked too."""
    c, judge = cfg["eval_processbench"], cfg["judge"]
    prms = checked_prms(a, cfg["train_prm"].sources, c.reference_prms, c.scorer)
    items, outside = load_items(c, a.items)
    if c.critic:  # fail now, not after the PRMs: a bad template or sampling setting
        check_backend("judge", judge)
        try:
            load_template(c.critic_style, c.critic_template_file)
        except OSError as e:  # an unreadable template file: one line, as a bad setting
            raise ParamsError(e) from None
        check_sampling("eval_processbench", lambda: c.critic_sampling(judge.model), n="critic_n",
                       temperature="critic_temperature", top_p="critic_top_p", top_k="critic_top_k",
                       max_tokens="critic_max_tokens")
    return EvalPBInputs(prms, items, outside)


def eval_processbench(cfg: dict, data: EvalPBInputs, run) -> Done:
    """Stage eval_processbench: every PRM (`eval_prm`) and the critic (`eval_critic`) on the items."""
    c, judge, (prms, items, outside) = cfg["eval_processbench"], cfg["judge"], (data.prms, data.items, data.outside)
    run.params({"prms": prms})
    results, rows = {}, []
    for name, spec in prms.items():
        # An outcome RM (layout orm) scores every prefix of steps as a response, as the paper scores ORMs here.
        with c.open_scorer(spec, per_prefix=True) as scorer:
            scorer.progress = f"eval_processbench {name}"
            res, scores = eval_prm(scorer, items, c.threshold_subset, name)
            res["truncated_items"] = scorer.truncated_items
            res["max_length"] = scorer.max_length
            if hasattr(scorer, "unparsed_votes"):  # a generative verifier: its sampling and its unparsed votes
                res["verifier"] = scorer.summary()
        results[f"prm/{name}"] = res
        # `pred`: the prediction at the tuned threshold, truncation included, which the report's findings
        # read back (never re-derived from the scores: a cut item has fewer scores than steps).
        t = res["tuned"]["threshold"]
        rows += [{"model": f"prm/{name}", "subset": s, "id": i.id, "label": i.label, "n_steps": len(i.steps),
                  "step_scores": sc, "pred": prediction(i, sc, t)}
                 for s, its in items.items() for i, sc in zip(its, scores[s])]
    if c.critic:
        with make_generator(judge) as gen:
            res, preds = eval_critic(gen, items, c, judge.model)
        results["critic/judge"] = res
        rows += [{"model": "critic/judge", "subset": s, "id": i.id, "label": i.label, "pred": p}
                 for s, its in items.items() for i, p in zip(its, preds[s])]
    m = {"items": {s: len(v) for s, v in items.items()}, "models": results,
         "empty_subsets": [s for s in c.subsets if s not in items], "items_outside_subsets": outside}
    best = {k: (v["tuned"]["average_f1"] if "tuned" in v else v["average_f1"]) for k, v in results.items()}
    return Done(m, f"{sum(len(v) for v in items.values())} items, {len(results)} models; average F1: "
                + ", ".join(f"{k}={f:.1f}" for k, f in best.items())
                + "".join(f"; {k}: {v['truncated_items']} items truncated to max_length (graded wrong unless an error was found)"
                          for k, v in results.items() if v.get("truncated_items"))
                + "".join(f"; {k}: {v['verifier']['unparsed_votes']} step votes without a verdict (scored not correct)"
                          for k, v in results.items() if v.get("verifier", {}).get("unparsed_votes"))
                + (f"; {sum(outside.values())} items outside eval_processbench.subsets, not evaluated" if outside else ""),
                outputs={"scores": rows})
