"""Every stage's core takes a frozen inputs dataclass, the type its `prepare` returns: what the core works on is a
named, typed value a benchmark or a test can build and pass (`core(cfg, inputs, run)`), never a positional tuple
whose order only `prepare` knows. Each stage module's `run_stage(...)` call is captured, not run."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
import typing
from pathlib import Path

import pytest

STAGES = sorted(p.stem for p in (Path(__file__).parents[2] / "stages").glob("*.py") if p.stem != "__init__")


def captured(module: str, argv: list[str], monkeypatch) -> list[dict]:
    """The keyword arguments of each run_stage call the stage module's main() makes (consensus makes one per mode)."""
    mod = importlib.import_module(f"stages.{module}")
    calls: list[dict] = []
    monkeypatch.setattr(mod, "run_stage", lambda *a, **kw: calls.append(kw))
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.delenv("DVC_STAGE", raising=False)
    mod.main()
    return calls


@pytest.mark.parametrize("module", STAGES)
def test_each_core_takes_the_frozen_inputs_its_prepare_returns(module, monkeypatch):
    calls = captured(module, ["stage"], monkeypatch)
    if module == "consensus":  # prm_data@<source>: the same module, the other core
        calls += captured(module, ["stage", "--source", "judge"], monkeypatch)
    assert calls, f"stages/{module}.py: main() made no run_stage call"
    for kw in calls:
        core, prepare = kw["core"], kw.get("prepare")
        params = list(inspect.signature(core).parameters)
        assert params[:1] == ["cfg"] and len(params) == 3, f"{core.__name__}{params}: expected core(cfg, inputs, run)"
        inputs = typing.get_type_hints(core).get(params[1])
        assert inputs is not None and dataclasses.is_dataclass(inputs) and inputs.__dataclass_params__.frozen, (
            f"{core.__module__}.{core.__name__}: its inputs ({params[1]}) are not annotated with a frozen dataclass")
        assert prepare is not None, f"stages/{module}.py: no prepare, so nothing builds {inputs.__name__}"
        if prepare.__name__ != "<lambda>":  # a stage module's one-line lambda builds the type by name
            assert typing.get_type_hints(prepare).get("return") is inputs, (
                f"{prepare.__module__}.{prepare.__name__} does not declare that it returns {inputs.__name__}")
        else:
            assert f"{inputs.__name__}(" in inspect.getsource(prepare), f"stages/{module}.py's prepare lambda"
        worker = kw.get("worker")
        if worker is not None:  # torchrun's other processes get the same value
            assert typing.get_type_hints(worker).get(list(inspect.signature(worker).parameters)[1]) is inputs


def test_a_frozen_inputs_value_refuses_rebinding():
    """Frozen: a core cannot rebind what prepare checked (what the fingerprint of its shards hashed)."""
    from prmlab.pipeline.bias import BiasInputs

    got = BiasInputs([], {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.responses = []
