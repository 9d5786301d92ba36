"""Stage analyze_bias: the biases the PRM paper reports.

- For every PRM: where the lowest step score sits. The share of Best-of-N-selected responses (by
  `product`) and of all responses whose minimum is on the final step (paper Fig. 8: 17.5% for
  Qwen2.5-Math-PRM-7B, over 40% for several MC-trained PRMs: such a PRM is judging the answer, not
  the process), and the distribution of min-score positions relative to response length.
- The policy's rate of correct answers reached through flawed steps (paper Fig. 6), where the
  verifier's labels exist.

Inputs: --samples (eval responses), --scores (eval_bon's step scores). Params: `analyze_bias`.
Outputs: --metrics JSON (also the table the report uses).
Run: python -m stages.analyze_bias --samples data/eval_samples/eval.jsonl --scores data/eval/bon_scores.jsonl --metrics metrics/analyze_bias.json
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from prmlab.io import read_jsonl, write_json
from prmlab.metrics import min_position_stats
from prmlab.params import ParamsError, check, load_params
from prmlab.records import Response
from prmlab.tracking import stage_run, summary


@dataclass(frozen=True)
class AnalyzeBiasConfig:
    bins: int = 5

    def __post_init__(self):
        check(self.bins >= 2, "analyze_bias.bins must be >= 2")


def read_scores(path: str) -> list[dict]:
    """eval_bon's score rows, checked: a NaN or an infinite score would silently move the argmin
    (NaN compares false with everything), and a value outside [0, 1] is not a PRM's probability."""
    import math

    from prmlab.io import DataError, read_jsonl_lines

    rows = []
    for ln, r in read_jsonl_lines(path):
        for k in ("prm", "problem_id", "response_id"):
            if not isinstance(r.get(k), str):
                raise DataError(f"{path}:{ln}: field '{k}': expected a string, got {r.get(k)!r:.60}")
        sc = r.get("step_scores")
        if not isinstance(sc, list):
            raise DataError(f"{path}:{ln}: field 'step_scores': expected a list of probabilities, got {sc!r:.60}")
        for i, v in enumerate(sc):
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not 0 <= v <= 1:
                raise DataError(f"{path}:{ln}: field 'step_scores[{i}]': {v!r} is not a probability in [0, 1]")
        rows.append(r)
    return rows


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
            "flawed_among_correct": 100.0 * sum(r.true_first_error != -1 for r in ok) / max(len(ok), 1),
            "flaw_kinds_among_correct": dict(kinds), "responses": len(lab)}


def main() -> None:
    from stages._common import fail, parse_args

    a = parse_args("bias analysis", samples="eval responses JSONL", scores="eval_bon step scores JSONL", metrics="metrics JSON")
    try:
        cfg = load_params("analyze_bias", AnalyzeBiasConfig, a.params)
    except ParamsError as e:
        fail("analyze_bias", e)
    responses = read_jsonl(a.samples, Response)
    rows = read_scores(a.scores)
    by_prm: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_prm[r["prm"]].append(r)
    with stage_run("analyze_bias", {"analyze_bias": cfg}, inputs=[a.samples, a.scores]) as run:
        m = {"prms": {name: min_position_stats(rs, cfg.bins) for name, rs in sorted(by_prm.items())},
             "policy": policy_flaws(responses)}
        write_json(a.metrics, m)
        run.metrics(m)
        run.artifact(a.metrics)
    summary("analyze_bias", "min score on the final step (BoN-selected): " + ", ".join(
        f"{k} {v['min_on_last_step_bon_selected']:.0f}%" for k, v in m["prms"].items())
        + (f"; policy flawed-among-correct {m['policy']['flawed_among_correct']:.0f}%" if m["policy"] else ""))


if __name__ == "__main__":
    from stages._common import run_main

    run_main("analyze_bias", main)
