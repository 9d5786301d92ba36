"""Stage bootstrap@toy (toy profile only): the toy world's tokenizer, base LM and policy, committed.

Trains two tiny Qwen2 LMs on synthetic solutions (never on the policy's own outputs):
- a **base** that computes well: canonical solutions only, many small-batch updates;
- the **policy**: the base fine-tuned on solutions of which a share carry one habitual flaw, so it
  errs like an LLM (several kinds of error, right answers reached through wrong steps among them).
The judge is fine-tuned from the same base in stage train_judge@toy. The policy is measured on
held-out problems by the exact verifier. The study's problems are stage problems@toy; the real
profile's counterpart is stages/inputs.py.

The checkpoints (3.4 MB each) are committed (`cache: false` in dvc.yaml), so `dvc repro` on a fresh
clone starts from them; `dvc repro -f bootstrap@toy` rebuilds them, bit for bit on CPU with the same
thread count (time in reports/benchmarks.md; CUDA is used when present, with other bits).

Inputs: params `toy_models`, `toy.min_steps`, `toy.max_steps`.
Outputs: --models-dir/{base,policy}/, --manifests/policy.json (what later stages depend on, see
prmlab.manifest), --metrics.
Run: python -m stages.bootstrap --models-dir models --manifests data/models --metrics metrics/bootstrap.json
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from prmlab.io import write_json
from prmlab.manifest import write_manifests
from prmlab.params import ParamsError, check, load_params, read_params
from prmlab.toy.lm import ModelDims
from prmlab.toy.recipes import WorldShape, base_pairs, measure_policy, policy_pairs, training_problems
from prmlab.toy.world import FLAW_KINDS, canonical_solution
from prmlab.tracking import summary


@dataclass(frozen=True)
class ToyModelsConfig:
    seed: int = 0
    vocab_size: int = 1024
    policy: ModelDims = ModelDims()  # the base's (and so the policy's and judge's) dimensions
    corpus: int = 6000       # problems the base and the policy learn from
    base_steps: int = 6000   # the shared base LM, on canonical solutions only
    policy_steps: int = 1500  # the policy: the base fine-tuned on solutions with habitual flaws
    flawed_share: float = 0.95
    flaw_mix: dict[str, float] = field(default_factory=lambda: {k: 1.0 for k in FLAW_KINDS})
    batch_size: int = 8
    lr: float = 0.002
    eval_problems: int = 300
    eval_temperature: float = 0.7

    def __post_init__(self):
        check(0 <= self.flawed_share < 1, "toy_models.flawed_share must be in [0, 1)")
        unknown = set(self.flaw_mix) - set(FLAW_KINDS)
        check(not unknown, f"toy_models.flaw_mix: unknown flaw kind(s) {sorted(unknown)}; known: {list(FLAW_KINDS)}")
        check(all(v >= 0 for v in self.flaw_mix.values()) and sum(self.flaw_mix.values()) > 0,
              "toy_models.flaw_mix: weights must be >= 0, not all 0")
        for n in ("corpus", "batch_size", "eval_problems", "base_steps"):
            check(getattr(self, n) > 0, f"toy_models.{n} must be > 0")
        check(self.vocab_size >= 300, "toy_models.vocab_size must be >= 300 (256 bytes + specials + merges)")


def world_shape(params_path) -> WorldShape:
    # Only these keys of `toy` are needed; stage problems@toy validates the section.
    world = read_params(params_path).get("toy", {})
    return WorldShape(min_steps=int(world.get("min_steps", 2)), max_steps=int(world.get("max_steps", 5)))


def run_toy(cfg: ToyModelsConfig, models_dir: Path, shape: WorldShape | None = None, run=None) -> dict:
    import copy

    import torch

    from prmlab.prompts import POLICY_SYSTEM, builtin, policy_messages, tag_paragraphs
    from prmlab.toy.lm import new_qwen2, train_lm_logged
    from prmlab.toy.tokenizer import build_tokenizer

    t0 = time.monotonic()
    shape = shape or WorldShape()
    probs = training_problems(cfg.seed, shape, cfg.corpus, 0, cfg.eval_problems)
    # Merges from the prompts both judge styles use, so the judge style never changes the tokenizer.
    texts = [POLICY_SYSTEM, builtin("critic"), builtin("judge_paper"), tag_paragraphs(["x"] * 6, 0), tag_paragraphs(["x"] * 6, 1)]
    corpus = texts * 400 + [p.question for p in probs["corpus"]] + [canonical_solution(p) for p in probs["corpus"][:1000]]
    tok = build_tokenizer(corpus, cfg.vocab_size)
    render = lambda q: tok.apply_chat_template(policy_messages(q), tokenize=False, add_generation_prompt=True)  # noqa: E731
    # CUDA when there is one (minutes instead of half an hour); on CPU the run is deterministic.
    device = "cuda" if torch.cuda.is_available() else "cpu"
    metrics: dict = {"trained_on_gpu": int(device == "cuda")}
    # One base that computes well, then the policy: a strong LM that errs, as Qwen2.5-Math-7B errs on
    # hard problems, rather than an under-trained one (PRMs start from the policy and learn far faster
    # from a base that computes well; the judge starts from this base in train_judge@toy).
    base = train_lm_logged("base", new_qwen2(tok, cfg.policy, cfg.seed).to(device), tok, base_pairs(probs["corpus"], render),
                           cfg.base_steps, cfg.batch_size, cfg.lr, cfg.seed, metrics, run)
    base.save_pretrained(models_dir / "base", safe_serialization=True)
    tok.save_pretrained(models_dir / "base")
    pairs = policy_pairs(probs["corpus"], render, cfg.seed, cfg.flawed_share, cfg.flaw_mix)
    policy = train_lm_logged("policy", copy.deepcopy(base), tok, pairs, cfg.policy_steps, cfg.batch_size, cfg.lr, cfg.seed,
                             metrics, run)
    policy.save_pretrained(models_dir / "policy", safe_serialization=True)
    tok.save_pretrained(models_dir / "policy")
    del base, policy
    torch.manual_seed(cfg.seed)
    m, _ = measure_policy(models_dir / "policy", probs["heldout"], cfg.eval_temperature, cfg.seed)
    metrics |= m
    metrics["seconds"] = time.monotonic() - t0
    return metrics


def main() -> None:
    from stages._common import fail, parse_args, set_threads

    a = parse_args(__doc__.splitlines()[0], models_dir="folder for models", manifests="folder for the models' manifests",
                   metrics="metrics JSON")
    try:
        cfg = load_params("toy_models", ToyModelsConfig, a.params)
        shape = world_shape(a.params)
    except ParamsError as e:
        fail("bootstrap", e)
    from prmlab.tracking import stage_run

    set_threads()
    Path(a.models_dir).mkdir(parents=True, exist_ok=True)
    with stage_run("bootstrap", {"toy_models": cfg, "world_shape": shape}) as run:
        m = run_toy(cfg, Path(a.models_dir), shape, run)
        write_manifests(a.manifests, {"policy": str(Path(a.models_dir) / "policy")})
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    summary("bootstrap", f"policy acc {m['policy_accuracy']:.2f} (right through a wrong step: "
            f"{m['policy_flawed_correct_share']:.2f} of right answers), {m['seconds']:.0f}s")


if __name__ == "__main__":
    from stages._common import run_main

    run_main("bootstrap", main)
