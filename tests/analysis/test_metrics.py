import json
import math

import pytest
from conftest import need_data

from prmlab.analysis.metrics import (
    aggregate,
    argmin_position,
    best_of_n,
    best_threshold,
    first_below,
    harmonic,
    maj_at_k,
    majority_index,
    pass_at_k,
    processbench_scores,
    step_auc,
    within_problem_auc,
)


@pytest.mark.parametrize("err,ok,f1", [(72.0, 96.4, 82.4), (68.0, 90.4, 77.6), (55.7, 85.5, 67.5), (55.2, 83.0, 66.3)])
def test_published_triples(err, ok, f1):
    assert round(harmonic(err, ok), 1) == f1  # Qwen2.5-Math-PRM-7B, ProcessBench Table


def test_processbench_hand_table():
    labels = [-1, -1, 2, 0, 1]
    preds = [-1, 1, 2, 1, None]  # correct: 1 of 2; erroneous: 1 of 3 (None is wrong)
    s = processbench_scores(labels, preds)
    assert s["correct_acc"] == 50.0 and round(s["error_acc"], 4) == round(100 / 3, 4)
    assert round(s["f1"], 4) == round(2 * 50 * (100 / 3) / (50 + 100 / 3), 4)


def test_prm_prediction_and_threshold():
    assert first_below([0.9, 0.4, 0.1], 0.5) == 1
    assert first_below([0.9, 0.8], 0.5) == -1
    scores = [[0.9, 0.7], [0.9, 0.6, 0.95], [0.8, 0.3]]
    labels = [-1, 1, 1]
    t, f1 = best_threshold(scores, labels)
    assert 0.6 < t <= 0.7 and f1 == 100.0


def test_step_auc_hand_table():
    # Steps counted: item 0 (error-free) -> positives 0.9, 0.7; item 1 (first error at 1) -> positive
    # 0.8, negative 0.6 (its step 2, after the error, is not labelled); item 2 (error at 0) -> negative 0.7.
    scores = [[0.9, 0.7], [0.8, 0.6, 0.1], [0.7, 0.95]]
    labels = [-1, 1, 0]
    # pairs (pos, neg): 0.9>0.6, 0.9>0.7, 0.7>0.6, 0.7=0.7 (half), 0.8>0.6, 0.8>0.7 -> 5.5 / 6
    assert step_auc(scores, labels) == pytest.approx(5.5 / 6)
    assert step_auc([[0.1, 0.2]], [1]) == 0.0  # the one positive scores below the one negative
    assert step_auc([[0.5, 0.5]], [1]) == 0.5  # a tie is a coin flip
    assert step_auc([[0.9, 0.8]], [-1]) is None  # no negative step: undefined, not 1.0
    assert step_auc([[0.3]], [0]) is None  # no positive step


def test_aggregation_and_min_position():
    assert aggregate([0.5, 0.5], "product") == 0.25
    assert aggregate([0.9, 0.2, 0.8], "min") == 0.2
    assert aggregate([0.9, 0.2, 0.8], "last") == 0.8
    assert argmin_position([0.9, 0.2, 0.2]) == (1, 0.5)
    assert argmin_position([0.9, 0.8, 0.1]) == (2, 1.0)


def test_bon_tie_rules():
    answers = ["3", "4", "4", "3", None]
    assert majority_index(answers) == 0  # 3 and 4 tie at two votes; "3" was seen first
    assert maj_at_k(["3", "4", "4"], [False, True, True], 3) is True
    assert maj_at_k([None, None], [True, True], 2) is False
    assert best_of_n([[0.5], [0.9], [0.9]], "last") == 1  # tie -> earliest
    assert best_of_n([[0.9, 0.5], [0.6, 0.8]], "product") == 1 and best_of_n([[0.9, 0.5], [0.6, 0.8]], "min") == 1
    assert best_of_n([[], [0.1]], "min") == 1  # an unscored response is never picked
    assert pass_at_k([False, True], 1) is False and pass_at_k([False, True], 2) is True


@pytest.mark.realdata
def test_rm_maj_on_real_qwen_responses():
    path = need_data("qwen_rm_maj_example/math_cot_100.jsonl")
    rows = [json.loads(line) for line in path.open()]
    assert len(rows) == 100
    res = {}
    for k in (1, 2, 4, 8):
        maj = rm = pas = 0
        for r in rows:
            preds, correct = r["pred"], r["score"]
            scores = [s[-1] for s in r["pred_score"]]
            maj += maj_at_k(preds, correct, k)
            rm += correct[best_of_n([[s] for s in scores[:k]], "last")]
            pas += pass_at_k(correct, k)
        res[k] = (maj, rm, pas)
    # k=1: all three methods pick the first response.
    assert res[1][0] == res[1][1] == res[1][2] == sum(r["score"][0] for r in rows)
    for k in (2, 4, 8):
        assert res[k][2] >= max(res[k][0], res[k][1])  # pass@k bounds the others
    assert res[8][2] >= res[4][2] >= res[2][2]
    # Hand-checked on the first problem: all 8 responses answer 420 and are correct.
    assert rows[0]["pred"] == ["420"] * 8 and maj_at_k(rows[0]["pred"], rows[0]["score"], 8)


def test_within_problem_auc_compares_responses_of_the_same_problem_only():
    # (score, first error): p1 clean 0.5 vs flawed 0.4 (win) and 0.5 (tie: half); its unlabelled
    # response (None) takes no part; p2 clean 0.1 vs flawed 0.3 (loss); p3 has no flawed response.
    p1, p2, p3 = [(0.5, -1), (0.4, 1), (0.5, 0), (0.0, None)], [(0.1, -1), (0.3, 2)], [(0.0, -1)]
    # A pooled AUC would also pair p2's 0.1 with p1's flawed 0.4 and 0.5; within problems: 1.5 of 3.
    assert within_problem_auc([p1, p2, p3]) == 0.5
    assert within_problem_auc([p3]) is None and within_problem_auc([]) is None
    assert within_problem_auc([[(-math.inf, -1), (0.2, 0)]]) == 0.0  # an unscored response loses
