"""The toy's PRM800K analogue (prmlab.toy.annotators, stage toy_human@toy): off-policy solutions whose
true first error is the verifier's, an annotator wrong at the stated rate, and the stage's counts."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

from conftest import ROOT

from prmlab.toy.annotators import annotate, annotator_label
from prmlab.toy.world import make_problems, verify


def test_annotator_mistakes_by_hand():
    rng = random.Random(0)
    assert annotator_label(rng, 2, 4, noise=0.0) == (2, None)  # never wrong at noise 0
    assert annotator_label(rng, -1, 4, noise=0.0) == (-1, None)
    for _ in range(50):  # always wrong at noise 1: a flag on a clean solution, a missed or moved error
        got, kind = annotator_label(rng, -1, 4, noise=1.0)
        assert kind == "false_alarm" and 0 <= got < 4
        got, kind = annotator_label(rng, 2, 4, noise=1.0)
        assert (kind, got) in {("missed", -1), ("misplaced", 1), ("misplaced", 3)}
        assert annotator_label(rng, 0, 1, noise=1.0) == (-1, "missed")  # one step: nowhere to move it


def test_noise_rate_and_off_policy_solutions():
    problems = make_problems(7, 2000, "h")
    clean, counts = annotate(problems, seed=0, flawed_share=0.6, flaw_mix={"slip": 1.0}, noise=0.0)
    assert counts["agree_with_verifier"] == 2000 and counts["false_alarm"] == counts["missed"] == 0
    # Labels are the verifier's on the very text: the first 0 sits at the verifier's first error.
    for ex, p in zip(clean[:200], problems[:200]):
        fe = verify(p, ex.completions).first_error
        assert ex.labels == ([1] * len(ex.labels) if fe == -1 else [1] * fe + [0])
    assert 0.55 < counts["flawed"] / 2000 < 0.65
    _, noisy = annotate(problems, seed=0, flawed_share=0.6, flaw_mix={"slip": 1.0}, noise=0.1)
    wrong = 2000 - noisy["agree_with_verifier"]
    # 10% of 2,000 = 200 expected; binomial sd 13.4, so 160-240 holds with room to spare
    assert 160 <= wrong <= 240 and wrong == noisy["false_alarm"] + noisy["missed"] + noisy["misplaced"]


def test_stage_writes_examples_minus_evaluation_problems(tmp_path):
    problems = make_problems(7, 5, "toy-human")  # the stage's stream for toy.seed 0
    texts = tmp_path / "eval_texts.json"
    texts.write_text(json.dumps({"toy": [problems[0].question], "processbench_toy": []}))
    params = tmp_path / "params.yaml"
    params.write_text("toy: {seed: 0, min_steps: 2, max_steps: 5}\ntoy_human: {n: 5, flawed_share: 1.0, noise: 0.0}\n")
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}", "PYTHONPATH": str(ROOT / "src")}
    out, metrics = tmp_path / "human.jsonl", tmp_path / "m.json"
    p = subprocess.run([sys.executable, "-m", "stages.toy_human", "--eval-texts", str(texts), "--out", str(out),
                        "--metrics", str(metrics), "--params", str(params)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    m = json.loads(metrics.read_text())
    assert (m["solutions"], m["removed_toy"], m["examples"], m["label_accuracy"]) == (5, 1, 4, 1.0)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["response_id"] for r in rows] == [q.id for q in problems[1:]] and all(0 in r["labels"] for r in rows)
