"""Checks a stage runs before it loads a model or spends a rollout, and identities for resumable work.

Every check raises `ParamsError` naming the params key (`policy.model`, `judge.base_url`, ...), so the
stage prints one line `[stage] error: ...` and exits 2 within seconds, never after a model loaded:

- `check_folder`: a local folder must exist (a path is never taken for a hub name, which would spend
  a minute on retries and end in "couldn't connect to huggingface.co") and hold a config, a
  tokenizer and `*.safetensors` weights (pickle checkpoints, `*.bin`/`*.pt`, are never loaded:
  unpickling runs code); its config.json parses, its safetensors files are whole and their shapes are
  the config's (`check_weights`). `check_model`: that, for a causal LM to prompt, whose tokenizer encodes
  text to ids the model has and has a chat template (`check_tokenizer`). A PRM is checked by
  prmlab.prms.layouts.check_prm, which knows the layouts.
- `load_tokenizer`: a folder's tokenizer as generation and scoring load it.
- `check_server`: an OpenAI-compatible server must accept a TCP connection within 5 s; the error
  names the URL, credentials removed.
- `check_api_key_transport`: an API key goes over https, or plain http to a loopback host only.
- `model_identity`, `code_version`: what a resumable stage's shard fingerprint covers besides params
  and inputs, so shards made by other weights, another tokenizer or other code are never reused.
"""

from __future__ import annotations

import hashlib
import ipaddress
import socket
from pathlib import Path
from urllib.parse import urlsplit

from prmlab.core.credentials import redact  # the checks' errors never show credentials
from prmlab.core.manifest import looks_like_path, model_manifest
from prmlab.core.params import ParamsError

SERVER_TIMEOUT_S = 5.0
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_folder(key: str, model: str) -> Path | None:
    """`key` (e.g. `judge.model`): a local folder with config, tokenizer and whole safetensors weights whose shapes
    are its config's (returned), or a hub name (None: resolved by the loader)."""
    p = Path(model).expanduser()
    if not p.is_dir():
        if p.exists():
            raise ParamsError(f"{key}: {model} is a file, not a model folder")
        # `models/policy` has the shape of a hub name (org/name); when its parent folder exists here,
        # it is a path whose last part is missing, and fetching it from the hub would only fail later.
        if looks_like_path(model) or (p.parent != Path(".") and p.parent.is_dir()):
            raise ParamsError(f"{key}: model folder {model} does not exist (a path, not a hub name like org/name)")
        return None  # a hub name: resolved by the loader (pin a revision by downloading it to a folder)
    if not (p / "config.json").is_file():
        raise ParamsError(f"{key}: {model} has no config.json (not a transformers model folder)")
    if not any((p / f).is_file() for f in TOKENIZER_FILES):
        raise ParamsError(f"{key}: {model} has no tokenizer ({', '.join(TOKENIZER_FILES)})")
    if not any(p.glob("*.safetensors")):
        pickles = sorted(f.name for f in p.iterdir() if f.suffix in (".bin", ".pt", ".pth", ".ckpt"))
        why = f" (only pickle weights {pickles}, which are never loaded: convert them to safetensors)" if pickles else ""
        raise ParamsError(f"{key}: {model} has no *.safetensors weights{why}")
    check_weights(key, p)
    return p


def check_model(key: str, model: str) -> None:
    """A causal LM to prompt (policy, judge, a PRM's base): `check_folder`, then its kind and its tokenizer, read
    from config.json and the tokenizer before any weights load: a PRM sampled as a policy writes nonsense. (A PRM
    to score is checked by prmlab.prms.layouts.check_prm, which knows the layouts.)"""
    p = check_folder(key, model)
    if p is not None:
        check_model_kind(key, p)
        check_tokenizer(key, p, chat=True)


def safetensors_header(f: Path) -> dict:
    """A safetensors file's header ({tensor: {dtype, shape, data_offsets}}), read without loading a byte of
    weights; a file cut short (a copy or download that stopped) is refused by name: transformers' own load
    of it is one line naming the key, not a traceback."""
    import json
    import struct

    size = f.stat().st_size
    with open(f, "rb") as fh:
        head = fh.read(8)
        n = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
        try:
            if not 0 < n <= size - 8:
                raise ValueError
            header = json.loads(fh.read(n))
        except ValueError:
            raise ParamsError(f"{f}: not a readable safetensors file ({size} bytes; truncated?)") from None
    end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
    if size < 8 + n + end:
        raise ParamsError(f"{f}: truncated: {size} bytes, its header needs {8 + n + end} (copy or download it again)")
    return {k: t for k, t in header.items() if k != "__metadata__"}


def check_weights(key: str, p: Path) -> None:
    """config.json parses, every safetensors file is whole, and the weights have the shapes config.json says:
    the embedding is [vocab_size, hidden_size] and there are num_hidden_layers layers. A config whose hidden
    size differs from its weights ended in transformers' size-mismatch traceback, and one with more layers
    than the weights would have loaded with the missing layers freshly initialised, silently."""
    import json
    import re

    try:
        cfg = json.loads((p / "config.json").read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise ParamsError(f"{key}: {p}/config.json is not valid JSON ({e}; truncated?)") from None
    cfg = {**cfg, **(cfg.get("text_config") or {})}  # multimodal configs keep the LM's sizes there
    shapes: dict[str, list[int]] = {}
    for f in sorted(p.glob("*.safetensors")):
        shapes.update({k: t["shape"] for k, t in safetensors_header(f).items()})
    index = p / "model.safetensors.index.json"
    if index.is_file():
        try:
            wanted = set(json.loads(index.read_text())["weight_map"].values())
        except (ValueError, KeyError, TypeError):
            raise ParamsError(f"{key}: {index} is not a safetensors index (truncated?)") from None
        if missing := sorted(w for w in wanted if not (p / w).is_file()):
            raise ParamsError(f"{key}: {p} lacks {missing[:3]}, which {index.name} names")
    emb = next((v for k, v in shapes.items() if k.endswith(("embed_tokens.weight", "wte.weight"))), None)
    vocab, hidden = cfg.get("vocab_size"), cfg.get("hidden_size")
    if emb is not None and len(emb) == 2 and isinstance(vocab, int) and isinstance(hidden, int) and emb != [vocab, hidden]:
        raise ParamsError(f"{key}: {p}: config.json says vocab_size {vocab} and hidden_size {hidden}, but the embedding "
                          f"weights are {emb[0]} x {emb[1]} (a config from another model?)")
    layers = {int(m.group(1)) for k in shapes if (m := re.search(r"\.layers\.(\d+)\.", k))}
    n = cfg.get("num_hidden_layers")
    if layers and isinstance(n, int) and len(layers) != n:
        raise ParamsError(f"{key}: {p}: config.json says num_hidden_layers {n}, the weights hold {len(layers)} layers")


def load_tokenizer(path: str):
    """A model folder's tokenizer, padding on the left (generation), with a pad token."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


PROBE = "Step 1: 12 + 7 = 19, so the answer is $\\boxed{19}$."


def check_tokenizer(key: str, p: Path, chat: bool) -> None:
    """The folder's tokenizer loads, turns text into tokens the model has, and (`chat`: a model that is
    prompted) has a chat template. A folder with only tokenizer_config.json gave a 4-token tokenizer that
    encodes every text to []: training on nothing, scoring nothing, exit 0."""
    import json

    try:
        tok = load_tokenizer(str(p))
    except Exception as e:  # noqa: BLE001  (whatever the tokenizer library raises, one line naming the folder)
        raise ParamsError(f"{key}: {p}: its tokenizer does not load ({type(e).__name__}: "
                          f"{(str(e).splitlines() or [''])[0][:160]})") from None
    ids = tok.encode(PROBE, add_special_tokens=False)
    if len(ids) < 4:
        raise ParamsError(f"{key}: {p}: its tokenizer turns text into {len(ids)} token(s) (a vocabulary of {len(tok)}): "
                          "no tokenizer.json or vocabulary file beside tokenizer_config.json?")
    try:
        vocab = json.loads((p / "config.json").read_text()).get("vocab_size")
    except ValueError:
        vocab = None
    if isinstance(vocab, int):
        # Every token the tokenizer has, its special and added ones too (a PRM's step token <extra_0>): an id the
        # embedding has no row for ended in an IndexError mid-run.
        token, top = max(tok.get_vocab().items(), key=lambda kv: kv[1])
        if top >= vocab:
            raise ParamsError(f"{key}: {p}: its tokenizer gives {token!r} id {top}, beyond config.json's vocab_size "
                              f"{vocab} (a tokenizer from another model, or a token added without resizing?)")
    if chat and not getattr(tok, "chat_template", None):
        raise ParamsError(f"{key}: {p} has no chat template (tokenizer_config.json's chat_template, or "
                          "chat_template.jinja): the prompts are rendered by it")


def check_model_kind(key: str, p: Path) -> None:
    """A model to generate with must be a causal LM, not a PRM or classifier."""
    import json

    try:
        arch = json.loads((p / "config.json").read_text()).get("architectures") or []
    except ValueError as e:
        raise ParamsError(f"{key}: {p}/config.json is not valid JSON ({e})") from None
    if arch and not any(a.endswith("ForCausalLM") or a.endswith("LMHeadModel") for a in arch):
        raise ParamsError(f"{key}: {p} is a {arch[0]}, not a causal LM (a PRM or classifier cannot generate)")


def check_server(key: str, base_url: str, timeout_s: float = SERVER_TIMEOUT_S) -> None:
    """A TCP connection to the server of `base_url` within `timeout_s`, else ParamsError naming the URL."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ParamsError(f"{key}: {redact(base_url)!r} is not an http(s) URL")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            pass
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError | socket.timeout) else (e.strerror or type(e).__name__)
        raise ParamsError(f"{key}: cannot reach the server at {redact(base_url)} ({why}, {timeout_s:.0f} s limit)") from None


def check_api_key_transport(key: str, base_url: str, api_key: str | None) -> None:
    """Never send a key in clear text across a network: plain http only to a loopback host."""
    parts = urlsplit(base_url)
    if api_key and api_key != "EMPTY" and parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ParamsError(f"{key}: refusing to send the API key over plain http to {parts.hostname}; "
                          "use https (or an http server on 127.0.0.1)")


def check_backend(section: str, cfg) -> None:
    """The checks for a `BackendConfig` (params section `section`: policy or judge)."""
    import os

    if cfg.backend == "openai":
        check_api_key_transport(f"{section}.base_url", cfg.base_url, os.environ.get(cfg.api_key_env))
        check_server(f"{section}.base_url", cfg.base_url)
        if Path(cfg.model).expanduser().is_dir():  # its tokenizer renders raw-text prompts
            check_model(f"{section}.model", cfg.model)
    else:
        check_model(f"{section}.model", cfg.model)


def model_identity(model: str) -> dict:
    """A local folder: every file's hash (big files by size and mtime), weights and tokenizer alike;
    a hub name: the name. Reuses the manifest the DVC graph depends on."""
    if Path(model).expanduser().is_dir():
        return model_manifest("model", str(Path(model).expanduser()))
    return {"model": model}  # a hub name or a server's model name (check_model has vetted paths)


PACKAGE = Path(__file__).parents[1]  # src/prmlab
POLICY_SYSTEM = PACKAGE / "prompts" / "policy_system.txt"  # every policy prompt reaches the model through it


def code_files(*modules) -> list[Path]:
    """The source files of `modules` and of every prmlab module they import at module level, followed to the
    end: what loading them loads (those are a stage's DVC deps too; tests/graph_audit.py checks that every
    file a stage reads is one, so function-level imports are left to the modules passed in)."""
    import ast

    root = PACKAGE
    seen: set[Path] = set()
    todo = [Path(m.__file__) for m in modules]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for node in ast.parse(p.read_text()).body:  # module-level imports: what loading the module runs
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from prmlab.core import grading` loads the package and its module; a name that is no module
                # (`from prmlab.core.io import read_jsonl`) matches no file below
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for n in names:
                if n.startswith("prmlab."):
                    rel = n.split(".")[1:]
                    todo += [c for c in (root.joinpath(*rel).with_suffix(".py"), root.joinpath(*rel, "__init__.py"))
                             if c.is_file()]
    return sorted(seen)


def code_version(*modules) -> str:
    """md5 over the source of the modules that produce a stage's records and of every prmlab module they
    import (`code_files`: an edit of steps.py's answer extraction or of records.py must not let a resumed
    stage mix shards made by two versions), and over the policy's system prompt
    (`prmlab/prompts/policy_system.txt`): every policy prompt reaches the model through it. (The judge's
    template is in label_judge's fingerprint itself; hashing every template here would make a reworded critic
    prompt a dependency of sampling and MC labels.)"""
    h = hashlib.md5()
    for f in code_files(*modules):
        h.update(str(f.relative_to(PACKAGE)).encode())
        h.update(f.read_bytes())
    h.update(POLICY_SYSTEM.read_bytes())
    return h.hexdigest()
