import threading

from prmlab.core.grading import is_equivalent
from prmlab.core.steps import extract_answer, last_boxed, split_steps


def test_split_steps():
    assert split_steps("a\n\nb\n\n\n\n c \n") == ["a", "b", "c"]
    assert split_steps("  \n\n ") == []


def test_answers():
    assert last_boxed(r"x \boxed{1} then \boxed{\frac{1}{2}}.") == r"\frac{1}{2}"
    assert last_boxed(r"\boxed{a{b}c}") == "a{b}c"
    assert last_boxed(r"\boxed{unclosed") is None
    assert extract_answer("Janet sells 9 eggs.\n#### 1,000") == "1000"
    assert extract_answer("no answer here") is None
    assert extract_answer(r"\fbox{7}") == "7"


def test_equivalence():
    assert is_equivalent("0.5", r"\frac{1}{2}")
    assert is_equivalent("19", "19.0")
    assert is_equivalent(r"\frac{\sqrt{3}}{2}", r"\dfrac{\sqrt 3}{2}")
    assert not is_equivalent("19", "20")
    assert not is_equivalent("19", None)
    assert not is_equivalent(None, "19")
    assert is_equivalent("A", "A")


def test_equivalence_off_main_thread():
    out = {}

    def work():
        out["eq"] = is_equivalent("0.5", r"\frac{1}{2}")
        out["ne"] = is_equivalent("0.5", r"\frac{1}{3}")

    t = threading.Thread(target=work)
    t.start()
    t.join(120)
    assert out == {"eq": True, "ne": False}
