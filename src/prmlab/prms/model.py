"""Process reward models in the Qwen2.5-Math-PRM layout, their inputs, loss, and two scorers.

Layout (interchangeable with Qwen/Qwen2.5-Math-PRM-7B/-72B checkpoints): a Qwen2 backbone
(`model.*`), the LM head replaced by `score = Linear(h, h) -> ReLU -> Linear(h, 2)`, config
architecture `Qwen2ForProcessRewardModel` (which vLLM serves natively with STEP pooling).

Input: the policy's chat format, system + problem, then the assistant turn holding the steps, each
followed by `<extra_0>` (the last included). Step reward = softmax probability of class 1 at each
`<extra_0>`. Inputs longer than `max_length` are cut to whole steps (counted, and those steps get
no score).

Scorers share one call, `score(items) -> per-step probabilities`:
- `prmlab.prms.layouts.layout_scorer` (transformers; a `LayoutScorer` subclass per layout): this layout and
  every other released one of the paper's Table 7 (Math-Shepherd, RLHFlow, Skywork, outcome RMs,
  EurusPRM); `prmlab.prms.layouts.make_scorer` picks it.
- `VLLMScorer`: vLLM's pooling runner (`runner="pooling"`, STEP pooling on `<extra_0>`), this layout.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn
from transformers import Qwen2Config, Qwen2Model, Qwen2PreTrainedModel
from transformers.modeling_outputs import TokenClassifierOutput

from prmlab.core.preflight import load_tokenizer
from prmlab.core.runtime import Closing, control_tokens, has_gpu, shutdown_vllm
from prmlab.prompts import policy_messages

STEP_TOKEN = "<extra_0>"
ARCH = "Qwen2ForProcessRewardModel"


class Qwen2ForProcessRewardModel(Qwen2PreTrainedModel):
    config_class = Qwen2Config

    outputs = 2  # error, correct

    def __init__(self, config: Qwen2Config):
        super().__init__(config)
        self.num_labels = self.outputs
        self.model = Qwen2Model(config)
        h = config.hidden_size
        self.score = nn.Sequential(nn.Linear(h, h), nn.ReLU(), nn.Linear(h, self.outputs))
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, inputs_embeds=None,
                **kwargs) -> TokenClassifierOutput:
        # Logits only: training's loss is prm_loss (prmlab.prms.training computes it from these).
        # kwargs: a packed row's boundaries (prmlab.prms.model.pack), which reach the attention functions
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                            inputs_embeds=inputs_embeds, **kwargs).last_hidden_state
        return TokenClassifierOutput(logits=self.score(hidden))


class Qwen2ForRewardModel(Qwen2ForProcessRewardModel):
    """An outcome reward model in Qwen2.5-Math-RM's layout: the same backbone and head shape with one
    output, the reward, read at the last token (prmlab.prms.layouts, layout `orm`)."""

    outputs = 1


def init_from_policy(policy_dir: str, tokenizer) -> Qwen2ForProcessRewardModel:
    """Backbone from the policy (as the paper initialises from Qwen2.5-Math-7B-Instruct), new head."""
    from transformers.utils import logging as hf_logging

    # safetensors only, here and below: a pickle checkpoint (*.bin) runs code when loaded. The policy
    # has no score head, so transformers' load report lists score.* as MISSING, which is the point
    # (the head is new) but reads like an error: silenced for this one load.
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        model = Qwen2ForProcessRewardModel.from_pretrained(policy_dir, dtype=torch.float32, use_safetensors=True)
    finally:
        hf_logging.set_verbosity(level)
    if len(tokenizer) > model.config.vocab_size:  # a tokenizer that lacked <extra_0> got it added
        model.resize_token_embeddings(len(tokenizer))
    model.config.architectures = [ARCH]
    model.config.num_labels = 2
    model.config.tie_word_embeddings = False
    return model


def prepare_tokenizer(path: str):
    tok = load_tokenizer(path)
    if STEP_TOKEN not in tok.get_vocab():
        tok.add_special_tokens({"additional_special_tokens": [STEP_TOKEN]})
    # The step tag's id must be its own: a tokenizer whose ids have gaps can hand an added token an id
    # another token already has, and then every occurrence of that token becomes a score position.
    step_id = tok.convert_tokens_to_ids(STEP_TOKEN)
    owners = sorted(t for t, i in tok.get_vocab().items() if i == step_id)  # sorted: get_vocab's order varies
    if owners != [STEP_TOKEN]:
        raise ValueError(f"{path}: the step tag {STEP_TOKEN} has id {step_id}, which tokens {owners[:5]} share; "
                         "a PRM needs a tokenizer where it is a token of its own")
    tok.padding_side = "right"
    return tok


def build_text(tokenizer, question: str, steps: list[str]) -> str:
    msgs = policy_messages(question) + [{"role": "assistant", "content": STEP_TOKEN.join(steps) + STEP_TOKEN}]
    return tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=False)


def plain_text_ids(tokenizer, render, data: list[str]) -> list[int]:
    """Token ids of `render(data)` in which every data string stays text: a step that contains
    `<extra_0>` or `<|im_end|>` must not become a step tag or a turn end. When no data string holds a
    control token's text (the usual case) the rendered text is tokenized whole, exactly as before;
    otherwise template pieces and data pieces are tokenized apart, the data with special tokens split."""
    controls = control_tokens(tokenizer)
    if not any(c in d for d in data for c in controls):
        return tokenizer.encode(render(data), add_special_tokens=False)
    marks = [f"\ue000{i}\ue001" for i in range(len(data))]  # private-use code points: never in the template
    ids: list[int] = []
    for k, piece in enumerate(re.split("\ue000(\\d+)\ue001", render(marks))):
        if k % 2:
            ids += tokenizer.encode(data[int(piece)], add_special_tokens=False, split_special_tokens=True)
        elif piece:
            ids += tokenizer.encode(piece, add_special_tokens=False)
    return ids


@dataclass
class Encoded:
    input_ids: list[int]
    step_positions: list[int]  # index of each kept step's <extra_0>
    dropped_steps: int


def encode(tokenizer, question: str, steps: list[str], max_length: int) -> Encoded:
    """Tokenize; if too long, drop trailing steps (whole steps only)."""
    step_id = tokenizer.convert_tokens_to_ids(STEP_TOKEN)
    keep = len(steps)
    while True:
        ids = plain_text_ids(tokenizer, lambda d: build_text(tokenizer, d[0], d[1:]), [question, *steps[:keep]])
        if len(ids) <= max_length or keep <= 1:
            break
        keep -= 1
    ids = ids[:max_length]
    pos = [i for i, t in enumerate(ids) if t == step_id]
    return Encoded(ids, pos, len(steps) - len(pos))


def training_features(tokenizer, ex: dict, max_length: int, soft: bool) -> dict:
    """TRL stepwise example -> input_ids, per-token labels (-100 except at <extra_0>), soft targets."""
    enc = encode(tokenizer, ex["prompt"], ex["completions"], max_length)
    labels = [-100] * len(enc.input_ids)
    targets = [-1.0] * len(enc.input_ids)
    has_soft = soft and ex.get("soft") is not None
    for k, p in enumerate(enc.step_positions):
        # soft training: a step without an MC value is unlabelled, so the Trainer's count of
        # labelled tokens (`num_items_in_batch`, from `labels`) is the count the soft loss sums over
        labels[p] = int(ex["labels"][k]) if has_soft or not soft else -100
        if has_soft:
            targets[p] = float(ex["soft"][k])
    return {"input_ids": enc.input_ids, "labels": labels, "soft_targets": targets, "dropped": enc.dropped_steps}


def collate(features: list[dict], pad_id: int) -> dict:
    L = max(len(f["input_ids"]) for f in features)
    out = {
        "input_ids": torch.full((len(features), L), pad_id, dtype=torch.long),
        "attention_mask": torch.zeros((len(features), L), dtype=torch.long),
        "labels": torch.full((len(features), L), -100, dtype=torch.long),
        "soft_targets": torch.full((len(features), L), -1.0),
    }
    for i, f in enumerate(features):
        n = len(f["input_ids"])
        out["input_ids"][i, :n] = torch.tensor(f["input_ids"])
        out["attention_mask"][i, :n] = 1
        if f.get("labels"):  # scoring batches carry no labels
            out["labels"][i, :n] = torch.tensor(f["labels"])
            out["soft_targets"][i, :n] = torch.tensor(f["soft_targets"], dtype=torch.float)
    return out


def pack(features: list[dict]) -> dict:
    """Training features in one row, no padding. Position ids restart at 0 for each example, and the
    examples' boundaries go along as flash-attention's `cu_seq_lens_q/k` and `max_length_q/k`, so no
    token attends across examples: flash_attention_2/3 and PACKED_VARLEN (torch's own varlen kernel, a
    GPU) use them as they are, PACKED_SDPA (below) takes them anywhere. transformers' own sdpa and eager ignore them and let examples attend to each other,
    so training.PACKED_ATTENTION refuses those."""
    cat = lambda key: [x for f in features for x in f[key]]  # noqa: E731
    lens = [len(f["input_ids"]) for f in features]
    cu = torch.tensor([0, *lens], dtype=torch.int32).cumsum(0, dtype=torch.int32)
    return {"input_ids": torch.tensor([cat("input_ids")]),
            "position_ids": torch.tensor([[p for n in lens for p in range(n)]]),
            "labels": torch.tensor([cat("labels")]), "soft_targets": torch.tensor([cat("soft_targets")], dtype=torch.float),
            "cu_seq_lens_q": cu, "cu_seq_lens_k": cu, "max_length_q": max(lens), "max_length_k": max(lens)}


PACKED_SDPA = "prmlab_packed_sdpa"


def packed_sdpa(module, query, key, value, attention_mask, scaling=None, dropout=0.0, cu_seq_lens_q=None, **kwargs):
    """Attention for a packed row (prmlab.prms.model.pack) where no varlen kernel exists (CPU): each example's
    queries, keys and values are a slice of the row, attended alone by torch's causal sdpa (no mask: its
    fast path), then put back in a row. No padding anywhere. Returns (1, tokens, heads, dim), as
    transformers' attention functions do."""
    lens = (cu_seq_lens_q[1:] - cu_seq_lens_q[:-1]).tolist()  # host values: CPU tensors, no device sync
    rep = query.shape[1] // key.shape[1]  # grouped-query attention: each KV head serves `rep` query heads
    if rep > 1:
        key, value = key.repeat_interleave(rep, dim=1), value.repeat_interleave(rep, dim=1)
    outs = [nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scaling,
                                                       dropout_p=dropout if module.training else 0.0)
            for q, k, v in zip(query.split(lens, 2), key.split(lens, 2), value.split(lens, 2))]
    return torch.cat(outs, 2).transpose(1, 2), None


PACKED_VARLEN = "prmlab_packed_varlen"


def varlen_available() -> bool:
    """Whether this torch has its own varlen flash kernel (torch.nn.attention.varlen, torch >= 2.10) and a
    CUDA device to run it on: the GPU attention for packed rows with no flash-attn package installed."""
    try:
        from torch.nn.attention.varlen import varlen_attn  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


@functools.cache
def _varlen_params() -> frozenset[str]:
    """The keywords this torch's varlen_attn takes (torch 2.10 has is_causal, later ones window_size and
    enable_gqa): looked up once, not in every layer's attention call."""
    import inspect

    from torch.nn.attention.varlen import varlen_attn

    return frozenset(inspect.signature(varlen_attn).parameters)


def packed_varlen(module, query, key, value, attention_mask, scaling=None, dropout=0.0, cu_seq_lens_q=None,
                  max_length_q=None, **kwargs):
    """Attention for a packed row on a GPU: torch's varlen flash kernel over the whole row in one call,
    causal within each example by `cu_seq_lens_q` (as flash-attn's varlen function; no flash-attn
    package needed). Flash kernels take bf16 or fp16 only, so fp32 inputs (no autocast) are cast to bf16
    and the output cast back. Returns (1, tokens, heads, dim), as transformers' attention functions do."""
    from torch.nn.attention.varlen import varlen_attn

    accepts = _varlen_params()
    dtype = query.dtype
    q, k, v = (t[0].transpose(0, 1).contiguous() for t in (query, key, value))  # (heads, T, dim) -> (T, heads, dim)
    if dtype == torch.float32:
        q, k, v = q.bfloat16(), k.bfloat16(), v.bfloat16()
    rep = q.shape[1] // k.shape[1]
    kw = {"scale": scaling} if "scale" in accepts else {}
    if rep > 1 and "enable_gqa" in accepts:
        kw["enable_gqa"] = True
    elif rep > 1:
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    kw.update({"is_causal": True} if "is_causal" in accepts else {"window_size": (-1, 0)})
    cu = cu_seq_lens_q.to(q.device, torch.int32)
    out = varlen_attn(q, k, v, cu, cu, max_length_q, max_length_q, **kw)
    return out.to(dtype).unsqueeze(0), None


def _register_packed_attention() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    for name, fn in ((PACKED_SDPA, packed_sdpa), (PACKED_VARLEN, packed_varlen)):
        AttentionInterface.register(name, fn)
        # packed rows carry no padding mask: the boundaries are in cu_seq_lens, as for flash attention
        AttentionMaskInterface.register(name, ALL_MASK_ATTENTION_FUNCTIONS["flash_attention_2"])


_register_packed_attention()


def prm_loss(logits: torch.Tensor, labels: torch.Tensor, soft_targets: torch.Tensor,
             kind: Literal["ce", "mse", "bce"], num_items: torch.Tensor | int | None = None) -> torch.Tensor:
    """Hard labels: cross-entropy at the step tokens. Soft: MSE or BCE on P(class 1) vs the MC value.

    Per-token losses are summed and divided by `num_items` (the labelled step tokens of the whole
    accumulated batch, as the Trainer counts them), else by this batch's own count (a mean).
    """
    logits = logits.float()
    if kind == "ce":
        per = nn.functional.cross_entropy(logits.view(-1, 2), labels.view(-1), ignore_index=-100, reduction="none")
        per = per[labels.view(-1) != -100]
    else:
        mask = soft_targets >= 0
        p1 = logits.softmax(-1)[..., 1][mask]
        t = soft_targets[mask]
        if kind == "mse":
            per = nn.functional.mse_loss(p1, t, reduction="none")
        else:
            per = nn.functional.binary_cross_entropy(p1.clamp(1e-6, 1 - 1e-6), t, reduction="none")
    if num_items is None:
        return per.mean()
    if torch.is_tensor(num_items):
        num_items = num_items.to(per.device)
    return per.sum() / num_items


# ------------------------------------------------------------------------------------------ scorers


def effective_max_length(path: str, max_length: int) -> int:
    """`max_length`, clamped to the checkpoint's `max_position_embeddings` (said on stderr): longer
    inputs would run past the positions the model was trained on (vLLM refuses them outright)."""
    from transformers import AutoConfig

    positions = getattr(AutoConfig.from_pretrained(path), "max_position_embeddings", None)
    if positions and max_length > positions:
        print(f"[prm] {path}: max_length {max_length} > max_position_embeddings {positions}; "
              f"scoring with max_length {positions}", file=sys.stderr)
        return int(positions)
    return max_length


class Scorer(Closing):
    truncated_items = 0
    last_truncated: list[bool] = []  # per item of the last score() call: steps dropped to fit max_length
    progress: str | None = None  # a label: when set, score() prints counts, rate and ETA under it
    max_length: int  # the effective one (after clamping to the model's positions), for metrics

    def score(self, items: list[tuple[str, list[str]]]) -> list[list[float]]:
        raise NotImplementedError


class VLLMScorer(Scorer):
    def __init__(self, path: str, max_length: int = 4096, dtype: str = "float32", kv_cache_gib: int = 2, seed: int = 0,
                 tensor_parallel_size: int = 1, gpu_memory_utilization: float = 0.9):
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_gib))
        os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
        from vllm import LLM
        from vllm.config import PoolerConfig

        self.tok = prepare_tokenizer(path)
        self.max_length = effective_max_length(path, max_length)
        step_id = self.tok.convert_tokens_to_ids(STEP_TOKEN)
        kw = {"gpu_memory_utilization": gpu_memory_utilization} if has_gpu() else {}
        self.llm = LLM(model=path, runner="pooling", dtype=dtype, max_model_len=self.max_length, seed=seed,
                       tensor_parallel_size=tensor_parallel_size, pooler_config=PoolerConfig(step_tag_id=step_id),
                       load_format="safetensors", **kw)  # never unpickle a *.bin checkpoint

    def score(self, items: list[tuple[str, list[str]]]) -> list[list[float]]:
        from vllm.inputs import TokensPrompt

        encs = [encode(self.tok, q, s, self.max_length) for q, s in items]
        self.last_truncated = [e.dropped_steps > 0 for e in encs]
        self.truncated_items += sum(self.last_truncated)
        outs = self.llm.encode([TokensPrompt(prompt_token_ids=e.input_ids) for e in encs],
                               pooling_task="token_classify", use_tqdm=bool(self.progress))
        res = []
        for o in outs:
            data = o.outputs.data
            data = data if data.ndim == 2 else data.view(-1, 2)
            res.append([float(x) for x in data[:, 1]])
        return res

    def close(self) -> None:
        shutdown_vllm(getattr(self, "llm", None))
        self.llm = None
