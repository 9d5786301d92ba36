"""PRM training sets, one per label source (the sources: stages/consensus.py), and the label audit.

`training_set` builds one source's set; `audit` scores a source's first errors against the toy verifier.
The stage cores (prmlab.core.stage runs them): `consensus` (agreement counts and the study's one label audit)
and `prm_data` (one source's set, built alone), both over `prepare_consensus`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prmlab.core.io import DataError, read_jsonl, read_jsonl_lines, read_problems_and_responses
from prmlab.core.params import ParamsError
from prmlab.core.records import JudgeLabel, MCLabel, PRMExample, Problem, Response, labels_from_first_error
from prmlab.core.result import Done
from prmlab.core.sources import HUMAN_SOURCES, METHODS, SOFT, SOURCES, TOY_HUMANS
from prmlab.pipeline.method_labels import MethodLabel

MATCHED = {"judge_matched": ("judge", "human_onpolicy")}  # a source: (the labels it takes, the set whose responses it labels)


def step_labels(source: str, r: Response, m: MCLabel | None, j: JudgeLabel | None) -> list[int] | None:
    """Response r's step labels from one label source, None where that source has none for it."""
    if source in ("mc_hard", "mc_soft"):
        return None if m is None else m.hard
    source = MATCHED.get(source, (source,))[0]
    if source == "outcome":
        # Outcome supervision, the BoN-optimised extreme (paper Fig. 8): every step carries the final
        # answer's correctness, all steps kept; a PRM trained on it learns outcomes, not processes.
        return [int(r.correct)] * len(r.steps)
    j_fe = None if j is None else j.first_error  # None: no judge label, or an unparsed answer
    # consensus: MC's first error where the judge names the same one ("no error" agreeing counts)
    agreed = m.first_error if m is not None and m.first_error == j_fe else None
    fe = {"judge": j_fe, "consensus": agreed, "consensus_soft": agreed, "oracle": r.true_first_error}[source]
    return None if fe is None else labels_from_first_error(len(r.steps), fe)


def training_set(source: str, problems: dict[str, Problem], responses: list[Response], mc: dict[str, MCLabel],
                 judge: dict[str, JudgeLabel], only: set[str] | None = None) -> list[PRMExample]:
    """One label source's PRM training set: every response the source labels (of those in `only`, where given: a
    matched source's), in the responses' order. A soft source's examples carry MC's values for their steps."""
    rows = []
    for r in responses:
        if only is not None and r.response_id not in only:
            continue
        m = mc.get(r.response_id)
        labels = step_labels(source, r, m, judge.get(r.response_id))
        if labels is not None:
            rows.append(PRMExample(prompt=problems[r.problem_id].question, completions=r.steps[: len(labels)], labels=labels,
                                   soft=m.soft[: len(labels)] if source in SOFT else None, response_id=r.response_id))
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
    """Where each labeller fails (the mechanisms the paper names, in the toy world): MC's and the judge's audit and the
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
        if isinstance(lab, MethodLabel) and len(lab.labels) > n:
            raise DataError(f"{path}:{ln}: field 'labels': {len(lab.labels)} labels for a response of {n} steps")
        out[lab.response_id] = lab
    return out


def method_set(problems: dict[str, Problem], responses: list[Response], labels: dict[str, MethodLabel]) -> list[PRMExample]:
    """A newer method's training set (prmlab.pipeline.label_methods): every response with a kept step label, its steps up to
    the last one kept (a filter keeps labels from step 0 up to where its two estimates part)."""
    return [PRMExample(prompt=problems[r.problem_id].question, completions=r.steps[: len(lab.labels)], labels=lab.labels,
                       response_id=r.response_id)
            for r in responses if (lab := labels.get(r.response_id)) is not None and lab.labels]


@dataclass(frozen=True)
class SetInputs:
    """What stages consensus and prm_data@<source> work on, read and checked by `prepare_consensus`: a set that is
    ready (a released source's, a newer method's), else what `training_set` builds one from."""
    source: str | None  # prm_data's label source; None for stage consensus
    origin: str  # the file the set comes from (its summary line names it)
    examples: list[PRMExample] | None = None  # the ready set; None: built from the fields below
    problems: dict[str, Problem] = field(default_factory=dict)  # by id
    responses: list[Response] = field(default_factory=list)
    mc: dict[str, MCLabel] = field(default_factory=dict)  # by response id, fitting the responses
    judge: dict[str, JudgeLabel] = field(default_factory=dict)
    only: set[str] | None = None  # a matched source's responses (those another source's set labels)


def prepare_consensus(a, cfg: dict) -> SetInputs:
    """Stages consensus's and prm_data@<source>'s inputs, checked before anything is written: a released source's
    training set, else the problems, the responses and both labels, fitting them."""
    if (source := getattr(a, "source", None)) in HUMAN_SOURCES + TOY_HUMANS:
        # Released labels: human_data@<source> converted and deduplicated them; this is the training set.
        path = Path(a.human) / f"{a.source}.jsonl"
        if not path.exists():
            made_by = ("stage toy_human@toy (toy profile only)" if a.source in TOY_HUMANS else
                       f"human_data@{a.source}, which needs params human_labels: {{{a.source}: PATH}}")
            raise ParamsError(f"train_prm.sources names {a.source!r}, but {path} was never written (by {made_by})")
        return SetInputs(source, str(path), read_jsonl(path, PRMExample))
    problems, responses = read_problems_and_responses(a.problems, a.samples)
    mc = labels_fitting(a.mc, MCLabel, responses, a.samples)
    judge = labels_fitting(a.judge, JudgeLabel, responses, a.samples)
    if "oracle" in cfg["train_prm"].sources and not any(r.true_first_error is not None for r in responses):
        raise ParamsError("train_prm.sources names 'oracle', but these responses carry no verifier labels "
                          "(only the toy world has them); drop it from the list")
    if source in METHODS:  # stage label_method@<source> wrote its labels (params label_methods.sources names it)
        path = Path(getattr(a, "methods", "data/labels/methods")) / f"{source}.jsonl"
        if not path.exists():
            raise ParamsError(f"train_prm.sources names {source!r}, but {path} was never written (stage "
                              f"label_method@{source}: add {source!r} to params label_methods.sources)")
        return SetInputs(source, str(path), method_set(problems, responses,
                                                       labels_fitting(str(path), MethodLabel, responses, a.samples)))
    only = None
    if source in MATCHED:  # the responses another source's set labels: its file's response ids, each a policy response
        path = Path(a.human) / f"{MATCHED[source][1]}.jsonl"
        if not path.exists():
            raise ParamsError(f"train_prm.sources names {source!r}, which labels the responses of {path}, but that file "
                              "was never written (stage toy_human@toy: toy profile only)")
        ids = {r.response_id for r in responses}
        only = set()
        for ln, ex in read_jsonl_lines(path, PRMExample):
            if ex.response_id not in ids:
                raise DataError(f"{path}:{ln}: field 'response_id': {ex.response_id!r} is not a response in {a.samples}")
            only.add(ex.response_id)
    return SetInputs(source, a.samples, None, problems, responses, mc, judge, only)


def consensus(cfg: dict, data: SetInputs, run) -> Done:
    """Stage consensus: how often MC and the judge agree, each label source's training set size (sets
    themselves: prm_data), and every source's label quality against the verifier (toy world): the audit."""
    problems, responses, mc, judge = data.problems, data.responses, data.mc, data.judge
    table = audit_table(responses, mc, judge)
    run.params({"with_oracle": bool(table)})  # the audit is {} where the responses carry no verifier labels
    counts = agreement_counts(responses, mc, judge)
    sets = {s: training_set(s, problems, responses, mc, judge) for s in cfg["train_prm"].sources
            if s in SOURCES and s not in MATCHED}  # human sources' counts: metrics/human_data/; a matched one's: prm_data
    for s, rows in sets.items():
        counts[f"examples_{s}"] = len(rows)
        counts[f"negative_share_{s}"] = sum(0 in ex.labels for ex in rows) / max(len(rows), 1)
    return Done({**counts, "audit": table, "audit_by": audit_breakdown(problems, responses, mc, judge)},
                f"kept {counts['agree']}/{counts['responses']} ({100 * counts['consensus_kept_share']:.0f}%) where MC "
                f"and judge agree; {counts['judge_unparsed']} judge answers unparsed; sets: "
                + ", ".join(f"{s}={len(rows)}" for s, rows in sets.items()),
                outputs={"audit_table": table}, file_only=["audit_by"])  # audit_by: in the file only (many keys)


def prm_data(cfg: dict, data: SetInputs, run) -> Done:
    """Stage prm_data@<source>: one label source's training set, built alone (a released source's: the file)."""
    rows = data.examples if data.examples is not None else training_set(
        data.source, data.problems, data.responses, data.mc, data.judge, data.only)
    m = {"examples": len(rows), "with_wrong_step": sum(0 in ex.labels for ex in rows)}
    return Done(m, f"{m['examples']} examples ({m['with_wrong_step']} with a wrong step) from {data.origin}",
                outputs={"out": rows})
