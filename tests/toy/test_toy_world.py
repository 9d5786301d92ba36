import os
import random

import pytest

from prmlab.core.records import Problem
from prmlab.toy.world import FLAW_KINDS, canonical_solution, make_flawed, make_problems, verify

# Ava has 7 apples. She buys 3 packs of 4. She gives away 5. -> 3*4=12, 7+12=19, 19-5=14
P = Problem(id="p", source="toy", question="Ava has 7 apples. Ava buys 3 packs of 4 apples. Ava gives away 5. How many?",
            gold_answer="14", meta={"quantities": [7, 3, 4, 5], "nodes": [
                {"op": "*", "args": [["q", 1], ["q", 2]], "value": 12, "say": "buys 3 packs of 4"},
                {"op": "+", "args": [["q", 0], ["n", 0]], "value": 19, "say": "in all"},
                {"op": "-", "args": [["n", 1], ["q", 3]], "value": 14, "say": "gives away 5"}]})


@pytest.mark.parametrize("steps,first_error,kind,final_ok", [
    (["3 * 4 = 12", "7 + 12 = 19", r"19 - 5 = 14, so the answer is \boxed{14}."], -1, None, True),
    (["4 * 3 = 12", "12 + 7 = 19", r"19 - 5 = 14. \boxed{14}"], -1, None, True),  # commutative order is fine
    (["3 * 4 = 12", "7 + 12 = 20", r"20 - 5 = 15, so \boxed{15}."], 1, "slip", False),  # 7 + 12 != 20
    (["3 * 4 = 12", "7 + 12 = 19", r"19 - 4 = 15, so \boxed{15}."], 2, "operand", False),  # 4 is not what is given away
    (["3 * 4 = 12", "8 + 12 = 20", r"20 - 5 = 15 \boxed{15}"], 1, "operand", False),  # invented operand 8
    (["7 + 12 = 19", r"19 - 5 = 14 \boxed{14}"], 0, "operand", True),  # skipped step: 12 never derived
    (["3 * 4 = 13", "7 + 13 = 19", r"19 - 5 = 14 \boxed{14}"], 0, "slip", True),  # compensating slips: right answer
    (["3 * 4 = 12", "hmm, let me think", r"\boxed{14}"], 1, "unparseable", True),
    (["3 * 4 = 12", "7 + 12 = 19", r"19 - 5 = 14, so the answer is \boxed{19}."], 2, "answer", False),
    (["3 * 4 = 12", "7 + 12 = 19", "19 - 5 = 14"], 2, "answer", False),  # no final answer
    (["3 * 4 = 12", r"\boxed{14}"], 1, "answer", True),  # right number, never derived
    ([], 0, "empty", False),
])
def test_verifier_table(steps, first_error, kind, final_ok):
    v = verify(P, steps)
    assert (v.first_error, v.kind, v.final_correct) == (first_error, kind, final_ok)


def test_canonical_solutions_verify_and_generator_is_deterministic():
    a, b = make_problems(7, 300, "t"), make_problems(7, 300, "t")
    assert a == b and make_problems(8, 5, "t") != a[:5]
    for p in a:
        text = canonical_solution(p)
        assert verify(p, text).first_error == -1
        assert text.split("\n\n")[-1].endswith(f"\\boxed{{{p.gold_answer}}}.")
        assert 2 <= len(p.meta["nodes"]) <= 5


def test_flaw_generators_mostly_agree_with_the_verifier():
    rng = random.Random(0)
    probs = make_problems(3, 300, "t")
    for kind in FLAW_KINDS:
        agree, right_answer = 0, 0
        for p in probs:
            steps, fe = make_flawed(rng, p, kind)
            v = verify(p, steps)
            agree += v.first_error == fe
            right_answer += v.final_correct
        assert agree / len(probs) > 0.85, kind
        if kind in ("skip", "compensate"):  # "correct final answer through a flawed step"
            assert right_answer == len(probs), kind
        if kind in ("slip", "answer"):
            assert right_answer / len(probs) < 0.1, kind


def test_tokenizer_round_trip_and_step_token():
    from prmlab.toy.tokenizer import build_tokenizer

    tok = build_tokenizer([canonical_solution(p) + p.question for p in make_problems(0, 50, "t")], 400)
    for text in ["3 * 4 = 12\n\n\\boxed{14}", r"$\frac{\sqrt{3}}{2}$ é 中文 ∫", "a<extra_0>b"]:
        assert tok.decode(tok.encode(text)) == text
    assert len(tok.encode("<extra_0>")) == 1
    assert tok.convert_ids_to_tokens(tok.encode("12")) == ["1", "2"]  # digits stay single tokens
    chat = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert chat == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_tokenizer_is_the_committed_one_whatever_the_prompts_say(tmp_path):
    """Bootstrap@toy's tokenizer learns from prompt texts frozen in prmlab/toy/tokenizer_corpus.json,
    never from the prompt files, so rewording a prompt keeps the committed models valid: with every prompt
    file reworded, bootstrap's corpus still builds the committed models' tokenizer, byte for byte."""
    import shutil
    import subprocess
    import sys

    from conftest import ROOT

    pkg = tmp_path / "src" / "prmlab"  # a copy of the library, in a fresh process: every way of reading a prompt sees it
    shutil.copytree(ROOT / "src" / "prmlab", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    for f in (pkg / "prompts").glob("*.txt"):
        f.write_text("Reworded. " + f.read_text(encoding="utf-8"), encoding="utf-8")
    build = ("import sys; from prmlab.core.params import load_params as L; from prmlab.toy import recipes as r, world as w; "
             "from prmlab.toy.tokenizer import build_tokenizer; c = L('toy_models', r.ToyModelsConfig, sys.argv[1]); "
             "probs = r.training_problems(c.seed, L('toy', w.ToyWorldConfig, sys.argv[1]), c.corpus, 0, c.eval_problems); "
             "build_tokenizer(r.tokenizer_corpus(probs['corpus']), c.vocab_size).save_pretrained(sys.argv[2])")  # as bootstrap does
    p = subprocess.run([sys.executable, "-c", build, str(ROOT / "params.yaml"), str(tmp_path / "tok")],
                       env={**os.environ, "PYTHONPATH": str(tmp_path / "src")}, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        assert (tmp_path / "tok" / name).read_bytes() == (ROOT / "models" / "base" / name).read_bytes(), name


@pytest.mark.parametrize("steps,checks", [
    (["3 * 4 = 12", "7 + 12 = 19", r"19 - 5 = 14, so the answer is \boxed{14}."],
     ["3 * 4 -> 12, claimed 12, ok", "7 + 12 -> 19, claimed 19, ok", "19 - 5 -> 14, claimed 14, ok; answer 14, ok"]),
    (["3 * 4 = 12", "7 + 12 = 20", r"20 - 5 = 15, so \boxed{15}."],
     ["3 * 4 -> 12, claimed 12, ok", "7 + 12 -> 19, claimed 20, wrong"]),  # stops at the first wrong step
    (["3 * 4 = 12", "8 + 12 = 20", r"20 - 5 = 15 \boxed{15}"],
     ["3 * 4 -> 12, claimed 12, ok", "8 + 12 = 20, but 8 is neither given nor derived, wrong"]),
    (["3 * 4 = 12", "7 + 12 = 19", r"19 - 4 = 15, so \boxed{15}."],
     ["3 * 4 -> 12, claimed 12, ok", "7 + 12 -> 19, claimed 19, ok", "19 - 4 = 15, not a step this problem needs, wrong"]),
    (["3 * 4 = 12", "7 + 12 = 19", r"19 - 5 = 14, so the answer is \boxed{19}."],
     ["3 * 4 -> 12, claimed 12, ok", "7 + 12 -> 19, claimed 19, ok", "19 - 5 -> 14, claimed 14, ok; answer 19, the result is 14, wrong"]),
    (["3 * 4 = 12", r"\boxed{14}"], ["3 * 4 -> 12, claimed 12, ok", "answer 14 before the last computation, wrong"]),
    (["3 * 4 = 12", "7 + 12 = 19", "19 - 5 = 14"],
     ["3 * 4 -> 12, claimed 12, ok", "7 + 12 -> 19, claimed 19, ok", "19 - 5 -> 14, claimed 14, ok; no answer given, wrong"]),
    (["3 * 4 = 12", "hmm"], ["3 * 4 -> 12, claimed 12, ok", "no computation and no answer, wrong"]),
    (["12 / 5 = 2"], ["12 / 5 -> 2.4, claimed 2, wrong"]),
])
def test_checks_redo_each_step_up_to_the_first_wrong_one(steps, checks):
    from prmlab.toy.world import check_steps

    verdict, got = check_steps(P, steps)
    assert got == checks
    assert verdict == verify(P, steps) and len(got) == (verdict.first_error + 1 if verdict.first_error >= 0 else len(steps))


def test_systematic_flaws_are_one_habitual_value():
    """The policy's flaws: a result or operand one too many, a wrong answer is the previous result."""
    rng = random.Random(0)
    for p in make_problems(4, 100, "t"):
        vals = [n["value"] for n in p.meta["nodes"]]
        steps, fe = make_flawed(rng, p, "slip", systematic=True)
        claimed = int(steps[fe].split("= ")[1].split(",")[0])
        assert claimed == vals[fe] + 1 and verify(p, steps).first_error == fe
        steps, fe = make_flawed(rng, p, "answer", systematic=True)
        assert steps[-1].endswith(f"\\boxed{{{vals[-2] if vals[-2] != vals[-1] else vals[-1] + 1}}}.")


def test_difficulty_mix_adds_hard_problems_and_keeps_the_old_stream():
    """A share of hard problems (longer, larger numbers than the models trained on); with a
    share of 0 the problems are exactly the old stream's, so committed models and studies stay valid."""
    import random as _random

    from prmlab.toy.world import canonical_steps, make_problem, make_problems, verify

    rng = _random.Random(11)
    old = [make_problem(rng, f"x-{i}") for i in range(50)]
    assert [p.question for p in make_problems(11, 50, "x")] == [p.question for p in old]
    mixed = make_problems(11, 400, "x", hard_share=0.3, hard_max_steps=8, hard_max_value=60)
    hard = [p for p in mixed if p.meta.get("hard")]
    assert 80 <= len(hard) <= 160  # 30% of 400 = 120, binomial sd 9.2
    assert all(5 <= len(p.meta["nodes"]) <= 8 for p in hard)
    assert max(n["value"] for p in hard for n in p.meta["nodes"]) > 25  # larger numbers than the models saw
    assert all(len(p.meta["nodes"]) <= 5 and not p.meta.get("hard") for p in mixed if p not in hard)
    assert all(verify(p, canonical_steps(p)).first_error == -1 for p in hard)  # the verifier checks them exactly


def test_a_grader_blind_to_operands_checks_arithmetic_only():
    """A judge blind spot: with check_steps(blind={"operand"}) a misread quantity passes and the
    error surfaces only where the answer is wrong; judge_pairs teaches that reply to a share of them."""
    import random as _random

    from prmlab.toy.recipes import judge_pairs
    from prmlab.toy.world import check_steps, make_flawed, make_problems

    probs = [p for p in make_problems(3, 200, "b", 3, 5)]
    seen = 0
    for p in probs:
        steps, at = make_flawed(_random.Random(p.id), p, "operand")
        v, _ = check_steps(p, steps)
        if v.kind != "operand":
            continue
        seen += 1
        b, checks = check_steps(p, steps, frozenset({"operand"}))
        # never flagged as a misread quantity; at best caught later (or on the same, final step) by its answer
        assert b.kind != "operand" and (b.first_error >= v.first_error or b.first_error == -1)
        assert all("neither given nor derived" not in c and "not a step this problem needs" not in c for c in checks)
    assert seen >= 50
    render = lambda msgs: msgs[-1]["content"]  # noqa: E731
    plain = judge_pairs(probs, render, 0, 1.0, {"operand": 1.0}, "critic", "{problem} {tagged_response}")
    assert plain == judge_pairs(probs, render, 0, 1.0, {"operand": 1.0}, "critic", "{problem} {tagged_response}", blind_spots={})
    blind = judge_pairs(probs, render, 0, 1.0, {"operand": 1.0}, "critic", "{problem} {tagged_response}",
                        blind_spots={"operand": 1.0})
    taught = sum("neither given nor derived" in t or "not a step this problem needs" in t for _, t in plain)
    assert taught >= 100 and sum("neither given nor derived" in t or "not a step this problem needs" in t for _, t in blind) == 0
