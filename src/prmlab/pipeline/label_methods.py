"""The field's newer labelling methods, as label sources beside MC, the judge and consensus (stage
label_method@<source>), each through the LLM backends and engines label_mc and label_judge use.

- `mc_agree`, the two-model agreement filter (Athena-PRM, arXiv 2506.09532): MC estimation with a weak and a
  strong completer; a step label is kept only where both completers' hard estimates agree. The weak completer's
  labels are label_mc's (the policy completes: read back from --mc, not redone); the strong completer is the
  `completer` backend, estimated with `label_methods.agree` (label_mc's settings: k, threshold, search). Each
  label stops at its own first error, so the kept labels run from step 0 to the first step where the two differ;
  a response whose two first errors are equal keeps its labels whole and is `kept`.
- `judge_ref`, the reference-guided judge (SPARE, UKPLab): one judge pass whose prompt shows the problem's gold
  reference solution and asks that each step be aligned with the reference steps it matches before naming the
  earliest wrong one (0-based, in \\boxed{}, as the critic prompt). The reference is the toy world's canonical
  solution (from the problem's solution graph) or the worked solution of the benchmark row the problem came from,
  read from the files `label_methods.reference.solutions` names (MATH's `solution`, GSM8K's `answer`); a problem
  with neither stops the stage with one line naming the problems file, its line and field, before any model loads.
- `judge_active`, uncertainty-selected judging (ActPRM, sail-sg/ActivePRM): a PRM ensemble
  (`label_methods.active.ensemble`: label sources MC's labels make, each member trained by the stage itself with
  train_prm's settings, so all it reads is a DVC dependency: a PRM folder train_prm makes could not be one, since
  every training set depends on these labels) scores every response; a response is certain when, on every step
  up to the ensemble's own first error (mean < 0.5), the members' mean is at least `pred_threshold` or at most
  1 - `pred_threshold` and their standard deviation at most `std_threshold` (ActivePRM's trust rule). Only the
  uncertain ones go to the judge (label_judge's prompt and sampling), and only their labels are kept: ActivePRM
  trains on the uncertain ones and drops the rest.

Inputs: the problems, the responses, label_mc's labels (`mc_agree`'s weak labels, `judge_active`'s members' sets).
Outputs: `MethodLabel` records
(prmlab.pipeline.method_labels), one per response, written shard by shard (a killed run resumes), and metrics that hold
what the labels determine (kept share; on the toy, the audit against the verifier). Core: `label_method` over
`prepare_method`.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from string import Formatter

from prmlab import prompts
from prmlab.core import grading
from prmlab.core.io import (
    DataError,
    ShardWriter,
    atomic_write_text,
    fingerprint,
    read_json,
    read_problems_and_responses,
)
from prmlab.core.params import ParamsError, check
from prmlab.core.preflight import check_backend, check_model, code_version, model_identity
from prmlab.core.provenance import md5_path
from prmlab.core.records import MCLabel, PRMExample, Problem, Response, labels_from_first_error
from prmlab.core.result import Done
from prmlab.core.sources import METHODS, SOFT
from prmlab.engines import generation
from prmlab.engines.cluster import check_engine, open_engine
from prmlab.engines.config import Sampling, check_sampling
from prmlab.pipeline.data import _rows
from prmlab.pipeline.labeling import MCStats, judge_labels, label_responses
from prmlab.pipeline.labeling_config import JudgeSampling, LabelMCConfig
from prmlab.pipeline.method_labels import MethodLabel
from prmlab.pipeline.training_sets import audit, labels_fitting, training_set
from prmlab.prms import model as prm_model
from prmlab.prms import training
from prmlab.prompts import load_template, majority, parse_judgement, tag_paragraphs
from prmlab.toy.world import canonical_solution

# The reference-guided judge's built-in prompt: the critic prompt's layout and verdict (so the toy judge, trained on
# that layout, reads it), with the reference solution beside the problem and SPARE's alignment asked for per step.
REFERENCE_TEMPLATE = """[Problem]
{problem}

[Reference solution]
{reference}

[Solution]
{tagged_response}

The solution above is split into paragraphs numbered from 0. Align each paragraph with the step or steps of the \
reference solution it corresponds to and check it against them: a paragraph is wrong if it contradicts the \
reference or does not follow from the paragraphs before it, even where it takes another route than the reference. \
Give the index of the earliest paragraph that contains an error, or -1 if every paragraph is correct. Put the \
index in \\boxed{{}}."""
REFERENCE_PLACEHOLDERS = ("problem", "reference", "tagged_response")


@dataclass(frozen=True)
class ReferenceJudgeConfig(JudgeSampling):
    SECTION = "label_methods.reference"

    template_file: str | None = None  # None: REFERENCE_TEMPLATE
    solutions: dict[str, str] = field(default_factory=dict)  # {benchmark name: file or MATH folder}; toy: {}
    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int = 2048
    shard_size: int = 128
    seed: int = 0


# judge_active's members: the label sources label_mc's labels alone make (prmlab.pipeline.training_sets)
ENSEMBLE_SOURCES = ("mc_hard", "mc_soft", "outcome")


@dataclass(frozen=True)
class ActiveConfig:
    ensemble: list[str] = field(default_factory=lambda: list(ENSEMBLE_SOURCES))  # sources, a member trained on each
    steps: int = 0  # each member's optimizer steps; 0: train_prm.steps (the members are then the study's own MC PRMs)
    pred_threshold: float = 0.95  # certain: the ensemble's mean >= this or <= 1 - this on every step it labels
    std_threshold: float = 0.05  # and the members' standard deviation <= this there
    batch_size: int = 32
    max_length: int = 4096
    dtype: str = "float32"

    def __post_init__(self):
        check(bool(self.ensemble), "label_methods.active.ensemble names no member: judge_active needs at least one")
        for i, m in enumerate(self.ensemble):
            # A PRM folder train_prm makes cannot be a DVC dependency of this stage (its training set depends on
            # these labels: a cycle), so a retrained member would leave the labels silently stale; nor can a folder
            # outside the graph, so the members are sources this stage trains from label_mc's labels.
            check(m in ENSEMBLE_SOURCES, f"label_methods.active.ensemble[{i}]: {m!r} is not one of the label sources "
                  f"the stage trains its members on ({', '.join(ENSEMBLE_SOURCES)}): a PRM folder would be no DVC "
                  "dependency of label_method@judge_active (train_prm's sets depend on the methods' labels: a cycle)")
        check(len(set(self.ensemble)) == len(self.ensemble), "label_methods.active.ensemble: a member is named twice")
        check(0.5 <= self.pred_threshold <= 1, "label_methods.active.pred_threshold must be in [0.5, 1]")
        check(self.batch_size >= 1 and self.max_length >= 16,
              "label_methods.active.batch_size must be >= 1 and label_methods.active.max_length >= 16")


@dataclass(frozen=True)
class AgreeConfig(LabelMCConfig):
    """`label_methods.agree`: label_mc's keys for the strong completer's MC, its errors named where they sit."""

    def __post_init__(self):
        check(self.k >= 1, "label_methods.agree.k must be >= 1")
        check(0 <= self.threshold < 1, "label_methods.agree.threshold must be in [0, 1)")
        check(self.shard_size >= 1, "label_methods.agree.shard_size must be >= 1")
        check(self.compare_sample >= 0, "label_methods.agree.compare_sample must be >= 0")
        check_sampling("label_methods.agree", self.sampling, n="k")


@dataclass(frozen=True)
class LabelMethodsConfig:
    """`label_methods` in params.yaml: which of these sources to label (dvc.yaml's label_method@<source>) and
    each method's settings. Absent: none runs."""

    MINIMUM = {"top_k": -1}  # the nested samplers' -1: off (prmlab.core.params: every other number is >= 0)

    sources: list[str] = field(default_factory=list)
    agree: AgreeConfig = field(default_factory=AgreeConfig)  # the strong completer's MC (label_mc's keys)
    reference: ReferenceJudgeConfig = field(default_factory=ReferenceJudgeConfig)
    active: ActiveConfig = field(default_factory=ActiveConfig)

    OPTIONAL = True

    def __post_init__(self):
        unknown = sorted(set(self.sources) - set(METHODS))
        check(not unknown, f"label_methods.sources: unknown {unknown} (known: {list(METHODS)})")
        check(len(set(self.sources)) == len(self.sources), "label_methods.sources: a source is named twice")


def agreed_label(r: Response, weak: MCLabel | None, strong: MCLabel) -> MethodLabel:
    """Athena's filter on one response: the step labels both completers give alike, from step 0 to the first
    step where they differ (each label list stops at its own first error). Equal first errors keep it whole."""
    if weak is None:  # label_mc left it unlabelled: nothing to agree with
        return MethodLabel(r.response_id, "mc_agree", [], None, {"weak_first_error": None,
                                                                 "strong_first_error": strong.first_error,
                                                                 "strong_rollouts": strong.rollouts}, r.content_md5())
    kept = []
    for w, s in zip(weak.hard, strong.hard):
        if w != s:
            break
        kept.append(w)
    whole = weak.first_error == strong.first_error
    return MethodLabel(r.response_id, "mc_agree", kept, weak.first_error if whole else None,
                       {"weak_first_error": weak.first_error, "strong_first_error": strong.first_error,
                        "strong_rollouts": strong.rollouts}, r.content_md5())


def reference_messages(template: str, problem: Problem, reference: str, steps: list[str]) -> list[dict]:
    """The reference-guided prompt as one user message, paragraphs numbered from 0 (the critic's numbering)."""
    return [{"role": "user", "content": template.format(problem=problem.question, reference=reference,
                                                        tagged_response=tag_paragraphs(steps, 0))}]


def reference_labels(gen, problems: dict[str, Problem], refs: dict[str, str], responses: list[Response], template: str,
                     sampling: Sampling) -> tuple[list[MethodLabel], dict]:
    """The reference-guided judge's labels; a response repeated within a problem is judged once (as label_judge)."""
    first = {}
    for r in responses:
        first.setdefault((r.problem_id, tuple(r.steps)), r)
    convs = [reference_messages(template, problems[r.problem_id], refs[r.problem_id], r.steps) for r in first.values()]
    outs = dict(zip(first, gen.chat(convs, sampling)))
    labels = []
    for r in responses:
        comps = outs[(r.problem_id, tuple(r.steps))]
        votes = [parse_judgement("critic", c.text, len(r.steps)) for c in comps]
        fe = majority(votes)
        labels.append(MethodLabel(r.response_id, "judge_ref", [] if fe is None else labels_from_first_error(len(r.steps), fe),
                                  fe, {"raw": [c.text for c in comps], "votes": votes,
                                       "truncated": sum(c.truncated for c in comps)}, r.content_md5()))
    cost = {"judge_calls": len(convs) * sampling.n,
            "judge_tokens": sum(c.num_tokens for comps in outs.values() for c in comps)}
    return labels, cost


def trusted(scores: list[list[float]], pred_threshold: float, std_threshold: float) -> tuple[bool, int]:
    """ActivePRM's trust rule on one response's step scores by member: (certain, the ensemble's first error).
    The steps it looks at run up to and including the first whose mean is below 0.5 (its pseudo-label's)."""
    n = len(scores[0])
    means = [sum(m[i] for m in scores) / len(scores) for i in range(n)]
    stds = [(sum((m[i] - means[i]) ** 2 for m in scores) / (len(scores) - 1)) ** 0.5 if len(scores) > 1 else 0.0
            for i in range(n)]
    fe = next((i for i, x in enumerate(means) if x < 0.5), -1)
    upto = n if fe == -1 else fe + 1
    ok = all(stds[i] <= std_threshold and (means[i] >= pred_threshold or means[i] <= 1 - pred_threshold)
             for i in range(upto))
    return ok, fe


def ensemble_scores(ensemble: list[str], problems: dict[str, Problem], responses: list[Response], c: ActiveConfig
                    ) -> tuple[list[list[list[float]]], float]:
    """Every member's step scores of every response ([member][response][step]) and the seconds it took."""
    from prmlab.prms.layouts import make_scorer  # deferred: torch's scorers load only for this method

    t0, out = time.monotonic(), []
    items = [(problems[r.problem_id].question, r.steps) for r in responses]
    for path in ensemble:
        scorer = make_scorer("transformers", path, batch_size=c.batch_size, max_length=c.max_length, dtype=c.dtype)
        try:
            got = scorer.score(items)
        finally:
            scorer.close()
        # a response cut to max_length is scored on fewer steps: its unscored steps count as uncertain
        out.append([s + [0.5] * (len(r.steps) - len(s)) for s, r in zip(got, responses)])
    return out, time.monotonic() - t0


def read_solutions(files: dict[str, str]) -> dict[str, str]:
    """Problem id -> the benchmark row's worked solution, for the files `label_methods.reference.solutions` names
    (ids as stage inputs@real makes them: `<name>-<idx|id|unique_id|row>`)."""
    out = {}
    for name, path in files.items():
        if not Path(path).exists():
            raise ParamsError(f"label_methods.reference.solutions.{name}: {path} not found")
        for _, default_id, d in _rows(Path(path)):
            sol = d.get("solution")
            if sol is None and isinstance(d.get("answer"), str) and "####" in d["answer"]:
                sol = d["answer"].split("####")[0].strip()  # GSM8K: the worked answer before its final "#### n"
            if isinstance(sol, str) and sol.strip():
                out[f"{name}-{d.get('idx', d.get('id', d.get('unique_id', default_id)))}"] = sol.strip()
    return out


def reference_solutions(path: str, problems: dict[str, Problem], responses: list[Response], files: dict[str, str]
                        ) -> dict[str, str]:
    """Each responded problem's reference solution: its solution graph's canonical solution (toy), else its
    benchmark row's; a problem with neither is a DataError naming the problems file, line and field."""
    from_files = read_solutions(files) if files else {}
    needed = {r.problem_id for r in responses}
    refs = {}
    for ln, (pid, p) in enumerate(problems.items(), 1):  # one problem a line, in the file's order
        if pid not in needed:
            continue
        if p.meta.get("nodes"):
            refs[pid] = canonical_solution(p)
        elif pid in from_files:
            refs[pid] = from_files[pid]
        else:
            raise DataError(f"{path}:{ln}: field 'meta': problem {pid!r} has no reference solution (no solution graph, "
                            "and no file of params label_methods.reference.solutions holds it): judge_ref needs one")
    return refs


def load_reference_template(template_file: str | None) -> str:
    """The reference-guided prompt, checked now: `{problem}`, `{reference}`, `{tagged_response}` and no other."""
    if template_file is None:
        return REFERENCE_TEMPLATE
    try:
        text = Path(template_file).read_text(encoding="utf-8").strip()
        fields = {name for _, name, _, _ in Formatter().parse(text) if name is not None}
    except (OSError, ValueError) as e:
        raise ParamsError(f"label_methods.reference.template_file: {e}") from None
    if fields != set(REFERENCE_PLACEHOLDERS):
        raise ParamsError(f"label_methods.reference.template_file {template_file}: placeholders {sorted(fields)}, "
                          f"want exactly {{problem}}, {{reference}}, {{tagged_response}}; escape literal braces as {{{{ }}}}")
    return text


@dataclass(frozen=True)
class MethodInputs:
    """What stage label_method@<source> works on, read and checked by `prepare_method`."""
    source: str  # the method (one of METHODS)
    writer: ShardWriter  # the output's shards (it holds the output's lock)
    problems: dict[str, Problem]  # by id
    responses: list[Response]  # each naming one of them
    weak: dict[str, MCLabel] = field(default_factory=dict)  # mc_agree: label_mc's labels
    refs: dict[str, str] = field(default_factory=dict)  # judge_ref: reference solutions by problem id
    template: str = ""  # judge_ref: its prompt; judge_active: label_judge's
    members: dict[str, list[PRMExample]] = field(default_factory=dict)  # judge_active: each member's training set
    ensemble: tuple[str, ...] = ()  # judge_active: trained PRM folders in place of `members` (tests, benchmarks)


def prepare_method(a, cfg: dict) -> MethodInputs:
    """Stage label_method@<source>'s inputs and settings, checked before any model loads."""
    this = sys.modules[__name__]
    source, c = a.source, cfg["label_methods"]
    if source not in METHODS:
        raise ParamsError(f"label_method@{source}: not one of these methods' sources {list(METHODS)}")
    role = {"mc_agree": "completer"}.get(source, "judge")
    bcfg = cfg[role]
    check_backend(role, bcfg)
    problems, responses = read_problems_and_responses(a.problems, a.samples)
    weak, refs, template, members = {}, {}, "", {}
    if source == "mc_agree":
        no_gold = sorted({r.problem_id for r in responses if not problems[r.problem_id].gold_answer})
        if no_gold:
            raise DataError(f"{a.problems}: field 'gold_answer' is null for problem(s) {no_gold[:5]}, "
                            "which MC rollouts are graded against")
        weak = labels_fitting(a.mc, MCLabel, responses, a.samples)
        parts = (c.agree, md5_path(a.mc))
    elif source == "judge_ref":
        template = load_reference_template(c.reference.template_file)
        refs = reference_solutions(a.problems, problems, responses, c.reference.solutions)
        parts = (c.reference, template)
    else:
        check_model("policy.model", cfg["policy"].model)  # the members' base, before any model loads
        training.check_attention(cfg["train_prm"])
        mc = labels_fitting(a.mc, MCLabel, responses, a.samples)
        members = {s: training_set(s, problems, responses, mc, {}) for s in c.active.ensemble}
        if empty := [s for s, rows in members.items() if not rows]:
            raise DataError(f"{a.mc}: no response carries labels for ensemble member(s) {empty}: nothing to train "
                            "them on")
        lj = cfg["label_judge"]
        try:
            template = load_template(lj.style, lj.template_file)
        except OSError as e:
            raise ParamsError(str(e)) from None
        # the members' training: their sets (label_mc's labels), train_prm's settings, the base and the trainer's code
        # (train_prm.sources is no setting of a member: left out, so naming another PRM to train keeps the shards)
        trainer = {k: v for k, v in dataclasses.asdict(member_config(cfg)).items() if k != "sources"}
        parts = (c.active, lj, template, md5_path(a.mc), trainer, model_identity(cfg["policy"].model),
                 code_version(training, prm_model))
    check_engine(cfg["engine"], engine_stage(source), bcfg)
    # Shards are reused only if made by the same settings, inputs, models and code; the writer takes the
    # output's lock now, before the MLflow run opens or a model loads.
    writer = ShardWriter(a.out, fingerprint(source, *parts, bcfg, md5_path(a.problems), md5_path(a.samples),
                                            model_identity(bcfg.model), code_version(this, generation, grading, prompts)))
    return MethodInputs(source, writer, problems, responses, weak, refs, template, members)


def member_config(cfg: dict):
    """judge_active's members' training settings: train_prm's, at `label_methods.active.steps` where set."""
    tc, steps = cfg["train_prm"], cfg["label_methods"].active.steps
    return dataclasses.replace(tc, steps=steps or tc.steps)


def member_scores(cfg: dict, p: MethodInputs) -> tuple[list[list[list[float]]], float]:
    """judge_active's ensemble's step scores ([member][response][step]) and the seconds they took: `p.ensemble`'s
    PRMs, or each member trained here on its set in a temporary folder (`member_config`), scored, then dropped.
    The scores stay beside the shards, named by their fingerprint (which holds the members' training), so a resumed
    run neither retrains nor rescores, and scores of other members are never read."""
    import json
    import tempfile

    cache = p.writer.dir / f"ensemble-{(p.writer.dir / 'FINGERPRINT').read_text()}.json"
    if cache.exists():
        return read_json(cache), 0.0
    t0, c = time.monotonic(), cfg["label_methods"].active
    if p.ensemble:
        scores, _ = ensemble_scores(list(p.ensemble), p.problems, p.responses, c)
    else:
        with tempfile.TemporaryDirectory(prefix="prmlab-ensemble-") as tmp:
            folders = []
            for s, examples in p.members.items():
                print(f"[label_method@judge_active] training ensemble member {s} on {len(examples)} examples",
                      file=sys.stderr)
                training.train(examples, cfg["policy"].model, f"{tmp}/{s}", member_config(cfg), soft=s in SOFT)
                folders.append(f"{tmp}/{s}")
            scores, _ = ensemble_scores(folders, p.problems, p.responses, c)
    atomic_write_text(cache, json.dumps(scores))
    return scores, time.monotonic() - t0


def engine_stage(source: str) -> str:
    """Where a method's shards run: where params `engine` runs label_mc's (rollouts) or label_judge's (a judge)."""
    return "label_mc" if source == "mc_agree" else "label_judge"


def label_method(cfg: dict, p: MethodInputs, run) -> Done:
    """Stage label_method@<source>: one method's labels for every response, shard by shard, on the engine params
    name for label_mc (`mc_agree`) or label_judge (the judges); metrics from the labels, costs to MLflow."""
    c, source = cfg["label_methods"], p.source
    role = "completer" if source == "mc_agree" else "judge"
    t0, logged = time.monotonic(), {}
    selected: set[str] = set()
    if source == "judge_active":
        scores, logged["ensemble_seconds"] = member_scores(cfg, p)
        certain = {}
        for j, r in enumerate(p.responses):
            certain[r.response_id] = trusted([m[j] for m in scores], c.active.pred_threshold, c.active.std_threshold)
        selected = {rid for rid, (ok, _) in certain.items() if not ok}
        logged["ensemble_forward_passes"] = len(scores) * len(p.responses)

    def work(gen, i: int, chunk: list[Response]):
        if source == "mc_agree":
            stats = MCStats()
            strong = label_responses(gen, p.problems, chunk, c.agree, stats, i)
            return ([agreed_label(r, p.weak.get(r.response_id), s) for r, s in zip(chunk, strong)],
                    dataclasses.asdict(stats))
        if source == "judge_ref":
            return reference_labels(gen, p.problems, p.refs, chunk, p.template, c.reference.sampling(i))
        lj = cfg["label_judge"]
        asked = [r for r in chunk if r.response_id in selected]
        got = {lab.response_id: lab for lab in judge_labels(gen, p.problems, asked, p.template, lj.style, lj.sampling(i))}
        out = []
        for r in chunk:
            ok, efe = certain[r.response_id]
            j = got.get(r.response_id)
            fe = None if j is None else j.first_error
            out.append(MethodLabel(r.response_id, "judge_active", [] if fe is None else labels_from_first_error(len(r.steps), fe),
                                   fe, {"selected": j is not None, "ensemble_first_error": efe,
                                        **({"raw": j.raw, "votes": j.votes} if j else {})}, r.content_md5()))
        return out, {"judge_calls": len({(r.problem_id, tuple(r.steps)) for r in asked}) * lj.n}

    shard_size = (c.agree.shard_size if source == "mc_agree" else c.reference.shard_size if source == "judge_ref"
                  else cfg["label_judge"].shard_size)
    with open_engine(cfg, engine_stage(source), cfg[role], desc=f"label_method@{source}") as eng:
        labels, metas = eng.shards(p.responses, shard_size, p.writer, work, unit="responses", cls=MethodLabel)
        p.writer.finish((len(p.responses) + shard_size - 1) // shard_size)
        retried = eng.retries
    for meta in metas.values():
        for k, v in (meta or {}).items():
            logged[f"{k}_this_run"] = logged.get(f"{k}_this_run", 0) + v
    logged |= {"seconds": time.monotonic() - t0, "shards_retried": retried}
    m = method_metrics(source, labels, p.responses)
    return Done(m, f"{m['responses']} responses, {m['kept']} kept whole ({100 * m['kept_share']:.0f}%) by {source}"
                   + (f"; against the verifier, first errors right on {100 * m['audit']['first_error_accuracy']:.1f}% "
                      "of those kept" if m.get("audit") else "") + f", {retried} shard(s) retried",
                logged=logged)


def method_metrics(source: str, labels: list[MethodLabel], responses: list[Response]) -> dict:
    """What the labels determine (so a resumed run writes the same file): how many each method keeps whole (its
    first error named), how many step labels, and on the toy the audit of the kept first errors against the verifier."""
    n = max(len(labels), 1)
    kept = {lab.response_id: lab.first_error for lab in labels if lab.first_error is not None}
    m = {"responses": len(labels), "kept": len(kept), "kept_share": len(kept) / n,
         "step_labels": sum(len(lab.labels) for lab in labels),
         "first_error_share": sum(fe != -1 for fe in kept.values()) / n}
    if source == "mc_agree":
        m["strong_rollouts"] = sum(lab.evidence.get("strong_rollouts", 0) for lab in labels)
    if source == "judge_active":
        m["selected"] = sum(bool(lab.evidence.get("selected")) for lab in labels)
        m["selected_share"] = m["selected"] / n
    if source in ("judge_ref", "judge_active"):
        m["unparsed"] = sum(lab.first_error is None and bool(lab.evidence.get("raw")) for lab in labels)
    if any(r.true_first_error is not None for r in responses):
        m["audit"] = audit(responses, kept)
    return m
