"""Stage report: the paper-shaped tables, figures and a findings table, rebuilt from metrics files.

Tables: released step labels converted (PRM800K, Math-Shepherd), label quality by source, ProcessBench like the PRM paper's Table 7, flawed-process accuracy
like Table 5, Best-of-N like Table 6 and against N, min-score position (Fig. 8). Figures (PNG, each also logged to
the report's MLflow run): min-score position bars and histogram, BoN vs ProcessBench per label source, label
precision/recall, Best-of-N accuracy against N, ProcessBench error/correct-sample accuracy per model, the findings'
intervals. The findings table sets each of the paper's claims beside its number and ours, and says plainly whether
ours reproduces it.

Inputs: --metrics-dir (every stage's metrics JSON; only the files of this profile's stages and of
`train_prm.sources` are read, so metrics left by another profile never mix in), the findings' per-item scores,
--seeds (reports/seeds.json: the verdicts across seeds, which the summary leads with where its seed 0 is this run),
--dose (reports/benchmarks/mc_dose.json: MC's dose-response, Table 4's first half as a curve, where it exists).
Params: `profile`, `train_prm.sources`. Core: prmlab.report.study.report.
Outputs: --out (Markdown, and HTML beside it), --figures folder, --findings; with --headline: --summary, --plots.
Run: python -m stages.report --metrics-dir metrics --pb-scores data/eval/processbench_scores.jsonl --bon-scores data/eval/bon_scores.jsonl --samples data/samples/train.jsonl --judge-labels data/labels/judge.jsonl --headline reports/headline.json --summary reports/metrics.json --plots reports/plots --out reports/report.md --figures reports/figures --findings reports/findings.json --seeds reports/seeds.json --dose reports/benchmarks/mc_dose.json
"""

from prmlab.core.params import ProfileConfig
from prmlab.core.stage import run_stage
from prmlab.prms.training_config import TrainPRMConfig
from prmlab.report.study import prepare_report, report


def main() -> None:
    run_stage("report", __doc__, paths={
        "metrics_dir": "folder of metrics JSON", "out": "report Markdown", "figures": "figures folder",
        "pb_scores": "ProcessBench per-item scores JSONL", "bon_scores": "Best-of-N per-response scores JSONL",
        "findings": "findings JSON (estimates, intervals, verdicts)", "samples": "?training responses JSONL",
        "judge_labels": "?judge labels JSONL (with --samples: the report shows one reply)",
        "headline": "?headline metrics JSON (the dozen numbers to read first)",
        "plots": "?folder for the plots' data (with --headline; dvc.yaml's plots)",
        "summary": "?the few numbers DVC shows as metrics (with --headline): verdict counts, key F1s",
        "seeds": "?the seeds' aggregate JSON (flows/seeds.py): the summary leads with it where it is this run's study's",
        "dose": "?MC's dose-response JSON (benchmarks/bench_mc_dose.py): its table and curve after the findings"},
        sections={"profile": ProfileConfig, "train_prm": TrainPRMConfig}, prepare=prepare_report, core=report)


if __name__ == "__main__":
    main()
