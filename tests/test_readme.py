"""Every command README's `bash` blocks show, checked as written (issue #56 item 5): a make target exists and
dry-runs, a `dvc repro` names stages dvc.yaml has, and every other command's subcommand exists and takes each flag
README gives it (its own `--help`, run from the venv as README runs it). Running them is other tests' work
(test_pipeline runs `dvc repro`, `prmlab eval/metrics/ui/run`, flows.pipeline/serve/deploy, a sweep and the seeds on the
tiny study); this one fails when README drifts from the code: a renamed flag, stage, target or module."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SKIP = {"export", "sleep", "head", "srun"}  # shell plumbing (srun's own command is read after its flags)


def readme_commands() -> list[list[str]]:
    """Each command line of README's bash blocks as argv: continuation lines joined, comments and leading VAR=value
    assignments dropped, `a && b` split, a wrapped command (`srun ... .venv/bin/ray start ...`) unwrapped."""
    text = (ROOT / "README.md").read_text()
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


def help_of(argv: list[str]) -> str:
    p = subprocess.run([*argv, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=180)
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


@pytest.mark.parametrize("argv, expect", [
    (["dvc", "repro", "no_such_stage"], "no such stage"),
    ([".venv/bin/prmlab", "eval", "x", "--no-such-flag"], "no flag(s) ['--no-such-flag']"),
    (["make", "no-such-target"], "make -n no-such-target"),
])
def test_the_check_catches_a_drifted_command(argv, expect):
    """The checker itself fails on a stage, flag or target that does not exist (else the test above proves nothing)."""
    assert expect in (_check(argv, {"sample", "label_mc"}) or "")
