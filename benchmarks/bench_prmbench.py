"""Benchmark: PRMBench scoring throughput, prmlab against the official harness's procedure, side by side.

    python -m benchmarks.bench_prmbench --per-class 8 --out reports/benchmarks/prmbench_cpu.json
    python -m benchmarks.bench_prmbench --dims mid --per-class 40 --out reports/benchmarks/prmbench_gpu.json  # a GPU

One checkpoint in the qwen layout (benchmarks/layout_models.py; `--dims toy`, the toy policy's shape, by default;
`mid` a 0.5B-class Qwen2 shape) on `--per-class` real PRMBench items of each classification (prmlab.pipeline.prmbench's
`head_per_class` over ../shared/data/prmbench, the harness's items and step-prefix stripping):
- prmlab: eval_prmbench's scoring (`score_items` over `layout_scorer`: length-sorted batches under a token budget,
  on a CPU only equal lengths share a batch);
- the harness's procedure (ssmisya/PRMBench a1ae4ea, `mr_eval/models/qwen_prm.py`): per item its `getitem_function`
  (system prompt, question, the stripped steps each followed by `<extra_0>`, the chat template, `encode`), items in
  file order in batches of `--harness-batch` (2 in its example configs) padded to the batch's longest with an
  attention mask, one forward pass, `make_step_rewards` (softmax, label 1 at the `<extra_0>` tokens).
Prints items/s of each (medians of --repeats alternating runs), their ratio, the largest score difference (they
must agree), and on a GPU the peak memory. Measured, never asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from benchmarks import positive_int
from benchmarks.bench_layouts import DIMS
from benchmarks.layout_models import build

SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."  # qwen_prm.py's system prompt


def harness_scores(model, tok, items, batch_size: int, max_length: int, device: str) -> dict[str, list[float]]:
    """The harness's QwenPRM: getitem_function per item, batches in file order, padded, make_step_rewards."""
    from prmlab.pipeline.prmbench import strip_step_prefix

    sep = tok.encode("<extra_0>")[0]
    out = {}
    with torch.no_grad():
        for b in range(0, len(items), batch_size):
            batch = items[b:b + batch_size]
            ids = []
            for it in batch:
                combined = "".join(strip_step_prefix(s) + "<extra_0>" for s in it.steps)
                messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": it.question},
                            {"role": "assistant", "content": combined}]
                text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
                ids.append(tok.encode(text)[:max_length])
            width = max(map(len, ids))
            pad = tok.pad_token_id if tok.pad_token_id is not None else 0
            input_ids = torch.tensor([x + [pad] * (width - len(x)) for x in ids], device=device)
            mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids], device=device)
            probs = model(input_ids, mask).logits.float().softmax(-1) * (input_ids == sep).unsqueeze(-1)
            for it, p in zip(batch, probs):
                out[it.id] = p[p != 0].view(-1, 2)[:, 1].cpu().tolist()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prmbench", default="../shared/data/prmbench")
    ap.add_argument("--tokenizer", default="models/policy")
    ap.add_argument("--per-class", type=positive_int, default=8, help="items per classification (head_per_class)")
    ap.add_argument("--dims", choices=sorted(DIMS), default="toy")
    ap.add_argument("--batch-size", type=positive_int, default=16, help="prmlab's batch size (with --batch-tokens)")
    ap.add_argument("--batch-tokens", type=positive_int, default=16384)
    ap.add_argument("--harness-batch", type=positive_int, default=2, help="the harness's batch size (its configs: 2)")
    ap.add_argument("--max-length", type=positive_int, default=2048, help="both sides (the harness's config: 2048)")
    ap.add_argument("--repeats", type=positive_int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    from prmlab.pipeline.prmbench import head_per_class, load_prmbench, score_items
    from prmlab.prms.layouts import layout_scorer
    from prmlab.prms.model import Qwen2ForProcessRewardModel

    items = head_per_class(load_prmbench(a.prmbench), a.per_class)
    gpu = torch.cuda.is_available()
    device, dtype = ("cuda", "bfloat16") if gpu else ("cpu", "float32")
    res = {"device": torch.cuda.get_device_name(0) if gpu else "cpu", "threads": torch.get_num_threads(),
           "items": len(items), "steps": sum(len(i.steps) for i in items), "dims": a.dims,
           "harness_batch": a.harness_batch, "max_length": a.max_length}
    with tempfile.TemporaryDirectory() as d:
        spec = build("qwen", Path(d) / "qwen", a.tokenizer, dims=DIMS[a.dims], dtype=getattr(torch, dtype))
        model = Qwen2ForProcessRewardModel.from_pretrained(spec.model, dtype=getattr(torch, dtype)).to(device).eval()
        with layout_scorer(spec, a.batch_size, a.max_length, dtype, a.batch_tokens) as sc:
            score_items(sc, items[:2], True)  # warm-up, both sides
            harness_scores(model, sc.tok, items[:2], a.harness_batch, a.max_length, device)
            if gpu:
                torch.cuda.reset_peak_memory_stats()
            t_ours, t_ref = [], []
            for _ in range(a.repeats):  # alternating, so neither side gets the warmer machine
                t = time.perf_counter()
                ours = score_items(sc, items, True)
                t_ours.append(time.perf_counter() - t)
                t = time.perf_counter()
                ref = harness_scores(model, sc.tok, items, a.harness_batch, a.max_length, device)
                t_ref.append(time.perf_counter() - t)
    same = [k for k in ours if len(ours[k]) == len(ref[k])]  # a cut item: prmlab drops whole steps, the harness tokens
    diff = max((abs(x - y) for k in same for x, y in zip(ours[k], ref[k])), default=0.0)
    t_ours, t_ref = statistics.median(t_ours), statistics.median(t_ref)
    res |= {"prmlab_items_per_s": len(items) / t_ours, "harness_items_per_s": len(items) / t_ref, "speedup": t_ref / t_ours,
            "max_abs_diff": diff, "compared_items": len(same),
            "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if gpu else None}
    print(f"PRMBench, {len(items)} items ({res['steps']} steps), {a.dims} shape, {res['device']}: prmlab "
          f"{res['prmlab_items_per_s']:.1f} items/s, the harness's procedure (batch {a.harness_batch}) "
          f"{res['harness_items_per_s']:.1f} items/s, ratio {res['speedup']:.2f}x, max |diff| {diff:.1e} over "
          f"{len(same)} items" + (f", peak {res['peak_gib']:.2f} GiB" if gpu else ""), flush=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
