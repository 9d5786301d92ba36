"""Stage problems@toy (toy profile only): the study's synthetic problems, drawn from the toy world.

Three disjoint splits of arithmetic word problems whose every step the verifier checks exactly:
`train` (the policy's responses to these become PRM training data), `eval` (Best-of-N) and
`processbench` (the toy ProcessBench is built from the policy's responses to these). Apart from
bootstrap@toy's models, so a new world seed (a seed study, `make study-seeds`) redraws the problems
in seconds and keeps the committed models. The real profile's counterpart is stages/inputs.py.

Inputs: params `toy` (and `train_prm.sources` against `human_labels`, checked here, the profile's first stage), the
eval sections' `reference_prms`.
Core: prmlab.toy.world.draw_problems.
Outputs: --problems-dir/{train,eval,processbench}.jsonl and eval_texts.json (the evaluation sets' problem
texts, as inputs@real writes them), --references (the reference PRMs' identities: prmlab.core.manifest), --metrics JSON.
Run: python -m stages.problems --problems-dir data/problems --references data/models/references.json --metrics metrics/problems.json
"""

from prmlab.core.manifest import references_manifest
from prmlab.core.stage import run_stage
from prmlab.pipeline.human_labels import check_profile_sources
from prmlab.toy.world import ProblemsInputs, ToyWorldConfig, draw_problems


def main() -> None:
    run_stage("problems", __doc__, paths={"problems_dir": "folder for problem files", "metrics": "metrics JSON",
                                          "references": "the reference PRMs' identities JSON"},
              sections={"toy": ToyWorldConfig}, core=draw_problems,
              # before any work: the label sources, then the reference PRMs (outside the graph: one line here)
              prepare=lambda a, cfg: ProblemsInputs(references_manifest(check_profile_sources(a), toy=True)))


if __name__ == "__main__":
    main()
