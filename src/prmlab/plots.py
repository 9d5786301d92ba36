"""One function per figure; each returns a matplotlib Figure (the report stage saves them)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def min_position_bars(last_share: dict[str, float], paper_ref: float = 17.5):
    """Share of BoN-selected responses whose lowest step score is on the final step, per PRM."""
    fig, ax = plt.subplots(figsize=(6, 3.2))
    names = list(last_share)
    ax.bar(names, [last_share[n] for n in names], color="#4878a8")
    ax.axhline(paper_ref, ls="--", color="gray", lw=1, label=f"Qwen2.5-Math-PRM-7B (paper): {paper_ref}%")
    ax.set_ylabel("min score on final step (%)")
    ax.set_title("Where PRMs put their lowest step score")
    ax.legend(fontsize=7)
    ax.tick_params(axis="x", rotation=30, labelsize=8)
    fig.tight_layout()
    return fig


def min_position_hist(hists: dict[str, dict[str, float]]):
    fig, ax = plt.subplots(figsize=(6, 3.2))
    names = list(hists)
    if names:
        bins = list(hists[names[0]])
        w = 0.8 / len(names)
        for k, n in enumerate(names):
            ax.bar([b + k * w for b in range(len(bins))], [hists[n][x] for x in bins], width=w, label=n)
        ax.set_xticks([b + 0.4 - w / 2 for b in range(len(bins))], bins, fontsize=8)
    ax.set_xlabel("relative position of the lowest step score")
    ax.set_ylabel("share of responses")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def bon_vs_processbench(points: dict[str, tuple[float, float]]):
    """One point per PRM (label source): BoN prm@8 vs ProcessBench average F1."""
    fig, ax = plt.subplots(figsize=(5, 4))
    for name, (bon, pb) in points.items():
        ax.scatter(pb, bon)
        ax.annotate(name, (pb, bon), fontsize=8, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("ProcessBench average F1")
    ax.set_ylabel("Best-of-8 accuracy (prm@8, product)")
    ax.set_title("BoN vs step-level evaluation")
    fig.tight_layout()
    return fig


def label_quality(audit: dict[str, dict]):
    fig, ax = plt.subplots(figsize=(6, 3.2))
    names = list(audit)
    keys = ["step_precision_wrong", "step_recall_wrong", "first_error_accuracy"]
    w = 0.25
    for k, key in enumerate(keys):
        ax.bar([i + k * w for i in range(len(names))], [audit[n][key] for n in names], width=w, label=key)
    ax.set_xticks([i + w for i in range(len(names))], names)
    ax.set_ylim(0, 1)
    ax.set_title("Label quality against the exact verifier")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
