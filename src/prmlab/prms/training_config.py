"""Params `train_prm`: how stage train_prm (prmlab.prms.training) trains each label source's PRM.

Its own module, light (no torch), so the stages that only read `train_prm.sources` (prm_data, consensus,
eval_processbench, eval_bon) load the params without the trainer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prmlab.core.params import check
from prmlab.core.sources import KNOWN

BATCHINGS = ("packed", "grouped", "padded")
# Attention that keeps a packed row's examples apart: sdpa (as prmlab.prms.model.PACKED_SDPA: one causal sdpa call
# per example, any device), varlen (prmlab.prms.model.PACKED_VARLEN: torch's varlen flash kernel, one call per row,
# a CUDA GPU) or flash-attn's varlen kernels. transformers 5.19's own sdpa and eager let packed examples
# attend to each other (measured: a loss of 0.6813 for 0.6936 on 16 toy examples), and flex_attention is
# untested here.
PACKED_ATTENTION = ("sdpa", "varlen", "flash_attention_2", "flash_attention_3")


@dataclass(frozen=True)
class TrainPRMConfig:
    # One PRM per label source; dvc.yaml generates train_prm@<source> from this list.
    sources: list[str] = field(default_factory=lambda: ["mc_hard", "mc_soft", "judge", "consensus"])
    lr: float = 1e-5
    epochs: float = 1.0
    steps: int = 0  # optimizer steps per PRM; > 0 overrides epochs, so every source gets the same number of updates
    batch_size: int = 8  # examples per micro-batch per process (at most, when batch_tokens is set)
    batch_tokens: int = 0  # tokens per micro-batch per process (padding included unless packed); 0: batch_size decides
    batching: Literal["packed", "grouped", "padded"] = "packed"
    grad_accum: int = 1
    max_length: int = 2048
    warmup_ratio: float = 0.05
    weight_decay: float = 0.0  # AdamW's decoupled decay, on matrices only (not biases, norms)
    max_grad_norm: float = 1.0  # 0: no clipping
    seed: int = 0
    soft_loss: Literal["bce", "mse"] = "bce"
    bf16: bool = False  # bf16 compute: autocast over fp32 weights; with fsdp, bf16 weights over fp32 master and state
    processes: int = 1  # training processes on this machine (DDP; FSDP with fsdp); ignored under torchrun, which sets its own
    fsdp: bool = False  # FSDP2 (also in one process: the bf16 recipe)
    activation_checkpointing: bool = False
    fused_adamw: bool = True
    attn_implementation: str = "sdpa"  # sdpa | varlen (packed only, a CUDA GPU) | flash_attention_2/3 | eager (not packed)
    log_every: int = 50  # steps between reads of the loss from the device (each step's loss is still logged)
    max_examples: int = 0  # 0: all

    def __post_init__(self):
        unknown = sorted(set(self.sources) - set(KNOWN))
        check(bool(self.sources) and not unknown, f"train_prm.sources: unknown {unknown} (known: {list(KNOWN)})"
              if unknown else "train_prm.sources must name at least one label source")
        check(len(set(self.sources)) == len(self.sources), "train_prm.sources: a source is named twice")
        check(self.lr > 0 and self.epochs > 0, "train_prm.lr and train_prm.epochs must be > 0")
        check(self.weight_decay >= 0 and 0 <= self.warmup_ratio <= 1,
              "train_prm.weight_decay must be >= 0 and train_prm.warmup_ratio in [0, 1]")
        check(self.steps >= 0, "train_prm.steps must be >= 0 (0: train_prm.epochs decides)")
        check(self.batch_size >= 1, "train_prm.batch_size must be >= 1")
        check(self.grad_accum >= 1, "train_prm.grad_accum must be >= 1")
        check(self.batch_tokens >= 0, "train_prm.batch_tokens must be >= 0 (0: train_prm.batch_size decides)")
        check(self.batching in BATCHINGS, f"train_prm.batching must be one of {list(BATCHINGS)}, got {self.batching!r}")
        check(self.max_length >= 16, "train_prm.max_length must be >= 16")
        check(self.batch_tokens == 0 or self.batch_tokens >= self.max_length,
              f"train_prm.batch_tokens ({self.batch_tokens}) must be 0 or >= train_prm.max_length ({self.max_length}): "
              "a longest example must fit one micro-batch")
        check(self.processes >= 1, "train_prm.processes must be >= 1")
        check(self.batching != "packed" or self.attn_implementation in PACKED_ATTENTION,
              f"train_prm.attn_implementation {self.attn_implementation!r} does not keep packed examples apart; "
              f"with batching packed use one of {list(PACKED_ATTENTION)}")
        check(self.attn_implementation != "varlen" or self.batching == "packed",
              f"train_prm.attn_implementation varlen needs train_prm.batching packed (got {self.batching!r}): "
              "it reads each example's bounds from the packed row")
        check(self.max_grad_norm >= 0, "train_prm.max_grad_norm must be >= 0 (0: no clipping)")
        check(self.log_every >= 1, "train_prm.log_every must be >= 1")
