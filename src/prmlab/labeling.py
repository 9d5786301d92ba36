"""Step labels: Monte Carlo estimation and LLM-as-a-judge (the sets and the audit: prmlab.training_sets).

MC estimation (Math-Shepherd style, as in the PRM paper): for step i, k completions continue from
the prefix of steps 0..i; soft label = share reaching the gold answer, hard label = soft > threshold
(paper: 0, i.e. "at least one does"). The last step needs no rollouts: its prefix is the whole
response, so its soft label is the response's own correctness. `binary` search (OmegaPRM's idea)
finds the first hard-negative step in O(log n) prefixes, assuming prefix correctness is monotone.
Either way a prefix that several responses share is estimated once (`_Rollouts`).

The label functions are pure over records and an injected `Generator`; `label_mc` and `label_judge`
(with their `prepare_*`) are the stages' cores (prmlab.stage runs them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from prmlab.generation import BackendConfig, Generator, Sampling, check_sampling
from prmlab.grading import is_equivalent
from prmlab.io import DataError, ShardWriter, fingerprint, read_problems_and_responses, sharded
from prmlab.params import ParamsError, check
from prmlab.prompts import judge_messages, majority, parse_judgement, policy_messages
from prmlab.records import JudgeLabel, MCLabel, Problem, Response, distinct_responses
from prmlab.steps import extract_answer, join_steps

SOURCES = ("mc_hard", "mc_soft", "judge", "consensus", "oracle", "outcome")


def rollout_prompt(gen: Generator, problem: Problem, steps: list[str], upto: int) -> str:
    """Chat-rendered policy prompt + steps 0..upto, ready for the next step."""
    return gen.render(policy_messages(problem.question)) + gen.plain(join_steps(steps[: upto + 1])) + "\n\n"


def _grade_rollouts(problem: Problem, steps: list[str], upto: int, texts: list[str]) -> tuple[int, int]:
    """(#reaching gold, #empty) for the completions from prefix 0..upto."""
    prefix = join_steps(steps[: upto + 1]) + "\n\n"
    ok = empty = 0
    for t in texts:
        if not t.strip():
            empty += 1  # an empty rollout reaches nothing: counted, graded wrong
            continue
        ok += is_equivalent(problem.gold_answer, extract_answer(prefix + t))
    return ok, empty


@dataclass
class MCStats:
    rollouts: int = 0
    generated_tokens: int = 0
    empty_rollouts: int = 0
    shared_prefixes: int = 0  # prefix estimates reused from another response with the same prefix


class _Rollouts:
    """The k rollouts of each distinct prefix, generated once per labelling call.

    Responses that share a prefix share its estimate: a policy sampled at temperature 0.7 repeats
    itself (the toy policy's 6 samples per problem were 69% duplicates of one another), and the MC
    value is a property of the prefix, not of the response it came from. The first response that
    needs a prefix pays for it (`fresh`); the others reuse its rollouts, so identical prefixes get
    identical labels and the rollout count is what was generated."""

    def __init__(self, gen: Generator, sampling: Sampling, stats: MCStats):
        self.gen, self.sampling, self.stats, self.cache = gen, sampling, stats, {}

    def __call__(self, prompts: list[str]) -> list[tuple[list, bool]]:
        new = [p for p in dict.fromkeys(prompts) if p not in self.cache]
        if new:
            self.cache.update(zip(new, self.gen.generate(new, self.sampling)))
        out, unpaid = [], set(new)
        for p in prompts:
            fresh = p in unpaid  # its first occurrence in this call pays
            unpaid.discard(p)
            comps = self.cache[p]
            if fresh:
                self.stats.rollouts += len(comps)
                self.stats.generated_tokens += sum(c.num_tokens for c in comps)
            else:
                self.stats.shared_prefixes += 1
            out.append((comps, fresh))
        return out


def mc_exhaustive(gen: Generator, problems: dict[str, Problem], responses: list[Response], sampling: Sampling,
                  threshold: float, stats: MCStats) -> list[MCLabel]:
    """One generate() call for every distinct (response, step) prefix of the batch."""
    jobs = [(r, i) for r in responses for i in range(len(r.steps) - 1)]
    outs = _Rollouts(gen, sampling, stats)([rollout_prompt(gen, problems[r.problem_id], r.steps, i) for r, i in jobs])
    soft: dict[str, list[float]] = {r.response_id: [0.0] * len(r.steps) for r in responses}
    spent = {r.response_id: 0 for r in responses}
    cut = {r.response_id: 0 for r in responses}
    for (r, i), (comps, fresh) in zip(jobs, outs):
        ok, empty = _grade_rollouts(problems[r.problem_id], r.steps, i, [c.text for c in comps])
        soft[r.response_id][i] = ok / len(comps)
        cut[r.response_id] += sum(c.truncated for c in comps)
        if fresh:
            spent[r.response_id] += len(comps)
            stats.empty_rollouts += empty
    labels = []
    for r in responses:
        s = soft[r.response_id]
        s[-1] = 1.0 if r.correct else 0.0
        labels.append(_label(r, s, threshold, spent[r.response_id], "exhaustive", cut[r.response_id]))
    return labels


def _label(r: Response, soft: list[float], threshold: float, rollouts: int, search: str, truncated: int) -> MCLabel:
    hard = [int(x > threshold) for x in soft]
    fe = next((i for i, h in enumerate(hard) if h == 0), -1)
    keep = len(hard) if fe == -1 else fe + 1  # steps after the first error are not labelled
    return MCLabel(response_id=r.response_id, soft=soft[:keep], hard=hard[:keep], first_error=fe,
                   rollouts=rollouts, search=search, truncated=truncated, content_md5=r.content_md5())


def mc_binary(gen: Generator, problems: dict[str, Problem], responses: list[Response], sampling: Sampling,
              threshold: float, stats: MCStats) -> list[MCLabel]:
    """First hard-negative step by binary search over prefixes, all responses advancing together.

    Soft values exist only for the prefixes actually estimated; steps before the found error are
    inferred positive (soft written as 1.0), as OmegaPRM does. Use `exhaustive` for mc_soft studies.
    """
    n = {r.response_id: len(r.steps) for r in responses}
    lo = {r.response_id: 0 for r in responses}
    hi = {r.response_id: n[r.response_id] - 1 for r in responses}  # last step: known from correctness
    known: dict[str, dict[int, float]] = {r.response_id: {n[r.response_id] - 1: 1.0 if r.correct else 0.0} for r in responses}
    spent = {r.response_id: 0 for r in responses}
    cut = {r.response_id: 0 for r in responses}
    by_id = {r.response_id: r for r in responses}
    rollouts = _Rollouts(gen, sampling, stats)  # across rounds: another response may reach a prefix later
    while True:
        # Invariant: the first negative step lies in [lo, hi], or there is none if hi's is positive.
        active = [rid for rid in lo if lo[rid] < hi[rid]]
        if not active:
            break
        mids = {rid: (lo[rid] + hi[rid]) // 2 for rid in active}
        outs = rollouts([rollout_prompt(gen, problems[by_id[rid].problem_id], by_id[rid].steps, mids[rid]) for rid in active])
        for rid, (comps, fresh) in zip(active, outs):
            r = by_id[rid]
            ok, empty = _grade_rollouts(problems[r.problem_id], r.steps, mids[rid], [c.text for c in comps])
            known[rid][mids[rid]] = ok / len(comps)
            cut[rid] += sum(c.truncated for c in comps)
            if fresh:
                spent[rid] += len(comps)
                stats.empty_rollouts += empty
            if ok / len(comps) > threshold:
                lo[rid] = mids[rid] + 1
            else:
                hi[rid] = mids[rid]
    labels = []
    for rid, r in by_id.items():
        # The search ends with lo == hi, and hi's prefix is always estimated (or known: the last step).
        soft = [known[rid].get(j, 1.0) for j in range(n[rid])]
        labels.append(_label(r, soft, threshold, spent[rid], "binary", cut[rid]))
    return labels


def judge_labels(gen: Generator, problems: dict[str, Problem], responses: list[Response], template: str, style: str,
                 sampling: Sampling) -> list[JudgeLabel]:
    """The judge's verdict per response; identical responses to a problem are judged once (as MC
    estimates a shared prefix once) and share the verdict."""
    first = {}
    for r in responses:
        first.setdefault((r.problem_id, tuple(r.steps)), r)
    convs = [judge_messages(template, style, problems[r.problem_id].question, r.steps) for r in first.values()]
    outs = dict(zip(first, gen.chat(convs, sampling)))
    labels = []
    for r in responses:
        comps = outs[(r.problem_id, tuple(r.steps))]
        votes = [parse_judgement(style, c.text, len(r.steps)) for c in comps]
        fe = majority(votes)
        labels.append(JudgeLabel(response_id=r.response_id, first_error=fe, parsed=fe is not None,
                                 raw=[c.text for c in comps], votes=votes, truncated=sum(c.truncated for c in comps),
                                 content_md5=r.content_md5()))
    return labels


def labels_from_first_error(n_steps: int, first_error: int) -> list[int]:
    """1 for steps before the first error, 0 at it, nothing after; all 1 when there is none."""
    return [1] * n_steps if first_error == -1 else [1] * first_error + [0]


@dataclass(frozen=True)
class LabelMCConfig:
    k: int = 8
    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = -1
    max_tokens: int = 1024
    threshold: float = 0.0
    search: Literal["exhaustive", "binary"] = "exhaustive"
    compare_sample: int = 64  # binary mode: responses also labelled exhaustively for the comparison
    shard_size: int = 64  # responses per shard
    seed: int = 0

    def __post_init__(self):
        check(self.k >= 1, "label_mc.k must be >= 1")
        check(0 <= self.threshold < 1, "label_mc.threshold must be in [0, 1)")
        check(self.shard_size >= 1 and self.compare_sample >= 0, "label_mc.shard_size >= 1, compare_sample >= 0")
        check_sampling("label_mc", self.sampling, n="k")

    def sampling(self, shard: int = 0) -> Sampling:
        return Sampling(n=self.k, temperature=self.temperature, top_p=self.top_p, top_k=self.top_k,
                        max_tokens=self.max_tokens, seed=self.seed + shard)


def label_responses(gen, problems: dict[str, Problem], responses: list[Response], cfg: LabelMCConfig,
                    stats: MCStats, shard: int = 0) -> list[MCLabel]:
    fn = mc_binary if cfg.search == "binary" else mc_exhaustive
    return fn(gen, problems, responses, cfg.sampling(shard), cfg.threshold, stats)


def read_labelling_inputs(a, backend: BackendConfig, need_gold: bool) -> tuple[dict[str, Problem], list[Response]]:
    """Stage label_mc's and label_judge's inputs, cross-checked before any model loads: the problems (by id)
    and the responses, each of which must name a known problem (with a gold answer, for MC rollouts)."""
    from prmlab.preflight import check_backend

    check_backend("policy" if need_gold else "judge", backend)
    problems, responses = read_problems_and_responses(a.problems, a.samples)
    no_gold = sorted({r.problem_id for r in responses if not problems[r.problem_id].gold_answer}) if need_gold else []
    if no_gold:
        raise DataError(f"{a.problems}: field 'gold_answer' is null for problem(s) {no_gold[:5]}, "
                        "which MC rollouts are graded against")
    return problems, responses


def prepare_mc(a, cfg: dict) -> tuple[ShardWriter, dict[str, Problem], list[Response]]:
    from prmlab import generation, grading
    from prmlab import labeling as this
    from prmlab.preflight import code_version, model_identity
    from prmlab.tracking import md5_path

    c, bcfg = cfg["label_mc"], cfg["policy"]
    problems, responses = read_labelling_inputs(a, bcfg, need_gold=True)
    # Shards are reused only if made by the same weights, tokenizer and labelling code (see preflight). The
    # writer takes the output's lock here, before the MLflow run opens or the model loads: a second run stops now.
    writer = ShardWriter(a.out, fingerprint(c, bcfg, md5_path(a.problems), md5_path(a.samples),
                                            model_identity(bcfg.model), code_version(this, generation, grading)))
    return writer, problems, responses


def label_mc(a, cfg: dict, data, run):
    """Stage label_mc: MC labels for every response, written shard by shard (a killed run resumes)."""
    from prmlab.generation import make_generator
    from prmlab.stage import Done

    c = cfg["label_mc"]
    writer, problems, responses = data
    stats = MCStats()
    t0 = time.monotonic()
    with make_generator(cfg["policy"]) as gen:
        labels = sharded(responses, c.shard_size, writer, lambda i, chunk: label_responses(gen, problems, chunk, c, stats, i),
                         "label_mc", unit="responses", cls=MCLabel)
        writer.finish((len(responses) + c.shard_size - 1) // c.shard_size)
        seconds = time.monotonic() - t0
        # The metrics file holds what the labels determine, so a resumed run writes the same file as an
        # uninterrupted one; what depends on this run (shards redone, time, tokens) goes to MLflow only.
        m = {"responses": len(labels), "rollouts": sum(lab.rollouts for lab in labels),
             "first_error_share": sum(lab.first_error != -1 for lab in labels) / max(len(labels), 1),
             # A rollout cut by max_tokens / max_model_len reaches no answer and counts as failing: a
             # length limit too tight for the policy turns correct steps into MC first errors.
             "truncated_rollouts": sum(lab.truncated for lab in labels),
             "responses_with_truncated_rollouts": sum(lab.truncated > 0 for lab in labels)}
        if c.search == "exhaustive":  # what labelling each response's prefixes apart would have cost
            m["rollouts_unshared"] = c.k * sum(len(r.steps) - 1 for r in responses)
        this_run = {"rollouts_this_run": stats.rollouts, "shared_prefixes_this_run": stats.shared_prefixes,
                    "empty_rollouts_this_run": stats.empty_rollouts, "generated_tokens_this_run": stats.generated_tokens,
                    "seconds": seconds, "tokens_per_second": stats.generated_tokens / seconds if seconds else 0.0}
        if c.search == "binary" and c.compare_sample:
            sub = responses[: c.compare_sample]
            ex = mc_exhaustive(gen, problems, sub, c.sampling(10**6), c.threshold, MCStats())
            bin_fe = {lab.response_id: lab.first_error for lab in labels}
            ex_roll = sum(e.rollouts for e in ex)
            bin_roll = sum(lab.rollouts for lab in labels if lab.response_id in {e.response_id for e in ex})
            m.update(binary_vs_exhaustive_agreement=sum(bin_fe[e.response_id] == e.first_error for e in ex) / len(ex),
                     binary_rollouts_saved_share=1 - bin_roll / max(ex_roll, 1), compared_responses=len(ex))
    if m["truncated_rollouts"]:  # each counts as failing: a too-tight limit makes false MC first errors
        print(f"[label_mc] warning: {m['truncated_rollouts']} rollouts hit label_mc.max_tokens or policy.max_model_len "
              "and count as failing; raise them if the policy's answers need more room", flush=True)
    shared = f", {m['rollouts_unshared']} without shared prefixes" if "rollouts_unshared" in m else ""
    return Done(m, f"{len(labels)} responses labelled with {m['rollouts']} rollouts ({c.search}, k={c.k}{shared}), "
                   f"{m['truncated_rollouts']} rollouts cut by a length limit (in {m['responses_with_truncated_rollouts']} "
                   f"responses' labels), {this_run['tokens_per_second']:.0f} tok/s this run; label quality: "
                   "stage consensus", logged=this_run)


@dataclass(frozen=True)
class LabelJudgeConfig:
    style: Literal["critic", "paper"] = "critic"
    template_file: str | None = None
    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int = 2048
    shard_size: int = 128
    seed: int = 0

    def __post_init__(self):
        check(self.n >= 1, "label_judge.n must be >= 1")
        check(self.n == 1 or self.temperature > 0, "label_judge: majority vote (n > 1) needs temperature > 0")
        check(self.shard_size >= 1, "label_judge.shard_size must be >= 1")
        check_sampling("label_judge", self.sampling)

    def sampling(self, shard: int = 0) -> Sampling:
        return Sampling(n=self.n, temperature=self.temperature, top_p=self.top_p, top_k=self.top_k,
                        max_tokens=self.max_tokens, seed=self.seed + shard)


def prepare_judge(a, cfg: dict) -> tuple[ShardWriter, str, dict[str, Problem], list[Response]]:
    """The output's writer, the judge's template (checked: prmlab.prompts.load_template) and the inputs."""
    from prmlab import generation, prompts
    from prmlab import labeling as this
    from prmlab.preflight import code_version, model_identity
    from prmlab.prompts import load_template
    from prmlab.tracking import md5_path

    c, bcfg = cfg["label_judge"], cfg["judge"]
    try:
        template = load_template(c.style, c.template_file)
    except OSError as e:  # an unreadable template_file is a params problem: one line, not a traceback
        raise ParamsError(str(e)) from None
    problems, responses = read_labelling_inputs(a, bcfg, need_gold=False)
    # Shards are reused only if made by the same weights, tokenizer, template and judging code. The writer
    # takes the output's lock here, before the MLflow run opens or the model loads: a second run stops now.
    writer = ShardWriter(a.out, fingerprint(c, bcfg, template, md5_path(a.problems), md5_path(a.samples),
                                            model_identity(bcfg.model), code_version(this, generation, prompts)))
    return writer, template, problems, responses


def label_judge(a, cfg: dict, data, run):
    """Stage label_judge: the judge's labels for every response, written shard by shard (a killed run resumes)."""
    from prmlab.generation import make_generator
    from prmlab.stage import Done

    c = cfg["label_judge"]
    writer, template, problems, responses = data
    with make_generator(cfg["judge"]) as gen:
        labels = sharded(responses, c.shard_size, writer,
                         lambda i, chunk: judge_labels(gen, problems, chunk, template, c.style, c.sampling(i)),
                         "label_judge", unit="responses", cls=JudgeLabel)
        writer.finish((len(responses) + c.shard_size - 1) // c.shard_size)
    n = max(len(labels), 1)
    votes = [v for lab in labels for v in lab.votes]
    m = {"responses": len(labels), "distinct_responses": distinct_responses(responses),
         "unparsed": sum(not lab.parsed for lab in labels),
         "unparsed_share": sum(not lab.parsed for lab in labels) / n,
         "unparsed_votes": sum(v is None for v in votes),
         "truncated_replies": sum(lab.truncated for lab in labels),  # cut by max_tokens / max_model_len
         "first_error_share": sum(lab.first_error not in (None, -1) for lab in labels) / n}
    return Done(m, f"{len(labels)} responses judged ({c.style}, n={c.n}), {m['unparsed']} unparsed, "
                   f"{m['truncated_replies']} replies cut by a length limit; label quality: stage consensus")


