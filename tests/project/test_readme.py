"""Every command README's `bash` blocks show, checked as written: a make target exists and
dry-runs, a `dvc repro` names stages dvc.yaml has, and every other command's subcommand exists and takes each flag
README gives it (its own `--help`, run from the venv as README runs it). The docs pages' commands are held to the same
check; README's commands need no activated venv, and its cheap ones (prmlab metrics, dvc metrics/plots show, dvc repro
--dry) run for real on a fresh copy of the project. Running the long ones is other tests' work (test_pipeline runs
`dvc repro`, `prmlab eval/metrics/ui/run`, flows.pipeline/serve/deploy, a sweep and the seeds on the tiny study); this
one fails when README or the docs drift from the code: a renamed flag, stage, target or module, a broken link."""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SKIP = {"export", "sleep", "head", "srun"}  # shell plumbing (srun's own command is read after its flags)


DOCS = sorted((ROOT / "docs").glob("*.md"))


def readme_commands(path: Path = ROOT / "README.md") -> list[list[str]]:
    """Each command line of a Markdown file's bash blocks (README's by default) as argv: continuation lines joined,
    comments and leading VAR=value assignments dropped, `a && b` split, a wrapped command (`srun ... .venv/bin/ray
    start ...`) unwrapped."""
    text = path.read_text()
    cmds = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if not line or "$(" in line:
                continue
            for part in line.split("&&"):
                argv = shlex.split(part.replace("&", " "))
                while argv and re.fullmatch(r"[A-Z_]+=\S*", argv[0]):
                    argv = argv[1:]
                if argv and argv[0] == "srun":
                    argv = next((argv[i:] for i, a in enumerate(argv) if a.startswith(".venv/bin/")), [])
                if argv and argv[0] not in SKIP and argv[0] != ".":
                    cmds.append(argv)
    return cmds


def tool(argv0: str) -> str:
    """README's `.venv/bin/X` (or a bare `dvc`/`python3` after activating) as this venv's X."""
    name = Path(argv0).name
    return str(BIN / ("python" if name == "python3" else name))


def flags(argv: list[str]) -> list[str]:
    return sorted({a.split("=")[0] for a in argv if a.startswith("-") and a != "-m" and not re.fullmatch(r"-\d.*", a)})


@functools.cache
def _help(argv: tuple[str, ...]) -> subprocess.CompletedProcess:
    return subprocess.run([*argv, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=180)


def help_of(argv: list[str]) -> str:
    p = _help(tuple(argv))
    assert p.returncode == 0, (argv, p.stderr[-1500:])
    return p.stdout + p.stderr


def dvc_stages(tmp: Path) -> set[str]:
    """The stages of both profiles: the toy's (params.yaml) and the paper's (params/paper.yaml as params.yaml in a copy
    of dvc.yaml, as `make paper-params` makes it before README's paper-setting commands)."""
    def listed(d: Path) -> set[str]:
        p = subprocess.run([str(BIN / "dvc"), "stage", "list", "--name-only"], cwd=d, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr[-1500:]
        return set(p.stdout.split())

    paper = tmp / "paper"
    paper.mkdir()
    subprocess.run([str(BIN / "dvc"), "init", "-q", "--no-scm"], cwd=paper, check=True, timeout=120)
    (paper / "dvc.yaml").write_text((ROOT / "dvc.yaml").read_text())
    (paper / "params.yaml").write_text((ROOT / "params" / "paper.yaml").read_text())
    return listed(ROOT) | listed(paper)


def test_readme_has_the_commands_this_test_reads():
    cmds = readme_commands()
    firsts = {Path(c[0]).name for c in cmds}
    assert {"make", "dvc", "python", "prmlab", "prefect", "torchrun", "ray", "python3"} <= firsts, firsts
    assert ["make", "repro"] in cmds and ["make", "test"] in cmds  # the two commands README leads with
    assert len(cmds) >= 30


def _check(argv: list[str], stages: set[str]) -> str | None:
    """What is wrong with README's command as written, None if nothing."""
    name = Path(argv[0]).name
    if name == "make":
        targets = [a for a in argv[1:] if "=" not in a]
        p = subprocess.run(["make", "-n", *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=60)
        return None if p.returncode == 0 and targets else f"make -n {' '.join(argv[1:])}: {p.stderr[-300:]}"
    if name == "dvc" and argv[1] == "repro":
        missing = [a for a in argv[2:] if not a.startswith("-") and a not in stages]
        return f"no such stage(s) {missing}" if missing else None
    if name in ("python", "python3", "torchrun"):
        i = argv.index("-m")
        cmd, sub, given = [tool("python"), "-m", argv[i + 1]], [], argv[i + 2:]
    elif name in ("dvc", "prmlab", "prefect", "ray"):
        sub = [a for a in argv[1:] if not a.startswith("-")]
        if name == "dvc":
            sub = sub[:2] if sub[0] in ("metrics", "plots", "exp", "stage") else sub[:1]
        elif name == "prefect":
            sub = sub[:2] if sub[0] in ("server", "work-pool", "worker") else sub[:1]
        else:
            sub = sub[:1]
        cmd, given = [tool(argv[0]), *sub], argv[1:]
    else:
        return f"not a command this test knows: {argv[0]}"
    text = help_of(cmd)
    absent = [f for f in flags(given) if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)]
    return f"{' '.join(cmd[len(cmd) - len(sub) - 1:] if sub else cmd)}: no flag(s) {absent} in its --help" if absent else None


def test_every_readme_command_exists_as_written(tmp_path):
    stages = dvc_stages(tmp_path)
    assert {"problems@toy", "inputs@real", "eval_prmbench@real"} <= stages
    seen, wrong = set(), []
    for argv in readme_commands():
        key = tuple(argv)
        if key in seen:
            continue
        seen.add(key)
        if problem := _check(argv, stages):
            wrong.append(f"{shlex.join(argv)}\n    -> {problem}")
    assert not wrong, "README commands that do not work as written:\n" + "\n".join(wrong)


def test_every_docs_command_exists_as_written(tmp_path):
    """The docs pages' bash blocks are held to README's check: a user copies commands from either."""
    stages = dvc_stages(tmp_path)
    seen, wrong = set(), []
    for page in DOCS:
        for argv in readme_commands(page):
            if (key := tuple(argv)) in seen:
                continue
            seen.add(key)
            if problem := _check(argv, stages):
                wrong.append(f"{page.relative_to(ROOT)}: {shlex.join(argv)}\n    -> {problem}")
    assert seen, "no commands found in docs/"
    assert not wrong, "docs commands that do not work as written:\n" + "\n".join(wrong)


def test_readme_commands_need_no_activated_venv():
    """Every README command runs in a fresh shell: a make target (the Makefile puts the venv on PATH) or a tool
    named by its path in .venv/bin; `python3` only for scripts/seeds_plain.py, which runs on another machine
    without the venv."""
    wrong = [shlex.join(a) for a in readme_commands()
             if not (a[0] == "make" or a[0].startswith(".venv/bin/")
                     or (a[0] == "python3" and a[1:3] == ["-m", "scripts.seeds_plain"]))]
    assert not wrong, "README commands that need the venv activated:\n" + "\n".join(wrong)


CHEAP = ([".venv/bin/prmlab", "metrics"], [".venv/bin/dvc", "metrics", "show"], [".venv/bin/dvc", "plots", "show"],
         [".venv/bin/dvc", "repro", "--dry"])


def fresh_clone(d: Path) -> Path:
    """The tracked files of this checkout (as they are in the working tree) committed in a new git repo, with this
    test's venv at .venv: what a clone holds after `make setup`."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for rel in filter(None, files.split("\0")):
        if (ROOT / rel).is_file():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, d / rel)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "clone"]):
        subprocess.run([*git, *cmd], cwd=d, check=True, capture_output=True)
    (d / ".venv").symlink_to(BIN.parent)
    return d


def test_readme_cheap_commands_run_on_a_fresh_clone(tmp_path):
    """README says the committed study is readable at once: its cheap commands (prmlab metrics, dvc metrics show,
    dvc plots show, dvc repro --dry) run as written, with the venv off PATH, on a copy of the tracked files, and
    exit 0 (`dvc plots show` writes its page)."""
    cheap = [a for a in readme_commands() if any(a[:len(c)] == c for c in CHEAP)]
    assert len({tuple(a[:2]) for a in cheap}) >= 3, cheap  # prmlab metrics, dvc metrics, dvc plots, dvc repro
    clone = fresh_clone(tmp_path / "clone")
    venv = str(BIN)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv)
    for argv in dict.fromkeys(map(tuple, cheap)):
        p = subprocess.run(list(argv), cwd=clone, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, (argv, p.stdout[-1500:], p.stderr[-1500:])
        if argv[1:3] == ("plots", "show"):
            assert (clone / "dvc_plots" / "index.html").stat().st_size > 0


LINK = re.compile(r"\[[^\]]*\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", [ROOT / "README.md", ROOT / "CHANGELOG.md", *DOCS], ids=lambda p: p.name)
def test_docs_links_resolve(page):
    """Every relative link of README, the changelog and the docs pages names a file or folder of the project."""
    broken = [target for target in LINK.findall(page.read_text())
              if "://" not in target and not (page.parent / target).exists()]
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_readme_is_a_short_path_and_docs_carry_no_work_log():
    """README stays a user's path (<= 250 lines, <= 20,000 characters); README and docs/ name no issue or session
    numbers (the history is CHANGELOG.md's and git's); docs/ has >= 4 pages, none over 800 lines."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250 and len(readme) <= 20_000, (len(readme.splitlines()), len(readme))
    log = re.compile(r"\bissues? #?\d|\(#\d+|\bsessions? \d", re.I)
    for page in [ROOT / "README.md", *DOCS]:
        hits = [m.group(0) for m in log.finditer(page.read_text())]
        assert not hits, f"{page.relative_to(ROOT)} names issues or sessions: {hits}"
    pages = [p for p in DOCS if p.name != "DESIGN.md"]  # DESIGN.md points to the pages that replaced it
    assert len(pages) >= 4, pages
    assert all(len(p.read_text().splitlines()) <= 800 for p in pages), {p.name: len(p.read_text().splitlines()) for p in pages}


@pytest.mark.parametrize("argv, expect", [
    (["dvc", "repro", "no_such_stage"], "no such stage"),
    ([".venv/bin/prmlab", "eval", "x", "--no-such-flag"], "no flag(s) ['--no-such-flag']"),
    (["make", "no-such-target"], "make -n no-such-target"),
])
def test_the_check_catches_a_drifted_command(argv, expect):
    """The checker itself fails on a stage, flag or target that does not exist (else the test above proves nothing)."""
    assert expect in (_check(argv, {"sample", "label_mc"}) or "")


def test_readme_results_are_the_reports_first_table_generated():
    """README's results block is what `prmlab.report.seeds.readme_results` renders from the committed
    reports/findings.json and reports/seeds.json (the report's first table), never hand-written: a stale block (a
    seed filed, the study regenerated) fails here until `python -m flows.seeds --aggregate-only` rewrites it."""
    import json

    from prmlab.report.seeds import README_END, README_START, readme_results, with_readme_results

    readme = (ROOT / "README.md").read_text()
    seeds = ROOT / "reports" / "seeds.json"
    block = readme_results(json.loads((ROOT / "reports" / "findings.json").read_text()),
                           json.loads(seeds.read_text()) if seeds.exists() else None)
    assert readme[readme.index(README_START): readme.index(README_END) + len(README_END)] == block
    assert "| verdict" in block and ("across seeds" in block or "one seed" in block)
    with pytest.raises(ValueError, match="lacks the results markers"):
        with_readme_results(readme.replace(README_END, ""), block)
