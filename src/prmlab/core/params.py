"""params.yaml -> frozen config dataclasses, with errors that name the key.

    cfg = load_params("label_mc", LabelMCConfig)            # reads ./params.yaml
    cfg = load_params("label_mc", LabelMCConfig, "params/paper.yaml")

An unknown key (typo), a missing key or a value of the wrong type raises `ParamsError` naming
`section.key` (with a "did you mean" for typos). Configs validate their own ranges in
`__post_init__` by raising ParamsError too. `PRMLAB_PARAMS` overrides the default file.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import typing
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import yaml

from prmlab.core.records import RecordError, typed

C = TypeVar("C")
DEFAULT_PARAMS = "params.yaml"


class ParamsError(ValueError):
    pass


def params_path(path: str | Path | None = None) -> Path:
    return Path(path or os.environ.get("PRMLAB_PARAMS", DEFAULT_PARAMS))


class _Twice(yaml.YAMLError):
    def __init__(self, key, line: int, first: int):
        super().__init__(f"line {line}: key {key!r} given twice in one mapping (first on line {first})")


class _UniqueKeys(yaml.SafeLoader):
    """YAML's safe loader that refuses a key given twice in one mapping: PyYAML keeps the last value silently, so a
    pasted override below the original would run a study other than the one its reader sees first."""


def _mapping(loader: _UniqueKeys, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, typing.Hashable) and key in seen:
            raise _Twice(key, key_node.start_mark.line + 1, seen[key])
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


_UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def read_params(path: str | Path | None = None) -> dict[str, Any]:
    p = params_path(path)
    try:
        data = yaml.load(p.read_text(encoding="utf-8"), Loader=_UniqueKeys)  # noqa: S506 (a safe loader)
    except FileNotFoundError:
        raise ParamsError(f"{p}: params file not found") from None
    except IsADirectoryError:
        raise ParamsError(f"{p}: is a folder, not a params file") from None
    except UnicodeDecodeError as e:
        line = p.read_bytes()[: e.start].count(b"\n") + 1
        raise ParamsError(f"{p}: line {line}: not UTF-8 (byte {e.object[e.start]:#04x})") from None
    except _Twice as e:
        raise ParamsError(f"{p}: {e}") from None
    except yaml.YAMLError as e:
        raise ParamsError(f"{p}: invalid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ParamsError(f"{p}: expected a mapping of sections at the top level")
    _no_secret_urls(data, "")
    if isinstance(engine := data.get("engine"), dict):  # its other errors are EngineConfig's, where a stage loads it
        for k in engine:
            if k != "ray" and k not in ENGINE_STAGES:
                raise ParamsError(f"engine.{k}: {k!r} has no engine setting, it runs in its own process whatever this "
                                  f"says (the stages with one: {', '.join(ENGINE_STAGES)})")
    return data


def url_secrets(url: str) -> str | None:
    """What of `url` would put a secret wherever the URL is written (dvc.lock, MLflow, logs, reports), None if
    nothing: a user name or password, or any query string or fragment, whatever its names (`?subscription-key=`,
    `?access_key=`, `?sig=`, `#access_token=`: no list of names tells a credential from a setting). Values are
    never shown, and names only when short (a bare `?<key>` is a name)."""
    try:
        parts = urlsplit(url)
        userinfo = parts.username is not None or parts.password is not None
    except ValueError:
        return "text that does not parse as a URL (not shown)"
    if userinfo:
        return "a user name or password"
    if parts.query:
        names = query_names(parts.query)
        return f"a query string ({', '.join(f'{k}=' for k in names) if all(names) else 'not shown'})"
    if parts.fragment:
        return "a fragment (#..., not shown)"
    return None


def query_names(query: str) -> list[str | None]:
    """The names of a URL query's parts, each None where it may be a secret itself: a part without `=` (`?<key>`)
    or a name over 32 characters."""
    return [part.split("=", 1)[0] if "=" in part and len(part.split("=", 1)[0]) <= 32 else None
            for part in re.split(r"[&;]", query)]


URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _no_secret_urls(node: Any, key: str) -> None:
    """No URL anywhere in a params file carries a credential (`url_secrets`): DVC records params in dvc.lock
    (committed) and every stage logs its own to MLflow, so one there is refused where the file is read, before
    any stage records anything, naming its key and never showing the value."""
    if isinstance(node, str) and URL.match(node) and (what := url_secrets(node)):
        raise ParamsError(f"{key} carries {what}, which dvc.lock and MLflow would record in clear: leave it out of "
                          "params (a backend's key goes in the environment variable its api_key_env names, sent as "
                          "a bearer token)")
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(k, str) and URL.match(k):  # a URL as a name: said by its parent, never echoed
                _no_secret_urls(k, f"a key of {key or 'the top level'}")
            _no_secret_urls(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _no_secret_urls(v, f"{key}[{i}]")


def _type_ok(value: Any, tp: Any, key: str) -> Any:
    """`value` checked against a type hint by the records' checker (ints made floats where a float is
    wanted); a nested config dataclass is read by from_mapping."""
    if dataclasses.is_dataclass(tp):
        return from_mapping(tp, value, key)
    try:
        return typed(key, value, tp, coerce=True, field=False)
    except RecordError as e:
        raise ParamsError(str(e)) from None


def _not_negative(value: Any, key: str, minimum: float = 0) -> None:
    """The range every params number has unless its config says otherwise: none is negative (a seed, a
    size, a rate, a share, a count), inside lists and mappings too (`toy_models.flaw_mix.<kind>`). A config
    names the few that may be (`MINIMUM = {"top_k": -1}`: -1 is "off"); tighter ranges are its own checks."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float) and value < minimum:
        raise ParamsError(f"{key}: {value} is below {minimum} (params numbers are >= {minimum} here)"
                          if minimum else f"{key}: {value} is negative (params numbers here are >= 0)")
    if isinstance(value, dict):
        for k, v in value.items():
            _not_negative(v, f"{key}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _not_negative(v, f"{key}[{i}]")


def from_mapping(cls: type[C], data: Any, section: str) -> C:
    if not isinstance(data, dict):
        raise ParamsError(f"{section}: expected a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    flds = {f.name: f for f in dataclasses.fields(cls)}
    for k in data:
        if k not in flds:
            near = difflib.get_close_matches(str(k), list(flds), n=1)
            hint = f" (did you mean '{section}.{near[0]}'?)" if near else ""
            raise ParamsError(f"unknown key '{section}.{k}'{hint}; known keys: {sorted(flds)}")
    kwargs = {}
    for name, f in flds.items():
        if name in data:
            kwargs[name] = _type_ok(data[name], hints[name], f"{section}.{name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ParamsError(f"missing key '{section}.{name}'")
    try:
        made = cls(**kwargs)  # the config's own checks first: their messages say the key's real range
        for name, value in kwargs.items():
            if not dataclasses.is_dataclass(hints[name]):  # a nested config checked its own numbers
                _not_negative(value, f"{section}.{name}", getattr(cls, "MINIMUM", {}).get(name, 0))
        return made
    except ParamsError as e:
        # Every check names its params key: one written as a bare field ("batch_size must be > 0",
        # shared by the policy and judge sections) gets its section here.
        msg = str(e)
        if msg.startswith((f"{section}.", f"{section}:", f"{section} ")):
            raise
        field_ = msg.split(" ", 1)[0].rstrip(":")
        raise ParamsError(f"{section}.{msg}" if field_ in flds else f"{section}: {msg}") from None
    except (TypeError, ValueError) as e:
        raise ParamsError(f"{section}: {e}") from None


def load_params(section: str, cls: type[C], path: str | Path | None = None) -> C:
    data = read_params(path)
    if section not in data and getattr(cls, "OPTIONAL", False):  # a section whose defaults are a whole answer
        return cls()
    if section not in data:
        near = difflib.get_close_matches(section, list(data), n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        raise ParamsError(f"{params_path(path)}: missing section '{section}'{hint}")
    return from_mapping(cls, data[section], section)


def check(cond: bool, msg: str) -> None:
    """For config `__post_init__` validation."""
    if not cond:
        raise ParamsError(msg)


# dvc.yaml's stage groups in order, and which exist in one profile only (dvc.yaml generates them `foreach` over
# params `profile`; tests/core/test_params.py checks the two agree). The toy models (COMMITTED) are in git: a fresh
# clone's study and every seed reuse them.
STAGES = ("problems", "bootstrap", "train_judge", "inputs", "sample", "label_mc", "label_judge", "label_method", "consensus",
          "toy_human",
          "human_data", "prm_data", "train_prm", "ceiling", "build_processbench", "sample_eval", "eval_processbench",
          "eval_bon", "eval_prmbench", "analyze_bias", "report")
PROFILE_ONLY = {"problems": "toy", "bootstrap": "toy", "train_judge": "toy", "toy_human": "toy_arms", "ceiling": "toy_arms",
                "build_processbench": "toy", "inputs": "real", "eval_prmbench": "real"}
PROFILE_OF = {"toy": "toy", "real": "real", "toy_arms": "toy"}  # each `profile` list: the profile its stages belong to
COMMITTED = ("bootstrap", "train_judge")
# The stages whose generation runs here or on Ray (prmlab.engines.cluster.EngineConfig's fields; tests/core/test_params.py checks they
# agree): `engine.<another stage>` is refused wherever params are read (`engine.eval_bon: ray` had run locally without
# a word, while label_mc, which loads the section, refused the same file).
ENGINE_STAGES = ("sample", "sample_eval", "label_mc", "label_judge", "toy_human", "ceiling")
# Every seed of the study: seed k adds k to each (flows.seeds, scripts/seeds_plain.py); seed 0 is the committed study.
SEED_KEYS = ("toy.seed", "sample.seed", "sample_eval.seed", "label_mc.seed", "label_judge.seed", "train_prm.seed",
             "build_processbench.seed")


def shift_seeds(params: dict, k: int) -> dict[str, int]:
    """{key: value} for seed k: every seed key this profile has, shifted by k."""
    return {key: int(params[sec][name]) + k for key in SEED_KEYS
            for sec, name in [key.split(".")] if name in (params.get(sec) or {})}


@dataclasses.dataclass(frozen=True)
class ProfileConfig:
    """`profile` in params: the lists dvc.yaml generates its one-profile stages from (foreach)."""

    toy: list[str] = dataclasses.field(default_factory=list)
    real: list[str] = dataclasses.field(default_factory=list)
    toy_arms: list[str] = dataclasses.field(default_factory=list)  # [toy]: toy_human@toy and ceiling@toy; [] in a seed

    def __post_init__(self):
        check((self.toy, self.real) in ((["toy"], []), ([], ["real"])),
              "profile: either toy: [toy] and real: [] (the toy profile) or toy: [] and real: [real] (the real one)")
        check(self.toy_arms in ([], self.toy), "profile.toy_arms: [toy] in the toy profile (or [], a confirmation "
              "seed without the ceiling and human-label arms); [] in the real one")

    def has(self, stage: str) -> bool:
        """Whether dvc.yaml generates stage group `stage` under this profile (its `foreach` list is not empty)."""
        return stage not in PROFILE_ONLY or bool(getattr(self, PROFILE_ONLY[stage]))

    @property
    def name(self) -> str:
        return "toy" if self.toy else "real"
