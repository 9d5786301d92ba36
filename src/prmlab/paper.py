"""The PRM paper's numbers (The Lessons of Developing Process Reward Models in Mathematical Reasoning,
arXiv 2501.07301), each written once: the findings (prmlab.findings.FINDINGS) quote them and size effects by
them, the report and its figures set them beside ours, `prmlab prm` sets a released PRM's Table 7 F1 beside its own
evaluation; and PRMBench's reference rows (its harness's saved outputs), which `prmlab eval` sets beside a known
checkpoint."""

# ProcessBench average F1 of PRMs trained on the same 860k responses (Table 4), and with consensus filtering (Fig. 2).
MC_F1, JUDGE_F1, HUMAN_F1, CONSENSUS_F1 = 40.1, 46.5, 56.5, 46.3
CONSENSUS_KEPT = 40  # Fig. 2: consensus filtering keeps about 40% of the data (%)
# Fig. 3-4: ProcessBench avg. F1 of PRMs trained on hard and on soft MC labels, before consensus filtering.
HARD_F1, SOFT_F1 = 40.2, 40.2
# Table 3: a PRM trained on Math-Shepherd's released 440k MC labels: ProcessBench avg. F1, Best-of-8 avg. accuracy.
SHEPHERD_F1, SHEPHERD_BON = 28.9, 64.3
# Table 3: Best-of-8 avg. accuracy of the PRMs of Table 4 (MC 860k, LLM-as-a-judge 860k, human PRM800K 264k):
# MC is best on Best-of-8 and worst on ProcessBench, human the reverse ("inverse performance relationships").
MC_BON, JUDGE_BON, HUMAN_BON = 65.9, 65.3, 64.9
# Fig. 8 (all Best-of-8 responses of Qwen2.5-Math-7B-Instruct): % whose lowest step score is on the final step,
# the nine bars as the paper's text extraction lists them. Which bar is which PRM the extraction does not say; the
# text does: EurusPRM-Stage1, -Stage2, Math-Shepherd-PRM-7B and Skywork-PRM-7B "exceed 40%", Qwen2.5-Math-PRM-72B
# and -7B are "significantly lower". No outcome-minus-process size is given: none is used.
FIG8_BARS = (17.3, 17.5, 18.0, 26.8, 30.9, 42.2, 44.5, 52.9, 54.6)
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

# ProcessBench average F1 of released PRMs (Table 7).
TABLE7 = {"Qwen/Qwen2.5-Math-PRM-7B": 73.5, "Qwen/Qwen2.5-Math-PRM-72B": 78.3,
          "Qwen/Qwen2.5-Math-7B-PRM800K": 56.5, "peiyi9979/math-shepherd-mistral-7b-prm": 31.5,
          "RLHFlow/Llama3.1-8B-PRM-Mistral-Data": 28.4, "RLHFlow/Llama3.1-8B-PRM-Deepseek-Data": 26.6,
          "Skywork/Skywork-o1-Open-PRM-Qwen-2.5-7B": 42.1, "Skywork/Skywork-o1-Open-PRM-Qwen-2.5-1.5B": 36.4,
          "PRIME-RL/EurusPRM-Stage1": 31.2, "PRIME-RL/EurusPRM-Stage2": 31.3}
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
