"""Stage eval_processbench: find the earliest wrong step; F1 of error / correct accuracy.

Evaluates every PRM given (ours, or a released Qwen2.5-Math-PRM) and, optionally, the judge model
as a critic (ProcessBench's prompt style; greedy, or majority vote over n samples). A PRM predicts
the earliest step scored below the threshold, else -1; reported at 0.5 and at the threshold that
maximises F1 on `threshold_subset` (ProcessBench tunes it on GSM8K). Metrics per subset as
ProcessBench defines them, the headline the unweighted mean of subset F1s, plus accuracy on items
with a correct final answer but a flawed process (the PRM paper's Table 5).

Data: `toy` (the JSONL given by --toy) or real ProcessBench (`data`: a folder or `hub:<name>`).
Inputs: --prm name=path (repeatable), --toy. Params: `eval_processbench`, `judge`.
Outputs: --metrics JSON, --scores JSONL (per item and model: step scores / prediction).
Run: python -m stages.eval_processbench --toy data/processbench/toy.jsonl --prm consensus=models/prm/consensus --metrics metrics/eval_processbench.json --scores data/eval/processbench_scores.jsonl
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field

from prmlab.generation import BackendConfig, Sampling
from prmlab.io import read_jsonl, write_json, write_jsonl
from prmlab.metrics import best_threshold, first_below, mean, processbench_scores
from prmlab.params import ParamsError, check, load_params
from prmlab.records import ProcessBenchItem
from prmlab.tracking import stage_run, summary


@dataclass(frozen=True)
class EvalPBConfig:
    data: str = "toy"
    subsets: list[str] = field(default_factory=lambda: ["toy"])
    threshold_subset: str = "toy"
    max_items: int = 0
    scorer: str = "transformers"
    batch_size: int = 16
    max_length: int = 4096
    critic: bool = True
    critic_n: int = 1
    critic_temperature: float = 0.0
    critic_max_tokens: int = 2048
    critic_template_file: str | None = None

    def __post_init__(self):
        check(bool(self.subsets), "eval_processbench.subsets must not be empty")
        check(self.threshold_subset in self.subsets, "eval_processbench.threshold_subset must be one of subsets")
        check(self.scorer in ("transformers", "vllm"), "eval_processbench.scorer: transformers or vllm")
        check(self.critic_n == 1 or self.critic_temperature > 0, "eval_processbench: critic_n > 1 needs critic_temperature > 0")


def load_items(cfg: EvalPBConfig, toy_path: str | None) -> dict[str, list[ProcessBenchItem]]:
    from prmlab.data import load_processbench

    out = {}
    for s in cfg.subsets:
        if cfg.data == "toy":
            if not toy_path:
                raise ValueError("eval_processbench.data is 'toy' but no --toy file was given")
            items = [i for i in read_jsonl(toy_path, ProcessBenchItem) if i.subset == s]
        else:
            items = load_processbench(s, cfg.data)
        out[s] = items[: cfg.max_items] if cfg.max_items else items
    return out


def subset_table(items: dict[str, list[ProcessBenchItem]], preds: dict[str, list[int | None]]) -> dict:
    table = {}
    for s, its in items.items():
        sc = processbench_scores([i.label for i in its], preds[s])
        flawed = [(i.label, p) for i, p in zip(its, preds[s]) if i.final_answer_correct and i.label != -1]
        sc["flawed_correct_answer_acc"] = 100.0 * mean([float(y == p) for y, p in flawed]) if flawed else 0.0
        sc["n_flawed_correct_answer"] = len(flawed)
        table[s] = sc
    table["average_f1"] = mean([table[s]["f1"] for s in items])
    return table


def eval_prm(scorer, items: dict[str, list[ProcessBenchItem]], threshold_subset: str) -> tuple[dict, dict]:
    scores = {s: scorer.score([(i.problem, i.steps) for i in its]) for s, its in items.items()}
    at05 = subset_table(items, {s: [first_below(x, 0.5) for x in scores[s]] for s in items})
    t, _ = best_threshold(scores[threshold_subset], [i.label for i in items[threshold_subset]])
    tuned = subset_table(items, {s: [first_below(x, t) for x in scores[s]] for s in items})
    return {"threshold_0.5": at05, "tuned": {**tuned, "threshold": t}}, scores


def eval_critic(gen, items: dict[str, list[ProcessBenchItem]], cfg: EvalPBConfig) -> tuple[dict, dict]:
    from prmlab.prompts import judge_messages, load_template, majority, parse_judgement

    template = load_template("critic", cfg.critic_template_file)
    sp = Sampling(n=cfg.critic_n, temperature=cfg.critic_temperature, top_p=0.8 if cfg.critic_temperature else 1.0,
                  top_k=20 if cfg.critic_temperature else -1, max_tokens=cfg.critic_max_tokens)
    preds, unparsed = {}, 0
    for s, its in items.items():
        outs = gen.chat([judge_messages(template, "critic", i.problem, i.steps) for i in its], sp)
        preds[s] = [majority([parse_judgement("critic", c.text, len(i.steps)) for c in comps]) for i, comps in zip(its, outs)]
        unparsed += sum(p is None for p in preds[s])
    table = subset_table(items, preds)
    table["unparsed"] = unparsed
    return table, preds


def main() -> None:
    ap = argparse.ArgumentParser(description="ProcessBench evaluation of PRMs and a critic")
    ap.add_argument("--prm", action="append", default=[], help="name=path of a PRM checkpoint (repeatable)")
    ap.add_argument("--toy", default=None)
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--scores", required=True)
    ap.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"))
    a = ap.parse_args()
    from stages._common import fail, set_threads

    try:
        cfg = load_params("eval_processbench", EvalPBConfig, a.params)
        jcfg = load_params("judge", BackendConfig, a.params)
        prms = dict(p.split("=", 1) for p in a.prm)
        items = load_items(cfg, a.toy)
    except (ParamsError, ValueError, OSError) as e:
        fail("eval_processbench", e)
    set_threads()
    from prmlab.prm import make_scorer

    results, rows = {}, []
    inputs = [a.toy] if a.toy else []
    with stage_run("eval_processbench", {"eval_processbench": cfg, "judge": jcfg, "prms": prms}, inputs=inputs) as run:
        for name, path in prms.items():
            with make_scorer(cfg.scorer, path, cfg.batch_size, cfg.max_length) as scorer:
                res, scores = eval_prm(scorer, items, cfg.threshold_subset)
                res["truncated_items"] = scorer.truncated_items
            results[f"prm/{name}"] = res
            rows += [{"model": f"prm/{name}", "subset": s, "id": i.id, "label": i.label, "step_scores": sc}
                     for s, its in items.items() for i, sc in zip(its, scores[s])]
        if cfg.critic:
            from prmlab.generation import make_generator

            with make_generator(jcfg) as gen:
                res, preds = eval_critic(gen, items, cfg)
            results["critic/judge"] = res
            rows += [{"model": "critic/judge", "subset": s, "id": i.id, "label": i.label, "pred": p}
                     for s, its in items.items() for i, p in zip(its, preds[s])]
        write_jsonl(a.scores, rows)
        m = {"items": {s: len(v) for s, v in items.items()}, "models": results}
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    best = {k: (v["tuned"]["average_f1"] if "tuned" in v else v["average_f1"]) for k, v in results.items()}
    summary("eval_processbench", f"{sum(len(v) for v in items.values())} items, {len(results)} models; average F1: "
            + ", ".join(f"{k}={f:.1f}" for k, f in best.items()))


if __name__ == "__main__":
    main()
