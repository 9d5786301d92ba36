"""Stage eval_prmbench (paper profile): PRMBench (arXiv 2501.03124) exactly as its official harness scores it.

Every PRM given (ours, or a released PRM of any layout prmlab scores) scores the steps of PRMBench's 6,969 items
(6,211 edited or alternative solutions plus the 758 unedited `correct` copies of the redundency rows, which
count in the per-class numbers only); a step is judged correct when its score is above `threshold` (the
harness's 0.5); an item cut at the scorer's max length is scored over the steps it returned. Reports PRMScore
(0.5 f1 + 0.5 negative_f1 of the pooled step matrix) overall, per class and per category, in points
(prmlab.pipeline.prmbench holds each rule of the harness).

Inputs: the PRMBench folder (params `eval_prmbench.data`, e.g. ../shared/data/prmbench), --prm-dir (the trained
PRMs), `reference_prms` in params, --prm name=path (repeatable). Params: `eval_prmbench`, `train_prm.sources`.
Core: prmlab.pipeline.prmbench.eval_prmbench.
Outputs: --metrics JSON, --scores JSONL (per item and model: the step scores).
Run: python -m stages.eval_prmbench --prm-dir models/prm --metrics metrics/eval_prmbench.json --scores data/eval/prmbench_scores.jsonl
"""

from prmlab.core.stage import run_stage
from prmlab.pipeline.prmbench import EvalPRMBenchConfig, eval_prmbench, prepare_eval
from prmlab.prms.layouts import PRM_OPTIONS
from prmlab.prms.training_config import TrainPRMConfig


def main() -> None:
    run_stage("eval_prmbench", __doc__, paths={**PRM_OPTIONS, "metrics": "metrics JSON", "scores": "step scores JSONL"},
              sections={"eval_prmbench": EvalPRMBenchConfig, "train_prm": TrainPRMConfig}, prepare=prepare_eval,
              core=eval_prmbench, torch=True)


if __name__ == "__main__":
    main()
