"""The cells and tables every page of the report package writes: one number format, one table shape."""

from __future__ import annotations


def fmt(x, nd=1) -> str:
    """A report cell: text as is, whole numbers bare, shares (< 1) to 3 decimals, other numbers to `nd`."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    if isinstance(x, int) or float(x).is_integer():
        return str(int(x))
    return f"{x:.3f}" if abs(x) < 1 else f"{x:.{nd}f}"  # shares keep 3 decimals, percentages 1


def table(header: list[str], rows: list[list]) -> str:
    """A Markdown table, each cell through `fmt` (a cell formatted already passes as text)."""
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                      *("| " + " | ".join(fmt(c) for c in r) + " |" for r in rows)])


def fmt1(x: float | None) -> str:
    """A figure (F1, accuracy, %) to 1 decimal, '-' where there is none (None, or NaN: one seed's interval)."""
    return "-" if x is None or x != x else f"{x:.1f}"


def f3(x: float | None) -> str:
    """An AUC (0-1) to 3 decimals, '-' where there is none."""
    return "-" if x is None else f"{x:.3f}"


def ci(v: list[float] | None) -> str:
    """[value, lo, hi] as '61.7 [58.6, 64.7]'; '-' where absent."""
    return "-" if not v else f"{v[0]:.1f} [{v[1]:.1f}, {v[2]:.1f}]"


def with_ci(x: float | None, lohi: list[float] | None) -> str:
    """A point and, where there is one, its interval: '56.2 [53.6, 58.9]'; the point alone, or '-', otherwise."""
    return ci([x, *lohi]) if x is not None and lohi else fmt1(x)


def signed_ci(d: list[float] | None) -> str:
    """[difference, lo, hi] as '+4.8 [+0.8, +9.2]'; '-' where absent."""
    return "-" if not d else f"{d[0]:+.1f} [{d[1]:+.1f}, {d[2]:+.1f}]"
