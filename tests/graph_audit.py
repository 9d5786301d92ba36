"""Checks a finished `dvc repro` against dvc.yaml: every project file a stage process read or
imported is one of its declared dependencies (or inside one), its own output, or tracking state.

The processes were run with tests/audit/sitecustomize.py on PYTHONPATH (see `audit_env`), which
logs each process's argv, reads and imported module files. A log is matched to its DVC stage by
the DVC_STAGE that DVC set for it (a foreach group's stages share one command), else by argv (the stage's
cmd after `python -m stages.<name>`).
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from import_graph import RECORDERS, ROOT, closure

AUDIT = Path(__file__).resolve().parent / "audit"
# Read by every stage but not inputs: the params file (DVC tracks its keys), and tracking state.
IGNORED = ("params.yaml", "mlflow.db", "mlartifacts/", ".dvc/", ".git/", "dvc.yaml", "dvc.lock")


def recorder_files(project: Path) -> set[Path]:
    """The project's recorder modules (import_graph.RECORDERS) and what they load: a stage imports them without
    declaring them, since they decide none of its outputs (`recorder_writes` checks that they write none)."""
    return {(project / p.relative_to(ROOT)).resolve() for r in RECORDERS for p in closure(r, skip=frozenset())}


def audit_env(audit_dir: Path, project: Path, base: dict) -> dict:
    """Env for running the project's stages under audit; its own src/ first, so the imports checked are
    the project copy's (not the editable install's)."""
    pp = base.get("PYTHONPATH", "")
    recorders = os.pathsep.join(str(project / r.relative_to(ROOT)) for r in RECORDERS)
    return {**base, "PRMLAB_AUDIT_DIR": str(audit_dir), "PRMLAB_AUDIT_RECORDERS": recorders,
            "PYTHONPATH": ":".join(x for x in (str(AUDIT), str(project / "src"), pp) if x)}


def _stages(project: Path) -> dict[str, dict]:
    from dvc.repo import Repo

    out = {}
    with Repo(str(project)) as repo:
        for st in repo.index.stages:
            if not getattr(st, "cmd", None):
                continue
            cmd = shlex.split(st.cmd if isinstance(st.cmd, str) else " ".join(st.cmd))
            out[st.name] = {"args": cmd[3:], "module": cmd[2],
                                  "deps": [Path(d.fs_path).resolve() for d in st.deps],
                                  "outs": [Path(o.fs_path).resolve() for o in st.outs]}
    return out


def _under(p: Path, roots: list[Path]) -> bool:
    return any(p == r or r in p.parents for r in roots)


def undeclared(project: Path, audit_dir: Path, model_dirs: dict[str, Path]) -> dict[str, list[str]]:
    """stage -> project files it read or imported without declaring them. `model_dirs`: role ->
    the folder params name for it; reading it is covered by a dependency on data/models/<role>.json."""
    project = project.resolve()
    stages = _stages(project)
    seen: dict[str, list[str]] = {}
    for log in sorted(audit_dir.glob("*.json")):
        rec = json.loads(log.read_text())
        argv = rec["argv"]
        name = rec.get("stage") if rec.get("stage") in stages else next(
            (n for n, s in stages.items() if argv[1:] == s["args"] and argv[0].endswith(s["module"].replace(".", "/") + ".py")), None)
        if name is None:
            continue
        st = stages[name]
        deps = list(st["deps"])
        for role, folder in model_dirs.items():
            manifest = (project / "data" / "models" / f"{role}.json").resolve()
            # Using the model is covered by its manifest; writing the manifest means reading the folder.
            if manifest in deps or manifest in st["outs"]:
                deps.append(folder.resolve())
        deps += recorder_files(project)
        bad = []
        for f in set(rec["reads"]) | set(rec["modules"]):
            p = Path(f).resolve()
            if project not in p.parents or not p.is_file() or "__pycache__" in p.parts:
                continue
            rel = p.relative_to(project).as_posix()
            if rel.startswith(IGNORED) or _under(p, st["outs"]) or ".shards" in rel:
                continue
            if not _under(p, deps):
                bad.append(rel)
        seen[name] = sorted(set(seen.get(name, [])) | set(bad))
    missing_logs = sorted(set(stages) - set(seen))
    assert not missing_logs, f"no audit log for stage(s) {missing_logs}: did they run under audit_env?"
    return {k: v for k, v in seen.items() if v}


def recorder_writes(project: Path, audit_dir: Path) -> dict[str, list[str]]:
    """stage -> the files under its outputs (or anywhere in the project but the tracking state) that a recorder
    module wrote in an audited run: none, if recording decides no output."""
    project = project.resolve()
    outs = [o for st in _stages(project).values() for o in st["outs"]]
    found: dict[str, list[str]] = {}
    for log in sorted(audit_dir.glob("*.json")):
        rec = json.loads(log.read_text())
        for f in rec.get("recorder_writes", []):
            p = Path(f).resolve()
            if project not in p.parents:
                continue  # a temp file, MLflow's own under /tmp
            rel = p.relative_to(project).as_posix()
            if _under(p, outs) or not (rel + "/").startswith(IGNORED):  # `mlartifacts/` covers its own mkdir
                found.setdefault(rec.get("stage") or " ".join(rec["argv"][:2]), []).append(rel)
    return found
