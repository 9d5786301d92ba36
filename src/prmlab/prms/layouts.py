"""Every released PRM layout of the paper's Table 7 behind one call: `score(items) -> per-step scores`.

Each layout follows its model card or its authors' inference code exactly (inputs, the token a
score is read at, the readout); prmlab implements each and loads safetensors only: no remote code.

| layout | checkpoints | input | step score |
|---|---|---|---|
| qwen | Qwen/Qwen2.5-Math-PRM-7B/-72B, Qwen2.5-Math-7B-PRM800K, ours | chat (system, problem; assistant: steps each followed by `<extra_0>`) | softmax of the 2-class head at each `<extra_0>`, class 1 |
| math_shepherd | peiyi9979/math-shepherd-mistral-7b-prm | `f"{problem} {output}"`, output = "Step k: step ки" lines | softmax over the tokens of "+ -" at each `ки`, "+" |
| rlhflow | RLHFlow/Llama3.1-8B-PRM-Mistral-Data, -Deepseek-Data | chat: user turns (problem + " " + step 1, then one step each), each answered by assistant "+" | softmax over "+"/"-" at position -3 of each prefix conversation (the token before its "+"), "+" |
| skywork | Skywork/Skywork-o1-Open-PRM-Qwen-2.5-1.5B/-7B | bos + problem + "\n", then each step's tokens + the "\n" token | sigmoid of the value head (`v_head.summary`) at each step's "\n" |
| orm | Qwen/Qwen2.5-Math-RM-72B-style outcome RMs (`Qwen2ForRewardModel`) | chat (system, problem; assistant: steps joined by "\n\n") | sigmoid of the reward at the last token of each prefix of steps (ProcessBench, as the paper scores an ORM), or of the whole response only (`per_prefix=False`, Best-of-N) |
| trl | TRL PRMTrainer checkpoints (`*ForTokenClassification`, 2 labels): jinachris/PURE-PRM-7B (Qwen2.5-Math-7B-PRM800K), HuggingFaceH4/Qwen2.5-Math-7B-Instruct-PRM-0.2 | TRL's `tokenize_row`: bos (if the tokenizer has one) + problem, then each step's tokens + the tokens of "\n", no special tokens | softmax of the 2-class token head at each step's last "\n" token, class 1 (PURE's card: P(+) - P(-) in [-1, 1], i.e. 2 x this - 1) |
| eurus | PRIME-RL/EurusPRM-Stage1/-Stage2 (implicit PRM) | chat (problem; assistant: steps joined by "\n\n"), the PRM and its reference model | sigmoid of 0.001 x the cumulative log-likelihood ratio (PRM / reference) up to each step's last token, as its model card computes it |

Sigmoids keep every layout's scores in (0, 1), so product/min aggregation and a 0.5 threshold mean
the same everywhere (0.5 is a raw score of 0); ranking and tuned thresholds are unchanged by them.

Each layout is a `LayoutScorer` subclass (`QwenScorer`, ..., `EurusScorer`: its model class, its inputs, its
readout); `layout_scorer(spec)` builds the one of the layout read from the checkpoint (`detect_layout`:
architecture, head weights, tokenizer) or given (`layout=`); `eurus` is never guessed (a causal LM plus a
reference model). `check_prm` checks a PRM before any weights load; `checked_prms` is the list of PRMs an
eval stage scores (its trained sources, `reference_prms`, `--prm`), each checked. Batches are formed
by a token budget over length-sorted sequences, so short items never pay for a long one's padding
(on a CPU, only sequences of one length share a batch: any padding costs more than batching gains).
All steps of a response are scored in one forward pass (one pass per prefix for an ORM), and tests
check that this equals each layout's reference loop (tests/prms/test_layouts.py).

Generative verifiers (GenPRM, R-PRM, ThinkPRM, the toy judge: a causal LM that writes a check and a verdict
per step, `votes` sampled replies, a step's score the share calling it correct) are layouts too
(prmlab.prms.generative, `GENERATIVE`), with their sampling in a `reference_prms` entry ({model, layout, votes, ...}).

Run: `prmlab eval Qwen/Qwen2.5-Math-PRM-7B peiyi9979/math-shepherd-mistral-7b-prm` (prmlab.runs.adhoc).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from prmlab.core.params import ParamsError, check
from prmlab.core.preflight import check_folder, check_model, check_tokenizer
from prmlab.core.runtime import has_gpu, shutdown_vllm
from prmlab.core.tracking import Progress
from prmlab.prms.generative import GENERATIVE, VERIFIERS, VerifierConfig, verifier_config
from prmlab.prms.model import (
    Qwen2ForProcessRewardModel,
    Qwen2ForRewardModel,
    Scorer,
    VLLMScorer,
    effective_max_length,
    encode,
)
from prmlab.prompts import policy_messages

LAYOUTS = ("qwen", "math_shepherd", "rlhflow", "skywork", "orm", "trl", "eurus")
TRL_SEPARATOR = "\n"  # TRL's PRMConfig.step_separator default, which PURE's PRM was trained with
EURUS_REFERENCE = "Qwen/Qwen2.5-Math-7B-Instruct"  # EurusPRM's model card: its reference model
EURUS_COEF = 0.001  # EurusPRM's model card: beta
SHEPHERD_TAG, SHEPHERD_CANDIDATES = "ки", "+ -"


@dataclass(frozen=True)
class PRMSpec:
    """A PRM to score with: a folder or hub name, its layout (None: detected) and, for eurus, its reference."""

    model: str
    layout: str | None = None
    reference: str | None = None
    verifier: VerifierConfig | None = None  # a generative layout's sampling (prmlab.prms.generative); None: its defaults
    votes_file: str | None = None  # a generative layout's resumable votes, a path prefix (eval stages: <--scores>.<name>)


def _file(path: str, name: str) -> str | None:
    """A file of a local folder or of a hub model (downloaded to the cache), else None."""
    p = Path(path)
    if p.is_dir():
        return str(p / name) if (p / name).is_file() else None
    from transformers.utils import cached_file

    return cached_file(path, name, _raise_exceptions_for_missing_entries=False)


def weight_files(path: str) -> dict[str, str]:
    """{tensor name: safetensors file} of a checkpoint; a pickle-only one is refused by name."""
    index = _file(path, "model.safetensors.index.json")
    if index:
        folder = Path(index).parent
        return {k: str(folder / f) for k, f in json.loads(Path(index).read_text())["weight_map"].items()}
    single = _file(path, "model.safetensors")
    if single:
        from safetensors import safe_open

        with safe_open(single, framework="pt") as st:
            return {k: single for k in st.keys()}
    pickles = [n for n in ("pytorch_model.bin", "pytorch_model.bin.index.json") if _file(path, n)]
    why = f" (only pickle weights {pickles}, which are never loaded: convert them to safetensors)" if pickles else ""
    raise ParamsError(f"{path}: no safetensors weights{why}")


def _shape(files: dict[str, str], key: str) -> list[int] | None:
    if key not in files:
        return None
    from safetensors import safe_open

    with safe_open(files[key], framework="pt") as st:
        return list(st.get_slice(key).get_shape())


def tokenizer_loader(path: str):
    """`tok()`: the checkpoint's tokenizer, loaded on the first call and kept (detection and checks share it)."""
    from transformers import AutoTokenizer

    return functools.cache(lambda: AutoTokenizer.from_pretrained(path))


def detect_layout(path: str, files: dict[str, str] | None = None, tok=None) -> str:
    """The layout of a checkpoint from its config, weights and tokenizer: the first class of DETECTED that
    recognises it (`LayoutScorer.detects`; never eurus: give it). `files` (weight_files) and `tok`
    (tokenizer_loader) are passed by a caller that has them already."""
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(path)
    arch = (cfg.architectures or [""])[0]
    files = weight_files(path) if files is None else files
    causal = arch.endswith("ForCausalLM")  # only a causal LM's layout is told by its tokenizer
    tok = (tok or tokenizer_loader(path)) if causal else None
    for cls in DETECTED:
        if cls.detects(arch, cfg, files, tok):
            return LAYOUT_OF[cls]
    if causal:
        raise ParamsError(f"{path}: a causal LM ({arch}) whose layout cannot be told from its files: give layout "
                          f"math_shepherd, rlhflow or eurus (with its reference model)")
    raise ParamsError(f"{path}: architecture {arch or '(none)'} is none of the PRM layouts {list(LAYOUTS)}")


def check_prm(key: str, model: str, layout: str | None = None, reference: str | None = None) -> None:
    """A PRM to score, before any weights load: its folder (preflight.check_folder), its layout against its files
    (`check_layout`: a causal LM scored as a PRM would get a freshly initialised head) and its tokenizer; eurus's
    reference model as a causal LM. A hub name is resolved by the loader."""
    if reference:
        check_model(f"{key} reference", reference)
    p = check_folder(key, model)
    if p is not None:
        check_layout(PRMSpec(str(p), layout, reference), key)
        check_tokenizer(key, p, chat=False)


def check_layout(spec: PRMSpec, key: str) -> str:
    """The spec's layout (given or detected), checked against the checkpoint before any weights load:
    the head's size, the layout's step token in the tokenizer. Raises ParamsError naming `key`."""
    from transformers import AutoTokenizer

    if spec.layout is not None and spec.layout not in LAYOUTS + GENERATIVE:
        raise ParamsError(f"{key}: unknown layout {spec.layout!r} (known: {list(LAYOUTS + GENERATIVE)})")
    if spec.layout == "eurus" or spec.reference:
        if spec.layout != "eurus":
            raise ParamsError(f"{key}: a reference model is for layout eurus only (layout {spec.layout!r})")
    if spec.layout in GENERATIVE:  # a causal LM prompted through its chat template: no head, no step token
        weight_files(spec.model)  # safetensors only
        if not AutoTokenizer.from_pretrained(spec.model).chat_template:
            raise ParamsError(f"{key}: {spec.model}'s tokenizer has no chat template (layout {spec.layout} needs one)")
        return spec.layout
    tok = tokenizer_loader(spec.model)
    try:
        files = weight_files(spec.model)
        layout = spec.layout or detect_layout(spec.model, files, tok)
    except ParamsError as e:
        raise ParamsError(f"{key}: {e}") from None
    SCORERS[layout].check_files(spec, key, files, tok)
    return layout


# ------------------------------------------------------------------------ the PRMs an eval stage scores

# Options of both eval stages (eval_processbench, eval_bon): prmlab.core.stage `paths` entries, spread into theirs.
PRM_OPTIONS = {"prm_dir": "?folder of trained PRMs: <dir>/<source> for each train_prm.sources",
               "prm": "*name=path of another PRM: a folder or hub name (repeatable)",
               "layout": "*name=layout of a --prm (prmlab.prms.layouts; default: from its files)",
               "reference": "*name=model: the reference model of a layout-eurus --prm"}


@dataclass(frozen=True)
class PRMScoring:
    """How an eval stage scores PRMs: the settings eval_bon and eval_processbench share (their configs
    subclass this, so the keys stay flat in each params section) and the scorer they open."""

    # name: folder or hub name of a released PRM, or {model, layout, reference} (see PRMSpec)
    reference_prms: dict[str, Any] = field(default_factory=dict)
    scorer: str = "transformers"
    batch_size: int = 16
    batch_tokens: int = 16384  # a batch holds at most this many tokens, padding included (length-sorted)
    max_length: int = 4096  # clamped to the PRM's max_position_embeddings (the value used goes into the metrics)
    dtype: str = "float32"  # paper: bfloat16
    tensor_parallel_size: int = 1  # scorer vllm only

    def check_scoring(self, section: str) -> None:
        check(self.scorer in ("transformers", "vllm"), f"{section}.scorer: transformers or vllm")
        check(self.dtype in ("float32", "bfloat16", "float16"), f"{section}.dtype: float32, bfloat16 or float16")
        check(self.tensor_parallel_size >= 1, f"{section}.tensor_parallel_size must be >= 1")
        check(self.batch_tokens >= 1, f"{section}.batch_tokens must be >= 1, got {self.batch_tokens}")
        check(self.batch_size >= 1, f"{section}.batch_size must be >= 1, got {self.batch_size}")  # -1 scored nothing: F1 0.0
        check(self.max_length >= 1, f"{section}.max_length must be >= 1, got {self.max_length}")

    def open_scorer(self, spec: PRMSpec, per_prefix: bool):
        return make_scorer(self.scorer, spec.model, self.batch_size, self.max_length, self.dtype, self.tensor_parallel_size,
                           layout=spec.layout, reference=spec.reference, batch_tokens=self.batch_tokens,
                           per_prefix=per_prefix, verifier=spec.verifier, votes_file=spec.votes_file)


PRM_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"  # a PRM's name in the results: a folder name and MLflow keys (prm/<name>)


def check_prm_name(where: str, name: str) -> None:
    """A PRM's name is a results folder's name and an MLflow key: anything else is one line naming `where`, not a traceback."""
    import re

    if not isinstance(name, str) or not re.fullmatch(PRM_NAME, name):
        raise ParamsError(f"{where}: PRM name {name!r} must be letters, digits, '_', '.' or '-' (it names a results "
                          "folder and MLflow keys)")


def prms_to_evaluate(trained: dict[str, str], cli: list[str], reference: dict, layouts: list[str] = (),
                     references: list[str] = ()) -> dict[str, PRMSpec]:
    """name -> PRMSpec of every PRM an eval stage scores: the trained PRMs ({source: folder}, layout qwen; the
    eval side names them from its `train_prm.sources`), then params' `reference_prms` (a folder or hub name, or
    {model, layout, reference}), then `--prm name=path` flags, with `--layout name=layout` and `--reference
    name=model`."""
    def pairs(flag: str, values, what: str) -> dict[str, str]:
        out = {}
        for p in values:
            name, sep, val = p.partition("=")
            if not sep or not name or not val:
                raise ParamsError(f"{flag} {p!r}: expected name={what}, e.g. {flag} qwen=Qwen/Qwen2.5-Math-PRM-7B"
                                  if flag == "--prm" else f"{flag} {p!r}: expected name={what}")
            if flag == "--prm":
                check_prm_name(f"--prm {p}", name)
            out[name] = val
        return out

    out = {s: PRMSpec(folder, "qwen") for s, folder in trained.items()}
    for name, v in reference.items():
        check_prm_name(f"reference_prms.{name}", name)
        if name in out:  # it would replace the trained PRM's row with another model's figures, silently
            raise ParamsError(f"reference_prms.{name}: {name!r} is a trained PRM of train_prm.sources; give the "
                              "reference another name")
        if isinstance(v, str):
            out[name] = PRMSpec(v)
        elif isinstance(v, dict) and isinstance(v.get("model"), str) and set(v) <= {"model", "layout", "reference"}:
            out[name] = PRMSpec(v["model"], v.get("layout"), v.get("reference"))
        elif isinstance(v, dict) and isinstance(v.get("model"), str) and v.get("layout") in GENERATIVE:
            # a generative verifier: {model, layout, votes, temperature, ...} (prmlab.prms.generative.VerifierConfig)
            extra = {k: x for k, x in v.items() if k not in ("model", "layout")}
            out[name] = PRMSpec(v["model"], v["layout"], verifier=verifier_config(f"reference_prms.{name}", extra,
                                                                                v["layout"]))
        else:
            raise ParamsError(f"reference_prms.{name}: expected a folder or hub name, {{model, layout, reference}}, or a "
                              f"generative layout's {{model, layout, votes, temperature, ...}}, got {v!r}")
    flags = pairs("--prm", cli, "path (a PRM folder or hub name)")
    if clash := sorted(set(flags) & set(out)):
        raise ParamsError(f"--prm {clash[0]}={flags[clash[0]]}: {clash[0]!r} already names a PRM "
                          "(train_prm.sources or reference_prms); give it another name")
    out |= {name: PRMSpec(path) for name, path in flags.items()}
    for flag, values, field_ in (("--layout", layouts, "layout"), ("--reference", references, "reference")):
        for name, val in pairs(flag, values, field_).items():
            if name not in out:
                raise ParamsError(f"{flag} {name}={val}: no PRM named {name!r} (known: {sorted(out)})")
            out[name] = replace(out[name], **{field_: val})
    if not out:
        raise ParamsError("no PRM to evaluate: give --prm-dir (with train_prm.sources), reference_prms or --prm name=path")
    for name, spec in out.items():  # checked here for hub names too, which check_model cannot open before loading
        if spec.layout is not None and spec.layout not in LAYOUTS + GENERATIVE:
            raise ParamsError(f"PRM {name!r}: unknown layout {spec.layout!r} (known: {list(LAYOUTS + GENERATIVE)})")
        if spec.reference and spec.layout != "eurus":
            raise ParamsError(f"PRM {name!r}: a reference model is for layout eurus only (layout {spec.layout!r})")
    return out


def vllm_layout_check(scorer: str, name: str, spec: PRMSpec) -> None:
    """vLLM's pooling runner serves the qwen, math_shepherd and trl layouts (VLLM_LAYOUTS): a PRM in another layout is
    refused before any model loads (a local folder's layout is read from its files; a hub name's must be given)."""
    if scorer != "vllm" or spec.layout in GENERATIVE:  # a generative verifier generates through vLLM's LLM
        return
    layout = spec.layout or (detect_layout(spec.model) if Path(spec.model).is_dir() else "qwen")
    if layout not in VLLM_LAYOUTS:
        raise ParamsError(f"PRM {name!r}: scorer vllm serves layouts {', '.join(VLLM_LAYOUTS)}, and this PRM is "
                          f"{layout}: set the eval stage's scorer to transformers")


def checked_prms(a, sources: list[str], reference: dict, scorer: str) -> dict[str, PRMSpec]:
    """The PRMs an eval stage scores, each checked before any model loads: `<--prm-dir>/<source>` for each of
    `sources` (its `train_prm.sources`), `reference_prms`, and its options (PRM_OPTIONS)."""
    trained = {s: str(Path(a.prm_dir) / s) for s in sources} if a.prm_dir else {}
    prms = prms_to_evaluate(trained, a.prm, reference, a.layout, a.reference)
    for name, spec in prms.items():
        check_prm(f"PRM {name!r}", spec.model, spec.layout, spec.reference)
        vllm_layout_check(scorer, name, spec)
        if spec.layout in GENERATIVE and getattr(a, "scores", None):  # its votes beside the stage's scores, resumable
            prms[name] = replace(spec, votes_file=f"{a.scores}.{name}")
    return prms


# ------------------------------------------------------------------------------- inputs per layout


@dataclass
class Seq:
    """One forward-pass input: token ids, the positions whose scores are read, and its response."""

    ids: list[int]
    positions: list[int]
    item: int = 0
    # eurus: the first label position (the model card's step_last_tokens[0]); the others are `positions`.
    start: int = 0


def _chat_ids(tok, messages: list[dict]) -> list[int]:
    return tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=False, return_dict=False)


def qwen_seq(tok, question: str, steps: list[str]) -> Seq:
    e = encode(tok, question, steps, max_length=sys.maxsize)  # the training inputs; LayoutScorer.seqs cuts to fit
    return Seq(e.input_ids, e.step_positions)


def shepherd_seq(tok, question: str, steps: list[str]) -> Seq:
    # The model card: input_for_prm = f"{question} {output}", tokenizer.encode (special tokens on),
    # scores at every occurrence of the tag's id (tokenizer.encode(step_tag)[-1]).
    output = "\n".join(f"Step {k + 1}: {s} {SHEPHERD_TAG}" for k, s in enumerate(steps))
    ids = tok.encode(f"{question} {output}")
    tag = tok.encode(SHEPHERD_TAG)[-1]
    return Seq(ids, [i for i, t in enumerate(ids) if t == tag])


def rlhflow_conversation(question: str, steps: list[str]) -> list[dict]:
    conv = []
    for k, s in enumerate(steps):
        conv += [{"role": "user", "content": f"{question} {s}" if k == 0 else s}, {"role": "assistant", "content": "+"}]
    return conv


def rlhflow_seq(tok, question: str, steps: list[str]) -> Seq:
    # ProcessBench-style per-step loop: the conversation up to step k, read at position -3 (the token
    # before the last assistant "+"). One pass: the whole conversation, read where each prefix's -3 falls;
    # exact when every prefix renders as a prefix of the whole (checked).
    conv = rlhflow_conversation(question, steps)
    ids = _chat_ids(tok, conv)
    positions = []
    for k in range(1, len(steps) + 1):
        prefix = _chat_ids(tok, conv[: 2 * k])
        if ids[: len(prefix)] != prefix:
            raise ValueError("rlhflow: the chat template renders a prefix conversation differently from the whole; "
                             "score it with one pass per step")
        positions.append(len(prefix) - 3)
    return Seq(ids, positions)


def skywork_seq(tok, question: str, steps: list[str], step_token: str = "\n") -> Seq:
    # Skywork's prepare_input: encode(bos + problem + "\n"), then per step encode(step) + [step token id],
    # the reward read at that step token. (A step's own newlines stay; Skywork's code would split there.)
    ids = tok.encode((tok.bos_token or "") + question + "\n")
    step_id = tok.encode(step_token)[-1]
    positions = []
    for s in steps:
        ids = ids + tok.encode(s) + [step_id]
        positions.append(len(ids) - 1)
    return Seq(ids, positions)


def trl_seq(tok, question: str, steps: list[str]) -> Seq:
    # TRL's PRMTrainer.tokenize_row, which trained these checkpoints: the prompt and each step tokenized without
    # special tokens, the separator's tokens after each step (no separator between prompt and first step), a bos
    # first where the tokenizer has one; a step's label (here its score) at its separator's last token.
    ids = ([tok.bos_token_id] if tok.bos_token_id is not None else []) + tok(question, add_special_tokens=False)["input_ids"]
    sep = tok.encode(TRL_SEPARATOR, add_special_tokens=False)
    positions = []
    for s in steps:
        ids = ids + tok(s, add_special_tokens=False)["input_ids"] + sep
        positions.append(len(ids) - 1)
    return Seq(ids, positions)


def orm_messages(question: str, steps: list[str]) -> list[dict]:
    return policy_messages(question) + [{"role": "assistant", "content": "\n\n".join(steps)}]


def orm_seqs(tok, question: str, steps: list[str], per_prefix: bool) -> list[Seq]:
    # Qwen2.5-Math-RM's card: apply_chat_template(tokenize=False), then encode without special tokens;
    # the reward is the head's output at the last token.
    out = []
    for k in range(1, len(steps) + 1) if per_prefix else [len(steps)]:
        text = tok.apply_chat_template(orm_messages(question, steps[:k]), tokenize=False, add_generation_prompt=False)
        ids = tok.encode(text, add_special_tokens=False)
        out.append(Seq(ids, [len(ids) - 1]))
    return out


def eurus_seq(tok, question: str, steps: list[str]) -> Seq:
    # EurusPRM's card: the whole conversation tokenized once; step_last_tokens from each prefix's
    # conversation (stripped, "\n\n" added between steps) as len(ids) - 2.
    ids = tok.apply_chat_template([{"role": "user", "content": question}, {"role": "assistant", "content": "\n\n".join(steps)}],
                                  tokenize=True, add_generation_prompt=False, return_dict=False)
    last = []
    for k in range(len(steps) + 1):
        conv = tok.apply_chat_template([{"role": "user", "content": question}, {"role": "assistant", "content": "\n\n".join(steps[:k])}],
                                       tokenize=False, add_generation_prompt=False).strip()
        if k != 0 and k != len(steps):
            conv += "\n\n"
        last.append(len(tok.encode(conv, add_special_tokens=False)) - 2)
    return Seq(ids, last[1:], start=last[0])


# ------------------------------------------------------------------------------------- the scorer


def batches(lengths: list[int], batch_size: int, batch_tokens: int, same_length: bool = False) -> list[list[int]]:
    """Indices grouped into batches of length-sorted sequences, each holding at most `batch_size`
    sequences and `batch_tokens` tokens counted with padding (a longer sequence is a batch alone).
    `same_length`: only sequences of one length share a batch (no padding at all; see LayoutScorer)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    out: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        if cur and (len(cur) >= batch_size or (len(cur) + 1) * lengths[i] > batch_tokens
                    or (same_length and lengths[i] != lengths[cur[0]])):
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return out


def _pad(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.tensor(s)
        mask[r, : len(s)] = 1
    return ids, mask


def _quiet_load(fn, *args, **kw):
    """A from_pretrained whose load report lists weights this layout does not use (a Skywork
    checkpoint's lm_head and v_head for the backbone): silenced, the layout reads them itself."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        return fn(*args, **kw)
    finally:
        hf_logging.set_verbosity(level)


def fit(inputs, question: str, steps: list[str], max_length: int, label_offset: int = 0) -> tuple[list[Seq], int]:
    """`inputs(question, steps)`'s sequences cut to max_length, and the steps kept: trailing steps are dropped
    (whole) to fit; a single step longer than max_length loses its score positions past the cut."""
    keep = len(steps)
    if not steps:
        return [], 0
    while True:
        out = inputs(question, steps[:keep])
        if max(len(s.ids) for s in out) <= max_length or keep <= 1:
            break
        keep -= 1
    for s in out:
        s.ids = s.ids[:max_length]
        s.positions = [p for p in s.positions if p < len(s.ids) - label_offset]
    return out, keep


class LayoutScorer(Scorer):
    """A released layout's transformers scorer, one subclass per layout: `score(items)` returns each response's
    step scores in (0, 1). A subclass says which class loads the checkpoint (`model_class`), how a response
    becomes forward-pass inputs (`inputs`) and how a batch's outputs become scores (`scores`); this base
    fits the inputs to max_length, batches them and reads the scores back. `layout_scorer(spec)` builds the
    subclass of a spec's layout, given or detected."""

    label_offset = 0  # score columns fewer than tokens (eurus reads next-token log-probabilities: 1)
    HEAD: tuple[str, int] | None = None  # (weight, outputs) of the score head its checkpoint must have
    CHAT = False  # its inputs go through the tokenizer's chat template

    @classmethod
    def detects(cls, arch: str, cfg, files: dict[str, str], tok) -> bool:
        """Whether a checkpoint is of this layout, from its architecture, config, weight names and (causal LMs
        only, else None) `tok()`, its tokenizer loaded on first call; detect_layout asks DETECTED's classes in order."""
        return False

    @classmethod
    def check_files(cls, spec: PRMSpec, key: str, files: dict[str, str], tok) -> None:
        """Before any weights load: the head's size (HEAD), then the chat template (CHAT) of `tok()`, the
        tokenizer loaded on first call; a subclass adds its step token's. Raises ParamsError naming `key`."""
        layout = LAYOUT_OF[cls]
        if cls.HEAD:
            name, n = cls.HEAD
            shape = _shape(files, name)
            if shape is None or shape[0] != n:
                got = "no score head" if shape is None else f"a {shape[0]}-output score head"
                raise ParamsError(f"{key}: {spec.model} has {got}; layout {layout} has {n} "
                                  f"({'error, correct' if n == 2 else 'one reward'})")
        if cls.CHAT and not tok().chat_template:
            raise ParamsError(f"{key}: {spec.model}'s tokenizer has no chat template (layout {layout} needs one)")

    def __init__(self, spec: PRMSpec, batch_size: int = 16, max_length: int = 4096, dtype: str = "float32",
                 batch_tokens: int = 16384, per_prefix: bool = True):
        from transformers import AutoTokenizer

        self.spec, self.layout = spec, LAYOUT_OF[type(self)]
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.batch_size, self.batch_tokens, self.per_prefix = batch_size, batch_tokens, per_prefix
        self.max_length = effective_max_length(spec.model, max_length)
        self.tok = AutoTokenizer.from_pretrained(spec.model)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id
        self.pad_id = pad if pad is not None else 0
        self.load_kw = {"dtype": getattr(torch, dtype), "use_safetensors": True}
        self.model = _quiet_load(self.model_class().from_pretrained, spec.model, **self.load_kw).to(self.device).eval()

    @staticmethod
    def model_class():
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM

    def inputs(self, question: str, steps: list[str]) -> list[Seq]:
        raise NotImplementedError

    def scores(self, ids: torch.Tensor, mask: torch.Tensor | None, seqs: list[Seq]) -> torch.Tensor:
        """[batch, columns] scores in (0, 1); a response's are read at its sequence's positions."""
        raise NotImplementedError

    def close(self) -> None:
        self.model = None

    def kept(self, out: list[Seq], keep: int) -> tuple[list[Seq], int]:
        """The sequences and the number of steps they score, once cut to max_length."""
        return out, min(keep, sum(len(s.positions) for s in out))

    def seqs(self, question: str, steps: list[str]) -> tuple[list[Seq], int]:
        """The forward-pass inputs of one response and the steps kept (`fit`)."""
        return self.kept(*fit(self.inputs, question, steps, self.max_length, self.label_offset))

    @torch.no_grad()
    def values(self, ids: torch.Tensor, mask: torch.Tensor, seqs: list[Seq]) -> list[list[float]]:
        """Scores at each sequence's positions, for one padded batch (right padding: positions stay put)."""
        ids, mask = ids.to(self.device), mask.to(self.device)
        # No padding: no mask, so attention keeps its causal fast path (an all-ones mask can cost it).
        v = self.scores(ids, None if bool(mask.all()) else mask, seqs).cpu()
        return [[float(v[r, p]) for p in s.positions] for r, s in enumerate(seqs)]

    def score(self, items: list[tuple[str, list[str]]]) -> list[list[float]]:
        made = [self.seqs(q, s) for q, s in items]
        flat = [(i, s) for i, (seqs, _) in enumerate(made) for s in seqs]
        self.last_truncated = [kept < len(steps) for (_, kept), (_, steps) in zip(made, items)]
        self.truncated_items += sum(self.last_truncated)
        results: list[list[float]] = [[] for _ in flat]
        bar = Progress(len(items), self.progress, unit="responses", every=10.0) if self.progress else None
        done = set()
        # On a CPU a padded batch is slower than its rows one by one (measured, benchmarks/bench_layouts.py:
        # 0.46x at batch 16): padding needs an attention mask, and with one torch's attention leaves its
        # causal fast path. So there, only sequences of equal length (no padding) share a batch.
        for b in batches([len(s.ids) for _, s in flat], self.batch_size, self.batch_tokens, same_length=self.device == "cpu"):
            ids, mask = _pad([flat[k][1].ids for k in b], self.pad_id)
            for k, vals in zip(b, self.values(ids, mask, [flat[k][1] for k in b])):
                results[k] = vals
            if bar:
                new = {flat[k][0] for k in b} - done
                done |= new
                bar.update(len(new))
        out: list[list[float]] = [[] for _ in items]
        for (i, _), vals in zip(flat, results):
            out[i] += vals
        return out


class QwenScorer(LayoutScorer):
    """Qwen2.5-Math-PRM (and ours): class 1 of the 2-class head at each `<extra_0>`."""

    HEAD = ("score.2.weight", 2)

    @classmethod
    def detects(cls, arch, cfg, files, tok):
        return arch == "Qwen2ForProcessRewardModel"

    @classmethod
    def check_files(cls, spec, key, files, tok):
        super().check_files(spec, key, files, tok)
        if "<extra_0>" not in tok().get_vocab():
            raise ParamsError(f"{key}: {spec.model}'s tokenizer has no step token <extra_0> (layout qwen)")

    @staticmethod
    def model_class():
        return Qwen2ForProcessRewardModel

    def inputs(self, question, steps):
        return [qwen_seq(self.tok, question, steps)]

    def scores(self, ids, mask, seqs):
        return self.model(input_ids=ids, attention_mask=mask).logits.float().softmax(-1)[..., 1]


class OrmScorer(LayoutScorer):
    """An outcome RM (Qwen2.5-Math-RM): the reward of each step prefix (`per_prefix`) or of the whole response."""

    HEAD, CHAT = ("score.2.weight", 1), True

    @classmethod
    def detects(cls, arch, cfg, files, tok):
        return arch == "Qwen2ForRewardModel"

    @staticmethod
    def model_class():
        return Qwen2ForRewardModel

    def inputs(self, question, steps):
        return orm_seqs(self.tok, question, steps, self.per_prefix)

    def kept(self, out, keep):
        out = [s for s in out if s.positions]
        return out, keep if out else 0

    def scores(self, ids, mask, seqs):
        return self.model(input_ids=ids, attention_mask=mask).logits.float()[..., 0].sigmoid()


class CandidateScorer(LayoutScorer):
    """A causal LM that answers good/bad tokens at each step tag: P(good) against P(bad)."""

    def candidate_ids(self) -> list[int]:
        raise NotImplementedError

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.candidates = self.candidate_ids()

    def scores(self, ids, mask, seqs):
        return self.model(input_ids=ids, attention_mask=mask).logits[..., self.candidates].float().softmax(-1)[..., 0]


class ShepherdScorer(CandidateScorer):
    """Math-Shepherd: `+` against `-` at each `ки` tag."""

    @classmethod
    def detects(cls, arch, cfg, files, tok):
        return tok is not None and not tok().chat_template and len(tok().encode(SHEPHERD_TAG, add_special_tokens=False)) == 1

    @classmethod
    def check_files(cls, spec, key, files, tok):
        if len(tok().encode(SHEPHERD_TAG, add_special_tokens=False)) != 1:
            raise ParamsError(f"{key}: {spec.model}'s tokenizer has no single token for the step tag {SHEPHERD_TAG!r} (layout math_shepherd)")
        if len(tok().encode(SHEPHERD_CANDIDATES, add_special_tokens=False)) != 2:
            raise ParamsError(f"{key}: {spec.model}'s tokenizer does not encode {SHEPHERD_CANDIDATES!r} as two tokens (layout math_shepherd)")

    def candidate_ids(self):
        return self.tok.encode(SHEPHERD_CANDIDATES, add_special_tokens=False)

    def inputs(self, question, steps):
        return [shepherd_seq(self.tok, question, steps)]


class RLHFlowScorer(CandidateScorer):
    """RLHFlow's Llama PRMs: `+` against `-` as the assistant's reply to each step."""

    CHAT = True

    @classmethod
    def detects(cls, arch, cfg, files, tok):
        return tok is not None and bool(tok().chat_template) and cfg.model_type == "llama"

    def candidate_ids(self):
        return [self.tok.encode("+")[-1], self.tok.encode("-")[-1]]

    def inputs(self, question, steps):
        return [rlhflow_seq(self.tok, question, steps)]


class SkyworkScorer(LayoutScorer):
    """Skywork-o1-Open-PRM: a value head (`v_head.summary`) on the last hidden state at each step's end."""

    @classmethod
    def detects(cls, arch, cfg, files, tok):
        return any(k.startswith("v_head.") for k in files)

    @classmethod
    def check_files(cls, spec, key, files, tok):
        shape = _shape(files, "v_head.summary.weight")
        if not shape or shape[0] != 1 or "v_head.summary.bias" not in files:
            raise ParamsError(f"{key}: {spec.model}: layout skywork needs a value head v_head.summary (weight "
                              f"[1, hidden] and bias) among its weights, got {shape}")

    @staticmethod
    def model_class():
        from transformers import AutoModel

        return AutoModel

    def __init__(self, spec: PRMSpec, *args, **kw):
        from safetensors import safe_open

        super().__init__(spec, *args, **kw)
        files = weight_files(spec.model)
        self.v_head = torch.nn.Linear(self.model.config.hidden_size, 1).to(self.device, self.load_kw["dtype"])
        with torch.no_grad():
            for name in ("weight", "bias"):
                with safe_open(files[f"v_head.summary.{name}"], framework="pt") as st:
                    getattr(self.v_head, name).copy_(st.get_tensor(f"v_head.summary.{name}"))

    def inputs(self, question, steps):
        return [skywork_seq(self.tok, question, steps)]

    def scores(self, ids, mask, seqs):
        hidden = self.model(input_ids=ids, attention_mask=mask).last_hidden_state
        return self.v_head(hidden.to(self.v_head.weight.dtype)).squeeze(-1).float().sigmoid()


class TRLScorer(LayoutScorer):
    """A TRL PRMTrainer checkpoint (PURE's PRM): class 1 of the token-classification head at each step's separator."""

    HEAD = ("score.weight", 2)

    @classmethod
    def detects(cls, arch, cfg, files, tok):
        return arch.endswith("ForTokenClassification")  # TRL's PRMTrainer trains AutoModelForTokenClassification

    @staticmethod
    def model_class():
        from transformers import AutoModelForTokenClassification

        return AutoModelForTokenClassification

    def inputs(self, question, steps):
        return [trl_seq(self.tok, question, steps)]

    def scores(self, ids, mask, seqs):
        return self.model(input_ids=ids, attention_mask=mask).logits.float().softmax(-1)[..., 1]


class EurusScorer(LayoutScorer):
    """EurusPRM (implicit PRM): coef * cumulative (log p - log p_ref) of the next tokens from the first label
    position, against its reference model (`spec.reference`, the model card's by default)."""

    label_offset = 1
    CHAT = True  # detected never: a Qwen2 causal LM with a chat template is any chat model; name it

    def __init__(self, spec: PRMSpec, *args, **kw):
        from transformers import AutoModelForCausalLM

        super().__init__(spec, *args, **kw)
        self.ref = AutoModelForCausalLM.from_pretrained(spec.reference or EURUS_REFERENCE, **self.load_kw).to(self.device).eval()

    def close(self) -> None:
        self.model = self.ref = None

    def inputs(self, question, steps):
        return [eurus_seq(self.tok, question, steps)]

    def scores(self, ids, mask, seqs):
        def logps(model):
            lp = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float().log_softmax(-1)
            return lp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)

        raw = logps(self.model) - logps(self.ref)
        cols = torch.arange(raw.shape[1], device=raw.device)
        start = torch.tensor([s.start for s in seqs], device=raw.device)
        label = (cols[None, :] + 1 >= start[:, None]).float()  # the card's label_mask[:, 1:]
        return (EURUS_COEF * raw * label).cumsum(-1).sigmoid()


class VLLMTokenScorer(Scorer):
    """vLLM's pooling runner for a layout whose step score is a 2-way softmax read at token positions, the same
    inputs and positions as its transformers scorer: math_shepherd (its causal LM's "+" and "-" rows of the LM head
    as a 2-label token classifier, vLLM's classify conversion with `classifier_from_token`; a softmax over them is
    the card's softmax over the two candidate logits) and trl (its own token-classification head). Every token's
    2 probabilities come back (ALL pooling) and the layout's positions are read, as the transformers scorer reads
    them. (The qwen layout has its own: prmlab.prms.model.VLLMScorer, the model's STEP pooler.)"""

    COLUMN = {"math_shepherd": 0, "trl": 1}  # the probability a layout's score is: P("+") of ["+", "-"]; class 1

    def __init__(self, spec: PRMSpec, max_length: int = 4096, dtype: str = "float32", kv_cache_gib: int = 2,
                 seed: int = 0, tensor_parallel_size: int = 1, gpu_memory_utilization: float = 0.9):
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_gib))
        os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
        from transformers import AutoTokenizer
        from vllm import LLM
        from vllm.config import PoolerConfig

        self.layout = spec.layout or detect_layout(spec.model)
        self.tok = AutoTokenizer.from_pretrained(spec.model)
        self.max_length = effective_max_length(spec.model, max_length)
        kw: dict[str, Any] = {"gpu_memory_utilization": gpu_memory_utilization} if has_gpu() else {}
        if self.layout == "math_shepherd":
            plus_minus = self.tok.convert_ids_to_tokens(self.tok.encode(SHEPHERD_CANDIDATES, add_special_tokens=False))
            kw |= {"convert": "classify", "hf_overrides": {"classifier_from_token": plus_minus, "method": "no_post_processing"}}
        self.llm = LLM(model=spec.model, runner="pooling", dtype=dtype, max_model_len=self.max_length, seed=seed,
                       tensor_parallel_size=tensor_parallel_size, load_format="safetensors",  # never unpickle a *.bin
                       pooler_config=PoolerConfig(task="token_classify", tok_pooling_type="ALL"), **kw)

    def inputs(self, question: str, steps: list[str]) -> list[Seq]:
        return [(shepherd_seq if self.layout == "math_shepherd" else trl_seq)(self.tok, question, steps)]

    def score(self, items: list[tuple[str, list[str]]]) -> list[list[float]]:
        from vllm.inputs import TokensPrompt

        made = [fit(self.inputs, q, steps, self.max_length) for q, steps in items]
        self.last_truncated = [kept < len(steps) for (_, kept), (_, steps) in zip(made, items)]
        self.truncated_items += sum(self.last_truncated)
        seqs = [out[0] if out else Seq([], []) for out, _ in made]
        todo = [k for k, sq in enumerate(seqs) if sq.ids]
        outs = self.llm.encode([TokensPrompt(prompt_token_ids=seqs[k].ids) for k in todo], pooling_task="token_classify",
                               use_tqdm=bool(self.progress))
        res: list[list[float]] = [[] for _ in items]
        col = self.COLUMN[self.layout]
        for k, o in zip(todo, outs):
            data = o.outputs.data
            res[k] = [float(data[p, col]) for p in seqs[k].positions]
        return res

    def close(self) -> None:
        shutdown_vllm(getattr(self, "llm", None))
        self.llm = None


VLLM_LAYOUTS = ("qwen", *VLLMTokenScorer.COLUMN)  # the layouts scorer vllm serves

SCORERS = {"qwen": QwenScorer, "orm": OrmScorer, "math_shepherd": ShepherdScorer, "rlhflow": RLHFlowScorer,
           "skywork": SkyworkScorer, "trl": TRLScorer, "eurus": EurusScorer}  # a class per entry of LAYOUTS
LAYOUT_OF = {cls: layout for layout, cls in SCORERS.items()}
# detect_layout's order: by architecture, then by weights, then a causal LM by its tokenizer (rlhflow before
# math_shepherd: a chat template says rlhflow); eurus is never detected
DETECTED = (QwenScorer, OrmScorer, TRLScorer, SkyworkScorer, RLHFlowScorer, ShepherdScorer)


def layout_scorer(spec: PRMSpec, *args, **kw) -> LayoutScorer:
    """The scorer of `spec`'s layout (given, or read from its files)."""
    return SCORERS[spec.layout or detect_layout(spec.model)](spec, *args, **kw)


def make_scorer(backend: str, path: str, batch_size: int = 16, max_length: int = 4096, dtype: str = "float32",
                tensor_parallel_size: int = 1, layout: str | None = None, reference: str | None = None,
                batch_tokens: int = 16384, per_prefix: bool = True, verifier: VerifierConfig | None = None,
                votes_file: str | None = None) -> Scorer:
    """A scorer for the PRM at `path` in its layout (prmlab.prms.layouts; None: read from its files).
    `max_length` is clamped to the model's positions (`scorer.max_length` holds the value used);
    tensor parallelism applies to vLLM only, which serves VLLM_LAYOUTS (qwen: its STEP pooling; math_shepherd, trl:
    `VLLMTokenScorer`);
    `per_prefix` is for an outcome RM (layout orm). A generative layout (prmlab.prms.generative) generates through
    either backend, with `verifier`'s sampling (its family's defaults if None), its votes resumable in `votes_file`."""
    if layout in GENERATIVE:
        if backend not in ("transformers", "vllm"):
            raise ValueError(f"unknown scorer backend {backend!r}; use transformers or vllm")
        return VERIFIERS[layout](path, verifier, backend, max_length, dtype, tensor_parallel_size, batch_size,
                                 resume=votes_file)
    if backend == "transformers":
        return layout_scorer(PRMSpec(path, layout, reference), batch_size, max_length, dtype, batch_tokens, per_prefix)
    elif backend == "vllm":
        if (layout := layout or detect_layout(path)) not in VLLM_LAYOUTS:
            raise ValueError(f"{path}: scorer vllm serves layouts {', '.join(VLLM_LAYOUTS)}; use scorer transformers for "
                             f"layout {layout}")
        if layout == "qwen":
            return VLLMScorer(path, max_length, dtype, tensor_parallel_size=tensor_parallel_size)
        return VLLMTokenScorer(PRMSpec(path, layout), max_length, dtype, tensor_parallel_size=tensor_parallel_size)
    raise ValueError(f"unknown scorer backend {backend!r}; use transformers or vllm")


def load_prm(spec: PRMSpec | str, backend: str = "transformers", **options) -> Scorer:
    """A scorer for the PRM `spec` (a PRMSpec, or a folder or hub name whose layout is read from its files): a
    released layout, this project's PRMs or a generative verifier, through `make_scorer` (`options`: its batch_size,
    max_length, dtype, ...). `scorer.score([(problem, steps), ...])` gives each step's score in (0, 1); `with` closes it."""
    spec = PRMSpec(spec) if isinstance(spec, str) else spec
    return make_scorer(backend, spec.model, layout=spec.layout, reference=spec.reference, verifier=spec.verifier,
                       votes_file=spec.votes_file, **options)


if __name__ == "__main__":  # python -m prmlab.prms.layouts PATH: print the detected layout
    print(detect_layout(sys.argv[1]))
