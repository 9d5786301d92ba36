"""The PRM paper's numbers (The Lessons of Developing Process Reward Models in Mathematical Reasoning,
arXiv 2501.07301), each written once: the findings (prmlab.analysis.findings.FINDINGS) quote them and size effects by
them, the report and its figures set them beside ours, `prmlab prm` sets a released PRM's Table 7 F1 beside its own
evaluation; and PRMBench's reference rows (its harness's saved outputs), which `prmlab eval` sets beside a known
checkpoint."""

# ProcessBench average F1 of PRMs trained on the same 860k responses (Table 4), and with consensus filtering (Fig. 2).
MC_F1, JUDGE_F1, HUMAN_F1, CONSENSUS_F1 = 40.1, 46.5, 56.5, 46.3
CONSENSUS_KEPT = 40  # Fig. 2: consensus filtering keeps about 40% of the data (%)
# Fig. 3-4: ProcessBench avg. F1 of PRMs trained on hard and on soft MC labels, before consensus filtering (3M) and
# after it (1.5M): "this difference becomes much more pronounced after data filtering" (Section 3.1.2).
HARD_F1, SOFT_F1 = 40.2, 40.2
HARD_F1_FILTERED, SOFT_F1_FILTERED = 66.5, 49.3
# Table 3: a PRM trained on Math-Shepherd's released 440k MC labels: ProcessBench avg. F1, Best-of-8 avg. accuracy.
SHEPHERD_F1, SHEPHERD_BON = 28.9, 64.3
# Table 3: Best-of-8 avg. accuracy of the PRMs of Table 4 (MC 860k, LLM-as-a-judge 860k, human PRM800K 264k):
# MC is best on Best-of-8 and worst on ProcessBench, human the reverse ("inverse performance relationships").
MC_BON, JUDGE_BON, HUMAN_BON = 65.9, 65.3, 64.9
# Fig. 8 (all Best-of-8 responses of Qwen2.5-Math-7B-Instruct): % whose lowest step score is on the final step, all
# eleven bars, each PRM with its bar (the text extraction lists the names and the values in the same order). The text:
# EurusPRM-Stage1, -Stage2, Math-Shepherd-PRM-7B and Skywork-PRM-7B "exceed 40%", Qwen2.5-Math-PRM-72B and -7B are
# "significantly lower". Two MC-trained PRMs sit lowest (9.1, 9.8) and Math-Shepherd's data gives both 44.5 and 9.8:
# the figure shows no label-source pattern. No outcome-minus-process size is given: none is used.
FIG8 = {"RLHFlow-PRM-Mistral-8B": 9.1, "Qwen2.5-Math-7B-Math-Shepherd": 9.8, "RLHFlow-PRM-Deepseek-8B": 17.3,
        "Qwen2.5-Math-PRM-7B": 17.5, "Qwen2.5-Math-PRM-72B": 18.0, "Qwen2.5-Math-7B-PRM800K": 26.8,
        "Skywork-PRM-1.5B": 30.9, "Skywork-PRM-7B": 42.2, "Math-Shepherd-PRM-7B": 44.5, "EurusPRM-Stage2": 52.9,
        "EurusPRM-Stage1": 54.6}
FIG8_BARS = tuple(FIG8.values())
FIG8_BON_PRMS_ABOVE = 40.0
# Fig. 9: Best-of-8 mean accuracy by min / product / last step score, per PRM's training data. The extraction lists
# 18 values; read series by series (six min, six product, six last, in the x axis's order) they give each MC PRM
# last > min and the human and judge PRMs min >= last, as the text says ("in MC estimation, using the last
# score shows significantly better performance ... the trend is the opposite for human annotation and
# LLM-as-a-judge"); read PRM by PRM they would contradict it.
FIG9 = {"MC hard 860k": (64.1, 65.9, 66.7), "MC hard 3M": (64.0, 65.5, 66.9), "MC soft 3M": (63.7, 64.4, 65.5),
        "MC Math-Shepherd 440k": (64.9, 64.3, 65.4), "human PRM800K 264k": (65.6, 64.9, 64.7),
        "LLM-as-a-judge 860k": (65.6, 65.3, 65.3)}


def fig9_last_minus_min(row: str) -> float:
    """Fig. 9: Best-of-8 accuracy by the last step score minus by the lowest, for one of its PRMs, in points."""
    return round(FIG9[row][2] - FIG9[row][0], 1)

# Table 7 (ProcessBench), every row: (kind, checkpoint or None, per subset (error acc, correct acc, F1) for GSM8K, MATH,
# OlympiadBench, Omni-MATH, average F1). Its critic rows are ProcessBench's (arXiv 2412.06559, Table 3); "GPT-4-0806"
# as Table 7 writes it (ProcessBench's GPT-4o-0806); "ORM" is an outcome reward model scored per step as a PRM. Four
# accuracies are ProcessBench's (its Tables 5 and 7), where Table 7 misprints them and its own F1 agrees with
# ProcessBench's: Llama-3.3-70B's MATH correct 94.6 (83.2 in Table 7), Skywork-PRM-7B's 69.2 (62.2), Skywork-PRM-1.5B's
# 65.3 (65.2), RLHFlow-PRM-Deepseek-8B's Omni-MATH error 10.1 (10.9).
TABLE7_ROWS = {
    "GPT-4-0806": ("critic", None, ((70.0, 91.2, 79.2), (54.4, 76.6, 63.6), (45.8, 58.4, 51.4), (45.2, 65.6, 53.5)), 61.9),
    "o1-mini": ("critic", None, ((88.9, 97.9, 93.2), (83.5, 95.1, 88.9), (80.2, 95.6, 87.2), (74.8, 91.7, 82.4)), 87.9),
    "Llama-3.3-70B-Instruct": ("critic", None, ((72.5, 96.9, 82.9), (43.3, 94.6, 59.4), (31.0, 94.1, 46.7),
                                                (28.2, 90.5, 43.0)), 58.0),
    "Qwen2.5-Math-72B-Instruct": ("critic", None, ((49.8, 96.9, 65.8), (36.0, 94.3, 52.1), (19.5, 97.3, 32.5),
                                                   (19.0, 96.3, 31.7)), 45.5),
    "Qwen2.5-72B-Instruct": ("critic", None, ((62.8, 96.9, 76.2), (46.3, 93.1, 61.8), (38.7, 92.6, 54.6),
                                              (36.6, 90.9, 52.2)), 61.2),
    "QwQ-32B-Preview": ("critic", None, ((81.6, 95.3, 88.0), (78.1, 79.3, 78.7), (61.4, 54.6, 57.8),
                                         (55.7, 68.0, 61.3)), 71.5),
    "Skywork-PRM-1.5B": ("PRM", "Skywork/Skywork-o1-Open-PRM-Qwen-2.5-1.5B",
                         ((50.2, 71.5, 59.0), (37.9, 65.3, 48.0), (15.4, 26.0, 19.3), (13.6, 32.8, 19.2)), 36.4),
    "Math-Shepherd-PRM-7B": ("PRM", "peiyi9979/math-shepherd-mistral-7b-prm",
                             ((32.4, 91.7, 47.9), (18.0, 82.0, 29.5), (15.0, 71.1, 24.8), (14.2, 73.0, 23.8)), 31.5),
    "RLHFlow-PRM-Mistral-8B": ("PRM", "RLHFlow/Llama3.1-8B-PRM-Mistral-Data",
                               ((33.8, 99.0, 50.4), (21.7, 72.2, 33.4), (8.2, 43.1, 13.8), (9.6, 45.2, 15.8)), 28.4),
    "RLHFlow-PRM-Deepseek-8B": ("PRM", "RLHFlow/Llama3.1-8B-PRM-Deepseek-Data",
                                ((24.2, 98.4, 38.8), (21.4, 80.0, 33.8), (10.1, 51.0, 16.9), (10.1, 51.9, 16.9)), 26.6),
    "Skywork-PRM-7B": ("PRM", "Skywork/Skywork-o1-Open-PRM-Qwen-2.5-7B",
                       ((61.8, 82.9, 70.8), (43.8, 69.2, 53.6), (17.9, 31.9, 22.9), (14.0, 41.9, 21.0)), 42.1),
    "EurusPRM-Stage1": ("PRM", "PRIME-RL/EurusPRM-Stage1",
                        ((46.9, 42.0, 44.3), (33.3, 38.2, 35.6), (23.9, 19.8, 21.7), (21.9, 24.5, 23.1)), 31.2),
    "EurusPRM-Stage2": ("PRM", "PRIME-RL/EurusPRM-Stage2",
                        ((51.2, 44.0, 47.3), (36.4, 35.0, 35.7), (25.7, 18.0, 21.2), (23.1, 19.1, 20.9)), 31.3),
    "Qwen2.5-Math-7B-Math-Shepherd": ("PRM", None,
                                      ((46.4, 95.9, 62.5), (18.9, 96.6, 31.6), (7.4, 93.8, 13.7), (4.0, 95.0, 7.7)), 28.9),
    "Qwen2.5-Math-7B-PRM800K": ("PRM", "Qwen/Qwen2.5-Math-7B-PRM800K",
                                ((53.1, 95.3, 68.2), (48.0, 90.1, 62.6), (35.7, 87.3, 50.7), (29.8, 86.1, 44.3)), 56.5),
    "Qwen2.5-Math-PRM-7B": ("PRM", "Qwen/Qwen2.5-Math-PRM-7B",
                            ((72.0, 96.4, 82.4), (68.0, 90.4, 77.6), (55.7, 85.5, 67.5), (55.2, 83.0, 66.3)), 73.5),
    "Qwen2.5-Math-RM-72B": ("ORM", None, ((41.1, 46.1, 43.5), (39.7, 58.1, 47.2), (28.1, 56.6, 37.6),
                                          (18.8, 50.2, 27.4)), 38.9),
    "Qwen2.5-Math-PRM-72B": ("PRM", "Qwen/Qwen2.5-Math-PRM-72B",
                             ((78.7, 97.9, 87.3), (74.2, 88.2, 80.6), (67.9, 82.0, 74.3), (64.8, 78.8, 71.1)), 78.3)}
TABLE7_SUBSETS = ("gsm8k", "math", "olympiadbench", "omnimath")  # the order of each row's cells (ProcessBench's ids)
# ProcessBench average F1 of released PRMs (Table 7), by checkpoint.
TABLE7 = {model: avg for kind, model, _, avg in TABLE7_ROWS.values() if model}
QWEN_F1, SHEPHERD_PRM_F1 = TABLE7["Qwen/Qwen2.5-Math-PRM-7B"], TABLE7["peiyi9979/math-shepherd-mistral-7b-prm"]

# ProcessBench average F1 the report quotes under its table.
PB_F1 = {"Qwen2.5-Math-PRM-7B (Table 7)": QWEN_F1, "Math-Shepherd-PRM-7B (Table 7)": SHEPHERD_PRM_F1,
         "MC estimation (Table 4)": MC_F1, "LLM-as-a-judge (Table 4)": JUDGE_F1, "human, PRM800K (Table 4)": HUMAN_F1}
# The paper's PRM trained on the same kind of labels as each of our sources: (row, ProcessBench avg. F1,
# Best-of-8 avg. accuracy or None). Table 3's Math-Shepherd row is a PRM trained on its released 440k set.
BY_SOURCE = {"mc_hard": ("MC estimation (Table 4)", MC_F1, None), "judge": ("LLM-as-a-judge (Table 4)", JUDGE_F1, None),
             "prm800k": ("human annotation, PRM800K (Table 4)", HUMAN_F1, None),
             "human": ("human annotation, PRM800K (Table 4; the toy's analogue)", HUMAN_F1, None),
             "math_shepherd": ("MC Math-Shepherd 440k (Table 3)", SHEPHERD_F1, SHEPHERD_BON)}

# PRMBench (arXiv 2501.03124) PRMScore in points, from the official harness's saved outputs (ssmisya/PRMBench at
# a1ae4ea, mr_visualize/eval_res_view/draw_tabs/form_latex_strs.ipynb, cells 3 and 11; ../shared/data/README.md,
# "How the official harness scores PRMBench", item 6): overall, per class, per category. The harness's
# "Skywork-PRM-7B" is Skywork-o1-Open-PRM-Qwen-2.5-7B.
PRMBENCH = {"Qwen/Qwen2.5-Math-PRM-7B": {"prmscore": 65.5, "NR": 49.0, "NCL": 55.1, "Simplicity": 52.1, "ES": 71.8,
                                         "SC": 67.3, "DC": 66.3, "CI": 78.5, "Soundness": 71.0, "PS": 57.6, "DR": 69.1,
                                         "MS": 99.7, "Sensitivity": 75.5},
            "Qwen/Qwen2.5-Math-PRM-72B": {"prmscore": 68.2},
            "Skywork/Skywork-o1-Open-PRM-Qwen-2.5-7B": {"prmscore": 65.1}}
