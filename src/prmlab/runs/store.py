"""The study store: which study a commit holds, the pinned one, and the files its seeds and sweeps leave behind.

What: a study is its code, graph, params and committed toy models (`STUDY_INPUTS`); `study_id` hashes them at a
commit, so a commit that changes only docs, reports, seed files or dvc.lock keeps the study and any other change
makes a new one. The confirmation seeds run from the pinned study (`pin`, reports/study.json), each in its own
clone (`prepare_seed_clone`), and are filed under their study (`write_seed`), so a seed of an older study is never
mixed into this one's aggregate (`collect`). A sweep point (one params value at one seed) is filed the same way
(`save_point`). Running anything (DVC, Prefect) is the flows' job (flows/seeds.py, flows/sweep.py, flows/demo.py);
this module only reads git and writes files.
Inputs: a project folder (a git checkout): its commits, reports/findings.json and headline.json of a run,
reports/protocol.md. Outputs: reports/study.json, reports/seeds/<study>/seed-<k>.json, reports/seeds.{md,json}
and the forest plot, reports/benchmarks/seed_cost.json, reports/sweeps/<key>/<value>-seed-<k>.json and the sweep's
page reports/sweeps/<key>.{md,json}.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import yaml

from prmlab.analysis import plots, protocol
from prmlab.core.io import DataError, atomic_write_text, inside, read_json, write_json
from prmlab.core.params import STAGES, ProfileConfig, load_params, read_params, shift_seeds
from prmlab.core.provenance import git
from prmlab.report.seeds import (
    FOREST_JSON,
    FOREST_PNG,
    README_START,
    TARGETS,
    aggregate_page,
    exact_label_targets,
    forest_rows,
    pending_page,
    readme_results,
    with_readme_results,
)
from prmlab.report.sweep import point_measures, sweep_page
from prmlab.runs.processes import venv_tool

# What decides a study's results, given its seeds: the code, the graph, every knob and the committed toy models.
STUDY_INPUTS = ("src", "stages", "dvc.yaml", "params.yaml", "models", "data/models")
SEED_DIR = Path("reports") / "seeds"
SWEEP_DIR = Path("reports") / "sweeps"
COST = Path("reports") / "benchmarks" / "seed_cost.json"


# ------------------------------------------------------------------------------------------------- the study


def study_id(project_dir: str | Path, rev: str = "HEAD") -> str:
    """The study a commit holds: a hash of git's object ids for STUDY_INPUTS at that commit. Commits that change
    only docs, reports, seed files or dvc.lock keep it: a regeneration of the same code and params (on another
    machine its PRMs differ in float summation order) is the same study drawn again, and a seed run from the
    commit before it, or outside DVC (scripts/seeds_plain.py), counts for it. A code, params or model change
    makes a new study, whose seeds start over."""
    return hashlib.md5(git(project_dir, "ls-tree", rev, "--", *STUDY_INPUTS).encode()).hexdigest()[:12]


def pinned(project_dir: str | Path) -> dict | None:
    """reports/study.json: {"commit", "study"} of the pinned study, None before a pin."""
    f = Path(project_dir) / protocol.PIN
    return json.loads(f.read_text()) if f.exists() else None


def this_study(project_dir: str | Path) -> str:
    """The study whose seeds count: the pinned one (reports/study.json), else HEAD's."""
    return p["study"] if (p := pinned(project_dir)) else study_id(project_dir)


def pin(project_dir: str | Path, rev: str) -> dict:
    """Pin the study at commit `rev`: it must hold reports/protocol.md as prmlab.analysis.protocol renders it there (the
    protocol precedes every seed that runs from it)."""
    commit = git(project_dir, "rev-parse", "--short", f"{rev}^{{commit}}").strip()
    page = subprocess.run(["git", "show", f"{commit}:{protocol.PAGE}"], cwd=project_dir, capture_output=True, text=True)
    if page.returncode != 0:
        raise RuntimeError(f"commit {commit} has no {protocol.PAGE}: write it (--protocol) and commit it first")
    rec = {"commit": commit, "study": study_id(project_dir, commit)}
    write_json(Path(project_dir) / protocol.PIN, rec)
    return rec


def pin_line(project_dir: str | Path) -> str:
    """The pinned study's commit and whether HEAD still makes the same study (its STUDY_INPUTS unchanged since the
    pin), naming what changed where it does not; "" before a pin."""
    if (p := pinned(project_dir)) is None:
        return ""
    head = git(project_dir, "rev-parse", "--short", "HEAD").strip()
    changed = git(project_dir, "diff", "--name-only", p["commit"], "HEAD", "--", *STUDY_INPUTS).split()
    same = ("HEAD makes the same study" if not changed else
            f"HEAD ({head}) changed {len(changed)} of its files since ({', '.join(changed[:6])}"
            + (", ..." if len(changed) > 6 else "") + "): its seeds still run from the pinned commit")
    return (f"Pinned study {p['study']} at commit {p['commit']} (reports/study.json; its protocol: reports/protocol.md). "
            f"{same}.")


def profile_stages(project_dir: str | Path = ".") -> list[str]:
    """The stage groups the project's params.yaml profile has, in order (what `prmlab run` runs by default)."""
    path = Path(project_dir) / "params.yaml"
    profile = load_params("profile", ProfileConfig, path)
    params = read_params(path)
    human = bool(params.get("human_labels"))
    methods = bool((params.get("label_methods") or {}).get("sources"))
    # human_data exists only where params human_labels names a file, label_method where label_methods.sources names one
    return [s for s in STAGES if profile.has(s) and (s != "human_data" or human) and (s != "label_method" or methods)]


def seed_overrides(params: dict, k: int) -> list[str]:
    """`-S key=value` arguments for seed k: every seed key this profile has, shifted by k."""
    return [arg for key, v in shift_seeds(params, k).items() for arg in ("-S", f"{key}={v}")]


def experiments(project_dir: str | Path) -> dict[str, str]:
    """DVC experiment name -> its commit (DVC keeps each experiment as a git ref, refs/exps/.../<name>)."""
    refs = subprocess.run(["git", "for-each-ref", "refs/exps", "--format=%(refname) %(objectname)"], cwd=project_dir,
                          capture_output=True, text=True, check=True).stdout.split("\n")
    return {ref.rsplit("/", 1)[-1]: obj for ref, obj in (line.split() for line in refs if line.strip())}


# ------------------------------------------------------------------------------------------------- the seeds


def seed_file(project_dir: str | Path, study: str, k: int) -> Path:
    """Seed k's file of `study`: reports/seeds/<study>/seed-<k>.json, so one study's seeds never overwrite
    another's; an older study's filed flat (reports/seeds/seed-<k>.json, the exploratory study's) is read where its
    own folder lacks one."""
    own = Path(project_dir) / SEED_DIR / study / f"seed-{k}.json"
    return own if own.exists() or not (flat := Path(project_dir) / SEED_DIR / f"seed-{k}.json").exists() else flat


def prepare_seed_clone(project_dir: str | Path, k: int, pin_rec: dict) -> Path:
    """Confirmation seed k's clone of the pinned commit, runs/seeds/<study>/seed-<k> (reused: DVC's lock there
    resumes a killed seed), its params.yaml the protocol's seed params (prmlab.analysis.protocol.seed_params), and the
    committed outputs of the stages a seed does not run removed."""
    root = Path(project_dir).resolve()
    d = root / "runs" / "seeds" / pin_rec["study"] / f"seed-{k}"
    if not (d / ".git").exists():
        d.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(root), str(d)], check=True)
        subprocess.run(["git", "checkout", "-q", pin_rec["commit"]], cwd=d, check=True)
    params = yaml.safe_load(git(d, "show", f"{pin_rec['commit']}:params.yaml"))
    seed = protocol.apply(params, protocol.seed_params(params, k))
    # The committed files of stages a seed does not run (ceiling@toy's and toy_human@toy's metrics, the other PRMs'):
    # the development seed's, never to be read as this seed's (its report reads the metrics folder).
    lock = yaml.safe_load((d / "dvc.lock").read_text()) if (d / "dvc.lock").exists() else {}
    for name, st in (lock.get("stages") or {}).items():
        if not protocol.runs_in(name, seed):
            for o in st.get("outs", []):
                if inside(d, o["path"]):
                    p = d / o["path"]
                    shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
    (d / "params.yaml").write_text(yaml.safe_dump(seed, sort_keys=False))
    return d


def file_seed_run(project_dir: str | Path, k: int, pin_rec: dict, d: Path, minutes: float) -> Path:
    """Seed k's finished run in its clone `d` filed (`write_seed`) and its cost recorded (`record_cost`)."""
    head = d / "reports" / "headline.json"
    out = write_seed(project_dir, k, pin_rec["commit"], json.loads((d / "reports" / "findings.json").read_text()),
                     f"dvc repro in a clone of {pin_rec['commit']} ({minutes:.1f} min)",
                     json.loads(head.read_text()) if head.exists() else None)
    record_cost(project_dir, pin_rec["study"], k, minutes, stage_seconds(d / "mlflow.db"), json.loads(out.read_text()))
    return out


def stage_seconds(db: Path) -> dict[str, float]:
    """Each stage's own time in a seed's clone, from its MLflow store's runs (start to end; a stage process's start-up
    and DVC's checks between stages are in the seed's total only)."""
    if not db.exists():
        return {}
    with sqlite3.connect(db) as c:
        rows = c.execute("select name, start_time, end_time from runs where end_time is not null").fetchall()
    return {name: (end - start) / 1000 for name, start, end in rows}


def record_cost(project_dir: str | Path, study: str, k: int, minutes: float, stages: dict[str, float], rec: dict) -> None:
    """reports/benchmarks/seed_cost.json: each confirmation seed's wall minutes on its machine (the protocol's
    per-seed cost), its stages' seconds, and the PRM training share, keyed by study and seed."""
    path = Path(project_dir) / COST
    got = read_json(path) if path.exists() else {}
    prms = sum(v for n, v in stages.items() if n.startswith("train_prm@"))
    got[f"{study}/seed-{k}"] = {"seed_minutes": round(minutes, 1), "train_prm_minutes": round(prms / 60, 1),
                                "machine": rec.get("machine"), "torch": rec.get("torch"), "cores": os.cpu_count(),
                                "stages_seconds": {n: round(v, 1) for n, v in sorted(stages.items())}}
    write_json(path, got)


def stale_lock(project_dir: str) -> str | None:
    """Why HEAD's committed findings are not HEAD's study, or None: the study's files (STUDY_INPUTS, dvc.lock)
    differ from HEAD's in the workspace, or `dvc status` finds a stage whose code, params or committed data
    changed since dvc.lock recorded it (a dependency DVC has not fetched, "deleted", is no change of the study, nor is
    reports/seeds.json, the seeds' aggregate that flows.seeds writes and the report shows)."""
    if git(project_dir, "status", "--porcelain", "--untracked-files=no", "--", *STUDY_INPUTS, "dvc.lock").strip():
        return "the study's files in the workspace differ from HEAD's"
    status = subprocess.run([venv_tool("dvc"), "status", "--json"], cwd=project_dir, capture_output=True, text=True, check=True)
    for stage, changes in json.loads(status.stdout).items():
        for dep, how in next((c["changed deps"] for c in changes if isinstance(c, dict) and "changed deps" in c), {}).items():
            if how != "deleted" and dep != "reports/seeds.json":  # the seeds' own aggregate: what the report shows
                return f"stage {stage} ran on another {dep} than the one committed ({how})"
    return None


def save_development_seed(project_dir: str | Path) -> Path:
    """Seed 0, the development seed: HEAD's committed study (its reports/findings.json), filed with HEAD's commit
    and study, once `stale_lock` finds that HEAD's committed findings are HEAD's study."""
    if why := stale_lock(project_dir):  # HEAD's findings would be filed under a study that did not make them
        raise RuntimeError(f"seed 0 is HEAD's committed study, but {why}: run the study (dvc repro) and commit it first")
    rev = git(project_dir, "rev-parse", "--short", "HEAD").strip()

    def show(path: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=project_dir, capture_output=True, text=True)

    if (text := show("reports/findings.json")).returncode != 0:
        raise RuntimeError(f"seed 0 ({rev}) has no reports/findings.json: {text.stderr.strip()}")
    head = show("reports/headline.json")
    return write_seed(project_dir, 0, rev, json.loads(text.stdout), "the committed study",
                      json.loads(head.stdout) if head.returncode == 0 else None)


def record_seed(project_dir: str | Path, k: int, seeds: int, findings: str | None, commit: str | None, ran_on: str,
                headline: str | None) -> Path:
    """Seed k run elsewhere (scripts/seeds_plain.py) filed from its `findings` file (reports/findings.json) and
    `headline` (default: headline.json beside it, if there), once its `commit` is known to hold this study; a
    ValueError naming the option otherwise."""
    if not (findings and commit) or not 1 <= k <= seeds:
        raise ValueError(f"--record K (1 <= K <= --seeds {seeds}) needs --findings and --commit")
    if not Path(findings).is_file():
        raise ValueError(f"--findings {findings}: no such file")
    head = Path(headline or Path(findings).with_name("headline.json"))
    if headline and not head.exists():
        raise ValueError(f"--headline {head}: no such file")
    # both files read and checked before the commit check and before Prefect starts: a truncated one had been a
    # traceback from inside the flow
    try:
        found, head_rec = read_json(findings), read_json(head) if head.exists() else None
    except DataError as e:
        raise ValueError(f"--findings/--headline: {e}") from None
    if not (isinstance(found, dict) and isinstance(found.get("findings"), list)):
        raise ValueError(f"--findings {findings}: not a report's findings.json (no list 'findings')")
    if head_rec is not None and not isinstance(head_rec, dict):
        raise ValueError(f"--headline {head}: not a report's headline.json (not a JSON object)")
    try:
        rev = git(project_dir, "rev-parse", "--short", f"{commit}^{{commit}}").strip()
    except subprocess.CalledProcessError:
        raise ValueError(f"--commit {commit}: no such commit") from None
    if study_id(project_dir, rev) != this_study(project_dir):
        raise ValueError(f"--commit {rev} holds another study than the pinned one (src, stages, dvc.yaml, params.yaml or "
                         "models differ)")
    return write_seed(project_dir, k, rev, found, f"scripts.seeds_plain on {ran_on}", head_rec)


def write_seed(project_dir: str | Path, k: int, commit: str, findings: dict, ran: str, headline: dict | None = None) -> Path:
    """reports/seeds/<study>/seed-<k>.json: a seed's findings (a report's reports/findings.json), the commit it ran
    from and that commit's study, how it ran, its exact-label PRMs against the paper's targets, its headline
    (reports/headline.json: each PRM's own figures; None where the run's was not kept), and the machine and torch
    build its models computed on, as its own report recorded them (findings.json's `device`: the run's, never this
    process's, which may only be filing a seed run elsewhere; None where that report predates the field, and
    reports/seeds.md reads it as "not recorded")."""
    study = study_id(project_dir, commit)
    out = Path(project_dir) / SEED_DIR / study / f"seed-{k}.json"
    dev = findings.get("device") or {}
    write_json(out, {"seed": k, "commit": commit, "study": study, "ran": ran,
                     "findings": findings["findings"], TARGETS: exact_label_targets(findings), "headline": headline,
                     "machines": findings.get("machines", []), "machine": dev.get("machine"), "torch": dev.get("torch")})
    return out


def collect(project_dir: str | Path, seeds: int, study: str | None = None) -> tuple[dict[str, dict], dict[str, str]]:
    """The committed study's seeds from reports/seeds/ (or those filed under `study`, an older study's id): {seed-k:
    its file (`write_seed`)}, and {seed-k: why it does not count} for each missing seed or one of another study."""
    pin_rec = None if study else pinned(project_dir)
    wanted = study or this_study(project_dir)
    recs, missing = {}, {}
    for k in (range(seeds) if study else range(1, seeds + 1)):  # an older study's seeds counted 0; this one's 1..N
        # the pinned study's seeds are in its own folder only; the flat files are an older study's
        name, f = f"seed-{k}", (Path(project_dir) / SEED_DIR / wanted / f"seed-{k}.json" if pin_rec
                                else seed_file(project_dir, wanted, k))
        if not f.exists():
            missing[name] = "not run"
            continue
        rec = json.loads(f.read_text())
        if rec["study"] != wanted:
            missing[name] = (f"ran from {rec['commit']}, another study (its code, params or models differ from HEAD's)"
                             if study is None else f"ran from {rec['commit']}, study {rec['study']}, not {study}")
            continue
        recs[name] = rec
    return recs, missing


def development_seed(project_dir: str | Path, study: str | None = None) -> dict | None:
    """The development seed's file (seed 0) where it belongs to the study aggregated, else None."""
    wanted = study or this_study(project_dir)
    f = seed_file(project_dir, wanted, protocol.DEVELOPMENT_SEED)
    return rec if f.exists() and (rec := json.loads(f.read_text()))["study"] == wanted else None


def write_pending(project_dir: str | Path, seeds: int, recs: dict[str, dict], missing: dict[str, str]) -> None:
    """reports/seeds.{json,md} while some seeds are missing: which ran, which not, and what to run."""
    root = Path(project_dir)
    head = p["commit"] if (p := pinned(project_dir)) else git(project_dir, "rev-parse", "--short", "HEAD").strip()
    record, md = pending_page(seeds, recs, missing, head, pin_line(project_dir))
    write_json(root / "reports" / "seeds.json", record)
    atomic_write_text(root / "reports" / "seeds.md", md)
    write_readme_results(root, record)


def write_aggregate(project_dir: str | Path, recs: dict[str, dict], seconds: float | None, dev: dict | None = None,
                    pinned_study: bool = True) -> list[dict]:
    """reports/seeds.{json,md} across the seeds `recs`, with the forest plot and its rows; returns the aggregate."""
    agg, record, md = aggregate_page(recs, seconds, dev, pin_line(project_dir) if pinned_study else "")
    # the across-seed forest plot the page shows, and its rows for `dvc plots show` (dvc.yaml's plots)
    reports = Path(project_dir) / "reports"
    fig = plots.findings_intervals(agg)
    fig.savefig(reports / FOREST_PNG, dpi=110)
    plots.plt.close(fig)
    write_json(reports / FOREST_JSON, forest_rows(agg))
    write_json(reports / "seeds.json", record)
    atomic_write_text(reports / "seeds.md", md)
    write_readme_results(project_dir, record)
    return agg


def write_readme_results(project_dir: str | Path, seeds: dict | None) -> None:
    """README.md's results block from the committed reports/findings.json and `seeds`, the record just written to
    reports/seeds.json (the report's first table: prmlab.report.seeds.readme_results), so the front page says what
    the seeds decide, generated."""
    root = Path(project_dir)
    readme = root / "README.md"
    if not readme.exists() or README_START not in (text := readme.read_text()):  # a fork's own README: said, not failed
        print(f"{readme}: no results block ({README_START[:13]}... markers): its results were not rewritten", file=sys.stderr)
        return
    findings = read_json(root / "reports" / "findings.json")
    atomic_write_text(readme, with_readme_results(text, readme_results(findings, seeds)))


# ------------------------------------------------------------------------------------------------- sweep points


def lookup(params: dict, key: str):
    """The value of the dotted params key `key`, or a ValueError naming it."""
    node = params
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"{key}: no such params key (params.yaml)")
        node = node[part]
    return node


def point_name(key: str, value, k: int) -> str:
    """A sweep point's DVC experiment name: a git ref component (DVC keeps it as refs/exps/.../<name>)."""
    return f"sweep-{key.replace('.', '_')}-{value}-s{k}"


def point_file(project_dir: str | Path, key: str, value, k: int) -> Path:
    """reports/sweeps/<key>/<value>-seed-<k>.json, or a ValueError naming the value where that is no file of that
    folder (a value with `/` or `..` would write elsewhere, or where the page never reads it)."""
    folder = Path(project_dir) / SWEEP_DIR / key
    name = f"{value}-seed-{k}.json"
    if Path(name).name != name or not inside(folder, name):
        raise ValueError(f"value {value!r} of {key}: not a plain name (it names the point's file in {SWEEP_DIR / key})")
    return folder / name


def save_point(project_dir: str | Path, key: str, value, k: int, rev: str | None) -> Path:
    """Point (value, k)'s measures into reports/sweeps/<key>/<value>-seed-<k>.json from `rev` (an experiment's
    commit; None: HEAD's committed study), with the commit it ran from and that commit's study."""
    base = git(project_dir, "rev-parse", "--short", f"{rev}^" if rev else "HEAD").strip()

    def show(path: str) -> dict:
        p = subprocess.run(["git", "show", f"{rev or 'HEAD'}:{path}"], cwd=project_dir, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"sweep point {key}={value}, seed {k} ({rev or 'HEAD'}) has no {path}: {p.stderr.strip()}")
        return json.loads(p.stdout)

    out = point_file(project_dir, key, value, k)
    write_json(out, {"key": key, "value": value, "seed": k, "commit": base, "study": study_id(project_dir, base),
                     "ran": "the committed study" if rev is None else f"dvc exp run -n {point_name(key, value, k)}",
                     "measures": point_measures(show("reports/findings.json"), show("metrics/consensus.json"))})
    return out


def write_sweep_page(project_dir: str | Path, key: str, default) -> tuple[dict, list[str]]:
    """The sweep's page, reports/sweeps/<key>.{md,json}, from the points of HEAD's study; the files left out
    (another study's)."""
    study, points, other = study_id(project_dir), [], []
    for f in sorted((Path(project_dir) / SWEEP_DIR / key).glob("*-seed-*.json")):
        rec = json.loads(f.read_text())
        (points if rec["study"] == study else other).append(rec if rec["study"] == study else f.name)
    record, md = sweep_page(key, default, points)
    if other:
        md += f"\nLeft out, of another study (its code, params or models differ from HEAD's): {', '.join(other)}\n"
    write_json(Path(project_dir) / SWEEP_DIR / f"{key}.json", record | {"left_out": other})
    atomic_write_text(Path(project_dir) / SWEEP_DIR / f"{key}.md", md)
    return record, other


# ------------------------------------------------------------------------------------------------- the demo


def demo_params(params: dict, over: dict) -> dict:
    """params.yaml with each section's keys in `over` (params/demo.yaml) put over its own: a key given replaces
    that key's value whole, a section's other keys stay. A section or key params.yaml lacks is an error (a typo
    would otherwise run the study's size silently)."""
    out = copy.deepcopy(params)
    for sec, keys in over.items():
        if sec not in out or not isinstance(keys, dict):
            raise SystemExit(f"params/demo.yaml: section {sec!r} is not a params.yaml section of mappings")
        for k, v in keys.items():
            if k not in out[sec]:
                raise SystemExit(f"params/demo.yaml: {sec}.{k} is not a params.yaml key")
            out[sec][k] = v
    return out


def clone_head(project: Path, d: Path) -> str:
    """`d` as a git clone of `project` at its HEAD (a rerun moves it to the new HEAD); returns the commit."""
    head = git(project, "rev-parse", "HEAD").strip()
    if not (d / ".git").exists():
        d.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(project), str(d)], check=True)
    else:
        subprocess.run(["git", "fetch", "-q", str(project), "HEAD"], cwd=d, check=True)
    subprocess.run(["git", "checkout", "-q", "-f", head], cwd=d, check=True)
    return head
