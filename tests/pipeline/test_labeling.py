from conftest import letters_policy

from prmlab.core.io import read_jsonl
from prmlab.core.records import JudgeLabel, MCLabel, Problem, Response, labels_from_first_error
from prmlab.engines.config import BackendConfig, Sampling
from prmlab.engines.generation import make_generator
from prmlab.pipeline.labeling import MCStats, mc_binary, mc_exhaustive, rollout_prompt
from prmlab.pipeline.training_sets import agreement_counts, audit, training_set
from prmlab.toy.world import canonical_steps, make_flawed, verify


def test_labels_from_first_error():
    assert labels_from_first_error(3, -1) == [1, 1, 1]
    assert labels_from_first_error(3, 1) == [1, 0]
    assert labels_from_first_error(3, 0) == [0]


def resp(rid, steps, correct, true_fe):
    return Response(problem_id="p", response_id=rid, steps=steps, answer="1", correct=correct, true_first_error=true_fe)


def test_training_sets_and_consensus():
    p = {"p": Problem(id="p", source="toy", question="q", gold_answer="1")}
    rs = [resp("a", ["s0", "s1", "s2"], True, -1), resp("b", ["s0", "s1", "s2"], False, 1), resp("c", ["s0", "s1"], False, 0)]
    mc = {"a": MCLabel("a", [1.0, 1.0, 1.0], [1, 1, 1], -1, 16), "b": MCLabel("b", [0.5, 0.0], [1, 0], 1, 16),
          "c": MCLabel("c", [0.25, 0.0], [1, 0], 1, 8)}
    judge = {"a": JudgeLabel("a", -1, True, ["x"]), "b": JudgeLabel("b", 2, True, ["x"]), "c": JudgeLabel("c", None, False, ["?"])}
    sets = {s: training_set(s, p, rs, mc, judge) for s in ("mc_soft", "judge", "consensus", "oracle")}
    counts = agreement_counts(rs, mc, judge)
    assert counts["agree"] == 1 and counts["disagree"] == 1 and counts["judge_unparsed"] == 1
    assert [e.response_id for e in sets["consensus"]] == ["a"]
    b = next(e for e in sets["judge"] if e.response_id == "b")
    assert b.labels == [1, 1, 0] and b.completions == ["s0", "s1", "s2"]
    soft_b = next(e for e in sets["mc_soft"] if e.response_id == "b")
    assert soft_b.soft == [0.5, 0.0] and soft_b.completions == ["s0", "s1"]
    assert [e.labels for e in sets["oracle"]] == [[1, 1, 1], [1, 0], [0]]
    # The protocol's two one-factor arms. consensus_soft: exactly consensus's responses and labels, with MC's values
    # (hard vs soft after filtering); judge_matched: the judge's labels on exactly another set's responses.
    judge["c"] = JudgeLabel("c", 1, True, ["x"])  # now MC and the judge agree on c too
    cons = training_set("consensus", p, rs, mc, judge)
    soft = training_set("consensus_soft", p, rs, mc, judge)
    assert [(e.response_id, e.labels, e.completions) for e in soft] == [(e.response_id, e.labels, e.completions) for e in cons]
    assert [e.soft for e in soft] == [[1.0, 1.0, 1.0], [0.25, 0.0]] and all(e.soft is None for e in cons)
    matched = training_set("judge_matched", p, rs, mc, judge, only={"b", "c"})
    assert [(e.response_id, e.labels) for e in matched] == [("b", [1, 1, 0]), ("c", [1, 0])]


def test_judge_matched_refuses_a_set_of_other_responses(tmp_path):
    """prm_data@judge_matched reads the responses of data/human/human_onpolicy.jsonl: a response id the samples lack
    is one line naming the file, line and field; a missing file names the stage that writes it."""
    import argparse
    import json

    import pytest

    from prmlab.core.io import DataError
    from prmlab.core.params import ParamsError
    from prmlab.pipeline.training_sets import prepare_consensus
    from prmlab.prms.training_config import TrainPRMConfig

    (tmp_path / "problems.jsonl").write_text(json.dumps({"id": "p", "source": "toy", "question": "q", "gold_answer": "1"}) + "\n")
    (tmp_path / "samples.jsonl").write_text(json.dumps(resp("a", ["s0", "s1"], True, -1).to_dict()) + "\n")
    (tmp_path / "mc.jsonl").write_text("")
    (tmp_path / "judge.jsonl").write_text("")
    a = argparse.Namespace(problems=str(tmp_path / "problems.jsonl"), samples=str(tmp_path / "samples.jsonl"),
                           mc=str(tmp_path / "mc.jsonl"), judge=str(tmp_path / "judge.jsonl"), human=str(tmp_path / "human"),
                           source="judge_matched")
    cfg = {"train_prm": TrainPRMConfig(sources=["judge", "judge_matched"])}
    with pytest.raises(ParamsError, match="toy_human@toy"):
        prepare_consensus(a, cfg)
    (tmp_path / "human").mkdir()
    row = {"prompt": "q", "completions": ["s0"], "labels": [1], "response_id": "zzz"}
    (tmp_path / "human" / "human_onpolicy.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match=r"human_onpolicy.jsonl:1: field 'response_id': 'zzz'"):
        prepare_consensus(a, cfg)


def test_audit_hand_table():
    rs = [resp("a", ["s"] * 3, True, -1), resp("b", ["s"] * 3, False, 1), resp("c", ["s"] * 3, True, 0)]
    # a: false alarm at 2; b: exact; c: missed (says -1, truth 0)
    a = audit(rs, {"a": 2, "b": 1, "c": -1})
    assert a["first_error_accuracy"] == 1 / 3
    assert a["missed_error_rate"] == 1 / 2 and a["false_alarm_rate"] == 1 / 3
    # steps: a labels 0..2 (wrong at 2, truly fine) -> fp; b labels 0..1, wrong at 1 truly wrong -> tp;
    # c labels 0..2 all right, truth wrong from 0 -> 3 fn
    assert a["step_precision_wrong"] == 0.5 and a["step_recall_wrong"] == 0.25


def _prefix_correct(gen, probs, rs, sp) -> dict[str, list[int]]:
    """Every prefix's rollout verdict, estimated here directly (real rollouts, the graders MC uses), so the
    labels below are checked against the whole function, not against their own truncated output; the last
    step is the response's own correctness, as in MC estimation."""
    from prmlab.pipeline.labeling import _grade_rollouts

    jobs = [(r, i) for r in rs for i in range(len(r.steps) - 1)]
    outs = gen.generate([rollout_prompt(gen, probs[r.problem_id], r.steps, i) for r, i in jobs], sp)
    f = {r.response_id: [0] * (len(r.steps) - 1) + [int(r.correct)] for r in rs}
    for (r, i), comps in zip(jobs, outs):
        f[r.response_id][i] = int(_grade_rollouts(probs[r.problem_id], r.steps, i, [c.text for c in comps])[0] > 0)
    return f


def _check_against(f: list[int], e, b) -> None:
    """exhaustive must find f's first 0; binary a 1 -> 0 boundary of f (its first 0 when f is monotone)."""
    first = next((i for i, x in enumerate(f) if x == 0), -1)
    assert e.first_error == first
    keep = len(f) if first == -1 else first + 1
    assert e.hard == f[:keep] and e.soft == [float(x) for x in f[:keep]]
    if b.first_error == -1:
        assert f[-1] == 1
    else:
        assert f[b.first_error] == 0 and (b.first_error == 0 or f[b.first_error - 1] == 1)
    if all(f[i] >= f[i + 1] for i in range(len(f) - 1)):
        assert b.first_error == first


def test_binary_search_agrees_with_exhaustive_on_monotone_prefixes(toy):
    """Real rollouts (transformers, greedy): with k=1 at temperature 0, prefix correctness is a fixed
    function, so exhaustive must find its first negative prefix, binary search the same wherever it is
    monotone, and binary never spends more rollouts. The test-sized toy policy writes only whitespace,
    which MC counts as wrong, so every prefix short of the whole response is negative here: this covers
    first errors at step 0 (the mid-response case is the next test)."""
    import random

    gen = make_generator(BackendConfig(backend="transformers", model=toy["policy"], batch_size=64))
    probs = {p.id: p for p in read_jsonl(toy["problems"] / "processbench.jsonl", Problem)}
    rng = random.Random(0)
    rs = []
    for i, p in enumerate(probs.values()):
        steps = canonical_steps(p) if i % 3 == 0 else make_flawed(rng, p, "slip")[0]
        v = verify(p, steps)
        rs.append(Response(problem_id=p.id, response_id=f"{p.id}/x", steps=steps, answer=p.gold_answer,
                           correct=v.final_correct, true_first_error=v.first_error))
    sp = Sampling(n=1, temperature=0.0, max_tokens=80)
    ex = {lab.response_id: lab for lab in mc_exhaustive(gen, probs, rs, sp, 0.0, MCStats())}
    st = MCStats()
    bi = {lab.response_id: lab for lab in mc_binary(gen, probs, rs, sp, 0.0, st)}
    f = _prefix_correct(gen, probs, rs, sp)
    assert st.rollouts == sum(lab.rollouts for lab in bi.values())
    for r in rs:
        e, b = ex[r.response_id], bi[r.response_id]
        assert b.rollouts <= e.rollouts == len(r.steps) - 1
        _check_against(f[r.response_id], e, b)
        if not r.correct:  # the last step's label is the response's own correctness
            assert e.first_error != -1 and b.first_error != -1


def test_binary_and_exhaustive_find_a_mid_response_first_error(toy, tmp_path):
    """Real rollouts from a checkpoint whose continuations are known (`letters_policy` in conftest), on responses
    whose prefix correctness is set by the answers boxed in their steps. Expected by hand:

    mid   boxed 7, 7, 5, 5 (gold 7)      f = 1 1 0 0    first error 2 (mid-response)
          binary: prefix 1 (1 -> lo 2), prefix 2 (0 -> hi 2): 2 prefixes; exhaustive: 3
    early boxed 7, 5, 5, 5, 5            f = 1 0 0 0 0  first error 1
          binary: prefixes 2 (0), 1 (0), 0 (1): 3 prefixes; exhaustive: 4
    clean boxed 7, 7, 7, right           f = 1 1 1      no error (-1)
          binary: prefix 1 (1 -> lo 2 = hi, the last step known right): 1 prefix; exhaustive: 2
    zigzag boxed 7, 5, 7, 7, 7, 5        f = 1 0 1 1 1 0 not monotone: exhaustive 1, binary 5
          binary: prefix 2 (1 -> lo 3), prefix 4 (1 -> lo 5 = hi): 2 prefixes, misses the error at 1
          (binary search assumes monotone prefixes; the test shows the two methods can differ)

    A prefix the responses share is generated once and paid for by the first response needing it:
    prefix 0 (7) is common to all four, prefix 1 (7, 7) to mid and clean, (7, 5) to early and zigzag.
    Exhaustive, in order: mid pays 0, 1, 2; early 1, 2, 3; clean nothing; zigzag 2, 3, 4 (9 of 14).
    Binary, round 1: mid 1, early 2, clean 1 (mid's, same call), zigzag 2; round 2: mid 2, early 1,
    zigzag 4; round 3: early 0: mid 2, early 3, clean 0, zigzag 2 (7 of 8).
    """
    gen = make_generator(BackendConfig(backend="transformers", model=letters_policy(toy, tmp_path / "letters"),
                                       batch_size=16))
    probs = {"m": Problem(id="m", source="toy", question="Ava has 3 apples and gets 4 more. How many now?",
                          gold_answer="7")}

    def resp(rid, boxed, correct):
        steps = [f"step {i}: \\boxed{{{x}}}" for i, x in enumerate(boxed)]
        return Response(problem_id="m", response_id=rid, steps=steps, answer=str(boxed[-1]), correct=correct)

    rs = [resp("mid", [7, 7, 5, 5], False), resp("early", [7, 5, 5, 5, 5], False), resp("clean", [7, 7, 7], True),
          resp("zigzag", [7, 5, 7, 7, 7, 5], False)]
    k = 2
    sp = Sampling(n=k, temperature=0.0, max_tokens=6)
    # The construction holds: rollouts are non-empty runs of a/b (else MC would count them wrong).
    texts = [c.text for comps in gen.generate([rollout_prompt(gen, probs["m"], rs[0].steps, 0)], sp) for c in comps]
    assert texts and all(t and set(t) <= {"a", "b"} for t in texts), texts
    ex = {lab.response_id: lab for lab in mc_exhaustive(gen, probs, rs, sp, 0.0, MCStats())}
    st = MCStats()
    bi = {lab.response_id: lab for lab in mc_binary(gen, probs, rs, sp, 0.0, st)}
    f = {"mid": [1, 1, 0, 0], "early": [1, 0, 0, 0, 0], "clean": [1, 1, 1], "zigzag": [1, 0, 1, 1, 1, 0]}
    assert f == _prefix_correct(gen, probs, rs, sp)  # the rollouts behave as constructed
    assert {r: (ex[r].first_error, bi[r].first_error) for r in f} == {
        "mid": (2, 2), "early": (1, 1), "clean": (-1, -1), "zigzag": (1, 5)}
    assert {r: (ex[r].rollouts, bi[r].rollouts) for r in f} == {
        "mid": (3 * k, 2 * k), "early": (3 * k, 3 * k), "clean": (0, 0), "zigzag": (3 * k, 2 * k)}
    assert st.rollouts == 7 * k and st.shared_prefixes == 1
    # The letters never end, so every rollout fills max_tokens and is counted as cut: per label, the
    # rollouts its estimates rest on, shared prefixes included (clean paid for none, rests on 2 prefixes).
    assert {r: (ex[r].truncated, bi[r].truncated) for r in f} == {
        "mid": (3 * k, 2 * k), "early": (4 * k, 3 * k), "clean": (2 * k, 1 * k), "zigzag": (5 * k, 2 * k)}
    # labels stop at the first error; binary's steps before it are inferred positive (soft 1.0)
    assert ex["mid"].hard == bi["mid"].hard == [1, 1, 0] and ex["mid"].soft == [1.0, 1.0, 0.0]
    assert bi["zigzag"].hard == [1, 1, 1, 1, 1, 0] and ex["zigzag"].hard == [1, 0]
    for r in rs:
        _check_against(f[r.response_id], ex[r.response_id], bi[r.response_id])


def test_the_judge_judges_each_distinct_response_once(toy):
    """Identical responses to a problem (common at temperature 0.7) are judged once and share the
    verdict; the same steps under another problem are another response. Real judge (transformers),
    sampled with n=2 so a second call would draw different replies: equal labels mean one call."""
    from prmlab.pipeline.labeling import judge_labels
    from prmlab.prompts import load_template

    gen = make_generator(BackendConfig(backend="transformers", model=toy["judge"], batch_size=8))
    asked = []
    chat = gen.chat
    gen.chat = lambda convs, sp: asked.append(len(convs)) or chat(convs, sp)  # count what reaches the engine
    probs = {p.id: p for p in read_jsonl(toy["problems"] / "processbench.jsonl", Problem)[:2]}
    a, b = probs.values()
    steps = canonical_steps(a)

    def r(rid, p, st):
        return Response(problem_id=p.id, response_id=rid, steps=st, answer="1", correct=True)

    rs = [r("a0", a, steps), r("a1", a, steps), r("a2", a, steps[:-1] + ["other"]), r("b0", b, steps)]
    labels = judge_labels(gen, probs, rs, load_template("critic", None), "critic",
                          Sampling(n=2, temperature=1.0, max_tokens=24, seed=0))
    assert asked == [3]  # a0 (= a1), a2, b0
    by = {lab.response_id: lab for lab in labels}
    assert [lab.response_id for lab in labels] == ["a0", "a1", "a2", "b0"]
    assert by["a0"].raw == by["a1"].raw and by["a0"].votes == by["a1"].votes


def test_scan_searches_and_their_comparison_with_exhaustive_mc(toy, tmp_path):
    """SCAN's rules on the known prefix-correctness responses of the test above (`letters_policy`), plus `fixed`,
    a right answer through a wrong step (boxed 7, 5, 7: f = 1 0 1). Expected by hand (k = 2):

    scan: right answers (clean, fixed) get no rollouts and every step positive; wrong ones are scanned
    from step 0 and stop at the first failing prefix, all advancing together (input order pays first):
      round 1: mid, early, zigzag ask prefix (7): mid pays; round 2: mid (7, 7) pays, early (7, 5) pays,
      zigzag (7, 5) shares it; round 3: mid (7, 7, 5) pays.  mid 3 prefixes, early 1, zigzag 0: 4 in all
      first errors mid 2, early 1, zigzag 1 (exhaustive's, on the wrong answers), clean -1, fixed -1 (exhaustive: 1)
    sequential (the scan without the right-answer rule): exhaustive's labels exactly; clean's prefixes (7), (7, 7)
      and fixed's (7), (7, 5) are the wrong answers' too, so it also pays 4 prefixes here (exhaustive 9).
    scan_binary: right answers as scan, wrong ones as binary search: mid 2, early 1, zigzag 5.
    compare_with_exhaustive(scan), exhaustive's 9 distinct prefixes shared: scan asks 4 of them (share 4/9);
    first errors agree on 4 of 5 (not fixed); step labels on 11 of 12 (fixed: [1, 0] against [1, 1, 1], 2
    steps compared, 1 equal); 1 of the 2 right answers is flagged by exhaustive MC; against the verifier
    (first errors 2, 1, -1, 1, 1) exhaustive is right on 5 of 5, scan on 4.
    """
    from prmlab.pipeline.labeling import compare_with_exhaustive, mc_scan

    gen = make_generator(BackendConfig(backend="transformers", model=letters_policy(toy, tmp_path / "letters"),
                                       batch_size=16))
    probs = {"m": Problem(id="m", source="toy", question="Ava has 3 apples and gets 4 more. How many now?",
                          gold_answer="7")}

    def resp(rid, boxed, correct, true_fe):
        steps = [f"step {i}: \\boxed{{{x}}}" for i, x in enumerate(boxed)]
        return Response(problem_id="m", response_id=rid, steps=steps, answer=str(boxed[-1]), correct=correct,
                        true_first_error=true_fe)

    rs = [resp("mid", [7, 7, 5, 5], False, 2), resp("early", [7, 5, 5, 5, 5], False, 1), resp("clean", [7, 7, 7], True, -1),
          resp("zigzag", [7, 5, 7, 7, 7, 5], False, 1), resp("fixed", [7, 5, 7], True, 1)]
    k = 2
    sp = Sampling(n=k, temperature=0.0, max_tokens=6)
    st = MCStats()
    sc = {lab.response_id: lab for lab in mc_scan(gen, probs, rs, sp, 0.0, st)}
    assert [lab for lab in sc] == ["mid", "early", "clean", "zigzag", "fixed"]  # input order
    assert {r: (sc[r].first_error, sc[r].rollouts) for r in sc} == {
        "mid": (2, 3 * k), "early": (1, k), "clean": (-1, 0), "zigzag": (1, 0), "fixed": (-1, 0)}
    assert st.rollouts == 4 * k and st.shared_prefixes == 3  # round 1: early and zigzag share (7); round 2: zigzag (7, 5)
    assert sc["mid"].soft == [1.0, 1.0, 0.0] and sc["fixed"].hard == [1, 1, 1] and sc["fixed"].soft == [1.0] * 3
    assert {lab.search for lab in sc.values()} == {"scan"}
    # sequential: the scan without the right-answer rule, exhaustive's labels exactly (clean: prefixes 0, 1 pass)
    sq = mc_scan(gen, probs, rs, sp, 0.0, MCStats(), search="sequential")
    ex = mc_exhaustive(gen, probs, rs, sp, 0.0, MCStats())
    assert [(x.first_error, x.hard, x.soft) for x in sq] == [(x.first_error, x.hard, x.soft) for x in ex]
    assert [x.first_error for x in sq] == [2, 1, -1, 1, 1] and sum(x.rollouts for x in sq) == 4 * k
    sb = {lab.response_id: lab for lab in mc_scan(gen, probs, rs, sp, 0.0, MCStats(), search="scan_binary")}
    assert {r: sb[r].first_error for r in sb} == {"mid": 2, "early": 1, "clean": -1, "zigzag": 5, "fixed": -1}
    # every search's labels read back as a label file (they had been refused past exhaustive and binary:
    # `field 'search': 'sequential' is not exhaustive or binary`, so consensus could not read them)
    from prmlab.core.io import write_jsonl
    from prmlab.core.records import MC_SEARCHES

    for name, labels in (("scan", list(sc.values())), ("sequential", sq), ("scan_binary", list(sb.values())),
                         ("exhaustive", ex)):
        write_jsonl(tmp_path / f"{name}.jsonl", labels)
        assert read_jsonl(tmp_path / f"{name}.jsonl", MCLabel) == labels and {x.search for x in labels} == {name}
    assert set(MC_SEARCHES) == {"exhaustive", "sequential", "binary", "scan", "scan_binary"}
    m = compare_with_exhaustive(gen, probs, rs, "scan", sp, 0.0, sc)
    assert m == {"compared_responses": 5, "compared_rollouts_exhaustive": 9 * k, "compared_rollouts_scan": 4 * k,
                 "rollouts_share_of_exhaustive": 4 / 9, "first_error_agreement_with_exhaustive": 0.8,
                 "step_label_agreement_with_exhaustive": 11 / 12, "first_error_agreement_with_exhaustive_own_draws": 0.8,
                 "right_answers_flagged_by_exhaustive": 0.5, "verifier_first_error_accuracy_exhaustive": 1.0,
                 "verifier_first_error_accuracy_scan": 0.8}
