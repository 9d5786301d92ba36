from prmlab.prompts import (
    judge_messages,
    judge_target,
    load_template,
    majority,
    parse_judgement,
    tag_paragraphs,
)


def test_critic_parsing_is_zero_based_and_never_guesses():
    assert parse_judgement("critic", r"... \boxed{2}", 4) == 2
    assert parse_judgement("critic", r"\boxed{-1}", 4) == -1
    assert parse_judgement("critic", r"\boxed{17}", 4) is None  # no such paragraph
    assert parse_judgement("critic", "paragraph 2 is wrong", 4) is None  # no boxed answer
    assert parse_judgement("critic", r"\boxed{two}", 4) is None


def test_paper_parsing_is_one_based():
    text = "Paragraph 1: ok. Correct\nParagraph 2: 3 + 4 = 8 is wrong. Incorrect\nConclusion: Incorrect \\boxed{2}"
    assert parse_judgement("paper", text, 3) == 1
    assert parse_judgement("paper", "Paragraph 1: fine. Correct\nConclusion: Correct", 1) == -1
    assert parse_judgement("paper", "Paragraph 1: Correct\nParagraph 2: Incorrect\nConclusion: Incorrect", 3) == 1
    assert parse_judgement("paper", "Conclusion: Incorrect \\boxed{5}", 3) is None
    assert parse_judgement("paper", "no conclusion", 3) is None


def test_targets_parse_back():
    steps = ["a", "b", "c"]
    for style in ("critic", "paper"):
        for fe in (-1, 0, 2):
            assert parse_judgement(style, judge_target(style, steps, fe), 3) == fe


def test_templates_render():
    for style, base in (("critic", 0), ("paper", 1)):
        t = load_template(style)
        msg = judge_messages(t, style, "What is 1+1?", ["1 + 1 = 2", r"\boxed{2}"])[0]["content"]
        assert f"<paragraph_{base}>\n1 + 1 = 2\n</paragraph_{base}>" in msg
        assert "What is 1+1?" in msg and "{problem}" not in msg and "{tagged_response}" not in msg
    assert tag_paragraphs(["x"], 0) == "<paragraph_0>\nx\n</paragraph_0>"


def test_majority():
    assert majority([2, 2, -1]) == 2
    assert majority([None, None]) is None
    assert majority([-1, 1, None]) == 1  # tie: the stricter verdict (an error) wins
    assert majority([3, 1, 3, 1]) == 1  # tie between errors: the earliest
