"""The report flags a judge that is no better than always answering -1 (the toy bootstrap's metrics)."""

from __future__ import annotations

import json

import pytest

from stages.report import build


@pytest.mark.parametrize(("acc", "flagged"), [(0.38, True), (0.50, True), (0.70, False)])
def test_report_flags_a_judge_not_clearly_above_the_always_none_baseline(tmp_path, acc, flagged):
    (tmp_path / "bootstrap.json").write_text(json.dumps({"judge_first_error_accuracy": acc, "judge_baseline_always_none": 0.48}))
    md = build(tmp_path, tmp_path / "figures")
    assert ("**Weak judge.**" in md) is flagged
    assert "| judge_first_error_accuracy |" in md
