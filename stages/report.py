"""Stage report: the paper-shaped tables, figures and a findings table, rebuilt from metrics files.

Tables: label quality by source, ProcessBench like the PRM paper's Table 7, flawed-process accuracy
like Table 5, Best-of-N like Table 6, min-score position (Fig. 8). Figures (PNG): min-score position
bars and histogram, BoN vs ProcessBench per label source, label precision/recall. The findings
table sets each of the paper's claims beside its number and ours, and says plainly whether ours
reproduces it.

Inputs: --metrics-dir (every stage's metrics JSON). Outputs: --out (Markdown), --figures folder.
Run: python -m stages.report --metrics-dir metrics --out reports/report.md --figures reports/figures
"""

from __future__ import annotations

from pathlib import Path

from prmlab.io import DataError, atomic_write_text, read_json
from prmlab.tracking import stage_run, summary

PAPER_PB = {"Qwen2.5-Math-PRM-7B": 73.5, "Qwen2.5-Math-7B-Math-Shepherd (MC)": 31.5,
            "Qwen2.5-Math-7B-PRM800K (human)": 56.5}


def _load(d: Path, name: str) -> dict:
    p = d / f"{name}.json"
    return read_json(p) if p.exists() else {}


def fmt(x, nd=1) -> str:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    if isinstance(x, int) or float(x).is_integer():
        return str(int(x))
    return f"{x:.3f}" if abs(x) < 1 else f"{x:.{nd}f}"  # shares keep 3 decimals, percentages 1


def table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(fmt(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def kendall_tau(a: list[float], b: list[float]) -> float:
    n, s = len(a), 0
    for i in range(n):
        for j in range(i + 1, n):
            s += ((a[i] > a[j]) - (a[i] < a[j])) * ((b[i] > b[j]) - (b[i] < b[j]))
    return 2 * s / (n * (n - 1)) if n > 1 else 1.0


def findings(pb: dict[str, float], bon: dict[str, dict], bias: dict, cons: dict, verified_gap: float | None) -> list[list]:
    rows = []

    def verdict(ok: bool | None) -> str:
        return "n/a (missing data)" if ok is None else ("reproduced" if ok else "**not reproduced**")

    f = pb.get
    ok = None if None in (f("mc_hard"), f("judge"), f("oracle")) else f("mc_hard") < f("judge") and f("mc_hard") < f("oracle")
    rows.append(["MC labels are worse than judge and human labels on ProcessBench",
                 "F1 MC 31.5 < human 56.5 (Tab. 7)",
                 f"F1 mc_hard {fmt(f('mc_hard'))}, judge {fmt(f('judge'))}, oracle {fmt(f('oracle'))}", verdict(ok)])
    kept = cons.get("consensus_kept_share")
    rows.append(["Consensus filtering keeps about 40% of the samples", "~40%",
                 f"{fmt(100 * kept if kept is not None else None)}% kept",
                 verdict(None if kept is None else 0.25 <= kept <= 0.55)])
    ok = None if None in (f("consensus"), f("mc_hard")) else f("consensus") >= f("mc_hard")
    rows.append(["A PRM trained on the consensus subset matches or beats one trained on all MC labels",
                 "better with less data", f"F1 consensus {fmt(f('consensus'))} vs mc_hard {fmt(f('mc_hard'))}", verdict(ok)])
    common = [k for k in pb if k in bon]
    if len(common) >= 3:
        tau = kendall_tau([bon[k]["prm_product"] for k in common], [pb[k] for k in common])
        ok = tau < 1.0
        ours = f"Kendall tau(BoN, ProcessBench) over {len(common)} PRMs = {tau:.2f}"
    else:
        ok, ours = None, "fewer than 3 PRMs"
    rows.append(["BoN ranking of PRMs disagrees with step-level ranking", "rankings differ (Tab. 6 vs 7)", ours, verdict(ok)])
    pol = bias.get("policy", {})
    flawed = pol.get("flawed_among_correct")
    ok = None if flawed is None or verified_gap is None else flawed > 0 and verified_gap > 0
    rows.append(["Correct answers with flawed steps inflate BoN", "flawed processes among correct answers (Fig. 6)",
                 f"policy: {fmt(flawed)}% of correct answers flawed; BoN minus process-verified BoN: {fmt(verified_gap)} pts",
                 verdict(ok)])
    last = {k: v["min_on_last_step_bon_selected"] for k, v in bias.get("prms", {}).items()}
    # The paper's reference (PRM-7B) is trained on consensus-filtered labels; the oracle PRM is the toy's
    # human-label stand-in. The claim holds only if the MC PRM sits above both.
    refs = [last[k] for k in ("consensus", "oracle") if k in last]
    ok = None if "mc_hard" not in last or not refs else last["mc_hard"] > max(refs)
    rows.append(["MC-trained PRMs put the lowest score on the final step more often", "17.5% (PRM-7B, consensus-trained) vs >40% (MC PRMs), Fig. 8",
                 ", ".join(f"{k} {v:.0f}%" for k, v in last.items()) or "n/a", verdict(ok)])
    ok = None if None in (f("mc_hard"), f("mc_soft")) else f("mc_hard") >= f("mc_soft")
    rows.append(["Hard labels beat soft labels", "hard > soft after filtering", f"F1 mc_hard {fmt(f('mc_hard'))} vs mc_soft {fmt(f('mc_soft'))}", verdict(ok)])
    return rows


def build(mdir: Path, figdir: Path, run=None) -> str:
    from prmlab import plots

    boot, cons = _load(mdir, "bootstrap"), _load(mdir, "consensus")
    pbm, bonm, bias = _load(mdir, "eval_processbench"), _load(mdir, "eval_bon"), _load(mdir, "analyze_bias")
    sample, mc, jd = _load(mdir, "sample"), _load(mdir, "label_mc"), _load(mdir, "label_judge")
    figdir.mkdir(parents=True, exist_ok=True)
    md = ["# prmlab report", "",
          "Rebuilt by `dvc repro` from the metrics files; every number below comes from this run. "
          "In the toy profile the models are tiny and the world is synthetic, so compare *directions* with the paper, not levels.", ""]
    if boot:
        md += ["## The world", "", table(["metric", "value"], [[k, v] for k, v in sorted(boot.items()) if isinstance(v, int | float)]), ""]
        jacc, jbase = boot.get("judge_first_error_accuracy"), boot.get("judge_baseline_always_none")
        if jacc is not None and jbase is not None and jacc < jbase + 0.05:
            md += [f"**Weak judge.** Its first-error accuracy ({jacc:.2f}) is not clearly above always answering -1 ({jbase:.2f}): "
                   "the judge and consensus labels, and every finding below built on them, come from a judge that finds few errors.", ""]
    if sample:
        md += ["## Data synthesis", "",
               f"Sampled {sample.get('kept')} responses ({fmt(100 * sample.get('accuracy', 0))}% correct); "
               f"MC spent {mc.get('rollouts')} rollouts; the judge left {jd.get('unparsed')} answers unparsed; "
               f"consensus kept {cons.get('agree')} of {cons.get('responses')} ({fmt(100 * cons.get('consensus_kept_share', 0))}%, paper: ~40%).", ""]
    audit = cons.get("audit") or {}
    if audit:
        md += ["## Label quality by source (against the exact verifier)", "",
               table(["source", "first-error acc", "precision (wrong)", "recall (wrong)", "missed errors", "false alarms", "responses"],
                     [[s, a["first_error_accuracy"], a["step_precision_wrong"], a["step_recall_wrong"], a["missed_error_rate"],
                       a["false_alarm_rate"], a["responses"]] for s, a in audit.items()]), ""]
        fig = plots.label_quality(audit)
        fig.savefig(figdir / "label_quality.png", dpi=110)
        md += ["![label quality](figures/label_quality.png)", ""]
    pb_f1: dict[str, float] = {}
    if pbm:
        models = pbm["models"]
        subsets = [s for s in pbm["items"]]
        rows, rows5 = [], []
        for name, res in models.items():
            t = res.get("tuned", res)
            rows.append([name] + [f"{t[s]['error_acc']:.1f} / {t[s]['correct_acc']:.1f} / {t[s]['f1']:.1f}" for s in subsets]
                        + [t["average_f1"], res.get("threshold_0.5", t)["average_f1"], t.get("threshold", "-")])
            rows5.append([name] + [t[s]["flawed_correct_answer_acc"] for s in subsets])
            if name.startswith("prm/"):
                pb_f1[name[4:]] = t["average_f1"]
        md += ["## ProcessBench (like Table 7)", "", "error acc / correct acc / F1 per subset; average F1 at the tuned threshold and at 0.5.", "",
               table(["model", *subsets, "avg F1 (tuned)", "avg F1 (0.5)", "threshold"], rows), "",
               "Paper, average F1: " + ", ".join(f"{k} {v}" for k, v in PAPER_PB.items()) + ".", "",
               "## Accuracy on correct answers with flawed processes (like Table 5)", "",
               table(["model", *subsets], rows5), ""]
    bon_avg: dict[str, dict] = {}
    gap = None
    if bonm:
        res = bonm["results"]
        base = res["baselines"]["average"]
        n = bonm["n"]
        rows = [[f"maj@{n}", base["maj"], "-"], [f"pass@{n}", base["pass"], "-"]]
        for name, t in res.items():
            if name == "baselines":
                continue
            bon_avg[name] = t["average"]
            for agg in ("product", "min", "last"):
                if f"prm_{agg}" in t["average"]:
                    rows.append([f"{name} prm@{n} ({agg})", t["average"][f"prm_{agg}"], t["average"].get(f"prm_{agg}_process_verified", "-")])
        gaps = [t["average"]["prm_product"] - t["average"]["prm_product_process_verified"]
                for k, t in res.items() if k != "baselines" and "prm_product_process_verified" in t["average"]]
        gap = sum(gaps) / len(gaps) if gaps else None
        md += ["## Best-of-N (like Table 6)", "", f"{bonm['problems']} problems, {n} responses each.", "",
               table(["method", "accuracy", "process-verified accuracy"], rows), ""]
    if bias:
        prms = bias.get("prms", {})
        md += ["## Where the lowest step score sits (like Fig. 8)", "",
               table(["PRM", "BoN-selected: min on final step (%)", "all: min on final step (%)", "mean relative position"],
                     [[k, v["min_on_last_step_bon_selected"], v["min_on_last_step_all"], v["mean_relative_min_position"]] for k, v in prms.items()]), ""]
        if prms:
            plots.min_position_bars({k: v["min_on_last_step_bon_selected"] for k, v in prms.items()}).savefig(figdir / "min_position.png", dpi=110)
            plots.min_position_hist({k: v["relative_position_hist"] for k, v in prms.items()}).savefig(figdir / "min_position_hist.png", dpi=110)
            md += ["![min position](figures/min_position.png)", "", "![min position histogram](figures/min_position_hist.png)", ""]
        if bias.get("policy"):
            p = bias["policy"]
            md += [f"Policy on the BoN problems: {p['accuracy']:.1f}% correct, of which {p['flawed_among_correct']:.1f}% reached "
                   f"through a flawed step (paper Fig. 6 reports this bias for real policies).", ""]
    points = {k: (bon_avg[k]["prm_product"], pb_f1[k]) for k in pb_f1 if k in bon_avg}
    if points:
        plots.bon_vs_processbench(points).savefig(figdir / "bon_vs_processbench.png", dpi=110)
        md += ["![BoN vs ProcessBench](figures/bon_vs_processbench.png)", ""]
    untrained = [p.stem for p in sorted((mdir / "train_prm").glob("*.json")) if read_json(p).get("trained") is False]
    if untrained:
        md += [f"**Untrained PRMs** (their label source produced no examples; their rows above are meaningless): "
               f"{', '.join(untrained)}.", ""]
    md += ["## Findings: the paper's claims and ours", "",
           table(["claim", "paper", "ours", "verdict"],
                 findings(pb_f1, {k: v for k, v in bon_avg.items()}, bias, cons, gap)), ""]
    import matplotlib.pyplot as plt

    plt.close("all")
    return "\n".join(md)


def main() -> None:
    from stages._common import fail, parse_args

    a = parse_args("build the report", metrics_dir="folder of metrics JSON", out="report Markdown", figures="figures folder")
    with stage_run("report", {}, inputs=[]) as run:
        try:
            text = build(Path(a.metrics_dir), Path(a.figures), run)
        except DataError as e:
            fail("report", e)
        atomic_write_text(a.out, text)
        run.artifact(a.out)
        run.artifact(a.figures, "figures")
    summary("report", f"wrote {a.out} ({len(text.splitlines())} lines) and {len(list(Path(a.figures).glob('*.png')))} figures")


if __name__ == "__main__":
    main()
