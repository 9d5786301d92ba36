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
`toy.min_steps/max_steps`, `label_judge.style/template_file`.
Outputs: --out judge folder, --manifests/judge.json, --metrics.
Run: python -m stages.train_judge --base models/base --policy models/policy --out models/judge --manifests data/models --metrics metrics/train_judge.json
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from prmlab.io import write_json
from prmlab.manifest import write_manifests
from prmlab.params import ParamsError, check, load_params, read_params
from prmlab.toy.recipes import WorldShape, judge_pairs, measure_judge, measure_policy, training_problems
from prmlab.toy.world import FLAW_KINDS
from prmlab.tracking import summary


@dataclass(frozen=True)
class ToyJudgeConfig:
    corpus: int = 4000       # synthetic solutions to judge
    steps: int = 3000
    flawed_share: float = 0.7
    # Random flaws (any value, any kind), a near_miss_share of them off by one: the judge must check.
    flaw_mix: dict[str, float] = field(default_factory=lambda: {"slip": 0.6, "operand": 0.1, "skip": 0.1, "compensate": 0.1,
                                                                "answer": 0.1})
    near_miss_share: float = 0.5
    # {flaw kind: share}: that share of the flawed training solutions of that kind get a reply blind to it
    # (e.g. {operand: 0.9}: the judge rarely checks quantities against the question), an LLM judge's
    # systematic blind spot, so MC and the judge err in different places (issue #26). {}: none.
    blind_spots: dict[str, float] = field(default_factory=dict)
    batch_size: int = 8
    lr: float = 0.002
    max_tokens: int = 256    # the checks come first: about 16 tokens a paragraph

    def __post_init__(self):
        check(0 <= self.flawed_share < 1, "toy_judge.flawed_share must be in [0, 1)")
        check(0 <= self.near_miss_share <= 1, "toy_judge.near_miss_share must be in [0, 1]")
        unknown = set(self.flaw_mix) - set(FLAW_KINDS)
        check(not unknown, f"toy_judge.flaw_mix: unknown flaw kind(s) {sorted(unknown)}; known: {list(FLAW_KINDS)}")
        check(all(v >= 0 for v in self.flaw_mix.values()) and sum(self.flaw_mix.values()) > 0,
              "toy_judge.flaw_mix: weights must be >= 0, not all 0")
        check(set(self.blind_spots) <= set(FLAW_KINDS) and all(0 <= v <= 1 for v in self.blind_spots.values()),
              f"toy_judge.blind_spots: {{flaw kind: share in [0, 1]}}, kinds of {list(FLAW_KINDS)}")
        for n in ("corpus", "batch_size", "max_tokens"):
            check(getattr(self, n) > 0, f"toy_judge.{n} must be > 0")


@dataclass(frozen=True)
class Shared:
    """What train_judge reads from other sections (each validated by its own stage)."""
    seed: int = 0
    eval_problems: int = 300
    eval_temperature: float = 0.7
    shape: WorldShape = WorldShape()
    style: str = "critic"
    template_file: str | None = None


def shared_params(path) -> Shared:
    raw = read_params(path)
    tm, world, lj = raw.get("toy_models", {}), raw.get("toy", {}), raw.get("label_judge", {})
    return Shared(seed=int(tm.get("seed", 0)), eval_problems=int(tm.get("eval_problems", 300)),
                  eval_temperature=float(tm.get("eval_temperature", 0.7)),
                  shape=WorldShape(int(world.get("min_steps", 2)), int(world.get("max_steps", 5))),
                  style=lj.get("style", "critic"), template_file=lj.get("template_file"))


def run_judge(cfg: ToyJudgeConfig, sh: Shared, base: Path, policy: Path, out: Path, run=None) -> dict:
    import torch
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    from prmlab.prompts import load_template
    from prmlab.toy.lm import train_lm_logged

    t0 = time.monotonic()
    template = load_template(sh.style, sh.template_file)
    probs = training_problems(sh.seed, sh.shape, 0, cfg.corpus, sh.eval_problems)
    tok = AutoTokenizer.from_pretrained(base)
    render_chat = lambda msgs: tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)  # noqa: E731
    device = "cuda" if torch.cuda.is_available() else "cpu"
    metrics: dict = {"trained_on_gpu": int(device == "cuda")}
    model = Qwen2ForCausalLM.from_pretrained(base, use_safetensors=True).to(device)
    pairs = judge_pairs(probs["judge"], render_chat, sh.seed, cfg.flawed_share, cfg.flaw_mix, sh.style, template,
                        cfg.near_miss_share, cfg.blind_spots)
    model = train_lm_logged("judge", model, tok, pairs, cfg.steps, cfg.batch_size, cfg.lr, sh.seed, metrics, run)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    del model
    torch.manual_seed(sh.seed)
    # The same held-out responses bootstrap@toy measured the policy on.
    _, steps = measure_policy(policy, probs["heldout"], sh.eval_temperature, sh.seed)
    m, _ = measure_judge(out, probs["heldout"], steps, sh.style, template, cfg.max_tokens)
    metrics |= m
    metrics["seconds"] = time.monotonic() - t0
    return metrics


def main() -> None:
    from stages._common import fail, parse_args, set_threads

    a = parse_args(__doc__.splitlines()[0], base="base model folder", policy="policy folder", out="judge folder",
                   manifests="folder for the models' manifests", metrics="metrics JSON")
    try:
        cfg = load_params("toy_judge", ToyJudgeConfig, a.params)
        sh = shared_params(a.params)
    except ParamsError as e:
        fail("train_judge", e)
    from prmlab.tracking import stage_run

    set_threads()
    with stage_run("train_judge", {"toy_judge": cfg, "shared": sh}) as run:
        m = run_judge(cfg, sh, Path(a.base), Path(a.policy), Path(a.out), run)
        write_manifests(a.manifests, {"judge": a.out})
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    summary("train_judge", f"judge first-error acc {m['judge_first_error_accuracy']:.2f} vs always -1 "
            f"{m['judge_baseline_always_none']:.2f} (erroneous {m['judge_accuracy_on_erroneous']:.2f}, "
            f"error-free {m['judge_accuracy_on_correct']:.2f}), {m['seconds']:.0f}s")


if __name__ == "__main__":
    from stages._common import run_main

    run_main("train_judge", main)
