"""Write reports/benchmarks.md from the benchmark JSON files (never by hand).

    python -m benchmarks.write_report
"""

from __future__ import annotations

import json
from pathlib import Path

D = Path("reports/benchmarks")


def _ok(hit: bool) -> str:
    return "met" if hit else "**missed**"


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
