"""What LLM generators (prmlab.engines.generation) and PRM scorers (prmlab.prms.model, prmlab.prms.layouts) share, below both: closing
an engine (`Closing`, `shutdown_vllm`), whether a GPU is here, and text from data made unable to become a
control token (`plain_text`). Its own module so that a scorer never loads the LLM backends: an edit to a
backend reruns only the stages that generate.
"""

from __future__ import annotations

import re


class Closing:
    """`with` support for anything holding an engine: `__exit__` calls `close()`."""

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def shutdown_vllm(llm) -> None:
    """Stop a vLLM engine's worker process now rather than at interpreter exit."""
    if llm is not None:
        try:
            llm.llm_engine.engine_core.shutdown()
        except Exception:
            pass


# Control-token shapes of the chat models we know (`<|im_end|>`, `<extra_0>`), besides the tokenizer's own.
_CONTROL = re.compile(r"<\|[A-Za-z0-9_]{1,40}\|>|<extra_\d+>")
_JOINER = "\u2060"  # WORD JOINER: invisible, and no tokenizer has it inside a control token


def control_tokens(tokenizer) -> set[str]:
    """The texts a tokenizer turns into control tokens: its added and special tokens."""
    return {c for c in set(getattr(tokenizer, "get_added_vocab", dict)()) | set(getattr(tokenizer, "all_special_tokens", [])) if c}


def plain_text(text: str, tokenizer=None) -> str:
    """Break every control token's text in `text` with an invisible joiner after its first character,
    so tokenizers read it as plain text. Text without one is returned unchanged (same ids as before)."""
    controls = set(_CONTROL.findall(text))
    if tokenizer is not None:
        controls |= {c for c in control_tokens(tokenizer) if c in text}
    for c in sorted(controls, key=len, reverse=True):
        text = text.replace(c, c[0] + _JOINER + c[1:])
    return text


def has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False
