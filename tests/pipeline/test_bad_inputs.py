"""Bad-input catalogue: every bad input ends in one named error (file, line and field, or
the params key) before any model loads, or in a counted skip that the stage's metrics and summary
show; never a silent wrong result. docs/bad-inputs.md keeps the table of these cases.

Most cases call the readers and validators the stages call; a few run a stage's CLI (one process
each, run side by side) for the one-line `[stage] error: ...` and exit 2; one runs label_mc for real
and kills it after its first shard (resume, stale shards, MLflow, temp files, permissions).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from prmlab.core.io import DataError, read_json, read_jsonl
from prmlab.core.params import ParamsError, load_params
from prmlab.core.records import JudgeLabel, MCLabel, PRMExample, Problem, ProcessBenchItem, Response
from prmlab.engines.config import BackendConfig

ROOT = Path(__file__).resolve().parents[2]

RESP = {"problem_id": "p0", "response_id": "r0", "steps": ["1 + 1 = 2", "2 * 3 = 6", "The answer is 6"],
        "answer": "6", "correct": True}
MC = {"response_id": "r0", "soft": [1.0, 0.5, 0.0], "hard": [1, 1, 0], "first_error": 2, "rollouts": 16}
JUDGE = {"response_id": "r0", "first_error": 1, "parsed": True, "raw": ["1"], "votes": [1]}
EXAMPLE = {"prompt": "q", "completions": ["a", "b"], "labels": [1, 0], "soft": None, "response_id": "r0"}
ITEM = {"id": "pb0", "generator": "g", "problem": "q", "steps": ["a", "b", "c"], "final_answer_correct": False,
        "label": 1, "subset": "toy"}
PROBLEM = {"id": "p0", "source": "toy", "question": "q", "gold_answer": "6"}


def _write_lines(path: Path, lines: list[str | bytes]) -> Path:
    path.write_bytes(b"".join((ln if isinstance(ln, bytes) else ln.encode()) + b"\n" for ln in lines))
    return path


def _bad(good: dict, **change) -> dict:
    d = {**good, **change}
    return {k: v for k, v in d.items() if v is not DROP}


DROP = object()

# (case id, record type, good record, bad line 2 (a dict, or raw bytes), the exact message after "<file>:2: ")
RECORD_CASES = [
    ("steps-as-string", Response, RESP, _bad(RESP, steps="abc"), "field 'steps': expected a list, got string 'abc'"),
    ("correct-as-string", Response, RESP, _bad(RESP, correct="false"), "field 'correct': expected true/false, got string 'false'"),
    ("steps-empty", Response, RESP, _bad(RESP, steps=[]), "field 'steps': a response needs at least one step"),
    ("step-not-a-string", Response, RESP, _bad(RESP, steps=["a", 2]), "field 'steps[1]': expected a string, got integer 2"),
    ("true-first-error-out-of-range", Response, RESP, _bad(RESP, true_first_error=7), "field 'true_first_error': 7 outside -1..2"),
    ("missing-key", Response, RESP, _bad(RESP, correct=DROP), "missing key(s) ['correct'] for Response"),
    ("unknown-key", Response, RESP, _bad(RESP, corect=True), "unknown key(s) ['corect'] for Response"),
    ("duplicate-response-id", Response, RESP, RESP, "field 'response_id': duplicate 'r0' (first on line 1)"),
    ("not-an-object", Response, RESP, [1, 2], "expected a JSON object for Response, got list"),
    ("mc-soft-nan", MCLabel, MC, b'{"response_id": "r1", "soft": [NaN, 1.0], "hard": [1, 1], "first_error": -1, "rollouts": 8}',
     "field 'soft[0]': expected a finite number, got number nan"),
    ("mc-soft-above-1", MCLabel, MC, _bad(MC, response_id="r1", soft=[1.0, 1.5, 0.0]), "field 'soft[1]': 1.5 is not a probability in [0, 1]"),
    ("mc-hard-not-binary", MCLabel, MC, _bad(MC, response_id="r1", hard=[1, 2, 0]), "field 'hard': labels must be 0 or 1, got [0, 1, 2]"),
    ("mc-first-error-disagrees", MCLabel, MC, _bad(MC, response_id="r1", first_error=0),
     "field 'first_error': 0 disagrees with the hard labels (first 0 at 2)"),
    ("mc-soft-hard-lengths", MCLabel, MC, _bad(MC, response_id="r1", soft=[1.0]), "field 'soft': 1 values for 3 hard labels"),
    ("judge-first-error-minus-5", JudgeLabel, JUDGE, _bad(JUDGE, response_id="r1", first_error=-5), "field 'first_error': -5 < -1"),
    ("judge-parsed-without-index", JudgeLabel, JUDGE, _bad(JUDGE, response_id="r1", first_error=None),
     "field 'parsed': True but first_error is None"),
    ("judge-first-error-as-string", JudgeLabel, JUDGE, _bad(JUDGE, response_id="r1", first_error="2"),
     "field 'first_error': expected an integer or null, got string '2'"),
    ("example-labels-length", PRMExample, EXAMPLE, _bad(EXAMPLE, labels=[1]), "field 'labels': 1 labels for 2 steps"),
    ("example-soft-negative", PRMExample, EXAMPLE, _bad(EXAMPLE, soft=[-0.1, 0.0]), "field 'soft[0]': -0.1 is not a probability in [0, 1]"),
    ("pb-label-7-on-3-steps", ProcessBenchItem, ITEM, _bad(ITEM, id="pb1", label=7), "field 'label': 7 outside -1..2"),
    ("pb-label-minus-3", ProcessBenchItem, ITEM, _bad(ITEM, id="pb1", label=-3), "field 'label': -3 outside -1..2"),
    ("pb-duplicate-id", ProcessBenchItem, ITEM, ITEM, "field 'id': duplicate ('toy', 'pb0') (first on line 1)"),
    ("problem-id-not-string", Problem, PROBLEM, _bad(PROBLEM, id=3), "field 'id': expected a string, got integer 3"),
    ("malformed-json", Response, RESP, b'{"problem_id": "p0",', "malformed JSON (Expecting property name enclosed in double quotes at column 21)"),
    ("non-utf8-byte", Response, RESP, b'{"problem_id": "p\xff"}', "not UTF-8 (byte 0xff at column 18)"),
]


@pytest.mark.parametrize("cls,good,bad,message", [c[1:] for c in RECORD_CASES], ids=[c[0] for c in RECORD_CASES])
def test_bad_record_is_named_by_file_line_field(tmp_path, cls, good, bad, message):
    path = _write_lines(tmp_path / "in.jsonl", [json.dumps(good), bad if isinstance(bad, bytes) else json.dumps(bad)])
    with pytest.raises(DataError) as e:
        read_jsonl(path, cls)
    assert str(e.value) == f"{path}:2: {message}"


def test_good_records_read_back(tmp_path):
    # the catalogue's good records are valid: each case above fails on its bad line only
    for cls, good in [(Response, RESP), (MCLabel, MC), (JudgeLabel, JUDGE), (PRMExample, EXAMPLE), (ProcessBenchItem, ITEM),
                      (Problem, PROBLEM)]:
        assert read_jsonl(_write_lines(tmp_path / f"{cls.__name__}.jsonl", [json.dumps(good)]), cls)[0].to_dict() | good == \
            read_jsonl(tmp_path / f"{cls.__name__}.jsonl", cls)[0].to_dict()


def test_non_utf8_json_file(tmp_path):
    p = tmp_path / "m.json"
    p.write_bytes(b'{"a": "\xfe"}')
    with pytest.raises(DataError, match=rf"^{p}: not UTF-8 \(byte 0xfe at offset 7\)$"):
        read_json(p)


# --- labels against their responses (consensus), scores (analyze_bias) ----------------------------

LABEL_FIT_CASES = [
    ("judge-first-error-99", "judge", _bad(JUDGE, first_error=99),
     "field 'first_error': 99 outside -1..2 (response r0 has 3 steps)"),
    ("mc-label-of-unknown-response", "mc", _bad(MC, response_id="r9"), "field 'response_id': 'r9' is not a response in {samples}"),
    ("mc-more-labels-than-steps", "mc", _bad(MC, soft=[1.0] * 5, hard=[1] * 5, first_error=-1),
     "field 'hard': 5 labels for a response of 3 steps"),
    # new step text under an old response id once got the old labels, silently
    ("judge-label-of-other-text", "judge",
     _bad(JUDGE, content_md5=Response.from_dict({**RESP, "steps": ["a", "b", "c"]}).content_md5()),
     "field 'content_md5': the label was made for other text than response 'r0' in {samples} "
     "(stale labels: rerun the labelling stage)"),
]


@pytest.mark.parametrize("kind,bad,message", [c[1:] for c in LABEL_FIT_CASES], ids=[c[0] for c in LABEL_FIT_CASES])
def test_labels_must_fit_their_response(tmp_path, kind, bad, message):
    from prmlab.pipeline.training_sets import labels_fitting

    samples = _write_lines(tmp_path / "samples.jsonl", [json.dumps(RESP)])
    path = _write_lines(tmp_path / f"{kind}.jsonl", [json.dumps(bad)])
    with pytest.raises(DataError) as e:
        labels_fitting(str(path), MCLabel if kind == "mc" else JudgeLabel, read_jsonl(samples, Response), str(samples))
    assert str(e.value) == f"{path}:1: " + message.format(samples=samples)


SCORE_ROW = {"prm": "mc_hard", "response_id": "r0", "problem_id": "p0", "correct": True, "true_first_error": -1}
SCORE_CASES = [
    ("score-nan", b'[0.9, NaN]', "field 'step_scores[1]': nan is not a probability in [0, 1]"),
    ("score-minus-inf-last-step", b'[0.9, -Infinity]', "field 'step_scores[1]': -inf is not a probability in [0, 1]"),
    ("score-above-1", b'[1.5, 0.2]', "field 'step_scores[0]': 1.5 is not a probability in [0, 1]"),
    ("scores-not-a-list", b'"0.9"', "field 'step_scores': expected a list of probabilities, got '0.9'"),
]


@pytest.mark.parametrize("scores,message", [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES])
def test_bad_bon_scores(tmp_path, scores, message):
    from prmlab.analysis.metrics import read_score_rows

    ok = json.dumps(SCORE_ROW | {"step_scores": [0.9, 0.1]})
    bad = json.dumps(SCORE_ROW).encode()[:-1] + b', "step_scores": ' + scores + b"}"
    path = _write_lines(tmp_path / "scores.jsonl", [ok, bad])
    with pytest.raises(DataError) as e:
        read_score_rows(str(path), ("prm", "problem_id", "response_id"))
    assert str(e.value) == f"{path}:2: {message}"


def test_processbench_folder_loader_types(tmp_path):
    from prmlab.pipeline.data import load_processbench

    (tmp_path / "gsm8k.json").write_text(json.dumps([ITEM | {"final_answer_correct": "false"}]))
    with pytest.raises(DataError) as e:
        load_processbench("gsm8k", str(tmp_path))
    assert str(e.value) == f"{tmp_path / 'gsm8k.json'}[0]: field 'final_answer_correct': expected true/false, got 'false'"


# --- params, templates, models, servers: checked before any model loads ---------------------------

def _params(tmp_path: Path, **sections) -> Path:
    data = yaml.safe_load((ROOT / "params.yaml").read_text())
    for sec in ("eval_processbench", "eval_bon"):  # the toy's oracle_ceiling exists once ceiling@toy has run
        data[sec]["reference_prms"] = {}
    for sec, kv in sections.items():
        data[sec] = {**data[sec], **kv}
    p = tmp_path / "params.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


PARAM_CASES = [
    ("mc-temperature-negative", "prmlab.pipeline.labeling_config:LabelMCConfig", "label_mc", {"temperature": -0.5},
     "label_mc.temperature must be >= 0, got -0.5"),
    ("mc-k-zero", "prmlab.pipeline.labeling_config:LabelMCConfig", "label_mc", {"k": 0}, "label_mc.k must be >= 1"),
    ("judge-max-tokens-zero", "prmlab.pipeline.labeling_config:LabelJudgeConfig", "label_judge", {"max_tokens": 0},
     "label_judge.max_tokens must be >= 1, got 0"),
    ("judge-top-k-zero", "prmlab.pipeline.labeling_config:LabelJudgeConfig", "label_judge", {"top_k": 0},
     "label_judge.top_k must be -1 (off) or >= 1, got 0"),
    ("pb-top-p-zero", "prmlab.pipeline.processbench:BuildPBConfig", "build_processbench", {"top_p": 0.0},
     "build_processbench.top_p must be in (0, 1], got 0.0"),
    ("mc-temperature-string", "prmlab.pipeline.labeling_config:LabelMCConfig", "label_mc", {"temperature": "hot"},
     "label_mc.temperature: expected a finite number, got string 'hot'"),
    # checks that once named a bare field, and values that silently changed a metric's meaning
    ("policy-batch-size-zero", "prmlab.engines.generation:BackendConfig", "policy", {"batch_size": 0},
     "policy.batch_size must be > 0"),
    ("judge-max-model-len-zero", "prmlab.engines.generation:BackendConfig", "judge", {"max_model_len": 0},
     "judge.max_model_len must be > 0"),
    ("pb-batch-size-minus-1", "prmlab.pipeline.processbench:EvalPBConfig", "eval_processbench", {"batch_size": -1},
     "eval_processbench.batch_size must be >= 1, got -1"),
    ("bon-batch-size-zero", "prmlab.pipeline.bon:EvalBoNConfig", "eval_bon", {"batch_size": 0},
     "eval_bon.batch_size must be >= 1, got 0"),
    ("bon-aggregations-without-product", "prmlab.pipeline.bon:EvalBoNConfig", "eval_bon", {"aggregations": ["min"]},
     "eval_bon.aggregations must include product, got ['min']"),
    # failures that came late or misled (an error after the MLflow run opened, an AssertionError, a network blame)
    ("policy-dtype-bogus", "prmlab.engines.generation:BackendConfig", "policy", {"dtype": "bogus"},
     "policy.dtype must be one of ['auto', 'float32', 'float16', 'bfloat16'], got 'bogus'"),
    ("judge-max-retries-minus-1", "prmlab.engines.generation:BackendConfig", "judge", {"max_retries": -1},
     "judge.max_retries must be >= 0, got -1"),
    ("judge-timeout-zero", "prmlab.engines.generation:BackendConfig", "judge", {"timeout_s": 0.0},
     "judge.timeout_s must be > 0, got 0.0"),
    ("train-weight-decay-negative", "prmlab.prms.training:TrainPRMConfig", "train_prm", {"weight_decay": -1.0},
     "train_prm.weight_decay must be >= 0 and train_prm.warmup_ratio in [0, 1]"),
]


@pytest.mark.parametrize("target,section,change,message", [c[1:] for c in PARAM_CASES], ids=[c[0] for c in PARAM_CASES])
def test_bad_params_name_the_key(tmp_path, target, section, change, message):
    import importlib

    mod, cls = target.split(":")
    with pytest.raises(ParamsError) as e:
        load_params(section, getattr(importlib.import_module(mod), cls), _params(tmp_path, **{section: change}))
    assert str(e.value) == message


def test_sample_sampling_checked_under_its_section():
    """SampleConfig checks its sampling when params load; the error names the section it was loaded as."""
    from prmlab.core.params import from_mapping
    from prmlab.pipeline.sampling import SampleConfig

    for section in ("sample", "sample_eval"):
        with pytest.raises(ParamsError, match=rf"^{section}\.max_tokens must be >= 1, got 0$"):
            from_mapping(SampleConfig, {"max_tokens": 0}, section)


KNOWN = "(known: {problem}, {tagged_problem}, {tagged_response}); escape literal braces as {{ }}"
# (case id, template text, the exact message after "template <file>: ")
TEMPLATE_CASES = [
    ("template-unescaped-boxed", "Problem: {problem}\n{tagged_response}\nPut the index in \\boxed{}.\n",
     f"unknown placeholder(s) {{}} on line 3 {KNOWN}"),
    ("template-boxed-index", "{problem}\n{tagged_response}\n\\boxed{index}", f"unknown placeholder(s) {{index}} on line 3 {KNOWN}"),
    ("template-open-brace", "{problem}\n{tagged_response}\nan open { brace",
     "expected '}' before end of string; escape literal braces as {{ }}"),
    ("template-closing-brace", "{problem}\n{tagged_response}\na closing } brace",
     "Single '}' encountered in format string; escape literal braces as {{ }}"),
    ("template-no-response", "\n\nProblem: {problem}\n", "missing placeholder {tagged_response}"),
    ("template-no-problem", "{tagged_response} only", "missing placeholder {problem} or {tagged_problem}"),
    ("template-escaped-problem", "{{problem}} {tagged_response}",  # escaped: not a placeholder
     "missing placeholder {problem} or {tagged_problem}"),
]


@pytest.mark.parametrize("text,message", [c[1:] for c in TEMPLATE_CASES], ids=[c[0] for c in TEMPLATE_CASES])
def test_bad_template(tmp_path, text, message):
    from prmlab.prompts import load_template

    f = tmp_path / "t.txt"
    f.write_text(text)
    with pytest.raises(ValueError) as e:
        load_template("critic", str(f))
    assert str(e.value) == f"template {f}: {message}"


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return port


def test_model_folder_checks(tmp_path, monkeypatch):
    from prmlab.core.preflight import check_model

    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()  # `models/nope` reads like org/name; models/ existing here says it is a path
    with pytest.raises(ParamsError, match=r"^policy\.model: model folder models/nope does not exist \(a path, not a hub name"):
        check_model("policy.model", "models/nope")
    with pytest.raises(ParamsError, match=r"^judge\.model: model folder /no/such/judge does not exist"):
        check_model("judge.model", "/no/such/judge")
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    for f in ("config.json", "tokenizer.json", "pytorch_model.bin"):
        (pickled / f).write_text("{}")
    with pytest.raises(ParamsError) as e:
        check_model("policy.model", str(pickled))
    assert str(e.value) == (f"policy.model: {pickled} has no *.safetensors weights (only pickle weights ['pytorch_model.bin'], "
                            "which are never loaded: convert them to safetensors)")
    check_model("judge.model", "Qwen/Qwen2.5-Math-7B-Instruct")  # a hub name passes (resolved by the loader)


def test_closed_server_fails_fast_naming_the_url_without_credentials():
    from prmlab.core.preflight import check_server

    port = _closed_port()
    t0 = time.monotonic()
    with pytest.raises(ParamsError) as e:
        check_server("judge.base_url", f"http://user:s3cret@127.0.0.1:{port}/v1")
    assert time.monotonic() - t0 < 5.5
    assert str(e.value).startswith(f"judge.base_url: cannot reach the server at http://***@127.0.0.1:{port}/v1 (")
    assert "s3cret" not in str(e.value)


def test_api_key_never_over_plain_http_to_another_host(monkeypatch):
    from prmlab.core.preflight import check_api_key_transport
    from prmlab.engines.config import BackendConfig
    from prmlab.engines.generation import OpenAIGenerator

    check_api_key_transport("judge.base_url", "http://127.0.0.1:8000/v1", "sk-1")  # loopback: fine
    check_api_key_transport("judge.base_url", "https://api.example.com/v1", "sk-1")  # TLS: fine
    monkeypatch.setenv("PRMLAB_TEST_KEY", "sk-1")
    with pytest.raises(ParamsError, match=r"^base_url: refusing to send the API key over plain http to api\.example\.com"):
        OpenAIGenerator(BackendConfig(backend="openai", model="m", base_url="http://api.example.com/v1",
                                      api_key_env="PRMLAB_TEST_KEY"))


def test_prm_flag_without_name():
    from prmlab.prms.layouts import prms_to_evaluate

    with pytest.raises(ParamsError, match=r"^--prm 'models/prm/judge': expected name=path"):
        prms_to_evaluate({}, ["models/prm/judge"], {})


def test_mlflow_params_never_hold_url_credentials(monkeypatch):
    from prmlab.core.provenance import ui_url
    from prmlab.core.tracking import _loggable

    assert _loggable("https://u:pw@host:8443/v1") == "https://***@host:8443/v1"
    # a key in the query string was once logged and printed, and requests went to `/v1?key=k/completions`
    assert _loggable("https://host/v1?key=SECRET&x=1") == "https://host/v1?key=***&x=***"
    assert _loggable("https://u:pw@host/v1?key=SECRET") == "https://***@host/v1?key=***"
    assert _loggable("https://host/v1#access_token=SECRET") == "https://host/v1#***"
    assert _loggable("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    # Any query string is refused where a backend is made, even one whose names say no credential (`?api-version=`):
    # no list of names tells `subscription-key` from a setting, and dvc.lock records params in clear
    with pytest.raises(ParamsError, match=r"^base_url carries a query string \(api-version=\)"):
        BackendConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1/?api-version=2024-06")
    # the base of the run links the report and the flow write
    monkeypatch.setenv("PRMLAB_UI_URL", "https://mlflow.example/?token=SECRET")
    with pytest.raises(ParamsError, match=r"^PRMLAB_UI_URL carries a query string \(token=\), which the report's") as e:
        ui_url()
    assert "SECRET" not in str(e.value)
    monkeypatch.setenv("PRMLAB_UI_URL", "https://mlflow.example/")
    assert ui_url() == "https://mlflow.example"


SECRET = "PLANTED-5ecret-0f-round-4"  # what no file a run writes may hold


@pytest.mark.parametrize("section, key, url, what", [
    ("judge", "base_url", "https://u:pw@host/v1", "a user name or password"),
    ("judge", "base_url", f"https://host/v1?key={SECRET}", r"a query string \(key=\)"),
    # round 4: names no list knew, written to dvc.lock in clear
    ("judge", "base_url", f"https://host/v1?subscription-key={SECRET}&access_key={SECRET}",
     r"a query string \(subscription-key=, access_key=\)"),
    ("policy", "base_url", f"https://host/v1?{SECRET}", r"a query string \(not shown\)"),
    ("judge", "base_url", f"https://host/v1#access_token={SECRET}", r"a fragment \(#\.\.\., not shown\)"),
    ("engine", "ray", {"address": f"ray://host:10001?token={SECRET}"}, r"a query string \(token=\)"),
])
def test_credentials_never_reach_params(tmp_path, section, key, url, what):
    """Before: a user:password or `?key=` in judge.base_url was written in clear into dvc.lock (DVC records
    params), and a key pasted into judge.api_key_env was logged to MLflow while requests went keyless. Round 4:
    `?subscription-key=&access_key=` passed the list of credential names. Any URL anywhere in the params file
    with a user name, password, query string or fragment is refused where the file is read, by every section's
    load (here label_mc's, which never reads the judge), before any stage records anything; never echoed."""
    from prmlab.pipeline.labeling_config import LabelMCConfig

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params[section][key] = url if isinstance(url, str) else {**params[section][key], **url}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(params))
    name = f"{section}.{key}" + ("" if isinstance(url, str) else ".address")
    with pytest.raises(ParamsError, match=rf"^{re.escape(name)} carries {what}, which dvc\.lock and MLflow would record") as e:
        load_params("label_mc", LabelMCConfig, tmp_path / "p.yaml")
    assert SECRET not in str(e.value) and "pw" not in str(e.value)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["judge"] |= {"base_url": "https://host/v1", "api_key_env": "sk-proj-SECRET123"}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(ParamsError, match=r"^judge\.api_key_env must be the name of an environment variable") as e:
        load_params("judge", BackendConfig, tmp_path / "p.yaml")
    assert "SECRET" not in str(e.value)


def _holding(folder: Path, secret: str) -> list[str]:
    """Every file under `folder` (sockets and the like skipped) whose bytes hold `secret`."""
    return [str(f) for f in folder.rglob("*") if f.is_file() and not f.is_symlink() and secret.encode() in f.read_bytes()]


def test_no_secret_leaves_the_process(tmp_path, monkeypatch, ray_held):
    """Round 4: the Ray engine forwarded every HF_*/VLLM_*/TRANSFORMERS_* variable as the replicas' runtime_env,
    which Ray logs in clear (runtime_env_agent.log, mode 644, in a world-writable temp folder): HF_TOKEN leaked; a
    `?subscription-key=` base_url landed in dvc.lock. Secrets planted in the environment (by name, and as a URL's
    query) and in params: the sample stage on a private local Ray (its temp folder here) runs and says what it
    did not send; `dvc repro` refuses the params in one line and writes no dvc.lock; a stage process the runners
    start gets its backend's key (params' api_key_env) and no other secret; no file any of them wrote holds one."""
    from prmlab.core.io import write_jsonl
    from prmlab.toy.world import ToyWorldConfig, world_problems

    ray_tmp = ray_held  # short: Ray's socket paths must stay under 107 bytes
    write_jsonl(tmp_path / "problems.jsonl", world_problems(ToyWorldConfig(n_train=2, n_eval=1, n_processbench=1))["train"])
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["policy"] |= {"model": str(ROOT / "models/policy"), "batch_size": 8}
    params["sample"] |= {"n": 2, "shard_size": 4, "max_tokens": 16}
    params["engine"] |= {"sample": "ray", "ray": {**params["engine"]["ray"], "address": "local", "replicas": 1}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    planted = {"HF_TOKEN": SECRET, "VLLM_API_KEY": SECRET, "TRANSFORMERS_SECRET_THING": SECRET,
               "HF_ENDPOINT": f"https://hub.example/?access_key={SECRET}"}
    env = {**_env(tmp_path), **planted, "RAY_TMPDIR": str(ray_tmp), "RAY_USAGE_STATS_ENABLED": "0", "HF_HUB_OFFLINE": "1"}
    p = subprocess.run([sys.executable, "-m", "stages.sample", "--section", "sample", "--problems", str(tmp_path / "problems.jsonl"),
                        "--out", str(tmp_path / "samples.jsonl"), "--metrics", str(tmp_path / "sample.json"),
                        "--params", str(tmp_path / "params.yaml")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "not sent to the replicas: HF_ENDPOINT, HF_TOKEN, TRANSFORMERS_SECRET_THING, VLLM_API_KEY (named like a secret" in p.stderr
    sessions = list((ray_tmp / "ray").glob("session_*/logs"))
    assert sessions and _holding(ray_tmp, "OMP_NUM_THREADS"), "Ray's session logs, where a runtime_env is written, were not found"
    assert "replica ready" in p.stderr and (tmp_path / "sample.json").exists() and (tmp_path / "mlflow.db").exists()
    assert not _holding(ray_tmp, SECRET) and not _holding(tmp_path, SECRET)
    assert SECRET not in p.stdout + p.stderr

    # dvc.lock: `dvc repro` of a stage that never reads the judge section refuses the file, naming the key
    repo = tmp_path / "repo"
    repo.mkdir()
    for part in ("dvc.yaml", "src", "stages"):
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy)(ROOT / part, repo / part)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["judge"]["base_url"] = f"https://host/v1?subscription-key={SECRET}&access_key={SECRET}"
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    dvc = str(Path(sys.executable).with_name("dvc"))
    subprocess.run([dvc, "init", "--no-scm", "-q"], cwd=repo, check=True)
    env = {**_env(repo), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    out = subprocess.run([dvc, "repro", "problems@toy"], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode != 0
    assert ("[problems] error: judge.base_url carries a query string (subscription-key=, access_key=), which dvc.lock and "
            "MLflow would record in clear") in out.stderr, out.stderr[-2000:]
    assert not (repo / "dvc.lock").exists() and SECRET not in out.stdout + out.stderr
    assert _holding(repo, SECRET) == [str(repo / "params.yaml")]

    # a stage process started by a runner (scripts/seeds_plain.py; the flows build theirs with the same stage_env)
    from prmlab.runs.processes import venv_env
    from scripts.seeds_plain import run_stage

    seed = tmp_path / "seed"
    for sub in ("logs", ".done", "mlruns"):
        (seed / sub).mkdir(parents=True)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["judge"]["api_key_env"] = "PRMLAB_TEST_JUDGE_KEY"
    (seed / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    for k, v in {"GITHUB_TOKEN": SECRET, "AWS_SECRET_ACCESS_KEY_X": SECRET, "PRMLAB_TEST_JUDGE_KEY": "the-judge-key"}.items():
        monkeypatch.setenv(k, v)
    rc, _ = run_stage(seed, {"name": "env", "outs": [], "cmd": "python -c 'import os; print(sorted(os.environ.items()))'"}, 1)
    kept = venv_env(seed / "params.yaml")
    assert rc == 0 and "the-judge-key" in (seed / "logs" / "env.log").read_text()
    assert not _holding(seed, SECRET)
    assert kept["PRMLAB_TEST_JUDGE_KEY"] == "the-judge-key" and "GITHUB_TOKEN" not in kept and "PATH" in kept


def test_an_unset_api_key_env_is_said(monkeypatch, capsys):
    from prmlab.engines.generation import make_generator

    monkeypatch.delenv("PRMLAB_TEST_NO_KEY", raising=False)
    gen = make_generator(BackendConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1", api_key_env="PRMLAB_TEST_NO_KEY"))
    gen.close()
    assert "[openai] PRMLAB_TEST_NO_KEY (api_key_env) is not set: requests to http://127.0.0.1:9/v1 carry no API key" in capsys.readouterr().err


# --- counted skips: truncation -------------------------------------------------------------------

def test_processbench_truncated_item_is_not_graded_no_error():
    from prmlab.pipeline.processbench import prediction

    item = ProcessBenchItem.from_dict(ITEM)
    assert prediction(item, [0.9], 0.5) is None  # steps 1-2 cut by max_length: unknown, graded wrong
    assert prediction(item, [0.9, 0.2], 0.5) == 1  # an error among the scored steps stands
    assert prediction(item, [0.9, 0.8, 0.7], 0.5) == -1


def test_train_prm_examples_longer_than_max_length(toy, tmp_path):
    from prmlab.prms.training import TrainPRMConfig, train

    long_q = "What is " + " + ".join(str(i) for i in range(200)) + "?"
    ex = [PRMExample(prompt=long_q, completions=["0 + 1 = 1"], labels=[1], response_id=f"r{i}") for i in range(2)]
    cfg = TrainPRMConfig(max_length=32, epochs=1.0, batch_size=2)
    with pytest.raises(DataError, match=r"^every one of the 2 training examples is longer than train_prm\.max_length \(32 tokens\)"):
        train(ex, toy["policy"], str(tmp_path / "prm"), cfg, soft=False)
    short = PRMExample(prompt="1 + 1?", completions=["1 + 1 = 2"], labels=[1], response_id="s")
    m = train(ex[:1] + [short], toy["policy"], str(tmp_path / "prm"), TrainPRMConfig(max_length=128, epochs=1.0, batch_size=2),
              soft=False)
    assert (m["examples"], m["examples_trained"], m["examples_too_long"]) == (2, 1, 1)


def test_eval_bon_counts_truncated_responses(toy, tmp_path):
    from prmlab.prms.training import untrained

    prm = tmp_path / "prm"
    untrained(toy["policy"], str(prm), 0)  # scores are beside the point: the count is
    problems = read_jsonl(toy["problems"] / "eval.jsonl", Problem)[:3]
    _write_lines(tmp_path / "problems.jsonl", [json.dumps(p.to_dict()) for p in problems])
    short = ["1 + 1 = 2"]
    long_ = [f"{i} + 1 = {i + 1}" for i in range(60)]
    rows = [Response(problem_id=p.id, response_id=f"{p.id}-{k}", steps=s, answer="2", correct=False)
            for p in problems[:2] for k, s in enumerate([short, long_])]
    # a problem with fewer than eval_bon.n responses is counted, not reported as a whole @n (a short @n is no @n)
    rows.append(Response(problem_id=problems[2].id, response_id="only", steps=short, answer="2", correct=False))
    _write_lines(tmp_path / "samples.jsonl", [json.dumps(r.to_dict()) for r in rows])
    params = _params(tmp_path, eval_bon={"max_length": 160, "n": 2})
    p = subprocess.run([sys.executable, "-m", "stages.eval_bon", "--problems", str(tmp_path / "problems.jsonl"),
                        "--samples", str(tmp_path / "samples.jsonl"), "--prm", f"toy={prm}", "--metrics", str(tmp_path / "m.json"),
                        "--scores", str(tmp_path / "s.jsonl"), "--params", str(params)],
                       cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    m = json.loads((tmp_path / "m.json").read_text())
    assert m["truncation"] == {"toy": {"truncated_responses": 2, "unscored_responses": 0}}
    assert "toy: 2 responses truncated to max_length, 0 unscored" in p.stdout
    assert m["problems_with_fewer_than_n"] == 1 and "1 problems have fewer than 2 responses (their @2 is over fewer)" in p.stdout
    assert "1 of 3 problems have fewer than eval_bon.n = 2 responses" in p.stderr


# --- the stage CLIs: one line `[stage] error: ...`, exit 2, before any model loads ----------------

def _env(tmp_path: Path) -> dict:
    return {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}", "PYTHONPATH": str(ROOT / "src"),
            "PRMLAB_EXPERIMENT": "bad-inputs"}


def _tiny_prm(toy, tmp_path: Path) -> Path:
    """A PRM in the Qwen2.5-Math-PRM layout (untrained head) from the toy policy, in seconds."""
    from prmlab.prms.model import init_from_policy, prepare_tokenizer

    tok = prepare_tokenizer(toy["policy"])
    init_from_policy(toy["policy"], tok).save_pretrained(tmp_path / "prm")
    tok.save_pretrained(tmp_path / "prm")
    return tmp_path / "prm"


def test_stage_cli_errors_are_one_line(toy, tmp_path):
    problems = toy["problems"] / "train.jsonl"
    pid = read_jsonl(problems, Problem)[0].id
    samples = _write_lines(tmp_path / "samples.jsonl", [json.dumps(RESP | {"problem_id": pid}),
                                                        json.dumps(RESP | {"problem_id": pid, "response_id": "r1", "steps": "abc"})])
    judge = _write_lines(tmp_path / "judge.jsonl", [json.dumps(JUDGE | {"first_error": 99})])
    mc = _write_lines(tmp_path / "mc.jsonl", [json.dumps(MC)])
    good_samples = _write_lines(tmp_path / "good.jsonl", [json.dumps(RESP | {"problem_id": pid})])
    port = _closed_port()
    out = tmp_path / "o"
    cases = {  # name: (argv, params changes, expected stderr)
        "data-error": (["stages.label_mc", "--problems", problems, "--samples", samples, "--out", out / "mc.jsonl",
                        "--metrics", out / "m.json"], {"policy": {"model": toy["policy"]}},
                       f"[label_mc] error: {samples}:2: field 'steps': expected a list, got string 'abc'"),
        "missing-model-folder": (["stages.label_judge", "--problems", problems, "--samples", good_samples, "--out",
                                  out / "j.jsonl", "--metrics", out / "j.json"], {"judge": {"model": str(tmp_path / "gone")}},
                                 f"[label_judge] error: judge.model: model folder {tmp_path / 'gone'} does not exist "
                                 "(a path, not a hub name like org/name)"),
        "closed-server": (["stages.label_judge", "--problems", problems, "--samples", good_samples, "--out",
                           out / "j2.jsonl", "--metrics", out / "j2.json"],
                          {"judge": {"backend": "openai", "model": "judge", "base_url": f"http://127.0.0.1:{port}/v1"}},
                          f"[label_judge] error: judge.base_url: cannot reach the server at http://127.0.0.1:{port}/v1 ("),
        "temperature": (["stages.label_mc", "--problems", problems, "--samples", good_samples, "--out", out / "mc2.jsonl",
                         "--metrics", out / "m2.json"], {"label_mc": {"temperature": -0.5}},
                        "[label_mc] error: label_mc.temperature must be >= 0, got -0.5"),
        "judge-index-99": (["stages.consensus", "--problems", problems, "--samples", good_samples, "--mc", mc, "--judge",
                            judge, "--metrics", out / "c.json", "--audit-table", out / "a.json"], {},
                           f"[consensus] error: {judge}:1: field 'first_error': 99 outside -1..2 (response r0 has 3 steps)"),
        "bon-n-above-samples": (["stages.eval_bon", "--problems", problems, "--samples", good_samples, "--metrics",
                                 out / "b.json", "--scores", out / "b.jsonl", "--prm", f"x={_tiny_prm(toy, tmp_path)}"],
                                {"eval_bon": {"n": 16}},
                                f"[eval_bon] error: eval_bon.n is 16 but {good_samples} has at most 1 responses per "
                                "problem (sample_eval.n); lower eval_bon.n or sample more"),
    }
    procs = {}
    for name, (argv, change, _) in cases.items():
        d = tmp_path / name
        d.mkdir()
        params = _params(d, **change)
        procs[name] = subprocess.Popen([sys.executable, "-m", *map(str, argv), "--params", str(params)], cwd=ROOT,
                                       env=_env(d), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for name, p in procs.items():
        _, err = p.communicate(timeout=120)
        expected = cases[name][2]
        lines = err.strip().splitlines()
        assert p.returncode == 2, (name, err)
        assert len(lines) == 1 and lines[0].startswith(expected), (name, err)
        assert not (tmp_path / name / "mlflow.db").exists(), name  # failed before any run (or model) started
    assert not out.exists()  # nothing written


# --- kill during write: resume == fresh, temp files, MLflow, permissions; stale shards ------------

# label_mc that kills itself (SIGKILL, as `kill -9`) as soon as its first shard is written: always mid-stage, at
# a known point. A kill timed from outside can come too late on a fast machine (the stage already done).
KILLED_AFTER_FIRST_SHARD = (
    "import os, runpy, signal; from prmlab.core.io import ShardWriter; write = ShardWriter.write; "
    "ShardWriter.write = lambda w, i, rows: (write(w, i, rows), os.kill(os.getpid(), signal.SIGKILL)); "
    "runpy.run_module('stages.label_mc', run_name='__main__')")


def _label_mc(tmp_path: Path, out: Path, params: Path, killed: bool = False) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *(["-c", KILLED_AFTER_FIRST_SHARD] if killed else ["-m", "stages.label_mc"]),
                             "--problems", str(tmp_path / "problems.jsonl"), "--samples", str(tmp_path / "samples.jsonl"),
                             "--out", str(out / "mc.jsonl"), "--metrics", str(out / "mc_metrics.json"), "--params", str(params)],
                            cwd=ROOT, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _killed_after_first_shard(tmp_path: Path, out: Path, params: Path) -> None:
    p = _label_mc(tmp_path, out, params, killed=True)
    _, err = p.communicate(timeout=300)
    assert p.returncode == -signal.SIGKILL, err
    assert sorted(f.name for f in (out / "mc.jsonl.shards").glob("shard-*")) == ["shard-00000.jsonl"]  # 1 of 4 done
    assert not (out / "mc.jsonl").exists()


@pytest.mark.slow
def test_kill_resume_and_stale_shards(toy, tmp_path):
    import mlflow

    from prmlab.toy.world import canonical_steps

    problems = read_jsonl(toy["problems"] / "train.jsonl", Problem)[:4]
    _write_lines(tmp_path / "problems.jsonl", [json.dumps(p.to_dict()) for p in problems])
    rows = []
    for p in problems:
        steps = canonical_steps(p)
        for k in range(2):
            rows.append(Response(problem_id=p.id, response_id=f"{p.id}-{k}", steps=steps, answer=p.gold_answer,
                                 correct=True, true_first_error=-1))
    _write_lines(tmp_path / "samples.jsonl", [json.dumps(r.to_dict()) for r in rows])
    model = tmp_path / "policy"
    shutil.copytree(toy["policy"], model)
    params = _params(tmp_path, policy={"model": str(model)}, label_mc={"k": 2, "max_tokens": 24, "shard_size": 2})

    fresh, resumed = tmp_path / "fresh", tmp_path / "resumed"
    p = _label_mc(tmp_path, fresh, params)
    assert p.wait(timeout=300) == 0, p.communicate()
    _killed_after_first_shard(tmp_path, resumed, params)
    (resumed / "mc.jsonl.shards" / ".shard-00009.jsonl.abc.tmp").write_text("half a shard")  # as a kill mid-write leaves
    (resumed / ".mc.jsonl.abc.tmp").write_text("half a file")
    p = _label_mc(tmp_path, resumed, params)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert "resumed: 1/4 shards were already done" in err and "marked 1 interrupted MLflow run(s) FAILED" in err
    # resumed == fresh, byte for byte, metrics included; no temp file left; normal permissions
    for f in ("mc.jsonl", "mc_metrics.json"):
        assert (resumed / f).read_bytes() == (fresh / f).read_bytes(), f
        assert (resumed / f).stat().st_mode & 0o777 == 0o666 & ~_umask(), f
    assert sorted(x.name for x in resumed.iterdir()) == ["mc.jsonl", "mc_metrics.json"]
    # A client, not mlflow.set_tracking_uri: that also sets MLFLOW_TRACKING_URI in os.environ, which would
    # leak into every later test's subprocesses.
    client = mlflow.tracking.MlflowClient(tracking_uri=_env(tmp_path)["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name("bad-inputs")
    statuses = sorted(r.info.status for r in client.search_runs([exp.experiment_id]))
    assert statuses == ["FAILED", "FINISHED", "FINISHED"]

    # stale shards: killed again, then new weights at the same path -> the shards are discarded, said so
    stale = tmp_path / "stale"
    _killed_after_first_shard(tmp_path, stale, params)
    shutil.copy(Path(toy["judge"]) / "model.safetensors", model / "model.safetensors")
    p = _label_mc(tmp_path, stale, params)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert "discarding 1 shard(s)" in err, err
    assert "already done" not in err


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_shard_counts_survive_a_resume_and_go_with_stale_shards(tmp_path, capfd):
    # sample's dropped counts live beside each shard, so a resumed run reports the skipped shards' too
    from prmlab.core.io import ShardWriter

    w = ShardWriter(tmp_path / "out.jsonl", "fp1")
    w.write_meta(0, {"no_steps": 2})
    w.write(0, [{"a": 1}])
    (w.dir / ".shard-00001.jsonl.x.tmp").write_text("half")  # a writer killed mid-shard
    del w  # its process ends: the lock goes with it
    w = ShardWriter(tmp_path / "out.jsonl", "fp1")  # the rerun
    assert w.done(0) and w.read_meta(0) == {"no_steps": 2} and not list(w.dir.glob(".*.tmp"))
    del w
    w = ShardWriter(tmp_path / "out.jsonl", "fp2")  # other weights, code, params or inputs
    assert not w.done(0) and not list(w.dir.glob("meta-*"))
    assert "discarding 1 shard(s)" in capfd.readouterr().err


def test_shard_fingerprint_covers_the_prompt_texts(tmp_path, monkeypatch):
    """Before: editing `prompts/policy_system.txt` between shards let label_mc resume its old shards
    (the fingerprint hashed prompts.py, not the .txt), mixing two prompts in one output."""
    from prmlab.core import preflight
    from prmlab.pipeline import labeling

    (tmp_path / "prompts").mkdir()
    for f in (preflight.PACKAGE / "prompts").glob("*.txt"):
        shutil.copy(f, tmp_path / "prompts" / f.name)
    monkeypatch.setattr(preflight, "POLICY_SYSTEM", tmp_path / "prompts" / "policy_system.txt")  # the copy
    before = preflight.code_version(labeling)
    assert preflight.code_version(labeling) == before
    (tmp_path / "prompts" / "policy_system.txt").write_text("Think step by step, then box the answer.")
    assert preflight.code_version(labeling) != before


def test_model_kind_is_checked_before_any_work(toy, tmp_path):
    """Before: a plain causal LM named as a PRM got a freshly initialised head and an F1; a PRM
    checkpoint as the policy labelled every response wrong after 13 minutes; a 3-label head crashed
    after the other PRMs were scored. Each is a named error from config and safetensors headers."""
    import torch

    from prmlab.core.preflight import check_model
    from prmlab.prms.layouts import check_prm
    from prmlab.prms.model import init_from_policy, prepare_tokenizer

    check_prm("PRM 'ok'", str(_tiny_prm(toy, tmp_path)))  # the right kind passes
    tok = prepare_tokenizer(toy["policy"])
    prm = init_from_policy(toy["policy"], tok)
    check_model("policy.model", toy["policy"])
    # A plain causal LM is a PRM only in a layout that says how to read it (prmlab.prms.layouts): named, not guessed.
    with pytest.raises(ParamsError, match=r"^PRM 'lm': .*: a causal LM \(Qwen2ForCausalLM\) whose layout cannot be told "
                                          r"from its files: give layout math_shepherd, rlhflow or eurus"):
        check_prm("PRM 'lm'", toy["policy"])
    with pytest.raises(ParamsError, match=r"^PRM 'lm': .* has no score head; layout qwen has 2"):
        check_prm("PRM 'lm'", toy["policy"], layout="qwen")
    with pytest.raises(ParamsError, match=r"^policy\.model: .* is a Qwen2ForProcessRewardModel, not a causal LM"):
        check_model("policy.model", str(tmp_path / "prm"))
    prm.score[2] = torch.nn.Linear(prm.score[2].in_features, 3)
    prm.save_pretrained(tmp_path / "prm3")
    tok.save_pretrained(tmp_path / "prm3")
    with pytest.raises(ParamsError, match=r"^PRM 'three': .* has a 3-output score head; layout qwen has 2 \(error, correct\)"):
        check_prm("PRM 'three'", str(tmp_path / "prm3"))


def test_a_second_writer_of_one_output_is_refused_at_once(tmp_path):
    """Before: two runs of one stage on the same output: the second did all the work, then crashed
    on a shard the first had removed, leaving a stale shards folder. Now it stops before any work."""
    from prmlab.core.io import ShardWriter

    out = tmp_path / "labels" / "mc.jsonl"
    first = ShardWriter(out, "fp")
    first.write(0, [{"a": 1}])
    with pytest.raises(DataError, match=rf"^{out}: another run is writing this output \(lock .*LOCK is held\)"):
        ShardWriter(out, "fp")
    assert first.done(0)  # the refused writer touched nothing
    assert first.finish(1) == 1 and sorted(p.name for p in out.parent.iterdir()) == ["mc.jsonl"]
    again = ShardWriter(out, "fp")  # free once the first has finished
    again.finish(0)


def test_a_second_stage_run_on_one_output_stops_before_its_model_loads(toy, tmp_path):
    """The lock of an output is taken before the stage loads its model or opens its MLflow
    run, so a second label_mc on a busy output costs nothing and leaves nothing behind."""
    import mlflow

    from prmlab.core.io import ShardWriter

    problems = read_jsonl(toy["problems"] / "train.jsonl", Problem)[:1]
    _write_lines(tmp_path / "problems.jsonl", [json.dumps(p.to_dict()) for p in problems])
    from prmlab.toy.world import canonical_steps

    r = Response(problem_id=problems[0].id, response_id="r0", steps=canonical_steps(problems[0]),
                 answer=problems[0].gold_answer, correct=True, true_first_error=-1)
    _write_lines(tmp_path / "samples.jsonl", [json.dumps(r.to_dict())])
    params = _params(tmp_path, policy={"model": toy["policy"]}, label_mc={"k": 2, "max_tokens": 24, "shard_size": 2})
    out = tmp_path / "out"
    first = ShardWriter(out / "mc.jsonl", "another run's fingerprint")  # a run in progress holds the output
    p = _label_mc(tmp_path, out, params)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 2 and err.strip().count("\n") == 0, err
    assert err.startswith(f"[label_mc] error: {out / 'mc.jsonl'}: another run is writing this output"), err
    client = mlflow.tracking.MlflowClient(tracking_uri=_env(tmp_path)["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name("bad-inputs")
    assert exp is None or not client.search_runs([exp.experiment_id])  # no MLflow run opened, so no model loaded
    first.finish(0)


def test_template_files_are_dependencies_and_match_their_style(tmp_path):
    """Before: an edited judge or critic template reran nothing (the key was empty, so no DVC
    dependency). Params now name the file; dvc.yaml depends on it; a style with the other style's
    built-in template is refused."""
    import yaml
    from conftest import new_project
    from dvc.repo import Repo

    from prmlab.prompts import load_template

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    mine = tmp_path / "my_critic.txt"
    mine.write_text("Check {problem}\n{tagged_response}\nAnswer in \\\\boxed{{}}.")
    params["eval_processbench"]["critic_template_file"] = str(mine)
    d = new_project(tmp_path / "p", params)
    with Repo(str(d)) as repo:
        deps = {st.name: {Path(dep.fs_path) for dep in st.deps} for st in repo.index.stages}
    assert d / "src/prmlab/prompts/critic.txt" in deps["label_judge"]
    assert d / "src/prmlab/prompts/critic.txt" in deps["train_judge@toy"]
    assert mine in deps["eval_processbench"]
    with pytest.raises(ValueError, match=r"template src/prmlab/prompts/critic.txt is the built-in critic prompt, but the "
                                         r"style is paper: set the style and its template together"):
        load_template("paper", "src/prmlab/prompts/critic.txt")
    assert load_template("critic", str(ROOT / "src/prmlab/prompts/critic.txt")) == load_template("critic")


def test_reference_prms_outside_the_graph_are_fingerprinted_or_refused(tmp_path):
    """Before: a reference PRM folder outside models/prm (the same for a generative verifier's model folder and its
    template_file) was no DVC dependency: its weights changed after `dvc commit`, `dvc status` showed nothing. Each
    profile's first stage writes data/models/references.json (prmlab.core.manifest.references_manifest), a dependency of
    every eval stage. inputs@real always runs and fingerprints any folder and file, so changed weights or a changed
    template change the file and rerun the evaluations; problems@toy runs only when its inputs change, so it refuses
    what lies outside the graph, in one line naming the key, before any work."""
    from prmlab.core.manifest import references_manifest
    from prmlab.core.params import ParamsError

    graph = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name in ("eval_processbench", "eval_bon"):
        assert "data/models/references.json" in graph[name]["deps"], name
    assert "data/models/references.json" in graph["eval_prmbench"]["do"]["deps"]
    for first in ("problems", "inputs"):
        assert any(o == "data/models/references.json" or isinstance(o, dict) and "data/models/references.json" in o
                   for o in graph[first]["do"]["outs"]), first
    prm, tmpl = tmp_path / "ext_prm", tmp_path / "verifier.txt"
    prm.mkdir()
    (prm / "model.safetensors").write_bytes(b"weights")
    tmpl.write_text("Judge {problem} {steps}")
    raw = {"eval_processbench": {"reference_prms": {"ext": str(prm), "trained": "models/prm/oracle_ceiling",
                                                    "hub": "Qwen/Qwen2.5-Math-PRM-7B"}},
           "eval_bon": {"reference_prms": {"gen": {"model": "Qwen/Qwen2.5-7B-Instruct", "layout": "genprm",
                                                   "template_file": str(tmpl)}}}}
    before = references_manifest(raw, toy=False)
    assert before["eval_processbench.reference_prms.trained"] == {"model": "models/prm/oracle_ceiling", "in_graph": True}
    assert before["eval_processbench.reference_prms.hub"]["local"] is False
    (prm / "model.safetensors").write_bytes(b"weights, retrained")
    tmpl.write_text("Judge {problem} {steps} strictly")
    after = references_manifest(raw, toy=False)
    assert {k for k in before if before[k] != after[k]} == {"eval_processbench.reference_prms.ext",
                                                            "eval_bon.reference_prms.gen.template_file"}
    with pytest.raises(ParamsError, match=r"^eval_processbench\.reference_prms\.ext: folder .*ext_prm lies outside the "
                                          r"DVC graph, so the toy profile would not rerun the evaluations when its "
                                          r"weights change: use a PRM under models/prm/ or a hub name"):
        references_manifest(raw, toy=True)
    del raw["eval_processbench"]
    with pytest.raises(ParamsError, match=r"^eval_bon\.reference_prms\.gen\.template_file: .*verifier\.txt lies outside "
                                          r"the DVC graph"):
        references_manifest(raw, toy=True)
    # through the toy profile's first stage: one line, exit 2, nothing written, no run started
    params = _params(tmp_path, eval_processbench={"reference_prms": {"ext": str(prm)}})
    out = tmp_path / "o"
    p = subprocess.run([sys.executable, "-m", "stages.problems", "--problems-dir", str(out / "problems"), "--references",
                        str(out / "references.json"), "--metrics", str(out / "m.json"), "--params", str(params)],
                       cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert lines[0].startswith(f"[problems] error: eval_processbench.reference_prms.ext: folder {prm} lies outside"), p.stderr
    assert not out.exists() and not (tmp_path / "mlflow.db").exists()


def test_a_step_tag_sharing_its_id_is_refused(tmp_path):
    """A tokenizer whose vocabulary has a gap hands an added `<extra_0>` the id of a token it
    already has (here a word-level vocabulary {a: 0, b: 1, <pad>: 2, c: 4}: the new token gets 4); every
    "c" would then be scored as a step. prepare_tokenizer refuses it by name."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from prmlab.prms.model import prepare_tokenizer

    tk = Tokenizer(models.WordLevel({"a": 0, "b": 1, "<pad>": 2, "c": 4}, unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<pad>").save_pretrained(tmp_path / "tok")
    with pytest.raises(ValueError, match=r"the step tag <extra_0> has id 4, which tokens \['<extra_0>', 'c'\] share; "
                                         r"a PRM needs a tokenizer where it is a token of its own"):
        prepare_tokenizer(str(tmp_path / "tok"))


@pytest.mark.parametrize("processes", [1, 2])
def test_train_prm_refuses_a_diverged_run(toy, tmp_path, processes):
    """`train_prm.lr: 1000`: the loss goes non-finite; training stops with one line naming the
    step and the key, and no checkpoint is written (before: NaN weights saved as trained). In 2 spawned
    processes the line comes back the same."""
    from prmlab.prms.training import TrainPRMConfig, train

    ex = [PRMExample(prompt=f"{i} + 1?", completions=[f"{i} + 1 = {i + 1}", "so the answer is 2"], labels=[1, i % 2],
                     response_id=f"r{i}") for i in range(8)]
    cfg = TrainPRMConfig(lr=1000.0, steps=20, batch_size=2, max_length=128, warmup_ratio=0.0, max_grad_norm=0.0,
                         processes=processes)
    with pytest.raises(DataError, match=r"^train_prm diverged: (the loss is (nan|inf) at step \d+ of 20|\d+ weight tensors hold "
                                        r"NaN or inf \(e\.g\. \S+,) \(?train_prm\.lr 1000\); no checkpoint saved$"):
        train(ex, toy["policy"], str(tmp_path / "prm"), cfg, soft=False)
    assert not (tmp_path / "prm" / "model.safetensors").exists()


def test_train_prm_ranges():
    from prmlab.core.params import ParamsError
    from prmlab.prms.training import TrainPRMConfig

    for bad in ({"weight_decay": -1.0}, {"warmup_ratio": 1.5}, {"processes": 0}, {"max_grad_norm": -1.0}, {"batching": "sorted"}):
        with pytest.raises(ParamsError, match="train_prm"):
            TrainPRMConfig(**bad)


def test_dvc_repro_never_pastes_a_params_string_into_a_shell(tmp_path):
    """dvc.yaml's foreach commands pasted `${item}` (a source name, a human_labels path) into the shell command
    DVC runs, so a source named ``judge`touch PWNED` `` ran its backticks before Python refused the name.
    Now no command holds a params string: the stage takes its source from DVC_STAGE and fills
    `{source}` in its paths. Under a real `dvc repro` the odd name ends as one line, and nothing ran."""
    from dvc.repo import Repo

    evil, evil_path = "judge`touch PWNED1`", "x$(touch PWNED2).jsonl"
    for part in ("dvc.yaml", "src", "stages", "data/models/policy.json"):
        (tmp_path / part).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy)(ROOT / part, tmp_path / part)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["train_prm"]["sources"] = ["judge", evil]
    params["human_labels"] = {"prm800k": evil_path}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    dvc = str(Path(sys.executable).with_name("dvc"))
    subprocess.run([dvc, "init", "--no-scm", "-q"], cwd=tmp_path, check=True)
    with Repo(str(tmp_path)) as repo:
        cmds = {st.name: st.cmd for st in repo.index.stages if st.cmd}
    assert {"train_prm@" + evil, "prm_data@" + evil, "human_data@prm800k"} <= set(cmds)
    leaked = {k: c for k, c in cmds.items() if "PWNED" in c or "${" in c}
    assert not leaked, leaked
    (tmp_path / "data" / "prm_train").mkdir(parents=True)
    (tmp_path / "data" / "prm_train" / f"{evil}.jsonl").write_text("")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    out = subprocess.run([dvc, "repro", "--single-item", "train_prm@" + evil], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode != 0
    assert "[train_prm] error: source 'judge`touch PWNED1`' (train_prm@...): not a label source name" in out.stderr, out.stderr
    assert not list(tmp_path.rglob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))


def test_seeds_plain_runs_stage_commands_without_a_shell(tmp_path):
    """scripts/seeds_plain.py (then flows/) ran dvc.yaml's commands with shell=True, so a params string in one (a source
    name) ran its backticks or $(...). Now the command is split into arguments: the stage sees
    the odd name as text and refuses it, and nothing runs."""
    from scripts.seeds_plain import run_stage

    root = Path(__file__).resolve().parents[2]
    d = tmp_path / "seed"
    for sub in ("logs", ".done", "mlruns", "src", "stages"):
        (d / sub).mkdir(parents=True)
    shutil.copytree(root / "src" / "prmlab", d / "src" / "prmlab")
    shutil.copytree(root / "stages", d / "stages", dirs_exist_ok=True)
    evil = "judge`touch PWNED1`$(touch PWNED2)"
    st = {"name": "train_prm@evil", "outs": [],
          "cmd": f"python -m stages.train_prm --source {evil} --train data/prm_train/{evil}.jsonl --out models/prm/x "
                 f"--metrics metrics/x.json"}
    rc, _ = run_stage(d, st, 1)
    assert rc != 0
    assert not list(d.rglob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))
    assert "unrecognized arguments" in (d / "logs" / "train_prm@evil.log").read_text()


def test_nothing_is_removed_or_overwritten_outside_its_own_folder(tmp_path, monkeypatch):
    """Round 4: scripts/seeds_plain.py removed any path a graph file names as an out, an absolute one outside --root
    included, exit 0. Now every path a runner removes or overwrites that input data builds (a graph's outs and
    stage names, a seed's copy under --root, a sweep value in its point's file name) is checked to lie inside its
    own folder (prmlab.core.io.inside: not absolute, not the folder itself, not out through `..` or a symlinked folder),
    before any work: one line naming the graph file and the out, and nothing is touched."""
    from prmlab.core.io import inside
    from prmlab.runs.store import point_file
    from scripts import seeds_plain

    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("not the runner's")
    root = tmp_path / "seeds"
    good = {"name": "problems@toy", "cmd": "python -c pass", "deps": [], "outs": ["data/problems/train.jsonl"]}
    bad = {"absolute": ({**good, "outs": [str(victim)]}, f"out {str(victim)!r} is not inside a seed's copy"),
           "dotdot": ({**good, "outs": ["data/../../../victim"]}, "out 'data/../../../victim' is not inside"),
           "the-copy": ({**good, "outs": ["."]}, "out '.' is not inside"),
           "name": ({**good, "name": "../../victim/x"}, "stage name '../../victim/x' is not a plain name")}
    for why, (st, says) in bad.items():
        g = tmp_path / f"graph-{why}.json"
        g.write_text(json.dumps({"commit": "abc", "params": "{}", "stages": [good, st]}))
        monkeypatch.setattr(sys, "argv", ["seeds_plain", "--project-dir", str(ROOT), "--graph", str(g), "--seeds", "1",
                                          "--root", str(root)])
        with pytest.raises(SystemExit) as e:
            seeds_plain.main()
        assert str(e.value.code).startswith(f"{g}: ") and says in str(e.value.code) and "\n" not in str(e.value.code)
    assert (victim / "keep.txt").exists() and not root.exists()

    # at the point of removal too: an out through a symlinked folder of the copy; an out that is a link goes alone
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "data").symlink_to(victim)
    (copy / "link").symlink_to(victim)
    with pytest.raises(SystemExit, match=r"refusing to remove 'data/keep\.txt': not inside this seed's copy"):
        seeds_plain.remove(copy, ["data/keep.txt"])
    seeds_plain.remove(copy, ["link"])
    assert not (copy / "link").exists() and (victim / "keep.txt").exists()

    # a seed's copy: made with its mark first, so only a copy the runner made is ever removed
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "dvc.yaml").write_text("stages: {}\n")
    graph = {"commit": "abc", "params": "train_prm: {sources: []}\n", "stages": []}  # what the protocol's seed params read
    d = seeds_plain.prepare(project, root, 1, graph)
    assert (d / seeds_plain.MARK).exists() and (d / ".prepared").exists() and (d / "dvc.yaml").exists()
    (d / ".prepared").unlink()  # killed half-made: made again
    assert (seeds_plain.prepare(project, root, 1, graph) / ".prepared").exists()
    (root / "seed-2").mkdir()
    (root / "seed-2" / "mine.txt").write_text("not the runner's")
    with pytest.raises(SystemExit, match=r"seed-2 exists and is no copy this runner made \(no \.seeds-plain\)"):
        seeds_plain.prepare(project, root, 2, graph)
    assert (root / "seed-2" / "mine.txt").exists()

    # a sweep point's file, named by a value from the command line
    assert point_file(str(tmp_path), "label_mc.temperature", 0.7, 1) == tmp_path / "reports/sweeps/label_mc.temperature/0.7-seed-1.json"
    for value in ("../../../victim/keep.txt", "a/b"):
        with pytest.raises(ValueError, match=rf"^value '{re.escape(value)}' of label_mc\.temperature: not a plain name"):
            point_file(str(tmp_path), "label_mc.temperature", value, 0)
    assert inside(tmp_path, "a/b") and not inside(tmp_path, "/etc") and not inside(tmp_path, "a/../..")


def test_a_reference_prm_never_takes_a_trained_sources_name(tmp_path):
    """Before: `reference_prms: {judge: ...}` turned the prm/judge row into the other model's figures and the
    trained judge PRM was never scored; the same for `--prm judge=...`."""
    from prmlab.prms.layouts import prms_to_evaluate

    trained = {"judge": "models/prm/judge"}
    with pytest.raises(ParamsError, match=r"^reference_prms\.judge: 'judge' is a trained PRM of train_prm\.sources; "
                                          r"give the reference another name$"):
        prms_to_evaluate(trained, [], {"judge": "Qwen/Qwen2.5-Math-PRM-7B"})
    with pytest.raises(ParamsError, match=r"^--prm judge=x: 'judge' already names a PRM"):
        prms_to_evaluate(trained, ["judge=x"], {})
    got = prms_to_evaluate(trained, [], {"qwen7b": "Qwen/Qwen2.5-Math-PRM-7B"})
    assert got["judge"].model == "models/prm/judge" and got["qwen7b"].model == "Qwen/Qwen2.5-Math-PRM-7B"


def test_model_folder_needs_a_real_tokenizer(toy, tmp_path):
    """Before: a folder with tokenizer_config.json but no tokenizer.json passed the model check, and
    transformers built a 4-token tokenizer that encodes every text to [] (train_prm trained on nothing and
    said trained: true). Now the check loads the tokenizer and encodes a probe; a folder without a chat
    template, or whose tokenizer gives ids beyond the config's vocabulary, is refused too."""
    from prmlab.core.preflight import check_model

    src = Path(toy["policy"])
    no_tok = tmp_path / "no_tok"
    shutil.copytree(src, no_tok)
    (no_tok / "tokenizer.json").unlink()
    assert (no_tok / "tokenizer_config.json").exists()
    with pytest.raises(ParamsError, match=rf"^policy\.model: {re.escape(str(no_tok))}: its tokenizer turns text into 0 token\(s\)"):
        check_model("policy.model", str(no_tok))
    no_chat = tmp_path / "no_chat"
    shutil.copytree(src, no_chat)
    cfg = json.loads((no_chat / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (no_chat / "tokenizer_config.json").write_text(json.dumps(cfg))
    for f in no_chat.glob("chat_template*"):
        f.unlink()
    with pytest.raises(ParamsError, match=rf"^policy\.model: {re.escape(str(no_chat))} has no chat template"):
        check_model("policy.model", str(no_chat))
    check_model("policy.model", str(src))  # the real folder passes


def test_model_weights_must_be_whole_and_match_their_config(toy, tmp_path):
    """Before: a config whose hidden size differs from its weights, a truncated config.json or safetensors
    file and a token id beyond the vocabulary (a PRM's step token) ended in raw tracebacks; a config with more
    layers than the weights would load with fresh layers. Each is one line naming the folder, before any model
    loads (safetensors headers only)."""
    from transformers import AutoTokenizer

    from prmlab.core.preflight import check_model

    src = Path(toy["policy"])
    mc = json.loads((src / "config.json").read_text())

    def variant(name: str) -> Path:
        d = tmp_path / name
        shutil.copytree(src, d)
        return d

    def refused(d: Path, message: str) -> None:
        with pytest.raises(ParamsError, match=rf"^policy\.model: {re.escape(str(d))}.*{message}"):
            check_model("policy.model", str(d))

    d = variant("hidden")
    (d / "config.json").write_text(json.dumps(mc | {"hidden_size": mc["hidden_size"] * 2}))
    refused(d, rf"hidden_size {mc['hidden_size'] * 2}, but the embedding weights are {mc['vocab_size']} x {mc['hidden_size']}")
    d = variant("vocab")
    (d / "config.json").write_text(json.dumps(mc | {"vocab_size": 8}))
    refused(d, "config.json says vocab_size 8")
    d = variant("layers")
    (d / "config.json").write_text(json.dumps(mc | {"num_hidden_layers": mc["num_hidden_layers"] + 1}))
    refused(d, rf"num_hidden_layers {mc['num_hidden_layers'] + 1}, the weights hold {mc['num_hidden_layers']} layers")
    d = variant("config_cut")
    (d / "config.json").write_text((src / "config.json").read_text()[:40])
    refused(d, r"config\.json is not valid JSON")
    d = variant("weights_cut")
    w = next(d.glob("*.safetensors"))
    w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])
    with pytest.raises(ParamsError, match=rf"^{re.escape(str(w))}: truncated: \d+ bytes, its header needs \d+"):
        check_model("policy.model", str(d))
    w.write_bytes(b"\x05")
    with pytest.raises(ParamsError, match=r"not a readable safetensors file \(1 bytes; truncated\?\)"):
        check_model("policy.model", str(d))
    d = variant("step_token")  # a token added past the embedding's rows, as a PRM's <extra_0> would be
    tok = AutoTokenizer.from_pretrained(src)
    for i in range(mc["vocab_size"] - len(tok) + 1):
        tok.add_special_tokens({"additional_special_tokens": [f"<extra_{100 + i}>"]})
    tok.save_pretrained(d)
    refused(d, rf"its tokenizer gives '<extra_\d+>' id {mc['vocab_size']}, beyond config\.json's vocab_size {mc['vocab_size']}")


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs, mounted here (root in a container that allows mounts: the CI machine's kind); unmounted after."""
    d = tmp_path / "disk"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN): read-only and full folders untested")
    yield d
    subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_a_read_only_or_full_output_folder_stops_a_stage_before_its_work(small_disk, monkeypatch, capsys):
    """Before: eval_bon scored every PRM, then lost the work to a read-only output folder in a traceback.
    A stage now tries its output folders first (a file made, 64 MiB free): dvc.yaml's eval_bon command with
    its scores in a read-only or a full folder stops with one line before anything loads; a write that
    fails later (the disk filled meanwhile) is one line naming the output too."""
    import importlib

    from prmlab.core.io import check_writable, write_json

    argv = _dvc_yaml_commands()["eval_bon"]
    opts = dict(zip(argv[1::2], argv[2::2]))
    monkeypatch.chdir(ROOT)  # dvc.yaml's inputs; only the scores' folder is changed

    def run_eval_bon(scores: Path) -> str:
        monkeypatch.setattr(sys, "argv", [argv[0], *sum(([k, str(scores) if k == "--scores" else v] for k, v in opts.items()), [])])
        with pytest.raises(SystemExit) as e:
            importlib.import_module(argv[0]).main()
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.strip().count("\n") == 0, err
        return err

    (small_disk / "big").write_bytes(b"x" * 900_000)
    assert "has 0.1 MiB free (at least 64 MiB needed to write outputs)" in run_eval_bon(small_disk / "eval" / "bon.jsonl")
    with pytest.raises(DataError, match=rf"^{re.escape(str(small_disk / 'm.json'))}: cannot write \(No space left on device\)"):
        write_json(small_disk / "m.json", {"x": "y" * 200_000})
    assert not [f for f in small_disk.iterdir() if f.name.endswith(".tmp")]  # no half file left
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    err = run_eval_bon(small_disk / "eval" / "bon.jsonl")
    assert f"[eval_bon] error: {small_disk / 'eval' / 'bon.jsonl'}: cannot write in {small_disk} (Read-only file system)" in err, err
    assert not (small_disk / "eval").exists()  # the check makes nothing
    with pytest.raises(DataError, match="Read-only file system"):
        check_writable(small_disk / "x.json")


def test_sampled_texts_do_not_move_with_the_cpu_kernels(toy):
    """A fresh clone on another x86 machine made byte-identical labels but other trained weights. What
    the report, README and seeds.md say rests on this: the policy samples the same texts whether torch, oneDNN and
    MKL run AVX-512 or AVX2 kernels (on an AVX2-only machine both runs are AVX2). Trained weights do move
    (benchmarks/bench_determinism.py measures by how much), so every run records its CPU."""
    from benchmarks.bench_determinism import PINNED

    code = f"""
import hashlib, json, torch
from prmlab.engines.generation import make_generator
from prmlab.engines.config import BackendConfig, Sampling
from prmlab.core.io import read_jsonl
from prmlab.prompts import policy_messages
from prmlab.core.records import Problem
probs = read_jsonl({str(toy["problems"] / "train.jsonl")!r}, Problem)
with make_generator(BackendConfig(model={toy["policy"]!r})) as gen:
    outs = gen.chat([policy_messages(p.question) for p in probs], Sampling(n=4, temperature=0.7, top_p=0.8, max_tokens=120, seed=3))
print(torch.backends.cpu.get_cpu_capability(), hashlib.md5(json.dumps([[c.text for c in o] for o in outs]).encode()).hexdigest())
"""
    got = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, **(PINNED if pinned else {})}) for pinned in (False, True)]
    assert all(g.returncode == 0 for g in got), [g.stderr[-800:] for g in got]
    (own, own_md5), (pinned, pinned_md5) = (g.stdout.split()[-2:] for g in got)
    assert pinned == "AVX2"
    assert own_md5 == pinned_md5, f"{own} and AVX2 kernels sampled other texts"


def test_nan_scores_never_become_figures(toy, tmp_path):
    """Before: a diverged PRM's NaN scores hung eval_processbench (step_auc's tie loop never advanced on
    NaN) and gave eval_bon a prm@4 from all-NaN scores. The eval stages refuse them, naming the PRM; the
    metric refuses them too."""
    from prmlab.analysis.metrics import refuse_nan, step_auc

    with pytest.raises(ValueError, match="step_auc: a step score is NaN"):
        step_auc([[0.9, float("nan")], [0.2]], [1, -1])
    with pytest.raises(DataError, match=r"^PRM 'judge': 1 of 3 step scores are NaN \(a diverged checkpoint\?\)"):
        refuse_nan("judge", [[0.9, float("nan")], [0.2]])
    refuse_nan("judge", [[0.9, float("-inf")], [0.2]])  # -inf is eval_bon's mark for a response cut to nothing


def test_shard_fingerprint_covers_every_module_a_stage_imports():
    """Before: label_mc resumed shards graded by an old steps.py (`extract_answer`): the fingerprint hashed
    labeling, generation and grading but not what they import. Now it follows every prmlab import."""
    from prmlab import prompts
    from prmlab.core import grading
    from prmlab.core.preflight import code_files
    from prmlab.engines import generation
    from prmlab.pipeline import labeling, sampling

    for mods in [(labeling, generation, grading), (labeling, generation, prompts), (sampling, generation, grading, prompts)]:
        names = {f.relative_to(ROOT / "src" / "prmlab").as_posix() for f in code_files(*mods)}
        assert {"core/steps.py", "core/records.py", "prompts/__init__.py", "core/grading.py", "engines/generation.py"} <= names, names


def test_a_folders_generation_config_never_changes_sampling(toy, tmp_path, capsys):
    """Before: the transformers backend merged the model folder's generation_config.json into sampling (a
    repetition_penalty there took accuracy from 0.52 to 0.00) and no params key showed it. Sampling now comes
    from params alone; what the file set is said on stderr."""
    from prmlab.engines.config import Sampling
    from prmlab.engines.generation import make_generator

    odd = tmp_path / "policy"
    shutil.copytree(toy["policy"], odd)
    gc = json.loads((odd / "generation_config.json").read_text())
    (odd / "generation_config.json").write_text(json.dumps(gc | {"repetition_penalty": 5.0, "no_repeat_ngram_size": 2}))
    prompt = [[{"role": "user", "content": "Tom has 3 apples and buys 4 more. How many apples does he have?"}]]
    outs = {}
    for name, path in (("plain", toy["policy"]), ("odd", str(odd))):
        with make_generator(BackendConfig(model=path)) as gen:
            outs[name] = [c.text for c in gen.chat(prompt, Sampling(max_tokens=60))[0]]
    assert outs["odd"] == outs["plain"] and outs["plain"][0]
    assert "generation_config.json sets {'no_repeat_ngram_size': 2, 'repetition_penalty': 5.0}: ignored" in capsys.readouterr().err


def _dvc_yaml_commands() -> dict[str, list[str]]:
    """dvc.yaml's stage name -> its command's arguments after `python -m`, foreach templates unexpanded."""
    import shlex

    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    return {name: shlex.split(st.get("do", st)["cmd"])[2:] for name, st in spec.items()}


@pytest.mark.parametrize("stage", sorted(_dvc_yaml_commands()))
def test_a_second_run_of_any_stage_on_its_outputs_stops_first(stage, tmp_path, monkeypatch, capsys):
    """Before: two train_prm runs on one output folder both succeeded (only the sharded stages took a
    lock). Every stage now holds its outputs' lock (--out, --metrics) from its first step: a second run
    of dvc.yaml's own command, while one holds them, stops with one line before anything loads."""
    import importlib

    from prmlab.core.io import output_lock

    argv = _dvc_yaml_commands()[stage]
    module, args = argv[0], argv[1:]
    if "{source}" in " ".join(args):
        args += ["--source", "prm800k" if stage == "human_data" else "judge"]
    opts = dict(zip(args[::2], args[1::2]))
    held = (opts.get("--out") or opts["--metrics"]).replace("{source}", opts.get("--source", ""))
    monkeypatch.chdir(tmp_path)  # nothing of the repo is touched: the lock lives in the temp dir
    monkeypatch.delenv("DVC_STAGE", raising=False)
    monkeypatch.setattr(sys, "argv", [module, *args])
    lock = output_lock(held)
    try:
        with pytest.raises(SystemExit) as e:
            importlib.import_module(module).main()
    finally:
        lock.close()
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.strip().count("\n") == 0, err
    assert f"{held}: another run is writing this output" in err, err


def test_prmlab_params_never_overrides_what_dvc_records(tmp_path, monkeypatch):
    """Before: PRMLAB_PARAMS set in the shell overrode what dvc.lock records under `dvc repro`. Under DVC
    (DVC_STAGE set) a stage reads the repo's params.yaml or stops with one line."""
    from prmlab.core.stage import check_dvc_params

    (tmp_path / "copy").mkdir()
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("DVC_STAGE", "train_prm@judge")
    check_dvc_params(str(tmp_path / "params.yaml"))
    with pytest.raises(ParamsError, match=r"^--params /elsewhere/p\.yaml \(from PRMLAB_PARAMS\?\) under `dvc repro` \(train_prm@judge\)"):
        check_dvc_params("/elsewhere/p.yaml")
    monkeypatch.chdir(tmp_path / "copy")  # a queued experiment's copy of the repo: DVC_ROOT names the original
    check_dvc_params("params.yaml")
    monkeypatch.delenv("DVC_STAGE")
    check_dvc_params("/elsewhere/p.yaml")  # outside DVC: any file


def test_params_path_that_is_a_folder_or_not_utf8(tmp_path):
    """Before: `--params` naming a folder, and a params file with a non-UTF-8 byte, ended in tracebacks
    that named no file."""
    from prmlab.core.params import read_params

    with pytest.raises(ParamsError, match=rf"^{re.escape(str(tmp_path))}: is a folder, not a params file$"):
        read_params(tmp_path)
    bad = tmp_path / "p.yaml"
    bad.write_bytes(b"toy:\n  n_train: 8\n  note: caf\xe9\n")
    with pytest.raises(ParamsError, match=rf"^{re.escape(str(bad))}: line 3: not UTF-8 \(byte 0xe9\)$"):
        read_params(bad)


@pytest.mark.parametrize("text, says", [('{"headline": {"f1": 0.5', "is not valid JSON"), ("", "is not valid JSON"),
                                        ("{}", "holds no metrics"), ("[1, 2]", "holds no metrics")])
def test_prmlab_metrics_on_a_broken_file(tmp_path, text, says):
    """Before: `prmlab metrics` on a truncated or empty JSON file ended in a traceback."""
    f = tmp_path / "metrics.json"
    f.write_text(text)
    out = subprocess.run([sys.executable, "-m", "flows.cli", "metrics", "--file", str(f)], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 1 and out.stderr.strip().startswith(f"prmlab metrics: {f} {says}"), out.stderr[-500:]
    assert "Traceback" not in out.stderr


def test_an_mc_soft_set_without_soft_values(toy, tmp_path, capsys):
    """Before: an mc_soft training set without soft values trained nothing and was blamed on max_length.
    With none, train_prm@mc_soft stops naming the field before the model loads; with some missing, they are a
    counted skip (stderr, and the metrics' examples_without_soft)."""
    from types import SimpleNamespace

    from prmlab.core.io import write_jsonl
    from prmlab.prms.training import TrainPRMConfig, prepare_train

    cfg = {"policy": BackendConfig(model=toy["policy"]), "train_prm": TrainPRMConfig()}
    ex = dict(prompt="1 + 1?", completions=["1 + 1 = 2"], labels=[1])
    write_jsonl(tmp_path / "hard.jsonl", [PRMExample(**ex, response_id=f"r{i}") for i in range(3)])
    a = SimpleNamespace(out=str(tmp_path / "prm"), train=str(tmp_path / "hard.jsonl"), source="mc_soft")
    with pytest.raises(DataError, match=rf"^{re.escape(a.train)}: none of its 3 examples carries soft values \(field 'soft'\)"):
        prepare_train(a, cfg)
    assert len(prepare_train(SimpleNamespace(**{**vars(a), "source": "mc_hard"}), cfg).examples) == 3  # hard sources need none
    write_jsonl(tmp_path / "some.jsonl", [PRMExample(**ex, response_id="r0", soft=[0.5]), PRMExample(**ex, response_id="r1")])
    a.train = str(tmp_path / "some.jsonl")
    got = prepare_train(a, cfg)
    assert [e.response_id for e in got.examples] == ["r0"] and got.without_soft == 1
    assert "[train_prm@mc_soft] 1/2 examples skipped: no soft values (field 'soft')" in capsys.readouterr().err


def test_a_prm_name_is_a_plain_name(tmp_path):
    """Before: `prmlab eval MODEL --name a=b` ended in a raw traceback. A PRM's name (it names a results folder
    and MLflow keys) is letters, digits, '_', '.', '-': the CLI, --prm flags and reference_prms say so in one line."""
    from prmlab.prms.layouts import prms_to_evaluate

    out = subprocess.run([sys.executable, "-m", "flows.cli", "eval", "models/policy", "--name", "a=b"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 1 and out.stderr.strip() == ("prmlab eval: --name: PRM name 'a=b' must be letters, digits, "
                                                          "'_', '.' or '-' (it names a results folder and MLflow keys)")
    with pytest.raises(ParamsError, match=r"^--prm a/b=x: PRM name 'a/b' must be"):
        prms_to_evaluate({}, ["a/b=x"], {})
    with pytest.raises(ParamsError, match=r"^reference_prms\.\.\./up: PRM name '\.\./up' must be"):
        prms_to_evaluate({}, [], {"../up": "Qwen/Qwen2.5-Math-PRM-7B"})
    assert set(prms_to_evaluate({}, ["Qwen2.5-Math-PRM-7B=x"], {})) == {"Qwen2.5-Math-PRM-7B"}


def test_processbench_items_outside_the_subsets_are_counted(tmp_path, capsys):
    """Before: ProcessBench items without a `subset` (or in a subset not configured) were dropped without a
    count (20 of 40). They are counted per subset, said on stderr and kept in the metrics."""
    from prmlab.core.io import write_jsonl
    from prmlab.pipeline.processbench import EvalPBConfig, load_items

    item = ProcessBenchItem(id="a", generator="g", problem="1 + 1?", steps=["1 + 1 = 2"], final_answer_correct=True,
                            label=-1, subset="toy")
    rows = [item, dataclasses.replace(item, id="b", subset=""), dataclasses.replace(item, id="c", subset=""),
            dataclasses.replace(item, id="d", subset="gsm8k")]
    write_jsonl(tmp_path / "items.jsonl", rows)
    items, outside = load_items(EvalPBConfig(subsets=["toy"], threshold_subset="toy"), str(tmp_path / "items.jsonl"))
    assert [i.id for i in items["toy"]] == ["a"] and outside == {"(none)": 2, "gsm8k": 1}
    assert "3 of 4 items are in no subset of eval_processbench.subsets and are not evaluated" in capsys.readouterr().err


def test_a_blank_step_in_a_response_is_named(tmp_path):
    """Before: a whitespace-only middle step was rolled out by label_mc and labelled like a step."""
    r = Response(problem_id="p", response_id="r", steps=["1 + 1 = 2", "  \n ", "so 2"], answer="2", correct=True)
    _write_lines(tmp_path / "s.jsonl", [json.dumps(Response(problem_id="p", response_id="ok", steps=["a"], answer="2",
                                                             correct=True).to_dict()), json.dumps(r.to_dict())])
    with pytest.raises(DataError, match=r"s\.jsonl:2: .*field 'steps': step 1 is empty or whitespace only"):
        read_jsonl(tmp_path / "s.jsonl", Response)


@pytest.mark.parametrize("stage", sorted(_dvc_yaml_commands()))
def test_every_stage_stops_first_at_a_broken_tracking_store(stage, tmp_path, monkeypatch, capsys):
    """Every stage, run by dvc.yaml's own command, against a tracking server that is unreachable
    (a refused port), one that accepts and never answers, and a locked SQLite store: each stops in one line
    naming MLFLOW_TRACKING_URI within the check's timeout (PRMLAB_STORE_TIMEOUT_S, 0.5 s here), before its
    inputs are read (there are none here) or any model loads."""
    import importlib
    import sqlite3

    argv = _dvc_yaml_commands()[stage]
    args = argv[1:] + (["--source", "prm800k" if stage == "human_data" else "judge"] if "{source}" in " ".join(argv) else [])
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DVC_STAGE", raising=False)
    monkeypatch.setenv("PRMLAB_STORE_TIMEOUT_S", "0.5")
    monkeypatch.setattr(sys, "argv", [argv[0], *args])
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts (the kernel's backlog) and never answers
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        refused = s.getsockname()[1]
    locked = tmp_path / "locked.db"
    holder = sqlite3.connect(locked, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    stores = {f"http://127.0.0.1:{refused}": "the tracking server did not answer in 0.5 s",
              f"http://127.0.0.1:{silent.getsockname()[1]}": "the tracking server did not answer in 0.5 s",
              f"sqlite:///{locked}": "the tracking store cannot be written (database is locked; waited 0.5 s)"}
    try:
        for uri, says in stores.items():
            monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
            t0 = time.monotonic()
            with pytest.raises(SystemExit) as e:
                importlib.import_module(argv[0]).main()
            err = capsys.readouterr().err
            assert e.value.code == 2 and err.strip().count("\n") == 0, err
            assert f"error: MLFLOW_TRACKING_URI {uri}: {says}" in err, err
            assert time.monotonic() - t0 < 5
    finally:
        silent.close()
        holder.rollback()
        holder.close()


def test_a_tracking_store_that_never_answers_or_is_broken(tmp_path):
    """Before: an MLflow server that accepts and never answers held a stage 20+ minutes before any work; a
    locked, corrupt or refusing store cost 248 s of retries, then a traceback. The store is checked first,
    within 5 s, and named in one line."""
    import sqlite3

    from prmlab.core.tracking import check_store

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts connections (the kernel's backlog) and never answers
    port = silent.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(ParamsError, match=rf"^MLFLOW_TRACKING_URI http://127\.0\.0\.1:{port}: the tracking server did not "
                                          r"answer in 1 s"):
        check_store(f"http://127.0.0.1:{port}", timeout_s=1.0)
    assert time.monotonic() - t0 < 10
    silent.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with pytest.raises(ParamsError, match="the tracking server did not answer"):  # refused
        check_store(f"http://127.0.0.1:{closed}", timeout_s=1.0)
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ParamsError, match=rf"^MLFLOW_TRACKING_URI sqlite:///{re.escape(str(corrupt))}: the tracking store "
                                          r"cannot be written \(file is not a database"):
        check_store(f"sqlite:///{corrupt}", timeout_s=1.0)
    locked = tmp_path / "locked.db"
    holder = sqlite3.connect(locked, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    with pytest.raises(ParamsError, match=r"cannot be written \(database is locked; waited 1 s\)"):
        check_store(f"sqlite:///{locked}", timeout_s=1.0)
    holder.rollback()
    holder.close()
    check_store(f"sqlite:///{locked}", timeout_s=1.0)  # free again
    check_store(f"sqlite:///{tmp_path / 'new.db'}")  # not there yet: MLflow creates it


@pytest.fixture
def wrong_servers():
    """Web servers on loopback that answer but are no MLflow and no Ray: `web` (404 on /health, HTML), `health-only`
    (/health says OK, the REST API is an HTML page), `api-hangs` (/health says OK, the API never answers), and
    `silent` (accepts connections, never says a byte). {kind: port}."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    stop = threading.Event()

    def handler(kind: str):
        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                if self.path == "/health" and kind != "web":
                    body, ctype, code = b"OK", "text/plain", 200
                elif kind == "api-hangs":
                    stop.wait(30)
                    return
                else:
                    body, ctype, code = b"<html><body>Not here</body></html>", "text/html", 200 if kind == "health-only" else 404
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        return H

    servers = {kind: ThreadingHTTPServer(("127.0.0.1", 0), handler(kind)) for kind in ("web", "health-only", "api-hangs")}
    for srv in servers.values():
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    yield {**{k: srv.server_port for k, srv in servers.items()}, "silent": silent.getsockname()[1]}
    stop.set()
    for srv in servers.values():
        srv.shutdown()
        srv.server_close()
    silent.close()


def test_a_server_that_answers_but_is_the_wrong_one_is_one_line_within_its_bound(wrong_servers, tmp_path, ray_held):
    """Round 4: a web server that is not MLflow passed the store check (a 404 on /health counted as reachable), one whose
    /health answers but whose API hangs held a stage 256 s, and a Ray address that accepts TCP but is not Ray hung the
    stage in ray.init (still there at 180 s: the probe tested the TCP connect only). Each is one line naming
    MLFLOW_TRACKING_URI or engine.ray.address within the check's bound; a real MLflow server and a real Ray node
    pass the same checks."""
    import threading

    from prmlab.core.tracking import check_store
    from prmlab.engines.cluster import _probe

    says = {"web": "not an MLflow tracking server (/health answered 404 '<html><body>Not here</body></html>', where "
                   "MLflow answers 200 OK)",
            "health-only": "not an MLflow tracking server (its REST API answered 200 text/html '<html><body>Not here</body>"
                           "</html>', not MLflow's JSON)",
            "api-hangs": "the tracking server's API did not answer in 1 s",
            "silent": "the tracking server did not answer in 1 s"}
    for kind, message in says.items():
        uri = f"http://127.0.0.1:{wrong_servers[kind]}"
        t0 = time.monotonic()
        with pytest.raises(ParamsError) as e:
            check_store(uri, timeout_s=1.0)
        assert str(e.value).startswith(f"MLFLOW_TRACKING_URI {uri}: {message}"), str(e.value)
        assert time.monotonic() - t0 < 4 and "\n" not in str(e.value)
    for kind, said in (("silent", "no answer within 1s"), ("web", "it answered '<!DOCTYPE HTML>'")):
        t0 = time.monotonic()
        with pytest.raises(ParamsError) as e:
            _probe(f"127.0.0.1:{wrong_servers[kind]}", 1.0)
        assert str(e.value).startswith(f"engine.ray.address '127.0.0.1:{wrong_servers[kind]}': accepts connections but is "
                                       f"no Ray cluster (a Ray node answers gRPC at once; {said}"), str(e.value)
        assert time.monotonic() - t0 < 3

    # the stage, by its command line: one line, exit 2, before any model loads and before its MLflow run
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["engine"] |= {"sample": "ray", "ray": {**params["engine"]["ray"], "address": f"127.0.0.1:{wrong_servers['silent']}",
                                                  "connect_timeout_s": 1}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (tmp_path / "problems.jsonl").write_text(json.dumps(PROBLEM) + "\n")
    p = subprocess.run([sys.executable, "-m", "stages.sample", "--section", "sample", "--problems", str(tmp_path / "problems.jsonl"),
                        "--out", str(tmp_path / "samples.jsonl"), "--metrics", str(tmp_path / "sample.json"), "--params",
                        str(tmp_path / "params.yaml")], cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0, p.stderr[-2000:]
    assert p.stderr.startswith(f"[sample] error: engine.ray.address '127.0.0.1:{wrong_servers['silent']}': accepts connections "
                               "but is no Ray cluster"), p.stderr
    assert not (tmp_path / "samples.jsonl").exists()

    # the real servers pass: MLflow's own app (its first request makes the store's tables), a local Ray's GCS
    os.environ |= {"_MLFLOW_SERVER_FILE_STORE": f"sqlite:///{tmp_path / 'server.db'}",
                   "_MLFLOW_SERVER_ARTIFACT_ROOT": str(tmp_path / "artifacts")}
    try:
        from mlflow.server import app
        from werkzeug.serving import make_server

        srv = make_server("127.0.0.1", 0, app, threaded=True)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        check_store(f"http://127.0.0.1:{srv.server_port}", timeout_s=60.0)  # made the tables
        check_store(f"http://127.0.0.1:{srv.server_port}", timeout_s=2.0)
        srv.shutdown()
    finally:
        for k in ("_MLFLOW_SERVER_FILE_STORE", "_MLFLOW_SERVER_ARTIFACT_ROOT"):
            os.environ.pop(k)
    script = ("import logging, ray; ray.init(address='local', include_dashboard=False, num_cpus=1, "
              "logging_level=logging.WARNING); from prmlab.engines.cluster import _probe; "
              "_probe(ray.get_runtime_context().gcs_address, 5.0); print('probed'); ray.shutdown()")
    env = {**_env(tmp_path), "RAY_TMPDIR": str(ray_held), "RAY_USAGE_STATS_ENABLED": "0"}
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "probed" in r.stdout, r.stderr[-2000:]


@pytest.mark.parametrize("args, message", [
    (["--port", "70000"], "argument --port: 70000 is not a TCP port (1-65535)"),
    (["--port", "http"], "argument --port: 'http' is not a port number"),
    (["--workers", "0"], "argument --workers: '0' is not an integer >= 1"),
])
def test_prmlab_ui_refuses_bad_arguments_before_it_starts(args, message):
    """`prmlab ui --port 70000` had written its views, then died in MLflow's server with a traceback, exit 0."""
    p = subprocess.run([sys.executable, "-m", "flows.cli", "ui", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.strip().splitlines()[-1].endswith(message), p.stderr


# --- the fourth round, what was left: each class closed where the data or the setting enters ---------------------

PB_ROW = {"model": "prm/mc_hard", "subset": "toy", "id": "pb0-0", "label": -1, "n_steps": 2, "pred": -1}


def _score_readers(tmp_path: Path) -> dict:
    """Every reader of a score file, as its stage or command calls it: {name: (its file's first row, a second row,
    read(path))}."""
    from prmlab.pipeline.bias import prepare_bias
    from prmlab.pipeline.scorefile import read_scores
    from prmlab.report.study import evidence
    from prmlab.report.tables import table_row

    samples = _write_lines(tmp_path / "samples.jsonl", [json.dumps(RESP), json.dumps(RESP | {"response_id": "r1"})])
    good_pb = _write_lines(tmp_path / "good_pb.jsonl", [json.dumps(PB_ROW | {"step_scores": [0.9, 0.8]})])
    good_bon = _write_lines(tmp_path / "good_bon.jsonl", [json.dumps(SCORE_ROW | {"step_scores": [0.9, 0.8]})])
    m = {"eval_processbench": {"items": {"toy": 1}}, "tune": None, "held": [], "consensus": {}}

    def table(path: Path):  # `prmlab eval`'s tables read <out>/bon_scores.jsonl beside its bon.json
        out = tmp_path / "eval"
        out.mkdir(exist_ok=True)
        (out / "bon.json").write_text(json.dumps({"n": 1, "results": {"x": {"average": {}},
                                                                     "baselines": {"average": {"maj": 1, "pass": 1}}}}))
        if path != out / "bon_scores.jsonl":  # /dev/zero: named by the path the reader opened
            (out / "bon_scores.jsonl").unlink(missing_ok=True)
            (out / "bon_scores.jsonl").symlink_to(path)
        return table_row("x", "x", out, ["bon"])

    bon2 = SCORE_ROW | {"response_id": "r1"}
    return {
        "report-processbench": (PB_ROW, PB_ROW | {"id": "pb0-1"}, lambda p: evidence(m, p, good_bon, n_boot=10)),
        "report-bon": (SCORE_ROW, bon2, lambda p: evidence(m, good_pb, p, n_boot=10)),
        "analyze_bias": (SCORE_ROW, bon2, lambda p: prepare_bias(argparse.Namespace(samples=str(samples), scores=str(p)), {})),
        "prmlab-eval-tables": (SCORE_ROW, bon2, table),
        "prmlab-score": ({"id": "pb0"}, {"id": "pb1"}, lambda p: read_scores(p, {"pb0": 2, "pb1": 2}, "ProcessBench")),
    }


@pytest.mark.parametrize("reader", ["report-processbench", "report-bon", "analyze_bias", "prmlab-eval-tables", "prmlab-score"])
def test_no_figure_from_a_non_finite_or_unbounded_score(tmp_path, reader):
    """Round 4: the report took NaN step scores (the findings' intervals moved: mc_hard - oracle 0.5 [-39.2, 21.5] ->
    3.7 [-35.6, 35.9], exit 0), and /dev/zero as a score file read one endless line. Every reader of a score file
    checks each row's step scores where it reads them (prmlab.analysis.metrics.read_score_rows, check_step_scores), and every
    JSONL line is capped (prmlab.core.io.MAX_LINE_BYTES): one line naming the file, line and field."""
    first, second, read = _score_readers(tmp_path)[reader]
    (tmp_path / "eval").mkdir()
    path = tmp_path / ("eval/bon_scores.jsonl" if reader == "prmlab-eval-tables" else "scores.jsonl")
    read(_write_lines(path, [json.dumps(r | {"step_scores": [0.9, 0.8]}) for r in (first, second)]))
    for bad, says in ((b"NaN", "nan is not"), (b"-Infinity", "-inf is not"), (b'"0.5"', "'0.5' is not")):
        _write_lines(path, [json.dumps(first | {"step_scores": [0.9, 0.8]}),
                                                        json.dumps(second).encode()[:-1] + b', "step_scores": [0.9, ' + bad + b"]}"])
        with pytest.raises(DataError) as e:
            read(path)
        assert str(e.value).startswith(f"{path}:2: field 'step_scores[1]': {says}"), str(e.value)
    t0 = time.monotonic()
    with pytest.raises(DataError) as e:
        read(Path("/dev/zero"))
    named = path if reader == "prmlab-eval-tables" else "/dev/zero"
    assert str(e.value) == f"{named}:1: a line longer than 64 MiB (not a JSONL file?)" and time.monotonic() - t0 < 30


RPRM_BUILTIN = (ROOT / "src/prmlab/prompts/rprm.txt").read_text()
SETTING_CASES = [  # (case id, params sections changed, the one line after "<stage> error: ")
    ("engine-eval-bon-ray", {"engine": {"eval_bon": "ray"}},
     "engine.eval_bon: 'eval_bon' has no engine setting, it runs in its own process whatever this says (the stages with "
     "one: sample, sample_eval, label_mc, label_judge, toy_human, ceiling)"),
    ("engine-analyze-bias-local", {"engine": {"analyze_bias": "local"}}, "engine.analyze_bias: 'analyze_bias' has no engine"),
    ("votes-at-temperature-0", {"eval_bon": {"reference_prms": {"v": {"model": "m", "layout": "thinkprm", "votes": 4,
                                                                     "temperature": 0}}}},
     "reference_prms.v.votes 4 at temperature 0 are one greedy reply repeated: set votes 1, or a temperature > 0 to "
     "sample them"),
    ("rprm-template-stray-braces", {"eval_bon": {"reference_prms": {"v": {"model": "m", "layout": "rprm",
                                                                         "template_file": "{tmp}/stray.txt"}}}},
     "reference_prms.v.template_file: template {tmp}/stray.txt: needs three {{}} (question, previous steps, now step) and "
     "no other placeholder, as R-PRM's template; found {{}} on line 1, {{}} on line 15, {{}} on line 16, {{}} on line 17; "
     "escape literal braces as {{{{ }}}}"),
    ("rprm-template-named-placeholder", {"eval_bon": {"reference_prms": {"v": {"model": "m", "layout": "rprm",
                                                                              "template_file": "{tmp}/named.txt"}}}},
     "reference_prms.v.template_file: template {tmp}/named.txt: needs three {{}} (question, previous steps, now step) and "
     "no other placeholder, as R-PRM's template; found {{question}} on line 14, {{}} on line 15, {{}} on line 16"),
    ("rprm-template-lone-brace", {"eval_bon": {"reference_prms": {"v": {"model": "m", "layout": "rprm",
                                                                       "template_file": "{tmp}/lone.txt"}}}},
     "reference_prms.v.template_file: template {tmp}/lone.txt: line 1: Single '}}' encountered in format string; escape "
     "literal braces as {{{{ }}}}"),
]


@pytest.mark.parametrize("change, says", [c[1:] for c in SETTING_CASES], ids=[c[0] for c in SETTING_CASES])
def test_a_setting_no_stage_can_honour_is_refused_before_any_model_loads(tmp_path, change, says):
    """Round 4: `engine.eval_bon: ray` ran locally without a word (label_mc refused the same file), a generative
    verifier's `votes: 4` at temperature 0 recorded 4 identical votes, and an rprm template with a stray `{}` failed as a
    traceback once the PRMs before it had run. Each is refused where params are read (prmlab.core.params.read_params,
    prmlab.prms.generative.VerifierConfig, verifier_config: every family's template filled before any model loads), by the
    eval_bon stage's own command: one line naming the key, exit 2, nothing written, no MLflow run."""
    (tmp_path / "stray.txt").write_text("Check {}.\n" + RPRM_BUILTIN)
    (tmp_path / "named.txt").write_text(RPRM_BUILTIN.replace("Question: {}", "Question: {question}"))
    (tmp_path / "lone.txt").write_text("Reply with } only.\n" + RPRM_BUILTIN)
    for kv in change.values():
        for v in kv.get("reference_prms", {}).values():
            v["template_file"] = v.get("template_file", "").format(tmp=tmp_path) or None
            if v["template_file"] is None:
                v.pop("template_file")
    data = yaml.safe_load((ROOT / "params.yaml").read_text())
    for sec, kv in change.items():
        data[sec] = {**data[sec], **kv}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(data))
    p = subprocess.run([sys.executable, "-m", "stages.eval_bon", "--problems", str(tmp_path / "none.jsonl"), "--samples",
                        str(tmp_path / "none.jsonl"), "--metrics", str(tmp_path / "bon.json"), "--scores",
                        str(tmp_path / "bon.jsonl"), "--params", str(tmp_path / "params.yaml")],
                       cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0, p.stderr[-2000:]
    assert p.stderr.startswith("[eval_bon] error: " + says.format(tmp=tmp_path)), p.stderr
    assert not (tmp_path / "bon.json").exists() and not (tmp_path / "mlflow.db").exists()


def test_greedy_votes_are_refused_at_a_familys_own_default_too(monkeypatch):
    """votes > 1 where the temperature is left to the family's default and that default is greedy: the same refusal
    as at an explicit temperature 0, before the model is opened (no family defaults to greedy with votes today:
    the toy judge samples at T 1.0 once it votes; this holds one that would, as the params check cannot see it)."""
    from prmlab.prms.generative import ToyJudgeScorer, VerifierConfig

    monkeypatch.setattr(ToyJudgeScorer, "defaults", property(lambda self: (0.0, 1.0, -1, 256)))
    with pytest.raises(ParamsError, match=r"^votes 4 at toy_judge's default temperature 0 are one greedy reply repeated: "
                                          r"set votes 1, or a temperature > 0 to sample them$"):
        ToyJudgeScorer("no/such/model", VerifierConfig(votes=4))


def test_a_prm_run_that_did_not_learn_or_cannot_run_here_is_not_saved(toy, tmp_path):
    """Training health (round 4): a run whose loss turns non-finite, or ends far above where it began
    (prmlab.prms.training.check_health: the last tenth's mean over 2x the first step's loss, or the first tenth's mean
    where lower), is not saved as trained, and says what it saw. lr 1e30 is nan at step 2 on any machine; at lr
    0.3-3 the toy PRM's loss is chaotic, and how a run ends differs between CPUs (lr 3: 0.69 -> 13567 -> ... -> 5.6
    on one Intel Xeon, nan at step 19 on another, 0.41 on an AMD EPYC), so those runs are held to the rule itself:
    saved exactly when their curve passes it. A run that learns is saved (the study's 20 runs end at 0.02-0.72x
    their start). An attention this machine cannot run (flash-attn's, packed or grouped, without the package) is one
    line naming the key before any model loads (the base here does not exist: it is never opened)."""
    from transformers.utils import is_flash_attn_2_available

    from prmlab.prms.training import TrainPRMConfig, check_health, train, train_process

    ex = [PRMExample(prompt=f"{i} + 1?", completions=[f"{i} + 1 = {i + 1}", "so the answer is 2"], labels=[1, i % 2],
                     response_id=f"r{i}") for i in range(8)]
    cfg = TrainPRMConfig(lr=3.0, steps=40, batch_size=2, max_length=128, warmup_ratio=0.0, max_grad_norm=0.0)
    rise = (r"did not learn: its loss ended at [\d.e+]+ \(mean of the last 4 of 40 steps\), over 2x where it began "
            r"\(step 1: 0\.6\d+; mean of the first 4: [\d.e+]+\)")
    with pytest.raises(DataError, match=r"^train_prm diverged: the loss is nan at step 2 of 40 \(train_prm\.lr 1e\+30\); "
                                        r"no checkpoint saved$"):
        train(ex, toy["policy"], str(tmp_path / "nan"), dataclasses.replace(cfg, lr=1e30), soft=False)
    assert not (tmp_path / "nan" / "model.safetensors").exists()
    # the rule's own words, on a curve that rises: 0.69 at step 1, 4.0 at the end
    with pytest.raises(DataError, match=rf"^train_prm {rise} \(train_prm\.lr 3\); no checkpoint saved$"):
        check_health([0.6929, 0.66, 0.65, 0.66] + [0.7] * 32 + [4.0] * 4, cfg)
    check_health([0.6929] + [0.3] * 39, cfg)
    for lr, warmup in ((3.0, 0.0), (3.0, 0.5), (1.0, 0.9), (0.3, 0.9)):
        out = tmp_path / f"lr{lr:g}-warmup{warmup:g}"
        run = dataclasses.replace(cfg, lr=lr, warmup_ratio=warmup)
        try:
            curve = train_process(ex, toy["policy"], str(out), run, soft=False)["curve"]
        except DataError as e:
            assert re.match(rf"^train_prm ({rise}|diverged: the loss is (nan|-?inf) at step \d+ of 40) "
                            rf"\(train_prm\.lr {lr:g}\); no checkpoint saved$", str(e)), e
            assert not (out / "model.safetensors").exists(), out
        else:
            check_health(curve, run)  # saved, so its curve passes the rule
            assert (out / "model.safetensors").exists(), out
    m = train(ex, toy["policy"], str(tmp_path / "ok"), dataclasses.replace(cfg, lr=1e-3), soft=False)
    assert (tmp_path / "ok" / "model.safetensors").exists() and m["final_logged_loss"] < 2 * m["train_loss"]
    if is_flash_attn_2_available():
        pytest.skip("flash-attn is installed here: flash_attention_2 runs")
    for batching in ("packed", "grouped"):
        with pytest.raises(DataError, match=r"^train_prm\.attn_implementation flash_attention_2 needs the flash-attn "
                                            r"package \(flash_attn\) and a CUDA GPU, which this machine lacks: use sdpa$"):
            train(ex, "no/such/model", str(tmp_path / batching), TrainPRMConfig(attn_implementation="flash_attention_2",
                                                                                 batching=batching, steps=1), soft=False)


def test_an_entry_point_or_store_that_cannot_serve_is_one_line(wrong_servers, tmp_path):
    """Round 4: `prmlab ui` against a refusing store (249 s of retries, then a traceback) or a server whose /health
    answers and whose API hangs (256 s, then a traceback); a SQLite store of an older or unknown MLflow's schema (a
    traceback when the run opened); `flows.seeds --record` with a truncated findings file (a traceback from inside
    Prefect). Each is one line within its bound (`prmlab ui` checks the store as a stage does:
    prmlab.core.tracking.check_store reads the schema's version against MLflow's migrations), exit 2."""
    import sqlite3

    made = tmp_path / "made.db"
    con = sqlite3.connect(made)  # a store's version table as MLflow keeps it
    con.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    con.execute("INSERT INTO alembic_version VALUES ('ffffffffffff')")
    con.commit()
    con.close()
    older = tmp_path / "older.db"
    shutil.copy(made, older)
    with sqlite3.connect(older) as con:
        con.execute("UPDATE alembic_version SET version_num = '0584bdc529eb'")  # one of MLflow's own, not its newest
    truncated = tmp_path / "findings.json"
    truncated.write_text('{"findings": [{"id": "f1", "verdict"')
    ui = [sys.executable, "-m", "flows.cli", "ui"]
    cases = {  # name: (argv, MLFLOW_TRACKING_URI, the last line)
        "ui-refused": (ui, f"http://127.0.0.1:{_closed_port()}", "the tracking server did not answer in 1 s"),
        "ui-api-hangs": (ui, f"http://127.0.0.1:{wrong_servers['api-hangs']}", "the tracking server's API did not answer in 1 s"),
        "ui-unknown-schema": (ui, f"sqlite:///{made}", "the tracking store's schema (ffffffffffff) is unknown to MLflow "),
        "ui-older-schema": (ui, f"sqlite:///{older}", "the tracking store's schema is an older MLflow's (0584bdc529eb, "),
        "seeds-record-truncated": ([sys.executable, "-m", "flows.seeds", "--seeds", "6", "--record", "1", "--findings",
                                    str(truncated), "--commit", "HEAD"], f"sqlite:///{tmp_path / 'x.db'}",
                                   f"error: --findings/--headline: {truncated}:1: malformed JSON ("),
        "seeds-one": ([sys.executable, "-m", "flows.seeds", "--seeds", "1"], f"sqlite:///{tmp_path / 'x.db'}",
                      "error: --seeds 1: an interval across seeds needs two or more"),
        "seeds-negative": ([sys.executable, "-m", "flows.seeds", "--seeds", "-3", "--aggregate-only"],
                           f"sqlite:///{tmp_path / 'x.db'}", "error: --seeds -3: an interval across seeds needs two or more"),
    }
    procs = {name: subprocess.Popen(argv, cwd=ROOT, env=_env(tmp_path) | {"MLFLOW_TRACKING_URI": uri, "PRMLAB_STORE_TIMEOUT_S": "1",
                                                                          "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name, (argv, uri, _) in cases.items()}
    for name, p in procs.items():
        _, err = p.communicate(timeout=600)
        lines = err.strip().splitlines()
        assert p.returncode == 2 and cases[name][2] in lines[-1], (name, err[-2000:])
        assert not any("Traceback" in ln for ln in lines), (name, err[-2000:])


def test_a_failure_of_what_a_stage_runs_on_is_one_line(toy, tmp_path):
    """Round 4: a replica death with `engine.ray.max_retries: 0` ended in a traceback, as did any backend failure after
    the checks (prmlab.engines.generation.GenerationError). Such a failure is a prmlab.core.io.Fault: the stage runner ends it in one
    line naming it, exit 1 (not bad input's 2: a flow may retry it). Here a judge server that answers HTTP 500."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Broken(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Broken)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    problems = toy["problems"] / "train.jsonl"
    samples = _write_lines(tmp_path / "s.jsonl", [json.dumps(RESP | {"problem_id": read_jsonl(problems, Problem)[0].id})])
    params = _params(tmp_path, judge={"backend": "openai", "model": "judge", "max_retries": 0,
                                      "base_url": f"http://127.0.0.1:{srv.server_port}/v1"})
    try:
        p = subprocess.run([sys.executable, "-m", "stages.label_judge", "--problems", str(problems), "--samples", str(samples),
                            "--out", str(tmp_path / "j.jsonl"), "--metrics", str(tmp_path / "j.json"), "--params", str(params)],
                           cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    finally:
        srv.shutdown()
    lines = [ln for ln in p.stderr.strip().splitlines() if "error" in ln or "Traceback" in ln]
    assert p.returncode == 1 and lines == [f"[label_judge] error: http://127.0.0.1:{srv.server_port}/v1/chat/completions: HTTP "
                                           "500 after 1 tries"], p.stderr[-2000:]
    assert not (tmp_path / "j.jsonl").exists()
