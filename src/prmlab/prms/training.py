"""PRM training in the Qwen2.5-Math-PRM layout: stage train_prm's config and core.

The backbone is initialised from the policy, the head is new (`init_prm`). `train` is a plain PyTorch
loop (no transformers Trainer: at real shapes its padded batches and per-step host syncs held a 1.5B
PRM to 8.5% MFU on an H200):
- batches are planned once from the examples' token counts, the same plan in every process: `packed`
  (the default: one row per micro-batch, per-example position ids, no padding at all; attention kept
  within each example by prmlab.prms.model.PACKED_SDPA anywhere, or on a GPU by torch's varlen flash kernel
  with `attn_implementation` varlen, or flash-attn's with flash_attention_2/3), `grouped` (length-sorted
  within shuffled megabatches, padded) or `padded` (random batches: the old trainer's);
- the loss is prmlab.prms.model.prm_loss (cross-entropy at the `<extra_0>` positions, or BCE / MSE on soft
  labels) summed over each optimizer step's micro-batches and divided by their labelled steps, counted
  from the plan, so accumulation and any number of processes train exactly as one big batch does;
- `torchrun --nproc_per_node N -m stages.train_prm ...` trains data-parallel (DDP), and with
  `train_prm.fsdp` sharded (FSDP2: parameters, gradients and AdamW state; with `bf16`, bf16 compute
  weights over fp32 master weights and optimizer state); activation checkpointing and fused AdamW are
  params; losses stay on the device and are read back every `log_every` steps.
The config, `TrainPRMConfig`, is prmlab.prms.training_config's: stages that only read `train_prm.sources` (consensus,
the evaluations) import it without torch.
"""

from __future__ import annotations

import math
import os
import random
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from prmlab.core.io import DataError, read_jsonl, write_json
from prmlab.core.preflight import check_model
from prmlab.core.records import PRMExample
from prmlab.core.result import Done
from prmlab.core.sources import SOFT
from prmlab.core.tracking import Progress
from prmlab.prms.model import (
    PACKED_SDPA,
    PACKED_VARLEN,
    collate,
    init_from_policy,
    pack,
    prepare_tokenizer,
    prm_loss,
    training_features,
    varlen_available,
)
from prmlab.prms.training_config import TrainPRMConfig

# ----------------------------------------------------------------------------------------- the plan


def micro_batches(lengths: list[int], cfg: TrainPRMConfig, rng: random.Random) -> list[list[int]]:
    """One epoch's micro-batches (example indices) under `cfg.batching`, each within `cfg.batch_size`
    examples and, when set, `cfg.batch_tokens` tokens (padded ones counted, except when packed).
    grouped: shuffled, cut into megabatches of 64 batches' worth, each sorted by length (longest
    first) and cut; the batches' order shuffled again, so lengths do not drift through an epoch."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    budget = cfg.batch_tokens or math.inf
    if cfg.batching == "grouped":
        mega = 64 * cfg.batch_size
        order = [i for k in range(0, len(order), mega)
                 for i in sorted(order[k:k + mega], key=lambda i: -lengths[i])]
    out: list[list[int]] = []
    cur: list[int] = []
    total = longest = 0  # the current micro-batch's real tokens and longest example
    for i in order:
        cost = total + lengths[i] if cfg.batching == "packed" else (len(cur) + 1) * max(longest, lengths[i])
        if cur and (len(cur) >= cfg.batch_size or cost > budget):
            out.append(cur)
            cur, total, longest = [], 0, 0
        cur.append(i)
        total, longest = total + lengths[i], max(longest, lengths[i])
    if cur:
        out.append(cur)
    if cfg.batching == "grouped":
        rng.shuffle(out)
    return out


def plan(lengths: list[int], cfg: TrainPRMConfig, world_size: int = 1) -> list[list[list[int]]]:
    """The whole run: optimizer steps, each `world_size x grad_accum` micro-batches (process r takes
    micro-batches r, r + world_size, ...). Epochs follow one another without a break (a step may span
    two), so every process does the same number of micro-batches; epoch e is shuffled by (seed, e).
    Steps: `cfg.steps`, else `cfg.epochs` x the first epoch's micro-batches / (world_size x grad_accum),
    rounded up. Computed alike in every process: nothing about the data is communicated."""
    per_step = world_size * cfg.grad_accum
    epoch = lambda e: micro_batches(lengths, cfg, random.Random(f"{cfg.seed}:{e}"))  # noqa: E731
    stream, e = epoch(0), 1
    total = cfg.steps or math.ceil(cfg.epochs * len(stream) / per_step)
    while len(stream) < total * per_step:
        stream += epoch(e)
        e += 1
    return [stream[s * per_step:(s + 1) * per_step] for s in range(total)]


def warmup_steps(ratio: float, total_steps: int) -> int:
    """Warmup as an integer step count, rounded first so that float noise (0.07 * 100 =
    7.000000000000001) does not add a step."""
    return math.ceil(round(ratio * total_steps, 6))


# ------------------------------------------------------------------------------------------ training


def init_prm(base: str, seed: int):
    """Tokenizer and PRM from the policy. Seeded first: the new score head is drawn here, so two runs
    with the same params (and every process of one run) start from the same weights."""
    from transformers import set_seed

    set_seed(seed)
    tok = prepare_tokenizer(base)
    return tok, init_from_policy(base, tok)


def features(examples: list[PRMExample], tok, cfg: TrainPRMConfig, soft: bool) -> tuple[list[dict], int, int]:
    """Tokenised examples (prmlab.prms.model.training_features) that have a labelled step, the steps that
    max_length cut off, and the examples dropped: an example whose first step does not fit max_length
    would train nothing yet count as trained. Done before the model loads: a set that max_length cuts
    to nothing fails in seconds."""
    feats = [training_features(tok, e.to_dict(), cfg.max_length, soft) for e in examples]
    truncated = sum(f["dropped"] for f in feats)
    kept = [f for f in feats if any(x != -100 for x in f["labels"])]
    if not kept:
        raise DataError(f"every one of the {len(feats)} training examples is longer than train_prm.max_length "
                        f"({cfg.max_length} tokens) before its first step ends: nothing to train on")
    if len(kept) < len(feats):
        print(f"[train_prm] {len(feats) - len(kept)}/{len(feats)} examples dropped: longer than train_prm.max_length "
              f"({cfg.max_length}) before their first step ends", file=sys.stderr)
    return kept, truncated, len(feats) - len(kept)


class Distributed:
    """This process's place in the run: torchrun's WORLD_SIZE / RANK / LOCAL_RANK, the device, and a
    process group when there is more than one process or FSDP (a one-process group for the latter)."""

    def __init__(self, fsdp: bool):
        import torch
        import torch.distributed as dist

        self.world, self.rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
        local = int(os.environ.get("LOCAL_RANK", "0"))
        self.device = torch.device(f"cuda:{local}") if torch.cuda.is_available() else torch.device("cpu")
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        else:  # the machine's cores shared out among its processes
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
        self.owned = (self.world > 1 or fsdp) and not dist.is_initialized()
        if self.owned:
            backend = "nccl" if self.device.type == "cuda" else "gloo"
            if self.world > 1:
                dist.init_process_group(backend)  # env:// from the launcher
            else:
                dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)

    def sum(self, t):
        import torch.distributed as dist

        if self.world > 1:
            dist.all_reduce(t)
        return t

    def close(self, failed: bool = False) -> None:
        import torch.distributed as dist

        if dist.is_initialized():
            if not failed:
                dist.barrier()
            if self.owned:
                dist.destroy_process_group()


def wrap(model, cfg: TrainPRMConfig, d: Distributed):
    """The model as it trains: checkpointed activations, on the device, then FSDP2 (each decoder layer
    a unit, then the rest) or DDP across processes, or as is."""
    import torch

    if cfg.activation_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.to(d.device)
    if cfg.fsdp:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16 if cfg.bf16 else None, reduce_dtype=torch.float32)
        for layer in model.model.layers:
            fully_shard(layer, mp_policy=mp)
        return fully_shard(model, mp_policy=mp)
    if d.world > 1:
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, device_ids=[d.device.index] if d.device.type == "cuda" else None)
    return model


def batch(feats: list[dict], pad_id: int, packed: bool, device) -> dict:
    b = pack(feats) if packed else collate(feats, pad_id)
    return {k: v.to(device, non_blocking=True) if hasattr(v, "to") else v for k, v in b.items()}


def check_attention(cfg: TrainPRMConfig) -> None:
    """The attention `train_prm.attn_implementation` names runs on this machine, else one line naming the key, before
    any model loads (the stages' prepare and `train` call it): flash-attn's kernels had failed in transformers with a
    traceback once the model had loaded."""
    import torch

    if cfg.attn_implementation == "varlen" and not varlen_available():
        raise DataError(f"train_prm.attn_implementation varlen needs a CUDA GPU and torch >= 2.10 (torch.nn.attention."
                        f"varlen); this is torch {torch.__version__}, CUDA {torch.cuda.is_available()}: use sdpa")
    if cfg.attn_implementation in ("flash_attention_2", "flash_attention_3"):
        from transformers.utils import is_flash_attn_2_available, is_flash_attn_3_available

        if not (is_flash_attn_2_available if cfg.attn_implementation.endswith("2") else is_flash_attn_3_available)():
            raise DataError(f"train_prm.attn_implementation {cfg.attn_implementation} needs the flash-attn package "
                            f"({'flash_attn' if cfg.attn_implementation.endswith('2') else 'flash_attn_interface'}) and a "
                            "CUDA GPU, which this machine lacks: use sdpa")


# Training health: a run whose smoothed loss ends above RISE times where it began is not saved as trained. The end:
# the mean of the last LOSS_WINDOW share of the logged steps; where it began: the first step's loss (the untrained
# head's, ln 2 for two classes), or the mean of the first LOSS_WINDOW share where that is lower (an lr that blows the
# loss up at once puts its spikes there: lr 1 on a toy PRM went 0.69 -> 518 -> 1669 -> ... -> 1.9). Measured on the
# toy study's 20 PRM runs kept in MLflow here (300 to 3,000 steps, every source and the ceiling's): each ended at
# 0.02 to 0.72x the mean of its first tenth and below 0.6x its first step, so the rule never fires on a run that
# learnt; lr 1 and 3 on a toy PRM (40 steps) end at 2.7x and 8x their first step.
RISE, LOSS_WINDOW = 2.0, 0.1


def check_health(curve: list[float], cfg: TrainPRMConfig) -> None:
    """A DataError saying what was seen if `curve` (each step's loss) ended far above where it began (RISE)."""
    k = max(1, int(len(curve) * LOSS_WINDOW))
    first, last = sum(curve[:k]) / k, sum(curve[-k:]) / k
    began = min(curve[0], first)
    if last > RISE * began and last > curve[0]:
        raise DataError(f"train_prm did not learn: its loss ended at {last:.4g} (mean of the last {k} of {len(curve)} "
                        f"steps), over {RISE:g}x where it began (step 1: {curve[0]:.4g}; mean of the first {k}: "
                        f"{first:.4g}) (train_prm.lr {cfg.lr:g}); no checkpoint saved")


def train(examples: list[PRMExample], base: str, out: str, cfg: TrainPRMConfig, soft: bool, run=None) -> dict:
    """Train a PRM from `base` on `examples`, save it with its tokenizer to `out`, return its metrics;
    `run` (an MLflow run) gets the loss curve. Under torchrun this is one process of the run (the first
    writes); otherwise `cfg.processes` > 1 starts that many processes on this machine and waits for them."""
    check_attention(cfg)
    if cfg.processes > 1 and "WORLD_SIZE" not in os.environ:
        m = spawn(examples, base, out, cfg, soft)
    else:
        m = train_process(examples, base, out, cfg, soft)
    curves = {"loss": m.pop("curve"), "lr": m.pop("curve_lr"), "grad_norm": m.pop("curve_grad_norm")}
    if run is not None:
        # Each curve its own series (steps 1..N): the loss, the learning rate, the gradient norm before clipping (one
        # series each, not one for all); `train_loss` is the run's mean, logged once with the metrics (one series for both put the mean at
        # step 0 of the curve: a false point).
        for k in range(len(curves["loss"])):  # no grad_norm without clipping (train_prm.max_grad_norm 0)
            run.metrics({name: vals[k] for name, vals in curves.items() if k < len(vals)}, step=k + 1)
    return m


def spawn(examples: list[PRMExample], base: str, out: str, cfg: TrainPRMConfig, soft: bool) -> dict:
    """`cfg.processes` training processes on this machine (one per GPU, or CPU threads shared out),
    as torchrun would start them; the first one's metrics come back through a file."""
    import json
    import socket
    import tempfile

    import torch.multiprocessing as mp

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        try:  # join: a process that raises ends the others and re-raises here with its traceback
            mp.start_processes(_spawned, args=(cfg.processes, port, examples, base, out, cfg, soft, tmp),
                               nprocs=cfg.processes, start_method="spawn")
        except Exception:
            if (err := Path(tmp) / "error.txt").exists():  # bad input found in a process: its one line
                raise DataError(err.read_text()) from None
            raise
        return json.loads((Path(tmp) / "metrics.json").read_text())


def _spawned(rank: int, world: int, port: int, examples, base, out, cfg, soft, tmp) -> None:
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    try:
        m = train_process(examples, base, out, cfg, soft)
    except DataError as e:
        Path(tmp, "error.txt").write_text(str(e))
        raise
    if rank == 0:
        write_json(str(Path(tmp) / "metrics.json"), m)


def train_process(examples: list[PRMExample], base: str, out: str, cfg: TrainPRMConfig, soft: bool) -> dict:
    """One process's training (all of it, when alone); its metrics, with the loss curve as `curve`."""
    import torch
    from transformers import get_cosine_schedule_with_warmup

    tok, model = init_prm(base, cfg.seed)
    feats, truncated, too_long = features(examples, tok, cfg, soft)
    lengths = [len(f["input_ids"]) for f in feats]
    labelled = [sum(x != -100 for x in f["labels"]) for f in feats]
    kind = cfg.soft_loss if soft else "ce"
    attn = {"sdpa": PACKED_SDPA, "varlen": PACKED_VARLEN}.get(cfg.attn_implementation, cfg.attn_implementation) \
        if cfg.batching == "packed" else cfg.attn_implementation
    if attn != "sdpa":
        model.set_attn_implementation(attn)
    d = Distributed(cfg.fsdp)
    try:
        steps = plan(lengths, cfg, d.world)
        model = wrap(model, cfg, d)
        model.train()
        # AdamW as the transformers Trainer sets it up (betas 0.9 / 0.999, eps 1e-8, no decay on biases and norms)
        params = [p for p in model.parameters() if p.requires_grad]
        groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": cfg.weight_decay},
                  {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
        opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.999), eps=1e-8, fused=cfg.fused_adamw or None)
        warmup = warmup_steps(cfg.warmup_ratio, len(steps))
        sched = get_cosine_schedule_with_warmup(opt, warmup, len(steps))
        autocast = torch.autocast(d.device.type, dtype=torch.bfloat16, enabled=cfg.bf16 and not cfg.fsdp)
        packed = cfg.batching == "packed"
        bar = Progress(len(steps), "train_prm", unit="steps", every=10.0) if d.rank == 0 else None
        pending, curve, tokens, padded = [], [], 0, 0
        pending_norms, norms, lrs = [], [], []  # each step's gradient norm (before clipping) and learning rate: curves
        t0 = time.monotonic()
        for s, step in enumerate(steps):
            count = sum(labelled[i] for mb in step for i in mb)  # labelled steps of the whole step, every process
            mine = step[d.rank::d.world]
            step_loss = torch.zeros((), device=d.device)
            for k, mb in enumerate(mine):
                last = k == len(mine) - 1
                if cfg.fsdp:
                    model.set_requires_gradient_sync(last)  # reduce-scatter once per step, after the last micro-batch
                b = batch([feats[i] for i in mb], tok.pad_token_id, packed, d.device)
                tokens += sum(lengths[i] for i in mb)
                padded += b["input_ids"].numel()
                # DDP reduces gradients on the last micro-batch's backward only
                with model.no_sync() if d.world > 1 and not cfg.fsdp and not last else nullcontext():
                    with autocast:
                        logits = model(**{k: v for k, v in b.items() if k not in ("labels", "soft_targets")}).logits
                    loss = prm_loss(logits, b["labels"], b["soft_targets"], kind, count)
                    # DDP and FSDP average gradients over processes; the loss is already this process's share of
                    # the whole step's sum, so it is scaled back up by the process count
                    (loss * d.world).backward()
                step_loss += loss.detach()
            if cfg.max_grad_norm > 0:  # its return value, the norm before clipping, is read for the curve: no extra work
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
                # FSDP2 gives a DTensor: its full value (a scalar's collective) stacks with the plain tensors below
                pending_norms.append((norm.full_tensor() if hasattr(norm, "full_tensor") else norm).detach().float())
            lrs.append(sched.get_last_lr()[0])  # the rate this step used (a float: no sync)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            pending.append(step_loss)
            if len(pending) == cfg.log_every or s == len(steps) - 1:
                # the one host sync, every log_every steps: the losses summed over processes, the norm (alike in every
                # process) averaged back
                got = d.sum(torch.cat([torch.stack(pending).float(), torch.stack(pending_norms) / d.world]
                                      if pending_norms else [torch.stack(pending).float()])).tolist()
                read, norms = got[:len(pending)], norms + got[len(pending):]
                pending_norms = []
                if not all(math.isfinite(x) for x in read):  # alike in every process: all stop here, nothing is saved
                    bad = len(curve) + next(k for k, x in enumerate(read) if not math.isfinite(x)) + 1
                    raise DataError(f"train_prm diverged: the loss is {read[bad - len(curve) - 1]} at step {bad} of {len(steps)} "
                                    f"(train_prm.lr {cfg.lr:g}); no checkpoint saved")
                curve += read
                pending = []
            if bar is not None:
                bar.update(extra=f"loss {curve[-1]:.4f}" if curve else "")
        seconds = time.monotonic() - t0
        tokens, padded = d.sum(torch.tensor([tokens, padded], dtype=torch.float64, device=d.device)).tolist()
        check_health(curve, cfg)  # the curve is alike in every process: all stop here, nothing is saved
        save(model, tok, out, cfg, d)
    except BaseException:
        d.close(failed=True)  # no barrier: another process may be gone
        raise
    d.close()
    return {"examples": len(examples), "examples_trained": len(feats), "examples_too_long": too_long,
            "steps_truncated_away": truncated, "train_loss": sum(curve) / len(curve), "final_logged_loss": curve[-1],
            "optimizer_steps": len(steps), "warmup_steps": warmup, "seconds": seconds, "loss": kind,
            "batching": cfg.batching, "processes": d.world, "curve": curve, "curve_lr": lrs, "curve_grad_norm": norms,
            "tokens": int(tokens), "tokens_per_s": tokens / seconds,
            "padding_share": 1 - tokens / padded,
            "label_steps": sum(len(e.labels) for e in examples),
            "negative_steps": sum(lab == 0 for e in examples for lab in e.labels)}


def save(model, tok, out: str, cfg: TrainPRMConfig, d: Distributed) -> None:
    """The full state dict, written by the first process (FSDP gathers it from every shard first),
    unless a weight is not finite."""
    import torch

    if cfg.fsdp:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        sd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        inner = model  # FSDP2 shards in place: still the transformers model
    else:
        inner = getattr(model, "module", model)  # DDP's wrapped model
        sd = inner.state_dict()
    if d.rank == 0:
        bad = [k for k, v in sd.items() if not torch.isfinite(v).all()]
        if bad:
            raise DataError(f"train_prm diverged: {len(bad)} weight tensors hold NaN or inf (e.g. {bad[0]}, "
                            f"train_prm.lr {cfg.lr:g}); no checkpoint saved")
        inner.save_pretrained(out, state_dict={k: v.float().cpu().contiguous() for k, v in sd.items()})
        tok.save_pretrained(out)


def untrained(base: str, out: str, seed: int) -> dict:
    tok, model = init_prm(base, seed)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return {"examples": 0, "optimizer_steps": 0, "train_loss": None, "seconds": 0.0, "loss": "none"}


@dataclass(frozen=True)
class TrainInputs:
    """What stage train_prm@<source> works on, read and checked by `prepare_train`."""
    source: str  # the label source (a soft one trains on MC values)
    train_file: str  # where the examples came from (its summary names it)
    out: str  # the checkpoint folder the core writes
    examples: list[PRMExample]  # the training set (the first train_prm.max_examples)
    without_soft: int = 0  # a soft source's examples skipped for want of soft values (counted)


def prepare_train(a, cfg: dict) -> TrainInputs:
    """--source, --train, --out, the examples and how many a soft source (mc_soft, consensus_soft) skipped for want
    of soft values."""
    check_model("policy.model", cfg["policy"].model)  # the PRM's base, before any model loads
    check_attention(cfg["train_prm"])
    examples = read_jsonl(a.train, PRMExample)
    examples = examples[: cfg["train_prm"].max_examples] if cfg["train_prm"].max_examples else examples
    without = 0
    if a.source in SOFT and (without := sum(e.soft is None for e in examples)):
        # The soft loss trains on MC values: a set without them trained nothing and was reported as "longer than
        # max_length". Some examples without them are a counted skip, never a silent one.
        if without == len(examples):
            raise DataError(f"{a.train}: none of its {len(examples)} examples carries soft values (field 'soft'): "
                            f"source {a.source} trains on MC values; make the set with stage prm_data@{a.source}")
        print(f"[train_prm@{a.source}] {without}/{len(examples)} examples skipped: no soft values (field 'soft')", file=sys.stderr)
        examples = [e for e in examples if e.soft is not None]
    return TrainInputs(a.source, a.train, a.out, examples, without)


def train_worker(cfg: dict, data: TrainInputs) -> None:
    """A process of `torchrun` other than the first: it trains; the first process records."""
    if data.examples:
        train(data.examples, cfg["policy"].model, data.out, cfg["train_prm"], soft=data.source in SOFT)


def train_prm(cfg: dict, data: TrainInputs, run) -> Done:
    """Stage train_prm: the PRM of one label source (`--source`), saved with its tokenizer to --out."""
    source, train_file, out, examples, without_soft = data.source, data.train_file, data.out, data.examples, data.without_soft
    c, base = cfg["train_prm"], cfg["policy"].model
    if examples:
        m = train(examples, base, out, c, soft=source in SOFT, run=run)
    else:
        # E.g. consensus kept nothing. Saving the untrained model keeps a sweep going; metrics,
        # the MLflow run and the report all say plainly that this PRM was never trained.
        print(f"[train_prm@{source}] WARNING: {train_file} has no examples; saving the UNTRAINED initial PRM",
              file=sys.stderr)
        m = untrained(base, out, c.seed)
    m["trained"] = bool(examples)
    m["examples_without_soft"] = without_soft
    run.tag("checkpoint", os.path.abspath(out))
    # Small checkpoints (the toy PRMs) go to MLflow whole; large ones by path (DVC tracks them).
    run.model(out, f"prm-{source}", "prm", {"source": source, "base": base, "trained": m["trained"]})
    if not examples:
        return Done(m, f"NOT TRAINED: {train_file} has no examples; saved the initial PRM -> {out}")
    skipped = "".join(f" ({n} skipped: {why})" for n, why in ((m["examples_too_long"], "longer than max_length"),
                                                             (m["examples_without_soft"], "no soft values")) if n)
    return Done(m, f"{m['examples']} examples{skipped}, {m['optimizer_steps']} steps, "
                   f"loss {m['train_loss']:.3f} ({m['loss']}), {m['seconds']:.0f}s -> {out}")
