"""Small helpers shared by stage `main()`s: argument parsing and the stage run context."""

from __future__ import annotations

import argparse
import os
import sys


def parse_args(description: str, **paths: str) -> argparse.Namespace:
    """Each keyword becomes a required `--name PATH` option (paths live in dvc.yaml only)."""
    ap = argparse.ArgumentParser(description=description)
    for name, help_ in paths.items():
        ap.add_argument(f"--{name.replace('_', '-')}", dest=name, required=not help_.startswith("?"), help=help_.lstrip("?"))
    ap.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"), help="params file")
    return ap.parse_args()


def fail(stage: str, err: Exception) -> None:
    print(f"[{stage}] error: {err}", file=sys.stderr)
    sys.exit(2)


def set_threads() -> None:
    import torch

    torch.set_num_threads(max(1, os.cpu_count() or 1))


def sharded(items: list, shard_size: int, writer, work, desc: str, unit: str = "items", cls=None) -> list:
    """Run `work(shard_index, chunk) -> records` over shards, skipping shards a killed run finished.

    The shard index (not a count of shards run) seeds each shard, so a resumed run draws exactly
    what an uninterrupted one would have.

    Returns every record in input order; `writer` is a prmlab.io.ShardWriter (call its finish()).
    """
    from prmlab.tracking import Progress

    shards = [items[i : i + shard_size] for i in range(0, len(items), shard_size)]
    prog = Progress(len(items), desc, unit=unit)
    out: list = []
    resumed = 0
    for i, chunk in enumerate(shards):
        if writer.done(i):
            recs = writer.read(i, cls)
            resumed += 1
        else:
            recs = work(i, chunk)
            writer.write(i, recs)
        out.extend(recs)
        prog.update(len(chunk))
    if resumed:
        print(f"[{desc}] resumed: {resumed}/{len(shards)} shards were already done", file=sys.stderr)
    return out


def fingerprint(*parts) -> str:
    import hashlib
    import json

    return hashlib.md5(json.dumps([str(p) for p in parts]).encode()).hexdigest()
