"""Benchmark: prmlab's scorer against each PRM layout's own loop, side by side on the same items and model.

    python -m benchmarks.bench_layouts --items 48 --out reports/benchmarks/layouts_cpu.json
    python -m benchmarks.bench_layouts --dims mid --items 200 --out reports/benchmarks/layouts_gpu.json   # on a GPU

For each layout (a checkpoint built in it, benchmarks/layout_models.py; `--dims toy`, the toy policy's
shape, by default; `mid` a 0.5B-class Qwen2 shape for a GPU) on `--items` real ProcessBench items, a
seeded sample of gsm8k and math:
- prmlab: layout_scorer (a LayoutScorer subclass per layout), length-sorted batches under a token budget, all steps in one pass;
- the layout's reference procedure (the model card's one-item loop; RLHFlow: ProcessBench-style
  one chat call per step; an ORM: one call per prefix of steps), as tests/prms/test_layouts.py runs it.
With `--vllm`, the layouts vLLM's pooling runner serves (qwen, math_shepherd, trl: prmlab.prms.layouts.VLLM_LAYOUTS) are
also scored through it, in the same run (after the others: vLLM holds memory until closed).
Prints responses/s of each (medians of --repeats alternating runs), their ratio (targets: >= 1.0x the model card's loop, >= 10x the per-step
chat loop), the largest score difference (they must agree), and on a GPU the peak memory. Measured,
never asserted; benchmarks/write_report.py puts the JSON in reports/benchmarks.md.
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
from benchmarks.layout_models import build, reference_scores
from prmlab.prms.layouts import LAYOUTS, VLLM_LAYOUTS, layout_scorer, make_scorer

DIMS = {"tiny": None,
        "toy": {"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
                "intermediate_size": 384},  # the toy policy's shape
        # A 0.5B-class Qwen2 shape (Qwen2.5-0.5B: hidden 896, 24 layers, 14 heads, 2 KV heads).
        "mid": {"hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
                "intermediate_size": 4864}}
BASELINE = {"rlhflow": "per-step chat loop", "orm": "per-prefix loop"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processbench", default="../shared/data/processbench")
    ap.add_argument("--tokenizer", default="models/policy")
    ap.add_argument("--items", type=positive_int, default=48)
    ap.add_argument("--dims", choices=sorted(DIMS), default="toy")
    ap.add_argument("--layouts", nargs="*", default=list(LAYOUTS))
    ap.add_argument("--batch-size", type=positive_int, default=16, help="prmlab's batch size (with --batch-tokens)")
    ap.add_argument("--batch-tokens", type=positive_int, default=16384)
    ap.add_argument("--repeats", type=positive_int, default=3)
    ap.add_argument("--vllm", action="store_true", help="also vLLM's pooling runner, for the layouts it serves")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import random

    from prmlab.pipeline.data import load_processbench

    items = []
    for subset in ("gsm8k", "math"):  # a seeded sample: real lengths (the per-step loop's cost grows with steps squared)
        its = load_processbench(subset, a.processbench)
        items += [(i.problem, i.steps) for i in random.Random(0).sample(its, a.items // 2)]
    gpu = torch.cuda.is_available()
    res = {"device": torch.cuda.get_device_name(0) if gpu else "cpu", "threads": torch.get_num_threads(),
           "items": len(items), "steps": sum(len(s) for _, s in items), "dims": a.dims, "layouts": {}}
    with tempfile.TemporaryDirectory() as d:
        for lay in a.layouts:
            spec = build(lay, Path(d) / lay, a.tokenizer, dims=DIMS[a.dims],
                         dtype=torch.bfloat16 if gpu else torch.float32)
            its = [(q, [s.replace("\n", " ") for s in steps]) for q, steps in items] if lay == "skywork" else items
            if gpu:
                torch.cuda.reset_peak_memory_stats()
            with layout_scorer(spec, a.batch_size, dtype="bfloat16" if gpu else "float32", batch_tokens=a.batch_tokens) as sc:
                sc.score(its[:2])  # warm-up
                t_ours, t_ref = [], []
                for _ in range(a.repeats):  # alternating, so neither side gets the warmer machine
                    t = time.perf_counter()
                    ours = sc.score(its)
                    t_ours.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    ref = reference_scores(lay, spec, its)
                    t_ref.append(time.perf_counter() - t)
            t_ours, t_ref = statistics.median(t_ours), statistics.median(t_ref)
            peak = torch.cuda.max_memory_allocated() / 2**30 if gpu else None
            diff = max((abs(x - y) for o, r in zip(ours, ref) for x, y in zip(o, r)), default=0.0)
            tokens = None
            if lay in BASELINE:  # the loop's tokens over one pass's: the ratio's ceiling where compute is the bottleneck
                from prmlab.prms.layouts import rlhflow_conversation

                tok = sc.tok
                if lay == "rlhflow":
                    loop = sum(len(tok.apply_chat_template(rlhflow_conversation(q, s)[: 2 * k], return_dict=False))
                               for q, s in its for k in range(1, len(s) + 1))
                    one = sum(len(tok.apply_chat_template(rlhflow_conversation(q, s), return_dict=False)) for q, s in its)
                    tokens = loop / one
                else:  # orm: one pass per prefix either way
                    tokens = 1.0
            row = {"prmlab_responses_per_s": len(its) / t_ours, "reference_responses_per_s": len(its) / t_ref,
                   "speedup": t_ref / t_ours, "baseline": BASELINE.get(lay, "model card loop"), "max_abs_diff": diff,
                   "peak_gib": peak, "loop_tokens_over_one_pass": tokens}
            if a.vllm and lay in VLLM_LAYOUTS:  # vLLM's pooling runner on the same checkpoint and items
                with make_scorer("vllm", spec.model, max_length=8192, dtype="bfloat16" if gpu else "float32") as vs:
                    vs.score(its[:2])
                    t_v = []
                    for _ in range(a.repeats):
                        t = time.perf_counter()
                        got = vs.score(its)
                        t_v.append(time.perf_counter() - t)
                t_v = statistics.median(t_v)
                row |= {"vllm_responses_per_s": len(its) / t_v, "vllm_over_prmlab": t_ours / t_v,
                        "vllm_max_abs_diff": max((abs(x - y) for o, r in zip(got, ours) for x, y in zip(o, r)), default=0.0)}
            res["layouts"][lay] = row
            print(f"{lay:14s} prmlab {row['prmlab_responses_per_s']:7.1f} resp/s   {row['baseline']:20s} "
                  f"{row['reference_responses_per_s']:7.1f} resp/s   ratio {row['speedup']:5.2f}x   max |diff| {diff:.1e}"
                  + (f"   peak {peak:.2f} GiB" if peak is not None else "")
                  + (f"   loop/one-pass tokens {tokens:.2f}" if tokens is not None else "")
                  + (f"   vLLM {row['vllm_responses_per_s']:7.1f} resp/s ({row['vllm_over_prmlab']:.2f}x prmlab's, "
                     f"max |diff| {row['vllm_max_abs_diff']:.1e})" if "vllm_responses_per_s" in row else ""), flush=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
