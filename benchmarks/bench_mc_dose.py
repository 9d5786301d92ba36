"""Benchmark: MC's dose-response, the completer's temperature against MC's label accuracy and the judge - MC F1 gap.

    python -m benchmarks.bench_mc_dose --study DIR --temperatures 0.7 0.9 1.1 1.3 1.5 --steps 3000

The study's Table 4 first half (F1 judge - mc_hard) is one point, made at a completer temperature chosen on the
development seed (docs/study.md). This puts that point on a curve. DIR is a study's workspace or a confirmation
seed's copy (scripts/seeds_plain.py leaves one): its params.yaml, problems, sampled responses, the judge's labels
and its toy ProcessBench (data/...). For each temperature, label_mc's own prepare and core label every response
with `label_mc.temperature` set to it (DIR's other label_mc params; shards under --work, so a killed run resumes),
and the benchmark records:

- MC's first-error accuracy against the verifier, with its 95% interval over problems (bench_labelling's `score`),
  and consensus's kept share (MC's first error equal to the judge's);
- the mc_hard PRM trained on those labels (train_prm's prepare and core: --steps, DIR's other settings), its
  held-out ProcessBench F1 and step AUC;
- F1 judge - mc_hard with its 95% interval: the study's own statistic (prmlab.analysis.findings.Findings.pb_diff:
  paired over items, problems resampled within subsets), against one judge PRM trained once on DIR's judge labels
  at the same steps, the fixed comparison.

One training seed per point, so the F1 intervals are ProcessBench's sampling alone, not training's (2-4 F1 points
across training seeds: reports/benchmarks.md). Results merge into --out by temperature after each point (a rerun
skips what it holds); DIR's own temperature is marked `study_default`. benchmarks/write_report.py turns the JSON into
a table and a curve. Cost on 2 cores: label_mc 12-16 min and a 3,000-step PRM 6-8 min per point.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from types import SimpleNamespace


def pb_rows(name: str, items: dict, scores: dict, threshold: float) -> list[dict]:
    """eval_processbench's per-item rows of one PRM at its tuned threshold (what the findings read)."""
    from prmlab.pipeline.processbench import prediction

    return [{"subset": s, "id": i.id, "label": i.label, "model": f"prm/{name}", "pred": prediction(i, x, threshold)}
            for s, its in items.items() for i, x in zip(its, scores[s])]


def train_and_score(source: str, train_file: Path, out: Path, cfg: dict, items: dict, tune: str,
                    trained: Path | None = None) -> dict:
    """A PRM of `source` trained on `train_file` (train_prm's own prepare and core, recording nothing), or the study's
    own where `trained` is its folder (same labels and settings: not trained twice), scored on the toy ProcessBench:
    its metrics and its per-item rows."""
    from prmlab.core.io import read_json
    from prmlab.core.result import Unrecorded
    from prmlab.pipeline.processbench import eval_prm
    from prmlab.prms.layouts import make_scorer
    from prmlab.prms.training import prepare_train, train_prm

    if trained is not None:
        m, out = read_json(trained.parents[2] / "metrics" / "train_prm" / f"{source}.json"), trained
        m["from"] = str(trained)
    else:
        inputs = prepare_train(SimpleNamespace(source=source, train=str(train_file), out=str(out)), cfg)
        m = train_prm(cfg, inputs, Unrecorded()).metrics
    with make_scorer("transformers", str(out), 32, 4096) as scorer:
        res, scores = eval_prm(scorer, items, tune, source)
    t = res["tuned"]["threshold"]
    return {"examples": m["examples"], "optimizer_steps": m["optimizer_steps"], "train_seconds": m["seconds"],
            **({"from": m["from"]} if "from" in m else {}),
            "f1_heldout": res["tuned"]["heldout_average_f1"], "step_auc_heldout": res["step_auc"]["heldout_average"],
            "threshold": t, "rows": pb_rows(source, items, scores, t)}


def plot(b: dict, path: Path) -> None:
    """The curve: MC's first-error accuracy and F1 judge - mc_hard against the temperature, 95% intervals, the
    study's own temperature marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = sorted(b["points"].values(), key=lambda p: p["temperature"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    for ax, key, label in ((axes[0], "mc_first_error_accuracy", "MC first-error accuracy (%) vs the verifier"),
                           (axes[1], "f1_judge_minus_mc", "ProcessBench F1: judge - mc_hard")):
        xs, ys = [p["temperature"] for p in pts], [p[key][0] for p in pts]
        err = [[p[key][0] - p[key][1] for p in pts], [p[key][2] - p[key][0] for p in pts]]
        ax.errorbar(xs, ys, yerr=err, fmt="o-", capsize=3, color="C0")
        for p in pts:
            if p["study_default"]:
                ax.plot([p["temperature"]], [p[key][0]], "o", ms=11, mfc="none", mec="C3", label="the study's own")
        if key == "f1_judge_minus_mc":
            ax.axhline(0, color="C7", lw=0.8)
        ax.set_xlabel("MC completer temperature")
        ax.set_title(label, fontsize=9)
        ax.legend(fontsize=8, loc="best")
    fig.suptitle(f"MC's dose-response ({pts[0]['steps']}-step PRMs, 95% intervals over problems)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", required=True, help="a study's workspace or a seed's copy (params.yaml, data/)")
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.7, 0.9, 1.1, 1.3, 1.5])
    ap.add_argument("--steps", type=int, default=0, help="each PRM's optimizer steps (0: DIR's train_prm.steps)")
    ap.add_argument("--search", default="sequential", help="label_mc.search at the other temperatures: sequential "
                    "gives exhaustive MC's labels (they stop at the first error) at about 0.65 of its rollouts")
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--work", default="/tmp/prmlab_mc_dose")
    ap.add_argument("--out", default="reports/benchmarks/mc_dose.json")
    a = ap.parse_args()

    from benchmarks.bench_labelling import score
    from benchmarks.bench_prm_budget import load_items, machine
    from prmlab.analysis.findings import Findings
    from prmlab.core import provenance
    from prmlab.core.io import read_jsonl, read_problems_and_responses, write_json, write_jsonl
    from prmlab.core.params import load_params
    from prmlab.core.records import JudgeLabel, MCLabel
    from prmlab.core.result import Unrecorded
    from prmlab.core.stage import set_threads
    from prmlab.engines.cluster import EngineConfig
    from prmlab.engines.config import BackendConfig
    from prmlab.pipeline.labeling import label_mc, prepare_mc
    from prmlab.pipeline.labeling_config import LabelMCConfig
    from prmlab.pipeline.processbench import EvalPBConfig
    from prmlab.pipeline.training_sets import agreement_counts, training_set
    from prmlab.prms.training import TrainPRMConfig

    set_threads()
    study, work = Path(a.study).resolve(), Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    params = str(study / "params.yaml")
    lcfg = load_params("label_mc", LabelMCConfig, params)
    policy = dataclasses.replace(load_params("policy", BackendConfig, params),
                                 model=str(study / load_params("policy", BackendConfig, params).model))
    tcfg = load_params("train_prm", TrainPRMConfig, params)
    own_steps = a.steps in (0, tcfg.steps)  # DIR's own PRMs are the points' at its temperature: read, not retrained
    tcfg = dataclasses.replace(tcfg, steps=a.steps or tcfg.steps)

    def own(source: str) -> Path | None:
        return (study / "models" / "prm" / source) if own_steps and (study / "models" / "prm" / source).is_dir() else None
    tune = load_params("eval_processbench", EvalPBConfig, params).threshold_subset
    data = study / "data"
    items = load_items(str(data / "processbench" / "items.jsonl"))
    judge_labels = {x.response_id: x for x in read_jsonl(data / "labels" / "judge.jsonl", JudgeLabel)}
    train_cfg = {"policy": policy, "train_prm": tcfg}
    results = json.loads(Path(a.out).read_text()) if Path(a.out).exists() else {}
    key_of = lambda t: f"{t:g}:{tcfg.steps}"  # noqa: E731
    todo = [t for t in a.temperatures if key_of(t) not in results.get("points", {})]
    if not todo:
        print(f"[bench_mc_dose] {a.out} holds every temperature asked")
        return

    problems, responses = read_problems_and_responses(str(data / "problems" / "train.jsonl"),
                                                      str(data / "samples" / "train.jsonl"))  # once: every point's
    # the fixed comparison: one judge PRM on DIR's judge labels, its rows kept under --work
    judge_file = work / f"judge_{tcfg.steps}.json"
    if not judge_file.exists():
        write_jsonl(work / "judge_train.jsonl", training_set("judge", problems, responses, {}, judge_labels))
        write_json(judge_file, train_and_score("judge", work / "judge_train.jsonl", work / f"prm_judge_{tcfg.steps}",
                                               train_cfg, items, tune, own("judge")))
    judge = json.loads(judge_file.read_text())
    print(f"[bench_mc_dose] judge PRM: held-out F1 {judge['f1_heldout']:.1f}, step AUC {judge['step_auc_heldout']:.3f}",
          flush=True)

    for t in todo:
        t0 = time.monotonic()
        default = t == lcfg.temperature
        search = lcfg.search if default else a.search
        cfg = {"label_mc": dataclasses.replace(lcfg, temperature=t, search=search), "policy": policy,
               "engine": EngineConfig()}
        labels_file = data / "labels" / "mc.jsonl" if default else work / f"mc_{t:g}.jsonl"  # DIR's own at its own
        stage_file = (study / "metrics" / "label_mc.json") if default else labels_file.with_suffix(".metrics.json")
        if not labels_file.exists():  # label_mc's own prepare and core (its shards resume a killed run)
            inputs = prepare_mc(SimpleNamespace(problems=str(data / "problems" / "train.jsonl"),
                                                samples=str(data / "samples" / "train.jsonl"), out=str(labels_file)), cfg)
            done = label_mc(cfg, inputs, Unrecorded())
            write_json(stage_file, {**done.metrics, "seconds": done.logged["seconds"]})
        stage = json.loads(stage_file.read_text()) if stage_file.exists() else {}
        marker = study / ".done" / "label_mc"  # a seeds_plain copy's own stage time
        label_s = stage.get("seconds") or (float(marker.read_text()) if default and marker.exists() else None)
        mc = {x.response_id: x for x in read_jsonl(labels_file, MCLabel)}
        acc = score(responses, {k: v.first_error for k, v in mc.items()}, {k: v.hard for k, v in mc.items()}, a.boot)
        kept = agreement_counts(responses, mc, judge_labels)["consensus_kept_share"]
        write_jsonl(work / f"mc_hard_{t:g}.jsonl", training_set("mc_hard", problems, responses, mc, {}))
        prm = train_and_score("mc_hard", work / f"mc_hard_{t:g}.jsonl", work / f"prm_mc_hard_{t:g}_{tcfg.steps}",
                              train_cfg, items, tune, own("mc_hard") if default else None)
        f = Findings(judge["rows"] + prm.pop("rows"), list(items), tune, [], {}, n_boot=a.boot)
        gap = f.pb_diff("judge", "mc_hard")
        results.setdefault("points", {})[key_of(t)] = {
            "temperature": t, "steps": tcfg.steps, "study_default": default,
            "mc_first_error_accuracy": [100 * acc["first_error_accuracy"], *(100 * x for x in acc["first_error_accuracy_ci"])],
            "mc_step_label_agreement": 100 * acc["step_label_agreement"], "consensus_kept": 100 * kept,
            "search": search, "rollouts": sum(x.rollouts for x in mc.values()), "label_mc_seconds": label_s,
            **{k: stage[k] for k in ("compared_responses", "first_error_agreement_with_exhaustive",
                                     "rollouts_share_of_exhaustive") if k in stage},
            "mc_hard": prm, "f1_judge_minus_mc": [float(x) for x in gap], "machine": machine()}
        results["judge"] = {k: v for k, v in judge.items() if k != "rows"}
        prepared = study / ".prepared"  # a seeds_plain copy names the commit it was made from
        results["study"] = {"dir": str(study), "label_mc": dataclasses.asdict(lcfg), "seed": lcfg.seed,
                            "commit": prepared.read_text().strip() if prepared.exists() else None,
                            "cpu": provenance.machine()["model"]}
        write_json(a.out, results)  # after each point: a crash or a stop keeps what was measured
        plot(results, Path(a.out).with_suffix(".png"))
        p = results["points"][key_of(t)]
        print(f"[bench_mc_dose] T {t:g}: MC first-error accuracy {p['mc_first_error_accuracy'][0]:.1f}, consensus keeps "
              f"{p['consensus_kept']:.1f}%, mc_hard F1 {prm['f1_heldout']:.1f}, judge - mc_hard {gap[0]:.1f} "
              f"[{gap[1]:.1f}, {gap[2]:.1f}] ({time.monotonic() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
