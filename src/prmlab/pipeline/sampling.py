"""Sampling the policy: N responses per problem, split into steps and graded (stages sample and sample_eval).

`sample_responses` is pure over problems and an injected `Generator`; `prepare_sample` and `sample` are
the stages' core (prmlab.core.stage runs them), one core for both: the params section is named by --section.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from prmlab import prompts
from prmlab.analysis.metrics import flawed_among_correct
from prmlab.core import grading
from prmlab.core.grading import to_response
from prmlab.core.io import ShardWriter, fingerprint, read_jsonl
from prmlab.core.params import check
from prmlab.core.preflight import check_backend, code_version, model_identity
from prmlab.core.provenance import md5_path
from prmlab.core.records import Problem, Response
from prmlab.core.result import Done
from prmlab.engines import generation
from prmlab.engines.cluster import check_engine, open_engine
from prmlab.engines.config import SamplingParams
from prmlab.engines.generation import Generator
from prmlab.prompts import policy_messages


@dataclass(frozen=True)
class SampleConfig(SamplingParams):
    MINIMUM = {"top_k": -1}  # -1: off (prmlab.core.params: every other number is >= 0)

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
        check(self.max_problems >= 0, "max_problems must be >= 0 (0: all)")
        check(self.shard_size >= 1, "shard_size must be >= 1")
        self.sampling()  # temperature, top_p, top_k, max_tokens checked when params are read (sample or sample_eval)


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


def sample_metrics(responses: list[Response], problems: int, cfg: SampleConfig) -> dict:
    n = len(responses)
    m = {"problems": problems, "generated": problems * cfg.n, "kept": n, "dropped": problems * cfg.n - n,
         "accuracy": sum(r.correct for r in responses) / n if n else 0.0,
         "mean_steps": sum(len(r.steps) for r in responses) / n if n else 0.0,
         "generated_tokens": sum(r.num_tokens for r in responses)}
    labelled = [r for r in responses if r.true_first_error is not None]
    if labelled:
        m["error_free_share"] = sum(r.true_first_error == -1 for r in labelled) / len(labelled)
        m["flawed_among_correct"] = flawed_among_correct(labelled)
    return m


@dataclass(frozen=True)
class SampleInputs:
    """What stage sample (or sample_eval) works on, read and checked by `prepare_sample`."""
    section: str  # its params section: sample or sample_eval
    writer: ShardWriter  # the output's shards (it holds the output's lock)
    problems: list[Problem]  # the first `max_problems`, those with a gold answer
    without_gold: list[str]  # the ids of those without one (skipped, counted)


def prepare_sample(a, cfg: dict) -> SampleInputs:
    """The params section (--section), the output's writer, the problems to sample (the first `max_problems`,
    those with a gold answer) and the ids of those without one, once the sampling params and the policy are checked."""
    this = sys.modules[__name__]  # this module, for the fingerprint
    c, bcfg = cfg[a.section], cfg["policy"]
    check_backend("policy", bcfg)  # before any model loads
    check_engine(cfg["engine"], a.section, bcfg)
    problems = read_jsonl(a.problems, Problem)[: c.max_problems or None]
    # Shards are reused only if made by the same weights, tokenizer and sampling/grading code. The writer
    # takes the output's lock here, before the MLflow run opens or the model loads: a second run stops now.
    writer = ShardWriter(a.out, fingerprint(c, bcfg, md5_path(a.problems), model_identity(bcfg.model),
                                            code_version(this, generation, grading, prompts)))
    return SampleInputs(a.section, writer, [p for p in problems if p.gold_answer], [p.id for p in problems if not p.gold_answer])


def sample_shard(cfg: SampleConfig):
    """An engine's work: shard i's responses, and its drop counts as the shard's meta (kept beside the shard,
    so a resumed run counts the shards it skipped too)."""
    return lambda gen, i, chunk: sample_responses(gen, chunk, cfg, i)


def sample(cfg: dict, data: SampleInputs, run) -> Done:
    """Stages sample and sample_eval: the responses, written shard by shard (a killed run resumes), on the
    engine params name (`engine.sample`, `engine.sample_eval`: this process or a Ray cluster, same responses)."""
    writer, problems, bad = data.writer, data.problems, data.without_gold
    c = cfg[data.section]
    with open_engine(cfg, data.section, cfg["policy"]) as eng:
        responses, _ = eng.shards(problems, c.shard_size, writer, sample_shard(c), unit="problems", cls=Response)
    n_shards = (len(problems) + c.shard_size - 1) // c.shard_size
    counts = {k: sum(writer.read_meta(i).get(k, 0) for i in range(n_shards)) for k in ("no_steps", "no_answer", "truncated")}
    writer.finish(n_shards)
    m = sample_metrics(responses, len(problems), c)
    m.update({f"dropped_{k}": counts[k] for k in ("no_steps", "no_answer")}, problems_without_gold=len(bad),
             truncated=counts["truncated"])
    return Done(m, f"{m['kept']} responses kept of {m['generated']} from {len(problems)} problems "
                   f"(accuracy {m['accuracy']:.2f}, {m['dropped']} dropped, {m['truncated']} cut by a length limit, "
                   f"{len(bad)} problems without gold skipped, {eng.retries} shard(s) retried)",
                logged={"shards_retried": eng.retries})
