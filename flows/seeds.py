"""The study over several seeds, as DVC experiments, and the aggregate with intervals.

    python -m flows.seeds --seeds 6          # make study-seeds: seeds 0..5
    python -m flows.seeds --seeds 6 --aggregate-only   # just re-read the seeds' files and rewrite the aggregate
    python -m flows.seeds --seeds 6 --only 1           # one seed now (a CPU study is ~2 h), aggregate once all exist
    python -m flows.seeds --seeds 6 --record 1 --findings F --commit REV   # seed 1 run without DVC (flows/seeds_plain.py)

Seed k shifts every seed in params by k (the world's `toy.seed`, sampling, MC, judge, PRM training,
the toy ProcessBench), so seed 0 is the committed study itself (its reports/findings.json, nothing
runs) and each other seed draws new problems, new samples and new training. The toy models
(bootstrap@toy, committed; `toy_models.seed`) are the same in every seed, as a real study's policy
and judge are: the interval covers what the study itself draws. Each other seed is one `dvc exp run
-n seed-<k> -S ...` in the workspace, run by a Prefect task, one after another (DVC locks the repo).
Each seed's findings are kept in reports/seeds/seed-<k>.json (committed: a seed run in one session
counts in the next, whatever happened to the experiment's git ref) with the study they belong to
(`study_id`: the code, graph, params and toy models of the commit they ran from), so a seed of an older
study is never mixed into this one's aggregate. Where DVC is not (a lent GPU machine), flows/seeds_plain.py
runs seeds without it and `--record` files each one's findings. `prmlab.findings.aggregate_seeds` combines the seeds of the committed study:
mean, 95% t-interval across seeds, the mean within-seed bootstrap interval, and a verdict decided
by the across-seed interval; while some are missing, reports/seeds.md says which, and what to run.
Outputs: reports/seeds/seed-<k>.json, reports/seeds.md, reports/seeds.json (the commit whose study
they cover, wall time included). The workspace is left on the last seed's results: `git checkout --
. && dvc checkout` returns to the committed study.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from prefect import flow, get_run_logger, task

from flows.pipeline import _dvc
from flows.seeds_plain import git, shift_seeds


def seed_overrides(params: dict, k: int) -> list[str]:
    """`-S key=value` arguments for seed k: every seed key this profile has, shifted by k."""
    return [arg for key, v in shift_seeds(params, k).items() for arg in ("-S", f"{key}={v}")]


@task(task_run_name="dvc exp run seed-{k}")
def run_seed(k: int, project_dir: str, overrides: list[str]) -> str:
    log = get_run_logger()
    name = f"seed-{k}"
    if name in experiments(project_dir):  # from an earlier study: replaced, never mixed into this one's aggregate
        subprocess.run([_dvc(), "exp", "remove", name], cwd=project_dir, capture_output=True, text=True, check=True)
    proc = subprocess.run([_dvc(), "exp", "run", "-n", name, *overrides], cwd=project_dir,
                          capture_output=True, text=True)
    for line in (proc.stdout + proc.stderr).splitlines()[-20:]:
        log.info(line)
    if proc.returncode != 0:
        raise RuntimeError(f"dvc exp run {name} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return name


def experiments(project_dir: str) -> dict[str, str]:
    """DVC experiment name -> its commit (DVC keeps each experiment as a git ref, refs/exps/.../<name>)."""
    refs = subprocess.run(["git", "for-each-ref", "refs/exps", "--format=%(refname) %(objectname)"], cwd=project_dir,
                          capture_output=True, text=True, check=True).stdout.split("\n")
    return {ref.rsplit("/", 1)[-1]: obj for ref, obj in (line.split() for line in refs if line.strip())}


SEED_DIR = Path("reports") / "seeds"


# What decides a study's results, given its seeds: the code, the graph, every knob and the committed toy models.
STUDY_INPUTS = ("src", "stages", "dvc.yaml", "params.yaml", "models", "data/models")


def study_id(project_dir: str, rev: str = "HEAD") -> str:
    """The study a commit holds: a hash of git's object ids for STUDY_INPUTS at that commit. Commits that change
    only docs, reports, seed files or dvc.lock keep it: a regeneration of the same code and params (on another
    machine its PRMs differ in float summation order) is the same study drawn again, and a seed run from the
    commit before it, or outside DVC (flows/seeds_plain.py), counts for it. A code, params or model change
    makes a new study, whose seeds start over."""
    import hashlib

    return hashlib.md5(git(project_dir, "ls-tree", rev, "--", *STUDY_INPUTS).encode()).hexdigest()[:12]


def save_seed(project_dir: str, k: int) -> Path:
    """Seed k's findings into reports/seeds/seed-<k>.json with the commit it ran from and that commit's study:
    seed 0 is the committed study (HEAD's reports/findings.json), seed k > 0 its experiment's."""
    if k == 0:
        rev = base = git(project_dir, "rev-parse", "--short", "HEAD").strip()
        if why := stale_lock(project_dir, rev):  # HEAD's findings would be filed under a study that did not make them
            raise RuntimeError(f"seed 0 is HEAD's committed study, but {why}: run the study (dvc repro) and commit it first")
    else:
        sha = experiments(project_dir).get(f"seed-{k}")
        if sha is None:
            raise RuntimeError(f"no DVC experiment named seed-{k} (see `dvc exp show`)")
        rev, base = sha, git(project_dir, "rev-parse", "--short", f"{sha}^").strip()  # the commit it ran from
    def show(path: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=project_dir, capture_output=True, text=True)

    if (text := show("reports/findings.json")).returncode != 0:
        raise RuntimeError(f"seed {k} ({rev}) has no reports/findings.json: {text.stderr.strip()}")
    head = show("reports/headline.json")
    return write_seed(project_dir, k, base, json.loads(text.stdout), "the committed study" if k == 0 else f"dvc exp run -n seed-{k}",
                      json.loads(head.stdout) if head.returncode == 0 else None)


def stale_lock(project_dir: str, rev: str) -> str | None:
    """Why `rev`'s dvc.lock was not made from `rev`'s params and code, or None: each stage dvc.yaml generates
    that dvc.lock records ran with the params params.yaml holds and on the files git tracks (md5), all at
    `rev`. (dvc.lock keeps entries of stages dvc.yaml no longer has; they are not the study's.)"""
    import hashlib

    import yaml

    def lookup(tree, dotted: str):
        for part in dotted.split("."):
            tree = tree.get(part) if isinstance(tree, dict) else None
        return tree

    lock = yaml.safe_load(git(project_dir, "show", f"{rev}:dvc.lock"))["stages"]
    params = yaml.safe_load(git(project_dir, "show", f"{rev}:params.yaml"))
    stages = []  # dvc.yaml's stages, each foreach expanded over its params list or dict (`${section.key}`)
    for name, spec in yaml.safe_load(git(project_dir, "show", f"{rev}:dvc.yaml"))["stages"].items():
        items = lookup(params, spec["foreach"].strip()[2:-1]) if "foreach" in spec else None
        stages += [name] if "foreach" not in spec else [f"{name}@{item}" for item in items or []]
    tracked, md5 = set(git(project_dir, "ls-tree", "-r", "--name-only", rev).splitlines()), {}
    for stage in stages:
        entry = lock.get(stage) or {}
        for key, recorded in (entry.get("params") or {}).get("params.yaml", {}).items():
            if (value := lookup(params, key)) != recorded:
                return f"stage {stage} ran with params {key} = {recorded!r}, params.yaml says {value!r}"
        for dep in entry.get("deps", []):
            path = dep["path"]
            if path in tracked and not dep.get("md5", ".dir").endswith(".dir"):
                if path not in md5:
                    blob = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=project_dir, capture_output=True, check=True)
                    md5[path] = hashlib.md5(blob.stdout).hexdigest()
                if md5[path] != dep["md5"]:
                    return f"stage {stage} ran on another {path} than the one committed"
    return None


def write_seed(project_dir: str, k: int, commit: str, findings: dict, ran: str, headline: dict | None = None) -> Path:
    """reports/seeds/seed-<k>.json: a seed's findings (a report's reports/findings.json), the commit it ran
    from and that commit's study, how it ran, its exact-label PRMs against issue #26's targets, and its
    headline (reports/headline.json: each PRM's own figures; None where the run's was not kept)."""
    from prmlab.io import write_json

    out = Path(project_dir) / SEED_DIR / f"seed-{k}.json"
    write_json(out, {"seed": k, "commit": commit, "study": study_id(project_dir, commit), "ran": ran,
                     "findings": findings["findings"], "targets_26": findings.get("targets_26", {}), "headline": headline,
                     "machines": findings.get("machines", [])})
    return out


def collect(project_dir: str, seeds: int) -> tuple[dict[str, dict], dict[str, str]]:
    """The committed study's seeds from reports/seeds/: {seed-k: its file (`write_seed`)}, and {seed-k: why it
    does not count} for each missing seed or one of another study."""
    study = study_id(project_dir)
    recs, missing = {}, {}
    for k in range(seeds):
        name, f = f"seed-{k}", Path(project_dir) / SEED_DIR / f"seed-{k}.json"
        if not f.exists():
            missing[name] = "not run"
            continue
        rec = json.loads(f.read_text())
        if rec["study"] != study:
            missing[name] = f"ran from {rec['commit']}, another study (its code, params or models differ from HEAD's)"
            continue
        recs[name] = rec
    return recs, missing


def provenance(recs: dict[str, dict]) -> list[str]:
    """Markdown lines: each seed's commit and how it ran (the committed study, a DVC experiment, or elsewhere)."""
    return ["How each seed ran:", "", *[f"- {name}: commit {r['commit']}, {r['ran']}"
                                        + (f"; PRMs trained on {'; '.join(r['machines'])}" if r.get("machines") else "")
                                        for name, r in sorted(recs.items())], "",
            "Trained weights move with the CPU (its core count and its kernels: AVX-512, AVX2), labels do not "
            "(benchmarks/bench_determinism.py; issue #52): each seed's figures of a trained model are its machine's, "
            "and seeds run on several kinds of machine carry that spread in their across-seed interval.", ""] if recs else []


def runs(recs: dict[str, dict]) -> dict[str, dict[str, str]]:
    """reports/seeds.json's record of the seeds: the commit each ran from, and how."""
    return {"runs": {n: r["commit"] for n, r in recs.items()}, "ran": {n: r["ran"] for n, r in recs.items()}}


def targets_table(recs: dict[str, dict]) -> list[str]:
    """Markdown rows: each seed's PRMs trained on exact labels against issue #26's targets (step AUC >= 0.85 and
    Best-of-N above maj@N by the interval's lower end), as each seed's report judged them."""
    from prmlab.report import f3, signed_ci

    rows = [f"| {seed} | {name} | {f3(t['step_auc'])} | "
            f"{signed_ci(t['over_maj'].get('product'))} | {signed_ci(t['over_maj'].get('min'))} | "
            f"{'-' if t['met'] is None else 'met' if t['met'] else '**missed**'} |"
            for seed, r in sorted(recs.items()) for name, t in r["targets_26"].items()]
    if not rows:
        return []
    return ["The PRMs trained on exact labels against issue #26's targets (step AUC >= 0.85; Best-of-N (product or "
            "min) above maj@N by its 95% interval's lower end), per seed:", "",
            "| seed | PRM | step AUC | Best-of-N (product) - maj@N | Best-of-N (min) - maj@N | targets |",
            "|---|---|---|---|---|---|", *rows, ""]


# Each PRM's own figures across seeds (reports/seeds.md), from each seed's headline: (key, what, decimals).
HEADLINE_FIGURES = (("processbench_f1", "ProcessBench F1 (held-out subsets)", 1),
                    ("processbench_step_auc", "ProcessBench step AUC", 3),
                    ("best_of_n", "Best-of-8 accuracy (product; maj, pass, random for reference)", 1))


def prm_table(recs: dict[str, dict]) -> list[str]:
    """Markdown rows: each PRM's own figures per seed, as each seed's reports/headline.json has them, with their
    mean and sample sd over the seeds that kept a headline ('-' for one that did not): how far a PRM's figures
    move between seeds of one study (its world, samples and training run all redrawn)."""
    from statistics import mean, stdev

    names = [n for n, r in sorted(recs.items()) if r.get("headline")]
    if not names:
        return []
    cols = sorted(recs)
    md = ["Each PRM's own figures per seed (its seed's reports/headline.json), with the mean and sd over the seeds "
          f"that kept one ({len(names)} of {len(cols)}):", "",
          "| figure | model | " + " | ".join(cols) + " | mean | sd |", "|---|---|" + "---|" * (len(cols) + 2)]
    for key, what, nd in HEADLINE_FIGURES:
        models = dict.fromkeys(m for n in names for m, v in (recs[n]["headline"].get(key) or {}).items()
                               if m != "n" and isinstance(v, (int, float)))
        for i, model in enumerate(models):
            vals = [((recs[n].get("headline") or {}).get(key) or {}).get(model) for n in cols]
            pts = [v for v in vals if v is not None]
            cells = [*vals, mean(pts), stdev(pts) if len(pts) > 1 else None]
            md.append(f"| {what if i == 0 else ''} | {model} | " + " | ".join("-" if v is None else f"{v:.{nd}f}" for v in cells) + " |")
    return md + [""]


def write_pending(project_dir: str, seeds: int, recs: dict[str, dict], missing: dict[str, str]) -> None:
    """reports/seeds.{md,json} while some seeds of the committed study are missing: which, the command, and
    each finished seed's own estimates and verdicts side by side (no interval across seeds yet)."""
    from prmlab.io import atomic_write_text, write_json

    root, head = Path(project_dir), git(project_dir, "rev-parse", "--short", "HEAD").strip()
    write_json(root / "reports" / "seeds.json", {"commit": head, **runs(recs), "pending": missing, "findings": []})
    atomic_write_text(root / "reports" / "seeds.md", "\n".join([
        "# The study over several seeds", "",
        f"**Pending**: {len(recs)} of the {seeds} seeds of the committed study (commit {head}) have run"
        + (f" ({', '.join(sorted(recs))})" if recs else "") + "; no aggregate until all have. Missing:", "",
        *[f"- {name}: {why}; run `python -m flows.seeds --seeds {seeds} --only {name.split('-')[1]}`"
          for name, why in sorted(missing.items())], "", *provenance(recs),
        *per_seed_table({name: r["findings"] for name, r in recs.items()}), *targets_table(recs), *prm_table(recs)]) + "\n")


def per_seed_table(per_seed: dict[str, list[dict]]) -> list[str]:
    """Markdown rows: each finding's estimates, point [95% within-seed interval], and its verdict, per seed;
    every finding and estimate any seed has (as aggregate_seeds groups them by id), '-' where a seed lacks it."""
    if not per_seed:
        return []
    from prmlab.findings import group_by_id

    names = sorted(per_seed)
    md = ["Each seed that has run, on its own (point [95% within-seed interval]; a verdict per seed):", "",
          "| finding | estimate | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for by_run in group_by_id(per_seed).values():
        f, recs = next(iter(by_run.values())), [by_run.get(name) for name in names]
        for i, est in enumerate(dict.fromkeys(k for g in recs if g for k in g["estimates"])):
            cells = [("-" if not g or est not in g["estimates"] else "{:.1f} [{:.1f}, {:.1f}]".format(*g["estimates"][est]))
                     + (f" ({g['verdict']})" if g and i == 0 else "") for g in recs]
            md.append(f"| {f['claim'] if i == 0 else ''} | {est} | " + " | ".join(cells) + " |")
    return md + [""]


def seeds_for(sd: float, target: float, most: int = 100) -> int | None:
    """The fewest seeds whose across-seed 95% half-width (`prmlab.findings.t_interval`: Student t for k - 1
    degrees of freedom times sd / sqrt(k)) is at most `target`, at a per-seed spread `sd`; None beyond `most`."""
    from prmlab.findings import T95

    return next((k for k in range(2, most + 1) if T95.get(k - 1, 1.96) * sd / k ** 0.5 <= target), None)


def why_inconclusive(f: dict, runs: int) -> str:
    """Why an aggregate finding (aggregate_seeds' record, over `runs` seeds) is inconclusive, from its deciding estimates: an
    interval wider than the paper's effect (and how many seeds at the present spread would narrow it to that),
    one narrow enough that straddles 0 (an effect of the paper's size is then excluded), or one the paper gives
    no size for (and how many seeds would separate the present mean from 0). Every claim here points above 0, but
    the equalities: hard = soft within a margin of 0, and the kept share within a window about Fig. 2's 40% (how
    many seeds would place it wholly inside or outside the window's nearer end)."""
    from prmlab.findings import EQUAL_MARGIN, KEPT_MARGIN, T95, decide, deciding
    from prmlab.paper import CONSENSUS_KEPT
    from prmlab.stats import INCONCLUSIVE

    if f["verdict"] != INCONCLUSIVE:
        return ""
    if f["seeds"] < max(runs, 2) or any(e["seeds"] < f["seeds"] for e in f["estimates"].values()):
        return f"{runs - f['seeds']} of {runs} seeds lack it, or some seed lacks one of its estimates"
    names = [n for n in deciding(f["id"], f["estimates"])
             if decide(f["id"], {n: (f["estimates"][n]["lo"], f["estimates"][n]["hi"])}) == INCONCLUSIVE]
    out = []
    for n in names:
        e = f["estimates"][n]
        m, h, lo, hi = e["mean"], e["half_width"], e["lo"], e["hi"]
        sd = h * e["seeds"] ** 0.5 / T95.get(e["seeds"] - 1, 1.96)  # the per-seed spread behind the half-width
        if f["id"] == "hard_soft":  # an equality: |mean| + half-width within the margin
            gap = EQUAL_MARGIN - abs(m)
            out.append(f"{n} {m:+.1f} [{lo:.1f}, {hi:.1f}] is not within +-{EQUAL_MARGIN:g}; "
                       + (seeds_needed(sd, gap, f"bring it to +-{gap:.1f}") if gap > 0 else
                          "no number of seeds shows equality at this mean"))
        elif n == "kept_share":  # an equivalence to Fig. 2's "about 40%": a window, not a side of 0
            a, b = CONSENSUS_KEPT - KEPT_MARGIN, CONSENSUS_KEPT + KEPT_MARGIN
            edge, inside = min((a, b), key=lambda x: abs(m - x)), a <= m <= b
            out.append(f"{n} {m:.1f} [{lo:.1f}, {hi:.1f}] straddles {edge:g}, an end of the {a:g}-{b:g}% window that "
                       f"counts as Fig. 2's about {CONSENSUS_KEPT:g}%, its mean {abs(m - edge):.1f} points "
                       f"{'inside' if inside else 'outside'} it; "
                       + seeds_needed(sd, abs(m - edge), f"place the interval wholly {'inside' if inside else 'outside'} "
                                      f"({'reproduced' if inside else 'not reproduced'})"))
        elif (eff := e.get("paper_effect")) and h > eff:
            out.append(f"{n}: +-{h:.1f} across seeds is wider than the paper's effect {eff:g}; "
                       + seeds_needed(sd, eff, f"bring it to +-{eff:.1f}"))
        elif eff:
            out.append(f"{n} [{lo:.1f}, {hi:.1f}] is narrow enough for the paper's effect ({eff:g}) and straddles 0: "
                       + (f"an effect of the paper's size is excluded (at most {hi:.1f})" if hi < eff else
                          "the toy's effect, if any, is smaller than the interval resolves"))
        else:
            out.append(f"{n} {m:+.1f} [{lo:.1f}, {hi:.1f}] straddles 0 and the paper gives it no size; "
                       + seeds_needed(sd, abs(m), f"separate a mean of {m:+.1f} from 0"))
    return "; ".join(out)


def seeds_needed(sd: float, target: float, goal: str) -> str:
    """'about k seeds at this spread would <goal>', k the fewest whose half-width is at most `target` (> 0)."""
    k = seeds_for(sd, target) if target > 0 else None
    return (f"about {k} seeds at this spread would {goal}" if k else
            f"more than 100 seeds at this spread would be needed to {goal}")


def write_aggregate(project_dir: str, recs: dict[str, dict], seconds: float | None) -> list[dict]:
    from prmlab.findings import aggregate_seeds
    from prmlab.io import atomic_write_text, write_json

    per_seed, seen = {n: r["findings"] for n, r in recs.items()}, runs(recs)
    agg = [{**f, "why_inconclusive": why_inconclusive(f, len(per_seed))} for f in aggregate_seeds(per_seed)]
    root = Path(project_dir)
    base = seen["runs"]
    commits = sorted(set(base.values()))
    write_json(root / "reports" / "seeds.json", {"commit": commits[0] if len(commits) == 1 else commits, **seen,
                                                 "wall_seconds": seconds, "findings": agg})
    md = ["# The study over several seeds", "",
          (f"The study of commit {commits[0]} (seed 0 is its committed study)" if len(commits) == 1 else
           "Seeds of one study (the same code, params and models) run from several commits: "
           + ", ".join(f"{k} {v}" for k, v in sorted(base.items())))
          + f"; runs: {', '.join(sorted(per_seed))}"
          + (f"; wall time {seconds / 60:.1f} min on this machine." if seconds else "."), "", *provenance(recs),
          "Per estimate: the mean over seeds; its 95% interval across seeds (each seed its own world, samples and "
          "training): Student t for k - 1 degrees of freedom on the larger of the across-seed variance and the mean "
          "within-seed bootstrap variance, so a few seeds that happen to agree cannot give an interval narrower than "
          "one seed's own noise (`prmlab.findings.t_interval`); and the mean within-seed bootstrap interval (problem "
          "sampling only). The verdict follows the across-seed interval, by the rule one seed's follows; "
          "\"every seed\" says whether each seed's own verdict is the same. \"+-\" is the across-seed half-width beside "
          "the paper's effect it is meant to detect, where the paper gives one.", "",
          "| finding | estimate | mean | 95% across seeds | +- vs paper | within-seed (mean) | per seed | verdict | every seed | per-seed verdicts |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for f in agg:
        for i, (name, e) in enumerate(f["estimates"].items()):
            prec = f"{e['half_width']:.1f}" + (f" vs {e['paper_effect']:g}" if e.get("paper_effect") else "")
            md.append(f"| {f['claim'] if i == 0 else ''} | {name} | {e['mean']:.2f} | [{e['lo']:.2f}, {e['hi']:.2f}] | {prec} | "
                      f"[{e['within_seed_lo']:.2f}, {e['within_seed_hi']:.2f}] | {', '.join(f'{x:.1f}' for x in e['points'])} | "
                      f"{f['verdict'] if i == 0 else ''} | {('yes' if f['holds_on_every_seed'] else 'no') if i == 0 else ''} | "
                      f"{', '.join(f['per_seed_verdicts']) if i == 0 else ''} |")
    why = [f"- {f['claim']}: {f['why_inconclusive']}." for f in agg if f["why_inconclusive"]]
    md += ["", *(["Why each inconclusive verdict is inconclusive (the across-seed intervals above; \"seeds\" counts "
                  "assume the present per-seed spread):", "", *why, ""] if why else []),
           *targets_table(recs), *prm_table(recs), "The paper's side of each claim, quoted:", ""] + [f"- {f['paper']}" for f in agg]
    atomic_write_text(root / "reports" / "seeds.md", "\n".join(md) + "\n")
    return agg


@flow(name="prmlab-seeds", log_prints=True)
def seeds_study(project_dir: str = ".", seeds: int = 6, aggregate_only: bool = False,
                only: list[int] | None = None) -> list[dict]:
    import yaml

    if seeds < 2:
        raise ValueError("--seeds must be >= 2: an interval across seeds needs two")
    # The committed params, not the workspace's: a previous `dvc exp run` leaves its seed's values there, and
    # seeds shifted from those would repeat that seed under another name.
    params = yaml.safe_load(subprocess.run(["git", "show", "HEAD:params.yaml"], cwd=project_dir, capture_output=True,
                                           text=True, check=True).stdout)
    t0 = time.monotonic()
    for k in (only if only is not None else [] if aggregate_only else range(seeds)):
        if k > 0:  # seed 0 is the committed study: its findings are read, nothing runs
            run_seed(k, project_dir, seed_overrides(params, k))
        save_seed(project_dir, k)
    seconds = None if aggregate_only or only is not None else time.monotonic() - t0
    recs, missing = collect(project_dir, seeds)
    if missing:
        write_pending(project_dir, seeds, recs, missing)
        print(f"seeds {', '.join(sorted(recs)) or 'none'} of this study have run; the aggregate waits for "
              + "; ".join(f"{k} ({why})" for k, why in sorted(missing.items())) + f" (python -m flows.seeds --seeds {seeds} --only K)")
        return []
    return write_aggregate(project_dir, recs, seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project-dir", default=".")
    ap.add_argument("--seeds", type=int, default=6, help="seeds 0..N-1 (make study-seeds' SEEDS)")
    ap.add_argument("--aggregate-only", action="store_true")
    ap.add_argument("--only", type=int, nargs="+", help="run just these seeds; aggregate when seeds 0..N-1 all exist")
    ap.add_argument("--record", type=int, metavar="K", help="record seed K run elsewhere (flows/seeds_plain.py), then aggregate")
    ap.add_argument("--findings", help="with --record: that run's reports/findings.json")
    ap.add_argument("--commit", help="with --record: the commit it ran from (it must hold HEAD's study)")
    ap.add_argument("--ran-on", default="another machine", help="with --record: where and how it ran, kept in the seed's file")
    ap.add_argument("--headline", help="with --record: that run's reports/headline.json (default: beside --findings, if there)")
    a = ap.parse_args()
    if a.record is not None:
        if not (a.findings and a.commit) or not 1 <= a.record < a.seeds:
            ap.error(f"--record K (1 <= K < --seeds {a.seeds}) needs --findings and --commit")
        try:
            commit = git(a.project_dir, "rev-parse", "--short", f"{a.commit}^{{commit}}").strip()
        except subprocess.CalledProcessError:
            ap.error(f"--commit {a.commit}: no such commit")
        if study_id(a.project_dir, commit) != study_id(a.project_dir):
            ap.error(f"--commit {commit} holds another study than HEAD (src, stages, dvc.yaml, params.yaml or models differ)")
        headline = Path(a.headline or Path(a.findings).with_name("headline.json"))
        if a.headline and not headline.exists():
            ap.error(f"--headline {headline}: no such file")
        out = write_seed(a.project_dir, a.record, commit, json.loads(Path(a.findings).read_text()),
                         f"flows.seeds_plain on {a.ran_on}", json.loads(headline.read_text()) if headline.exists() else None)
        print(f"recorded seed {a.record} from {a.findings} -> {out}")
    try:
        agg = seeds_study(project_dir=a.project_dir, seeds=a.seeds, aggregate_only=a.aggregate_only or a.record is not None,
                          only=a.only)
    except RuntimeError as e:
        ap.exit(2, f"error: {e}\n")
    for f in agg:
        print(f"{f['verdict']:>15}  {f['claim']}")


if __name__ == "__main__":
    main()
