import json

import pytest

from prmlab.prompts import (
    critic_sampling_defaults,
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


# The shape of the paper's own example (Appendix C; our wording inside the tags): five paragraphs,
# the error in paragraph 3, and analysis 2 closed by </analysis_3>.
PAPER_EXAMPLE = """<analysis_1>
Paragraph 1 restates the problem correctly.
</analysis_1>
<analysis_2>
Paragraph 2 sets up the equation correctly.
</analysis_3>
<analysis_3>
Paragraph 3 computes 6 * 7 = 48, which is wrong: 6 * 7 = 42; redo the rest from there.
</analysis_3>
<conclusion>
Incorrect
</conclusion>"""


def test_paper_parsing_takes_the_last_analysis_as_the_error():
    assert parse_judgement("paper", PAPER_EXAMPLE, 5) == 2
    incorrect = ("<analysis_1>\n2 + 2 = 4, right.\n</analysis_1>\n<analysis_2>\nFine.\n</analysis_2>\n"
                 "<analysis_3>\n3 * 4 = 12, not 13.\n</analysis_3>\n<conclusion>Incorrect</conclusion>")
    assert parse_judgement("paper", incorrect, 4) == 2
    assert parse_judgement("paper", incorrect, 2) is None  # paragraph 3 does not exist
    assert parse_judgement("paper", "<analysis_0>\nx\n</analysis_0>\n<conclusion>Incorrect</conclusion>", 3) is None
    correct = "<analysis_1>\nok\n</analysis_1>\n<analysis_2>\nok\n</analysis_2>\n<conclusion>\nCorrect\n</conclusion>"
    assert parse_judgement("paper", correct, 2) == -1
    assert parse_judgement("paper", "<conclusion>**Correct.**</conclusion>", 2) == -1


def test_paper_parsing_never_guesses():
    a = "<analysis_1>\nok\n</analysis_1>\n"
    assert parse_judgement("paper", a + "<conclusion>Correctness unclear</conclusion>", 3) is None
    assert parse_judgement("paper", a + "<conclusion>\nCorrect/Incorrect\n</conclusion>", 3) is None
    assert parse_judgement("paper", a + "<conclusion>Mostly correct</conclusion>", 3) is None
    assert parse_judgement("paper", a + "Conclusion: Incorrect", 3) is None  # no <conclusion> block
    assert parse_judgement("paper", a + "<conclusion>Incorrect", 3) is None  # cut off
    assert parse_judgement("paper", "<conclusion>Incorrect</conclusion>", 3) is None  # which paragraph?
    assert parse_judgement("paper", "no conclusion", 3) is None
    # Only the last conclusion counts; analyses written after it do not.
    two = a + "<conclusion>Correct</conclusion>\n<analysis_2>\nwait\n</analysis_2>\n<conclusion>Incorrect</conclusion>"
    assert parse_judgement("paper", two, 3) == 1
    assert parse_judgement("paper", a + "<conclusion>Incorrect</conclusion>\n<analysis_3>\n</analysis_3>", 3) == 0


def test_paper_parsing_ignores_boxed_numbers_in_analyses():
    text = ("<analysis_1>\nThe total is \\boxed{3}, correct.\n</analysis_1>\n<analysis_2>\nIt should be \\boxed{1}, "
            "not 2.\n</analysis_2>\n<conclusion>Incorrect</conclusion>")
    assert parse_judgement("paper", text, 4) == 1
    assert parse_judgement("paper", text.replace("Incorrect</conclusion>", "Correct</conclusion>"), 4) == -1
    # and the critic still reads its last \boxed{} as a 0-based index, whatever the prose says
    assert parse_judgement("critic", "<conclusion>Incorrect</conclusion> \\boxed{1} then \\boxed{3}", 4) == 3


def test_targets_parse_back():
    steps = ["a", "b", "c"]
    for style in ("critic", "paper"):
        for fe in (-1, 0, 1, 2):
            assert parse_judgement(style, judge_target(style, steps, fe), len(steps)) == fe
    assert judge_target("critic", steps, 1) == "The earliest error is in \\boxed{1}."
    assert judge_target("paper", steps, 1) == (
        "<analysis_1>\nStep 1 is correct.\n</analysis_1>\n<analysis_2>\nStep 2 is incorrect.\n</analysis_2>\n"
        "<conclusion>Incorrect</conclusion>")
    assert judge_target("paper", ["a"], -1) == "<analysis_1>\nStep 1 is correct.\n</analysis_1>\n<conclusion>Correct</conclusion>"
    # With the checks a careful judge writes first (the toy judge's format): one per paragraph up to the verdict.
    checks = ["1 + 2 -> 3, claimed 3, ok", "3 * 2 -> 6, claimed 7, wrong"]
    assert judge_target("critic", steps, 1, checks) == (
        "0: 1 + 2 -> 3, claimed 3, ok\n1: 3 * 2 -> 6, claimed 7, wrong\nThe earliest error is in \\boxed{1}.")
    assert judge_target("paper", steps, 1, checks) == (
        "<analysis_1>\n1 + 2 -> 3, claimed 3, ok\n</analysis_1>\n<analysis_2>\n3 * 2 -> 6, claimed 7, wrong\n</analysis_2>\n"
        "<conclusion>Incorrect</conclusion>")
    for style in ("critic", "paper"):
        assert parse_judgement(style, judge_target(style, steps, 1, checks), 3) == 1
    with pytest.raises(ValueError, match="2 checks for 3 paragraphs"):
        judge_target("critic", steps, -1, checks)


def test_templates_render():
    for style, base in (("critic", 0), ("paper", 1)):
        t = load_template(style)
        msgs = judge_messages(t, style, "What is 1+1?", ["1 + 1 = 2", r"\boxed{2}"])
        assert len(msgs) == 1 and msgs[0]["role"] == "user"
        msg = msgs[0]["content"]
        assert f"<paragraph_{base}>\n1 + 1 = 2\n</paragraph_{base}>\n\n<paragraph_{base + 1}>\n" in msg
        assert "What is 1+1?" in msg and "{" not in msg.replace(r"\boxed{", "").replace("{}", "")
    paper = judge_messages(load_template("paper"), "paper", "What is 1+1?", ["x"])[0]["content"]
    assert "<math_problem>\nWhat is 1+1?\n</math_problem>" in paper
    assert "<analysis_k>" in paper and "<conclusion>Incorrect</conclusion>" in paper
    assert tag_paragraphs(["x"], 0) == "<paragraph_0>\nx\n</paragraph_0>"
    assert tag_paragraphs(["x", "y"], 1) == "<paragraph_1>\nx\n</paragraph_1>\n\n<paragraph_2>\ny\n</paragraph_2>"
    assert tag_paragraphs([], 0) == ""


def test_template_file_is_read_stripped_and_takes_either_problem_placeholder(tmp_path):
    plain, nl = tmp_path / "plain.txt", tmp_path / "nl.txt"
    plain.write_text("Q: {problem}\n{tagged_response}\nAnswer in \\boxed{{}}.", encoding="utf-8")
    nl.write_text("Q: {problem}\n{tagged_response}\nAnswer in \\boxed{{}}.\n", encoding="utf-8")
    a = judge_messages(load_template("critic", str(plain)), "critic", "p", ["s"])
    assert a == judge_messages(load_template("critic", str(nl)), "critic", "p", ["s"])
    assert a[0]["content"] == "Q: p\n<paragraph_0>\ns\n</paragraph_0>\nAnswer in \\boxed{}."
    tagged = tmp_path / "tagged.txt"
    tagged.write_text("[P]\n{tagged_problem}\n[S]\n{tagged_response}", encoding="utf-8")
    out = judge_messages(load_template("paper", str(tagged)), "paper", "p", ["s"])[0]["content"]
    assert out == "[P]\n<math_problem>\np\n</math_problem>\n[S]\n<paragraph_1>\ns\n</paragraph_1>"


def test_critic_sampling_defaults_follow_run_eval():
    # Hand-checked against ProcessBench's run_eval.py: greedy without voting; with voting
    # Qwen2.5-Math models T=0.7, top_p=0.8, top_k=20 and other models T=1.0, top_p=0.9.
    assert critic_sampling_defaults("Qwen/Qwen2.5-Math-72B-Instruct", 8) == (0.7, 0.8, 20)
    assert critic_sampling_defaults("/ckpt/qwen2.5-math-7b-instruct", 8) == (0.7, 0.8, 20)
    assert critic_sampling_defaults("Qwen/Qwen2.5-72B-Instruct", 8) == (1.0, 0.9, -1)
    assert critic_sampling_defaults("meta-llama/Llama-3.3-70B-Instruct", 8) == (1.0, 0.9, -1)
    assert critic_sampling_defaults("Qwen/Qwen2.5-Math-72B-Instruct", 1) == (0.0, 1.0, -1)
    assert critic_sampling_defaults("Qwen/Qwen2.5-72B-Instruct", 1) == (0.0, 1.0, -1)
    # explicit values win; unset ones still come from the family
    assert critic_sampling_defaults("Qwen/Qwen2.5-Math-7B-Instruct", 8, 0.5) == (0.5, 0.8, 20)
    assert critic_sampling_defaults("Qwen/Qwen2.5-Math-7B-Instruct", 8, top_k=-1) == (0.7, 0.8, -1)
    assert critic_sampling_defaults("models/judge", 1, 0.6) == (0.6, 0.9, -1)
    assert critic_sampling_defaults("models/judge", 4, top_p=0.95) == (1.0, 0.95, -1)


def test_eval_processbench_config_resolves_critic_sampling():
    from prmlab.core.params import ParamsError
    from prmlab.pipeline.processbench import EvalPBConfig

    sp = EvalPBConfig(critic_n=8).critic_sampling("Qwen/Qwen2.5-Math-72B-Instruct")
    assert (sp.n, sp.temperature, sp.top_p, sp.top_k) == (8, 0.7, 0.8, 20)
    sp = EvalPBConfig(critic_n=8).critic_sampling("Qwen/Qwen2.5-72B-Instruct")
    assert (sp.temperature, sp.top_p, sp.top_k) == (1.0, 0.9, -1)
    sp = EvalPBConfig().critic_sampling("Qwen/Qwen2.5-72B-Instruct")
    assert (sp.n, sp.temperature, sp.top_p, sp.top_k) == (1, 0.0, 1.0, -1)
    with pytest.raises(ParamsError, match="critic_n > 1 needs"):
        EvalPBConfig(critic_n=8, critic_temperature=0.0)
    with pytest.raises(ParamsError, match="critic_top_p"):
        EvalPBConfig(critic_top_p=0.0)


def test_eval_critic_reports_its_sampling_and_uses_its_style(toy):
    """The real (tiny) judge through the real transformers backend, three votes in the paper style."""
    from prmlab.core.records import ProcessBenchItem
    from prmlab.engines.config import BackendConfig
    from prmlab.engines.generation import make_generator
    from prmlab.pipeline.processbench import EvalPBConfig, eval_critic

    item = ProcessBenchItem(id="x", generator="g", subset="toy", problem="What is 2 + 3?", steps=["2 + 3 = 5", "So 5."],
                            label=-1, final_answer_correct=True)
    with make_generator(BackendConfig(model=toy["judge"], batch_size=8)) as gen:
        table, preds = eval_critic(gen, {"toy": [item]}, EvalPBConfig(critic_n=3, critic_style="paper", critic_max_tokens=24),
                                   "Qwen/Qwen2.5-Math-7B-Instruct")
    assert table["sampling"] == {"style": "paper", "template_file": None, "n": 3, "temperature": 0.7,
                                 "top_p": 0.8, "top_k": 20}
    assert preds["toy"][0] in (None, -1, 0, 1)
    assert table["unparsed"] == (preds["toy"][0] is None)


def test_majority():
    assert majority([2, 2, -1]) == 2
    assert majority([None, None]) is None
    assert majority([-1, 1, None]) == 1  # tie: the stricter verdict (an error) wins
    assert majority([3, 1, 3, 1]) == 1  # tie between errors: the earliest


PB_SUBSETS = ("gsm8k", "math", "olympiadbench", "omnimath")


def official_critic_prompt(template_path, problem: str, steps: list[str]) -> str:
    """ProcessBench's run_eval.py construction, re-implemented literally."""
    template = open(template_path).read().strip()
    tagged_response = ''
    for sdx, step in enumerate(steps):
        tagged_response += f'<paragraph_{sdx}>\n{step}\n</paragraph_{sdx}>\n\n'
    tagged_response = tagged_response.strip()
    return template.format(problem=problem, tagged_response=tagged_response)


@pytest.mark.realdata
def test_official_processbench_template_renders_byte_for_byte(tmp_path):
    from conftest import need_data

    tpl = need_data("prompts/processbench_critique_template.txt")
    root = need_data("processbench")
    copy = tmp_path / "critique_template.txt"  # a user's copy, with a trailing newline
    copy.write_text(tpl.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    ours, ours_nl = load_template("critic", str(tpl)), load_template("critic", str(copy))
    n = 0
    for subset in PB_SUBSETS:
        for row in json.loads((root / f"{subset}.json").read_text(encoding="utf-8"))[:20]:
            want = official_critic_prompt(tpl, row["problem"], row["steps"])
            for t in (ours, ours_nl):
                msgs = judge_messages(t, "critic", row["problem"], row["steps"])
                assert msgs == [{"role": "user", "content": want}], (subset, row["id"])
                assert msgs[0]["content"].encode("utf-8") == want.encode("utf-8")
            n += 1
    assert n == 80


@pytest.mark.realdata
def test_paper_judge_prompt_file_renders_tagged_problem_and_one_based_paragraphs():
    from conftest import need_data

    tpl = need_data("prompts/prm_lessons_judge_prompt.txt")
    root = need_data("processbench")
    template = load_template("paper", str(tpl))
    official = open(tpl).read().strip()
    for subset in PB_SUBSETS:
        for row in json.loads((root / f"{subset}.json").read_text(encoding="utf-8"))[:20]:
            tagged = "".join(f"<paragraph_{k}>\n{s}\n</paragraph_{k}>\n\n" for k, s in enumerate(row["steps"], 1)).strip()
            want = official.format(tagged_problem=f"<math_problem>\n{row['problem']}\n</math_problem>",
                                   tagged_response=tagged)
            content = judge_messages(template, "paper", row["problem"], row["steps"])[0]["content"]
            assert content == want, (subset, row["id"])
            assert "{tagged_problem}" not in content and f"<math_problem>\n{row['problem']}\n</math_problem>" in content
            assert content.endswith(f"</paragraph_{len(row['steps'])}>") and "<paragraph_0>" not in content


@pytest.mark.realdata
def test_the_paper_prompts_own_example_reply_parses_to_paragraph_3():
    from conftest import need_data

    text = need_data("prompts/prm_lessons_judge_prompt.txt").read_text(encoding="utf-8")
    # the example reply: the second "<analysis_1>" (the first is the format description) to its conclusion
    start = text.index("<analysis_1>", text.index("<analysis_1>") + 1)
    example = text[start:text.index("</conclusion>", start) + len("</conclusion>")]
    assert "</analysis_3>" in example.split("<analysis_3>")[0]  # analysis 2 closed by </analysis_3>
    assert parse_judgement("paper", example, 5) == 2
