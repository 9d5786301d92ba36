"""The newer labelling methods (prmlab.pipeline.label_methods) on a handful of toy responses, with real engines, each checked
against the toy verifier's truth; and their bad inputs, each one line before any model loads."""

import argparse
import random
from pathlib import Path

import pytest
from conftest import ROOT, letters_policy

from prmlab.core.io import DataError, ShardWriter, read_jsonl, write_jsonl
from prmlab.core.params import ParamsError
from prmlab.core.records import MCLabel, Problem, Response, labels_from_first_error
from prmlab.engines.cluster import EngineConfig
from prmlab.engines.config import BackendConfig
from prmlab.pipeline.label_methods import (
    REFERENCE_TEMPLATE,
    ActiveConfig,
    AgreeConfig,
    LabelMethodsConfig,
    MethodInputs,
    ReferenceJudgeConfig,
    label_method,
    prepare_method,
    reference_messages,
    trusted,
)
from prmlab.pipeline.labeling_config import LabelJudgeConfig
from prmlab.pipeline.method_labels import MethodLabel
from prmlab.toy.world import (
    ToyWorldConfig,
    canonical_solution,
    canonical_steps,
    make_flawed,
    verify,
    world_problems,
)

COMMITTED = {"policy": str(ROOT / "models/policy")}  # the study's own toy policy (committed): no model trains here
GOLD7 = Problem(id="m", source="toy", question="Ava has 3 apples and gets 4 more. How many now?", gold_answer="7")


def boxed(rid, values, correct, true_fe):
    steps = [f"step {i}: \\boxed{{{x}}}" for i, x in enumerate(values)]
    return Response(problem_id="m", response_id=rid, steps=steps, answer=str(values[-1]), correct=correct,
                    true_first_error=true_fe)


def test_two_model_agreement_keeps_only_what_both_completers_say(tmp_path):
    """The strong completer is `letters_policy` (conftest: a prefix's rollouts reach the gold answer exactly when its
    own last \\boxed{} is 7, so its MC labels are the verifier's here); the weak completer's labels are a noisy
    completer's, by hand: right on `mid`, a missed error on `early`, a false alarm on `clean`, outcome-fooled on
    `fixed` (a right answer through a wrong step). Kept whole: `mid` alone, first error right; the partial labels
    kept before each disagreement are all true. The weak labels alone get 1 first error of 4 right."""
    rs = [boxed("mid", [7, 7, 5, 5], False, 2), boxed("early", [7, 5, 5, 5, 5], False, 1),
          boxed("clean", [7, 7, 7], True, -1), boxed("fixed", [7, 5, 7], True, 1)]
    weak = {"mid": MCLabel("mid", [1.0, 1.0, 0.0], [1, 1, 0], 2, 6), "early": MCLabel("early", [1, 1, 1, 0], [1, 1, 1, 0], 3, 8),
            "clean": MCLabel("clean", [0.0], [0], 0, 2), "fixed": MCLabel("fixed", [1.0, 0.5, 1.0], [1, 1, 1], -1, 4)}
    assert sum(weak[r.response_id].first_error == r.true_first_error for r in rs) == 1
    cfg = {"label_methods": LabelMethodsConfig(agree=AgreeConfig(k=2, temperature=0.0, max_tokens=6, shard_size=3)),
           "completer": BackendConfig(model=letters_policy(COMMITTED, tmp_path / "letters"), batch_size=16),
           "engine": EngineConfig()}
    p = MethodInputs("mc_agree", ShardWriter(tmp_path / "agree.jsonl"), {"m": GOLD7}, rs, weak=weak)
    done = label_method(cfg, p, None)
    labels = {lab.response_id: lab for lab in read_jsonl(tmp_path / "agree.jsonl", MethodLabel)}
    assert {r: (lab.first_error, lab.labels) for r, lab in labels.items()} == {
        "mid": (2, [1, 1, 0]), "early": (None, [1]), "clean": (None, []), "fixed": (None, [1])}
    for r in rs:  # every kept step label is the verifier's
        truth = labels_from_first_error(len(r.steps), r.true_first_error)
        assert labels[r.response_id].labels == truth[: len(labels[r.response_id].labels)], r.response_id
    assert labels["fixed"].evidence["strong_first_error"] == 1 and labels["early"].evidence["weak_first_error"] == 3
    m = done.metrics
    assert (m["kept"], m["kept_share"], m["step_labels"]) == (1, 0.25, 5)
    assert m["audit"]["responses"] == 1 and m["audit"]["first_error_accuracy"] == 1.0
    assert m["strong_rollouts"] == sum(lab.evidence["strong_rollouts"] for lab in labels.values()) > 0


def toy_responses(n_problems: int, seed: int = 0) -> tuple[dict[str, Problem], list[Response]]:
    """A right (canonical) and a flawed solution of each of n toy problems, with the verifier's first errors."""
    probs = world_problems(ToyWorldConfig(n_train=n_problems, n_eval=1, n_processbench=1))["train"]
    rng, rs = random.Random(seed), []
    for p in probs:
        rs.append(Response(problem_id=p.id, response_id=f"{p.id}-ok", steps=canonical_steps(p), answer=p.gold_answer,
                           correct=True, true_first_error=-1))
        steps, _ = make_flawed(rng, p, "slip", systematic=True)
        v = verify(p, steps)
        rs.append(Response(problem_id=p.id, response_id=f"{p.id}-bad", steps=steps, answer=None, correct=v.final_correct,
                           true_first_error=v.first_error))
    return {p.id: p for p in probs}, rs


def test_reference_guided_judge_shows_the_reference_and_is_audited_against_the_verifier(tmp_path):
    """The committed toy judge (models/judge) with the reference-guided prompt, for real, on 4 problems' right and
    flawed solutions: every prompt carries its problem's canonical solution, every verdict is recorded, and the
    stage's audit is the verifier's first errors against the verdicts kept, counted here by hand."""
    probs, rs = toy_responses(4)
    msg = reference_messages(REFERENCE_TEMPLATE, probs[rs[0].problem_id], canonical_solution(probs[rs[0].problem_id]),
                             rs[0].steps)[0]["content"]
    assert canonical_solution(probs[rs[0].problem_id]) in msg and "<paragraph_0>" in msg
    cfg = {"label_methods": LabelMethodsConfig(), "judge": BackendConfig(model=str(ROOT / "models/judge"), batch_size=8),
           "engine": EngineConfig()}
    refs = {pid: canonical_solution(p) for pid, p in probs.items()}
    p = MethodInputs("judge_ref", ShardWriter(tmp_path / "ref.jsonl"), probs, rs, refs=refs, template=REFERENCE_TEMPLATE)
    done = label_method(cfg, p, None)
    labels = read_jsonl(tmp_path / "ref.jsonl", MethodLabel)
    assert [lab.response_id for lab in labels] == [r.response_id for r in rs]
    assert all(len(lab.evidence["raw"]) == 1 for lab in labels)
    kept = [(r, lab) for r, lab in zip(rs, labels) if lab.first_error is not None]
    assert done.metrics["kept"] == len(kept) and done.metrics["unparsed"] == len(rs) - len(kept)
    if kept:
        assert done.metrics["audit"]["first_error_accuracy"] == sum(r.true_first_error == lab.first_error
                                                                    for r, lab in kept) / len(kept)


def args(tmp_path, problems, samples, source):
    return argparse.Namespace(source=source, problems=str(problems), samples=str(samples), mc=str(tmp_path / "mc.jsonl"),
                              out=str(tmp_path / f"{source}.jsonl"), metrics=None)


def test_reference_guided_judge_refuses_a_problem_without_a_reference(tmp_path):
    """A problem with no solution graph and no benchmark row in label_methods.reference.solutions: one line naming
    the problems file, its line and field, before any model loads (the judge named here does not exist)."""
    probs, rs = toy_responses(1)
    bare = Problem(id="gsm8k-7", source="gsm8k", question="What is 2 + 2?", gold_answer="4")
    write_jsonl(tmp_path / "problems.jsonl", [*probs.values(), bare])
    write_jsonl(tmp_path / "samples.jsonl", [*rs, Response(problem_id="gsm8k-7", response_id="g", steps=["4"], answer="4",
                                                             correct=True)])
    cfg = {"label_methods": LabelMethodsConfig(sources=["judge_ref"]), "judge": BackendConfig(model="no/such-model"),
           "label_judge": LabelJudgeConfig(), "engine": EngineConfig()}
    with pytest.raises(DataError, match=r"problems\.jsonl:2: field 'meta': problem 'gsm8k-7' has no reference solution"):
        prepare_method(args(tmp_path, tmp_path / "problems.jsonl", tmp_path / "samples.jsonl", "judge_ref"), cfg)
    # a GSM8K row holding its worked answer is a reference: the same inputs then pass
    (tmp_path / "gsm8k.jsonl").write_text('{"question": "x", "answer": "2 + 2 = 4\\n#### 4", "idx": 7}\n')
    cfg["label_methods"] = LabelMethodsConfig(reference=ReferenceJudgeConfig(solutions={"gsm8k": str(tmp_path / "gsm8k.jsonl")}))
    p = prepare_method(args(tmp_path, tmp_path / "problems.jsonl", tmp_path / "samples.jsonl", "judge_ref"), cfg)
    assert p.refs["gsm8k-7"] == "2 + 2 = 4"


def test_bad_method_params_are_one_line():
    with pytest.raises(ParamsError, match=r"label_methods.sources: unknown \['mc_magic'\]"):
        LabelMethodsConfig(sources=["mc_magic"])
    with pytest.raises(ParamsError, match="label_methods.active.pred_threshold"):
        ActiveConfig(pred_threshold=0.2)
    # a PRM folder train_prm makes would be no DVC dependency (a cycle through prm_data): the members are sources
    with pytest.raises(ParamsError, match=r"label_methods.active.ensemble\[1\]: 'models/prm/mc_soft' is not one of the "
                                          r"label sources .* a cycle"):
        ActiveConfig(ensemble=["mc_hard", "models/prm/mc_soft"])
    with pytest.raises(ParamsError, match="label_methods.active.ensemble: a member is named twice"):
        ActiveConfig(ensemble=["mc_hard", "mc_hard"])


def test_activeprm_trust_rule_by_hand():
    """ActivePRM's rule: certain when every step up to the ensemble's first error (mean < 0.5) is confident
    (mean >= 0.95 or <= 0.05) with the members' std <= 0.05; steps after that first error are not looked at."""
    assert trusted([[0.99, 0.02, 0.5], [0.98, 0.01, 0.9]], 0.95, 0.05) == (True, 1)
    assert trusted([[0.99, 0.6], [0.98, 0.7]], 0.95, 0.05) == (False, -1)  # confident of nothing at step 1
    assert trusted([[0.99, 0.99], [0.99, 0.80]], 0.9, 0.05) == (False, -1)  # the members disagree at step 1
    assert trusted([[0.97, 0.99]], 0.95, 0.05) == (True, -1)  # one member: its own confidence only


def constant_prm(toy: dict, out: Path, logit: float) -> str:
    """A PRM from the toy policy whose head says P(correct) = sigmoid(logit) at every step (its last layer's
    weights zero, its biases apart by `logit`): an ensemble member whose confidence is known."""
    import torch

    from prmlab.prms.model import init_from_policy, prepare_tokenizer

    tok = prepare_tokenizer(toy["policy"])
    model = init_from_policy(toy["policy"], tok)
    with torch.no_grad():
        model.score[2].weight.zero_()
        model.score[2].bias.copy_(torch.tensor([0.0, logit]))
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return str(out)


def test_uncertainty_selected_judging_sends_only_the_uncertain_to_the_judge(tmp_path):
    """Two ensembles of real PRMs (constant heads) on 2 problems' right and flawed solutions: one sure every step is
    right (P = 0.99 twice) judges nothing and keeps nothing; one that disagrees with itself (0.99 and 0.5) sends every
    response to the judge, whose kept first errors are scored against the verifier."""
    probs, rs = toy_responses(2)
    sure = [constant_prm(COMMITTED, tmp_path / f"sure{i}", 4.6) for i in range(2)]
    torn = [sure[0], constant_prm(COMMITTED, tmp_path / "half", 0.0)]
    for name, ensemble, want in (("sure", sure, 0), ("torn", torn, len(rs))):
        cfg = {"label_methods": LabelMethodsConfig(), "engine": EngineConfig(),
               "judge": BackendConfig(model=str(ROOT / "models/judge"), batch_size=8),
               "label_judge": LabelJudgeConfig(max_tokens=256)}
        from prmlab.prompts import load_template

        p = MethodInputs("judge_active", ShardWriter(tmp_path / f"{name}.jsonl"), probs, rs, template=load_template("critic"),
                         ensemble=tuple(ensemble))
        m = label_method(cfg, p, None).metrics
        labels = read_jsonl(tmp_path / f"{name}.jsonl", MethodLabel)
        assert m["selected"] == want == sum(lab.evidence["selected"] for lab in labels), name
        assert all(lab.labels == [] for lab in labels if not lab.evidence["selected"])
        kept = [(r, lab) for r, lab in zip(rs, labels) if lab.first_error is not None]
        if kept:
            assert m["audit"]["first_error_accuracy"] == sum(r.true_first_error == lab.first_error
                                                             for r, lab in kept) / len(kept)


def test_uncertainty_selected_judging_trains_its_own_members_and_resumes_without_retraining(tmp_path, capfd):
    """judge_active's members are trained by the stage itself (every input a DVC dependency): prepare_method builds
    each member's set from label_mc's labels (here the verifier's, as files), the core trains them from the committed
    toy policy for real (a few steps), scores every response and keeps the scores beside the shards: a rerun on
    the same shards (a killed run) neither retrains nor rescores, and a changed trainer setting discards them."""
    import dataclasses

    from prmlab.pipeline.label_methods import member_scores
    from prmlab.prms.training_config import TrainPRMConfig

    probs, rs = toy_responses(3)
    write_jsonl(tmp_path / "problems.jsonl", probs.values())
    write_jsonl(tmp_path / "samples.jsonl", rs)
    write_jsonl(tmp_path / "mc.jsonl", [MCLabel(r.response_id, [float(x) for x in t], t, r.true_first_error, 8,
                                                content_md5=r.content_md5())
                                        for r in rs if (t := labels_from_first_error(len(r.steps), r.true_first_error))])
    cfg = {"label_methods": LabelMethodsConfig(sources=["judge_active"], active=ActiveConfig(steps=3)),
           "judge": BackendConfig(model=str(ROOT / "models/judge"), batch_size=8), "label_judge": LabelJudgeConfig(),
           "engine": EngineConfig(), "policy": BackendConfig(model=COMMITTED["policy"]),
           "train_prm": TrainPRMConfig(sources=["judge"], batch_size=2)}
    a = args(tmp_path, tmp_path / "problems.jsonl", tmp_path / "samples.jsonl", "judge_active")
    p = prepare_method(a, cfg)
    assert list(p.members) == ["mc_hard", "mc_soft", "outcome"]
    assert [len(p.members[s]) for s in p.members] == [len(rs)] * 3 and p.members["mc_soft"][0].soft is not None
    scores, seconds = member_scores(cfg, p)
    assert len(scores) == 3 and [len(m) for m in scores] == [len(rs)] * 3 and seconds > 0
    assert all(len(s) == len(r.steps) and all(0 <= x <= 1 for x in s) for m in scores for s, r in zip(m, rs))
    assert "training ensemble member outcome" in capfd.readouterr().err
    p.writer._lock.close()  # the run is killed here: its shards and the ensemble's scores stay
    p = prepare_method(a, cfg)
    assert member_scores(cfg, p) == (scores, 0.0)  # read back: not trained again
    assert "training ensemble member" not in capfd.readouterr().err
    p.writer._lock.close()
    same = (p.writer.dir / "FINGERPRINT").read_text()
    cfg["train_prm"] = dataclasses.replace(cfg["train_prm"], sources=["judge", "mc_hard"])  # no setting of a member
    q = prepare_method(a, cfg)
    assert (q.writer.dir / "FINGERPRINT").read_text() == same
    q.writer._lock.close()
    cfg["train_prm"] = dataclasses.replace(cfg["train_prm"], lr=1e-4)  # another trainer: trained and scored again
    p = prepare_method(a, cfg)
    assert (p.writer.dir / "FINGERPRINT").read_text() != same
    assert member_scores(cfg, p)[1] > 0 and "training ensemble member mc_hard" in capfd.readouterr().err
