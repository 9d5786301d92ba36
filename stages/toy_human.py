"""Stage toy_human@toy (toy profile only): the toy's PRM800K, a `human` label source.

Another policy's solutions (off-policy: the *writer*, the toy base fine-tuned as the policy is but on its
own corpus, seed and flaw mix, as GPT-4 wrote PRM800K's solutions for another policy's PRM), fewer of them
than the MC/judge sets (one per problem), labelled by an annotator who errs at params `toy_human.noise`
(prmlab.toy.annotators), on problems drawn from their own stream (toy.seed * 1000 + 7) with the study's
difficulty mix (PRM800K spans MATH's levels as the policy's problems do), minus any an evaluation set
holds. The `oracle` source (the exact verifier on the policy's own responses) stays beside it as an
upper bound.

Controls beside it: --exact-out, the same solutions with the verifier's labels (source
`human_exact`), and --onpolicy-out, the same annotator on as many of the policy's own training responses
(source `human_onpolicy`): what off-policy solutions and the annotator's noise each cost.

Inputs: --base (the toy base LM), --eval-texts (problems@toy), --problems and --samples (the policy's training
problems and responses, stage sample). Params: `toy_human`, `toy` (seed, steps and
the difficulty mix), `toy_models` (how the writer is fine-tuned), `sample` (how it is sampled), `policy`
(the backend), `engine.toy_human` (where its samples' shards run). Outputs: --writer (the writer's weights), --out JSONL (PRMExample; prm_data@human reads
it), --metrics JSON. Core: prmlab.toy.annotators.toy_human_labels. Minutes on 2 CPU cores: ~2 to train
the writer, ~2 to sample 4 solutions to each of 1,500 problems.
Run: python -m stages.toy_human --base models/base --eval-texts data/problems/eval_texts.json \
       --problems data/problems/train.jsonl --samples data/samples/train.jsonl --writer models/writer \
       --out data/human/human.jsonl --exact-out data/human/human_exact.jsonl \
       --onpolicy-out data/human/human_onpolicy.jsonl --metrics metrics/toy_human.json
"""

from prmlab.core.stage import run_stage
from prmlab.engines.cluster import EngineConfig
from prmlab.engines.config import BackendConfig
from prmlab.pipeline.sampling import SampleConfig
from prmlab.toy.annotators import ToyHumanConfig, prepare_toy_human, toy_human_labels
from prmlab.toy.recipes import ToyModelsConfig
from prmlab.toy.world import ToyWorldConfig


def main() -> None:
    run_stage("toy_human", __doc__, paths={"base": "toy base LM folder", "eval_texts": "evaluation problem texts JSON",
                                           "problems": "the policy's training problems JSONL",
                                           "samples": "the policy's training responses JSONL",
                                           "writer": "writer model folder (out)", "out": "PRM examples JSONL",
                                           "exact_out": "the same solutions, verifier's labels (human_exact) JSONL",
                                           "onpolicy_out": "the annotator on the policy's responses (human_onpolicy) JSONL",
                                           "metrics": "metrics JSON"},
              sections={"toy_human": ToyHumanConfig, "toy": ToyWorldConfig, "toy_models": ToyModelsConfig,
                        "sample": SampleConfig, "policy": BackendConfig, "engine": EngineConfig},
              prepare=prepare_toy_human, core=toy_human_labels, inputs=["eval_texts", "samples"], torch=True)


if __name__ == "__main__":
    main()
