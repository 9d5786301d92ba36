"""Benchmarks that print and save measured figures (see reports/benchmarks.md)."""

import argparse


def positive_int(s: str) -> int:
    """argparse type for counts that a median is taken over: an empty median would crash at the end."""
    n = int(s)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n
