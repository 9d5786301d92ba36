"""Step labels: Monte Carlo estimation and LLM-as-a-judge (the sets and the audit: prmlab.pipeline.training_sets).

MC estimation (Math-Shepherd style, as in the PRM paper): for step i, k completions continue from
the prefix of steps 0..i; soft label = share reaching the gold answer, hard label = soft > threshold
(paper: 0, i.e. "at least one does"). The last step needs no rollouts: its prefix is the whole
response, so its soft label is the response's own correctness. Labels stop at the first hard-negative
step, so every search below spends rollouts only to find it (`label_mc.search`):
- `exhaustive`: every prefix (the reference).
- `sequential`: prefixes in order, stopping at the first from which no rollout succeeds: exhaustive's
  labels exactly on the same draws (they stop at the first error too), without the prefixes after it.
- `binary` (OmegaPRM's idea): the first negative prefix in O(log n) estimates, assuming prefix
  correctness is monotone; steps before it inferred positive.
- `scan` (SCAN-PRM's rules): a response whose final answer is right gets no rollouts and every step
  positive; a wrong one is scanned from its first step and stops at the first prefix from which no
  rollout succeeds. On a wrong response this is exhaustive MC's label exactly (same draws), at the
  cost of the prefixes up to the error; on a right one it overrules MC's false alarms.
- `scan_binary`: right responses as `scan`, wrong ones by binary search.
Whatever the search, a prefix that several responses share is estimated once (`_Rollouts`), and
`compare_with_exhaustive` measures what a cheaper search costs in label quality on the same draws.

The label functions are pure over records and an injected `Generator`; `label_mc` and `label_judge`
(with their `prepare_*`) are the stages' cores (prmlab.core.stage runs them), their shards run by a
`prmlab.engines.cluster.Engine` (this process, or replicas on a Ray cluster).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass

from prmlab import prompts
from prmlab.core import grading
from prmlab.core.grading import is_equivalent
from prmlab.core.io import DataError, ShardWriter, fingerprint, read_problems_and_responses
from prmlab.core.params import ParamsError
from prmlab.core.preflight import check_backend, code_version, model_identity
from prmlab.core.provenance import md5_path
from prmlab.core.records import JudgeLabel, MCLabel, Problem, Response, distinct_responses
from prmlab.core.result import Done
from prmlab.core.steps import extract_answer, join_steps
from prmlab.engines import generation
from prmlab.engines.cluster import check_engine, open_engine
from prmlab.engines.config import BackendConfig, Sampling
from prmlab.engines.generation import Generator
from prmlab.pipeline.labeling_config import LabelMCConfig
from prmlab.prompts import judge_messages, load_template, majority, parse_judgement, policy_messages


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
    identical labels and the rollout count is what was generated.

    `cache`: another `_Rollouts`' estimates to reuse (the same draws: `compare_with_exhaustive`); `asked`
    holds every distinct prefix a search asked for, so `k * len(asked)` is what it costs on its own."""

    def __init__(self, gen: Generator, sampling: Sampling, stats: MCStats, cache: dict | None = None):
        self.gen, self.sampling, self.stats = gen, sampling, stats
        self.cache = {} if cache is None else cache
        self.asked: set[str] = set()

    def __call__(self, prompts: list[str]) -> list[tuple[list, bool]]:
        self.asked.update(prompts)
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
                  threshold: float, stats: MCStats, rollouts: _Rollouts | None = None) -> list[MCLabel]:
    """One generate() call for every distinct (response, step) prefix of the batch."""
    jobs = [(r, i) for r in responses for i in range(len(r.steps) - 1)]
    outs = (rollouts or _Rollouts(gen, sampling, stats))([rollout_prompt(gen, problems[r.problem_id], r.steps, i) for r, i in jobs])
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
              threshold: float, stats: MCStats, rollouts: _Rollouts | None = None, search: str = "binary") -> list[MCLabel]:
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
    rollouts = rollouts or _Rollouts(gen, sampling, stats)  # across rounds: another response may reach a prefix later
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
        labels.append(_label(r, soft, threshold, spent[rid], search, cut[rid]))
    return labels


def mc_scan(gen: Generator, problems: dict[str, Problem], responses: list[Response], sampling: Sampling,
            threshold: float, stats: MCStats, rollouts: _Rollouts | None = None, search: str = "scan") -> list[MCLabel]:
    """SCAN's rules: no rollouts for a response whose final answer is right (every step positive, soft 1.0);
    a wrong one scanned prefix by prefix, all responses advancing together, until the first prefix whose
    rollouts all fail (`scan`), or by binary search (`scan_binary`). A response that passes every prefix
    gets its last step's label from its own answer. `sequential`: the scan for every response, right ones too."""
    rollouts = rollouts or _Rollouts(gen, sampling, stats)
    wrong = [r for r in responses if search == "sequential" or not r.correct]  # sequential: no right-answer rule
    if search == "scan_binary":
        found = mc_binary(gen, problems, wrong, sampling, threshold, stats, rollouts, search)
    else:
        soft: dict[str, list[float]] = {r.response_id: [] for r in wrong}
        spent = {r.response_id: 0 for r in wrong}
        cut = {r.response_id: 0 for r in wrong}
        stopped: set[str] = set()
        while True:
            active = [r for r in wrong if r.response_id not in stopped and len(soft[r.response_id]) < len(r.steps) - 1]
            if not active:
                break
            outs = rollouts([rollout_prompt(gen, problems[r.problem_id], r.steps, len(soft[r.response_id])) for r in active])
            for r, (comps, fresh) in zip(active, outs):
                rid, i = r.response_id, len(soft[r.response_id])
                ok, empty = _grade_rollouts(problems[r.problem_id], r.steps, i, [c.text for c in comps])
                soft[rid].append(ok / len(comps))
                cut[rid] += sum(c.truncated for c in comps)
                if fresh:
                    spent[rid] += len(comps)
                    stats.empty_rollouts += empty
                if ok / len(comps) <= threshold:
                    stopped.add(rid)
        found = [_label(r, soft[r.response_id] + ([] if r.response_id in stopped else [float(r.correct)]), threshold,
                        spent[r.response_id], search, cut[r.response_id]) for r in wrong]
    by_id = {lab.response_id: lab for lab in found}
    return [by_id.get(r.response_id) or _label(r, [1.0] * len(r.steps), threshold, 0, search, 0) for r in responses]


def mc_search(search: str, gen: Generator, problems: dict[str, Problem], responses: list[Response], sampling: Sampling,
              threshold: float, stats: MCStats, rollouts: _Rollouts | None = None) -> list[MCLabel]:
    """MC labels of `responses` by the named search (module docstring), in input order."""
    if search == "exhaustive":
        return mc_exhaustive(gen, problems, responses, sampling, threshold, stats, rollouts)
    if search == "binary":
        return mc_binary(gen, problems, responses, sampling, threshold, stats, rollouts)
    return mc_scan(gen, problems, responses, sampling, threshold, stats, rollouts, search)  # scan, scan_binary, sequential


def verifier_accuracy(labels: list[MCLabel], responses: list[Response]) -> float | None:
    """Share of `labels` whose first error is the verifier's (toy responses carry it); None where none does."""
    known = [(r, lab) for r, lab in zip(responses, labels) if r.true_first_error is not None]
    return sum(r.true_first_error == lab.first_error for r, lab in known) / len(known) if known else None


def agreement(a: list[MCLabel], b: list[MCLabel], responses: list[Response]) -> dict:
    """Two label lists of the same responses: first errors equal, hard labels equal over the steps both label
    (each stops at its own first error), and b's first-error accuracy against the verifier where known."""
    steps = [(sum(x == y for x, y in zip(p.hard, q.hard)), min(len(p.hard), len(q.hard))) for p, q in zip(a, b)]
    out = {"first_error_agreement": sum(p.first_error == q.first_error for p, q in zip(a, b)) / max(len(a), 1),
           "step_label_agreement": sum(s[0] for s in steps) / max(sum(s[1] for s in steps), 1)}
    if (acc := verifier_accuracy(b, responses)) is not None:
        out["verifier_first_error_accuracy"] = acc
    return out


def compare_with_exhaustive(gen: Generator, problems: dict[str, Problem], responses: list[Response], search: str,
                            sampling: Sampling, threshold: float, own: dict[str, MCLabel]) -> dict:
    """What `search` saves and costs against exhaustive MC on `responses`, measured on the same draws: exhaustive
    MC estimates every prefix, then `search` runs on those very estimates (a shared cache), so the two differ only
    by the search's rule (binary's monotonicity, SCAN's right-answer rule), never by sampling noise. `own`: the
    stage's labels of the same responses (their own draws: rule and noise together). On the toy, each is also
    scored against the verifier's first error."""
    ex_stats, opt_stats = MCStats(), MCStats()
    ex_roll = _Rollouts(gen, sampling, ex_stats)
    ex = mc_exhaustive(gen, problems, responses, sampling, threshold, ex_stats, ex_roll)
    opt_roll = _Rollouts(gen, sampling, opt_stats, cache=ex_roll.cache)
    opt = mc_search(search, gen, problems, responses, sampling, threshold, opt_stats, opt_roll)
    same = agreement(ex, opt, responses)
    right = [e for r, e in zip(responses, ex) if r.correct]
    m = {"compared_responses": len(responses),
         "compared_rollouts_exhaustive": sampling.n * len(ex_roll.asked),
         f"compared_rollouts_{search}": sampling.n * len(opt_roll.asked),
         "rollouts_share_of_exhaustive": len(opt_roll.asked) / max(len(ex_roll.asked), 1),
         "first_error_agreement_with_exhaustive": same["first_error_agreement"],
         "step_label_agreement_with_exhaustive": same["step_label_agreement"],
         # the stage's own labels of these responses: other draws, so MC's noise is in this one too
         "first_error_agreement_with_exhaustive_own_draws":
             agreement(ex, [own[e.response_id] for e in ex], responses)["first_error_agreement"],
         # right answers whose exhaustive MC label has an error: what SCAN's rule overrules
         "right_answers_flagged_by_exhaustive": sum(e.first_error != -1 for e in right) / max(len(right), 1)}
    if "verifier_first_error_accuracy" in same:  # toy: the verifier's first error
        m["verifier_first_error_accuracy_exhaustive"] = verifier_accuracy(ex, responses)
        m[f"verifier_first_error_accuracy_{search}"] = same["verifier_first_error_accuracy"]
    return m


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


def label_responses(gen, problems: dict[str, Problem], responses: list[Response], cfg: LabelMCConfig,
                    stats: MCStats, shard: int = 0) -> list[MCLabel]:
    return mc_search(cfg.search, gen, problems, responses, cfg.sampling(shard), cfg.threshold, stats)


def mc_shard(problems: dict[str, Problem], cfg: LabelMCConfig):
    """label_mc's work for an engine: shard i's labels and this shard's counts (rollouts, tokens) as its meta."""
    def work(gen, i: int, chunk: list[Response]):
        stats = MCStats()
        return label_responses(gen, problems, chunk, cfg, stats, i), dataclasses.asdict(stats)

    return work


def read_labelling_inputs(a, backend: BackendConfig, need_gold: bool) -> tuple[dict[str, Problem], list[Response]]:
    """Stage label_mc's and label_judge's inputs, cross-checked before any model loads: the problems (by id)
    and the responses, each of which must name a known problem (with a gold answer, for MC rollouts)."""
    check_backend("policy" if need_gold else "judge", backend)
    problems, responses = read_problems_and_responses(a.problems, a.samples)
    no_gold = sorted({r.problem_id for r in responses if not problems[r.problem_id].gold_answer}) if need_gold else []
    if no_gold:
        raise DataError(f"{a.problems}: field 'gold_answer' is null for problem(s) {no_gold[:5]}, "
                        "which MC rollouts are graded against")
    return problems, responses


@dataclass(frozen=True)
class MCInputs:
    """What stage label_mc works on, read and checked by `prepare_mc`."""
    writer: ShardWriter  # the output's shards (it holds the output's lock)
    problems: dict[str, Problem]  # by id, each with a gold answer
    responses: list[Response]  # each naming one of them


def prepare_mc(a, cfg: dict) -> MCInputs:
    this = sys.modules[__name__]  # this module, for the fingerprint
    c, bcfg = cfg["label_mc"], cfg["policy"]
    problems, responses = read_labelling_inputs(a, bcfg, need_gold=True)
    check_engine(cfg["engine"], "label_mc", bcfg)  # a Ray cluster that answers and holds a replica
    # Shards are reused only if made by the same weights, tokenizer and labelling code (see preflight). The
    # writer takes the output's lock here, before the MLflow run opens or the model loads: a second run stops now.
    writer = ShardWriter(a.out, fingerprint(c, bcfg, md5_path(a.problems), md5_path(a.samples),
                                            model_identity(bcfg.model), code_version(this, generation, grading)))
    return MCInputs(writer, problems, responses)


def label_mc(cfg: dict, data: MCInputs, run) -> Done:
    """Stage label_mc: MC labels for every response, written shard by shard (a killed run resumes), on the
    engine params name (`engine.label_mc`: this process or a Ray cluster; the labels are the same)."""
    c = cfg["label_mc"]
    writer, problems, responses = data.writer, data.problems, data.responses
    t0 = time.monotonic()
    with open_engine(cfg, "label_mc", cfg["policy"]) as eng:
        labels, metas = eng.shards(responses, c.shard_size, writer, mc_shard(problems, c), unit="responses", cls=MCLabel)
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
        stats = {k: sum(s[k] for s in metas.values()) for k in MCStats.__dataclass_fields__}
        this_run = {"rollouts_this_run": stats["rollouts"], "shared_prefixes_this_run": stats["shared_prefixes"],
                    "empty_rollouts_this_run": stats["empty_rollouts"], "generated_tokens_this_run": stats["generated_tokens"],
                    "seconds": seconds, "tokens_per_second": stats["generated_tokens"] / seconds if seconds else 0.0,
                    "shards_retried": eng.retries}
        if c.search != "exhaustive" and c.compare_sample:
            sub = responses[: c.compare_sample]
            own = {lab.response_id: lab for lab in labels[: c.compare_sample]}
            m.update(eng.call(lambda gen: compare_with_exhaustive(gen, problems, sub, c.search, c.sampling(10**6),
                                                                  c.threshold, own)))
    if m["truncated_rollouts"]:  # each counts as failing: a too-tight limit makes false MC first errors
        print(f"[label_mc] warning: {m['truncated_rollouts']} rollouts hit label_mc.max_tokens or policy.max_model_len "
              "and count as failing; raise them if the policy's answers need more room", flush=True)
    shared = f", {m['rollouts_unshared']} without shared prefixes" if "rollouts_unshared" in m else ""
    vs = (f"; on {m['compared_responses']} responses {100 * m['rollouts_share_of_exhaustive']:.0f}% of exhaustive MC's "
          f"rollouts, first errors agreeing on {100 * m['first_error_agreement_with_exhaustive']:.1f}%"
          if "compared_responses" in m else "")
    return Done(m, f"{len(labels)} responses labelled with {m['rollouts']} rollouts ({c.search}, k={c.k}{shared}){vs}, "
                   f"{m['truncated_rollouts']} rollouts cut by a length limit (in {m['responses_with_truncated_rollouts']} "
                   f"responses' labels), {this_run['tokens_per_second']:.0f} tok/s this run, {eng.retries} shard(s) "
                   "retried; label quality: stage consensus", logged=this_run)


@dataclass(frozen=True)
class JudgeInputs:
    """What stage label_judge works on, read and checked by `prepare_judge`."""
    writer: ShardWriter  # the output's shards (it holds the output's lock)
    template: str  # the judge's prompt (label_judge.style, template_file)
    problems: dict[str, Problem]  # by id
    responses: list[Response]  # each naming one of them


def prepare_judge(a, cfg: dict) -> JudgeInputs:
    """The output's writer, the judge's template (checked: prmlab.prompts.load_template) and the inputs."""
    this = sys.modules[__name__]  # this module, for the fingerprint
    c, bcfg = cfg["label_judge"], cfg["judge"]
    try:
        template = load_template(c.style, c.template_file)
    except OSError as e:  # an unreadable template_file is a params problem: one line, not a traceback
        raise ParamsError(str(e)) from None
    problems, responses = read_labelling_inputs(a, bcfg, need_gold=False)
    check_engine(cfg["engine"], "label_judge", bcfg)
    # Shards are reused only if made by the same weights, tokenizer, template and judging code. The writer
    # takes the output's lock here, before the MLflow run opens or the model loads: a second run stops now.
    writer = ShardWriter(a.out, fingerprint(c, bcfg, template, md5_path(a.problems), md5_path(a.samples),
                                            model_identity(bcfg.model), code_version(this, generation, prompts)))
    return JudgeInputs(writer, template, problems, responses)


def label_judge(cfg: dict, data: JudgeInputs, run) -> Done:
    """Stage label_judge: the judge's labels for every response, written shard by shard (a killed run resumes),
    on the engine params name (`engine.label_judge`)."""
    c = cfg["label_judge"]
    writer, template, problems, responses = data.writer, data.template, data.problems, data.responses
    with open_engine(cfg, "label_judge", cfg["judge"]) as eng:
        labels, _ = eng.shards(responses, c.shard_size, writer,
                               lambda gen, i, chunk: (judge_labels(gen, problems, chunk, template, c.style, c.sampling(i)), None),
                               unit="responses", cls=JudgeLabel)
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
                   f"{m['truncated_replies']} replies cut by a length limit, {eng.retries} shard(s) retried; "
                   "label quality: stage consensus", logged={"shards_retried": eng.retries})


