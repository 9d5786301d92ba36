"""prmlab: a reproduction of Qwen's PRM lessons (arXiv 2501.07301) and ProcessBench (arXiv 2412.06559).

The library holds everything that is not orchestration: records and I/O, params, step splitting and
grading, data loaders, the toy world, generation backends, the PRM model and scorers, labelling,
metrics, tracking and plots. Stages (`stages/`) and flows (`flows/`) are thin layers on top.

In a notebook, the names below (`__all__`) are the front door. Each loads its module on first use, so `import
prmlab`, which every stage does, loads none of them: a stage's imports are its DVC dependencies, and a name used
here must not become one.

- a PRM: `load_prm(spec)` (a folder or hub name, or a `PRMSpec`; any released layout, ours, or a generative
  verifier), whose `score([(problem, steps), ...])` gives each step's score in (0, 1);
- ProcessBench: `load_pb_items(path)`, `eval_prm(scorer, {subset: items}, threshold_subset)` (per-subset F1 at 0.5
  and at the threshold tuned on one subset, step AUC), and its metrics `processbench_scores(labels, predictions)`,
  `first_below(step_scores, threshold)` (a PRM's prediction), `best_threshold(step_scores, labels)`;
- PRMBench: `load_prmbench(folder)`, `prmbench_table(items, {id: step_scores})` (its harness's PRMScores);
- a scores file any tool wrote: `score_file(benchmark, path, data)`, the official numbers of either benchmark;
- the MC labeller: `label_responses(generator, problems, responses, LabelMCConfig(...), MCStats())`, with a
  generator from `make_generator(BackendConfig(...))`;
- the configs: `load_params(section, cls)` reads one from params.yaml; `BackendConfig`, `Sampling`,
  `LabelMCConfig`, `TrainPRMConfig`, `EvalPBConfig`, `EvalPRMBenchConfig`.

ProcessBench's F1 of a PRM's step scores on three hand-made items (each labelled with its earliest wrong step,
-1 for none): a PRM predicts the first step it scores below the threshold.

>>> import prmlab
>>> step_scores = [[0.9, 0.8, 0.2], [0.9, 0.7], [0.3, 0.9, 0.9]]
>>> labels = [2, -1, 1]
>>> predictions = [prmlab.first_below(s, 0.5) for s in step_scores]
>>> predictions
[2, -1, 0]
>>> got = prmlab.processbench_scores(labels, predictions)
>>> got["error_acc"], got["correct_acc"], round(got["f1"], 1)
(50.0, 100.0, 66.7)
"""

import importlib

__version__ = "0.1.0"

# name -> the module that defines it, imported on first use (PEP 562)
_HOMES = {
    "load_prm": "prmlab.layouts", "PRMSpec": "prmlab.layouts",
    "load_pb_items": "prmlab.scorefile", "score_file": "prmlab.scorefile",
    "eval_prm": "prmlab.processbench", "EvalPBConfig": "prmlab.processbench",
    "processbench_scores": "prmlab.metrics", "first_below": "prmlab.metrics", "best_threshold": "prmlab.metrics",
    "load_prmbench": "prmlab.prmbench", "prmbench_table": "prmlab.prmbench", "EvalPRMBenchConfig": "prmlab.prmbench",
    "label_responses": "prmlab.labeling", "LabelMCConfig": "prmlab.labeling", "MCStats": "prmlab.labeling",
    "make_generator": "prmlab.generation",
    "load_params": "prmlab.params", "BackendConfig": "prmlab.generation_config", "Sampling": "prmlab.generation_config",
    "TrainPRMConfig": "prmlab.training_config",
}
__all__ = list(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:  # a submodule (`from prmlab import records`) is then imported as usual
        raise AttributeError(f"module 'prmlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
