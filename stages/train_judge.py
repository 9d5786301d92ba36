"""Stage train_judge@toy (toy profile only): the toy judge, fine-tuned from bootstrap@toy's base, committed.

The judge learns to write, per paragraph up to the first wrong one, its own recalculation beside the
claimed result (`1: 12 + 6 -> 18, claimed 19, wrong`), then its verdict in the judge style's format
(`label_judge.style`: critic `\\boxed{k}`, or paper `<analysis_k>` blocks holding the checks, then
`<conclusion>`), so the toy profile exercises the paper profile's parsers. It trains on synthetic
flawed solutions labelled by the exact verifier (prmlab.toy.world.check_steps), never on the
policy's outputs. Starting from the base, not the policy, it keeps the base's arithmetic: stronger
than the policy by construction, as the paper's 72B judge is over its 7B policy. Then it is measured
on the policy's responses to held-out problems, against always answering "no error".

Committed like the policy (`cache: false`); `dvc repro -f train_judge@toy` rebuilds it.
Inputs: --base (bootstrap@toy's base), --policy. Params: `toy_judge`, `toy_models.seed/eval_problems/eval_temperature`,
`toy.min_steps/max_steps`, `label_judge.style/template_file`. Core: prmlab.toy.recipes.train_judge.
Outputs: --out judge folder, --manifests/judge.json, --metrics.
Run: python -m stages.train_judge --base models/base --policy models/policy --out models/judge --manifests data/models --metrics metrics/train_judge.json
"""

from prmlab.core.stage import run_stage
from prmlab.pipeline.labeling_config import LabelJudgeConfig
from prmlab.toy.recipes import ToyJudgeConfig, ToyModelsConfig, judge_template, train_judge
from prmlab.toy.world import ToyWorldConfig


def main() -> None:
    run_stage("train_judge", __doc__, paths={"base": "base model folder", "policy": "policy folder", "out": "judge folder",
                                             "manifests": "folder for the models' manifests", "metrics": "metrics JSON"},
              sections={"toy_judge": ToyJudgeConfig, "toy_models": ToyModelsConfig, "toy": ToyWorldConfig,
                        "label_judge": LabelJudgeConfig},
              prepare=judge_template, core=train_judge, torch=True)


if __name__ == "__main__":
    main()
