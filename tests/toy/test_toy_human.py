"""The toy's PRM800K analogue (prmlab.toy.annotators, stage toy_human@toy): another policy's solutions, one
picked per problem, whose true first error is the verifier's, an annotator wrong at the stated rate, and the
stage's counts with a real writer fine-tuned from the committed base."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

from conftest import ROOT

from prmlab.core.records import Problem, Response
from prmlab.toy.annotators import annotator_label, pick_and_annotate
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


def _responses(problems: list[Problem], flawed_first_error: int = 1) -> list[Response]:
    """Per problem: one clean 3-step response and one whose first error is at `flawed_first_error`."""
    return [Response(problem_id=p.id, response_id=f"{p.id}/{kind}", steps=["a", "b", "c"], answer="1", correct=kind == "ok",
                     true_first_error=-1 if kind == "ok" else flawed_first_error)
            for p in problems for kind in ("ok", "bad")]


def test_the_pick_prefers_flawed_solutions_at_the_stated_share_and_labels_them_as_the_verifier():
    problems = [Problem(id=f"p{i}", source="toy", question=f"q{i}", gold_answer="1") for i in range(2000)]
    rs = _responses(problems)
    ex, counts = pick_and_annotate(problems, rs, 0, 0.6, 0.0)
    assert counts["solutions"] == 2000 and counts["agree_with_verifier"] == 2000
    # 60% of 2,000 = 1,200 expected flawed; binomial sd 21.9, so 1,120-1,280 holds with room to spare
    assert 1120 <= counts["flawed"] <= 1280
    for e in ex:  # labels are the picked response's verifier labels: [1, 0] at first error 1, [1, 1, 1] when clean
        assert (e.response_id.endswith("/bad"), tuple(e.labels)) in {(True, (1, 0)), (False, (1, 1, 1))}
    # A problem with only clean (or only flawed) solutions gets one of those; one with none is counted
    only_ok = [r for r in rs[:20] if r.response_id.endswith("/ok")]
    ex2, c2 = pick_and_annotate(problems[:11], only_ok, 0, 1.0, 0.0)
    assert (c2["solutions"], c2["no_solution"], c2["flawed"]) == (10, 1, 0)
    _, noisy = pick_and_annotate(problems, rs, 0, 0.6, 0.1)
    wrong = 2000 - noisy["agree_with_verifier"]
    # 10% of 2,000 = 200 expected; binomial sd 13.4, so 160-240 holds with room to spare
    assert 160 <= wrong <= 240 and wrong == noisy["false_alarm"] + noisy["missed"] + noisy["misplaced"]


def test_controls_same_picks_exact_labels_and_as_many_on_policy_solutions():
    """human_exact: the very solutions `human` picked, in order, with the verifier's labels (picks unchanged by
    asking for them); human_onpolicy: `n` solutions from fewer problems, in further rounds, never one twice."""
    problems = [Problem(id=f"p{i}", source="toy", question=f"q{i}", gold_answer="1") for i in range(300)]
    rs = _responses(problems)
    noisy, _ = pick_and_annotate(problems, rs, 3, 0.6, 0.5)
    exact: list = []
    again, _ = pick_and_annotate(problems, rs, 3, 0.6, 0.5, exact=exact)
    assert again == noisy and [e.response_id for e in exact] == [e.response_id for e in noisy]
    for e in exact:
        assert tuple(e.labels) == ((1, 0) if e.response_id.endswith("/bad") else (1, 1, 1))
    assert sum(e.labels != x.labels for e, x in zip(exact, noisy)) > 100  # noise 0.5: about half relabelled
    few = problems[:40]  # 40 problems x 2 responses: 70 solutions need a second round, 80 all, 100 cannot be had
    got, counts = pick_and_annotate(few, _responses(few), 0, 0.6, 0.0, n=70)
    assert len(got) == 70 == len({e.response_id for e in got}) and counts["no_solution"] == 0
    assert len(pick_and_annotate(few, _responses(few), 0, 0.6, 0.0, n=100)[0]) == 80


PARAMS = ("toy: {seed: 0, min_steps: 2, max_steps: 5}\n"
          "toy_models: {corpus: 40, policy_steps: 4, batch_size: 4}\n"
          "sample: {n: 6, max_tokens: 240, temperature: 0.7, top_p: 0.8}\n"
          "policy: {backend: transformers, model: models/policy, batch_size: 64}\n")


def _run(tmp_path, params: str):
    from prmlab.core.io import write_jsonl

    texts = tmp_path / "eval_texts.json"
    problems = make_problems(7, 5, "toy-human")  # the stage's stream for toy.seed 0
    texts.write_text(json.dumps({"toy": [problems[0].question], "processbench_toy": []}))
    policy = [Problem(id=f"t{i}", source="toy", question=f"q{i}", gold_answer="1") for i in range(3)]
    write_jsonl(str(tmp_path / "train.jsonl"), policy)  # the policy's training problems and responses (on-policy control)
    write_jsonl(str(tmp_path / "samples.jsonl"), _responses(policy))
    (tmp_path / "params.yaml").write_text(params)
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}", "PYTHONPATH": str(ROOT / "src"),
           "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-m", "stages.toy_human", "--base", str(ROOT / "models/base"), "--eval-texts", str(texts),
                        "--problems", str(tmp_path / "train.jsonl"), "--samples", str(tmp_path / "samples.jsonl"),
                        "--writer", str(tmp_path / "writer"), "--out", str(tmp_path / "human.jsonl"),
                        "--exact-out", str(tmp_path / "exact.jsonl"), "--onpolicy-out", str(tmp_path / "onpolicy.jsonl"),
                        "--metrics", str(tmp_path / "m.json"), "--params", str(tmp_path / "params.yaml")],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    return p, problems


def test_stage_trains_a_writer_samples_it_and_drops_evaluation_problems(tmp_path):
    p, problems = _run(tmp_path, PARAMS + "toy_human: {n: 5, samples: 3, flawed_share: 1.0, noise: 0.0}\n")
    assert p.returncode == 0, p.stderr
    m = json.loads((tmp_path / "m.json").read_text())
    assert (tmp_path / "writer" / "model.safetensors").exists() and m["writer_train_seconds"] > 0
    assert m["writer_kept"] + m["dropped_no_steps"] + m["dropped_no_answer"] == 15  # 5 problems x 3 samples
    assert m["solutions"] + m["no_solution"] == 5 and m["label_accuracy"] == 1.0
    rows = [json.loads(x) for x in (tmp_path / "human.jsonl").read_text().splitlines()]
    picked = {r["response_id"].split("/")[0] for r in rows}
    assert problems[0].id not in picked and len(rows) == m["examples"] == m["solutions"] - m["removed_toy"]
    by_id = {q.id: q for q in problems}
    for r in rows:  # noise 0: the labels are the verifier's on the writer's very text
        fe = verify(by_id[r["response_id"].split("/")[0]], r["completions"]).first_error
        assert r["labels"] == ([1] * len(r["labels"]) if fe == -1 else [1] * fe + [0])
    # the controls: the same solutions with exact labels (noise 0: equal here), and as many of the policy's own
    exact = [json.loads(x) for x in (tmp_path / "exact.jsonl").read_text().splitlines()]
    onpolicy = [json.loads(x) for x in (tmp_path / "onpolicy.jsonl").read_text().splitlines()]
    assert exact == rows and m["exact_examples"] == len(rows)
    assert len(onpolicy) == min(len(rows), 6) == m["onpolicy_examples"] and all(r["response_id"].startswith("t") for r in onpolicy)


def test_a_writer_that_would_be_the_policy_is_refused_before_it_trains(tmp_path):
    p, _ = _run(tmp_path, PARAMS.replace("toy_models: {", "toy_models: {seed: 0, ") + "toy_human: {n: 5, writer_seed: 0}\n")
    assert p.returncode == 2 and "toy_human.writer_seed" in p.stderr and not (tmp_path / "writer").exists()
    assert len(p.stderr.strip().splitlines()) == 1
