"""prmlab: a reproduction of Qwen's PRM lessons (arXiv 2501.07301) and ProcessBench (arXiv 2412.06559).

The library holds everything that is not orchestration, in packages that follow the pipeline: `core` (records,
I/O, params, steps, grading, the stage runner and its recorder), `analysis` (metrics, the findings, the protocol,
plots), `engines` (LLM backends, Ray), `prms` (the PRM model, every released layout, training), `pipeline` (each
stage's core), `report` (every page) and `runs` (the study store, what the flows call), beside `prompts` and the
`toy` profile. Stages (`stages/`) and flows (`flows/`) are thin layers on top.

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
    "load_prm": "prmlab.prms.layouts", "PRMSpec": "prmlab.prms.layouts",
    "load_pb_items": "prmlab.pipeline.scorefile", "score_file": "prmlab.pipeline.scorefile",
    "eval_prm": "prmlab.pipeline.processbench", "EvalPBConfig": "prmlab.pipeline.processbench",
    "processbench_scores": "prmlab.analysis.metrics", "first_below": "prmlab.analysis.metrics", "best_threshold": "prmlab.analysis.metrics",
    "load_prmbench": "prmlab.pipeline.prmbench", "prmbench_table": "prmlab.pipeline.prmbench", "EvalPRMBenchConfig": "prmlab.pipeline.prmbench",
    "label_responses": "prmlab.pipeline.labeling", "LabelMCConfig": "prmlab.pipeline.labeling_config", "MCStats": "prmlab.pipeline.labeling",
    "make_generator": "prmlab.engines.generation",
    "load_params": "prmlab.core.params", "BackendConfig": "prmlab.engines.config", "Sampling": "prmlab.engines.config",
    "TrainPRMConfig": "prmlab.prms.training_config",
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
