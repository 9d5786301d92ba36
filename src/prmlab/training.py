"""PRM training in the Qwen2.5-Math-PRM layout: stage train_prm's config and core.

The backbone is initialised from the policy, the head is new (`init_prm`); `train` tokenises the
examples, then trains with the transformers `Trainer` on the loss of prmlab.prm.prm_loss (cross-entropy
at the `<extra_0>` positions, or BCE / MSE on soft labels), normalised over the labelled steps of each
accumulated batch, so `accelerate launch` (DDP, FSDP) trains as one process does. torch, transformers
and datasets load inside the functions that use them: label stages import TrainPRMConfig for its sources.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Literal

from prmlab.io import DataError, read_jsonl
from prmlab.params import check
from prmlab.preflight import check_model
from prmlab.records import PRMExample
from prmlab.stage import Done


@dataclass(frozen=True)
class TrainPRMConfig:
    # One PRM per label source; dvc.yaml generates train_prm@<source> from this list.
    sources: list[str] = field(default_factory=lambda: ["mc_hard", "mc_soft", "judge", "consensus"])
    lr: float = 1e-5
    epochs: float = 1.0
    steps: int = 0  # optimizer steps per PRM; > 0 overrides epochs, so every source gets the same number of updates
    batch_size: int = 8
    grad_accum: int = 1
    max_length: int = 2048
    warmup_ratio: float = 0.05
    weight_decay: float = 0.0
    seed: int = 0
    soft_loss: Literal["bce", "mse"] = "bce"
    bf16: bool = False
    max_examples: int = 0  # 0: all

    def __post_init__(self):
        from prmlab.human_labels import HUMAN_SOURCES, TOY_HUMAN
        from prmlab.labeling import SOURCES

        known = SOURCES + HUMAN_SOURCES + (TOY_HUMAN,)
        unknown = sorted(set(self.sources) - set(known))
        check(bool(self.sources) and not unknown, f"train_prm.sources: unknown {unknown} (known: {list(known)})"
              if unknown else "train_prm.sources must name at least one label source")
        check(len(set(self.sources)) == len(self.sources), "train_prm.sources: a source is named twice")
        check(self.lr > 0 and self.epochs > 0, "train_prm.lr and train_prm.epochs must be > 0")
        check(self.steps >= 0, "train_prm.steps must be >= 0 (0: train_prm.epochs decides)")
        check(self.batch_size >= 1 and self.grad_accum >= 1, "train_prm.batch_size, grad_accum must be >= 1")
        check(self.max_length >= 16, "train_prm.max_length must be >= 16")


def optimizer_steps(n_examples: int, batch_size: int, grad_accum: int, epochs: float, world_size: int = 1) -> int:
    """Optimizer steps of a run, counted as the Trainer counts them: ceil(n / (batch x processes))
    batches per epoch, grouped by `grad_accum` (a short last group is a step), times epochs, rounded up."""
    batches = math.ceil(n_examples / (batch_size * world_size))
    per_epoch = max(batches // grad_accum + int(batches % grad_accum > 0), 1)
    return math.ceil(epochs * per_epoch)


def warmup_steps(ratio: float, total_steps: int) -> int:
    """Warmup as an integer step count. transformers 5 reads a float `warmup_steps` < 1 as a ratio,
    4.x truncates it to 0 steps (no warmup): an int means the same on both. Rounded first so that
    float noise (0.07 * 100 = 7.000000000000001) does not add a step."""
    return math.ceil(round(ratio * total_steps, 6))


def init_prm(base: str, seed: int):
    """Tokenizer and PRM from the policy. Seeded first: the new score head is drawn here, before
    the Trainer seeds anything, so without this two runs with the same params differ."""
    from transformers import set_seed

    from prmlab.prm import init_from_policy, prepare_tokenizer

    set_seed(seed)
    tok = prepare_tokenizer(base)
    return tok, init_from_policy(base, tok)


def train(examples: list[PRMExample], base: str, out: str, cfg: TrainPRMConfig, soft: bool, run=None) -> dict:
    import datasets
    import torch
    from transformers import Trainer, TrainingArguments, set_seed

    from prmlab.prm import collate, init_from_policy, prepare_tokenizer, prm_loss, training_features

    # Seeded before the head is drawn (as init_prm does); tokenised before the model loads, so a set
    # that max_length cuts to nothing fails in seconds.
    set_seed(cfg.seed)
    tok = prepare_tokenizer(base)
    # datasets only at the training boundary
    datasets.disable_progress_bars()  # one "Map" bar per run says nothing the summary does not
    ds = datasets.Dataset.from_list([e.to_dict() for e in examples])
    ds = ds.map(lambda ex: training_features(tok, ex, cfg.max_length, soft), remove_columns=ds.column_names)
    dropped = sum(ds["dropped"])
    # An example whose first step does not fit max_length has no labelled token: it would train
    # nothing (loss 0) yet count as trained. Dropped and counted; if none is left, an error.
    keep = [i for i, labels in enumerate(ds["labels"]) if any(x != -100 for x in labels)]
    no_step = len(ds) - len(keep)
    if not keep:
        raise DataError(f"every one of the {len(ds)} training examples is longer than train_prm.max_length "
                        f"({cfg.max_length} tokens) before its first step ends: nothing to train on")
    if no_step:
        print(f"[train_prm] {no_step}/{len(ds)} examples dropped: longer than train_prm.max_length "
              f"({cfg.max_length}) before their first step ends", file=sys.stderr)
        ds = ds.select(keep)
    ds = ds.remove_columns(["dropped"])
    model = init_from_policy(base, tok)
    kind = cfg.soft_loss if soft else "ce"

    class PRMTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            soft_t = inputs.pop("soft_targets")
            labels = inputs.pop("labels")
            out = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
            # Normalised over the labelled step tokens of the whole accumulated batch (the Trainer's
            # `num_items_in_batch`), so batch 2 x accumulation 4 trains exactly as batch 8 x 1. Tell the
            # Trainer explicitly that this loss needs no further division by the accumulation steps
            # (transformers 5 reads `loss_is_scaled_for_ga`; 4.x decides the same from
            # `model_accepts_loss_kwargs` and `num_items_in_batch`, see below). Without a count (not
            # in training), a plain batch mean that the Trainer divides itself.
            loss = prm_loss(out.logits, labels, soft_t, kind, num_items_in_batch)
            self.loss_is_scaled_for_ga = num_items_in_batch is not None
            if num_items_in_batch is not None and getattr(self.args, "average_tokens_across_devices", False):
                # the count is then summed over processes and DDP averages gradients: undo the average,
                # as Trainer.compute_loss does (x1 in one process; DataParallel gathers logits, so x1 too)
                loss = loss * self.accelerator.num_processes
            return (loss, out) if return_outputs else loss

    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback

    from prmlab.tracking import Progress

    class ProgressLines(TrainerCallback):
        """Steps done of the total, rate, ETA and the latest loss, every 10 s (instead of raw log dicts)."""

        def on_train_begin(self, args, state, control, **kw):
            self.bar, self.loss = Progress(state.max_steps, "train_prm", unit="steps", every=10.0), None

        def on_log(self, args, state, control, logs=None, **kw):
            self.loss = (logs or {}).get("loss", self.loss)

        def on_step_end(self, args, state, control, **kw):
            if state.is_world_process_zero:
                self.bar.update(extra=f"loss {self.loss:.4f}" if self.loss is not None else "")

    args = TrainingArguments(
        output_dir=os.path.join(out, ".trainer"), per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum, learning_rate=cfg.lr, num_train_epochs=cfg.epochs,
        max_steps=cfg.steps if cfg.steps > 0 else -1,
        warmup_steps=0, weight_decay=cfg.weight_decay, lr_scheduler_type="cosine", seed=cfg.seed,
        # Every step logged: the Trainer's train_loss averages the losses it gathered from all processes
        # at each log, and a step after the last log would count the main process's loss alone.
        logging_steps=1, save_strategy="no", report_to=[], bf16=cfg.bf16, use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0, remove_unused_columns=False, disable_tqdm=True,
        ddp_find_unused_parameters=False,  # every parameter is used: spares DDP a graph walk (and its warning)
    )
    # set after construction: the process count (`accelerate launch`) is known only from the args
    total = cfg.steps or optimizer_steps(len(ds), cfg.batch_size, cfg.grad_accum, cfg.epochs, args.world_size)
    args.warmup_steps = warmup = warmup_steps(cfg.warmup_ratio, total)
    trainer = PRMTrainer(model=model, args=args, train_dataset=ds,
                         data_collator=lambda feats: collate(feats, tok.pad_token_id))
    # The Trainer counts `num_items_in_batch` (labels != -100 over the accumulated micro-batches) only
    # when it believes the model takes loss kwargs, which it guesses from `forward`'s signature. Say it
    # outright: compute_loss above relies on the count, whatever forward's signature becomes (and on
    # transformers 4.x this flag, with a count, is what stops training_step dividing the loss again).
    trainer.model_accepts_loss_kwargs = True
    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(ProgressLines())
    t0 = time.monotonic()
    result = trainer.train()
    trainer.save_model(out)  # the main process writes; the others wait for it
    if trainer.is_world_process_zero():
        tok.save_pretrained(out)
        import shutil

        shutil.rmtree(os.path.join(out, ".trainer"), ignore_errors=True)
    curve = [(h["step"], h["loss"]) for h in trainer.state.log_history if "loss" in h]
    if run is not None:
        # The curve as its own series, `loss` (steps 1..N); `train_loss` is the run's mean, logged once with
        # the metrics (one series for both put the mean at step 0 of the curve: a false point, issue #29).
        for step, loss in curve:
            run.metrics({"loss": loss}, step=step)
    return {"examples": len(examples), "examples_trained": len(keep), "examples_too_long": no_step,
            "steps_truncated_away": dropped, "train_loss": result.training_loss,
            "final_logged_loss": curve[-1][1] if curve else result.training_loss, "optimizer_steps": result.global_step,
            "warmup_steps": warmup, "seconds": time.monotonic() - t0, "loss": kind,
            "label_steps": sum(len(e.labels) for e in examples),
            "negative_steps": sum(lab == 0 for e in examples for lab in e.labels)}


def is_main_process() -> bool:
    # RANK is set by the launcher (`accelerate launch`, torchrun) in each of its processes.
    return int(os.environ.get("RANK", "0")) == 0


def untrained(base: str, out: str, seed: int) -> dict:
    tok, model = init_prm(base, seed)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return {"examples": 0, "optimizer_steps": 0, "train_loss": None, "seconds": 0.0, "loss": "none"}


def prepare_train(a, cfg: dict) -> list[PRMExample]:
    check_model("policy.model", cfg["policy"].model)  # the PRM's base, before any model loads
    examples = read_jsonl(a.train, PRMExample)
    return examples[: cfg["train_prm"].max_examples] if cfg["train_prm"].max_examples else examples


def train_worker(a, cfg: dict, examples: list[PRMExample]) -> None:
    """A worker process of `accelerate launch`: it trains; the main process records."""
    if examples:
        train(examples, cfg["policy"].model, a.out, cfg["train_prm"], soft=a.source == "mc_soft")


def train_prm(a, cfg: dict, examples: list[PRMExample], run):
    """Stage train_prm: the PRM of one label source (`--source`), saved with its tokenizer to --out."""
    c, base = cfg["train_prm"], cfg["policy"].model
    run.params({"source": a.source})
    run.tag("prmlab.source", a.source)
    if examples:
        m = train(examples, base, a.out, c, soft=a.source == "mc_soft", run=run)
    else:
        # E.g. consensus kept nothing. Saving the untrained model keeps a sweep going; metrics,
        # the MLflow run and the report all say plainly that this PRM was never trained.
        print(f"[train_prm@{a.source}] WARNING: {a.train} has no examples; saving the UNTRAINED initial PRM",
              file=sys.stderr)
        m = untrained(base, a.out, c.seed)
    m["trained"] = bool(examples)
    run.tag("checkpoint", os.path.abspath(a.out))
    # Small checkpoints (the toy PRMs) go to MLflow whole; large ones by path (DVC tracks them).
    run.model(a.out, f"prm-{a.source}", "prm", {"source": a.source, "base": base, "trained": m["trained"]})
    if not examples:
        return Done(m, f"NOT TRAINED: {a.train} has no examples; saved the initial PRM -> {a.out}")
    skipped = f" ({m['examples_too_long']} skipped: longer than max_length)" if m["examples_too_long"] else ""
    return Done(m, f"{m['examples']} examples{skipped}, {m['optimizer_steps']} steps, "
                   f"loss {m['train_loss']:.3f} ({m['loss']}), {m['seconds']:.0f}s -> {a.out}")
