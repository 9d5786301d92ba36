"""Stage bootstrap@toy (toy profile only): the synthetic world the study runs in, and its models.

Generate the synthetic arithmetic problems (train / eval / processbench splits), build the
byte-level tokenizer, train a tiny Qwen2 policy (on canonical solutions mixed with a share of
flawed ones, so it errs like an LLM, including right answers reached through wrong steps) and a
tiny judge, then measure both with the exact verifier. The judge starts from the trained policy's
weights, as a real judge starts from a pretrained base that can already do arithmetic, and is
fine-tuned on synthetic flawed solutions in the judge prompt format (never on the policy's own
outputs). The real profile's counterpart is stages/inputs.py (nothing is trained there).

Inputs: params `toy`, `label_judge.style`, `label_judge.template_file`.
Outputs: --problems-dir/{train,eval,processbench}.jsonl, --models-dir/{policy,judge}/,
--manifests/{policy,judge}.json (what later stages depend on, see prmlab.manifest), --metrics.
Run: python -m stages.bootstrap --problems-dir data/problems --models-dir models --manifests data/models --metrics metrics/bootstrap.json
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from prmlab.io import write_json, write_jsonl
from prmlab.manifest import write_manifests
from prmlab.params import ParamsError, check, load_params, read_params
from prmlab.records import Problem
from prmlab.toy.lm import ModelDims
from prmlab.toy.world import (
    FLAW_KINDS,
    canonical_solution,
    make_flawed,
    make_problems,
    sample_flaw_kind,
    verify,
)
from prmlab.tracking import summary

SPLITS = ("train", "eval", "processbench")


@dataclass(frozen=True)
class ToyConfig:
    seed: int = 0
    n_train: int = 150
    n_eval: int = 64
    n_processbench: int = 200
    min_steps: int = 2
    max_steps: int = 5
    vocab_size: int = 512
    flawed_share: float = 0.3
    flaw_mix: dict[str, float] = field(default_factory=lambda: {k: 1.0 for k in FLAW_KINDS})
    policy: ModelDims = ModelDims()  # the judge is fine-tuned from the policy, so it shares these
    policy_corpus: int = 4000
    judge_corpus: int = 3000
    judge_flawed_share: float = 0.6
    # The judge sees mostly slips: that is what the policy gets wrong.
    judge_flaw_mix: dict[str, float] = field(default_factory=lambda: {"slip": 0.7, "operand": 0.1, "skip": 0.1, "answer": 0.1})
    policy_steps: int = 2000
    judge_steps: int = 600
    batch_size: int = 8
    lr: float = 0.002
    eval_problems: int = 100
    eval_temperature: float = 0.7

    def __post_init__(self):
        check(2 <= self.min_steps <= self.max_steps <= 8, "toy.min_steps..max_steps must be within 2..8")
        check(0 <= self.flawed_share < 1 and 0 <= self.judge_flawed_share < 1, "toy: flawed shares must be in [0, 1)")
        for name, mix in (("flaw_mix", self.flaw_mix), ("judge_flaw_mix", self.judge_flaw_mix)):
            unknown = set(mix) - set(FLAW_KINDS)
            check(not unknown, f"toy.{name}: unknown flaw kind(s) {sorted(unknown)}; known: {list(FLAW_KINDS)}")
            check(all(v >= 0 for v in mix.values()) and sum(mix.values()) > 0, f"toy.{name}: weights must be >= 0, not all 0")
        for n in ("n_train", "n_eval", "n_processbench", "policy_corpus", "judge_corpus", "batch_size", "eval_problems"):
            check(getattr(self, n) > 0, f"toy.{n} must be > 0")
        check(self.vocab_size >= 300, "toy.vocab_size must be >= 300 (256 bytes + specials + merges)")


@dataclass(frozen=True)
class JudgeStyle:
    style: str = "critic"
    template_file: str | None = None


def toy_problems(cfg: ToyConfig) -> dict[str, list[Problem]]:
    # Disjoint seeds per split so no split's generator stream overlaps another's.
    base = cfg.seed * 1000
    mk = lambda off, n, name: make_problems(base + off, n, f"toy-{name}", cfg.min_steps, cfg.max_steps)  # noqa: E731
    return {"train": mk(1, cfg.n_train, "train"), "eval": mk(2, cfg.n_eval, "eval"),
            "processbench": mk(3, cfg.n_processbench, "pb"), "policy_corpus": mk(4, cfg.policy_corpus, "pc"),
            "judge_corpus": mk(5, cfg.judge_corpus, "jc"), "heldout": mk(6, cfg.eval_problems, "ho")}


def policy_pairs(cfg: ToyConfig, problems: list[Problem], render) -> list[tuple[str, str]]:
    rng = random.Random(cfg.seed + 11)
    pairs = []
    for p in problems:
        if rng.random() < cfg.flawed_share:
            steps, _ = make_flawed(rng, p, sample_flaw_kind(rng, cfg.flaw_mix))
            text = "\n\n".join(steps)
        else:
            text = canonical_solution(p)
        pairs.append((render(p.question), text))
    return pairs


def judge_pairs(cfg: ToyConfig, problems: list[Problem], style: str, template: str, render_chat) -> list[tuple[str, str]]:
    from prmlab.prompts import judge_messages, judge_target

    rng = random.Random(cfg.seed + 13)
    pairs = []
    for p in problems:
        if rng.random() < cfg.judge_flawed_share:
            steps, _ = make_flawed(rng, p, sample_flaw_kind(rng, cfg.judge_flaw_mix))
        else:
            steps = canonical_solution(p).split("\n\n")
        fe = verify(p, steps).first_error  # the label is always the verifier's, never the generator's claim
        pairs.append((render_chat(judge_messages(template, style, p.question, steps)), judge_target(style, steps, fe)))
    return pairs


def measure(policy_dir: Path, judge_dir: Path, problems: list[Problem], cfg: ToyConfig, style: str, template: str) -> dict:
    """Policy accuracy and flawed-correct rate, judge first-error accuracy, all by the verifier."""
    from prmlab.generation import BackendConfig, Sampling, make_generator
    from prmlab.prompts import judge_messages, parse_judgement, policy_messages
    from prmlab.steps import split_steps

    with make_generator(BackendConfig(backend="transformers", model=str(policy_dir), batch_size=128)) as gen:
        outs = gen.chat([policy_messages(p.question) for p in problems],
                        Sampling(n=1, temperature=cfg.eval_temperature, top_p=0.8, max_tokens=160, seed=cfg.seed))
    verdicts = [verify(p, o[0].text) for p, o in zip(problems, outs)]
    correct = [v.final_correct for v in verdicts]
    flawed_correct = [v.final_correct and v.first_error != -1 for v in verdicts]
    steps = [split_steps(o[0].text) or [""] for o in outs]
    with make_generator(BackendConfig(backend="transformers", model=str(judge_dir), batch_size=64)) as jgen:
        jouts = jgen.chat([judge_messages(template, style, p.question, s) for p, s in zip(problems, steps)],
                          Sampling(n=1, temperature=0.0, max_tokens=96))
    preds = [parse_judgement(style, o[0].text, len(s)) for o, s in zip(jouts, steps)]
    truth = [v.first_error for v in verdicts]
    hit = [p == t for p, t in zip(preds, truth)]
    err_idx = [i for i, t in enumerate(truth) if t != -1]
    ok_idx = [i for i, t in enumerate(truth) if t == -1]
    n = len(problems)
    return {
        "policy_accuracy": sum(correct) / n,
        "policy_flawed_correct_share": sum(flawed_correct) / max(sum(correct), 1),
        "policy_error_free_share": len(ok_idx) / n,
        "judge_first_error_accuracy": sum(hit) / n,
        "judge_baseline_always_none": len(ok_idx) / n,
        "judge_accuracy_on_erroneous": sum(hit[i] for i in err_idx) / max(len(err_idx), 1),
        "judge_accuracy_on_correct": sum(hit[i] for i in ok_idx) / max(len(ok_idx), 1),
        "judge_unparsed_share": sum(p is None for p in preds) / n,
        "eval_problems": n,
    }


def run_toy(cfg: ToyConfig, judge: JudgeStyle, problems_dir: Path, models_dir: Path, run=None) -> dict:
    import torch

    from prmlab.prompts import POLICY_SYSTEM, load_template, policy_messages, tag_paragraphs
    from prmlab.toy.lm import new_qwen2, train_lm
    from prmlab.toy.tokenizer import build_tokenizer

    t0 = time.monotonic()
    probs = toy_problems(cfg)
    for split in SPLITS:
        write_jsonl(problems_dir / f"{split}.jsonl", probs[split])
    template = load_template(judge.style, judge.template_file)
    corpus = [POLICY_SYSTEM, template, tag_paragraphs(["x"] * 6, 0), tag_paragraphs(["x"] * 6, 1)] * 400 + [p.question for p in probs["policy_corpus"]] + [
        canonical_solution(p) for p in probs["policy_corpus"][:1000]]
    tok = build_tokenizer(corpus, cfg.vocab_size)
    render_chat = lambda msgs: tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)  # noqa: E731
    metrics: dict = {}
    model = new_qwen2(tok, cfg.policy, cfg.seed)
    for name, steps, pairs_fn in (
        ("policy", cfg.policy_steps,
         lambda: policy_pairs(cfg, probs["policy_corpus"], lambda q: render_chat(policy_messages(q)))),
        # Same model object: the judge continues from the policy's weights.
        ("judge", cfg.judge_steps,
         lambda: judge_pairs(cfg, probs["judge_corpus"], judge.style, template, render_chat)),
    ):
        t = time.monotonic()
        # Small batches, many steps: at a fixed CPU budget the tiny LM learns arithmetic from the
        # number of updates (batch 64 x 300 steps: 11% policy accuracy; batch 8 x 2000: 66-72%).
        losses = train_lm(model, tok, pairs_fn(), steps=steps, batch_size=cfg.batch_size, lr=cfg.lr,
                          seed=cfg.seed, max_len=768, desc=f"bootstrap:{name}")
        out = models_dir / name
        model.save_pretrained(out, safe_serialization=True)
        tok.save_pretrained(out)
        metrics[f"{name}_params"] = sum(p.numel() for p in model.parameters())
        metrics[f"{name}_final_loss"] = sum(losses[-20:]) / len(losses[-20:])
        metrics[f"{name}_train_seconds"] = time.monotonic() - t
        if run is not None:
            for i, loss in enumerate(losses):
                if i % 10 == 0 or i == len(losses) - 1:
                    run.metrics({f"{name}_loss": loss}, step=i)
    del model
    torch.manual_seed(cfg.seed)
    metrics.update(measure(models_dir / "policy", models_dir / "judge", probs["heldout"], cfg, judge.style, template))
    metrics["seconds"] = time.monotonic() - t0
    return metrics


def main() -> None:
    from stages._common import fail, parse_args, set_threads

    a = parse_args(__doc__.splitlines()[0], problems_dir="folder for problem files", models_dir="folder for models",
                   manifests="folder for the models' manifests", metrics="metrics JSON")
    try:
        cfg = load_params("toy", ToyConfig, a.params)
        # Only the judge's prompt style is needed here; label_judge validates its whole section.
        ljd = read_params(a.params).get("label_judge", {})
        judge = JudgeStyle(style=ljd.get("style", "critic"), template_file=ljd.get("template_file"))
    except ParamsError as e:
        fail("bootstrap", e)
    from prmlab.tracking import stage_run

    set_threads()
    Path(a.models_dir).mkdir(parents=True, exist_ok=True)
    with stage_run("bootstrap", {"toy": cfg, "judge_style": judge}) as run:
        m = run_toy(cfg, judge, Path(a.problems_dir), Path(a.models_dir), run)
        write_manifests(a.manifests, {role: str(Path(a.models_dir) / role) for role in ("policy", "judge")})
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    summary("bootstrap", f"policy acc {m['policy_accuracy']:.2f} (flawed-correct {m['policy_flawed_correct_share']:.2f}), "
            f"judge acc {m['judge_first_error_accuracy']:.2f} vs always -1 {m['judge_baseline_always_none']:.2f}, "
            f"{m['seconds']:.0f}s")


if __name__ == "__main__":
    from stages._common import run_main

    run_main("bootstrap", main)
