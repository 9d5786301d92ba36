"""Stage human_data@<source>: a released step-labelled file (PRM800K, Math-Shepherd) as PRM examples.

One stage per entry of params `human_labels` ({source: path}; empty in the toy profile). Converts the
file (or folder of .jsonl files) with prmlab.human_labels (its docstring states every conversion
rule and its source), then drops every example whose problem is an evaluation problem: PRM800K's
problems come from MATH, whose test problems are in the Best-of-N MATH benchmark and ProcessBench's
math subset. Counts of what was converted, skipped, cut and removed go to --metrics; prm_data@<source>
reads the examples back as that source's training set.

Inputs: --file (named in params `human_labels`, never fetched), --eval-texts (every evaluation set's
problem texts, uncapped, as the profile's first stage wrote them). Outputs: --out JSONL (PRMExample), --metrics JSON.
Run: python -m stages.human_data --source prm800k --file ../prm800k/data --eval-texts data/problems/eval_texts.json --out data/human/prm800k.jsonl --metrics metrics/human_data/prm800k.json
"""

from __future__ import annotations

from prmlab.human_labels import HUMAN_SOURCES, drop_eval_problems, load_human
from prmlab.io import read_json, write_json, write_jsonl
from prmlab.params import ParamsError
from prmlab.tracking import stage_run, summary


def main() -> None:
    from stages._common import parse_args

    a = parse_args("released step labels as PRM examples", source="prm800k | math_shepherd", file="the released file or folder",
                   eval_texts="the evaluation sets' problem texts (inputs@real, problems@toy)",
                   out="PRM examples JSONL", metrics="metrics JSON")
    if a.source not in HUMAN_SOURCES:
        raise ParamsError(f"human_labels: unknown source {a.source!r} (known: {list(HUMAN_SOURCES)})")
    sets = read_json(a.eval_texts)
    examples, counts = load_human(a.source, a.file)
    kept, removed = drop_eval_problems(examples, sets)
    m = {**counts, "converted": counts["examples"], "converted_with_wrong_step": counts["with_wrong_step"], **removed,
         "examples": len(kept), "with_wrong_step": sum(0 in ex.labels for ex in kept)}
    with stage_run(f"human_data@{a.source}", {"source": a.source, "file": a.file}, inputs=[a.file],
                   tags={"prmlab.source": a.source}) as run:
        write_jsonl(a.out, kept)
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    skipped = {k: v for k, v in m.items() if k.startswith("skipped_") and v}
    summary(f"human_data@{a.source}", f"{m['rows']} rows -> {len(examples)} examples"
            + (f" (skipped: {', '.join(f'{k[8:]} {v}' for k, v in skipped.items())})" if skipped else "")
            + f"; {removed['removed_total']} share a problem with an evaluation set and were dropped; "
            f"{len(kept)} kept ({m['with_wrong_step']} with a wrong step) -> {a.out}")


if __name__ == "__main__":
    from stages._common import run_main

    run_main("human_data", main)
