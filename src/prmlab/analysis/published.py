"""The field's published ProcessBench and PRMBench rows beyond the PRM paper's (whose Table 7 is
prmlab.analysis.paper.TABLE7_ROWS), so `prmlab eval` ranks a new PRM among them (prmlab.report.tables.context_tables).

Each row as its source prints it, with the source named: a paper's table, or a leaderboard at a commit. Read from the
sources' text, never from memory; where a paper contradicts itself the value its own average agrees with is kept and
the conflict is noted. Not here: ThinkPRM (arXiv 2504.16828), which reports a binary, solution-level F1 on the
OlympiadBench and Omni-MATH subsets only, a different metric from ProcessBench's per-step one.

Inputs: none. Outputs: PROCESSBENCH_FIELD (name -> row), PRMBENCH_FIELD (name -> row), LEADERBOARD_NAME.
"""

# ProcessBench: (kind, setting, per subset (error acc, correct acc, F1) or F1 alone, in prmlab.analysis.paper.TABLE7_SUBSETS'
# order (GSM8K, MATH, OlympiadBench, Omni-MATH), average F1, source). "generative" is a PRM that writes a
# verdict per step; its setting says how many sampled judgments make a step's score.
PROCESSBENCH_FIELD = {
    "GenPRM-7B": ("generative", "Pass@1 (one sampled judgment, T=0.6)", (78.7, 80.3, 72.2, 69.8), 75.2,
                  "GenPRM, arXiv 2504.00891, Table 1"),
    "GenPRM-7B (Maj@8)": ("generative", "majority of 8 sampled judgments", ((69.6, 96.9, 81.0), (80.5, 91.6, 85.7),
                                                                             (74.0, 83.5, 78.4), (70.0, 85.1, 76.8)),
                          80.5, "GenPRM, arXiv 2504.00891, Tables 1 and 6"),
    "GenPRM-32B": ("generative", "Pass@1 (one sampled judgment, T=0.6)", (83.1, 81.7, 72.8, 72.8), 77.6,
                   "GenPRM, arXiv 2504.00891, Table 1"),
    "GenPRM-32B (Maj@8)": ("generative", "majority of 8 sampled judgments", (85.1, 86.3, 78.9, 80.1), 82.6,
                           "GenPRM, arXiv 2504.00891, Table 1"),
    "R-PRM-7B-SFT": ("generative", "mean P(yes) of 10 sampled judgments, threshold 0.5",
                     ((66.2, 92.7, 77.2), (60.3, 88.2, 71.6), (48.6, 77.3, 59.6), (40.1, 75.5, 52.3)), 65.2,
                     "R-PRM, arXiv 2503.21295, Table 1"),
    "R-PRM-7B-DPO": ("generative", "mean P(yes) of 10 sampled judgments, threshold 0.5",
                     ((72.0, 91.7, 80.7), (71.2, 83.5, 76.9), (60.2, 67.8, 63.8), (55.5, 65.6, 60.1)), 70.4,
                     "R-PRM, arXiv 2503.21295, Table 1"),
    "PURE-PRM-7B": ("PRM", "", (69.0, 66.5, 48.4, 45.9), 57.5, "PURE, arXiv 2504.15275, Appendix C Table 3"),
    "ActPRM": ("PRM", "", (81.6, 79.8, 71.4, 67.0), 75.0, "ActPRM, arXiv 2504.10559v1, Table 1"),
    "ActPRM-X": ("PRM", "continued from Qwen2.5-Math-PRM-7B", (82.7, 82.0, 72.0, 67.3), 76.0,
                 "ActPRM, arXiv 2504.10559v1, Table 1"),
    # its own paper's table not read; GenPRM's and ActPRM's Table 1 quote it alike
    "Universal-PRM-7B": ("PRM", "", (85.8, 77.7, 67.6, 66.4), 74.3,
                         "as quoted by GenPRM (arXiv 2504.00891) and ActPRM (arXiv 2504.10559v1), Table 1"),
}

# PRMBench: (kind, {column: PRMScore}, source), the columns named as prmlab.analysis.paper.PRMBENCH's ("prmscore" overall; the
# classes; the category averages Simplicity, Soundness, Sensitivity). The leaderboard's rows are its README's at
# commit f4fee62 of ssmisya/PRMBench (its o1-mini row: "a subset of 394 samples", its footnote). That leaderboard's
# Skywork-PRM-7B overall (36.2) is not the harness notebook's saved 65.1 (prmlab.analysis.paper.PRMBENCH); both are shown.
_LEADERBOARD = "PRMBench leaderboard (github.com/ssmisya/PRMBench README at f4fee62)"
_COLUMNS = ("prmscore", "NR", "NCL", "Simplicity", "ES", "SC", "DC", "CI", "Soundness", "PS", "DR", "MS", "Sensitivity")
# The harness's checkpoints (prmlab.analysis.paper.PRMBENCH's keys) by their leaderboard names: the context table shows a
# harness row only where its PRMScore differs from the leaderboard's (Skywork-PRM-7B), never one figure twice.
LEADERBOARD_NAME = {"Qwen/Qwen2.5-Math-PRM-7B": "Qwen2.5-Math-PRM-7B", "Qwen/Qwen2.5-Math-PRM-72B": "Qwen2.5-Math-PRM-72B",
                    "Skywork/Skywork-o1-Open-PRM-Qwen-2.5-7B": "Skywork-PRM-7B"}
PRMBENCH_FIELD = {
    "Gemini-2.0-thinking-exp-1219": ("critic", dict(zip(_COLUMNS, (68.8, 68.5, 63.8, 66.2, 72.9, 71.3, 71.0, 71.8, 71.8,
                                                                    60.3, 65.7, 99.8, 75.3))), _LEADERBOARD),
    "o1-mini (394 items)": ("critic", dict(zip(_COLUMNS, (68.8, 65.6, 63.7, 64.6, 74.5, 67.7, 73.8, 72.3, 72.1, 61.8,
                                                           64.8, 100.0, 75.5))), _LEADERBOARD),
    "Qwen2.5-Math-PRM-72B": ("PRM", dict(zip(_COLUMNS, (68.2, 50.4, 58.8, 54.6, 73.7, 71.1, 72.2, 78.6, 73.9, 60.3, 71.2,
                                                         99.4, 77.0))), _LEADERBOARD),
    "GPT-4o": ("critic", dict(zip(_COLUMNS, (66.8, 57.0, 62.4, 59.7, 72.0, 69.7, 70.7, 71.1, 70.9, 62.5, 65.7, 99.2,
                                             75.8))), _LEADERBOARD),
    "Gemini-2.0-flash-exp": ("critic", dict(zip(_COLUMNS, (66.0, 67.2, 58.1, 62.7, 70.4, 65.7, 66.0, 67.3, 67.3, 61.8,
                                                           66.2, 98.2, 75.4))), _LEADERBOARD),
    "Qwen2.5-Math-PRM-7B": ("PRM", dict(zip(_COLUMNS, (65.5, 49.0, 55.1, 52.1, 71.8, 67.3, 66.3, 78.5, 71.0, 57.6, 69.1,
                                                        99.7, 75.5))), _LEADERBOARD),
    "ReasonEval-34B": ("PRM", dict(zip(_COLUMNS, (60.5, 54.8, 48.1, 51.5, 66.4, 60.3, 57.8, 67.5, 63.0, 57.7, 64.3, 97.2,
                                                   73.1))), _LEADERBOARD),
    "ReasonEval-7B": ("PRM", {"prmscore": 60.1, "Simplicity": 55.6, "Soundness": 63.9, "Sensitivity": 71.1}, _LEADERBOARD),
    "Skywork-PRM-7B": ("PRM", dict(zip(_COLUMNS, (36.2, 35.7, 41.2, 38.4, 36.7, 29.1, 30.6, 34.4, 32.7, 36.8, 37.4, 88.8,
                                                   54.3))), _LEADERBOARD),
    "Skywork-PRM-1.5B": ("PRM", {"prmscore": 31.5, "Simplicity": 33.4, "Soundness": 28.4, "Sensitivity": 48.6},
                         _LEADERBOARD),
    "R-PRM-7B-DPO": ("generative", dict(zip(_COLUMNS, (66.8, 52.2, 58.2, 55.2, 72.1, 69.1, 68.9, 75.0, 71.2, 61.2, 69.5,
                                                        99.1, 76.6))), "R-PRM, arXiv 2503.21295, Table 2"),
    "R-PRM-7B-SFT": ("generative", dict(zip(_COLUMNS, (64.9, 52.7, 64.7, 58.7, 70.1, 62.7, 63.4, 69.5, 66.4, 61.4, 67.4,
                                                        98.3, 75.7))), "R-PRM, arXiv 2503.21295, Table 2"),
    "ActPRM-X": ("PRM", {"prmscore": 66.7, "Simplicity": 54.5, "Soundness": 72.7, "Sensitivity": 75.6},
                 "ActPRM, arXiv 2504.10559v1, Table 2"),
    "ActPRM": ("PRM", {"prmscore": 65.5, "Simplicity": 53.6, "Soundness": 71.3, "Sensitivity": 75.2},
               "ActPRM, arXiv 2504.10559v1, Table 2"),
    "PURE-PRM-7B": ("PRM", {"prmscore": 65.3, "Simplicity": 52.2, "Soundness": 70.2, "Sensitivity": 75.8},
                    "PURE, arXiv 2504.15275, Appendix C Table 4"),
}
