"""Stage eval_bon: Best-of-N with each PRM vs majority vote and pass@N.

For each evaluation problem, the N policy responses of `sample_eval` are scored step by step by
each PRM; a response's score is the `product` (paper default), `min` or `last` of its step scores;
prm@N picks the top response (ties: the earliest). maj@N (most common answer) and pass@N (any
correct) are reported alongside, per benchmark and averaged, and (`by_n`, averaged, a row per N) at each N = 1,
2, 4, ... up to n from each problem's first N responses: the Best-of-N curve. Where the verifier's
labels exist (toy world), also the **process-verified** accuracy: the chosen response has the right
answer and no wrong step, the gap the paper says BoN hides; and each aggregation's within-problem AUC
(an error-free response scored above a flawed one of the same problem).

Inputs: --problems, --samples (N per problem), --prm-dir (the trained PRMs, `<dir>/<source>` for each of
`train_prm.sources`), `reference_prms` in params, --prm name=path (repeatable; a folder or hub name).
Params: `eval_bon`. Core: prmlab.pipeline.bon.eval_bon.
Outputs: --metrics JSON, --scores JSONL (step scores per response and PRM).
Run: python -m stages.eval_bon --problems data/problems/eval.jsonl --samples data/eval_samples/eval.jsonl --prm-dir models/prm --metrics metrics/eval_bon.json --scores data/eval/bon_scores.jsonl
"""

from prmlab.core.stage import run_stage
from prmlab.pipeline.bon import EvalBoNConfig, eval_bon, prepare_bon
from prmlab.prms.layouts import PRM_OPTIONS
from prmlab.prms.training_config import TrainPRMConfig


def main() -> None:
    run_stage("eval_bon", __doc__, paths={"problems": "problems JSONL", "samples": "responses JSONL (N per problem)",
                                          **PRM_OPTIONS, "metrics": "metrics JSON", "scores": "step scores JSONL"},
              sections={"eval_bon": EvalBoNConfig, "train_prm": TrainPRMConfig}, prepare=prepare_bon, core=eval_bon, inputs=["problems", "samples"],
              torch=True)


if __name__ == "__main__":
    main()
