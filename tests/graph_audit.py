"""Checks a finished `dvc repro` against dvc.yaml: every project file a stage process read or
imported is one of its declared dependencies (or inside one), its own output, or tracking state.

The processes were run with tests/audit/sitecustomize.py on PYTHONPATH (see `audit_env`), which
logs each process's argv, reads and imported module files. A log is matched to its DVC stage by
the DVC_STAGE that DVC set for it (a foreach group's stages share one command), else by argv (the stage's
cmd after `python -m stages.<name>`).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

AUDIT = Path(__file__).resolve().parent / "audit"
# Read by every stage but not inputs: the params file (DVC tracks its keys), and tracking state.
IGNORED = ("params.yaml", "mlflow.db", "mlartifacts/", ".dvc/", ".git/", "dvc.yaml", "dvc.lock")


def audit_env(audit_dir: Path, project: Path, base: dict) -> dict:
    """Env for running the project's stages under audit; its own src/ first, so the imports checked are
    the project copy's (not the editable install's)."""
    pp = base.get("PYTHONPATH", "")
    return {**base, "PRMLAB_AUDIT_DIR": str(audit_dir),
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
