"""Stage problems@toy (toy profile only): the study's synthetic problems, drawn from the toy world.

Three disjoint splits of arithmetic word problems whose every step the verifier checks exactly:
`train` (the policy's responses to these become PRM training data), `eval` (Best-of-N) and
`processbench` (the toy ProcessBench is built from the policy's responses to these). Apart from
bootstrap@toy's models, so a new world seed (a seed study, `make study-seeds`) redraws the problems
in seconds and keeps the committed models. The real profile's counterpart is stages/inputs.py.

Inputs: params `toy` (and `train_prm.sources` against `human_labels`, checked here, the profile's first stage).
Outputs: --problems-dir/{train,eval,processbench}.jsonl and eval_texts.json (the evaluation sets' problem
texts, as inputs@real writes them), --metrics JSON.
Run: python -m stages.problems --problems-dir data/problems --metrics metrics/problems.json
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prmlab.human_labels import check_sources
from prmlab.io import write_json, write_jsonl
from prmlab.params import check, read_params
from prmlab.records import Problem
from prmlab.toy.world import make_problems
from prmlab.tracking import summary

SPLITS = ("train", "eval", "processbench")


@dataclass(frozen=True)
class ToyWorldConfig:
    seed: int = 0
    n_train: int = 160
    n_eval: int = 64
    n_processbench: int = 240
    min_steps: int = 2
    max_steps: int = 5
    # The difficulty mix (issue #26): a share of hard problems, longer and with larger numbers than the
    # models trained on, in every split; the completer often fails from a correct prefix there.
    hard_share: float = 0.0
    hard_max_steps: int = 8
    hard_max_value: int = 60

    def __post_init__(self):
        check(2 <= self.min_steps <= self.max_steps <= 8, "toy.min_steps..max_steps must be within 2..8")
        check(0 <= self.hard_share <= 1, "toy.hard_share must be in [0, 1]")
        check(self.max_steps <= self.hard_max_steps <= 12, "toy.hard_max_steps must be within max_steps..12")
        check(25 <= self.hard_max_value <= 999, "toy.hard_max_value must be within 25..999")
        for n in ("n_train", "n_eval", "n_processbench"):
            check(getattr(self, n) > 0, f"toy.{n} must be > 0")


def world_problems(cfg: ToyWorldConfig) -> dict[str, list[Problem]]:
    # Seeds seed*1000 + 1..3, one per split, so no split's generator stream overlaps another's
    # (bootstrap@toy's training problems use toy_models.seed*1000 + 4..6).
    sizes = {"train": cfg.n_train, "eval": cfg.n_eval, "processbench": cfg.n_processbench}
    prefix = {"train": "train", "eval": "eval", "processbench": "pb"}
    return {split: make_problems(cfg.seed * 1000 + off, sizes[split], f"toy-{prefix[split]}", cfg.min_steps, cfg.max_steps,
                                 cfg.hard_share, cfg.hard_max_steps, cfg.hard_max_value)
            for off, split in enumerate(SPLITS, start=1)}


def main() -> None:
    from prmlab.params import load_params
    from stages._common import parse_args

    a = parse_args(__doc__.splitlines()[0], problems_dir="folder for problem files", metrics="metrics JSON")
    cfg = load_params("toy", ToyWorldConfig, a.params)
    check_sources(read_params(a.params))  # a human label source without its file: named now, not at prm_data
    probs = world_problems(cfg)
    for split, items in probs.items():
        write_jsonl(Path(a.problems_dir) / f"{split}.jsonl", items)
    # The evaluation sets' problem texts (as inputs@real writes them): what training data must not contain.
    write_json(Path(a.problems_dir) / "eval_texts.json", {"toy": [p.question for p in probs["eval"]],
                                                          "processbench_toy": [p.question for p in probs["processbench"]]})
    m = {f"{split}_problems": len(items) for split, items in probs.items()}
    m |= {f"{split}_hard_problems": sum(bool(p.meta.get("hard")) for p in items) for split, items in probs.items()}
    m["mean_steps"] = sum(len(p.meta["nodes"]) for items in probs.values() for p in items) / sum(map(len, probs.values()))
    write_json(a.metrics, m)
    summary("problems", ", ".join(f"{len(v)} {k}" for k, v in probs.items()))


if __name__ == "__main__":
    from stages._common import run_main

    run_main("problems", main)
