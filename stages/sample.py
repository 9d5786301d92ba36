"""Stage sample (and sample_eval): N responses per problem from the policy, split into steps, graded.

Prompted as Qwen2.5-Math-Instruct is (CoT system message, the problem as the user turn, the model's
chat template). Each response is split on blank lines, its last \\boxed{} extracted and graded
against the gold answer with math-verify. Responses with no steps or no answer are dropped and
counted. Where a problem carries a toy solution graph, the exact verifier also records the true
first wrong step (the toy world's human label).

Inputs: --problems JSONL (Problem). Params: the section named by --section (`sample` or
`sample_eval`), `policy` (backend) and `engine` (where shards run: this process or a Ray
cluster; not a DVC param, the responses are the same). Core: prmlab.pipeline.sampling.sample.
Outputs: --out JSONL (Response), --metrics JSON.
Run: python -m stages.sample --section sample --problems data/problems/train.jsonl --out data/samples/train.jsonl --metrics metrics/sample.json
"""

from prmlab.core.stage import run_stage
from prmlab.engines.cluster import EngineConfig
from prmlab.engines.config import BackendConfig
from prmlab.pipeline.sampling import SampleConfig, prepare_sample, sample


def main() -> None:
    run_stage("{section}", __doc__,  # the DVC stage's name: sample or sample_eval
              paths={"section": {"default": "sample", "help": "params section: sample or sample_eval"},
                     "problems": "problems JSONL", "out": "responses JSONL", "metrics": "metrics JSON"},
              sections={"{section}": SampleConfig, "policy": BackendConfig, "engine": EngineConfig}, prepare=prepare_sample, core=sample,
              inputs=["problems"], torch=True)


if __name__ == "__main__":
    main()
