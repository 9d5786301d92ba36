"""Stage ceiling@toy (toy profile only): the oracle PRM at the budget that meets the exact-label targets.

The label sources' PRMs share the study's budget; this one is the recipe's ceiling beside them: the
train split's draw extended to `ceiling.problems`, `ceiling.n` policy responses each, labelled by the
verifier, `ceiling.steps` optimizer steps (docs/study.md, "A ceiling PRM beside the label sources").
The eval stages score it as `oracle_ceiling` (params `reference_prms`).

Inputs: params `ceiling`, `toy`, `sample`, `train_prm`, `policy`, `engine.ceiling` (where samples run). Core: prmlab.pipeline.ceiling.ceiling.
Outputs: --samples JSONL (Response), --out checkpoint folder, --metrics JSON.
Run: python -m stages.ceiling --samples data/samples/ceiling.jsonl --out models/prm/oracle_ceiling --metrics metrics/ceiling.json
"""

from prmlab.core.stage import run_stage
from prmlab.engines.cluster import EngineConfig
from prmlab.engines.config import BackendConfig
from prmlab.pipeline.ceiling import CeilingConfig, ceiling, prepare_ceiling
from prmlab.pipeline.sampling import SampleConfig
from prmlab.prms.training_config import TrainPRMConfig
from prmlab.toy.world import ToyWorldConfig


def main() -> None:
    run_stage("ceiling", __doc__, paths={"samples": "responses JSONL", "out": "checkpoint folder", "metrics": "metrics JSON"},
              sections={"ceiling": CeilingConfig, "toy": ToyWorldConfig, "sample": SampleConfig, "train_prm": TrainPRMConfig,
                        "policy": BackendConfig, "engine": EngineConfig}, prepare=prepare_ceiling, core=ceiling, torch=True)


if __name__ == "__main__":
    main()
