"""History belongs in CHANGELOG.md, not in the code: a comment says the reason itself, a name says what it means.

No issue number (`#26`, `issue 26`, `issues #52`) in src/, flows/, stages/, tests/ or benchmarks/, bar at most three
in src/ where a text the study has already written quotes one (the report stage's own page: changing it would change
an output) and at most three in tests/ and benchmarks/ (two assertions on that page's heading, a benchmark's --help
text); this file, which holds the pattern and its examples, is not scanned; no
name (function, class, variable, argument, attribute) ending in an issue's number (`targets_26`, `AUC_BAR_19`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from import_graph import ROOT

MENTION = re.compile(r"\b[Ii]ssues? ?#?\d+|(?<![&\w/#])#\d{1,3}\b")
THIS = Path(__file__).resolve()  # holds MENTION and the examples it must find
NUMBERED_NAME = re.compile(r"[A-Za-z]_\d{2,3}$")
QUOTES_ALLOWED = 3  # src/: the report stage's page names an issue in three places (its text is an output)
# tests/ and benchmarks/: two assertions quote that page's heading
QUOTED_OUTSIDE_SRC = 2


def files(*folders: str):
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def mentions(folder: str) -> list[str]:
    return [f"{f.relative_to(ROOT)}:{i}: {m.group(0)}" for f in files(folder) if f.resolve() != THIS
            for i, line in enumerate(f.read_text().splitlines(), 1) for m in MENTION.finditer(line)]


def test_no_issue_numbers_in_the_code():
    src = mentions("src")
    assert len(src) <= QUOTES_ALLOWED, src
    assert not mentions("flows") and not mentions("stages"), mentions("flows") + mentions("stages")
    elsewhere = mentions("tests") + mentions("benchmarks")
    assert len(elsewhere) <= QUOTED_OUTSIDE_SRC, elsewhere


def test_no_name_ends_in_an_issue_number():
    named = []
    for f in files("src", "flows", "stages"):
        for node in ast.walk(ast.parse(f.read_text())):
            name = (node.name if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) else
                    node.id if isinstance(node, ast.Name) else node.arg if isinstance(node, ast.arg) else
                    node.attr if isinstance(node, ast.Attribute) else None)
            if name and NUMBERED_NAME.search(name):
                named.append(f"{f.relative_to(ROOT)}:{node.lineno}: {name}")
    assert not named, named


def test_the_checks_see_what_they_look_for():
    assert [m.group(0) for m in MENTION.finditer("(issue #26) issue 30 #52: x &#8212; #1f77b4 a#12")] == \
        ["issue #26", "issue 30", "#52"]
    assert NUMBERED_NAME.search("targets_26") and NUMBERED_NAME.search("AUC_BAR_19") and not NUMBERED_NAME.search("x_1")
