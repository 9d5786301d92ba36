"""Params of the LLM backends (`policy`, `judge`: BackendConfig) and of sampling (Sampling), light (no backend
loads), so that a stage that only names a model (train_prm's base, the eval stages' critic off) reads its
params without prmlab.engines.generation. `check_sampling` checks a config's sampling when its params load.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Literal

from prmlab.core.params import ParamsError, check, url_secrets

DTYPES = ("auto", "float32", "float16", "bfloat16")  # what both engines take by name


@dataclass(frozen=True)
class BackendConfig:
    backend: Literal["transformers", "vllm", "openai"] = "transformers"
    model: str = "models/policy"
    dtype: str = "float32"
    seed: int = 0
    max_model_len: int = 4096
    batch_size: int = 64  # transformers: prompts per generate() call
    # vllm
    enable_prefix_caching: bool = True
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    kv_cache_gib: int = 2  # CPU only
    # openai-compatible server
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = 8
    max_retries: int = 5
    timeout_s: float = 120.0

    def __post_init__(self):
        check(self.max_model_len > 0, "max_model_len must be > 0")
        check(self.batch_size > 0, "batch_size must be > 0")
        check(self.tensor_parallel_size >= 1, "tensor_parallel_size must be >= 1")
        check(self.data_parallel_size >= 1, "data_parallel_size must be >= 1")
        check(0 < self.gpu_memory_utilization <= 1, "gpu_memory_utilization must be in (0, 1]")
        check(self.max_concurrency >= 1, "max_concurrency must be >= 1")
        check(self.dtype in DTYPES, f"dtype must be one of {list(DTYPES)}, got {self.dtype!r}")
        check(self.max_retries >= 0, f"max_retries must be >= 0, got {self.max_retries}")
        check(self.timeout_s > 0, f"timeout_s must be > 0, got {self.timeout_s}")
        # Params are recorded in dvc.lock (committed) and MLflow: no credential may sit in them
        secret = url_secrets(self.base_url)
        check(secret is None, f"base_url carries {secret}, which dvc.lock and MLflow would record: put the key in the "
                              "environment variable that api_key_env names (it is sent as a bearer token)")
        check(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env) is not None,
              "api_key_env must be the name of an environment variable (letters, digits, _), not a key; "
              "the value given is not shown")


@dataclass(frozen=True)
class Sampling:
    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = -1  # -1: off
    max_tokens: int = 256
    stop: list[str] = field(default_factory=list)
    seed: int = 0

    def __post_init__(self):
        check(self.n >= 1, f"n must be >= 1, got {self.n}")
        check(self.temperature >= 0, f"temperature must be >= 0, got {self.temperature}")
        check(0 < self.top_p <= 1, f"top_p must be in (0, 1], got {self.top_p}")
        check(self.top_k == -1 or self.top_k >= 1, f"top_k must be -1 (off) or >= 1, got {self.top_k}")
        check(self.max_tokens >= 1, f"max_tokens must be >= 1, got {self.max_tokens}")


class SamplingParams:
    """A params section that samples (sample, label_mc, label_judge, label_methods' judges, build_processbench) builds
    its Sampling here, once: from its fields `temperature`, `top_p`, `top_k` (-1 where it has none), `max_tokens`
    and `seed`, and its draws per prompt, the field `N_FIELD` names (label_mc calls them `k`). The fields stay each
    section's own, with its own defaults: they are its params keys (`label_mc.temperature`), which dvc.lock records."""

    N_FIELD = "n"

    def sampling(self, shard: int = 0) -> Sampling:
        # Each shard gets its own seed so a resumed run draws what the uninterrupted one would have.
        return Sampling(n=getattr(self, self.N_FIELD), temperature=self.temperature, top_p=self.top_p,
                        top_k=getattr(self, "top_k", -1), max_tokens=self.max_tokens, seed=self.seed + shard)


def check_sampling(section: str, make, **renamed: str) -> None:
    """Build a config's Sampling now (from `__post_init__`), so a bad temperature or max_tokens fails
    when params are read, naming `section.key`, not after the model loaded. `renamed`: Sampling field
    -> params key where they differ (label_mc calls n `k`)."""
    try:
        make()
    except ParamsError as e:
        field_, _, rest = str(e).partition(" ")
        if field_ not in {f.name for f in fields(Sampling)}:
            raise  # already names its key
        raise ParamsError(f"{section}.{renamed.get(field_, field_)} {rest}") from None
