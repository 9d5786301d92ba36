"""Stage inputs@real (real profile only): the real data and models the study starts from.

Reads the training problems (GSM8K and MATH train) and the seven Best-of-N benchmarks named in
`real`, drops every training problem whose normalised text equals a ProcessBench or Best-of-N
problem's (counted per evaluation set), loads ProcessBench (a local folder or `hub:Qwen/ProcessBench`),
and writes the manifests of the models named in `policy.model` / `judge.model` and of the eval sections'
`reference_prms` (prmlab.core.manifest).
DVC runs it on every `dvc repro` (`always_changed`: hub names and folders outside the graph cannot
be declared); it takes seconds, and what it writes changes only when the data or models do, so
nothing downstream reruns otherwise. The toy profile's counterpart is stages/bootstrap.py.

Inputs: params `real`, `policy.model`, `judge.model`, `eval_processbench.subsets`, the eval sections' `reference_prms`; `train_prm.sources` and
`human_labels` are checked against each other here, the profile's first stage. Core: prmlab.pipeline.data.real_inputs.
Outputs: --problems-dir/{train,eval}.jsonl and eval_texts.json (every evaluation set's problem texts,
uncapped: what training data must not contain), --processbench JSONL (ProcessBenchItem), --manifests/{policy,judge}.json, --references (the reference PRMs' identities), --metrics.
Run: python -m stages.inputs --problems-dir data/problems --processbench data/processbench/items.jsonl --manifests data/models --references data/models/references.json --metrics metrics/inputs.json
"""

from prmlab.core.stage import run_stage
from prmlab.engines.config import BackendConfig
from prmlab.pipeline.data import RealConfig, read_real, real_inputs


def main() -> None:
    run_stage("inputs", __doc__, paths={"problems_dir": "folder for problem files", "processbench": "ProcessBench items JSONL",
                                        "manifests": "folder for the models' manifests", "metrics": "metrics JSON",
                                        "references": "the reference PRMs' identities JSON"},
              sections={"real": RealConfig, "policy": BackendConfig, "judge": BackendConfig}, prepare=read_real,
              core=real_inputs)


if __name__ == "__main__":
    main()
