"""The toy tokenizer: byte-level BPE with single-digit tokens, saved as a transformers tokenizer.

Byte-level means any text encodes (LaTeX, unicode: real ProcessBench runs through the toy models in
tests). Digits are always single tokens so the tiny models can learn arithmetic digit by digit;
merges are learned from the toy corpus so prompts stay short. The chat template is Qwen2.5's ChatML,
and `<extra_0>` is one special token: the PRM's step separator, as in Qwen2.5-Math-PRM.
"""

from __future__ import annotations

from collections.abc import Iterable

PAD, IM_START, IM_END, STEP = "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<extra_0>"
SPECIALS = [PAD, IM_START, IM_END, STEP]

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def build_tokenizer(corpus: Iterable[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=PAD,
        unk_token=None,
        clean_up_tokenization_spaces=False,
    )
    fast.add_special_tokens({"additional_special_tokens": [IM_START, STEP]})
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    return fast
