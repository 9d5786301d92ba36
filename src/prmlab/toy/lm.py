"""Tiny Qwen2 causal LMs trained from scratch on CPU: the toy policy and the toy judge.

`train_lm` is a plain loop (AdamW, warmup + cosine, loss on the completion tokens only) because
at this size the Trainer's per-step overhead would dominate; the PRM uses the Trainer (prmlab.prms.model)
because that is what scales out to real models.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from prmlab.core.tracking import Progress


@dataclass(frozen=True)
class ModelDims:
    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 384
    max_position_embeddings: int = 8192


def new_qwen2(tokenizer, dims: ModelDims, seed: int):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=dims.hidden_size,
        intermediate_size=dims.intermediate_size,
        num_hidden_layers=dims.num_layers,
        num_attention_heads=dims.num_heads,
        num_key_value_heads=dims.num_kv_heads,
        max_position_embeddings=dims.max_position_embeddings,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        torch_dtype="float32",
    )
    model = Qwen2ForCausalLM(cfg)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def encode_pairs(tokenizer, pairs: list[tuple[str, str]], max_len: int) -> list[tuple[list[int], int]]:
    """(prompt text, completion text) -> (ids, prompt length); completion ends with EOS."""
    out = []
    for prompt, completion in pairs:
        p = tokenizer.encode(prompt, add_special_tokens=False)
        c = tokenizer.encode(completion, add_special_tokens=False) + [tokenizer.eos_token_id]
        ids = (p + c)[:max_len]
        out.append((ids, len(p)))
    return out


def train_lm(model, tokenizer, pairs: list[tuple[str, str]], *, steps: int, batch_size: int, lr: float,
             seed: int, max_len: int = 512, desc: str = "train") -> list[float]:
    import torch

    data = encode_pairs(tokenizer, pairs, max_len)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.98))
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    )
    pad = tokenizer.pad_token_id
    dev = next(model.parameters()).device
    model.train()
    losses = []
    prog = Progress(steps, desc, unit="steps", every=10)
    for _ in range(steps):
        batch = rng.sample(data, min(batch_size, len(data)))
        L = max(len(ids) for ids, _ in batch)
        input_ids = torch.full((len(batch), L), pad, dtype=torch.long)
        labels = torch.full((len(batch), L), -100, dtype=torch.long)
        attn = torch.zeros((len(batch), L), dtype=torch.long)
        for r, (ids, plen) in enumerate(batch):
            input_ids[r, : len(ids)] = torch.tensor(ids)
            attn[r, : len(ids)] = 1
            labels[r, plen : len(ids)] = torch.tensor(ids[plen:])
        loss = model(input_ids=input_ids.to(dev), attention_mask=attn.to(dev), labels=labels.to(dev)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        prog.update()
    model.eval()
    return losses


def train_lm_logged(name: str, model, tokenizer, pairs, steps: int, batch_size: int, lr: float, seed: int,
                    metrics: dict, run=None):
    """train_lm, recording `<name>_params / _final_loss / _train_seconds` in metrics and the loss curve in MLflow."""
    import time

    t = time.monotonic()
    # Small batches, many steps: at a fixed CPU budget the tiny LM learns arithmetic from the
    # number of updates (batch 64 x 300 steps: 11% policy accuracy; batch 8 x 2000: 66-72%).
    losses = train_lm(model, tokenizer, pairs, steps=steps, batch_size=batch_size, lr=lr, seed=seed, max_len=768,
                      desc=f"{name}")
    metrics[f"{name}_params"] = sum(p.numel() for p in model.parameters())
    metrics[f"{name}_final_loss"] = sum(losses[-20:]) / max(len(losses[-20:]), 1)
    metrics[f"{name}_train_seconds"] = time.monotonic() - t
    if run is not None:
        for i, loss in enumerate(losses):
            if i % 10 == 0 or i == len(losses) - 1:
                run.metrics({f"{name}_loss": loss}, step=i)
    return model
