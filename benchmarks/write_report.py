"""Write reports/benchmarks.md from the benchmark JSON files (never by hand).

    python -m benchmarks.write_report
"""

from __future__ import annotations

import json
from pathlib import Path

D = Path("reports/benchmarks")


def main() -> None:
    md = ["# prmlab benchmarks", "", "Written by `python -m benchmarks.write_report` from the JSON the benchmark scripts "
          "print and save; rerun them to refresh. Machine: 2 CPU cores, no GPU.", ""]
    rp = D / "repro.json"
    if rp.exists():
        r = json.loads(rp.read_text())
        md += ["## Toy `dvc repro` from a clean clone (`benchmarks/bench_repro.py`)", "",
               "| stage | wall (s) | peak RSS (GiB) |", "|---|---|---|"]
        md += [f"| {s} | {v['seconds']:.1f} | {v['peak_rss_gib']:.2f} |" for s, v in r["stages"].items()]
        md += ["", f"Total **{r['total_seconds'] / 60:.1f} min** (target < 15), peak **{r['peak_rss_gib']:.2f} GiB** "
               f"(target < 8); no-op `dvc repro` **{r['noop_repro_seconds_median']:.1f} s** (median of 3, target < 10).", ""]
    ep = D / "engines.json"
    if ep.exists():
        e = json.loads(ep.read_text())
        md += ["## Engines (`benchmarks/bench_engines.py`)", "", f"{e['n_prompts']} toy problems, k={e['k']}, medians of {e['repeats']}.", "",
               "| measure | value |", "|---|---|"]
        md += [f"| {k} | {v:.3f} |" if isinstance(v, float) else f"| {k} | {v} |" for k, v in e.items()]
        md += [""]
    (Path("reports") / "benchmarks.md").write_text("\n".join(md) + "\n")
    print("wrote reports/benchmarks.md")


if __name__ == "__main__":
    main()
