"""Stage toy_human@toy (toy profile only): the toy's PRM800K, a `human` label source.

Off-policy solutions (the world's flaw generator, not the policy), fewer of them than the MC/judge
sets, labelled by an annotator who errs at params `toy_human.noise` (prmlab.toy.annotators), on
problems drawn from their own stream (toy.seed * 1000 + 7), with the study's difficulty mix (PRM800K
spans MATH's levels as the policy's problems do), minus any an evaluation set holds. The paper's human
labels have these three properties; the `oracle` source (the exact verifier on the
policy's own responses) stays beside it as an upper bound.

Inputs: --eval-texts (problems@toy). Params: `toy_human`, `toy` (seed, steps and the difficulty mix).
Outputs: --out JSONL (PRMExample; prm_data@human reads it), --metrics JSON. Core: prmlab.toy.annotators.toy_human_labels.
Run: python -m stages.toy_human --eval-texts data/problems/eval_texts.json --out data/human/human.jsonl --metrics metrics/toy_human.json
"""

from prmlab.stage import run_stage
from prmlab.toy.annotators import ToyHumanConfig, read_eval_texts, toy_human_labels
from prmlab.toy.world import ToyWorldConfig


def main() -> None:
    run_stage("toy_human", __doc__, paths={"eval_texts": "evaluation problem texts JSON", "out": "PRM examples JSONL",
                                           "metrics": "metrics JSON"},
              sections={"toy_human": ToyHumanConfig, "toy": ToyWorldConfig}, prepare=read_eval_texts,
              core=toy_human_labels, inputs=["eval_texts"])


if __name__ == "__main__":
    main()
