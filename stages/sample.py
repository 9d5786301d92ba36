"""Stage sample (and sample_eval): N responses per problem from the policy, split into steps, graded.

Prompted as Qwen2.5-Math-Instruct is (CoT system message, the problem as the user turn, the model's
chat template). Each response is split on blank lines, its last \\boxed{} extracted and graded
against the gold answer with math-verify. Responses with no steps or no answer are dropped and
counted. Where a problem carries a toy solution graph, the exact verifier also records the true
first wrong step (the toy world's human label).

Inputs: --problems JSONL (Problem). Params: the section named by --section (`sample` or
`sample_eval`), and `policy` (backend). Outputs: --out JSONL (Response), --metrics JSON.
Run: python -m stages.sample --section sample --problems data/problems/train.jsonl --out data/samples/train.jsonl --metrics metrics/sample.json
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from prmlab import generation, grading, prompts
from prmlab.generation import BackendConfig, Generator, Sampling, check_sampling
from prmlab.grading import to_response
from prmlab.io import ShardWriter, read_jsonl, write_json
from prmlab.params import ParamsError, check, load_params
from prmlab.preflight import check_backend, code_version, model_identity
from prmlab.prompts import policy_messages
from prmlab.records import Problem, Response
from prmlab.tracking import md5_path, stage_run, summary


@dataclass(frozen=True)
class SampleConfig:
    n: int = 6
    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = -1
    max_tokens: int = 1024
    seed: int = 0
    max_problems: int = 0  # 0: all
    shard_size: int = 64  # problems per shard (resumable unit)
    # Keep a response with no final answer as a wrong one instead of dropping it. Best-of-N needs this:
    # dropping it would leave fewer, easier candidates (and a problem with none would vanish).
    keep_unanswered: bool = False

    def __post_init__(self):
        check(self.n >= 1, "n must be >= 1")
        check(self.max_problems >= 0 and self.shard_size >= 1, "max_problems >= 0 and shard_size >= 1")

    def sampling(self, shard: int = 0) -> Sampling:
        # Each shard gets its own seed so a resumed run draws what the uninterrupted one would have.
        return Sampling(n=self.n, temperature=self.temperature, top_p=self.top_p, top_k=self.top_k,
                        max_tokens=self.max_tokens, seed=self.seed + shard)


def sample_responses(gen: Generator, problems: list[Problem], cfg: SampleConfig, shard: int = 0) -> tuple[list[Response], dict]:
    outs = gen.chat([policy_messages(p.question) for p in problems], cfg.sampling(shard))
    rows, counts = [], {"no_steps": 0, "no_answer": 0, "truncated": 0}  # drops by reason, and cut responses
    for p, comps in zip(problems, outs):
        for j, c in enumerate(comps):
            counts["truncated"] += c.truncated  # cut by max_tokens / max_model_len: kept or dropped, counted
            r, why = to_response(p, f"{p.id}/r{j}", c.text, c.num_tokens, cfg.keep_unanswered)
            if r is None:
                counts[why] += 1
            else:
                rows.append(r)
    return rows, counts


def summarize(responses: list[Response], problems: int, cfg: SampleConfig) -> dict:
    n = len(responses)
    m = {"problems": problems, "generated": problems * cfg.n, "kept": n,
         "dropped": problems * cfg.n - n,
         "accuracy": sum(r.correct for r in responses) / n if n else 0.0,
         "mean_steps": sum(len(r.steps) for r in responses) / n if n else 0.0,
         "generated_tokens": sum(r.num_tokens for r in responses)}
    labelled = [r for r in responses if r.true_first_error is not None]
    if labelled:
        ok = [r for r in labelled if r.correct]
        m["error_free_share"] = sum(r.true_first_error == -1 for r in labelled) / len(labelled)
        m["flawed_among_correct"] = sum(r.true_first_error != -1 for r in ok) / max(len(ok), 1)
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description="sample N responses per problem from the policy")
    ap.add_argument("--section", default="sample")
    ap.add_argument("--problems", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"))
    a = ap.parse_args()
    from prmlab.io import fingerprint, sharded
    from stages._common import fail, set_threads

    try:
        cfg = load_params(a.section, SampleConfig, a.params)
        bcfg = load_params("policy", BackendConfig, a.params)
        check_sampling(a.section, cfg.sampling)  # here, not in __post_init__: the section has two names
        check_backend("policy", bcfg)  # before any model loads
    except ParamsError as e:
        fail(a.section, e)
    problems = read_jsonl(a.problems, Problem)
    if cfg.max_problems:
        problems = problems[: cfg.max_problems]
    bad = [p.id for p in problems if not p.gold_answer]
    problems = [p for p in problems if p.gold_answer]
    set_threads()
    from prmlab.generation import make_generator

    # Shards are reused only if made by the same weights, tokenizer and sampling/grading code.
    # The writer takes the output's lock here, before the model loads: a second run on it stops now.
    writer = ShardWriter(a.out, fingerprint(cfg, bcfg, md5_path(a.problems), model_identity(bcfg.model),
                                            code_version(generation, grading, prompts)))
    with stage_run(a.section, {"sample": cfg, "policy": bcfg}, inputs=[a.problems]) as run, make_generator(bcfg) as gen:
        def work(i, chunk):
            rows, counts = sample_responses(gen, chunk, cfg, i)
            writer.write_meta(i, counts)  # kept per shard: a resumed run counts the shards it skipped too
            return rows

        responses = sharded(problems, cfg.shard_size, writer, work, a.section, unit="problems", cls=Response)
        n_shards = (len(problems) + cfg.shard_size - 1) // cfg.shard_size
        counts = {"no_steps": 0, "no_answer": 0, "truncated": 0}
        for i in range(n_shards):
            for k, v in writer.read_meta(i).items():
                counts[k] += v
        writer.finish(n_shards)
        m = summarize(responses, len(problems), cfg)
        m.update({f"dropped_{k}": counts[k] for k in ("no_steps", "no_answer")}, problems_without_gold=len(bad),
                 truncated=counts["truncated"])
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    summary(a.section, f"{m['kept']} responses kept of {m['generated']} from {len(problems)} problems "
            f"(accuracy {m['accuracy']:.2f}, {m['dropped']} dropped, {m['truncated']} cut by a length limit, "
            f"{len(bad)} problems without gold skipped)")


if __name__ == "__main__":
    import sys

    from stages._common import run_main

    run_main("sample_eval" if "sample_eval" in sys.argv else "sample", main)  # the DVC stage's name
