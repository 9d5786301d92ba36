"""Stages consensus and prm_data@<source>: keep a sample only where MC and the judge agree on the
first error; write each label source's PRM training set in TRL's stepwise format, and the audit.

Sources: `mc_hard`, `mc_soft` (hard labels plus the MC value, for a regression loss), `judge`,
`consensus` (MC first error == judge first error; "no error" agreeing counts), and, where the
verifier's labels exist (toy world), `oracle`, the analogue of the paper's human-labelled PRM800K;
and the released sets named in params `human_labels` (`prm800k`, `math_shepherd`), which
human_data@<source> converted and deduplicated (--human folder), and the toy's `human` (toy_human@toy):
their training set is that file.

Two DVC stages run this module. `consensus` writes the agreement counts and the label-quality
audit (--metrics, --audit-table). `prm_data@<source>`, one per entry of `train_prm.sources`, writes
that source's training set (--source, --out): one file per source, so a PRM retrains only when its
own set changes. (`oracle` needs the verifier's labels, so only the toy world has it.)

Inputs: --problems, --samples, --mc, --judge. Params: `train_prm.sources`.
Outputs: --metrics JSON and --audit-table JSON, or --out JSONL (PRMExample) for --source.
Run: python -m stages.consensus --problems ... --samples ... --mc ... --judge ... --metrics metrics/consensus.json --audit-table reports/tables/label_audit.json
     python -m stages.consensus --problems ... --samples ... --mc ... --judge ... --source judge --out data/prm_train/judge.jsonl
"""

from __future__ import annotations

from pathlib import Path

from prmlab.human_labels import HUMAN_SOURCES, TOY_HUMAN
from prmlab.io import DataError, read_jsonl, read_jsonl_lines, write_json, write_jsonl
from prmlab.labeling import SOURCES, audit, build_training_sets
from prmlab.params import ParamsError, read_params
from prmlab.records import JudgeLabel, MCLabel, PRMExample, Problem, Response
from prmlab.tracking import stage_run, summary


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


def write_training_set(source: str, rows: list[PRMExample], out: str, inputs: list) -> None:
    """prm_data@<source>: one source's training set, its MLflow run and summary line."""
    m = {"examples": len(rows), "with_wrong_step": sum(0 in ex.labels for ex in rows)}
    with stage_run(f"prm_data@{source}", {"source": source}, inputs=inputs, tags={"prmlab.source": source}) as run:
        write_jsonl(out, rows)
        run.metrics(m)
        run.artifact(out)
    summary(f"prm_data@{source}", f"{m['examples']} examples ({m['with_wrong_step']} with a wrong step) from "
            f"{inputs[0]} -> {out}")


def main() -> None:
    from stages._common import fail, parse_args

    a = parse_args("consensus filtering and PRM training sets", problems="problems JSONL", samples="responses JSONL",
                   mc="MC labels JSONL", judge="judge labels JSONL", source="?one label source: write its training set",
                   out="?its training set JSONL", metrics="?metrics JSON", audit_table="?audit table JSON",
                   human="?folder of human_data@<source> outputs (prm800k, math_shepherd)")
    try:
        if not ((a.source and a.out) or (a.metrics and a.audit_table)):
            raise ParamsError("give --source and --out (one training set) or --metrics and --audit-table (the audit)")
        # The one key of `train_prm` this stage reads (train_prm validates the section as a whole).
        sources = read_params(a.params).get("train_prm", {}).get("sources")
        known = SOURCES + HUMAN_SOURCES + (TOY_HUMAN,)
        if not isinstance(sources, list) or not set(sources) <= set(known):
            raise ParamsError(f"train_prm.sources: expected a list of {list(known)}, got {sources!r}")
        if a.source in HUMAN_SOURCES + (TOY_HUMAN,):
            # Released labels: human_data@<source> converted and deduplicated them; this is the training set.
            path = Path(a.human or "data/human") / f"{a.source}.jsonl"
            if not path.exists():
                made_by = ("stage toy_human@toy (toy profile only)" if a.source == TOY_HUMAN else
                           f"human_data@{a.source}, which needs params human_labels: {{{a.source}: PATH}}")
                raise ParamsError(f"train_prm.sources names {a.source!r}, but {path} was never written (by {made_by})")
            write_training_set(a.source, read_jsonl(path, PRMExample), a.out, [path])
            return
        problems = {p.id: p for p in read_jsonl(a.problems, Problem)}
        responses = read_jsonl(a.samples, Response)
        mc = labels_fitting(a.mc, MCLabel, responses, a.samples)
        judge = labels_fitting(a.judge, JudgeLabel, responses, a.samples)
        missing = sorted({r.problem_id for r in responses} - set(problems))
        if missing:
            raise DataError(f"{a.samples}: field 'problem_id' names problems not in {a.problems}: {missing[:5]}")
        with_oracle = any(r.true_first_error is not None for r in responses)
        if "oracle" in sources and not with_oracle:
            raise ParamsError("train_prm.sources names 'oracle', but these responses carry no verifier labels "
                              "(only the toy world has them); drop it from the list")
    except (ParamsError, DataError) as e:
        fail("consensus", e)
    sets, counts = build_training_sets(problems, responses, mc, judge, with_oracle)
    if a.source:
        write_training_set(a.source, sets[a.source], a.out, [a.samples, a.mc, a.judge])
        return
    with stage_run("consensus", {"with_oracle": with_oracle, "sources": sources}, inputs=[a.samples, a.mc, a.judge]) as run:
        for source in (s for s in sources if s in sets):  # human sources' counts: metrics/human_data/
            counts[f"examples_{source}"] = len(sets[source])
            counts[f"negative_share_{source}"] = sum(0 in ex.labels for ex in sets[source]) / max(len(sets[source]), 1)
        table = audit_table(responses, mc, judge)
        by = audit_breakdown(problems, responses, mc, judge)
        write_json(a.audit_table, table)
        write_json(a.metrics, {**counts, "audit": table, "audit_by": by})  # audit_by: in the file only (many keys)
        run.metrics({**counts, "audit": table})
        run.artifact(a.metrics)
        run.artifact(a.audit_table)
    summary("consensus", f"kept {counts['agree']}/{counts['responses']} ({100 * counts['consensus_kept_share']:.0f}%) "
            f"where MC and judge agree; {counts['judge_unparsed']} judge answers unparsed; sets: "
            + ", ".join(f"{s}={len(sets[s])}" for s in sources if s in sets))


if __name__ == "__main__":
    from stages._common import run_main

    run_main("consensus", main)
