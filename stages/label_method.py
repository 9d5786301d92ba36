"""Stage label_method@<source>: one of the field's newer labelling methods labels every sampled response.

`mc_agree` (two-model agreement filter, Athena-PRM): the strong completer's MC labels beside label_mc's (the weak
completer's), a step label kept only where the two agree. `judge_ref` (reference-guided judge, SPARE): one judge pass
aligning each step with the problem's reference solution; a problem without one stops the stage with one line.
`judge_active` (uncertainty-selected judging, ActPRM): a PRM ensemble, each member trained here on label_mc's labels,
scores every response and only the uncertain ones go to the judge. The methods, their rules and their params:
prmlab.pipeline.label_methods. They are label sources (`train_prm.sources`) for a user who names them in params
`label_methods.sources`; the committed study names none.
Shards run where `engine.label_mc` (rollouts) or `engine.label_judge` (a judge) says, resumable as theirs.

Inputs: --problems, --samples, --mc (label_mc's labels: mc_agree's weak completer's, judge_active's members' sets).
Params: `label_methods`, `completer` (the strong completer's backend), `judge`, `label_judge` (judge_active's prompt
and sampling), `train_prm` and `policy.model` (judge_active's members' training), `engine`.
Core: prmlab.pipeline.label_methods.label_method.
Outputs: --out JSONL (MethodLabel), --metrics JSON.
Run: python -m stages.label_method --source judge_ref --problems data/problems/train.jsonl --samples data/samples/train.jsonl --mc data/labels/mc.jsonl --out data/labels/methods/judge_ref.jsonl --metrics metrics/label_method/judge_ref.json
(under `dvc repro`, stage label_method@<source> names the source and the paths say `{source}`)
"""

from prmlab.core.stage import run_stage
from prmlab.engines.cluster import EngineConfig
from prmlab.engines.config import BackendConfig
from prmlab.pipeline.label_methods import LabelMethodsConfig, label_method, prepare_method
from prmlab.pipeline.labeling_config import LabelJudgeConfig
from prmlab.prms.training_config import TrainPRMConfig


def main() -> None:
    run_stage("label_method@{source}", __doc__,
              paths={"source": "?one method's label source (default: DVC's stage label_method@<source>)",
                     "problems": "problems JSONL", "samples": "responses JSONL", "mc": "label_mc's labels JSONL",
                     "out": "labels JSONL", "metrics": "metrics JSON"},
              sections={"label_methods": LabelMethodsConfig, "completer": BackendConfig, "judge": BackendConfig,
                        "label_judge": LabelJudgeConfig, "engine": EngineConfig, "train_prm": TrainPRMConfig,
                        "policy": BackendConfig},
              prepare=prepare_method, core=label_method, inputs=["problems", "samples", "mc"], torch=True)


if __name__ == "__main__":
    main()
