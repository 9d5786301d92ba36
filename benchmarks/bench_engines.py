"""Benchmark: generation and PRM-scoring throughput of the backends, measured, never asserted.

    python -m benchmarks.bench_engines --policy models/policy --prm models/prm/oracle --problems data/problems/processbench.jsonl

Prints medians over --repeats runs of:
- generated tokens/s for transformers and vLLM on the same batch of policy prompts;
- vLLM with prefix caching on vs off on MC-style prompts (k rollouts from every step prefix);
- label_mc's own tokens/s (mc_exhaustive: prompt building, grading) over the backend's raw
  generate() tokens/s on the same rollouts (the stage overhead ratio; target >= 0.8);
- binary-search MC vs exhaustive MC: rollouts spent, and first-error agreement;
- PRM steps scored/s, transformers vs vLLM's pooling runner.
Writes JSON (--out) that benchmarks/write_report.py turns into reports/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks import positive_int


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="models/policy")
    ap.add_argument("--prm", default="models/prm/oracle")
    ap.add_argument("--problems", default="data/problems/processbench.jsonl")
    ap.add_argument("--n-prompts", type=int, default=64)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--repeats", type=positive_int, default=3)
    ap.add_argument("--out", default="reports/benchmarks/engines.json")
    a = ap.parse_args()

    import random

    from prmlab.core.io import read_jsonl, write_json
    from prmlab.core.records import Problem, Response
    from prmlab.engines.config import BackendConfig, Sampling
    from prmlab.engines.generation import make_generator
    from prmlab.pipeline.labeling import MCStats, mc_binary, mc_exhaustive, rollout_prompt
    from prmlab.prms.layouts import make_scorer
    from prmlab.prompts import policy_messages
    from prmlab.toy.world import canonical_steps, make_flawed, verify

    probs = read_jsonl(a.problems, Problem)[: a.n_prompts]
    pmap = {p.id: p for p in probs}
    rng = random.Random(0)
    rs = []
    for i, p in enumerate(probs):
        steps = canonical_steps(p) if i % 2 else make_flawed(rng, p, "slip")[0]
        v = verify(p, steps)
        rs.append(Response(problem_id=p.id, response_id=p.id, steps=steps, answer=p.gold_answer, correct=v.final_correct,
                           true_first_error=v.first_error))
    sp = Sampling(n=a.k, temperature=0.7, top_p=0.8, max_tokens=160, seed=0)
    res: dict = {"n_prompts": len(probs), "k": a.k, "repeats": a.repeats}

    def gen_tps(gen, prompts, sampling):
        t, outs = median_time(lambda: gen.generate(prompts, sampling), a.repeats)
        return sum(c.num_tokens for o in outs for c in o) / t

    for backend, kw in (("transformers", {"batch_size": 256}), ("vllm", {"enable_prefix_caching": True}),
                        ("vllm_no_prefix_cache", {"enable_prefix_caching": False})):
        cfg = BackendConfig(backend="vllm" if backend.startswith("vllm") else backend, model=a.policy, max_model_len=2048,
                            kv_cache_gib=2, **kw)
        with make_generator(cfg) as gen:
            chat = [gen.render(policy_messages(p.question)) for p in probs]
            mc = [rollout_prompt(gen, pmap[r.problem_id], r.steps, i) for r in rs for i in range(len(r.steps) - 1)]
            if backend != "vllm_no_prefix_cache":
                res[f"{backend}_sample_tokens_per_s"] = gen_tps(gen, chat, Sampling(n=8, temperature=0.7, top_p=0.8, max_tokens=160))
            res[f"{backend}_mc_raw_tokens_per_s"] = gen_tps(gen, mc, sp)
            if backend == "vllm_no_prefix_cache":
                continue
            st = MCStats()
            t, ex = median_time(lambda st=st: mc_exhaustive(gen, pmap, rs, sp, 0.0, st), a.repeats)
            res[f"{backend}_mc_stage_tokens_per_s"] = st.generated_tokens / a.repeats / t
            res[f"{backend}_mc_stage_overhead_ratio"] = res[f"{backend}_mc_stage_tokens_per_s"] / res[f"{backend}_mc_raw_tokens_per_s"]
            bst = MCStats()
            bi = mc_binary(gen, pmap, rs, sp, 0.0, bst)
            exd = {x.response_id: x for x in ex}
            res[f"{backend}_binary_rollouts"] = sum(x.rollouts for x in bi)
            res[f"{backend}_exhaustive_rollouts"] = sum(x.rollouts for x in ex)
            res[f"{backend}_binary_agreement"] = sum(x.first_error == exd[x.response_id].first_error for x in bi) / len(bi)
    res["vllm_prefix_cache_speedup"] = res["vllm_mc_raw_tokens_per_s"] / res["vllm_no_prefix_cache_mc_raw_tokens_per_s"]
    res["vllm_over_transformers_sample"] = res["vllm_sample_tokens_per_s"] / res["transformers_sample_tokens_per_s"]
    items = [(pmap[r.problem_id].question, r.steps) for r in rs]
    n_steps = sum(len(s) for _, s in items)
    for backend in ("transformers", "vllm"):
        with make_scorer(backend, a.prm, batch_size=32, max_length=2048) as sc:
            sc.score(items[:4])  # warm-up
            t, _ = median_time(lambda: sc.score(items), a.repeats)
        res[f"{backend}_prm_steps_per_s"] = n_steps / t
    res["prm_vllm_over_transformers"] = res["vllm_prm_steps_per_s"] / res["transformers_prm_steps_per_s"]
    write_json(a.out, res)
    for k, v in res.items():
        print(f"{k:45s} {v:.3f}" if isinstance(v, float) else f"{k:45s} {v}")


if __name__ == "__main__":
    main()
