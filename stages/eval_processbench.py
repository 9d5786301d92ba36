"""Stage eval_processbench: find the earliest wrong step; F1 of error / correct accuracy.

Evaluates every PRM given (ours, or a released Qwen2.5-Math-PRM) and, optionally, the judge model
as a critic (`critic_style`: ProcessBench's `critic` or the PRM paper's `paper` format;
`critic_template_file` for the official wording, rendered byte for byte as ProcessBench's
run_eval.py does). Greedy, or a majority vote over `critic_n` samples; unset temperature / top_p /
top_k take run_eval.py's defaults for the judge model's family (Qwen2.5-Math: T=0.7, top_p=0.8,
top_k=20; others T=1.0, top_p=0.9), and the values used go into the metrics. A PRM predicts
the earliest step scored below the threshold, else -1; reported at 0.5 and at the threshold that
maximises F1 on `threshold_subset` (ProcessBench tunes it on GSM8K). Metrics per subset as
ProcessBench defines them, the headline the unweighted mean of subset F1s, plus accuracy on items
with a correct final answer but a flawed process (the PRM paper's Table 5). Each PRM also gets a
threshold-free step-level AUC per subset (steps before the first error against the first wrong step).

Data: `toy` (the JSONL given by --toy) or real ProcessBench (`data`: a folder or `hub:<name>`).
Inputs: --prm name=path (repeatable), --toy. Params: `eval_processbench`, `judge`.
Outputs: --metrics JSON, --scores JSONL (per item and model: step scores / prediction).
Run: python -m stages.eval_processbench --toy data/processbench/toy.jsonl --prm consensus=models/prm/consensus --metrics metrics/eval_processbench.json --scores data/eval/processbench_scores.jsonl
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Literal

from prmlab.generation import BackendConfig, Sampling, check_sampling
from prmlab.io import DataError, read_jsonl, write_json, write_jsonl
from prmlab.metrics import best_threshold, first_below, mean, processbench_scores, step_auc
from prmlab.params import ParamsError, check, load_params
from prmlab.preflight import check_backend, check_model
from prmlab.records import ProcessBenchItem
from prmlab.tracking import stage_run, summary


@dataclass(frozen=True)
class EvalPBConfig:
    subsets: list[str] = field(default_factory=lambda: ["toy"])
    threshold_subset: str = "toy"
    max_items: int = 0  # per subset, stratified; 0: all
    # name: folder or hub name of a released PRM, or {model, layout, reference} (prmlab.layouts)
    reference_prms: dict[str, Any] = field(default_factory=dict)
    scorer: str = "transformers"
    batch_size: int = 16
    batch_tokens: int = 16384  # a batch holds at most this many tokens, padding included (length-sorted)
    max_length: int = 4096  # clamped to the PRM's max_position_embeddings (the value used goes into the metrics)
    dtype: str = "float32"  # paper: bfloat16
    tensor_parallel_size: int = 1  # scorer vllm only
    critic: bool = True
    critic_n: int = 1
    critic_style: Literal["critic", "paper"] = "critic"
    critic_template_file: str | None = None
    # None: the official default for the judge model's family (prmlab.prompts.critic_sampling_defaults)
    critic_temperature: float | None = None
    critic_top_p: float | None = None
    critic_top_k: int | None = None
    critic_max_tokens: int = 2048

    def __post_init__(self):
        check(bool(self.subsets), "eval_processbench.subsets must not be empty")
        check(self.threshold_subset in self.subsets, "eval_processbench.threshold_subset must be one of subsets")
        check(self.scorer in ("transformers", "vllm"), "eval_processbench.scorer: transformers or vllm")
        check(self.dtype in ("float32", "bfloat16", "float16"), "eval_processbench.dtype: float32, bfloat16 or float16")
        check(self.tensor_parallel_size >= 1, "eval_processbench.tensor_parallel_size must be >= 1")
        check(self.batch_tokens >= 1, f"eval_processbench.batch_tokens must be >= 1, got {self.batch_tokens}")
        check(self.batch_size >= 1, f"eval_processbench.batch_size must be >= 1, got {self.batch_size}")  # -1 scored nothing: F1 0.0
        check(self.max_length >= 1, f"eval_processbench.max_length must be >= 1, got {self.max_length}")
        check(self.critic_n >= 1, "eval_processbench.critic_n must be >= 1")
        check(self.critic_n == 1 or self.critic_temperature is None or self.critic_temperature > 0,
              "eval_processbench: critic_n > 1 needs critic_temperature > 0 (or null: the model family's default)")
        check(self.critic_temperature is None or self.critic_temperature >= 0,
              "eval_processbench.critic_temperature must be >= 0")
        check(self.critic_top_p is None or 0 < self.critic_top_p <= 1, "eval_processbench.critic_top_p must be in (0, 1]")
        check(self.critic_top_k is None or self.critic_top_k == -1 or self.critic_top_k >= 1,
              "eval_processbench.critic_top_k must be -1 (off) or >= 1")

    def critic_sampling(self, model_name: str) -> Sampling:
        """The critic's sampling, unset values resolved as ProcessBench's run_eval.py does for `model_name`."""
        from prmlab.prompts import critic_sampling_defaults

        t, p, k = critic_sampling_defaults(model_name, self.critic_n, self.critic_temperature, self.critic_top_p,
                                           self.critic_top_k)
        check(self.critic_n == 1 or t > 0, f"eval_processbench: critic_n > 1 needs temperature > 0 (resolved to {t})")
        return Sampling(n=self.critic_n, temperature=t, top_p=p, top_k=k, max_tokens=self.critic_max_tokens)


def load_items(cfg: EvalPBConfig, path: str) -> dict[str, list[ProcessBenchItem]]:
    """Items per configured subset (toy: built by build_processbench@toy; real: written by inputs@real),
    capped per subset by `max_items`, stratified so a capped run keeps both erroneous and error-free items."""
    from prmlab.data import stratified_head

    rows = read_jsonl(path, ProcessBenchItem)
    out = {}
    for s in cfg.subsets:
        items = [i for i in rows if i.subset == s]
        if not items:
            # E.g. a weak toy policy gave no balanced items: a counted skip (metrics `empty_subsets`), not a crash.
            print(f"[eval_processbench] WARNING: {path}: no items of subset '{s}'; skipped "
                  f"(subsets present: {sorted({i.subset for i in rows})})", file=sys.stderr)
            continue
        out[s] = stratified_head(items, cfg.max_items) if cfg.max_items else items
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


def prediction(item: ProcessBenchItem, scores: list[float], threshold: float) -> int | None:
    """The PRM's earliest wrong step; None (graded wrong, like an unparsed critic answer) when the item
    was truncated to fit max_length and no scored step is below the threshold: the dropped steps were
    never judged, so "no error" would be a guess."""
    p = first_below(scores, threshold)
    return None if p == -1 and len(scores) < len(item.steps) else p


def eval_prm(scorer, items: dict[str, list[ProcessBenchItem]], threshold_subset: str) -> tuple[dict, dict]:
    scores = {s: scorer.score([(i.problem, i.steps) for i in its]) for s, its in items.items()}
    at05 = subset_table(items, {s: [prediction(i, x, 0.5) for i, x in zip(items[s], scores[s])] for s in items})
    # No items to tune on: 0.5, flagged (`threshold_fallback`), never a threshold tuned on the reported items.
    t = best_threshold(scores[threshold_subset], [i.label for i in items[threshold_subset]])[0] \
        if threshold_subset in items else 0.5
    tuned = subset_table(items, {s: [prediction(i, x, t) for i, x in zip(items[s], scores[s])] for s in items})
    held = [s for s in items if s != threshold_subset]
    for tab in (at05, tuned):  # the F1 of the subsets the threshold never saw (none if only one subset)
        tab["heldout_average_f1"] = mean([tab[s]["f1"] for s in held]) if held else None
    # Threshold-free: how well step scores separate the steps before the first error from it.
    auc = {s: step_auc(scores[s], [i.label for i in its]) for s, its in items.items()}
    held_auc = [auc[s] for s in held if auc[s] is not None]
    return {"threshold_0.5": at05, "tuned": {**tuned, "threshold": t, "threshold_subset": threshold_subset,
                                             "threshold_fallback": threshold_subset not in items},
            "step_auc": auc | {"heldout_average": mean(held_auc) if held_auc else None}}, scores


def eval_critic(gen, items: dict[str, list[ProcessBenchItem]], cfg: EvalPBConfig, model_name: str = "") -> tuple[dict, dict]:
    """The judge model as a critic; `model_name` (the judge's `model`) picks the official sampling defaults."""
    from prmlab.prompts import judge_messages, load_template, majority, parse_judgement

    style = cfg.critic_style
    template = load_template(style, cfg.critic_template_file)
    sp = cfg.critic_sampling(model_name)
    preds, unparsed, truncated = {}, 0, 0
    gen.progress = f"critic {model_name}"
    for s, its in items.items():
        outs = gen.chat([judge_messages(template, style, i.problem, i.steps) for i in its], sp)
        preds[s] = [majority([parse_judgement(style, c.text, len(i.steps)) for c in comps]) for i, comps in zip(its, outs)]
        unparsed += sum(p is None for p in preds[s])
        truncated += sum(c.truncated for comps in outs for c in comps)
    table = subset_table(items, preds)
    table["unparsed"] = unparsed
    table["truncated_replies"] = truncated  # cut by critic_max_tokens / max_model_len
    table["sampling"] = {"style": style, "template_file": cfg.critic_template_file, "n": sp.n,
                         "temperature": sp.temperature, "top_p": sp.top_p, "top_k": sp.top_k}
    return table, preds


def main() -> None:
    ap = argparse.ArgumentParser(description="ProcessBench evaluation of PRMs and a critic")
    ap.add_argument("--items", required=True, help="ProcessBench items JSONL (toy or real, with their subsets)")
    ap.add_argument("--prm-dir", default=None, help="folder of trained PRMs: <dir>/<source> for each train_prm.sources")
    ap.add_argument("--prm", action="append", default=[], help="name=path of another PRM: a folder or hub name (repeatable)")
    ap.add_argument("--layout", action="append", default=[], help="name=layout of a --prm (prmlab.layouts; default: from its files)")
    ap.add_argument("--reference", action="append", default=[], help="name=model: the reference model of a layout-eurus --prm")
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--scores", required=True)
    ap.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"))
    a = ap.parse_args()
    from stages._common import fail, prms_to_evaluate, set_threads, vllm_layout_check

    try:
        cfg = load_params("eval_processbench", EvalPBConfig, a.params)
        jcfg = load_params("judge", BackendConfig, a.params)
        prms = prms_to_evaluate(a.prm_dir, a.prm, a.params, cfg.reference_prms, a.layout, a.reference)
        items = load_items(cfg, a.items)
        for name, spec in prms.items():  # before any model loads
            check_model(f"PRM {name!r}", spec.model, "prm", spec.layout, spec.reference)
            vllm_layout_check(cfg.scorer, name, spec)
        if cfg.critic:
            check_backend("judge", jcfg)
        if cfg.critic:  # fail now, not after the PRMs: a bad template or sampling setting
            from prmlab.prompts import load_template

            load_template(cfg.critic_style, cfg.critic_template_file)
            check_sampling("eval_processbench", lambda: cfg.critic_sampling(jcfg.model), n="critic_n",
                           temperature="critic_temperature", top_p="critic_top_p", top_k="critic_top_k",
                           max_tokens="critic_max_tokens")
    except (ParamsError, DataError, ValueError, OSError) as e:
        fail("eval_processbench", e)
    set_threads()
    from prmlab.prm import make_scorer

    results, rows = {}, []
    inputs = [a.items]
    with stage_run("eval_processbench", {"eval_processbench": cfg, "judge": jcfg, "prms": prms}, inputs=inputs) as run:
        for name, spec in prms.items():
            # An outcome RM (layout orm) scores every prefix of steps as a response, as the paper scores ORMs here.
            with make_scorer(cfg.scorer, spec.model, cfg.batch_size, cfg.max_length, cfg.dtype, cfg.tensor_parallel_size,
                             layout=spec.layout, reference=spec.reference, batch_tokens=cfg.batch_tokens, per_prefix=True) as scorer:
                scorer.progress = f"eval_processbench {name}"
                res, scores = eval_prm(scorer, items, cfg.threshold_subset)
                res["truncated_items"] = scorer.truncated_items
                res["max_length"] = scorer.max_length
            results[f"prm/{name}"] = res
            # `pred`: the prediction at the tuned threshold, truncation included, which the report's findings
            # read back (never re-derived from the scores: a cut item has fewer scores than steps).
            t = res["tuned"]["threshold"]
            rows += [{"model": f"prm/{name}", "subset": s, "id": i.id, "label": i.label, "n_steps": len(i.steps),
                      "step_scores": sc, "pred": prediction(i, sc, t)}
                     for s, its in items.items() for i, sc in zip(its, scores[s])]
        if cfg.critic:
            from prmlab.generation import make_generator

            with make_generator(jcfg) as gen:
                res, preds = eval_critic(gen, items, cfg, jcfg.model)
            results["critic/judge"] = res
            rows += [{"model": "critic/judge", "subset": s, "id": i.id, "label": i.label, "pred": p}
                     for s, its in items.items() for i, p in zip(its, preds[s])]
        write_jsonl(a.scores, rows)
        m = {"items": {s: len(v) for s, v in items.items()}, "models": results,
             "empty_subsets": [s for s in cfg.subsets if s not in items]}
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    best = {k: (v["tuned"]["average_f1"] if "tuned" in v else v["average_f1"]) for k, v in results.items()}
    summary("eval_processbench", f"{sum(len(v) for v in items.values())} items, {len(results)} models; average F1: "
            + ", ".join(f"{k}={f:.1f}" for k, f in best.items())
            + "".join(f"; {k}: {v['truncated_items']} items truncated to max_length (graded wrong unless an error was found)"
                      for k, v in results.items() if v.get("truncated_items")))


if __name__ == "__main__":
    from stages._common import run_main

    run_main("eval_processbench", main)
