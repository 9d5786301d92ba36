"""Stage train_prm: one PRM per label source, in the Qwen2.5-Math-PRM layout.

The backbone is initialised from the policy (the paper starts from Qwen2.5-Math-7B-Instruct), the
head is new. Loss: cross-entropy on the `<extra_0>` positions with hard labels (the paper's final
recipe); for `mc_soft`, `soft_loss` (BCE or MSE on P(class 1) against the MC value). Only labelled
steps count. Trained with the transformers `Trainer`, so `accelerate launch -m stages.train_prm ...`
with a DeepSpeed/FSDP config trains a 7B model across GPUs unchanged.

Inputs: --train (PRMExample JSONL). Params: `train_prm`, `policy.model` (the base: a folder or hub name).
Outputs: --out checkpoint folder, --metrics JSON.
Run: python -m stages.train_prm --source consensus --train data/prm_train/consensus.jsonl --out models/prm/consensus --metrics metrics/train_prm/consensus.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from prmlab.generation import BackendConfig
from prmlab.io import read_jsonl, write_json
from prmlab.params import ParamsError, check, load_params
from prmlab.records import PRMExample
from prmlab.tracking import stage_run, summary


@dataclass(frozen=True)
class TrainPRMConfig:
    lr: float = 1e-5
    epochs: float = 1.0
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
        check(self.lr > 0 and self.epochs > 0, "train_prm.lr and train_prm.epochs must be > 0")
        check(self.batch_size >= 1 and self.grad_accum >= 1, "train_prm.batch_size, grad_accum must be >= 1")
        check(self.max_length >= 16, "train_prm.max_length must be >= 16")


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
    from transformers import Trainer, TrainingArguments

    from prmlab.prm import collate, prm_loss, training_features

    tok, model = init_prm(base, cfg.seed)
    # datasets only at the training boundary
    ds = datasets.Dataset.from_list([e.to_dict() for e in examples])
    ds = ds.map(lambda ex: training_features(tok, ex, cfg.max_length, soft), remove_columns=ds.column_names)
    dropped = sum(ds["dropped"])
    ds = ds.remove_columns(["dropped"])
    kind = cfg.soft_loss if soft else "ce"

    class PRMTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            soft_t = inputs.pop("soft_targets")
            labels = inputs.pop("labels")
            out = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
            loss = prm_loss(out.logits, labels, soft_t, kind)
            return (loss, out) if return_outputs else loss

    args = TrainingArguments(
        output_dir=os.path.join(out, ".trainer"), per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum, learning_rate=cfg.lr, num_train_epochs=cfg.epochs,
        warmup_steps=cfg.warmup_ratio, weight_decay=cfg.weight_decay, lr_scheduler_type="cosine", seed=cfg.seed,
        logging_steps=5, save_strategy="no", report_to=[], bf16=cfg.bf16, use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0, remove_unused_columns=False, disable_tqdm=True,
    )
    trainer = PRMTrainer(model=model, args=args, train_dataset=ds,
                         data_collator=lambda feats: collate(feats, tok.pad_token_id))
    t0 = time.monotonic()
    result = trainer.train()
    trainer.save_model(out)
    tok.save_pretrained(out)
    import shutil

    shutil.rmtree(os.path.join(out, ".trainer"), ignore_errors=True)
    curve = [(h["step"], h["loss"]) for h in trainer.state.log_history if "loss" in h]
    if run is not None:
        for step, loss in curve:
            run.metrics({"train_loss": loss}, step=step)
    return {"examples": len(examples), "steps_truncated_away": dropped, "train_loss": result.training_loss,
            "final_logged_loss": curve[-1][1] if curve else result.training_loss, "optimizer_steps": result.global_step,
            "seconds": time.monotonic() - t0, "loss": kind,
            "label_steps": sum(len(e.labels) for e in examples),
            "negative_steps": sum(lab == 0 for e in examples for lab in e.labels)}


def untrained(base: str, out: str, seed: int) -> dict:
    tok, model = init_prm(base, seed)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return {"examples": 0, "optimizer_steps": 0, "train_loss": None, "seconds": 0.0, "loss": "none"}


def main() -> None:
    ap = argparse.ArgumentParser(description="train a PRM on one label source")
    ap.add_argument("--source", required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"))
    a = ap.parse_args()
    from stages._common import fail, set_threads

    try:
        cfg = load_params("train_prm", TrainPRMConfig, a.params)
        base = load_params("policy", BackendConfig, a.params).model
    except ParamsError as e:
        fail("train_prm", e)
    examples = read_jsonl(a.train, PRMExample)
    if cfg.max_examples:
        examples = examples[: cfg.max_examples]
    set_threads()
    with stage_run(f"train_prm@{a.source}", {"train_prm": cfg, "source": a.source, "base": base},
                   inputs=[a.train], tags={"prmlab.source": a.source}) as run:
        if examples:
            m = train(examples, base, a.out, cfg, soft=a.source == "mc_soft", run=run)
        else:
            # E.g. consensus kept nothing. Saving the untrained model keeps a sweep going; metrics,
            # the MLflow run and the report all say plainly that this PRM was never trained.
            print(f"[train_prm@{a.source}] WARNING: {a.train} has no examples; saving the UNTRAINED initial PRM",
                  file=sys.stderr)
            m = untrained(base, a.out, cfg.seed)
        m["trained"] = bool(examples)
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
        run.tag("checkpoint", os.path.abspath(a.out))
        # Small checkpoints (the toy PRMs) go to MLflow whole; large ones by path (DVC tracks them).
        size = sum(p.stat().st_size for p in Path(a.out).rglob("*") if p.is_file())
        run.artifact(a.out if size < 200 * 2**20 else os.path.join(a.out, "config.json"), "checkpoint")
    if examples:
        summary(f"train_prm@{a.source}", f"{m['examples']} examples, {m['optimizer_steps']} steps, "
                f"loss {m['train_loss']:.3f} ({m['loss']}), {m['seconds']:.0f}s -> {a.out}")
    else:
        summary(f"train_prm@{a.source}", f"NOT TRAINED: {a.train} has no examples; saved the initial PRM -> {a.out}")


if __name__ == "__main__":
    main()
