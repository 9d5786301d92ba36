"""Tables 6 and 7 of the PRM paper for PRMs evaluated outside the graph (`prmlab eval`, prmlab.runs.adhoc): one row
per PRM from its eval stages' outputs, and the two Markdown tables with the paper's number beside a known
checkpoint; PRMBench's PRMScores with its harness's reference row beside a known checkpoint; and each benchmark's
published rows (the paper's Table 7, the field's in prmlab.analysis.published, PRMBench's harness and leaderboard) ranked
with the PRMs evaluated among them, so a new PRM lands in context.

Inputs: a PRM's folder of eval outputs (processbench.json, bon.json, bon_scores.jsonl, prmbench.json). Outputs: a row (dict)
per PRM, and the tables as Markdown.
"""

from __future__ import annotations

from pathlib import Path

from prmlab.analysis.metrics import min_position_stats, read_score_rows
from prmlab.analysis.paper import PRMBENCH, TABLE7, TABLE7_ROWS, TABLE7_SUBSETS
from prmlab.analysis.published import LEADERBOARD_NAME, PRMBENCH_FIELD, PROCESSBENCH_FIELD
from prmlab.core.io import read_json
from prmlab.report.markdown import f3, fmt1, table


def table_row(name: str, model: str, out: Path, which: list[str] = ("processbench", "bon")) -> dict:
    """One model's numbers from its eval outputs: ProcessBench per subset and average (Table 7's
    shape), Best-of-N per aggregation with maj@N and pass@N (Table 6's), and Fig. 8's min-score position."""
    row: dict = {"name": name, "model": model, "paper_table7_f1": TABLE7.get(model)}
    if "processbench" in which and (out / "processbench.json").exists():  # never an older run's file
        res = read_json(out / "processbench.json")["models"][f"prm/{name}"]
        tuned = res["tuned"]
        subsets = [k for k, v in tuned.items() if isinstance(v, dict) and "f1" in v]
        row["processbench"] = {s: {k: tuned[s][k] for k in ("error_acc", "correct_acc", "f1")} for s in subsets}
        # Held out: the subsets the threshold was not tuned on (what the report gives); "all" averages
        # the tuning subset in, so it flatters a tuned threshold.
        row["threshold_subset"] = tuned.get("threshold_subset")
        row["processbench_heldout_avg_f1"] = tuned.get("heldout_average_f1")
        row["processbench_avg_f1"] = tuned["average_f1"]
        row["processbench_avg_f1_at_0.5"] = res.get("threshold_0.5", {}).get("average_f1")
        row["step_auc_heldout"] = res.get("step_auc", {}).get("heldout_average")
        row["threshold"] = tuned.get("threshold")
    if "bon" in which and (out / "bon.json").exists():
        bon = read_json(out / "bon.json")
        avg = bon["results"][name]["average"]
        row["bon_n"] = bon["n"]
        row["bon"] = {k[4:]: v for k, v in avg.items() if k.startswith("prm_") and not k.endswith("_process_verified")}
        row["maj"], row["pass"] = bon["results"]["baselines"]["average"]["maj"], bon["results"]["baselines"]["average"]["pass"]
        stats = min_position_stats(read_score_rows(out / "bon_scores.jsonl", ("prm", "problem_id", "response_id")), bins=10)
        row["min_on_final_step"] = stats["min_on_last_step_all"] if stats["responses"] else None
    if "prmbench" in which and (out / "prmbench.json").exists():
        res = read_json(out / "prmbench.json")["models"][f"prm/{name}"]
        row["prmbench"] = {"prmscore": res["prmscore"], **res["classes"], **res["categories"]}
        row["prmbench_truncated_items"] = res["truncated_items"]
    return row


# PRMBench's columns in its tables' order (overall; each category's classes, then the category): the reference row's.
PRMBENCH_COLUMNS = list(PRMBENCH["Qwen/Qwen2.5-Math-PRM-7B"])


def markdown_table(rows: list[dict]) -> str:
    """Tables 7 and 6 of the PRM paper, for the models evaluated, with the paper's row where known."""
    lines = []
    if pb := [r for r in rows if "processbench" in r]:
        subsets, tune = list(pb[0]["processbench"]), pb[0].get("threshold_subset")
        lines += ["ProcessBench (like Table 7): F1 per subset (error acc / correct acc / F1); average F1 at the threshold "
                  f"tuned on subset {tune}: over the held-out subsets (the report's figure) and over all subsets "
                  f"({tune} included, flattered by the tuning); at 0.5; the paper's average F1 for the same checkpoint "
                  "(Table 7).", "",
                  table(["model", *subsets, f"held-out avg F1 (without {tune})", f"avg F1, all subsets (with {tune})",
                         "avg F1 (0.5)", "held-out step AUC", "paper avg F1 (Table 7)"],
                        [[r["name"], *(" / ".join(fmt1(r["processbench"][s][k]) for k in ("error_acc", "correct_acc", "f1"))
                                       for s in subsets),
                          fmt1(r["processbench_heldout_avg_f1"]), fmt1(r["processbench_avg_f1"]),
                          fmt1(r["processbench_avg_f1_at_0.5"]), f3(r.get("step_auc_heldout")), fmt1(r["paper_table7_f1"])]
                         for r in pb]), ""]
    if bon := [r for r in rows if "bon" in r]:
        aggs, n = list(bon[0]["bon"]), bon[0]["bon_n"]
        lines += [f"Best-of-{n} (like Table 6), average over the benchmarks; min on final step: share of multi-step "
                  "responses whose lowest step score is on the last step (Fig. 8).", "",
                  table(["model", *(f"prm@{n} ({a})" for a in aggs), f"maj@{n}", f"pass@{n}", "min on final step (%)"],
                        [[r["name"], *(fmt1(r["bon"].get(a)) for a in aggs), fmt1(r["maj"]), fmt1(r["pass"]),
                          fmt1(r["min_on_final_step"])] for r in bon]), ""]
    if pbm := [r for r in rows if "prmbench" in r]:
        body = []
        for r in pbm:
            body.append([r["name"], *(fmt1(r["prmbench"].get(c)) for c in PRMBENCH_COLUMNS),
                         str(r["prmbench_truncated_items"])])
            if ref := PRMBENCH.get(r["model"]):
                body.append([f"{r['model']} (PRMBench harness)", *(fmt1(ref.get(c)) for c in PRMBENCH_COLUMNS), ""])
        lines += ["PRMBench (arXiv 2501.03124): PRMScore overall, per class and per category, as its official harness "
                  "scores it; below a known checkpoint, the harness's own row (prmlab.analysis.paper.PRMBENCH).", "",
                  table(["model", *PRMBENCH_COLUMNS, "items cut at max length"], body), ""]
    return "\n".join(lines + context_tables(rows))


def _f1s(cells) -> list[float]:
    """A published row's F1 per subset, whether it gives (error, correct, F1) or F1 alone."""
    return [c[2] if isinstance(c, tuple) else c for c in cells]


def context_tables(rows: list[dict]) -> list[str]:
    """The PRMs evaluated ranked among the published rows: ProcessBench by average F1 over its four subsets at the
    threshold tuned on GSM8K (ProcessBench's own calculation), PRMBench by overall PRMScore; the published rows
    with their source, ours marked "this run". ProcessBench's published rows are shown only where the evaluation ran
    on ProcessBench's subsets (a toy benchmark's numbers are not comparable)."""
    lines = []
    if pb := [r for r in rows if "processbench" in r]:
        if tuple(pb[0]["processbench"]) != TABLE7_SUBSETS:
            lines += [f"Published ProcessBench rows (prmlab.analysis.paper.TABLE7_ROWS, prmlab.analysis.published) are not ranked with "
                      f"these: subsets {', '.join(pb[0]['processbench'])} are not ProcessBench's "
                      f"({', '.join(TABLE7_SUBSETS)}).", ""]
        else:
            ranked = [(r["processbench_avg_f1"], f"**{r['name']}** (this run)", "evaluated", "",
                       [r["processbench"][s]["f1"] for s in TABLE7_SUBSETS], "prmlab eval") for r in pb]
            ranked += [(avg, name, kind, "", _f1s(cells), "PRM paper (arXiv 2501.07301), Table 7")
                       for name, (kind, _, cells, avg) in TABLE7_ROWS.items()]
            ranked += [(avg, name, kind, setting, _f1s(cells), src)
                       for name, (kind, setting, cells, avg, src) in PROCESSBENCH_FIELD.items()]
            ranked.sort(key=lambda x: -x[0])
            lines += ["ProcessBench in context: the PRMs evaluated here ranked among published rows by average F1 over "
                      "the four subsets (threshold tuned on GSM8K, ProcessBench's calculation); F1 per subset. Kinds: "
                      "PRM, generative (writes a verdict per step; setting: its sampled judgments), critic (a prompted "
                      "LLM), ORM (outcome reward model scored per step).", "",
                      table(["#", "model", "kind", "GSM8K", "MATH", "OlympiadBench", "Omni-MATH", "avg F1", "setting",
                             "source"],
                            [[str(i), name, kind, *(fmt1(f) for f in f1s), fmt1(avg), setting, src]
                             for i, (avg, name, kind, setting, f1s, src) in enumerate(ranked, 1)]), ""]
    if pbm := [r for r in rows if "prmbench" in r]:
        cols = ["prmscore", "Simplicity", "Soundness", "Sensitivity"]
        ranked = [(r["prmbench"], f"**{r['name']}** (this run)", "evaluated", "prmlab eval") for r in pbm]
        ranked += [(ref, f"{model} (harness's saved output)", "PRM", "PRMBench harness notebook (prmlab.analysis.paper.PRMBENCH)")
                   for model, ref in PRMBENCH.items()
                   if ref["prmscore"] != PRMBENCH_FIELD.get(LEADERBOARD_NAME.get(model), (0, {}))[1].get("prmscore")]
        ranked += [(vals, name, kind, src) for name, (kind, vals, src) in PRMBENCH_FIELD.items()]
        ranked.sort(key=lambda x: -x[0]["prmscore"])
        lines += ["PRMBench in context: the PRMs evaluated here ranked among published rows by overall PRMScore; the "
                  "category averages beside it.", "",
                  table(["#", "model", "kind", "PRMScore", "Simplicity", "Soundness", "Sensitivity", "source"],
                        [[str(i), name, kind, *(fmt1(vals.get(c)) for c in cols), src]
                         for i, (vals, name, kind, src) in enumerate(ranked, 1)]), ""]
    return lines
