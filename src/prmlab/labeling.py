"""Step labels: Monte Carlo estimation, LLM-as-a-judge, consensus filtering, and the label audit.

MC estimation (Math-Shepherd style, as in the PRM paper): for step i, k completions continue from
the prefix of steps 0..i; soft label = share reaching the gold answer, hard label = soft > threshold
(paper: 0, i.e. "at least one does"). The last step needs no rollouts: its prefix is the whole
response, so its soft label is the response's own correctness. `binary` search (OmegaPRM's idea)
finds the first hard-negative step in O(log n) prefixes, assuming prefix correctness is monotone.
Either way a prefix that several responses share is estimated once (`_Rollouts`).

The label functions are pure over records and an injected `Generator`. The stage cores (prmlab.stage runs
them) follow: `label_mc`, `label_judge`, `consensus` (agreement counts and the label audit, the one audit
of the study) and `prm_data` (one label source's training set), with the `prepare_*` that read their inputs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from prmlab.generation import BackendConfig, Generator, Sampling, check_sampling
from prmlab.grading import is_equivalent
from prmlab.io import DataError, ShardWriter, fingerprint, read_jsonl, read_jsonl_lines, sharded
from prmlab.params import ParamsError, check
from prmlab.prompts import judge_messages, majority, parse_judgement, policy_messages
from prmlab.records import JudgeLabel, MCLabel, PRMExample, Problem, Response
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


def prm_example(problem: Problem, r: Response, labels: list[int], soft: list[float] | None = None) -> PRMExample:
    return PRMExample(prompt=problem.question, completions=r.steps[: len(labels)], labels=labels, soft=soft,
                      response_id=r.response_id)


def step_labels(source: str, r: Response, m: MCLabel | None, j: JudgeLabel | None) -> list[int] | None:
    """Response r's step labels from one label source, None where that source has none for it."""
    if source in ("mc_hard", "mc_soft"):
        return None if m is None else m.hard
    if source == "outcome":
        # Outcome supervision, the BoN-optimised extreme (paper Fig. 8): every step carries the final
        # answer's correctness, all steps kept; a PRM trained on it learns outcomes, not processes.
        return [int(r.correct)] * len(r.steps)
    j_fe = None if j is None else j.first_error  # None: no judge label, or an unparsed answer
    # consensus: MC's first error where the judge names the same one ("no error" agreeing counts)
    fe = {"judge": j_fe, "consensus": m.first_error if m is not None and m.first_error == j_fe else None,
          "oracle": r.true_first_error}[source]
    return None if fe is None else labels_from_first_error(len(r.steps), fe)


def training_set(source: str, problems: dict[str, Problem], responses: list[Response], mc: dict[str, MCLabel],
                 judge: dict[str, JudgeLabel]) -> list[PRMExample]:
    """One label source's PRM training set: every response the source labels, in the responses' order."""
    rows = []
    for r in responses:
        m = mc.get(r.response_id)
        labels = step_labels(source, r, m, judge.get(r.response_id))
        if labels is not None:
            rows.append(prm_example(problems[r.problem_id], r, labels, m.soft if source == "mc_soft" else None))
    return rows


def agreement_counts(responses: list[Response], mc: dict[str, MCLabel], judge: dict[str, JudgeLabel]) -> dict:
    """Stage consensus's counts: responses MC or the judge leave unlabelled, and how often the two agree."""
    counts = {"responses": len(responses), "no_mc_label": 0, "judge_unparsed": 0, "agree": 0, "disagree": 0}
    for r in responses:
        m, j = mc.get(r.response_id), judge.get(r.response_id)
        counts["no_mc_label"] += m is None
        counts["judge_unparsed"] += j is None or j.first_error is None
        if m is not None and j is not None and j.first_error is not None:
            counts["agree" if m.first_error == j.first_error else "disagree"] += 1
    counts["consensus_kept_share"] = counts["agree"] / max(len(responses), 1)
    return counts


def audit(responses: list[Response], first_errors: dict[str, int | None]) -> dict:
    """Label quality of one source against the verifier's first errors (toy world).

    Step-level: a step is truly "wrong" from the verifier's first error on (the process has gone
    wrong); over the steps the source labels, precision/recall of its 0 labels. Response-level:
    first-error accuracy, and the two failure modes the paper names for MC: calling a wrong step
    right (missed: later steps recover the answer) and a right step wrong (false alarm: the policy
    fails from a good prefix).
    """
    tp = fp = fn = tn = 0
    hit = missed = false_alarm = n = n_err = n_ok = 0
    for r in responses:
        fe = first_errors.get(r.response_id)
        t = r.true_first_error
        if fe is None or t is None:
            continue
        n += 1
        hit += fe == t
        if t != -1:
            n_err += 1
            missed += fe == -1 or fe > t
        else:
            n_ok += 1
        if fe != -1 and (t == -1 or fe < t):
            false_alarm += 1
        labelled = len(r.steps) if fe == -1 else fe + 1
        for i in range(labelled):
            src_wrong = i == fe
            true_wrong = t != -1 and i >= t
            tp += src_wrong and true_wrong
            fp += src_wrong and not true_wrong
            fn += (not src_wrong) and true_wrong
            tn += (not src_wrong) and not true_wrong
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return {
        "responses": n,
        "first_error_accuracy": hit / n if n else 0.0,
        "step_precision_wrong": prec,
        "step_recall_wrong": rec,
        "step_f1_wrong": 2 * prec * rec / (prec + rec) if prec + rec else 0.0,
        "missed_error_rate": missed / n_err if n_err else 0.0,
        "false_alarm_rate": false_alarm / n if n else 0.0,
    }


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
    problems = {p.id: p for p in read_jsonl(a.problems, Problem)}
    responses = read_jsonl(a.samples, Response)
    missing = sorted({r.problem_id for r in responses} - set(problems))
    if missing:
        raise DataError(f"{a.samples}: field 'problem_id' names problems not in {a.problems}: {missing[:5]}")
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
    m = {"responses": len(labels), "distinct_responses": len({(r.problem_id, tuple(r.steps)) for r in responses}),
         "unparsed": sum(not lab.parsed for lab in labels),
         "unparsed_share": sum(not lab.parsed for lab in labels) / n,
         "unparsed_votes": sum(v is None for v in votes),
         "truncated_replies": sum(lab.truncated for lab in labels),  # cut by max_tokens / max_model_len
         "first_error_share": sum(lab.first_error not in (None, -1) for lab in labels) / n}
    return Done(m, f"{len(labels)} responses judged ({c.style}, n={c.n}), {m['unparsed']} unparsed, "
                   f"{m['truncated_replies']} replies cut by a length limit; label quality: stage consensus")


def audit_table(responses: list[Response], mc: dict[str, MCLabel], judge: dict[str, JudgeLabel]) -> dict:
    """Label quality by source against the verifier; consensus is audited on the samples it keeps."""
    if not any(r.true_first_error is not None for r in responses):
        return {}
    mc_fe = {k: v.first_error for k, v in mc.items()}
    j_fe = {k: v.first_error for k, v in judge.items() if v.first_error is not None}
    kept = [r for r in responses if r.response_id in mc_fe and r.response_id in j_fe and mc_fe[r.response_id] == j_fe[r.response_id]]
    return {"mc": audit(responses, mc_fe), "judge": audit(responses, j_fe), "consensus": audit(kept, mc_fe)}


def audit_breakdown(problems: dict[str, Problem], responses: list[Response], mc: dict[str, MCLabel],
                    judge: dict[str, JudgeLabel]) -> dict:
    """Where each labeller fails (issue #26's mechanisms, toy world): MC's and the judge's audit and the
    share consensus keeps, by difficulty (the world's hard problems, where the completer fails from good
    prefixes: MC's false alarms) and by the kind of the verifier's first error (the judge's blind spots)."""
    if not any(r.true_first_error is not None for r in responses):
        return {}
    mc_fe = {k: v.first_error for k, v in mc.items()}
    j_fe = {k: v.first_error for k, v in judge.items() if v.first_error is not None}

    def part(rs: list[Response]) -> dict:
        kept = sum(r.response_id in mc_fe and mc_fe[r.response_id] == j_fe.get(r.response_id) for r in rs)
        return {"responses": len(rs), "consensus_kept_share": kept / len(rs) if rs else 0.0,
                "mc": audit(rs, mc_fe), "judge": audit(rs, j_fe)}

    hard = {pid for pid, p in problems.items() if p.meta.get("hard")}
    by_kind: dict[str, list[Response]] = {}
    for r in responses:
        if r.true_first_error not in (None, -1):
            by_kind.setdefault(r.error_kind or "unknown", []).append(r)
    return {"difficulty": {"normal": part([r for r in responses if r.problem_id not in hard]),
                           "hard": part([r for r in responses if r.problem_id in hard])},
            "first_error_kind": {k: part(rs) for k, rs in sorted(by_kind.items())}}


def labels_fitting(path: str, cls, responses: list[Response], samples: str) -> dict:
    """Labels by response id, each checked against its response: it must exist, and a first error or a
    label list must fit its steps (a judge's `first_error: 99` on 3 steps would else build an example
    with 100 labels). Raises DataError naming the labels file, line and field."""
    steps = {r.response_id: len(r.steps) for r in responses}
    content = {r.response_id: r.content_md5() for r in responses}
    out = {}
    for ln, lab in read_jsonl_lines(path, cls):
        n = steps.get(lab.response_id)
        if n is None:
            raise DataError(f"{path}:{ln}: field 'response_id': {lab.response_id!r} is not a response in {samples}")
        if lab.content_md5 and lab.content_md5 != content[lab.response_id]:
            raise DataError(f"{path}:{ln}: field 'content_md5': the label was made for other text than response "
                            f"{lab.response_id!r} in {samples} (stale labels: rerun the labelling stage)")
        if lab.first_error is not None and lab.first_error >= n:
            raise DataError(f"{path}:{ln}: field 'first_error': {lab.first_error} outside -1..{n - 1} "
                            f"(response {lab.response_id} has {n} steps)")
        if isinstance(lab, MCLabel) and len(lab.hard) > n:
            raise DataError(f"{path}:{ln}: field 'hard': {len(lab.hard)} labels for a response of {n} steps")
        out[lab.response_id] = lab
    return out


def prepare_consensus(a, cfg: dict) -> tuple:
    """Stages consensus's and prm_data@<source>'s inputs, checked before anything is written: a released
    source's training set (its file), else the problems, the responses and both labels, fitting them."""
    from prmlab.human_labels import HUMAN_SOURCES, TOY_HUMAN

    if getattr(a, "source", None) in HUMAN_SOURCES + (TOY_HUMAN,):
        # Released labels: human_data@<source> converted and deduplicated them; this is the training set.
        path = Path(a.human) / f"{a.source}.jsonl"
        if not path.exists():
            made_by = ("stage toy_human@toy (toy profile only)" if a.source == TOY_HUMAN else
                       f"human_data@{a.source}, which needs params human_labels: {{{a.source}: PATH}}")
            raise ParamsError(f"train_prm.sources names {a.source!r}, but {path} was never written (by {made_by})")
        return path, read_jsonl(path, PRMExample)
    problems = {p.id: p for p in read_jsonl(a.problems, Problem)}
    responses = read_jsonl(a.samples, Response)
    mc = labels_fitting(a.mc, MCLabel, responses, a.samples)
    judge = labels_fitting(a.judge, JudgeLabel, responses, a.samples)
    missing = sorted({r.problem_id for r in responses} - set(problems))
    if missing:
        raise DataError(f"{a.samples}: field 'problem_id' names problems not in {a.problems}: {missing[:5]}")
    if "oracle" in cfg["train_prm"].sources and not any(r.true_first_error is not None for r in responses):
        raise ParamsError("train_prm.sources names 'oracle', but these responses carry no verifier labels "
                          "(only the toy world has them); drop it from the list")
    return problems, responses, mc, judge


def consensus(a, cfg: dict, data, run):
    """Stage consensus: how often MC and the judge agree, each label source's training set size (sets
    themselves: prm_data), and every source's label quality against the verifier (toy world): the audit."""
    from prmlab.stage import Done

    problems, responses, mc, judge = data
    table = audit_table(responses, mc, judge)
    run.params({"with_oracle": bool(table)})  # the audit is {} where the responses carry no verifier labels
    counts = agreement_counts(responses, mc, judge)
    sets = {s: training_set(s, problems, responses, mc, judge) for s in cfg["train_prm"].sources
            if s in SOURCES}  # human sources' counts: metrics/human_data/
    for s, rows in sets.items():
        counts[f"examples_{s}"] = len(rows)
        counts[f"negative_share_{s}"] = sum(0 in ex.labels for ex in rows) / max(len(rows), 1)
    return Done({**counts, "audit": table, "audit_by": audit_breakdown(problems, responses, mc, judge)},
                f"kept {counts['agree']}/{counts['responses']} ({100 * counts['consensus_kept_share']:.0f}%) where MC "
                f"and judge agree; {counts['judge_unparsed']} judge answers unparsed; sets: "
                + ", ".join(f"{s}={len(rows)}" for s, rows in sets.items()),
                outputs={a.audit_table: table}, file_only=["audit_by"])  # audit_by: in the file only (many keys)


def prm_data(a, cfg: dict, data, run):
    """Stage prm_data@<source>: one label source's training set, built alone (not every source's)."""
    from prmlab.stage import Done

    # a released source's set is the file prepare read; any other is built here from the labels
    src, rows = data if isinstance(data[0], Path) else (a.samples, training_set(a.source, *data))
    run.params({"source": a.source})
    run.tag("prmlab.source", a.source)
    m = {"examples": len(rows), "with_wrong_step": sum(0 in ex.labels for ex in rows)}
    return Done(m, f"{m['examples']} examples ({m['with_wrong_step']} with a wrong step) from {src} -> {a.out}",
                outputs={a.out: rows})
