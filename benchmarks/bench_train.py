"""Benchmark: PRM training throughput, today's trainer against the new one, side by side in one run.

    python -m benchmarks.bench_train                     # CPU: the toy study's oracle examples and PRM
    python -m benchmarks.bench_train --shape 1.5b --examples processbench --steps 40 --batch-size 8 \
        --peak-tflops 989                                 # a GPU: Qwen2.5-1.5B's shape

Every variant trains the same examples, from the same initial weights and seed, for the same number of
optimizer steps, at the same global batch (--batch-size examples a step) and prints optimizer steps/s,
real (unpadded) tokens/s, the share of padding, and the loss curve (means over 100 steps), so a faster
path is also seen to learn the same. Variants:
- `trainer`: the transformers-Trainer loop as it was at commit 521c1cc (random padded batches), loaded
  from git, so "today's" is the code that ran, not a re-creation;
- `padded`: the new loop on the same random padded batches (what the loop alone changes);
- `packed`: one row per batch, no padding (prmlab.prms.model.pack), attention per example;
- `packed x2`: the same in 2 processes of half the batch each (DDP; on a CPU each gets half the cores);
- `grouped`: length-grouped padded batches (less padding, less random batches).
`--shape 1.5b` replaces the toy policy by a randomly initialised Qwen2 of the 1.5B shape (hidden 1536, 28
layers, 12 heads, 2 KV heads, intermediate 8960; the toy vocabulary), trains in bf16 and adds `packed
varlen` (torch's varlen flash kernel, one call per row, where torch has it on a CUDA GPU; first checked
against the padded batch's loss and gradients on one batch), `fsdp bf16 varlen` and `fsdp bf16 varlen +
checkpointing` (FSDP2: bf16 weights over fp32 master and AdamW state), and reports MFU (6 x parameters x
tokens/s / --peak-tflops) and peak GPU memory. `--shape smoke` runs that recipe at toy size on a CPU. `--examples processbench` trains on ProcessBench items (../shared/data/processbench) as
examples instead of the study's. Results merge into --out by machine; benchmarks/write_report.py renders them.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TODAY = "521c1cc"  # the last commit with the transformers-Trainer loop (the baseline to beat)


def old_trainer(today_file: str | None = None):
    """prmlab.prms.training as of TODAY, imported from git (or from `today_file`, that file saved by
    `git show`, on a machine without the repo's history) as its own module."""
    src = Path(today_file).read_text() if today_file else subprocess.run(
        ["git", "show", f"{TODAY}:src/prmlab/training.py"], capture_output=True, text=True, check=True).stdout
    # its config checks its sources against lists that moved to prmlab.core.sources since; the training is untouched
    src = src.replace("from prmlab.human_labels import HUMAN_SOURCES, TOY_HUMAN", "from prmlab.core.sources import HUMAN_SOURCES, TOY_HUMAN")
    src = src.replace("from prmlab.labeling import SOURCES", "from prmlab.core.sources import SOURCES")
    # the flat modules it imports live in the library's packages now
    src = re.sub(r"\bprmlab\.(io|params|preflight|records|stage|tracking)\b", r"prmlab.core.\1", src)
    src = re.sub(r"\bprmlab\.prm\b(?!\.)", "prmlab.prms.model", src)
    path = Path(tempfile.mkdtemp()) / "training_521c1cc.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("training_521c1cc", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def study_examples(params: dict):
    from prmlab.core.io import read_jsonl
    from prmlab.core.records import Problem, Response
    from prmlab.pipeline.training_sets import training_set

    if not Path("data/samples/train.jsonl").exists():
        sys.exit("bench_train: data/samples/train.jsonl is missing; run `dvc repro sample` (or `dvc pull`) first")
    problems = {p.id: p for p in read_jsonl("data/problems/train.jsonl", Problem)}
    return training_set("oracle", problems, read_jsonl("data/samples/train.jsonl", Response), {}, {})


def processbench_examples(root: Path, n: int):
    """ProcessBench items as PRM examples: the steps, labelled by the item's first error."""
    from prmlab.core.records import PRMExample, labels_from_first_error

    out = []
    for f in sorted(root.glob("*.json")):
        for it in json.loads(f.read_text()):
            labels = labels_from_first_error(len(it["steps"]), it["label"])
            out.append(PRMExample(prompt=it["problem"], completions=it["steps"][: len(labels)], labels=labels,
                                  response_id=it["id"]))
    return out[:n]


# Qwen2.5-1.5B's shape, and the same recipe shrunk to run in seconds on a CPU (`smoke`: a check
# that the big-model path runs before a GPU's minutes are spent on it; its figures mean nothing)
SHAPES = {"1.5b": dict(hidden_size=1536, num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                       intermediate_size=8960),
          "smoke": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                        intermediate_size=128)}


def big_base(policy: str, out: Path, shape: str) -> int:
    """A randomly initialised Qwen2 of `shape` with the toy tokenizer, saved to `out`; its parameters."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    small = Qwen2Config.from_pretrained(policy)
    cfg = Qwen2Config(vocab_size=small.vocab_size, **SHAPES[shape], max_position_embeddings=8192, tie_word_embeddings=True,
                      bos_token_id=small.bos_token_id, eos_token_id=small.eos_token_id, pad_token_id=small.pad_token_id)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(policy).save_pretrained(out)
    return sum(p.numel() for p in model.parameters())


class Curve:
    """Stands in for an MLflow run: collects the loss curve train() logs."""

    def __init__(self):
        self.losses = []

    def metrics(self, d, step=None):
        self.losses.append(d["loss"])


def machine() -> str:
    import torch

    if torch.cuda.is_available():
        return f"1 GPU ({torch.cuda.get_device_name(0)})"
    model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "CPU")
    return f"{os.cpu_count()} CPU cores ({model})"


def run_variant(which: str, cfg, old, examples, policy: str, work: Path, n_params, peak_tflops: float) -> dict:
    """One training run of a variant: its figures and loss curve."""
    import torch

    from prmlab.prms.training import train

    if torch.cuda.is_available():  # the last variant's model and optimizer gone, so peaks are this variant's
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    curve = Curve()
    t0 = time.monotonic()
    if which == "old":
        import prmlab.prms.model

        counted, real_collate = [0, 0], prmlab.prms.model.collate

        def counting(feats, pad, counted=counted):  # the old trainer reports no token count: counted here
            b = real_collate(feats, pad)
            counted[0] += int(b["attention_mask"].sum())
            counted[1] += b["attention_mask"].numel()
            return b

        prmlab.prms.model.collate = counting
        m = old.train(examples, policy, str(work / "prm"), old.TrainPRMConfig(**{
            k: getattr(cfg, k) for k in ("lr", "steps", "batch_size", "grad_accum", "max_length", "warmup_ratio",
                                         "weight_decay", "seed", "bf16")}), soft=False, run=curve)
        prmlab.prms.model.collate = real_collate
        m["tokens_per_s"], m["padding_share"] = counted[0] / m["seconds"], 1 - counted[0] / counted[1]
    else:
        m = train(examples, policy, str(work / "prm"), cfg, soft=False, run=curve)
    wall = time.monotonic() - t0
    losses = curve.losses
    row = {"seconds": m["seconds"], "wall_seconds": wall, "steps_per_s": len(losses) / m["seconds"],
           "tokens_per_s": m.get("tokens_per_s"), "padding_share": m.get("padding_share"),
           "train_loss": m["train_loss"], "curve_100": [sum(losses[i:i + 100]) / len(losses[i:i + 100])
                                                        for i in range(0, len(losses), 100)],
           "last_quarter_loss": sum(losses[-(q := max(1, len(losses) // 4)):]) / q}
    if torch.cuda.is_available():
        row["peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
    if n_params and row["tokens_per_s"]:
        row["mfu"] = 6 * n_params * row["tokens_per_s"] / (peak_tflops * 1e12)
    return row


def varlen_check(policy: str, examples, n: int = 8) -> dict:
    """One batch of `n` examples under bf16 autocast on the GPU: the loss and gradients of the packed row
    with torch's varlen kernel (PACKED_VARLEN) against the same examples padded (transformers' sdpa),
    and with the per-example sdpa (PACKED_SDPA). The same examples, so the same loss up to bf16 rounding."""
    import torch

    from prmlab.prms.model import PACKED_SDPA, PACKED_VARLEN, collate, pack, prm_loss, training_features
    from prmlab.prms.training import init_prm

    tok, model = init_prm(policy, 0)
    model.cuda().train()
    feats = [training_features(tok, e.to_dict(), 2048, False) for e in examples[:n]]
    out = {}
    for name, b, attn in (("padded sdpa", collate(feats, tok.pad_token_id), "sdpa"), ("packed sdpa", pack(feats), PACKED_SDPA),
                          ("packed varlen", pack(feats), PACKED_VARLEN)):
        model.set_attn_implementation(attn)
        model.zero_grad()
        b = {k: v.cuda() if hasattr(v, "cuda") else v for k, v in b.items()}
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(**{k: v for k, v in b.items() if k not in ("labels", "soft_targets")}).logits
        loss = prm_loss(logits, b["labels"], b["soft_targets"], "ce")
        loss.backward()
        out[name] = (loss.item(), torch.cat([p.grad.flatten().float() for p in model.parameters() if p.grad is not None]))
    ref_loss, ref_g = out["padded sdpa"]
    res = {name: {"loss": loss, "max_grad_diff": (g - ref_g).abs().max().item(), "grad_cos": torch.nn.functional.cosine_similarity(
        g, ref_g, dim=0).item()} for name, (loss, g) in out.items()}
    for name, r in res.items():
        print(f"varlen check, {name:14s} loss {r['loss']:.6f}  max |grad - padded's| {r['max_grad_diff']:.3g}  "
              f"cosine {r['grad_cos']:.6f}", flush=True)
    del model
    torch.cuda.empty_cache()
    return res


def line(name: str, row: dict) -> str:
    return (f"{name:28s} {row['steps_per_s']:6.2f} steps/s  {row['tokens_per_s']:8.0f} real tokens/s  padding "
            f"{row['padding_share']:.3f}  loss {row['train_loss']:.4f} (last quarter {row['last_quarter_loss']:.4f})"
            + (f"  MFU {row['mfu']:.3f}" if "mfu" in row else "") + (f"  peak {row['peak_gib']:.1f} GiB" if "peak_gib" in row else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--batch-size", type=int, default=16, help="examples per optimizer step (the study's 16)")
    ap.add_argument("--shape", choices=["toy", *SHAPES], default="toy",
                    help="toy: the toy policy; 1.5b: Qwen2.5-1.5B's shape (a GPU); smoke: the 1.5b recipe shrunk, to check it runs")
    ap.add_argument("--examples", choices=["study", "processbench"], default="study")
    ap.add_argument("--max-examples", type=int, default=1000, help="processbench examples")
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="the GPU's dense bf16 peak (H100/H200 SXM: 989)")
    ap.add_argument("--variants", nargs="*", help="a subset, by name")
    ap.add_argument("--repeats", type=int, default=3, help="rounds over all variants, interleaved; the median counts "
                    "(one round's figures moved by +-8% on this machine)")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--out", default="reports/benchmarks/train.json")
    ap.add_argument("--today-file", help="today's trainer as `git show 521c1cc:src/prmlab/training.py` saved it, "
                    "where there is no git history (a GPU machine's copy of the tree)")
    ap.add_argument("--processbench", default="../shared/data/processbench", help="ProcessBench's folder (--examples processbench)")
    a = ap.parse_args()

    import torch
    import transformers
    import yaml

    from prmlab.prms.training import TrainPRMConfig

    params = yaml.safe_load(Path(a.params).read_text())
    policy = params["policy"]["model"]
    examples = study_examples(params) if a.examples == "study" else \
        processbench_examples(Path(a.processbench), a.max_examples)
    tp = params["train_prm"]
    # the study's training params (lr, decay, warmup, max_length), the given steps and batch
    base = TrainPRMConfig(lr=tp["lr"], steps=a.steps, batch_size=a.batch_size, max_length=tp["max_length"],
                          warmup_ratio=tp["warmup_ratio"], weight_decay=tp["weight_decay"], seed=0, log_every=50)
    n_params = None
    work = Path(tempfile.mkdtemp())
    if a.shape != "toy":
        policy = str(work / "base")
        n_params = big_base(params["policy"]["model"], Path(policy), a.shape)
        base = dataclasses.replace(base, bf16=True, max_length=max(tp["max_length"], 2048))
    half = dataclasses.replace(base, batch_size=a.batch_size // 2, processes=2)
    variants = {"trainer": ("old", base), "padded": ("new", dataclasses.replace(base, batching="padded")),
                "packed": ("new", base), "packed x2": ("new", half),
                "grouped": ("new", dataclasses.replace(base, batching="grouped"))}
    check = None
    if a.shape != "toy":
        from prmlab.prms.model import varlen_available

        variants.pop("packed x2")  # one GPU
        # the GPU's packed attention: torch's varlen kernel where there is one (else the per-example sdpa again)
        fast = "varlen" if varlen_available() else "sdpa"
        if fast == "varlen":
            variants["packed varlen"] = ("new", dataclasses.replace(base, attn_implementation="varlen"))
            # the first lever not yet tried: micro-batches twice as large (the 33% plain step used 8 x 1,024 full rows)
            variants["packed varlen, 2x batch"] = ("new", dataclasses.replace(base, attn_implementation="varlen",
                                                                               batch_size=2 * a.batch_size))
            # and four times (2x gave 1.40x the tokens/s at 66 of the H200's 139 GiB; 4x is about 113 GiB)
            variants["packed varlen, 4x batch"] = ("new", dataclasses.replace(base, attn_implementation="varlen",
                                                                               batch_size=4 * a.batch_size))
            check = varlen_check(policy, examples)
        variants[f"fsdp bf16 {fast}"] = ("new", dataclasses.replace(base, fsdp=True, attn_implementation=fast))
        variants[f"fsdp bf16 {fast} + checkpointing"] = ("new", dataclasses.replace(
            base, fsdp=True, attn_implementation=fast, activation_checkpointing=True))
    old = old_trainer(a.today_file)
    runs: dict[str, list[dict]] = {}
    key = f"{machine()} | {a.shape} | {a.examples} | {a.steps} steps"
    out = Path(a.out)
    for r in range(a.repeats):
        for name, (which, cfg) in variants.items():
            if not a.variants or name in a.variants:
                runs.setdefault(name, []).append(run_variant(which, cfg, old, examples, policy, work, n_params, a.peak_tflops))
                print(f"round {r + 1}: {line(name, runs[name][-1])}", flush=True)
                rows = summary(runs, final=False)  # written after every run: a run cut short keeps what it measured
                allr = json.loads(out.read_text()) if out.exists() else {}
                allr[key] = {"machine": machine(), "shape": a.shape, "examples": a.examples, "n_examples": len(examples),
                             "steps": a.steps, "batch_size": a.batch_size, "parameters": n_params,
                             "torch": torch.__version__, "transformers": transformers.__version__,
                             "date": time.strftime("%Y-%m-%d"), "variants": rows, **({"varlen_check": check} if check else {})}
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(json.dumps(allr, indent=1) + "\n")
    summary(runs, final=True)


def summary(runs: dict[str, list[dict]], final: bool) -> dict:
    """Each variant's median round (by seconds), with every round's seconds; printed when `final`."""
    rows = {}
    for name, rs in runs.items():
        rows[name] = row = dict(sorted(rs, key=lambda x: x["seconds"])[len(rs) // 2])  # the median round's figures
        row["seconds_all"] = [x["seconds"] for x in rs]
        if final:
            print(f"median: {line(name, row)}", flush=True)
    if final and "trainer" in rows:
        ref = rows["trainer"]["tokens_per_s"]
        print("real tokens/s over today's trainer: " + ", ".join(f"{k} {v['tokens_per_s'] / ref:.2f}x" for k, v in rows.items()))
    return rows


if __name__ == "__main__":
    main()
