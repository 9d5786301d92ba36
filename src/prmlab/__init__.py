"""prmlab: a reproduction of Qwen's PRM lessons (arXiv 2501.07301) and ProcessBench (arXiv 2412.06559).

The library holds everything that is not orchestration: records and I/O, params, step splitting and
grading, data loaders, the toy world, generation backends, the PRM model and scorers, labelling,
metrics, tracking and plots. Stages (`stages/`) and flows (`flows/`) are thin layers on top.
"""

__version__ = "0.1.0"
