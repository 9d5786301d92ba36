"""Stage label_judge: LLM-as-a-judge names the first wrong step of every sampled response.

The prompt template is `critic` (ProcessBench style, 0-based `<paragraph_i>`, index in \\boxed{})
or `paper` (the PRM paper's judge: 1-based paragraphs, `<analysis_k>` blocks up to the first wrong
one, then `<conclusion>Correct|Incorrect</conclusion>`, the wrong paragraph being the last one
analysed); `template_file` swaps in a user's wording (e.g. the official ProcessBench template or
the paper's judge prompt), with `{problem}` or `{tagged_problem}` and `{tagged_response}`.
Answers that cannot be parsed, or name a paragraph that does not exist, are recorded as unparsed:
counted, excluded from consensus, never read as "correct".
With n > 1, the judgement is a majority vote over n samples. Identical responses to a problem
(a policy at temperature 0.7 repeats itself) are judged once per shard and share the verdict;
`distinct_responses` in the metrics counts them.

Inputs: --problems, --samples. Params: `label_judge`, `judge` (backend).
Outputs: --out JSONL (JudgeLabel), --metrics JSON (incl. the audit against the toy verifier).
Run: python -m stages.label_judge --problems data/problems/train.jsonl --samples data/samples/train.jsonl --out data/labels/judge.jsonl --metrics metrics/label_judge.json
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from prmlab import generation, labeling, prompts
from prmlab.generation import BackendConfig, Sampling, check_sampling
from prmlab.io import ShardWriter, read_jsonl, write_json
from prmlab.labeling import audit, judge_labels
from prmlab.params import ParamsError, check, load_params
from prmlab.preflight import check_backend, code_version, model_identity
from prmlab.prompts import load_template
from prmlab.records import JudgeLabel, Problem, Response
from prmlab.tracking import md5_path, stage_run, summary


@dataclass(frozen=True)
class LabelJudgeConfig:
    style: Literal["critic", "paper"] = "critic"
    template_file: str | None = None
    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int = 2048
    shard_size: int = 128
    seed: int = 0

    def __post_init__(self):
        check(self.n >= 1, "label_judge.n must be >= 1")
        check(self.n == 1 or self.temperature > 0, "label_judge: majority vote (n > 1) needs temperature > 0")
        check(self.shard_size >= 1, "label_judge.shard_size must be >= 1")
        check_sampling("label_judge", self.sampling)

    def sampling(self, shard: int = 0) -> Sampling:
        return Sampling(n=self.n, temperature=self.temperature, top_p=self.top_p, top_k=self.top_k,
                        max_tokens=self.max_tokens, seed=self.seed + shard)


def main() -> None:
    from prmlab.io import fingerprint, sharded
    from stages._common import fail, parse_args, set_threads

    a = parse_args("LLM-as-a-judge step labels", problems="problems JSONL", samples="responses JSONL",
                   out="labels JSONL", metrics="metrics JSON")
    try:
        cfg = load_params("label_judge", LabelJudgeConfig, a.params)
        bcfg = load_params("judge", BackendConfig, a.params)
        template = load_template(cfg.style, cfg.template_file)
        check_backend("judge", bcfg)  # before any model loads (a server: reachable within 5 s)
    except (ParamsError, OSError, ValueError) as e:
        fail("label_judge", e)
    problems = {p.id: p for p in read_jsonl(a.problems, Problem)}
    responses = read_jsonl(a.samples, Response)
    missing = sorted({r.problem_id for r in responses} - set(problems))
    if missing:
        fail("label_judge", ValueError(f"{a.samples}: field 'problem_id' names problems not in {a.problems}: {missing[:5]}"))
    set_threads()
    from prmlab.generation import make_generator

    # Shards are reused only if made by the same weights, tokenizer, template and judging code.
    # The writer takes the output's lock here, before the model loads: a second run on it stops now.
    writer = ShardWriter(a.out, fingerprint(cfg, bcfg, template, md5_path(a.problems), md5_path(a.samples),
                                            model_identity(bcfg.model), code_version(labeling, generation, prompts)))
    with stage_run("label_judge", {"label_judge": cfg, "judge": bcfg}, inputs=[a.problems, a.samples]) as run, \
            make_generator(bcfg) as gen:
        labels = sharded(responses, cfg.shard_size, writer,
                         lambda i, chunk: judge_labels(gen, problems, chunk, template, cfg.style, cfg.sampling(i)),
                         "label_judge", unit="responses", cls=JudgeLabel)
        writer.finish((len(responses) + cfg.shard_size - 1) // cfg.shard_size)
        n = max(len(labels), 1)
        votes = [v for lab in labels for v in lab.votes]
        m = {"responses": len(labels), "distinct_responses": len({(r.problem_id, tuple(r.steps)) for r in responses}),
             "unparsed": sum(not lab.parsed for lab in labels),
             "unparsed_share": sum(not lab.parsed for lab in labels) / n,
             "unparsed_votes": sum(v is None for v in votes),
             "truncated_replies": sum(lab.truncated for lab in labels),  # cut by max_tokens / max_model_len
             "first_error_share": sum(lab.first_error not in (None, -1) for lab in labels) / n}
        if any(r.true_first_error is not None for r in responses):
            m["audit"] = audit(responses, {lab.response_id: lab.first_error for lab in labels})
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    extra = f", first-error acc vs verifier {m['audit']['first_error_accuracy']:.2f}" if "audit" in m else ""
    summary("label_judge", f"{len(labels)} responses judged ({cfg.style}, n={cfg.n}), {m['unparsed']} unparsed, "
            f"{m['truncated_replies']} replies cut by a length limit{extra}")


if __name__ == "__main__":
    from stages._common import run_main

    run_main("label_judge", main)
