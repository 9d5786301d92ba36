"""Stage label_mc: Monte Carlo step labels (hard and soft) for every sampled response.

For each step i, k rollouts continue from steps 0..i; soft = share reaching the gold answer, hard =
soft > threshold (paper: 0). The first hard-negative step is the MC first error; later steps are
not labelled. All rollouts of a shard go to the backend in one call, each distinct prefix once:
responses that share a prefix (or repeat one another) share its estimate (prefix caching does the rest);
shards are written atomically, so a killed run resumes without redoing or duplicating work.
`search: binary` finds the first negative by binary search over prefixes and also labels
`compare_sample` responses exhaustively, to report rollouts saved and first-error agreement.

Inputs: --problems, --samples. Params: `label_mc`, `policy`.
Outputs: --out JSONL (MCLabel), --metrics JSON (incl. the label audit against the toy verifier).
Run: python -m stages.label_mc --problems data/problems/train.jsonl --samples data/samples/train.jsonl --out data/labels/mc.jsonl --metrics metrics/label_mc.json
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from prmlab import generation, grading, labeling
from prmlab.generation import BackendConfig, Sampling, check_sampling
from prmlab.io import ShardWriter, read_jsonl, write_json
from prmlab.labeling import MCStats, audit, mc_binary, mc_exhaustive
from prmlab.params import ParamsError, check, load_params
from prmlab.preflight import check_backend, code_version, model_identity
from prmlab.records import MCLabel, Problem, Response
from prmlab.tracking import md5_path, stage_run, summary


@dataclass(frozen=True)
class LabelMCConfig:
    k: int = 8
    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = -1
    max_tokens: int = 1024
    threshold: float = 0.0
    search: Literal["exhaustive", "binary"] = "exhaustive"
    compare_sample: int = 64  # binary mode: responses also labelled exhaustively for the comparison
    shard_size: int = 64  # responses per shard
    seed: int = 0

    def __post_init__(self):
        check(self.k >= 1, "label_mc.k must be >= 1")
        check(0 <= self.threshold < 1, "label_mc.threshold must be in [0, 1)")
        check(self.shard_size >= 1 and self.compare_sample >= 0, "label_mc.shard_size >= 1, compare_sample >= 0")
        check_sampling("label_mc", self.sampling, n="k")

    def sampling(self, shard: int = 0) -> Sampling:
        return Sampling(n=self.k, temperature=self.temperature, top_p=self.top_p, top_k=self.top_k,
                        max_tokens=self.max_tokens, seed=self.seed + shard)


def label_responses(gen, problems: dict[str, Problem], responses: list[Response], cfg: LabelMCConfig,
                    stats: MCStats, shard: int = 0) -> list[MCLabel]:
    fn = mc_binary if cfg.search == "binary" else mc_exhaustive
    return fn(gen, problems, responses, cfg.sampling(shard), cfg.threshold, stats)


def main() -> None:
    from stages._common import fail, fingerprint, parse_args, set_threads, sharded

    a = parse_args("MC step labels", problems="problems JSONL", samples="responses JSONL", out="labels JSONL",
                   metrics="metrics JSON")
    try:
        cfg = load_params("label_mc", LabelMCConfig, a.params)
        bcfg = load_params("policy", BackendConfig, a.params)
        check_backend("policy", bcfg)  # before any model loads or rollout is spent
    except ParamsError as e:
        fail("label_mc", e)
    problems = {p.id: p for p in read_jsonl(a.problems, Problem)}
    responses = read_jsonl(a.samples, Response)
    missing = sorted({r.problem_id for r in responses} - set(problems))
    if missing:
        fail("label_mc", ValueError(f"{a.samples}: responses name problems not in {a.problems}: {missing[:5]}"))
    no_gold = sorted({r.problem_id for r in responses if not problems[r.problem_id].gold_answer})
    if no_gold:
        fail("label_mc", ValueError(f"{a.problems}: field 'gold_answer' is null for problem(s) {no_gold[:5]}, "
                                    "which MC rollouts are graded against"))
    set_threads()
    from prmlab.generation import make_generator

    stats = MCStats()
    t0 = time.monotonic()
    # Shards are reused only if made by the same weights, tokenizer and labelling code (see preflight).
    # The writer takes the output's lock here, before the model loads: a second run on it stops now.
    writer = ShardWriter(a.out, fingerprint(cfg, bcfg, md5_path(a.problems), md5_path(a.samples),
                                            model_identity(bcfg.model), code_version(labeling, generation, grading)))
    with stage_run("label_mc", {"label_mc": cfg, "policy": bcfg}, inputs=[a.problems, a.samples]) as run, \
            make_generator(bcfg) as gen:
        labels = sharded(responses, cfg.shard_size, writer,
                         lambda i, chunk: label_responses(gen, problems, chunk, cfg, stats, i),
                         "label_mc", unit="responses", cls=MCLabel)
        writer.finish((len(responses) + cfg.shard_size - 1) // cfg.shard_size)
        seconds = time.monotonic() - t0
        # The metrics file holds what the labels determine, so a resumed run writes the same file as an
        # uninterrupted one; what depends on this run (shards redone, time, tokens) goes to MLflow only.
        m = {"responses": len(labels), "rollouts": sum(lab.rollouts for lab in labels),
             "first_error_share": sum(lab.first_error != -1 for lab in labels) / max(len(labels), 1),
             # A rollout cut by max_tokens / max_model_len reaches no answer and counts as failing: a
             # length limit too tight for the policy turns correct steps into MC first errors.
             "truncated_rollouts": sum(lab.truncated for lab in labels),
             "responses_with_truncated_rollouts": sum(lab.truncated > 0 for lab in labels)}
        if cfg.search == "exhaustive":  # what labelling each response's prefixes apart would have cost
            m["rollouts_unshared"] = cfg.k * sum(len(r.steps) - 1 for r in responses)
        this_run = {"rollouts_this_run": stats.rollouts, "shared_prefixes_this_run": stats.shared_prefixes, "empty_rollouts_this_run": stats.empty_rollouts,
                    "generated_tokens_this_run": stats.generated_tokens, "seconds": seconds,
                    "tokens_per_second": stats.generated_tokens / seconds if seconds else 0.0}
        if cfg.search == "binary" and cfg.compare_sample:
            sub = responses[: cfg.compare_sample]
            ex = mc_exhaustive(gen, problems, sub, cfg.sampling(10**6), cfg.threshold, MCStats())
            bin_fe = {lab.response_id: lab.first_error for lab in labels}
            agree = sum(bin_fe[e.response_id] == e.first_error for e in ex) / len(ex)
            ex_roll = sum(e.rollouts for e in ex)
            bin_roll = sum(lab.rollouts for lab in labels if lab.response_id in {e.response_id for e in ex})
            m.update(binary_vs_exhaustive_agreement=agree, binary_rollouts_saved_share=1 - bin_roll / max(ex_roll, 1),
                     compared_responses=len(ex))
        if any(r.true_first_error is not None for r in responses):
            m["audit"] = audit(responses, {lab.response_id: lab.first_error for lab in labels})
        write_json(a.metrics, m)
        run.metrics(m | this_run)
        run.artifact(a.metrics)
    extra = f", first-error acc vs verifier {m['audit']['first_error_accuracy']:.2f}" if "audit" in m else ""
    shared = f", {m['rollouts_unshared']} without shared prefixes" if "rollouts_unshared" in m else ""
    summary("label_mc", f"{len(labels)} responses labelled with {m['rollouts']} rollouts ({cfg.search}, k={cfg.k}{shared}), "
            f"{m['truncated_rollouts']} rollouts cut by a length limit (in {m['responses_with_truncated_rollouts']} "
            f"responses' labels), {this_run['tokens_per_second']:.0f} tok/s this run{extra}")
    if m["truncated_rollouts"]:  # each counts as failing: a too-tight limit makes false MC first errors
        print(f"[label_mc] warning: {m['truncated_rollouts']} rollouts hit label_mc.max_tokens or policy.max_model_len "
              "and count as failing; raise them if the policy's answers need more room", flush=True)


if __name__ == "__main__":
    from stages._common import run_main

    run_main("label_mc", main)
