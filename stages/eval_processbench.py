"""Stage eval_processbench: find the earliest wrong step; F1 of error / correct accuracy.

Evaluates every PRM given (ours, or a released Qwen2.5-Math-PRM) and, optionally, the judge model
as a critic (`critic_style`: ProcessBench's `critic` or the PRM paper's `paper` format;
`critic_template_file` for the official wording, rendered byte for byte as ProcessBench's
run_eval.py does). Greedy, or a majority vote over `critic_n` samples; unset temperature / top_p /
top_k take run_eval.py's defaults for the judge model's family (Qwen2.5-Math: T=0.7, top_p=0.8,
top_k=20; others T=1.0, top_p=0.9), and the values used go into the metrics. A PRM predicts
the earliest step scored below the threshold, else -1; reported at 0.5 and at the threshold that
maximises F1 on `threshold_subset` (ProcessBench tunes it on GSM8K). Metrics per subset as
ProcessBench defines them, the headline the unweighted mean of subset F1s, plus accuracy on items
with a correct final answer but a flawed process (the PRM paper's Table 5). Each PRM also gets a
threshold-free step-level AUC per subset (steps before the first error against the first wrong step).

Inputs: --items (toy: built by build_processbench@toy; real: written by inputs@real), --prm-dir (the trained
PRMs), `reference_prms` in params, --prm name=path (repeatable). Params: `eval_processbench`, `judge`.
Core: prmlab.pipeline.processbench.eval_processbench.
Outputs: --metrics JSON, --scores JSONL (per item and model: step scores / prediction).
Run: python -m stages.eval_processbench --items data/processbench/items.jsonl --prm-dir models/prm --metrics metrics/eval_processbench.json --scores data/eval/processbench_scores.jsonl
"""

from prmlab.core.stage import run_stage
from prmlab.engines.config import BackendConfig
from prmlab.pipeline.processbench import EvalPBConfig, eval_processbench, prepare_eval
from prmlab.prms.layouts import PRM_OPTIONS
from prmlab.prms.training_config import TrainPRMConfig


def main() -> None:
    run_stage("eval_processbench", __doc__,
              paths={"items": "ProcessBench items JSONL (toy or real, with their subsets)", **PRM_OPTIONS,
                     "metrics": "metrics JSON", "scores": "step scores and predictions JSONL"},
              sections={"eval_processbench": EvalPBConfig, "judge": BackendConfig, "train_prm": TrainPRMConfig}, prepare=prepare_eval,
              core=eval_processbench, inputs=["items"], torch=True)


if __name__ == "__main__":
    main()
