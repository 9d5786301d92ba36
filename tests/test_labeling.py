from prmlab.generation import BackendConfig, Sampling, make_generator
from prmlab.io import read_jsonl
from prmlab.labeling import (
    MCStats,
    audit,
    build_training_sets,
    labels_from_first_error,
    mc_binary,
    mc_exhaustive,
)
from prmlab.records import JudgeLabel, MCLabel, Problem, Response
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
    sets, counts = build_training_sets(p, rs, mc, judge, with_oracle=True)
    assert counts["agree"] == 1 and counts["disagree"] == 1 and counts["judge_unparsed"] == 1
    assert [e.response_id for e in sets["consensus"]] == ["a"]
    b = next(e for e in sets["judge"] if e.response_id == "b")
    assert b.labels == [1, 1, 0] and b.completions == ["s0", "s1", "s2"]
    soft_b = next(e for e in sets["mc_soft"] if e.response_id == "b")
    assert soft_b.soft == [0.5, 0.0] and soft_b.completions == ["s0", "s1"]
    assert [e.labels for e in sets["oracle"]] == [[1, 1, 1], [1, 0], [0]]


def test_audit_hand_table():
    rs = [resp("a", ["s"] * 3, True, -1), resp("b", ["s"] * 3, False, 1), resp("c", ["s"] * 3, True, 0)]
    # a: false alarm at 2; b: exact; c: missed (says -1, truth 0)
    a = audit(rs, {"a": 2, "b": 1, "c": -1})
    assert a["first_error_accuracy"] == 1 / 3
    assert a["missed_error_rate"] == 1 / 2 and a["false_alarm_rate"] == 1 / 3
    # steps: a labels 0..2 (wrong at 2, truly fine) -> fp; b labels 0..1, wrong at 1 truly wrong -> tp;
    # c labels 0..2 all right, truth wrong from 0 -> 3 fn
    assert a["step_precision_wrong"] == 0.5 and a["step_recall_wrong"] == 0.25


def test_binary_search_agrees_with_exhaustive_on_monotone_prefixes(toy):
    """Real rollouts (transformers, greedy): with k=1 at temperature 0, prefix correctness is a fixed
    function, so binary search must find exhaustive's first negative wherever that function is
    monotone, and never spend more rollouts."""
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
    assert st.rollouts == sum(lab.rollouts for lab in bi.values())
    for r in rs:
        e, b = ex[r.response_id], bi[r.response_id]
        assert b.rollouts <= e.rollouts
        assert len(e.hard) == (len(r.steps) if e.first_error == -1 else e.first_error + 1)
        if not r.correct:  # the last step's label is the response's own correctness
            assert e.first_error != -1 and b.first_error != -1
        full = [lab > 0 for lab in e.soft] + [1] * (len(r.steps) - len(e.soft))
        monotone = all(full[i] >= full[i + 1] for i in range(len(full) - 1))
        if monotone and e.first_error != -1:
            assert b.first_error == e.first_error
