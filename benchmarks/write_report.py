"""Write reports/benchmarks.md from the benchmark JSON files (never by hand).

    python -m benchmarks.write_report
"""

from __future__ import annotations

import json
from pathlib import Path

D = Path("reports/benchmarks")


def _ok(hit: bool) -> str:
    return "met" if hit else "**missed**"


def _study_minutes(r: dict) -> float:
    return sum(v["seconds"] for s, v in r["stages"].items() if not s.startswith(("bootstrap", "train_judge"))) / 60


def long_study(default: dict, long: dict) -> list[str]:
    """The default study beside `make study-long` (6x the training problems), stage by stage, and
    where each lands on issue #19's PRM targets (from the headline each run wrote)."""
    md = ["## The default study and `make study-long`, per stage (`benchmarks/bench_repro.py --in-place`)", "",
          f"`study-long` is `make study-long`'s settings (commit `{long['commit']}`). "
          + (f"**How it was measured.** {long['note']}" if long.get("note") else ""), "",
          "| stage | default (s) | study-long (s) |", "|---|---|---|"]
    md += [f"| {s} | {default['stages'].get(s, {}).get('seconds', float('nan')):.1f} | {v['seconds']:.1f} |"
           for s, v in long["stages"].items() if not s.startswith(("bootstrap", "train_judge"))]
    md += [f"| **total** | **{_study_minutes(default):.1f} min** | **{_study_minutes(long):.1f} min** |", ""]
    rows = []
    for name, r in (("default", default), ("study-long", long)):
        h = r.get("headline") or {}
        bon, auc, f1 = h.get("best_of_n", {}), h.get("processbench_step_auc", {}), h.get("processbench_f1", {})
        prms = {k: v for k, v in f1.items() if not k.startswith("critic")}
        order = " > ".join(sorted(prms, key=lambda k: -prms[k]))
        o = bon.get("oracle")
        rows.append(f"| {name} | {_study_minutes(r):.1f} | {o} vs {bon.get('random')} / {bon.get('maj')} "
                    f"| {auc.get('oracle', '-')} | {order} |")
    md += ["Issue #19's PRM targets in each run (the oracle PRM's Best-of-N above a random pick and at least maj@N; "
           "its held-out step AUC at least 0.8; held-out ProcessBench F1 with oracle first and MC last):", "",
           "| run | minutes | oracle Best-of-N vs random / maj | oracle step AUC | PRMs by held-out F1 |",
           "|---|---|---|---|---|", *rows, ""]
    return md


def prm_budget(b: dict) -> list[str]:
    """What the oracle PRM needs, in minutes (benchmarks/bench_prm_budget.py)."""
    md = ["## What a PRM needs to learn exact labels (`benchmarks/bench_prm_budget.py`)", "",
          "The oracle PRM (trained on the verifier's labels, so only the training budget stands between it and the "
          "targets) at budgets of problems x responses each : optimizer steps. Best-of-8 (product) on the benchmark's "
          f"own {next(iter(b.values()))['bon_problems']} held-out problems; step AUC and F1 on the study's held-out "
          "toy ProcessBench. Minutes: sampling plus training on 2 cores (MC and judge labels add to this for the "
          "other sources; see the stage table above).", "",
          "| budget | responses (distinct) | minutes | Best-of-8: oracle / random / maj | step AUC | held-out F1 | targets |",
          "|---|---|---|---|---|---|---|"]
    for key, r in sorted(b.items(), key=lambda kv: (kv[1]["examples"], kv[1]["optimizer_steps"])):
        hit = r["bon_product"] > r["bon_random"] and r["bon_product"] >= r["bon_maj"] and r["step_auc_heldout"] >= 0.8
        md.append(f"| {key} | {r['examples']} ({r['distinct_responses']}) | {(r['sample_seconds'] + r['train_seconds']) / 60:.1f} "
                  f"| {r['bon_product']:.1f} / {r['bon_random']:.1f} / {r['bon_maj']:.1f} | {r['step_auc_heldout']:.3f} "
                  f"| {r['f1_heldout']:.1f} | {_ok(hit)} |")
    return md + [""]


def main() -> None:
    md = ["# prmlab benchmarks", "", "Written by `python -m benchmarks.write_report` from the JSON the benchmark scripts "
          "print and save; rerun them to refresh. Machine: 2 CPU cores, no GPU.", ""]
    rp = D / "repro.json"
    if rp.exists():
        r = json.loads(rp.read_text())
        where = "in the project itself, as it regenerated the study" if r.get("in_place") else "from a clean clone"
        md += ["## Toy `dvc repro`, per stage (`benchmarks/bench_repro.py`)", "",
               f"Commit `{r['commit']}`, run {where}; median of {r['repeats']} full run(s). Peak memory is the whole "
               "process tree's (summed RSS, sampled every 0.2 s). bootstrap@toy trains the toy models; they are "
               "committed, so `make repro` on a fresh clone skips it: the 20-minute target is the rest.", "",
               "| stage | wall (s) | peak memory (GiB) |", "|---|---|---|"]
        md += [f"| {s} | {v['seconds']:.1f} | {v['peak_gib']:.2f} |" for s, v in r["stages"].items()]
        models = ("bootstrap", "train_judge")  # committed: a fresh clone's `make repro` skips them
        study = sum(v["seconds"] for s, v in r["stages"].items() if not s.startswith(models))
        boot = 0.0
        for name in models:
            st = next((v["seconds"] for s, v in r["stages"].items() if s.startswith(name)), 0.0)
            mf = Path(f"metrics/{name}.json")
            if st < 5 and mf.exists():  # up to date when the benchmark ran: its own last run's time
                st = json.loads(mf.read_text())["seconds"]
                md += ["", f"{name}@toy was up to date when this ran; its own last run took {st:.0f} s (metrics/{name}.json)."]
            boot += st
        if r.get("note"):
            md += ["", f"**Note.** {r['note']}"]
        tot = study
        peak, noop = r["peak_gib"], r["noop_repro_seconds_median"]
        md += ["", "| measure | value | target | |", "|---|---|---|---|",
               f"| `make repro` from a fresh clone: every stage but the committed models' | {tot / 60:.1f} min | < 20 min | {_ok(tot < 1200)} |",
               f"| bootstrap@toy + train_judge@toy (`dvc repro -f`, rebuild the committed models) | {boot / 60:.1f} min | | |",
               f"| peak memory of any stage | {peak:.2f} GiB | < 8 GiB | {_ok(peak < 8)} |",
               f"| no-op `dvc repro` (median of {len(r['noop_repro_seconds_all'])}) | {noop:.1f} s | < 10 s | {_ok(noop < 10)} |", ""]
    lp = D / "repro_long.json"
    if lp.exists() and rp.exists():
        md += long_study(json.loads(rp.read_text()), json.loads(lp.read_text()))
    bp = D / "prm_budget.json"
    if bp.exists():
        md += prm_budget(json.loads(bp.read_text()))
    ep = D / "engines.json"
    if ep.exists():
        e = json.loads(ep.read_text())
        md += ["## Engines (`benchmarks/bench_engines.py`)", "",
               f"{e['n_prompts']} toy problems, k={e['k']} rollouts per step, medians of {e['repeats']}; generated tokens per second.", "",
               "| measure | transformers | vLLM (CPU) | ratio |", "|---|---|---|---|",
               f"| sampling, tok/s | {e['transformers_sample_tokens_per_s']:.0f} | {e['vllm_sample_tokens_per_s']:.0f} | "
               f"{e['vllm_over_transformers_sample']:.2f}x |",
               f"| MC rollouts, backend's raw generate, tok/s | {e['transformers_mc_raw_tokens_per_s']:.0f} | "
               f"{e['vllm_mc_raw_tokens_per_s']:.0f} | |",
               f"| MC rollouts, label_mc stage, tok/s | {e['transformers_mc_stage_tokens_per_s']:.0f} | "
               f"{e['vllm_mc_stage_tokens_per_s']:.0f} | |",
               f"| stage over raw (target >= 0.8) | {e['transformers_mc_stage_overhead_ratio']:.2f} | "
               f"{e['vllm_mc_stage_overhead_ratio']:.2f} | |",
               f"| vLLM MC rollouts, prefix caching off, tok/s | | {e['vllm_no_prefix_cache_mc_raw_tokens_per_s']:.0f} | "
               f"on/off {e['vllm_prefix_cache_speedup']:.2f}x |",
               f"| binary-search MC rollouts (exhaustive) | {e['transformers_binary_rollouts']} ({e['transformers_exhaustive_rollouts']}) | "
               f"{e['vllm_binary_rollouts']} ({e['vllm_exhaustive_rollouts']}) | |",
               f"| binary vs exhaustive first-error agreement | {e['transformers_binary_agreement']:.2f} | {e['vllm_binary_agreement']:.2f} | |",
               f"| PRM scoring, steps/s | {e['transformers_prm_steps_per_s']:.0f} | {e['vllm_prm_steps_per_s']:.0f} | "
               f"{e['prm_vllm_over_transformers']:.2f}x |", ""]
    (Path("reports") / "benchmarks.md").write_text("\n".join(md) + "\n")
    print("wrote reports/benchmarks.md")


if __name__ == "__main__":
    main()
