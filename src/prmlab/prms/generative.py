"""Generative verifiers as PRM layouts: a causal LM prompted to check the steps of a response and give a verdict
per step, sampled `votes` times (maj@k); a step's score is the share of votes that call it correct.

One class per family, each with the prompt and the verdict format of its authors' inference code (the prompt
texts are files in prmlab/prompts/, and a `template_file` points at another for exact reproduction):

| layout | checkpoints | requests | verdict per step |
|---|---|---|---|
| genprm | GenPRM-1.5B/7B/32B | a multi-turn chat, one step per user turn, one request per step whose history holds the earlier steps' first-vote replies; the reply opens with `<analyze>`, then `<output>\\n**Judgement**: $\\boxed` is forced | `boxed{Yes}` / `boxed{No}` in the `<output>` part |
| rprm | R-PRM-7B (NJUNLP) | one request per step: Question, Previous Steps, Now Step | `Is the step correct (Yes/No)? Yes` / `No` |
| thinkprm | ThinkPRM-1.5B/14B | one request per response, steps as `Step k: ...` lines, the reply opened with `Let's verify step by step:` | the k-th `\\boxed{correct}` / `\\boxed{incorrect}` of the reply is step k's |
| toy_judge | models/judge (the toy profile's judge) | ProcessBench's critic prompt (prompts/critic.txt), one request per response | the `k: <check>, ok` / `k: <check>, wrong` line of paragraph k (prmlab.prompts.judge_target) |

A vote that stops at a step it calls wrong (ThinkPRM and the toy judge judge each prefix in one reply) calls
every later step not correct: it rejected their prefix. A vote with no verdict for a step it should have judged
(no verdict text, a reply cut by max_tokens, a prompt longer than the model) is counted (`unparsed_votes`, shown
in the eval summary) and calls the step not correct: never a neutral 0.5 (GenPRM's own code scores an unparsed
vote 0.5, silently). Scores are in {0, 1/k, ..., 1}, so a threshold of 0.5 means "a majority calls it correct".

Generation goes through prmlab.engines.generation (transformers or vLLM, batched over all items of a call). A scorer given
`resume` (a path prefix; the eval stages give `<--scores>.<name>`) writes every vote, shard by shard of
`shard_size` items, to `<resume>-<fingerprint of its items and settings>.jsonl`: a killed run resumes where it
stopped and a finished call is read back (prmlab.core.io.ShardWriter, as the generation stages).
"""

from __future__ import annotations

import re
import sys
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from string import Formatter

from prmlab.core.io import ShardWriter, fingerprint, read_jsonl
from prmlab.core.params import ParamsError, check
from prmlab.core.preflight import code_version, model_identity
from prmlab.engines.config import BackendConfig, Sampling
from prmlab.engines.generation import make_generator
from prmlab.prms.model import Scorer, effective_max_length
from prmlab.prompts import builtin, critic_sampling_defaults, judge_messages, load_template

GENERATIVE = ("genprm", "rprm", "thinkprm", "toy_judge")


@dataclass(frozen=True)
class VerifierConfig:
    """How a generative PRM samples its verdicts: keys of a `reference_prms` entry beside {model, layout}."""

    votes: int = 1  # sampled replies per step (maj@k); a step's score is the share of them calling it correct
    temperature: float | None = None  # None: the family's default (its inference code; VerifierScorer.defaults)
    top_p: float | None = None  # None: the family's default; in (0, 1]
    top_k: int | None = None  # None: the family's default; -1 (off) or >= 1
    max_tokens: int | None = None  # per reply; None: the family's default
    template_file: str | None = None  # the prompt text; None: the family's file in src/prmlab/prompts/
    seed: int = 0  # sampling seed (a resumed shard draws what an uninterrupted run would: seed + shard index)
    shard_size: int = 64  # items per resumable shard (with a `resume` file)

    def __post_init__(self):
        check(isinstance(self.votes, int) and self.votes >= 1, f"votes must be an integer >= 1, got {self.votes!r}")
        # greedy votes are one reply repeated: the step scores would claim a majority of k that never voted
        check(self.votes == 1 or self.temperature != 0, f"votes {self.votes} at temperature 0 are one greedy reply "
                                                        "repeated: set votes 1, or a temperature > 0 to sample them")
        check(self.temperature is None or self.temperature >= 0, f"temperature must be >= 0, got {self.temperature}")
        check(self.top_p is None or 0 < self.top_p <= 1, f"top_p must be in (0, 1], got {self.top_p}")
        check(self.top_k is None or self.top_k == -1 or self.top_k >= 1, f"top_k must be -1 (off) or >= 1, got {self.top_k}")
        check(self.max_tokens is None or self.max_tokens >= 1, f"max_tokens must be >= 1, got {self.max_tokens}")
        check(self.shard_size >= 1, f"shard_size must be >= 1, got {self.shard_size}")
        check(self.template_file is None or Path(self.template_file).is_file(),
              f"template_file {self.template_file!r} is not a file")


def _read(template_file: str | None, name: str) -> str:
    if template_file is None:
        return builtin(name).rstrip("\n")
    return Path(template_file).read_text(encoding="utf-8").rstrip("\n")


class VerifierScorer(Scorer):
    """A generative verifier's scorer (`score(items)` as every layout's). A subclass gives the family's
    defaults (`defaults`: temperature, top_p, top_k, max_tokens), its prompt and its verdict parser:
    `requests` / `verdicts` for a family that judges a whole response in one reply; GenPRM overrides `votes`."""

    defaults: tuple[float, float, int, int] = (1.0, 1.0, -1, 2048)
    stop: tuple[str, ...] = ()

    def __init__(self, model: str, cfg: VerifierConfig | None = None, backend: str = "transformers",
                 max_length: int = 4096, dtype: str = "float32", tensor_parallel_size: int = 1, batch_size: int = 64,
                 gen=None, resume: str | None = None):
        self.model_path, self.cfg = model, cfg or VerifierConfig()
        self.layout = next(k for k, v in VERIFIERS.items() if v is type(self))
        self.template = self.load(self.cfg.template_file)
        t, p, k, m = self.defaults
        c = self.cfg
        self.sampling = Sampling(n=c.votes, temperature=t if c.temperature is None else c.temperature,
                                 top_p=p if c.top_p is None else c.top_p, top_k=k if c.top_k is None else c.top_k,
                                 max_tokens=m if c.max_tokens is None else c.max_tokens, stop=list(self.stop), seed=c.seed)
        # VerifierConfig refuses votes > 1 at an explicit temperature 0; this holds a family's own default to the same
        check(self.sampling.n == 1 or self.sampling.temperature != 0,
              f"votes {c.votes} at {self.layout}'s default temperature 0 are one greedy reply repeated: set votes 1, "
              "or a temperature > 0 to sample them")
        self.max_length = max_length = effective_max_length(model, max_length)
        self.resume = resume  # a path prefix: votes go to <resume>-<fingerprint>.jsonl, shard by shard
        self.gen = gen or make_generator(BackendConfig(backend=backend, model=model, dtype=dtype, seed=c.seed,
                                                       max_model_len=max_length, batch_size=batch_size,
                                                       tensor_parallel_size=tensor_parallel_size))
        self._own = gen is None
        self.unparsed_votes = 0  # (vote, step) pairs with no verdict where one was due: scored "not correct"
        self.truncated_replies = 0  # replies cut by max_tokens or max_length
        self.reply_tokens = 0  # generated tokens, all votes (the cost: benchmarks/bench_generative.py)

    # ------------------------------------------------------------------ what a family defines

    @classmethod
    def load(cls, template_file: str | None) -> str:
        """The family's prompt text (its file, or `template_file`), checked: a ValueError naming the file. A classmethod:
        `verifier_config` checks it where params are read, before any model loads."""
        raise NotImplementedError

    def requests(self, question: str, steps: list[str]) -> str:
        """The rendered prompt of one response (families judging a whole response in one reply)."""
        raise NotImplementedError

    def verdicts(self, text: str, n_steps: int) -> list[bool]:
        """The reply's verdicts, in step order, as far as it gives them (True: correct)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ shared

    def render(self, messages: list[dict]) -> str:
        return self.gen.render(messages)

    def generate(self, prompts: list[str], sampling: Sampling):
        """The generator's call; k greedy votes are one greedy reply repeated (vLLM refuses n > 1 when greedy)."""
        if sampling.temperature == 0 and sampling.n > 1:
            return [comps * sampling.n for comps in self.gen.generate(prompts, replace(sampling, n=1))]
        return self.gen.generate(prompts, sampling)

    def _vote(self, text: str, n_steps: int) -> list[bool | None]:
        """One reply -> a verdict per step: past a step called wrong, False (the prefix was rejected); past
        the last verdict of a reply that rejected nothing, None (unparsed)."""
        got = self.verdicts(text, n_steps)[:n_steps]
        if False in got:
            return got + [False] * (n_steps - len(got))
        return got + [None] * (n_steps - len(got))

    def votes(self, items: list[tuple[str, list[str]]], seed: int) -> list[list[list[bool | None]]]:
        """[item][step][vote] verdicts; one batched generate call for all items."""
        todo = [i for i, (_, s) in enumerate(items) if s]
        outs = self.generate([self.requests(*items[i]) for i in todo], replace(self.sampling, seed=seed))
        out: list[list[list[bool | None]]] = [[] for _ in items]
        for i, comps in zip(todo, outs):
            n = len(items[i][1])
            self._count(comps, i)
            per_vote = [self._vote(c.text, n) for c in comps]
            out[i] = [[v[j] for v in per_vote] for j in range(n)]
        return out

    def _count(self, comps, i: int) -> None:
        """Item i's replies: how many were cut by a length limit, how many tokens they generated."""
        self._per[i]["truncated_replies"] += sum(c.truncated for c in comps)
        self._per[i]["reply_tokens"] += sum(c.num_tokens for c in comps)

    def records(self, items: list[tuple[str, list[str]]], seed: int) -> list[dict]:
        """Per item: its votes ([step][vote]: True, False or None) and the counts of its replies."""
        self._per = [{"truncated_replies": 0, "reply_tokens": 0} for _ in items]
        return [{"votes": v, **c} for v, c in zip(self.votes(items, seed), self._per)]

    def score(self, items: list[tuple[str, list[str]]]) -> list[list[float]]:
        items = [(q, list(s)) for q, s in items]
        if not self.resume:
            recs = self.records(items, self.cfg.seed)
        else:
            # One file per call's items, settings, weights and prompt (an eval stage calls once per subset): a finished
            # call is read back whole; an unfinished one resumes from its shards, each sampled with seed + its index,
            # so a resumed shard draws what an uninterrupted run would have (a run without `resume` samples all
            # items in one call, with `seed`: with temperature > 0 its draws differ from a resumable run's).
            # the code that turns replies into votes is in the key too: an edited verdict parser never reuses old votes
            fp = fingerprint(self.layout, model_identity(self.model_path), asdict(self.cfg), self.sampling, self.template,
                             items, code_version(sys.modules[__name__]))
            path = Path(f"{self.resume}-{fp[:12]}.jsonl")
            if path.exists():
                recs = read_jsonl(path)
            else:
                writer, size = ShardWriter(path, fp), self.cfg.shard_size
                shards = [items[k: k + size] for k in range(0, len(items), size)]
                if done := sum(writer.done(i) for i in range(len(shards))):
                    print(f"[{self.progress or self.layout}] resumed: {done}/{len(shards)} shards of votes were done",
                          file=sys.stderr)
                recs = []
                for i, chunk in enumerate(shards):
                    if not writer.done(i):
                        writer.write(i, self.records(chunk, self.cfg.seed + i))
                    recs += writer.read(i)
                writer.finish(len(shards))
        self.unparsed_votes += sum(v is None for r in recs for step in r["votes"] for v in step)
        self.truncated_replies += sum(r["truncated_replies"] for r in recs)
        self.reply_tokens += sum(r["reply_tokens"] for r in recs)
        self.last_truncated = [False] * len(items)
        return [[sum(v is True for v in step) / len(step) for step in r["votes"]] for r in recs]

    def summary(self) -> dict:
        """What the eval stages record beside a generative PRM's metrics."""
        return {"votes": self.sampling.n, "temperature": self.sampling.temperature, "top_p": self.sampling.top_p,
                "top_k": self.sampling.top_k, "max_tokens": self.sampling.max_tokens,
                "template_file": self.cfg.template_file, "unparsed_votes": self.unparsed_votes,
                "truncated_replies": self.truncated_replies, "reply_tokens": self.reply_tokens}

    def close(self) -> None:
        if self._own and self.gen is not None:
            self.gen.close()
        self.gen = None


class GenPRMScorer(VerifierScorer):
    """GenPRM (RyanLiu112/GenPRM, src/prm_evaluation/eval_logic/processbench.py and infer_module/infer_genprm.py):
    system prompt, then step j as user turn j (the first prefixed by the problem and "\\n"), each answered by the
    verifier's reply to it (the first vote's, as `texts[0]` there); the reply to step j opens with ANALYZE, runs to
    `</analyze>\\n`, then OUTPUT is appended and the verdict generated up to `</output>\\n`. Sampling is
    genprm_inference.py's (T 0.6, top_p 0.95, top_k 20). Its analyze mode (`--analyze`, no `--verify`): prmlab
    never executes model-written code, so the code-verification mode is not offered."""

    defaults = (0.6, 0.95, 20, 2048)
    ANALYZE = "<analyze>\nLet's analyze the Paragraph {cur_step} step by step: "
    OUTPUT = "<output>\n**Judgement**: $\\boxed"

    @classmethod
    def load(cls, template_file):
        return _read(template_file, "genprm_system")

    @staticmethod
    def verdict(output: str) -> bool | None:
        # infer_genprm.py get_reward: 'boxed{Yes}' -> 1.0, 'boxed{No}' -> 0.0, else 0.5 (here: None, counted)
        if "boxed{Yes}" in output:
            return True
        if "boxed{No}" in output:
            return False
        return None

    def votes(self, items, seed):
        out: list[list[list[bool | None]]] = [[] for _ in items]
        history = {i: [{"role": "system", "content": self.template}] for i, (_, s) in enumerate(items) if s}
        k = self.sampling.n
        for j in range(max((len(s) for _, s in items), default=0)):
            live = [i for i, (_, s) in enumerate(items) if len(s) > j]
            for i in live:
                q, steps = items[i]
                history[i].append({"role": "user", "content": (q + "\n" + steps[0]) if j == 0 else steps[j]})
            head = self.ANALYZE.format(cur_step=j + 1)
            base = {i: self.render(history[i]) for i in live}
            # Round j's seeds: apart from every other round's and shard's (shard s samples with seed + s).
            analyses = self.generate([base[i] + head for i in live],
                                         replace(self.sampling, stop=["</analyze>\n"], seed=seed * 1009 + 2 * j))
            # The reply so far: the analysis, its stop string (kept there: include_stop_str_in_output), OUTPUT.
            sofar = [(i, head + c.text + ("" if c.truncated else "</analyze>\n") + self.OUTPUT)
                     for i, comps in zip(live, analyses) for c in comps]
            outs = self.generate([base[i] + r for i, r in sofar],
                                     replace(self.sampling, n=1, stop=["</output>\n"], seed=seed * 1009 + 2 * j + 1))
            for i, comps in zip(live, analyses):
                self._count(comps, i)
            for (i, _), comps in zip(sofar, outs):
                self._count(comps, i)
            for r, i in enumerate(live):
                done = [outs[r * k + v][0] for v in range(k)]
                replies = [sofar[r * k + v][1] + c.text + ("" if c.truncated else "</output>\n") for v, c in enumerate(done)]
                out[i].append([self.verdict(rep[rep.rfind(self.OUTPUT):]) for rep in replies])
                history[i].append({"role": "assistant", "content": replies[0]})
        return out


class RPRMScorer(VerifierScorer):
    """R-PRM (NJUNLP/R-PRM): src/prompts/GenPRM/GenPRM-evaluate-new3.json's template as the user message, filled as
    src/evaluate/PRMBench/code/inference.py does (`template.format(question, previous_steps, now_step)`), one
    request per step; the verdict is the reply's `Is the step correct (Yes/No)? X` (the form its prompt asks for and
    src/utils/generate-PRM-CoT-dataset.py reads). Sampling: inference.py's defaults (T 0.2, top_p 1.0, 8192 tokens).
    The public code takes `previous_steps` pre-joined from its data files: prmlab joins them with "\\n" (not verified)."""

    defaults = (0.2, 1.0, -1, 8192)
    VERDICT = re.compile(r"Is the step correct \(Yes/No\)\?\s*\**\s*(Yes|No)\b")

    @classmethod
    def load(cls, template_file):
        # filled by str.format with three values: a fourth {}, a named placeholder or a lone brace had failed only
        # when the scorer was built, after the PRMs before it had run, as a traceback
        text, where, hint = _read(template_file, "rprm"), f"template {template_file or 'built-in rprm'}", \
            "; escape literal braces as {{ }}"
        found = []
        for ln, line in enumerate(text.splitlines(), 1):
            try:
                found += [(ln, "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}")
                          for _, name, spec, conv in Formatter().parse(line) if name is not None]
            except ValueError as e:
                raise ValueError(f"{where}: line {ln}: {e}{hint}") from None
        if [f for _, f in found] != ["{}"] * 3:
            raise ValueError(f"{where}: needs three {{}} (question, previous steps, now step) and no other placeholder, "
                             "as R-PRM's template; found " + (", ".join(f"{f} on line {ln}" for ln, f in found) or "none")
                             + hint)
        return text

    def votes(self, items, seed):
        reqs = [(i, j) for i, (_, s) in enumerate(items) for j in range(len(s))]
        prompts = [self.render([{"role": "user", "content": self.template.format(
            items[i][0], "\n".join(items[i][1][:j]), items[i][1][j])}]) for i, j in reqs]
        outs = self.generate(prompts, replace(self.sampling, seed=seed))
        out: list[list[list[bool | None]]] = [[] for _ in items]
        for (i, _), comps in zip(reqs, outs):
            self._count(comps, i)
            out[i].append([self.verdict(c.text) for c in comps])
        return out

    def verdict(self, text: str) -> bool | None:
        m = self.VERDICT.findall(text)
        return None if not m else m[-1] == "Yes"


class ThinkPRMScorer(VerifierScorer):
    """ThinkPRM (mukhal/ThinkPRM): utils/helper.py's format_verification_cot_for_thinkprm (the instruction template
    as the user message, the chat's generation prompt, then "\\nLet's verify step by step:"), the solution as
    prm/thinkprm_api.py's process_example builds it (each step's own "Step k:" removed, "Step k: " prefixed, joined
    by "\\n"), its stop strings; sampling thinkprm_api.py's (T 0.7). The verdict per step is the README's format of
    its verification CoTs: one `\\boxed{correct}` / `\\boxed{incorrect}` per step, in step order (the released code
    reads the final "Is the solution correct?" decision only)."""

    defaults = (0.7, 1.0, -1, 8192)
    stop = ("Is the solution correct?", "</think>")
    BOXED = re.compile(r"\\boxed\{(correct|incorrect)\}")

    @classmethod
    def load(cls, template_file):
        text = _read(template_file, "thinkprm")
        for p in ("{problem}", "{solution}"):
            if p not in text:
                raise ValueError(f"template {template_file or 'built-in thinkprm'}: missing placeholder {p}")
        return text

    def requests(self, question, steps):
        solution = "\n".join(f"Step {k + 1}: " + re.sub(r"Step \d+:", "", s).strip() for k, s in enumerate(steps))
        user = self.template.replace("{problem}", question).replace("{solution}", solution)
        return self.render([{"role": "user", "content": user}]) + "\nLet's verify step by step:"

    def verdicts(self, text, n_steps):
        return [m == "correct" for m in self.BOXED.findall(text)]


class ToyJudgeScorer(VerifierScorer):
    """The toy profile's judge (models/judge): ProcessBench's critic prompt (the style it was trained on), and its
    reply's check per paragraph, `k: <check>, ok` or `k: <check>, wrong` (prmlab.prompts.judge_target,
    prmlab.toy.world.check_steps), up to the first wrong one. Sampling: prmlab.prompts.critic_sampling_defaults for
    a non-Qwen model (T 1.0, top_p 0.9; greedy with one vote)."""

    LINE = re.compile(r"^(\d+): .*?\b(ok|wrong)\s*$", re.MULTILINE)

    @property
    def defaults(self):
        t, p, k = critic_sampling_defaults("toy", self.cfg.votes)
        return t, p, k, 256

    @classmethod
    def load(cls, template_file):
        return load_template("critic", template_file)

    def requests(self, question, steps):
        return self.render(judge_messages(self.template, "critic", question, steps))

    def verdicts(self, text, n_steps):
        out = []
        for m in self.LINE.finditer(text):
            if int(m.group(1)) != len(out):  # paragraphs out of order: the rest is unread
                break
            out.append(m.group(2) == "ok")
        return out


VERIFIERS = {"genprm": GenPRMScorer, "rprm": RPRMScorer, "thinkprm": ThinkPRMScorer, "toy_judge": ToyJudgeScorer}


def verifier_config(where: str, entry: dict, layout: str) -> VerifierConfig:
    """A `reference_prms` entry's sampling keys as a VerifierConfig for `layout`; an unknown key, a value of the wrong
    type or out of range, or a template the family cannot fill is one line naming `where` and the key."""
    types = {"votes": int, "temperature": (int, float), "top_p": (int, float), "top_k": int, "max_tokens": int,
             "template_file": str, "seed": int, "shard_size": int}
    known = [f.name for f in fields(VerifierConfig)]
    for k, v in entry.items():
        if k not in types:
            raise ParamsError(f"{where}: unknown key {k!r} for a generative layout (known: model, layout, {', '.join(known)})")
        if v is not None and (isinstance(v, bool) or not isinstance(v, types[k])):
            raise ParamsError(f"{where}.{k}: expected {getattr(types[k], '__name__', 'a number')}, got {v!r}")
    try:
        cfg = VerifierConfig(**entry)
    except ParamsError as e:
        raise ParamsError(f"{where}.{e}") from None
    try:
        VERIFIERS[layout].load(cfg.template_file)
    except (OSError, ValueError) as e:
        raise ParamsError(f"{where}.template_file: {e}") from None
    return cfg
