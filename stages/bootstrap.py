"""Stage bootstrap@toy (toy profile only): the toy world's tokenizer, base LM and policy, committed.

Trains two tiny Qwen2 LMs on synthetic solutions (never on the policy's own outputs):
- a **base** that computes well: canonical solutions only, many small-batch updates;
- the **policy**: the base fine-tuned on solutions of which a share carry one habitual flaw, so it
  errs like an LLM (several kinds of error, right answers reached through wrong steps among them).
The judge is fine-tuned from the same base in stage train_judge@toy. The policy is measured on
held-out problems by the exact verifier. The study's problems are stage problems@toy; the real
profile's counterpart is stages/inputs.py. The tokenizer's prompt texts are frozen (recipes.tokenizer_corpus).

The checkpoints (3.4 MB each) are committed (`cache: false` in dvc.yaml), so `dvc repro` on a fresh
clone starts from them; `dvc repro -f bootstrap@toy` rebuilds them, bit for bit on CPU with the same
thread count (time in reports/benchmarks.md; CUDA is used when present, with other bits).

Inputs: params `toy_models`, `toy.min_steps`, `toy.max_steps`. Core: prmlab.toy.recipes.bootstrap_models.
Outputs: --models-dir/{base,policy}/, --manifests/policy.json (what later stages depend on, see
prmlab.core.manifest), --metrics.
Run: python -m stages.bootstrap --models-dir models --manifests data/models --metrics metrics/bootstrap.json
"""

from prmlab.core.stage import run_stage
from prmlab.toy.recipes import ToyModelsConfig, bootstrap_models, models_dir
from prmlab.toy.world import ToyWorldConfig


def main() -> None:
    run_stage("bootstrap", __doc__, paths={"models_dir": "folder for models", "manifests": "folder for the models' manifests",
                                           "metrics": "metrics JSON"}, torch=True,
              sections={"toy_models": ToyModelsConfig, "toy": ToyWorldConfig}, prepare=models_dir, core=bootstrap_models)


if __name__ == "__main__":
    main()
