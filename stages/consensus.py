"""Stage consensus: keep a sample only where MC and the judge agree on the first error; write the
PRM training sets of every label source in TRL's stepwise format, and the label-quality audit.

Sources: `mc_hard`, `mc_soft` (hard labels plus the MC value, for a regression loss), `judge`,
`consensus` (MC first error == judge first error; "no error" agreeing counts), and, where the
verifier's labels exist (toy world), `oracle`, the analogue of the paper's human-labelled PRM800K.

Inputs: --problems, --samples, --mc, --judge. Params: none.
Outputs: --out-dir/<source>.jsonl (PRMExample), --metrics JSON, --audit-table JSON (for the report).
Run: python -m stages.consensus --problems ... --samples ... --mc ... --judge ... --out-dir data/prm_train --metrics metrics/consensus.json --audit-table reports/tables/label_audit.json
"""

from __future__ import annotations

from pathlib import Path

from prmlab.io import read_jsonl, write_json, write_jsonl
from prmlab.labeling import audit, build_training_sets
from prmlab.records import JudgeLabel, MCLabel, Problem, Response
from prmlab.tracking import stage_run, summary


def audit_table(responses: list[Response], mc: dict[str, MCLabel], judge: dict[str, JudgeLabel]) -> dict:
    """Label quality by source against the verifier; consensus is audited on the samples it keeps."""
    if not any(r.true_first_error is not None for r in responses):
        return {}
    mc_fe = {k: v.first_error for k, v in mc.items()}
    j_fe = {k: v.first_error for k, v in judge.items() if v.first_error is not None}
    kept = [r for r in responses if r.response_id in mc_fe and r.response_id in j_fe and mc_fe[r.response_id] == j_fe[r.response_id]]
    return {"mc": audit(responses, mc_fe), "judge": audit(responses, j_fe), "consensus": audit(kept, mc_fe)}


def main() -> None:
    from stages._common import parse_args

    a = parse_args("consensus filtering and PRM training sets", problems="problems JSONL", samples="responses JSONL",
                   mc="MC labels JSONL", judge="judge labels JSONL", out_dir="folder for <source>.jsonl",
                   metrics="metrics JSON", audit_table="audit table JSON")
    problems = {p.id: p for p in read_jsonl(a.problems, Problem)}
    responses = read_jsonl(a.samples, Response)
    mc = {lab.response_id: lab for lab in read_jsonl(a.mc, MCLabel)}
    judge = {lab.response_id: lab for lab in read_jsonl(a.judge, JudgeLabel)}
    with_oracle = any(r.true_first_error is not None for r in responses)
    with stage_run("consensus", {"with_oracle": with_oracle}, inputs=[a.samples, a.mc, a.judge]) as run:
        sets, counts = build_training_sets(problems, responses, mc, judge, with_oracle)
        for source, rows in sets.items():
            write_jsonl(Path(a.out_dir) / f"{source}.jsonl", rows)
            counts[f"examples_{source}"] = len(rows)
            counts[f"negative_share_{source}"] = sum(0 in ex.labels for ex in rows) / max(len(rows), 1)
        table = audit_table(responses, mc, judge)
        write_json(a.audit_table, table)
        write_json(a.metrics, {**counts, "audit": table})
        run.metrics({**counts, "audit": table})
        run.artifact(a.metrics)
        run.artifact(a.audit_table)
    summary("consensus", f"kept {counts['agree']}/{counts['responses']} ({100 * counts['consensus_kept_share']:.0f}%) "
            f"where MC and judge agree; {counts['judge_unparsed']} judge answers unparsed; sets: "
            + ", ".join(f"{s}={len(r)}" for s, r in sets.items()))


if __name__ == "__main__":
    main()
