"""The biases the PRM paper reports: stage analyze_bias's config and core.

Where each PRM's lowest step score sits (prmlab.analysis.metrics.min_position_stats: on the final step, for a
PRM that judges the answer rather than the process), over eval_bon's step scores; and how often the
policy reaches a right answer through a flawed step, where the verifier's labels exist.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from prmlab.analysis.metrics import flawed_among_correct, min_position_stats, read_score_rows
from prmlab.core.io import read_jsonl
from prmlab.core.params import check
from prmlab.core.records import Response
from prmlab.core.result import Done


@dataclass(frozen=True)
class AnalyzeBiasConfig:
    bins: int = 5

    def __post_init__(self):
        check(self.bins >= 2, "analyze_bias.bins must be >= 2")


def policy_flaws(responses: list[Response]) -> dict:
    lab = [r for r in responses if r.true_first_error is not None]
    if not lab:
        return {}
    ok = [r for r in lab if r.correct]
    kinds: dict[str, int] = defaultdict(int)
    for r in ok:
        if r.true_first_error != -1:
            kinds[r.error_kind or "unknown"] += 1
    return {"accuracy": 100.0 * len(ok) / len(lab),
            "flawed_among_correct_pct": 100.0 * flawed_among_correct(lab),
            "flaw_kinds_among_correct": dict(kinds), "responses": len(lab)}


@dataclass(frozen=True)
class BiasInputs:
    """What stage analyze_bias works on (`prepare_bias`)."""
    responses: list[Response]  # the evaluation responses
    by_prm: dict[str, list[dict]]  # eval_bon's score rows, by PRM


def prepare_bias(a, cfg: dict) -> BiasInputs:
    """The responses, and eval_bon's score rows per PRM."""
    by_prm: dict[str, list[dict]] = defaultdict(list)
    responses = read_jsonl(a.samples, Response)
    for r in read_score_rows(a.scores, ("prm", "problem_id", "response_id")):
        by_prm[r["prm"]].append(r)
    return BiasInputs(responses, dict(by_prm))


def analyze_bias(cfg: dict, data: BiasInputs, run) -> Done:
    """Stage analyze_bias: min-score positions per PRM (sorted by name) and the policy's flaws."""
    responses, by_prm = data.responses, data.by_prm
    m = {"prms": {name: min_position_stats(rs, cfg["analyze_bias"].bins) for name, rs in sorted(by_prm.items())},
         "policy": policy_flaws(responses)}
    return Done(m, "min score on the final step (BoN-selected): " + ", ".join(
        f"{k} {v['min_on_last_step_bon_selected']:.0f}%" for k, v in m["prms"].items())
        + (f"; policy flawed-among-correct {m['policy']['flawed_among_correct_pct']:.0f}%" if m["policy"] else ""))
