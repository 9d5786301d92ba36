"""Stage analyze_bias: the biases the PRM paper reports.

- For every PRM: where the lowest step score sits. The share of Best-of-N-selected responses (by
  `product`) and of all responses whose minimum is on the final step (paper Fig. 8: 17.5% for
  Qwen2.5-Math-PRM-7B, over 40% for several MC-trained PRMs: such a PRM is judging the answer, not
  the process), and the distribution of min-score positions relative to response length.
- The policy's rate of correct answers reached through flawed steps (paper Fig. 6), where the
  verifier's labels exist.

Inputs: --samples (eval responses), --scores (eval_bon's step scores). Params: `analyze_bias`.
Core: prmlab.pipeline.bias.analyze_bias.
Outputs: --metrics JSON (also the table the report uses).
Run: python -m stages.analyze_bias --samples data/eval_samples/eval.jsonl --scores data/eval/bon_scores.jsonl --metrics metrics/analyze_bias.json
"""

from prmlab.core.stage import run_stage
from prmlab.pipeline.bias import AnalyzeBiasConfig, analyze_bias, prepare_bias


def main() -> None:
    run_stage("analyze_bias", __doc__, paths={"samples": "eval responses JSONL", "scores": "eval_bon step scores JSONL",
                                              "metrics": "metrics JSON"},
              sections={"analyze_bias": AnalyzeBiasConfig}, prepare=prepare_bias, core=analyze_bias,
              inputs=["samples", "scores"])


if __name__ == "__main__":
    main()
