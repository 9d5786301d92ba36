"""Write reports/benchmarks.md from the benchmark JSON files (never by hand; prmlab.report.benchmarks), and the
figures of docs/labelling-methods.md's budget guide from bench_labelling.py's.

    python -m benchmarks.write_report
"""

from __future__ import annotations

from prmlab.core.io import atomic_write_text
from prmlab.report.benchmarks import GUIDE, D, _load, fill_guide, page


def main() -> None:
    atomic_write_text(D.parent / "benchmarks.md", page())
    print("wrote reports/benchmarks.md")
    if (b := _load("labelling_methods.json")) and GUIDE.exists():
        atomic_write_text(GUIDE, fill_guide(GUIDE.read_text(), b))
        print(f"filled {GUIDE}'s budget guide")


if __name__ == "__main__":
    main()
