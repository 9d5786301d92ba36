"""How the toy models are taught and measured: training problems, training pairs, measurements.

Stages bootstrap@toy (tokenizer, base, policy: `bootstrap_models`, params `toy_models`) and
train_judge@toy (the judge, from the base: `train_judge`, params `toy_judge`) run here (prmlab.core.stage
runs them). Every label here comes from the exact verifier (prmlab.toy.world), never from a
generator's claim; the models never see the policy's own outputs in training.

    probs = training_problems(seed=0, world=ToyWorldConfig(), n_corpus=6000, n_judge=4000, n_heldout=300)
    pairs = policy_pairs(probs["corpus"], render, seed=0, flawed_share=0.95, flaw_mix={"slip": 1.0})
    m, steps = measure_policy("models/policy", probs["heldout"], temperature=0.7, seed=0)
    m |= measure_judge("models/judge", probs["heldout"], steps, "critic", template, max_tokens=256)
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from prmlab.core.manifest import model_manifest
from prmlab.core.params import check
from prmlab.core.records import Problem
from prmlab.core.result import Done
from prmlab.core.steps import split_steps
from prmlab.engines.config import BackendConfig, Sampling
from prmlab.engines.generation import make_generator
from prmlab.prompts import judge_messages, judge_target, load_template, parse_judgement, policy_messages
from prmlab.toy.lm import ModelDims, new_qwen2, train_lm_logged
from prmlab.toy.tokenizer import build_tokenizer
from prmlab.toy.world import (
    FLAW_KINDS,
    ToyWorldConfig,
    canonical_solution,
    check_steps,
    make_flawed,
    make_problems,
    sample_flaw_kind,
    verify,
)


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
    # systematic blind spot, so MC and the judge err in different places. {}: none.
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


def training_problems(seed: int, world: ToyWorldConfig, n_corpus: int, n_judge: int, n_heldout: int) -> dict[str, list[Problem]]:
    # Seeds seed*1000 + 4..6; stage problems@toy draws the study's splits from toy.seed*1000 + 1..3,
    # so no two generator streams coincide whatever the two seeds are. min_steps..max_steps only: the
    # study's hard problems are, by design, beyond anything the models trained on.
    mk = lambda off, n, name: make_problems(seed * 1000 + off, n, f"toy-{name}", world.min_steps, world.max_steps)  # noqa: E731
    return {"corpus": mk(4, n_corpus, "pc"), "judge": mk(5, n_judge, "jc"), "heldout": mk(6, n_heldout, "ho")}


def tokenizer_corpus(problems: list[Problem]) -> list[str]:
    """What the toy tokenizer learns its merges from: prompt texts (so prompts stay short), the problems
    and 1,000 canonical solutions. The prompt texts are frozen in tokenizer_corpus.json, as worded when
    the committed models were trained, not read from prmlab.prompts: a reworded prompt would otherwise
    change the tokenizer, and so invalidate the committed models (an hour of CPU) and the whole study.
    They hold both judge styles' templates, so neither style is favoured; the tokenizer is byte-level,
    so any wording still encodes, at most in more tokens."""
    texts = json.loads(Path(__file__).with_name("tokenizer_corpus.json").read_text(encoding="utf-8"))["texts"]
    return texts * 400 + [p.question for p in problems] + [canonical_solution(p) for p in problems[:1000]]


def base_pairs(problems: list[Problem], render) -> list[tuple[str, str]]:
    return [(render(p.question), canonical_solution(p)) for p in problems]


def policy_pairs(problems: list[Problem], render, seed: int, flawed_share: float, flaw_mix: dict[str, float]) -> list[tuple[str, str]]:
    """Canonical solutions, a `flawed_share` of them with one habitual flaw (make_flawed systematic)."""
    rng = random.Random(seed + 11)
    pairs = []
    for p in problems:
        if rng.random() < flawed_share:
            steps, _ = make_flawed(rng, p, sample_flaw_kind(rng, flaw_mix), systematic=True)
            text = "\n\n".join(steps)
        else:
            text = canonical_solution(p)
        pairs.append((render(p.question), text))
    return pairs


def judge_pairs(problems: list[Problem], render_chat, seed: int, flawed_share: float, flaw_mix: dict[str, float],
                style: str, template: str, near_miss_share: float = 0.0,
                blind_spots: dict[str, float] | None = None) -> list[tuple[str, str]]:
    """Judge prompts over canonical or flawed solutions, and the reply a careful judge writes: a check
    per paragraph up to the first wrong one, then the verdict. Flaws are random (any value, any kind),
    except a `near_miss_share` of them that are off by one (make_flawed's systematic flaws): the
    slips a copying judge cannot catch, so the checks must be computed. `blind_spots` ({flaw kind:
    share}): that share of the solutions with a flaw of that kind get the reply of a grader blind to it
    (check_steps' `blind`), so the judge learns an LLM judge's systematic blind spot."""
    rng = random.Random(seed + 13)
    pairs = []
    for p in problems:
        blind: frozenset[str] = frozenset()
        if rng.random() < flawed_share:
            kind = sample_flaw_kind(rng, flaw_mix)
            steps, _ = make_flawed(rng, p, kind, systematic=rng.random() < near_miss_share)
            true_kind = check_steps(p, steps)[0].kind
            # Drawn only when a blind spot is set, so a judge without one sees the old stream exactly.
            if blind_spots and true_kind in blind_spots and rng.random() < blind_spots[true_kind]:
                blind = frozenset({true_kind})
        else:
            steps = canonical_solution(p).split("\n\n")
        verdict, checks = check_steps(p, steps, blind)
        pairs.append((render_chat(judge_messages(template, style, p.question, steps)),
                      judge_target(style, steps, verdict.first_error, checks)))
    return pairs


def measure_policy(policy_dir: str | Path, problems: list[Problem], temperature: float, seed: int) -> tuple[dict, list[list[str]]]:
    """Accuracy, right answers through a wrong step, error kinds (the verifier's); and the responses' steps."""
    with make_generator(BackendConfig(backend="transformers", model=str(policy_dir), batch_size=128)) as gen:
        outs = gen.chat([policy_messages(p.question) for p in problems],
                        Sampling(n=1, temperature=temperature, top_p=0.8, max_tokens=160, seed=seed))
    verdicts = [verify(p, o[0].text) for p, o in zip(problems, outs)]
    n, right = len(problems), sum(v.final_correct for v in verdicts)
    m = {"policy_accuracy": right / n,
         "policy_flawed_correct_share": sum(v.final_correct and v.first_error != -1 for v in verdicts) / max(right, 1),
         "policy_error_free_share": sum(v.first_error == -1 for v in verdicts) / n, "eval_problems": n}
    for kind in ("slip", "operand", "answer", "unparseable", "empty"):
        m[f"policy_first_error_{kind}_share"] = sum(v.kind == kind for v in verdicts) / n
    return m, [split_steps(o[0].text) or [""] for o in outs]


def measure_judge(judge_dir: str | Path, problems: list[Problem], steps: list[list[str]], style: str, template: str,
                  max_tokens: int) -> tuple[dict, list[str]]:
    """First-error accuracy against the verifier, overall and on erroneous / error-free responses,
    beside always answering -1; and the judge's replies."""
    with make_generator(BackendConfig(backend="transformers", model=str(judge_dir), batch_size=64)) as gen:
        outs = gen.chat([judge_messages(template, style, p.question, s) for p, s in zip(problems, steps)],
                        Sampling(n=1, temperature=0.0, max_tokens=max_tokens))
    preds = [parse_judgement(style, o[0].text, len(s)) for o, s in zip(outs, steps)]
    truth = [verify(p, s).first_error for p, s in zip(problems, steps)]
    kinds = [verify(p, s).kind for p, s in zip(problems, steps)]
    hit = [p == t for p, t in zip(preds, truth)]
    err = [h for h, t in zip(hit, truth) if t != -1]
    ok = [h for h, t in zip(hit, truth) if t == -1]
    n = len(problems)
    by_kind = {f"judge_accuracy_on_{k}_errors": sum(h for h, kk in zip(hit, kinds) if kk == k) / max(kinds.count(k), 1)
               for k in sorted({k for k in kinds if k})}  # where its errors concentrate (blind spots)
    return {"judge_first_error_accuracy": sum(hit) / n, "judge_baseline_always_none": len(ok) / n,
            "judge_accuracy_on_erroneous": sum(err) / max(len(err), 1), "judge_accuracy_on_correct": sum(ok) / max(len(ok), 1),
            "judge_unparsed_share": sum(p is None for p in preds) / n, "judge_eval_responses": n, **by_kind}, [o[0].text for o in outs]


def fine_tune_policy(name: str, base, tok, render, corpus: list[Problem], seed: int, flaw_mix: dict[str, float],
                     cfg: ToyModelsConfig, out: Path, metrics: dict, run=None):
    """`base` fine-tuned as the policy is (policy_pairs: a `cfg.flawed_share` of `corpus` with one habitual flaw
    of `flaw_mix`; `cfg.policy_steps` at `cfg.batch_size` and `cfg.lr`), saved with `tok` to `out`. The policy
    (bootstrap@toy) and toy_human@toy's writer are both made here, so "trained as the policy is" stays true."""
    model = train_lm_logged(name, base, tok, policy_pairs(corpus, render, seed, cfg.flawed_share, flaw_mix),
                            cfg.policy_steps, cfg.batch_size, cfg.lr, seed, metrics, run)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return model


def train_base_and_policy(cfg: ToyModelsConfig, world: ToyWorldConfig, models_dir: Path, run=None) -> dict:
    """The tokenizer, the base and the policy into models_dir/{base,policy}; training and policy metrics."""
    import copy

    import torch

    t0 = time.monotonic()
    probs = training_problems(cfg.seed, world, cfg.corpus, 0, cfg.eval_problems)
    tok = build_tokenizer(tokenizer_corpus(probs["corpus"]), cfg.vocab_size)
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
    policy = fine_tune_policy("policy", copy.deepcopy(base), tok, render, probs["corpus"], cfg.seed, cfg.flaw_mix, cfg,
                              models_dir / "policy", metrics, run)
    del base, policy
    torch.manual_seed(cfg.seed)
    m, _ = measure_policy(models_dir / "policy", probs["heldout"], cfg.eval_temperature, cfg.seed)
    metrics |= m
    metrics["seconds"] = time.monotonic() - t0
    return metrics


def train_judge_model(cfg: ToyJudgeConfig, models: ToyModelsConfig, world: ToyWorldConfig, base: Path, policy: Path,
                      out: Path, style: str, template: str, run=None) -> dict:
    """The judge, fine-tuned from the base, into `out`; its metrics on the policy's held-out responses.
    Of `models` (params toy_models) only seed, eval_problems and eval_temperature: those bootstrap@toy measured with."""
    import torch
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    t0 = time.monotonic()
    probs = training_problems(models.seed, world, 0, cfg.corpus, models.eval_problems)
    tok = AutoTokenizer.from_pretrained(base)
    render_chat = lambda msgs: tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)  # noqa: E731
    device = "cuda" if torch.cuda.is_available() else "cpu"
    metrics: dict = {"trained_on_gpu": int(device == "cuda")}
    model = Qwen2ForCausalLM.from_pretrained(base, use_safetensors=True).to(device)
    pairs = judge_pairs(probs["judge"], render_chat, models.seed, cfg.flawed_share, cfg.flaw_mix, style, template,
                        cfg.near_miss_share, cfg.blind_spots)
    model = train_lm_logged("judge", model, tok, pairs, cfg.steps, cfg.batch_size, cfg.lr, models.seed, metrics, run)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    del model
    torch.manual_seed(models.seed)
    # The same held-out responses bootstrap@toy measured the policy on.
    _, steps = measure_policy(policy, probs["heldout"], models.eval_temperature, models.seed)
    m, _ = measure_judge(out, probs["heldout"], steps, style, template, cfg.max_tokens)
    metrics |= m
    metrics["seconds"] = time.monotonic() - t0
    return metrics


@dataclass(frozen=True)
class BootstrapInputs:
    """Where stage bootstrap@toy trains the toy models (`models_dir`)."""
    models: Path  # --models-dir: base/, policy/ go under it


def models_dir(a, cfg: dict) -> BootstrapInputs:  # bootstrap@toy's prepare
    return BootstrapInputs(Path(a.models_dir))


def bootstrap_models(cfg: dict, data: BootstrapInputs, run) -> Done:
    """Stage bootstrap@toy: train_base_and_policy into --models-dir, and the policy's manifest."""
    models = data.models
    m = train_base_and_policy(cfg["toy_models"], cfg["toy"], models, run)
    return Done(m, f"policy acc {m['policy_accuracy']:.2f} (right through a wrong step: "
                   f"{m['policy_flawed_correct_share']:.2f} of right answers), {m['seconds']:.0f}s",
                outputs={"manifests/policy.json": model_manifest("policy", str(models / "policy"))})


@dataclass(frozen=True)
class JudgeModelInputs:
    """What stage train_judge@toy works on (`judge_template`)."""
    base: Path  # the toy base LM's folder
    policy: Path  # the policy's folder (whose responses the judge learns to judge)
    out: str  # the judge's folder the core writes
    style: str  # label_judge.style, as label_judge will prompt
    template: str  # its template (label_judge.template_file)


def judge_template(a, cfg: dict) -> JudgeModelInputs:
    """The base, policy and judge (--out) folders; the judge style and template, as label_judge will prompt."""
    lj = cfg["label_judge"]
    return JudgeModelInputs(Path(a.base), Path(a.policy), a.out, lj.style, load_template(lj.style, lj.template_file))


def train_judge(cfg: dict, data: JudgeModelInputs, run) -> Done:
    """Stage train_judge@toy: train_judge_model into --out, and the judge's manifest."""
    base, policy, out, style, template = data.base, data.policy, data.out, data.style, data.template
    m = train_judge_model(cfg["toy_judge"], cfg["toy_models"], cfg["toy"], base, policy, Path(out), style, template, run)
    return Done(m, f"judge first-error acc {m['judge_first_error_accuracy']:.2f} vs always -1 "
                   f"{m['judge_baseline_always_none']:.2f} (erroneous {m['judge_accuracy_on_erroneous']:.2f}, "
                   f"error-free {m['judge_accuracy_on_correct']:.2f}), {m['seconds']:.0f}s",
                outputs={"manifests/judge.json": model_manifest("judge", out)})
