"""The report's findings: interval verdicts and the per-item statistics behind them, on tables
small enough to check by hand."""

from __future__ import annotations

import math

import pytest

from prmlab.analysis.findings import NOT_TESTABLE, Findings, pb_f1, pb_intervals, pick
from prmlab.analysis.metrics import first_below
from prmlab.analysis.stats import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    all_of,
    bootstrap_ci,
    equivalence_verdict,
    kendall_tau,
    verdict,
)


def test_verdict_follows_the_interval_never_the_sign():
    assert verdict(0.5, 3.0) == REPRODUCED
    assert verdict(-3.0, -0.5) == NOT_REPRODUCED
    assert verdict(-0.1, 3.0) == INCONCLUSIVE  # a positive point estimate is not enough
    assert verdict(-3.0, -0.5, direction=-1) == REPRODUCED
    assert verdict(math.nan, math.nan) == INCONCLUSIVE
    assert verdict(0.8, 0.9, null=1.0) == NOT_REPRODUCED
    assert equivalence_verdict(-2.0, 2.5, 3.0) == REPRODUCED
    assert equivalence_verdict(3.5, 9.0, 3.0) == NOT_REPRODUCED
    assert equivalence_verdict(-1.0, 5.0, 3.0) == INCONCLUSIVE
    assert all_of([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert all_of([REPRODUCED, INCONCLUSIVE]) == INCONCLUSIVE
    assert all_of([REPRODUCED, NOT_REPRODUCED]) == NOT_REPRODUCED


def test_one_verdict_rule_per_finding_for_one_seed_and_for_several():
    from prmlab.analysis.findings import decide

    # the kept share is calibration (MC's temperature was tuned with it in view): shown, never deciding
    assert decide("consensus", {"kept_share": (25.0, 55.0)}) == INCONCLUSIVE
    # its PRM beats MC's (above 0) and matches the judge's (within the +-3 margin), both
    both = {"kept_share": (70.0, 80.0), "f1_consensus_minus_mc": (1.0, 5.0), "f1_consensus_minus_judge": (-2.0, 2.5)}
    assert decide("consensus", both) == REPRODUCED
    assert decide("consensus", {**both, "f1_consensus_minus_judge": (-4.0, 2.5)}) == INCONCLUSIVE
    assert decide("consensus", {**both, "f1_consensus_minus_mc": (-3.0, -1.0)}) == NOT_REPRODUCED
    # a finding with alternative references: the judge's decides (reports/protocol.md), the others sit beside it,
    # whatever their order
    alt = {"bon_residual_mc_hard_minus_human": (0.5, 3.0), "bon_residual_mc_hard_minus_judge": (-3.0, -1.0)}
    assert decide("rankings", alt) == NOT_REPRODUCED
    assert decide("rankings", dict(reversed(alt.items()))) == NOT_REPRODUCED
    assert decide("rankings", {"bon_residual_mc_hard_minus_human": (0.5, 3.0)}) == REPRODUCED  # no judge: the first listed
    assert decide("hard_soft", {"f1_hard_minus_soft": (0.5, 2.5)}) == REPRODUCED  # equal within the margin
    assert decide("inflation", {"inflation_excess_judge": (-9.0, -1.0), "inflation_excess_mc_hard": (1.0, 9.0)}) == REPRODUCED
    assert decide("mc_judge", {"a": (1.0, 2.0), "b": (-1.0, 2.0)}) == INCONCLUSIVE  # every part must hold
    # the toy's human labels decide nothing: human > judge is not testable in this world; PRM800K decides it
    assert decide("judge_human", {"f1_human_minus_judge": (1.0, 2.0)}) == NOT_TESTABLE
    assert decide("judge_human", {"f1_prm800k_minus_judge": (1.0, 2.0), "f1_human_minus_judge": (-5.0, -1.0)}) == REPRODUCED
    # Fig. 3-4 after filtering: hard (consensus) above soft (consensus_soft) on the same responses
    assert decide("hard_soft_filtered", {"f1_consensus_minus_consensus_soft": (-4.0, -1.0)}) == NOT_REPRODUCED
    assert decide("min_on_last", {}) == INCONCLUSIVE  # not measured


def test_a_finding_is_one_entry_its_estimates_read_by_name():
    """prmlab.analysis.findings.FINDINGS declares each finding once; an estimate's name finds its declaration, the PRM a
    "{}" stands for filled into its label (the plots' rows, the report's summary)."""
    from prmlab.analysis.findings import FINDINGS, MEASURES, WINDOW, Findings, estimate, measures

    def again(self):
        return None

    assert len({f.id for f in FINDINGS}) == len(FINDINGS) and all(f.paper and f.estimates for f in FINDINGS)
    # each finding's measure is registered on the Findings method that measures it, one each, none without a finding
    assert set(MEASURES) == {f.id for f in FINDINGS} and all(getattr(Findings, m.__name__) is m for m in MEASURES.values())
    with pytest.raises(ValueError, match="finding 'mc_judge' has two measures: mc_judge and again"):
        measures("mc_judge")(again)  # refused before it registers: MEASURES keeps the first
    e = estimate("bon_residual_mc_hard_minus_human_onpolicy")  # a "{}" pattern filled with the PRM it compares
    assert (e.label, e.unit, e.effect) == ("BoN residual: mc hard - human onpolicy", "Best-of-N points", None)
    e = estimate("f1_prm800k_minus_judge")
    assert (e.label, e.unit, e.effect) == ("F1: prm800k - judge", "F1 points", 10.0)
    assert estimate("inflation_excess_oracle_ceiling").label == "excess over random: oracle ceiling"
    kept = estimate("kept_share")
    assert kept.rule == WINDOW and (kept.center - kept.margin, kept.center + kept.margin) == (25, 55)
    assert (estimate("d").label, estimate("d").unit, estimate("d").judge(1.0, 2.0)) == ("d", "", REPRODUCED)


def test_bootstrap_interval_of_a_constant_is_the_constant_and_widens_with_noise():
    assert bootstrap_ci([1.0] * 20, lambda s: sum(s) / len(s)) == (1.0, 1.0)
    lo, hi = bootstrap_ci([0.0, 1.0] * 50, lambda s: sum(s) / len(s), n_boot=2000, seed=1)
    # binomial p = 0.5, n = 100: standard error 0.05, so the 95% interval is about 0.40 .. 0.60
    assert 0.38 <= lo <= 0.42 and 0.58 <= hi <= 0.62
    # stratified: each stratum keeps its size, so a stratum-constant statistic does not move
    units = [("a", 1.0)] * 5 + [("b", 0.0)] * 15
    assert bootstrap_ci(units, lambda s: sum(v for _, v in s), strata=lambda u: u[0]) == (5.0, 5.0)


def test_kendall_tau_hand_values():
    assert kendall_tau([1, 2, 3], [10, 20, 30]) == 1.0
    assert kendall_tau([1, 2, 3], [30, 20, 10]) == -1.0
    assert kendall_tau([1, 2, 3], [10, 30, 20]) == pytest.approx(1 / 3)  # pairs: +1, +1, -1
    assert kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / 3)  # the tied pair counts 0


def test_processbench_f1_is_the_mean_over_subsets():
    # subset a: labels [-1, 1], preds [-1, 0] -> correct acc 100, error acc 0 -> F1 0
    # subset b: labels [-1, 0], preds [-1, 0] -> 100 / 100 -> F1 100
    units = [{"label": -1, "pred": {"x": -1}}, {"label": 1, "pred": {"x": 0}},
             {"label": -1, "pred": {"x": -1}}, {"label": 0, "pred": {"x": 0}}]
    assert pb_f1(units, ["a", "a", "b", "b"], "x") == 50.0


def test_bon_pick_takes_the_highest_product_and_the_earliest_on_ties():
    rs = [{"step_scores": [0.9, 0.5], "id": 0}, {"step_scores": [0.45], "id": 1}, {"step_scores": [0.5, 0.9], "id": 2}]
    assert pick(rs)["id"] == 0  # 0.45 ties 0.45: the earliest
    assert pick(rs, "last")["id"] == 2
    assert pick(rs, "min")["id"] == 0  # mins 0.5, 0.45, 0.5: 0 and 2 tie at 0.5, the earliest wins
    assert pick([{"step_scores": [0.2], "id": 0}, {"step_scores": [], "id": 1}])["id"] == 0  # no steps: -inf


def _bon_rows():
    """Two PRMs, four problems, two responses each. Response 0 is right but flawed, response 1 right and clean
    on problems p0, p1; on p2, p3 response 0 is wrong, response 1 right and clean."""
    rows = []
    for p in range(4):
        for i in range(2):
            correct = p < 2 or i == 1
            fe = (0 if i == 0 else -1)
            good = {"A": [0.9, 0.9] if i == 0 else [0.5, 0.5],  # A always picks response 0
                    "B": [0.5, 0.5] if i == 0 else [0.9, 0.9]}  # B always picks response 1
            for prm in ("A", "B"):
                rows.append({"prm": prm, "problem_id": f"p{p}", "response_id": f"p{p}/r{i}", "correct": correct,
                             "true_first_error": fe, "step_scores": good[prm]})
    return rows


def test_bon_accuracy_inflation_and_min_position_by_hand():
    f = Findings([], ["toy"], None, _bon_rows(), {}, n_boot=200)
    probs = sorted(f.bon)
    assert f.bon_acc(probs, "A") == 50.0  # picks response 0: right on p0, p1 only
    assert f.bon_acc(probs, "B") == 100.0
    d, lo, hi = f.bon_diff("B", "A")
    # 1 resample in 16 holds only p0 and p1, where A and B tie: with 4 problems the interval reaches 0
    assert d == 50.0 and lo == 0.0 and verdict(lo, hi) == INCONCLUSIVE
    many = [dict(r, problem_id=f"{r['problem_id']}-{k}") for k in range(5) for r in _bon_rows()]
    d, lo, hi = Findings([], ["toy"], None, many, {}, n_boot=200).bon_diff("B", "A")
    assert d == 50.0 and lo > 0 and verdict(lo, hi) == REPRODUCED
    assert f.inflation("A")[0] == 50.0  # its picks on p0, p1 are right answers through a wrong step
    assert f.inflation("B") == (0.0, 0.0, 0.0)
    # Against a random pick: half the candidates on p0, p1 are such responses, none on p2, p3. A's picks
    # exceed chance by (1 - .5) + (1 - .5) + 0 + 0 over 4 problems = 25 points; B's fall short by 25.
    assert f.inflation_excess("A")[0] == 25.0 and f.inflation_excess("B")[0] == -25.0
    # every response has two equal step scores: the tie counts as the earliest step, never the final one
    assert f.min_on_last("A") == 0.0


def _pb_rows():
    """ProcessBench rows for PRMs good and bad on subsets tune and test; thresholds 0.5."""
    rows = []
    items = [(-1, [0.9, 0.9]), (1, [0.9, 0.1]), (-1, [0.8, 0.7]), (0, [0.2, 0.9])]
    for subset in ("tune", "test"):
        for k, (label, sc) in enumerate(items):
            bad = [1 - x for x in sc]
            # `pred` as eval_processbench writes it: the first step below the threshold (0.5), -1 if none
            rows.append({"model": "prm/good", "subset": subset, "id": str(k), "label": label, "step_scores": sc,
                         "pred": first_below(sc, 0.5)})
            rows.append({"model": "prm/bad", "subset": subset, "id": str(k), "label": label, "step_scores": bad,
                         "pred": first_below(bad, 0.5)})
    return rows


def test_processbench_difference_uses_held_out_subsets_only():
    f = Findings(_pb_rows(), ["tune", "test"], "tune", [], {}, n_boot=200)
    assert f.pb_subsets == ["test"] and f.pb_held_out
    d, lo, hi = f.pb_diff("good", "bad")
    assert d == 100.0  # good: all four right (F1 100); bad: every prediction wrong (F1 0)
    assert verdict(lo, hi) == INCONCLUSIVE  # 4 items: some resamples hold no erroneous item, F1 0 for both
    many = [dict(r, id=f"{r['id']}-{k}") for k in range(6) for r in _pb_rows()]
    d, lo, hi = Findings(many, ["tune", "test"], "tune", [], {}, n_boot=200).pb_diff("good", "bad")
    assert d == 100.0 and verdict(lo, hi) == REPRODUCED
    one = Findings(_pb_rows(), ["tune"], "tune", [], {}, n_boot=50)
    assert not one.pb_held_out and one.pb_subsets == ["tune"]


def test_leaderboard_intervals_by_hand():
    """pb_intervals: every model's held-out F1 and error/correct accuracy with intervals over problems (a critic's row,
    without step scores, too); min_on_last_interval: a PRM's Fig. 8 share with its interval over problems."""
    rows = _pb_rows() + [{"model": "critic/j", "subset": s, "id": str(k), "label": y, "pred": [-1, 0, -1, 1][k]}
                         for s in ("tune", "test") for k, y in enumerate([-1, 1, -1, 0])]
    assert pb_intervals(rows, ["test"], n_boot=200)["prm/good"]["f1"][1] == 0.0  # 4 items: some resamples hold no
    # erroneous one, and ProcessBench's F1 is 0 there; 6 copies of each problem leave no such resample
    rows = [dict(r, id=f"{r['id']}-{k}") for k in range(6) for r in rows]
    got = pb_intervals(rows, ["test"], n_boot=200)
    assert set(got) == {"prm/good", "prm/bad", "critic/j"}
    assert got["prm/good"]["f1"] == [100.0, 100.0, 100.0]  # right on every item: every resample too
    assert got["prm/bad"]["f1"] == [0.0, 0.0, 0.0]
    # the critic: both correct items right (100), erroneous items 1 (label 1, says 0) wrong and 0 (label 0, says 1)
    # wrong: error acc 0, F1 0; a resample never does better
    assert got["critic/j"]["correct_acc"] == [100.0, 100.0, 100.0] and got["critic/j"]["error_acc"][0] == 0.0
    # two subsets average unweighted, as eval_processbench does: the tune subset alone is the same table
    assert pb_intervals(rows, ["tune", "test"], n_boot=50)["prm/good"]["f1"][0] == 100.0
    # half the items right: the interval straddles the point
    mixed = [dict(r, id=f"{r['id']}-{c}", pred=r["pred"] if c else -5) for c in (0, 1) for r in rows if r["model"] == "prm/good"]
    (pt, lo, hi) = pb_intervals(mixed, ["test"], n_boot=200)["prm/good"]["f1"]
    assert pt == 50.0 and lo < pt < hi
    # Fig. 8's share: A's and B's tied minima count as the earliest step, never the final one (0%); a PRM whose
    # minimum is last on every response: 100% on every resample
    f = Findings([], ["toy"], None, _bon_rows() + [dict(r, prm="C", step_scores=[0.9, 0.1]) for r in _bon_rows() if r["prm"] == "A"],
                 {}, n_boot=100)
    assert f.min_on_last_interval("A") == (0.0, 0.0, 0.0)
    assert f.min_on_last_interval("C") == (100.0, 100.0, 100.0) and f.min_on_last("C") == 100.0


def test_findings_rows_quote_the_paper_and_can_fail():
    rows = [dict(r, id=f"{r['id']}-{k}") for k in range(6) for r in _pb_rows()]
    rows += [dict(r, model=r["model"].replace("good", "oracle")) for r in rows if r["model"] == "prm/good"]
    rows += [dict(r, model="prm/mc_hard") for r in rows if r["model"] == "prm/good"]
    rows += [dict(r, model="prm/judge") for r in rows if r["model"] == "prm/bad"]
    f = Findings(rows, ["tune", "test"], "tune", [], {"responses": 100, "agree": 40}, n_boot=200)
    table = {r["claim"][:30]: r for r in f.records()}
    first = table["PRMs trained on the judge's la"]
    assert "40.1 < LLM-as-a-judge 46.5" in first["paper"] and "Table 4" in first["paper"]
    assert first["verdict"] == NOT_REPRODUCED  # here judge (bad) is far below mc_hard (good)
    keep = next(r for r in f.records() if r["id"] == "consensus")
    # 40% kept is calibration, and there is no consensus PRM to compare: nothing decides
    assert "40%" in keep["paper"] and "calibration" in keep["ours"] and keep["verdict"] == INCONCLUSIVE


def test_aggregate_over_seeds_by_hand():
    from prmlab.analysis.findings import aggregate_seeds

    def rec(fid, v, est):
        return {"id": fid, "claim": fid, "paper": "p", "ours": "", "verdict": v, "estimates": est,
                "precision": {k: {"half_width": (b - a) / 2, "paper_effect": 6.4 if k == "f1_judge_minus_mc" else None}
                              for k, (_, a, b) in est.items()}}

    per_seed = {  # three seeds; the judge-minus-MC F1 difference is 4, 6, 8 (mean 6, sd 2)
        "seed-0": [rec("mc_judge", "reproduced", {"f1_judge_minus_mc": [4.0, 1.0, 7.0], "f1_oracle_minus_judge": [10.0, 8.0, 12.0]}),
                   rec("hard_soft", "reproduced", {"f1_hard_minus_soft": [0.5, -1.0, 2.0]})],
        "seed-1": [rec("mc_judge", "inconclusive", {"f1_judge_minus_mc": [6.0, -1.0, 9.0], "f1_oracle_minus_judge": [10.0, 8.0, 12.0]}),
                   rec("hard_soft", "reproduced", {"f1_hard_minus_soft": [-0.5, -2.0, 1.0]})],
        "seed-2": [rec("mc_judge", "reproduced", {"f1_judge_minus_mc": [8.0, 5.0, 11.0], "f1_oracle_minus_judge": [10.0, 8.0, 12.0]})],
    }
    agg = {f["id"]: f for f in aggregate_seeds(per_seed)}
    e = agg["mc_judge"]["estimates"]["f1_judge_minus_mc"]
    half = 4.303 * 2.0 / 3 ** 0.5  # t(2 df) x sd / sqrt(3)
    assert e["mean"] == 6.0 and abs(e["lo"] - (6 - half)) < 1e-9 and abs(e["hi"] - (6 + half)) < 1e-9
    assert abs(e["half_width"] - half) < 1e-9
    assert (e["within_seed_lo"], e["within_seed_hi"]) == (5 / 3, 9.0)
    # the effect an interval must resolve is today's declaration's (a tie's: its margin), never a record's copy
    assert e["paper_effect"] == 6.4 and agg["hard_soft"]["estimates"]["f1_hard_minus_soft"]["paper_effect"] == 3.0
    # 6 - 4.97 = 1.03 > 0, and the oracle difference has zero spread: both parts hold across seeds
    assert agg["mc_judge"]["verdict"] == "reproduced"
    assert agg["mc_judge"]["per_seed_verdicts"] == ["reproduced", "inconclusive", "reproduced"]
    assert agg["hard_soft"]["seeds"] == 2 and agg["hard_soft"]["verdict"] == "inconclusive"  # missing from seed-2
    assert agg["mc_judge"]["holds_on_every_seed"] is False  # seed-1 was inconclusive
    # Three seeds that agree exactly (10, 10, 10) do not make a zero-width interval: each seed's own bootstrap
    # half-width is 2, so the floor is sd 2 / 1.96 per seed: 4.303 x 1.0204 / sqrt(3) = 2.535 around 10.
    o = agg["mc_judge"]["estimates"]["f1_oracle_minus_judge"]
    assert abs(o["hi"] - 10 - 4.303 * (2 / 1.96) / 3 ** 0.5) < 1e-9 and abs(10 - o["lo"] - (o["hi"] - 10)) < 1e-9


def test_seed_interval_never_narrower_than_the_within_seed_noise():
    from prmlab.analysis.findings import t_interval

    m, lo, hi = t_interval([4.0, 6.0, 8.0])  # sd 2: 4.303 x 2 / sqrt(3) = 4.969
    assert m == 6.0 and abs(hi - 6.0 - 4.969) < 1e-3
    m, lo, hi = t_interval([4.0, 6.0, 8.0], [14.0, 14.0, 14.0])  # one seed's own interval +-14: sd 7.143
    assert abs(hi - 6.0 - 4.303 * (14 / 1.96) / 3 ** 0.5) < 1e-9 and abs(hi - 6.0 - 17.745) < 1e-3
    assert t_interval([4.0, 6.0, 8.0], [1.0, 1.0, 1.0]) == t_interval([4.0, 6.0, 8.0])  # across dominates


def test_bon_residual_from_the_line_through_every_prm_by_hand():
    """Tables 3-4 scale-free: F1 0 / 50 / 100 and Best-of-N 60 / 50 / 100. The line through them has slope
    0.4 (sum of products 2,000 over 5,000) and passes (50, 70): it predicts 50 / 70 / 90, residuals +10 / -20 / +10."""
    from prmlab.analysis.findings import bon_residuals

    r = bon_residuals({"a": 0.0, "b": 50.0, "c": 100.0}, {"a": 60.0, "b": 50.0, "c": 100.0})
    assert r == pytest.approx({"a": 10.0, "b": -20.0, "c": 10.0})
    # a bigger F1 spread for the same Best-of-N points moves no residual: the statistic is free of the scales
    assert bon_residuals({"a": 0.0, "b": 200.0, "c": 400.0}, {"a": 60.0, "b": 50.0, "c": 100.0}) == pytest.approx(r)


def test_best_of_n_flattery_is_tested_against_the_line_and_the_judge_decides():
    """mc_hard: F1 0, BoN 50; judge: F1 100, BoN 100; oracle: F1 100, BoN 50. The line (slope 0.25 through
    (66.7, 66.7)) predicts 50 / 75 / 75: residuals 0 / +25 / -25. The judge's PRM is the deciding process reference
    (mc_hard - judge -25: not reproduced); against the exact-label oracle it would be +25, shown beside it."""
    bon = [dict(r, prm=prm) for r in _bon_rows() for prm, src in (("mc_hard", "A"), ("judge", "B"), ("oracle", "A"))
           if r["prm"] == src]
    pb = [dict(r, model=m) for r in _pb_rows() for m, src in (("prm/mc_hard", "prm/bad"), ("prm/judge", "prm/good"),
                                                              ("prm/oracle", "prm/good")) if r["model"] == src]
    many_b = [dict(r, problem_id=f"{r['problem_id']}-{k}") for k in range(6) for r in bon]
    many_p = [dict(r, id=f"{r['id']}-{k}") for k in range(6) for r in pb]
    f = Findings(many_p, ["tune", "test"], "tune", many_b, {}, n_boot=200)
    rec = {r["id"]: r for r in f.records()}["rankings"]
    est = rec["estimates"]
    assert list(est) == ["bon_residual_mc_hard_minus_judge", "bon_residual_mc_hard_minus_oracle"]
    assert est["bon_residual_mc_hard_minus_oracle"][0] == pytest.approx(25.0)
    assert est["bon_residual_mc_hard_minus_judge"][0] == pytest.approx(-25.0)
    assert rec["verdict"] == NOT_REPRODUCED and "Tables 3-4" in rec["paper"] and "inverse performance" in rec["paper"]
    assert rec["precision"]["bon_residual_mc_hard_minus_oracle"]["paper_effect"] is None  # the paper gives no size
    # Inflation against chance: mc_hard (A) picks flawed right answers 25 points above a random pick
    assert est and {r["id"]: r for r in f.records()}["inflation"]["estimates"]["inflation_excess_mc_hard"][0] == 25.0
    # Fig. 8 needs an outcome-supervised PRM: without one the row says so and decides nothing
    m = {r["id"]: r for r in f.records()}["min_on_last"]
    assert m["verdict"] == INCONCLUSIVE and "no `outcome` PRM" in m["ours"]


def test_fig8_is_tested_among_responses_with_an_early_error():
    """Per problem: r0's first error is its first step, r1 has none, r2's is its last step. The outcome PRM puts
    its lowest score on the final step everywhere; the judge on r0's error and on r1's and r2's final step. Among
    early-error responses (r0 only) that is 100 against 0 points; over all responses it would be 100 against 67:
    the unconditional share counts a right answer's weakest step and a late error alike."""
    scores = {"outcome": ([0.9, 0.8, 0.2], [0.9, 0.8, 0.2], [0.9, 0.8, 0.1]),
              "judge": ([0.2, 0.8, 0.9], [0.9, 0.8, 0.3], [0.9, 0.8, 0.1])}
    first_error = (0, -1, 2)
    rows = [{"prm": prm, "problem_id": f"p{p}", "response_id": f"p{p}/r{i}", "correct": i == 1,
             "true_first_error": first_error[i], "step_scores": scores[prm][i]} for p in range(30) for prm in scores
            for i in range(3)]
    pb = [dict(r, model={"prm/good": "prm/judge", "prm/bad": "prm/outcome"}[r["model"]]) for r in _pb_rows()]
    f = Findings(pb, ["tune", "test"], "tune", rows, {}, n_boot=100)
    rec = {r["id"]: r for r in f.records()}["min_on_last"]
    assert rec["estimates"]["min_on_last_early_error_outcome_minus_judge"] == [100.0, 100.0, 100.0]
    assert rec["verdict"] == REPRODUCED
    assert f.min_on_last("outcome") - f.min_on_last("judge") == pytest.approx(100 / 3)
    assert rec["precision"]["min_on_last_early_error_outcome_minus_judge"]["paper_effect"] is None  # none invented
    assert "exceed 40%" in rec["paper"] and "54.6" in rec["paper"] and "Qwen2.5-Math-7B-Math-Shepherd 9.8" in rec["paper"]
    assert "RLHFlow-PRM-Mistral-8B 9.1" in rec["paper"]  # all eleven bars, each with its PRM


def test_equality_at_low_power_is_inconclusive_and_says_how_many_items_it_needs():
    rows = [dict(r, model={"prm/good": "prm/mc_hard", "prm/bad": "prm/mc_soft"}[r["model"]]) for r in _pb_rows()]
    # with Best-of-N rows and a process-label PRM too, so the findings after this one run (a name clash broke them)
    rows += [dict(r, model="prm/judge") for r in _pb_rows() if r["model"] == "prm/good"]
    bon = [dict(r, prm={"A": "mc_hard", "B": "judge"}[r["prm"]]) for r in _bon_rows()]
    f = Findings(rows, ["tune", "test"], "tune", bon, {}, n_boot=200)
    # two PRMs: a line through two points leaves no residual, so the rankings finding needs three and is absent
    ids = {r["id"] for r in f.records()}
    assert {"inflation", "aggregation"} <= ids and "rankings" not in ids
    rec = {r["id"]: r for r in f.records()}["hard_soft"]
    assert rec["verdict"] == INCONCLUSIVE and "is not within the +-3 margin" in rec["ours"]


def test_fig9_aggregation_gap_is_mc_last_minus_min_against_judge_and_human():
    """Fig. 9's own comparison: PRMs trained on MC labels against those trained on judge and human labels.
    Per problem: r0 right, r1 wrong. mc_hard picks r0 by its last step and r1 by its lowest (+100 from last
    over min); judge and human the reverse (-100): 200 points against each, and both must hold."""
    scores = {"mc_hard": ([0.3, 0.9], [0.5, 0.6]), "judge": ([0.8, 0.7], [0.1, 0.95]), "human": ([0.8, 0.7], [0.1, 0.95])}
    rows = [{"prm": prm, "problem_id": f"p{p}", "response_id": f"p{p}/r{i}", "correct": i == 0,
             "true_first_error": -1 if i == 0 else 0, "step_scores": scores[prm][i]}
            for p in range(20) for prm in scores for i in range(2)]
    pb = [dict(r, model=m) for r in _pb_rows() for m, src in (("prm/judge", "prm/good"), ("prm/human", "prm/good"),
                                                              ("prm/mc_hard", "prm/bad")) if r["model"] == src]
    f = Findings(pb, ["tune", "test"], "tune", rows, {}, n_boot=100)
    rec = {r["id"]: r for r in f.records()}["aggregation"]
    assert rec["estimates"] == {"aggregation_last_minus_min_mc_hard_vs_judge": [200.0, 200.0, 200.0],
                                "aggregation_last_minus_min_mc_hard_vs_human": [200.0, 200.0, 200.0]}
    assert rec["verdict"] == REPRODUCED and "Fig. 9" in rec["paper"] and "64.1 / 65.9 / 66.7" in rec["paper"]
    assert "mc_hard 0.0 / " in rec["ours"] and "/ 100.0" in rec["ours"]  # min 0, last 100
    # the paper's effects are Fig. 9's own bars: (66.7 - 64.1) - (65.3 - 65.6) and - (64.7 - 65.6)
    assert [rec["precision"][k]["paper_effect"] for k in rec["estimates"]] == [2.9, 3.5]
    flipped = [dict(r, prm={"mc_hard": "judge", "judge": "mc_hard", "human": "human"}[r["prm"]]) for r in rows]
    g = Findings(pb, ["tune", "test"], "tune", flipped, {}, n_boot=100)
    assert {r["id"]: r for r in g.records()}["aggregation"]["verdict"] == NOT_REPRODUCED


def test_processbench_items_of_one_problem_are_resampled_together():
    """Toy items are responses (`<problem>/r<k>`): a problem's items form one resampling unit; a real item is its own."""
    from prmlab.analysis.findings import problem_of

    assert problem_of("p7/r3") == "p7" and problem_of("gsm8k-12") == "gsm8k-12"
    rows = [dict(r, id=f"p{r['id']}/r{k}") for k in range(3) for r in _pb_rows()]
    f = Findings(rows, ["tune", "test"], "tune", [], {}, n_boot=50)
    assert len(f.pb_units) == 12 and len(f.pb_clusters) == 4
    assert all(len(items) == 3 and {k[1].split("/")[0] for k, _ in items} == {c[1]} for c, items in f.pb_clusters)


def test_findings_grade_a_truncated_item_as_eval_processbench_predicted_it():
    """eval_processbench writes pred None for an item cut to max_length with no error found in its scored
    steps; the findings read that prediction (graded wrong), never re-derive "no error" from the scores."""
    rows = [{"model": "prm/x", "subset": "test", "id": "0", "label": -1, "step_scores": [0.9], "pred": None},
            {"model": "prm/x", "subset": "test", "id": "1", "label": 0, "step_scores": [0.1, 0.9], "pred": 0},
            {"model": "critic/judge", "subset": "test", "id": "0", "label": -1, "pred": -1}]
    f = Findings(rows, ["test"], None, [], {}, n_boot=10)
    assert [u["pred"] for u in f.pb_units] == [{"x": None}, {"x": 0}]  # the critic's rows are not a PRM's
    assert pb_f1(f.pb_units, ["test", "test"], "x") == 0.0  # correct-sample accuracy 0: F1 0


def test_pending_seeds_table_shows_each_seed_on_its_own():
    """While seeds are missing, reports/seeds.md still puts every finished seed's estimates and verdicts side by
    side (hand-written rows); an estimate a seed could not make shows '-', never a number."""
    from prmlab.report.seeds import per_seed_table

    f0 = [{"id": "a", "claim": "A", "verdict": "reproduced", "estimates": {"x": [2.4, 1.2, 3.8], "y": [0.5, -1.0, 2.0]}}]
    f1 = [{"id": "a", "claim": "A", "verdict": "inconclusive", "estimates": {"x": [-0.8, -1.9, 0.2]}}]
    rows = per_seed_table({"seed-1": f1, "seed-0": f0})
    assert rows[2] == "| finding | estimate | seed-0 (development seed) | seed-1 |"
    assert rows[4] == "| A | x | 2.4 [1.2, 3.8] (reproduced) | -0.8 [-1.9, 0.2] (inconclusive) |"
    assert rows[5] == "|  | y | 0.5 [-1.0, 2.0] | - |"
    assert per_seed_table({}) == []
    # a finding (or estimate) only a later seed has is shown too, never dropped
    f1b = f1 + [{"id": "b", "claim": "B", "verdict": "not reproduced", "estimates": {"z": [1.0, 0.5, 1.5]}}]
    assert per_seed_table({"seed-0": f0, "seed-1": f1b})[6] == "| B | z | - | 1.0 [0.5, 1.5] (not reproduced) |"


def test_seeds_md_says_why_a_verdict_is_inconclusive():
    """reports/seeds.md's reasons, on hand-checked numbers: at a per-seed spread of 1, Student t gives
    half-widths 8.98, 2.48, 1.59, 1.24, 1.05, 0.925 for 2..7 seeds, so +-1 needs 7; an interval wider than the
    paper's effect says how many seeds would narrow it; a narrow one that straddles 0 excludes the paper's size."""
    from prmlab.report.seeds import seeds_for, why_inconclusive

    assert seeds_for(1.0, 1.0) == 7 and seeds_for(1.0, 1.6) == 4 and seeds_for(1.0, 0.01) is None

    def rec(lo, hi, effect, verdict="inconclusive", fid="x", name="d"):
        e = {"mean": (lo + hi) / 2, "lo": lo, "hi": hi, "half_width": (hi - lo) / 2, "seeds": 3, "paper_effect": effect}
        return {"id": fid, "seeds": 3, "verdict": verdict, "estimates": {name: e}}

    # +-9 over 3 seeds: sd 9 * sqrt(3) / 4.303 = 3.62; 4 seeds give 3.182 * 3.62 / 2 = 5.76 <= 6
    assert why_inconclusive(runs=3, f=rec(-8.0, 10.0, 6)) == ("d: +-9.0 across seeds is wider than the paper's effect 6; "
                                                    "about 4 seeds at this spread would bring it to +-6.0")
    assert why_inconclusive(runs=3, f=rec(-2.0, 4.0, 30)).endswith("an effect of the paper's size is excluded (at most 4.0)")
    assert "separate a mean of +1.0 from 0" in why_inconclusive(runs=3, f=rec(-1.0, 3.0, None))
    assert why_inconclusive(runs=3, f=rec(1.0, 3.0, 6, verdict="reproduced")) == ""
    assert why_inconclusive(runs=4, f=rec(-8.0, 10.0, 6)).startswith("1 of 4 seeds lack it")  # a seed without it
    # an equality (hard = soft; its entry's rule): |mean| + half-width must fit the 3-point margin
    hard_soft = {"fid": "hard_soft", "name": "f1_hard_minus_soft"}
    assert "is not within +-3; about" in why_inconclusive(runs=3, f=rec(-4.0, 5.0, 3, **hard_soft))
    assert why_inconclusive(runs=3, f=rec(-1.0, 9.0, 3, **hard_soft)).endswith("no number of seeds shows equality at this mean")
    # Fig. 2's kept share is calibration now: it decides nothing; a consensus record without the judge
    # equivalence (an exploratory seed's) was not measured as declared, and one of an undeclared statistic decides nothing
    assert why_inconclusive(runs=3, f=rec(54.0, 57.0, None, fid="consensus", name="kept_share")).startswith(
        "not measured as the findings now declare it: f1_consensus_minus_mc, f1_consensus_minus_judge missing")
    assert "a statistic the findings no longer declare" in why_inconclusive(
        runs=3, f=rec(1.0, 6.0, None, fid="rankings", name="bon_minus_pb_gap_mc_hard_vs_human"))
    from prmlab.analysis.findings import decide

    assert decide("rankings", {"bon_minus_pb_gap_mc_hard_vs_human": (1.0, 6.0)}) == "inconclusive"
    assert decide("consensus", {"f1_consensus_minus_mc": (1.0, 6.0)}) == "inconclusive"


def test_seeds_md_shows_each_prms_figures_across_seeds():
    """reports/seeds.md's per-PRM table, on hand-checked numbers: each seed's headline figure, '-' for a seed that
    kept no headline (and for a model a seed lacks), and the mean and sample sd over the seeds that have it."""
    from prmlab.report.seeds import prm_table

    h0 = {"processbench_f1": {"a": 40.0, "b": 50.0}, "processbench_step_auc": {"a": 0.6, "b": None},
          "best_of_n": {"n": 8, "maj": 70.0, "a": 61.0}}
    h2 = {"processbench_f1": {"a": 44.0}, "processbench_step_auc": {"a": 0.7}, "best_of_n": {"n": 8, "maj": 72.0, "a": 65.0}}
    rows = prm_table({"seed-2": {"headline": h2}, "seed-0": {"headline": h0}, "seed-1": {"headline": None}})
    assert rows[0].endswith("(2 of 3):") and rows[2] == "| figure | model | seed-0 (development seed) | seed-1 | seed-2 | mean | sd |"
    # sd of 40, 44: sqrt(((40 - 42)^2 + (44 - 42)^2) / 1) = 2.83
    assert rows[4] == "| ProcessBench F1 (held-out subsets) | a | 40.0 | - | 44.0 | 42.0 | 2.8 |"
    assert rows[5] == "|  | b | 50.0 | - | - | 50.0 | - |"
    assert rows[6] == "| ProcessBench step AUC | a | 0.600 | - | 0.700 | 0.650 | 0.071 |"  # b's AUC None: no row
    assert rows[7].endswith("| maj | 70.0 | - | 72.0 | 71.0 | 1.4 |") and "| a | 61.0 | - | 65.0 | 63.0 | 2.8 |" in rows[8]
    assert prm_table({"seed-0": {"findings": []}}) == []  # seed files from before headlines were kept


def test_every_finding_has_a_short_claim():
    """Each claim in a few words, so the summary tables and the Prefect artifact keep the verdict on screen."""
    from prmlab.analysis.findings import FINDINGS, short

    assert all(0 < len(f.short) <= 40 and len(f.short) < len(f.claim) for f in FINDINGS)
    assert len({f.short for f in FINDINGS}) == len(FINDINGS)
    assert short("hard_soft") == "hard = soft MC labels (unfiltered)" and short("nope", "A claim") == "A claim"


def test_table4_human_half_is_decomposed_and_not_testable_here():
    """The toy human PRM's controls: on-policy (good here) and exact (bad here) against human (bad): +100 and 0 F1
    points, and the annotator against the judge on the same responses, all shown, none deciding: the toy's human
    labels are dials, so human > judge is "not testable in this world" whatever they give."""
    rows = [dict(r, id=f"{r['id']}-{k}") for k in range(6) for r in _pb_rows()]
    named = {"prm/mc_hard": "prm/bad", "prm/judge": "prm/good", "prm/human": "prm/bad", "prm/human_onpolicy": "prm/good",
             "prm/human_exact": "prm/bad", "prm/judge_matched": "prm/bad"}
    pb = [dict(r, model=m) for r in rows for m, src in named.items() if r["model"] == src]
    recs = {r["id"]: r for r in Findings(pb, ["tune", "test"], "tune", [], {}, n_boot=100).records()}
    rec = recs["judge_human"]
    assert rec["estimates"]["f1_human_onpolicy_minus_human"][0] == 100.0
    assert rec["estimates"]["f1_human_exact_minus_human"][0] == 0.0
    assert rec["estimates"]["f1_human_onpolicy_minus_judge_matched"][0] == 100.0
    assert "off-policy solutions" in rec["ours"] and "the judge on the same responses" in rec["ours"]
    assert rec["verdict"] == NOT_TESTABLE
    assert recs["mc_judge"]["verdict"] == REPRODUCED  # judge - mc +100: Table 4's first half stands alone


def test_the_protocol_page_is_what_the_rules_render():
    """reports/protocol.md is rendered from FINDINGS and prmlab.analysis.protocol (one place for the rules): it cannot drift
    from what the findings, the report and the seeds' page decide by. It names every declared claim, marks the ones
    this world cannot test, and says how many seeds each testable one needs."""
    from pathlib import Path

    from prmlab.analysis import protocol
    from prmlab.analysis.findings import FINDINGS

    root = Path(__file__).resolve().parents[2]
    text = protocol.render(root)
    assert (root / protocol.PAGE).read_text() == text, "reports/protocol.md is stale: python -m flows.seeds --protocol"
    assert all(f"(`{f.id}`)" in text for f in FINDINGS)
    assert text.count("**Verdict in the toy world: not testable in this world.**") == sum(bool(f.untestable) for f in FINDINGS)
    assert text.count("- **Seeds to decide:**") == sum(not f.untestable for f in FINDINGS)
    assert "Development seed: 0" in text and "Confirmation seeds: 1, 2, 3, 4, 5, 6" in text


def test_a_confirmation_seed_runs_what_the_protocol_needs_and_nothing_else():
    from prmlab.analysis.protocol import SEED_SOURCES, apply, seed_params

    params = {"profile": {"toy": ["toy"], "real": [], "toy_arms": ["toy"]}, "toy": {"seed": 0}, "sample": {"seed": 0},
              "train_prm": {"seed": 0, "sources": ["mc_hard", "judge", "human", "oracle", "consensus_soft"]},
              "eval_processbench": {"reference_prms": {"oracle_ceiling": "models/prm/oracle_ceiling"}},
              "eval_bon": {"reference_prms": {"oracle_ceiling": "models/prm/oracle_ceiling"}}}
    got = apply(params, seed_params(params, 3))
    assert got["toy"]["seed"] == 3 and got["sample"]["seed"] == 3 and got["train_prm"]["seed"] == 3
    assert got["profile"]["toy_arms"] == [] and got["train_prm"]["sources"] == ["mc_hard", "judge", "consensus_soft"]
    assert got["eval_processbench"]["reference_prms"] == {} == got["eval_bon"]["reference_prms"]
    assert set(got["train_prm"]["sources"]) <= set(SEED_SOURCES) and params["toy"]["seed"] == 0  # a copy
    # the stages `dvc repro` generates under those params, which the plain runner (scripts/seeds_plain.py) runs too
    from prmlab.analysis.protocol import runs_in

    assert [runs_in(s, got) for s in ("ceiling@toy", "toy_human@toy", "problems@toy", "train_prm@judge",
                                      "train_prm@human", "prm_data@consensus_soft", "sample", "inputs@real")] == \
        [False, False, True, True, False, True, True, False]
    assert runs_in("ceiling@toy", params) and runs_in("train_prm@human", params)  # the development seed's study
