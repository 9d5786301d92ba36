"""Randomly initialised checkpoints in each released PRM layout (prmlab.prms.layouts), built locally:
config, tokenizer with the layout's special tokens, safetensors weights. Tests check prmlab's scorers
against each layout's reference loop on them (tests/prms/test_layouts.py); bench_layouts.py times them.

    from benchmarks.layout_models import build
    spec = build("rlhflow", "/tmp/rlhflow", tokenizer_dir="models/policy")   # -> PRMSpec

The tokenizer is the toy policy's byte-level BPE, given each layout's conventions: Math-Shepherd's
step tag `ки` as one token and no chat template; a Llama-3-style chat template for RLHFlow; a BOS for
Skywork; the Qwen chat template (the toy's) for the others. Sizes: `dims` (tiny by default; the
benchmark passes a mid-size Qwen2 shape).

`reference_scores` is each layout's own scoring procedure, one item at a time, written as its model
card or its authors' inference code runs it (RLHFlow and an ORM: one call per step): the baseline
prmlab's batched one-pass scorer must equal (tests) and beat (benchmarks).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from prmlab.prms.layouts import EURUS_COEF, SHEPHERD_TAG, PRMSpec

TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 64, "max_position_embeddings": 8192}
LLAMA3_TEMPLATE = ("{{ '<|begin_of_text|>' }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + "
                   "'<|end_header_id|>\n\n' + m['content'] + '<|eot_id|>' }}{% endfor %}"
                   "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")


def _tokenizer(layout: str, tokenizer_dir: str):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    if layout == "qwen" and "<extra_0>" not in tok.get_vocab():
        tok.add_special_tokens({"additional_special_tokens": ["<extra_0>"]})
    if layout == "math_shepherd":
        tok.chat_template = None
        tok.add_tokens([SHEPHERD_TAG])
    if layout == "rlhflow":
        tok.add_special_tokens({"additional_special_tokens": ["<|begin_of_text|>", "<|start_header_id|>",
                                                              "<|end_header_id|>", "<|eot_id|>"]})
        tok.chat_template = LLAMA3_TEMPLATE
    if layout == "skywork":
        tok.bos_token = tok.pad_token
    return tok


def build(layout: str, out: str | Path, tokenizer_dir: str, dims: dict | None = None, seed: int = 0,
          dtype: torch.dtype = torch.float32) -> PRMSpec:
    """A random checkpoint in `layout` at `out` (eurus: also its reference model at `out`-ref)."""
    from safetensors.torch import save_file
    from transformers import (
        LlamaConfig,
        LlamaForCausalLM,
        MistralConfig,
        MistralForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
        Qwen2ForTokenClassification,
    )

    from prmlab.prms.model import Qwen2ForProcessRewardModel, Qwen2ForRewardModel

    out = Path(out)
    tok = _tokenizer(layout, tokenizer_dir)
    d = {**TINY, **(dims or {}), "vocab_size": len(tok), "tie_word_embeddings": False,
         "pad_token_id": tok.pad_token_id, "eos_token_id": tok.eos_token_id}
    torch.manual_seed(seed)
    if layout == "math_shepherd":
        model = MistralForCausalLM(MistralConfig(**d))
    elif layout == "rlhflow":
        model = LlamaForCausalLM(LlamaConfig(**d))
    elif layout == "qwen":
        model = Qwen2ForProcessRewardModel(Qwen2Config(**d))
        model.config.architectures = ["Qwen2ForProcessRewardModel"]
    elif layout == "orm":
        model = Qwen2ForRewardModel(Qwen2Config(**d))
        model.config.architectures = ["Qwen2ForRewardModel"]
    elif layout == "trl":  # TRL's PRMTrainer: AutoModelForTokenClassification, 2 labels
        model = Qwen2ForTokenClassification(Qwen2Config(**d, num_labels=2))
        model.config.architectures = ["Qwen2ForTokenClassification"]
    else:
        model = Qwen2ForCausalLM(Qwen2Config(**d))
    model = model.to(dtype)
    tok.save_pretrained(out)
    if layout == "skywork":
        # Skywork's checkpoints: the causal LM's weights plus the value head `v_head.summary` (trl's layout).
        state = {k: v.contiguous() for k, v in model.state_dict().items()}
        head = torch.nn.Linear(d["hidden_size"], 1).to(dtype)
        state |= {"v_head.summary.weight": head.weight.detach(), "v_head.summary.bias": head.bias.detach()}
        save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
        model.config.architectures = ["Qwen2ForPrmModel"]
        model.config.save_pretrained(out)
    else:
        model.save_pretrained(out, safe_serialization=True)
    reference = None
    if layout == "eurus":
        torch.manual_seed(seed + 1)
        ref = Qwen2ForCausalLM(Qwen2Config(**d)).to(dtype)
        reference = str(out) + "-ref"
        ref.save_pretrained(reference, safe_serialization=True)
        tok.save_pretrained(reference)
    return PRMSpec(str(out), layout if layout == "eurus" else None, reference)


def _fwd(model, ids):
    return model(input_ids=torch.tensor([ids]))


def reference_scores(layout: str, spec: PRMSpec, items) -> list[list[float]]:
    """Each layout's own procedure, one item at a time, as its model card or inference code has it."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

    from prmlab.prms.model import Qwen2ForProcessRewardModel, Qwen2ForRewardModel
    from prmlab.prompts import policy_messages

    tok = AutoTokenizer.from_pretrained(spec.model)
    out = []
    with torch.no_grad():
        if layout == "qwen":  # Qwen2.5-Math-PRM card: chat with <extra_0> after each step; softmax, class 1 at the tags
            model = Qwen2ForProcessRewardModel.from_pretrained(spec.model).eval()
            for q, steps in items:
                msgs = policy_messages(q) + [{"role": "assistant", "content": "<extra_0>".join(steps) + "<extra_0>"}]
                ids = tok.encode(tok.apply_chat_template(msgs, tokenize=False), add_special_tokens=False)
                p = _fwd(model, ids).logits[0].softmax(-1)[:, 1]
                out.append([float(p[i]) for i, t in enumerate(ids) if t == tok.convert_tokens_to_ids("<extra_0>")])
        elif layout == "math_shepherd":  # the model card's loop
            model = AutoModelForCausalLM.from_pretrained(spec.model).eval()
            candidate_tokens = tok.encode("+ -", add_special_tokens=False)
            step_tag_id = tok.encode("ки")[-1]
            for q, steps in items:
                output = "\n".join(f"Step {k + 1}: {s} ки" for k, s in enumerate(steps))
                input_id = torch.tensor([tok.encode(f"{q} {output}")])
                scores = model(input_id).logits[:, :, candidate_tokens].softmax(dim=-1)[:, :, 0]
                out.append([float(x) for x in scores[input_id == step_tag_id]])
        elif layout == "rlhflow":  # the per-step chat loop (one call per step), read at position -3
            model = AutoModelForCausalLM.from_pretrained(spec.model).eval()
            plus, minus = tok.encode("+")[-1], tok.encode("-")[-1]
            for q, steps in items:
                conversation, step_scores = [], []
                for k, s in enumerate(steps):
                    conversation.append({"content": q + " " + s if k == 0 else s, "role": "user"})
                    conversation.append({"content": "+", "role": "assistant"})
                    input_ids = tok.apply_chat_template(conversation, return_tensors="pt", return_dict=False)
                    logits = model(input_ids).logits[:, -3, [plus, minus]]
                    step_scores.append(float(logits.softmax(dim=-1)[:, 0][0]))
                out.append(step_scores)
        elif layout == "skywork":  # skywork-o1-prm-inference: prepare_input, value head, sigmoid at the flags
            base = AutoModel.from_pretrained(spec.model).eval()
            from safetensors import safe_open

            with safe_open(f"{spec.model}/model.safetensors", framework="pt") as st:
                w, b = st.get_tensor("v_head.summary.weight"), st.get_tensor("v_head.summary.bias")
            for q, steps in items:
                prompt_ids = tok.encode(tok.bos_token + q + "\n")
                response_ids, flags = [], [0] * len(prompt_ids)
                step_token_id = tok.encode("\n")[-1]
                for step in "\n".join(steps).split("\n"):
                    step_ids = tok.encode(step) + [step_token_id]
                    response_ids += step_ids
                    flags += [0] * (len(step_ids) - 1) + [1]
                hidden = base(input_ids=torch.tensor([prompt_ids + response_ids])).last_hidden_state[0]
                value = (hidden @ w.T + b).squeeze(-1)
                out.append([1 / (math.exp(-float(value[i])) + 1) for i, f in enumerate(flags) if f])
        elif layout == "orm":  # Qwen2.5-Math-RM card, one call per prefix of steps (each a response)
            model = Qwen2ForRewardModel.from_pretrained(spec.model).eval()
            for q, steps in items:
                r = []
                for k in range(1, len(steps) + 1):
                    chat = policy_messages(q) + [{"role": "assistant", "content": "\n\n".join(steps[:k])}]
                    conversation_str = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=False)
                    input_ids = tok.encode(conversation_str, add_special_tokens=False)
                    r.append(float(torch.sigmoid(_fwd(model, input_ids).logits[0, -1, 0])))
                out.append(r)
        elif layout == "trl":  # TRL's PRMTrainer.tokenize_row; PURE's card: P(+) - P(-) at each step's "\n"
            from transformers import AutoModelForTokenClassification

            model = AutoModelForTokenClassification.from_pretrained(spec.model).eval()
            for q, steps in items:
                prompt_ids = tok(q, add_special_tokens=False)["input_ids"]
                completions_ids = [tok(c, add_special_tokens=False)["input_ids"] for c in steps]
                separator_ids = tok.encode("\n", add_special_tokens=False)
                completions_ids = [c + separator_ids for c in completions_ids]
                labels = [[-100] * (len(c) - 1) + [1] for c in completions_ids]
                if tok.bos_token_id is not None:
                    prompt_ids = [tok.bos_token_id] + prompt_ids
                input_ids = prompt_ids + [t for c in completions_ids for t in c]
                labels = [-100] * len(prompt_ids) + [x for lab in labels for x in lab]
                probs = _fwd(model, input_ids).logits[0].softmax(-1)
                reward = probs[:, 1] - probs[:, 0]  # the card's reward in [-1, 1]; prmlab's score is (reward + 1) / 2
                out.append([(float(reward[i]) + 1) / 2 for i, lab in enumerate(labels) if lab != -100])
        else:  # eurus: the EurusPRM card's code
            model = AutoModelForCausalLM.from_pretrained(spec.model).eval()
            ref_model = AutoModelForCausalLM.from_pretrained(spec.reference).eval()

            def get_logps(model, inputs):
                logits = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits
                labels = inputs["labels"][:, 1:].clone().long()
                logits = logits[:, :-1, :]
                labels[labels == -100] = 0
                return torch.gather(logits.log_softmax(-1), dim=2, index=labels.unsqueeze(2)).squeeze(2)

            for q, answer in items:
                input_ids = tok.apply_chat_template([{"role": "user", "content": q}, {"role": "assistant", "content": "\n\n".join(answer)}],
                                                    tokenize=True, add_generation_prompt=False, return_tensors="pt", return_dict=False)
                attention_mask = input_ids != tok.pad_token_id
                step_last_tokens = []
                for step_num in range(0, len(answer) + 1):
                    conv = tok.apply_chat_template([{"role": "user", "content": q}, {"role": "assistant", "content": "\n\n".join(answer[:step_num])}],
                                                   tokenize=False, add_generation_prompt=False).strip()
                    if step_num != 0 and step_num != len(answer):
                        conv += "\n\n"
                    step_last_tokens.append(len(tok.encode(conv, add_special_tokens=False)) - 2)
                inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": input_ids}
                label_mask = torch.tensor([[0] * step_last_tokens[0] + [1] * (input_ids.shape[-1] - step_last_tokens[0])])
                step_last_tokens = torch.tensor([step_last_tokens])
                raw_reward = get_logps(model, inputs) - get_logps(ref_model, inputs)
                beta_reward = (EURUS_COEF * raw_reward * label_mask[:, 1:]).cumsum(-1)
                beta_reward = beta_reward.gather(dim=-1, index=step_last_tokens[:, 1:])
                out.append([float(torch.sigmoid(x)) for x in beta_reward[0]])
    return out
