"""Stage inputs@real (real profile only): the real data and models the study starts from.

Reads the training problems (GSM8K and MATH train) and the seven Best-of-N benchmarks named in
`real`, drops every training problem whose normalised text equals a ProcessBench or Best-of-N
problem's (counted per evaluation set), loads ProcessBench (a local folder or `hub:Qwen/ProcessBench`),
and writes the manifests of the models named in `policy.model` / `judge.model` (prmlab.manifest).
DVC runs it on every `dvc repro` (`always_changed`: hub names and folders outside the graph cannot
be declared); it takes seconds, and what it writes changes only when the data or models do, so
nothing downstream reruns otherwise. The toy profile's counterpart is stages/bootstrap.py.

Inputs: params `real`, `policy.model`, `judge.model`, `eval_processbench.subsets`; `train_prm.sources` and
`human_labels` are checked against each other here, the profile's first stage.
Outputs: --problems-dir/{train,eval}.jsonl and eval_texts.json (every evaluation set's problem texts,
uncapped: what training data must not contain), --processbench JSONL (ProcessBenchItem), --manifests/{policy,judge}.json, --metrics.
Run: python -m stages.inputs --problems-dir data/problems --processbench data/processbench/items.jsonl --manifests data/models --metrics metrics/inputs.json
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prmlab.data import dedup, load_benchmark, load_processbench
from prmlab.human_labels import check_sources
from prmlab.io import DataError, write_json, write_jsonl
from prmlab.manifest import write_manifests
from prmlab.params import ParamsError, check, load_params, read_params
from prmlab.records import Problem, ProcessBenchItem
from prmlab.tracking import stage_run, summary


@dataclass(frozen=True)
class RealConfig:
    """`name: path` of benchmark files or MATH folders (names as in prmlab.data), and ProcessBench's source."""

    train: dict[str, str] = field(default_factory=dict)
    eval: dict[str, str] = field(default_factory=dict)
    processbench: str = "hub:Qwen/ProcessBench"
    max_train: int = 0  # 0: all
    max_per_benchmark: int = 0  # 0: all
    dedup: bool = True

    def __post_init__(self):
        check(bool(self.train), "real.train must name at least one training set")
        check(bool(self.eval), "real.eval must name at least one Best-of-N benchmark")
        check(self.max_train >= 0 and self.max_per_benchmark >= 0, "real.max_train, real.max_per_benchmark must be >= 0")

    def check_paths(self) -> None:
        """Every file named exists (checked by the stage, so the params load anywhere)."""
        for sec in ("train", "eval"):
            for name, path in getattr(self, sec).items():
                check(Path(path).exists(), f"real.{sec}.{name}: {path} not found")
        if not self.processbench.startswith("hub:"):
            check(Path(self.processbench).is_dir(), f"real.processbench: folder {self.processbench} not found")


def build(cfg: RealConfig, subsets: list[str]) -> tuple[dict[str, list], dict]:
    """Problems per split (train deduplicated against every evaluation set), ProcessBench items, and
    every evaluation set's problem texts ({set name: texts}, uncapped)."""
    evals: list[Problem] = []
    counts: dict = {}
    for name, path in cfg.eval.items():
        rows = load_benchmark(name, path)
        counts[f"eval_{name}"] = len(rows)
        evals += rows[: cfg.max_per_benchmark] if cfg.max_per_benchmark else rows
    pb: list[ProcessBenchItem] = []
    for s in subsets:
        pb += load_processbench(s, cfg.processbench)
    train: list[Problem] = []
    for name, path in cfg.train.items():
        rows = load_benchmark(name, path)
        counts[f"train_{name}"] = len(rows)
        train += rows
    # Against the full benchmarks, not the capped ones: a capped run must not train on what a full one tests.
    # Written out too (eval_texts.json): human_data@<source> drops released labels on these problems.
    eval_texts = {name: [p.question for p in load_benchmark(name, path)] for name, path in cfg.eval.items()}
    eval_texts |= {f"processbench_{s}": [i.problem for i in pb if i.subset == s] for s in subsets}
    if cfg.dedup:
        train, removed = dedup(train, eval_texts)
        counts |= removed
    if cfg.max_train:
        train = train[: cfg.max_train]
    counts |= {"train_problems": len(train), "eval_problems": len(evals), "processbench_items": len(pb),
               "train_without_gold": sum(p.gold_answer is None for p in train),
               "eval_without_gold": sum(p.gold_answer is None for p in evals)}
    return {"train": train, "eval": evals, "processbench": pb, "eval_texts": eval_texts}, counts


def main() -> None:
    from stages._common import fail, parse_args

    a = parse_args(__doc__.splitlines()[0], problems_dir="folder for problem files", processbench="ProcessBench items JSONL",
                   manifests="folder for the models' manifests", metrics="metrics JSON")
    try:
        cfg = load_params("real", RealConfig, a.params)
        cfg.check_paths()
        raw = read_params(a.params)
        check_sources(raw)  # a human label source without its file: named now, not after the labelling stages
        models = {role: str(raw[role]["model"]) for role in ("policy", "judge")}
        subsets = list(raw["eval_processbench"]["subsets"])
        from prmlab.preflight import check_model

        for role, model in models.items():  # a missing folder is named as such, never tried as a hub name
            if raw[role].get("backend", "transformers") != "openai":
                check_model(f"{role}.model", model)
        with stage_run("inputs", {"real": cfg, "models": models}) as run:
            data, m = build(cfg, subsets)
            m["models"] = {r: v["model"] + (" (local)" if v["local"] else "") for r, v in
                           write_manifests(a.manifests, models).items()}
            for split in ("train", "eval"):
                write_jsonl(Path(a.problems_dir) / f"{split}.jsonl", data[split])
            write_jsonl(a.processbench, data["processbench"])
            write_json(Path(a.problems_dir) / "eval_texts.json", data["eval_texts"])
            write_json(a.metrics, m)
            run.metrics({k: v for k, v in m.items() if k != "models"})
            run.artifact(a.metrics)
    except (ParamsError, DataError, FileNotFoundError, KeyError) as e:
        fail("inputs", e)
    summary("inputs", f"{m['train_problems']} training problems ({m.get('removed_total', 0)} removed as evaluation "
            f"problems), {m['eval_problems']} Best-of-N problems over {len(cfg.eval)} benchmarks, "
            f"{m['processbench_items']} ProcessBench items; models: "
            + ", ".join(f"{r}={v}" for r, v in m["models"].items()))


if __name__ == "__main__":
    from stages._common import run_main

    run_main("inputs", main)
