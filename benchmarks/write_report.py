"""Write reports/benchmarks.md from the benchmark JSON files (never by hand; prmlab.report.benchmarks).

    python -m benchmarks.write_report
"""

from __future__ import annotations

from prmlab.io import atomic_write_text
from prmlab.report.benchmarks import D, page


def main() -> None:
    atomic_write_text(D.parent / "benchmarks.md", page())
    print("wrote reports/benchmarks.md")


if __name__ == "__main__":
    main()
