"""The stage cores that make the report's numbers, each on a table small enough to check by hand.

Every expected value is worked out in the comment beside it; none is copied from a run of the code.
"""

from __future__ import annotations

import pytest

from prmlab.analysis.metrics import min_position_stats
from prmlab.core.records import JudgeLabel, MCLabel, Problem, ProcessBenchItem, Response
from prmlab.pipeline.bias import policy_flaws
from prmlab.pipeline.bon import bon_by_n, bon_outcomes, bon_table, by_n_rows, n_values, over_maj
from prmlab.pipeline.processbench import balance, subset_table
from prmlab.pipeline.training_sets import audit_breakdown, audit_table

approx = pytest.approx


# ---------------------------------------------------------------------------------------------
# eval_bon


def _resp(pid, rid, answer, correct, fe=None, steps=2, kind=None):
    return Response(problem_id=pid, response_id=rid, steps=[f"s{i}" for i in range(steps)], answer=answer,
                    correct=correct, true_first_error=fe, error_kind=kind)


def _bon_case():
    """Benchmark A: p1, p2. Benchmark B: p3 (no responses left), p4 (no verifier labels). p5 has no gold
    answer, so it is not an evaluation problem at all (its response is ignored)."""
    problems = {"p1": Problem("p1", "A", "q1", "3"), "p2": Problem("p2", "A", "q2", "5"),
                "p3": Problem("p3", "B", "q3", "7"), "p4": Problem("p4", "B", "q4", "2"),
                "p5": Problem("p5", "B", "q5", None)}
    groups = {
        "p1": [_resp("p1", "r1a", "3", True, -1), _resp("p1", "r1b", "4", False, 1), _resp("p1", "r1c", "4", False, 0, steps=1)],
        "p2": [_resp("p2", "r2a", "5", True, 0), _resp("p2", "r2b", "5", True, -1)],
        "p4": [_resp("p4", "r4a", None, False, steps=1), _resp("p4", "r4b", "2", True, steps=1)],
        "p5": [_resp("p5", "r5a", "1", True, -1)],
    }
    scores = {
        "r1a": [0.5, 1.0],  # product 0.50, min 0.5, last 1.0
        "r1b": [0.9, 0.6],  # product 0.54, min 0.6, last 0.6
        "r1c": [0.7],  # product 0.70, min 0.7, last 0.7
        "r2a": [0.8, 0.8],  # product 0.64, min 0.8, last 0.8
        "r2b": [0.7, 0.9],  # product 0.63, min 0.7, last 0.9
        "r4a": [],  # no scored step: -inf under every aggregation, never picked over a scored one
        "r4b": [0.1],
        "r5a": [0.9],
    }
    return problems, groups, scores


def test_bon_table_hand_table():
    problems, groups, scores = _bon_case()
    t = bon_table(problems, groups, scores, ["product", "min", "last"])
    # p1: maj: "4" has two votes -> r1b, wrong -> 0; pass 1. product picks r1c (0.70) wrong -> 0;
    #     min picks r1c (0.7) -> 0; last picks r1a (1.0) right -> 1.
    #     process-verified: product/min r1c wrong -> 0; last r1a right with fe -1 -> 1.
    # p2: maj "5" -> r2a right -> 1; pass 1. product r2a (0.64 > 0.63) -> 1; min r2a (0.8) -> 1;
    #     last r2b (0.9) -> 1. process-verified: r2a has fe 0 -> 0, 0; r2b fe -1 -> 1.
    # A: no_responses 0; maj 50; pass 100; product 50; min 50; last 100; verified 0 / 0 / 100.
    # random pick: p1 1 of 3 right -> 33.3; p2 2 of 2 -> 100; A (33.3 + 100) / 2 = 66.7.
    a = t["A"]
    assert a == approx({"no_responses": 0.0, "maj": 50.0, "pass": 100.0, "random": 200 / 3, "prm_product": 50.0, "prm_min": 50.0,
                        "prm_last": 100.0, "prm_product_process_verified": 0.0, "prm_min_process_verified": 0.0,
                        "prm_last_process_verified": 100.0, "problems": 2})
    # p3: no responses -> a miss for every method, and counted in `no_responses`.
    # p4: maj: r4a has no answer and does not vote -> "2" -> r4b right -> 1; pass 1; every aggregation
    #     picks r4b (0.1 > -inf) -> 1. No verifier labels -> no process-verified entry.
    # p5: no gold answer -> not counted. B: no_responses 50; maj 50; pass 50; each prm 50; 2 problems;
    #     random: p3 0, p4 1 of 2 -> 50, so 25.
    assert t["B"] == approx({"no_responses": 50.0, "maj": 50.0, "pass": 50.0, "random": 25.0, "prm_product": 50.0,
                             "prm_min": 50.0, "prm_last": 50.0, "problems": 2})
    # average: the unweighted mean over the benchmarks that have the key:
    # no_responses (0+50)/2 = 25; maj 50; pass (100+50)/2 = 75; random (66.7+25)/2 = 45.8; product 50;
    # min 50; last (100+50)/2 = 75; process-verified only from A: 0, 0, 100.
    assert t["average"] == approx({"no_responses": 25.0, "maj": 50.0, "pass": 75.0, "random": 275 / 6, "prm_product": 50.0,
                                   "prm_min": 50.0, "prm_last": 75.0, "prm_product_process_verified": 0.0,
                                   "prm_min_process_verified": 0.0, "prm_last_process_verified": 100.0})


def test_bon_table_without_scores_has_only_the_baselines():
    problems, groups, _ = _bon_case()
    t = bon_table(problems, groups, None, [])
    # as above: A maj 50 pass 100; B (p3 missed, p4 right) maj 50 pass 50, no_responses 50
    assert t["A"] == approx({"no_responses": 0.0, "maj": 50.0, "pass": 100.0, "random": 200 / 3, "problems": 2})
    assert t["B"] == approx({"no_responses": 50.0, "maj": 50.0, "pass": 50.0, "random": 25.0, "problems": 2})


def test_a_problem_whose_responses_were_all_dropped_is_a_miss_not_a_smaller_denominator():
    problems = {"p": Problem("p", "A", "q", "1"), "q": Problem("q", "A", "q", "1")}
    groups = {"p": [_resp("p", "r", "1", True, -1)]}
    t = bon_table(problems, groups, {"r": [0.9, 0.9]}, ["product"])
    # p right under every method, q missing: 1/2 -> 50, not 1/1 -> 100
    assert t["A"]["maj"] == t["A"]["pass"] == t["A"]["prm_product"] == 50.0
    assert t["A"]["no_responses"] == 50.0 and t["A"]["problems"] == 2


def test_over_maj_is_the_paired_pick_minus_vote_difference_with_its_interval():
    def resp(pid, i, answer, correct):
        return Response(pid, f"{pid}-{i}", ["s"], answer, correct)

    problems = {f"p{i}": Problem(f"p{i}", "toy", "q", "1") for i in range(4)} | {"nogold": Problem("nogold", "toy", "q", None)}
    groups = {  # 3 responses each; the vote takes the repeated answer, the PRM the highest score
        "p0": [resp("p0", 0, "2", False), resp("p0", 1, "2", False), resp("p0", 2, "1", True)],  # PRM right, vote wrong
        "p1": [resp("p1", 0, "1", True), resp("p1", 1, "1", True), resp("p1", 2, "3", False)],   # both right
        "p2": [resp("p2", 0, "1", True), resp("p2", 1, "1", True), resp("p2", 2, "3", False)],   # PRM wrong, vote right
        "p3": [resp("p3", 0, "4", False), resp("p3", 1, "4", False), resp("p3", 2, "5", False)],  # both wrong
        "nogold": [resp("nogold", 0, "1", False)]}  # not counted, as bon_table counts it
    top = {"p0": 2, "p1": 0, "p2": 2, "p3": 0, "nogold": 0}
    scores = {r.response_id: [0.9 if j == top[pid] else 0.1] for pid, rs in groups.items() for j, r in enumerate(rs)}
    d, lo, hi = over_maj(bon_outcomes(problems, groups, scores, ["min"]), "min", n_boot=500)
    # per problem +100, 0, -100, 0: mean 0; every resample's mean lies in [-100, 100]
    assert d == 0.0 and -100.0 <= lo <= 0.0 <= hi <= 100.0 and lo < hi
    scores["p2-0"], scores["p2-2"] = [0.9], [0.1]  # now the PRM is right on p2 too: +100, 0, 0, 0
    outcomes = bon_outcomes(problems, groups, scores, ["min"])
    d, lo, hi = over_maj(outcomes, "min", n_boot=500)
    assert d == 25.0 and lo == 0.0 and hi > 25.0  # a resample without p0 has difference 0: never below
    t = bon_table(problems, groups, scores, ["min"])["average"]
    assert d == approx(t["prm_min"] - t["maj"])  # the same difference bon_table's average shows
    # Two benchmarks: the difference of bon_table's average (the unweighted mean over benchmarks), not of the
    # pooled problems: p0 alone in B (+100), A's three (0, 0, 0) -> (0 + 100) / 2 = 50, pooled it would be 25.
    problems["p0"] = Problem("p0", "B", "q", "1")
    outcomes = bon_outcomes(problems, groups, scores, ["min"])
    t = bon_table(problems, groups, scores, ["min"])["average"]
    d, lo, hi = over_maj(outcomes, "min", n_boot=500)
    assert d == approx(50.0) == approx(t["prm_min"] - t["maj"]) and lo == approx(50.0) == approx(hi)  # resampled within each


def test_n_values_are_powers_of_two_ending_at_n():
    assert n_values(1) == [1]
    assert n_values(8) == [1, 2, 4, 8]
    assert n_values(6) == [1, 2, 4, 6]  # 6 is Table 6's N here: the curve must end at it


def test_bon_by_n_hand_table():
    problems, groups, scores = _bon_case()
    by = bon_by_n(problems, groups, 3, scores)
    # N=1 (first response only): p1 r1a right, p2 r2a right -> A: maj = pass = prm = 100.
    #   p3 missing, p4 r4a (no answer: no vote; wrong) -> B: 0 for all. Average 50 / 50 / 50.
    # N=2: p1 r1a "3", r1b "4": one vote each, the first group wins -> r1a right -> maj 1; pass 1;
    #   product r1b (0.54 > 0.50) wrong -> 0. p2: maj 1, pass 1, product r2a -> 1. A: 100 / 100 / 50.
    #   p4: r4b "2" the only vote -> 1; pass 1; product r4b -> 1. B: 50 / 50 / 50. Average 75 / 75 / 50.
    # N=3: p1 maj "4" twice -> 0; pass 1; product r1c -> 0. A: 50 / 100 / 50; B as at N=2.
    #   Average 50 / 75 / 50.
    assert set(by) == {"maj", "pass", "prm"}
    assert by["maj"] == approx({"1": 50.0, "2": 75.0, "3": 50.0})
    assert by["pass"] == approx({"1": 50.0, "2": 75.0, "3": 75.0})
    assert by["prm"] == approx({"1": 50.0, "2": 50.0, "3": 50.0})
    # At N = n the curve is the Table 6 number.
    t = bon_table(problems, groups, scores, ["product"])["average"]
    assert by["maj"]["3"] == t["maj"] and by["prm"]["3"] == t["prm_product"]
    assert set(bon_by_n(problems, groups, 3)) == {"maj", "pass"}  # no scores: baselines only
    # Written as a row per N (N stays out of column names): the same numbers, the PRM under its name.
    rows = by_n_rows({"maj": by["maj"], "pass": by["pass"], "oracle": by["prm"]})
    assert rows == [{"n": 1, "maj": 50.0, "pass": 50.0, "oracle": 50.0}, {"n": 2, "maj": 75.0, "pass": 75.0, "oracle": 50.0},
                    {"n": 3, "maj": 50.0, "pass": 75.0, "oracle": 50.0}]


# ---------------------------------------------------------------------------------------------
# analyze_bias


def test_min_position_stats_hand_table_and_ties_count_as_the_earliest_step():
    rows = [
        {"problem_id": "q1", "step_scores": [0.9, 0.2, 0.5]},  # min at 1 of 0..2: rel 0.5, not last
        {"problem_id": "q1", "step_scores": [0.8, 0.3]},  # min at 1 = last: rel 1.0
        {"problem_id": "q1", "step_scores": [0.4]},  # one step: no position; product 0.4, BoN-selected in q1
        {"problem_id": "q2", "step_scores": [0.5, 0.5, 0.9]},  # tie 0 & 1 -> step 0: rel 0.0; tied
        {"problem_id": "q2", "step_scores": [0.6, 0.9, 0.6]},  # tie 0 & 2 (last) -> step 0, not last; tied
        {"problem_id": "q3", "step_scores": [0.7, 0.1]},  # min at last: rel 1.0
        {"problem_id": "q3", "step_scores": []},  # no scored step: ignored
        {"problem_id": "q4", "step_scores": []},  # a problem with no scored response: no selection
    ]
    s = min_position_stats(rows, bins=2)
    # multi-step responses: 5. Min on the final step: the 2nd and the 6th -> 2/5 = 40%.
    # relative positions 0.5, 1.0, 0.0, 0.0, 1.0 -> mean 0.5; bins [0, 0.5) and [0.5, 1]:
    # 0.5 -> bin 1, 1.0 -> bin 1 (capped), 0.0, 0.0 -> bin 0, 1.0 -> bin 1 -> 2/5, 3/5.
    # ties: the 4th and 5th -> 2/5 = 40%.
    # BoN-selected by product: q1 products 0.09, 0.24, 0.40 -> the one-step response (not counted);
    # q2 0.225, 0.324 -> [0.6, 0.9, 0.6], min counted at step 0 -> 0; q3 -> [0.7, 0.1] -> 1. 1/2 = 50%.
    assert s.pop("relative_position_hist") == [{"lo": 0.0, "hi": 0.5, "share": approx(0.4)},
                                               {"lo": 0.5, "hi": 1.0, "share": approx(0.6)}]
    assert s == approx({"min_on_last_step_bon_selected": 50.0, "min_on_last_step_all": 40.0,
                        "mean_relative_min_position": 0.5, "tie_share": 40.0, "responses": 5, "selected": 2})


def test_min_position_tie_on_the_final_step_is_not_a_final_step_minimum():
    # [0.3, 0.3]: the minimum is on the final step too, but a tie counts as the earliest: 0% final, 100% tied.
    s = min_position_stats([{"problem_id": "q", "step_scores": [0.3, 0.3]}], bins=2)
    assert s["min_on_last_step_all"] == 0.0 and s["tie_share"] == 100.0
    assert s["min_on_last_step_bon_selected"] == 0.0 and s["selected"] == 1


def test_policy_flaws_hand_table():
    rs = [_resp("p", "r1", "1", True, -1), _resp("p", "r2", "1", True, 1, kind="slip"),
          _resp("p", "r3", "1", True, 0), _resp("p", "r4", "2", False, 1, kind="slip"),
          _resp("p", "r5", "1", True, None), _resp("p", "r6", "1", True, 1, kind="compensate")]
    # labelled: r1, r2, r3, r4, r6 (r5 has no verifier label) -> 5; right: r1, r2, r3, r6 -> 80%.
    # right with a flaw: r2 (slip), r3 (no kind: "unknown"), r6 (compensate) -> 3/4 = 75%.
    # r4's slip is on a wrong answer: not counted among the kinds.
    f = policy_flaws(rs)
    assert f.pop("flaw_kinds_among_correct") == {"slip": 1, "unknown": 1, "compensate": 1}
    assert f == approx({"accuracy": 80.0, "flawed_among_correct_pct": 75.0, "responses": 5})
    assert policy_flaws([_resp("p", "x", "1", True)]) == {}  # no verifier labels (real data): no numbers


# ---------------------------------------------------------------------------------------------
# eval_processbench


def _item(iid, label, final_ok, subset):
    return ProcessBenchItem(id=iid, generator="g", problem="q", steps=["a", "b", "c"], final_answer_correct=final_ok,
                            label=label, subset=subset)


def test_subset_table_hand_table():
    items = {"s1": [_item("i1", -1, True, "s1"), _item("i2", 1, True, "s1"), _item("i3", 0, True, "s1"),
                    _item("i4", 2, False, "s1")],
             "s2": [_item("j1", -1, True, "s2"), _item("j2", -1, True, "s2"), _item("j3", 1, False, "s2")]}
    preds = {"s1": [-1, 1, None, 0], "s2": [0, -1, 1]}
    t = subset_table(items, preds)
    # s1: erroneous i2 (hit), i3 (None: wrong), i4 (0 != 2) -> 1/3 = 33.33; correct i1 -> 100;
    # F1 = 2 * 33.33 * 100 / 133.33 = 50. Right answer with a flawed process: i2 (hit), i3 (miss) -> 50%.
    assert t["s1"] == approx({"error_acc": 100 / 3, "correct_acc": 100.0, "f1": 50.0, "n_error": 3, "n_correct": 1,
                              "flawed_correct_answer_acc": 50.0, "n_flawed_correct_answer": 2})
    # s2: erroneous j3 hit -> 100; correct j1 (said 0) wrong, j2 right -> 50; F1 = 2 * 100 * 50 / 150 = 66.67.
    # No right answer with a flawed process -> 0.0 and a count of 0 (the count says the 0 is empty).
    assert t["s2"] == approx({"error_acc": 100.0, "correct_acc": 50.0, "f1": 200 / 3, "n_error": 1, "n_correct": 2,
                              "flawed_correct_answer_acc": 0.0, "n_flawed_correct_answer": 0})
    # the headline: the unweighted mean of the subset F1s, (50 + 66.67) / 2 = 58.33
    assert t["average_f1"] == approx(175 / 3)


# ---------------------------------------------------------------------------------------------
# build_processbench


def test_balance_hand_table():
    problems = {f"P{i}": Problem(f"P{i}", "toy", f"question {i}", str(i)) for i in range(7)}
    rs = [_resp("P0", "r0a", "9", False, 1), _resp("P0", "r0b", "9", False, 0),  # two wrong: one is kept
          _resp("P1", "r1", "1", True, -1), _resp("P2", "r2", "2", True, 0),  # right; right but flawed
          _resp("P3", "r3", "9", False, 1), _resp("P4", "r4", "9", False, 0),
          _resp("P5", "r5", "5", True, None),  # no verifier label: never an item
          _resp("P6", "r6", "6", True, -1)]
    order = [r.response_id for r in rs]
    items = balance(problems, rs, max_items=100, seed=3, tune_share=0.34)
    assert [r.response_id for r in rs] == order  # the caller's list is not shuffled in place
    # wrong: one of r0a/r0b, r3, r4 -> 3; right: r1, r2, r6 -> 3; k = min(3, 3, 100 // 2) = 3 -> 6 items.
    ids = [i.id for i in items]
    assert len(items) == 6 and ids == sorted(ids)
    assert {"r1", "r2", "r3", "r4", "r6"} <= set(ids) and len({"r0a", "r0b"} & set(ids)) == 1 and "r5" not in ids
    # one item per problem
    assert len({i.problem for i in items}) == 6
    # n_tune = round(3 * 0.34) = round(1.02) = 1 of each half -> toy_tune: 1 wrong + 1 right; toy: 2 + 2.
    tune = [i for i in items if i.subset == "toy_tune"]
    held = [i for i in items if i.subset == "toy"]
    assert sorted(i.final_answer_correct for i in tune) == [False, True]
    assert sorted(i.final_answer_correct for i in held) == [False, False, True, True]
    # each item carries its response's verifier label, question and gold answer
    by_id = {r.response_id: r for r in rs}
    for i in items:
        r = by_id[i.id]
        assert (i.label, i.final_answer_correct, i.steps) == (r.true_first_error, r.correct, r.steps)
        assert (i.problem, i.gold_answer) == (problems[r.problem_id].question, problems[r.problem_id].gold_answer)
    # r2: a right answer through a flawed step (label 0), as in the real benchmark
    assert next(i for i in items if i.id == "r2").label == 0


def test_balance_caps_and_tune_share_zero():
    problems = {f"P{i}": Problem(f"P{i}", "toy", f"question {i}", str(i)) for i in range(4)}
    rs = [_resp("P0", "a", "9", False, 1), _resp("P1", "b", "9", False, 0),
          _resp("P2", "c", "2", True, -1), _resp("P3", "d", "3", True, -1)]
    # max_items 2 -> k = min(2, 2, 1) = 1: one wrong, one right; tune_share 0 -> all in subset toy
    items = balance(problems, rs, max_items=2, seed=0)
    assert sorted(i.final_answer_correct for i in items) == [False, True]
    assert {i.subset for i in items} == {"toy"}
    # tune_share 0.5 with k = 2 -> round(1.0) = 1 of each half in toy_tune
    items = balance(problems, rs, max_items=4, seed=0, tune_share=0.5)
    assert sorted((i.subset, i.final_answer_correct) for i in items) == [
        ("toy", False), ("toy", True), ("toy_tune", False), ("toy_tune", True)]
    # only right answers -> no wrong half -> k = 0 -> no items
    assert balance(problems, rs[2:], max_items=4, seed=0) == []


# ---------------------------------------------------------------------------------------------
# consensus


def test_audit_table_hand_table():
    rs = [_resp("p", "a", "1", True, -1, steps=3), _resp("p", "b", "2", False, 1, steps=3),
          _resp("p", "c", "2", False, 0, steps=2), _resp("p", "d", "2", False, 2, steps=3)]
    mc = {"a": MCLabel("a", [1.0, 1.0, 1.0], [1, 1, 1], -1, 8), "b": MCLabel("b", [1.0, 0.0], [1, 0], 1, 8),
          "c": MCLabel("c", [1.0, 0.0], [1, 0], 1, 8), "d": MCLabel("d", [0.0], [0], 0, 8)}
    judge = {"a": JudgeLabel("a", -1, True, ["x"]), "b": JudgeLabel("b", 2, True, ["x"]),
             "c": JudgeLabel("c", None, False, ["?"]), "d": JudgeLabel("d", 0, True, ["x"])}
    t = audit_table(rs, mc, judge)
    # MC (-1, 1, 1, 0) against truth (-1, 1, 0, 2): hits a, b -> 2/4. Erroneous b, c, d: c missed
    # (1 > 0) -> 1/3. False alarm: d (0 < 2) -> 1/4. Steps: a 3 true negatives; b step 1 tp;
    # c step 0 fn (truly wrong from 0, labelled 1), step 1 tp; d step 0 fp -> tp 2, fp 1, fn 1:
    # precision 2/3, recall 2/3, F1 2/3.
    assert t["mc"] == approx({"responses": 4, "first_error_accuracy": 0.5, "step_precision_wrong": 2 / 3,
                              "step_recall_wrong": 2 / 3, "step_f1_wrong": 2 / 3, "missed_error_rate": 1 / 3,
                              "false_alarm_rate": 0.25})
    # judge (-1, 2, unparsed, 0): c is not audited (unparsed is no label). Hits a -> 1/3. Erroneous b, d:
    # b missed (2 > 1) -> 1/2. False alarm d -> 1/3. Steps: a 3 tn; b step 1 fn, step 2 tp; d step 0 fp
    # -> precision 1/2, recall 1/2, F1 1/2.
    assert t["judge"] == approx({"responses": 3, "first_error_accuracy": 1 / 3, "step_precision_wrong": 0.5,
                                 "step_recall_wrong": 0.5, "step_f1_wrong": 0.5, "missed_error_rate": 0.5,
                                 "false_alarm_rate": 1 / 3})
    # consensus keeps a (-1 = -1) and d (0 = 0); b disagrees (1 vs 2), c's judge is unparsed.
    # On a, d with MC's labels: hit a -> 1/2; erroneous d not missed -> 0; false alarm d -> 1/2;
    # steps: a 3 tn, d step 0 fp -> tp 0: precision 0, recall 0 (no truly wrong labelled step), F1 0.
    assert t["consensus"] == approx({"responses": 2, "first_error_accuracy": 0.5, "step_precision_wrong": 0.0,
                                     "step_recall_wrong": 0.0, "step_f1_wrong": 0.0, "missed_error_rate": 0.0,
                                     "false_alarm_rate": 0.5})
    # real data (no verifier labels): no audit
    assert audit_table([_resp("p", "x", "1", True)], {}, {}) == {}


def test_audit_breakdown_by_difficulty_and_first_error_kind():
    """The same four responses as above, a and b on a hard problem, c and d on a normal one; b's first
    error a slip, c's and d's operand misreads."""
    problems = {"h": Problem("h", "toy", "q", "1", {"hard": True}), "n": Problem("n", "toy", "q", "2")}
    rs = [_resp("h", "a", "1", True, -1, steps=3), _resp("h", "b", "2", False, 1, steps=3, kind="slip"),
          _resp("n", "c", "2", False, 0, steps=2, kind="operand"), _resp("n", "d", "2", False, 2, steps=3, kind="operand")]
    mc = {"a": MCLabel("a", [1.0, 1.0, 1.0], [1, 1, 1], -1, 8), "b": MCLabel("b", [1.0, 0.0], [1, 0], 1, 8),
          "c": MCLabel("c", [1.0, 0.0], [1, 0], 1, 8), "d": MCLabel("d", [0.0], [0], 0, 8)}
    judge = {"a": JudgeLabel("a", -1, True, ["x"]), "b": JudgeLabel("b", 2, True, ["x"]),
             "c": JudgeLabel("c", None, False, ["?"]), "d": JudgeLabel("d", 0, True, ["x"])}
    by = audit_breakdown(problems, rs, mc, judge)
    hard, normal = by["difficulty"]["hard"], by["difficulty"]["normal"]
    # hard: a, b. MC hits both (-1, 1); the judge hits a only (b: 2 > 1, missed); consensus keeps a only.
    assert hard["responses"] == 2 and hard["consensus_kept_share"] == 0.5
    assert hard["mc"]["first_error_accuracy"] == 1.0 and hard["judge"]["missed_error_rate"] == 1.0
    # normal: c (MC 1 > 0: missed; judge unparsed), d (MC and judge 0 < 2: false alarms); consensus keeps d.
    assert normal["consensus_kept_share"] == 0.5 and normal["mc"]["false_alarm_rate"] == 0.5
    assert normal["mc"]["missed_error_rate"] == 0.5 and normal["judge"]["responses"] == 1
    # by kind: only erroneous responses; operand c, d: MC hits neither, the judge audits d only, a false alarm
    assert sorted(by["first_error_kind"]) == ["operand", "slip"]
    op = by["first_error_kind"]["operand"]
    assert op["responses"] == 2 and op["mc"]["first_error_accuracy"] == 0.0 and op["judge"]["false_alarm_rate"] == 1.0
    assert audit_breakdown(problems, [_resp("h", "x", "1", True)], {}, {}) == {}
