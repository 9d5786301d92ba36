import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
import yaml

from prmlab.core.params import COMMITTED, PROFILE_ONLY, STAGES, ParamsError, check, load_params

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Cfg:
    k: int = 8
    temperature: float = 0.7
    search: Literal["exhaustive", "binary"] = "exhaustive"
    names: list[str] = field(default_factory=list)
    path: str | None = None

    def __post_init__(self):
        check(self.k >= 1, "k must be >= 1")


def write(tmp_path, text):
    p = tmp_path / "params.yaml"
    p.write_text(text)
    return p


def test_ok_and_int_to_float(tmp_path):
    c = load_params("s", Cfg, write(tmp_path, "s: {k: 4, temperature: 1, names: [a], path: null}"))
    assert c == Cfg(k=4, temperature=1.0, names=["a"])


@pytest.mark.parametrize("text,msg", [
    ("s: {kk: 4}", r"unknown key 's.kk' \(did you mean 's.k'\?\)"),
    ("s: {k: 'x'}", r"s.k: expected an integer"),
    ("s: {k: true}", r"s.k: expected an integer"),
    ("s: {search: greedy}", r"s.search: 'greedy' is not one of"),
    ("s: {names: [1]}", r"s.names\[0\]: expected a string"),
    ("s: {k: 0}", r"k must be >= 1"),
    ("t: {}", r"missing section 's'"),
    ("s: [1, 2]", r"s: expected a mapping"),
    # a key given twice: PyYAML kept the last value, exit 0; a section twice the same
    ("s:\n  k: 4\n  temperature: 1\n  k: 8\n", r"line 4: key 'k' given twice in one mapping \(first on line 2\)"),
    ("s: {k: 4}\ns: {k: 8}\n", r"line 2: key 's' given twice"),
])
def test_errors_name_the_key(tmp_path, text, msg):
    with pytest.raises(ParamsError, match=msg):
        load_params("s", Cfg, write(tmp_path, text))


@dataclass(frozen=True)
class Req:
    must: int


def test_missing_key(tmp_path):
    with pytest.raises(ParamsError, match="missing key 's.must'"):
        load_params("s", Req, write(tmp_path, "s: {}"))


def section_configs():
    from prmlab.core.params import ProfileConfig
    from prmlab.engines.cluster import EngineConfig
    from prmlab.engines.config import BackendConfig
    from prmlab.pipeline.bias import AnalyzeBiasConfig
    from prmlab.pipeline.bon import EvalBoNConfig
    from prmlab.pipeline.ceiling import CeilingConfig
    from prmlab.pipeline.data import RealConfig
    from prmlab.pipeline.label_methods import LabelMethodsConfig
    from prmlab.pipeline.labeling_config import LabelJudgeConfig, LabelMCConfig
    from prmlab.pipeline.prmbench import EvalPRMBenchConfig
    from prmlab.pipeline.processbench import BuildPBConfig, EvalPBConfig
    from prmlab.pipeline.sampling import SampleConfig
    from prmlab.prms.training import TrainPRMConfig
    from prmlab.toy.annotators import ToyHumanConfig
    from prmlab.toy.recipes import ToyJudgeConfig, ToyModelsConfig
    from prmlab.toy.world import ToyWorldConfig

    return {"profile": ProfileConfig, "toy": ToyWorldConfig, "toy_models": ToyModelsConfig, "toy_judge": ToyJudgeConfig, "toy_human": ToyHumanConfig, "real": RealConfig, "policy": BackendConfig, "judge": BackendConfig,
            "sample": SampleConfig, "sample_eval": SampleConfig, "label_mc": LabelMCConfig,
            "label_judge": LabelJudgeConfig, "label_methods": LabelMethodsConfig, "completer": BackendConfig, "train_prm": TrainPRMConfig, "build_processbench": BuildPBConfig,
            "eval_processbench": EvalPBConfig, "eval_bon": EvalBoNConfig, "eval_prmbench": EvalPRMBenchConfig,
            "analyze_bias": AnalyzeBiasConfig, "ceiling": CeilingConfig,
            "engine": EngineConfig}


@pytest.mark.parametrize("profile", ["params.yaml", "params/paper.yaml"])
def test_every_profile_loads_and_validates(profile):
    import yaml

    path = ROOT / profile
    data = yaml.safe_load(path.read_text())
    configs = section_configs()
    toy_only, real_only = {"toy", "toy_models", "toy_judge", "toy_human", "build_processbench", "ceiling"}, {"real"}
    expected = set(configs) - (real_only if profile == "params.yaml" else toy_only)
    # human_labels is {source: path}, no dataclass: human_labels.check_sources validates it with train_prm.sources.
    assert set(data) == expected | {"human_labels"}, f"{profile}: sections differ from the stages' configs"
    from prmlab.pipeline.human_labels import check_sources

    check_sources(data)
    loaded = {s: load_params(s, cls, path) for s, cls in configs.items() if s in expected}
    if profile != "params.yaml":
        # The paper profile must not depend on anything toy-only.
        assert loaded["profile"].name == "real"
        for sec in ("policy", "judge"):
            assert not loaded[sec].model.startswith("models/"), f"{sec}.model is a toy path"
        assert "oracle" not in loaded["train_prm"].sources
        assert loaded["eval_processbench"].threshold_subset == "gsm8k"
        assert set(loaded["real"].eval) == {"gsm8k", "math", "minerva_math", "gaokao2023en", "olympiadbench",
                                            "college_math", "mmlu_stem"}


@pytest.mark.parametrize("profile", ["params.yaml", "params/paper.yaml"])
def test_dvc_exp_set_param_changes_only_the_line_it_sets(profile, tmp_path):
    """`dvc exp run -S eval_bon.n=16` rewrites params.yaml through DVC's round-trip YAML writer; the
    profiles are written as it writes (no flow mapping past 80 columns, empty for null), so the
    diff of a sweep is the swept line and nothing else."""
    from dvc.utils.serialize import modify_yaml

    p = tmp_path / "params.yaml"
    before = (ROOT / profile).read_text()
    p.write_text(before)
    with modify_yaml(p) as d:
        d["eval_bon"]["n"] = 16
    changed = [(a, b) for a, b in zip(before.splitlines(), p.read_text().splitlines()) if a != b]
    assert len(before.splitlines()) == len(p.read_text().splitlines())
    assert [b.split("#")[0].strip() for _, b in changed] == ["n: 16"], changed


def _keys(cls, base: dict, prefix: str):
    """(params key, field type, a mapping-maker: value -> the section's mapping with that key set) for every
    field of config `cls`, nested config dataclasses followed (toy_models.policy.hidden)."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            inner = base.get(f.name) or {}
            for key, t, make in _keys(tp, inner, f"{prefix}.{f.name}"):
                yield key, t, (lambda v, make=make, name=f.name: {**base, name: make(v)})
        else:
            yield f"{prefix}.{f.name}", tp, (lambda v, name=f.name: {**base, name: v})


def test_every_params_key_is_checked_for_type_and_range():
    """No bad value passes unnamed: every key of every params section (nested sections too) refuses a value of the
    wrong type, and every number refuses an out-of-range one: -10^9 (no params number is negative unless its
    config's MINIMUM says so, and then one below that is refused), NaN and infinities; a mapping of numbers
    (toy_models.flaw_mix) refuses a negative entry. Each error names the key. (`train_prm.weight_decay: -1`
    was accepted.)"""
    import math
    import typing

    import yaml

    from prmlab.core.params import from_mapping

    toy, paper = (yaml.safe_load((ROOT / f).read_text()) for f in ("params.yaml", "params/paper.yaml"))
    tried = 0
    for section, cls in section_configs().items():
        base = toy[section] if section in toy else paper[section]
        for key, tp, make in _keys(cls, base, section):
            args = set(typing.get_args(tp)) | {tp}
            bad = [[1] if str in args else "abc"]  # a wrong type
            if args & {int, float}:
                floor = getattr(cls, "MINIMUM", {}).get(key.split(".")[-1], 0)
                bad += [-10**9, floor - 1] + ([math.nan, math.inf, -math.inf] if float in args else [])
            if typing.get_origin(tp) is dict and typing.get_args(tp)[1] is float:
                bad += [{"x": -1.0}]
            for value in bad:
                with pytest.raises(ParamsError) as e:
                    from_mapping(cls, make(value), section)
                assert key in str(e.value), (key, value, str(e.value))
                tried += 1
    assert tried > 300, tried


def test_the_stage_lists_are_dvc_yamls():
    """params.STAGES is dvc.yaml's stage groups in order, and PROFILE_ONLY its groups generated `foreach` over one
    profile (the pipeline flow, the report and the seeds' runners read them: one list, checked here)."""
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert list(STAGES) == list(spec)
    assert PROFILE_ONLY == {name: s["foreach"].split(".")[1].rstrip("}") for name, s in spec.items()
                            if str(s.get("foreach", "")).startswith("${profile.")}
    assert set(COMMITTED) <= {n for n, p in PROFILE_ONLY.items() if p == "toy"}
    # the stages an `engine` key may name are EngineConfig's (every other one is refused where params are read)
    import dataclasses

    from prmlab.core.params import ENGINE_STAGES
    from prmlab.engines.cluster import EngineConfig

    assert [f.name for f in dataclasses.fields(EngineConfig)] == [*ENGINE_STAGES, "ray"] and set(ENGINE_STAGES) <= set(STAGES)


def test_the_demo_lays_valid_sizes_over_the_toy_profile(tmp_path):
    """params/demo.yaml (`make demo`) over params.yaml: every key it sets is one params.yaml has, every section still
    validates, and it is smaller than the study where it says so; a typo in it is one line, never the study's size."""
    import yaml

    from prmlab.runs.store import demo_params

    study = yaml.safe_load((ROOT / "params.yaml").read_text())
    demo = demo_params(study, yaml.safe_load((ROOT / "params" / "demo.yaml").read_text()))
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(demo, sort_keys=False))
    for s, cls in section_configs().items():
        if s != "real":
            load_params(s, cls, path)
    assert demo["toy"]["n_train"] < study["toy"]["n_train"] and demo["train_prm"]["steps"] < study["train_prm"]["steps"]
    assert set(demo["train_prm"]["sources"]) < set(study["train_prm"]["sources"]) and "oracle" in demo["train_prm"]["sources"]
    assert demo["toy_models"] == study["toy_models"] and demo["toy_judge"] == study["toy_judge"]  # the committed models
    for over, says in (({"toy": {"n_trian": 5}}, "params/demo.yaml: toy.n_trian is not a params.yaml key"),
                       ({"tyo": {"n_train": 5}}, "params/demo.yaml: section 'tyo' is not a params.yaml section")):
        with pytest.raises(SystemExit, match=re.escape(says)):
            demo_params(study, over)
