"""The library in layers: no import circle among prmlab's modules, imports inside functions only
to defer a heavy dependency, and dvc.yaml's code dependencies exactly what each stage imports."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml
from import_graph import ROOT, _imports, closure, cycles, graph

SRC = ROOT / "src" / "prmlab"
FLOWS = ROOT / "flows"
FLOWS_MAX_LINES = 700  # flows/ orchestrates (Prefect flows, tasks, command lines); what they call is the library's
FLOWS_MAX_DEFERRED = 2  # prmlab imports inside flows' functions, each deferring a heavy dependency


def test_no_import_circle_across_the_library_and_the_flows():
    """Module- and function-level imports alike, over src/prmlab and flows/: a circle held together by imports inside
    functions (11 modules on 7ac6196) is still a circle."""
    circles = cycles(graph())
    assert not circles, [[str(p.relative_to(ROOT)) for p in c] for c in circles]


def test_imports_inside_functions_only_defer_a_heavy_dependency():
    """At most 10 prmlab imports inside the library's functions, each saying why on its line (`# deferred: <heavy
    dependency>`); none today. The flows' own limit is `flows_problems`'."""
    inside = sorted({(f, line) for f, edges in graph().items() if f.is_relative_to(SRC) for _, line, top in edges if not top})
    assert len(inside) <= 10, inside
    for f, line in inside:
        assert "# deferred:" in f.read_text().splitlines()[line - 1], f"{f.relative_to(ROOT)}:{line}: no reason given"


# The packages in pipeline order: a module imports its own package and those before it, never one after. The
# prompts and the toy world's model-free modules sit beside core (grading grades toy answers with toy.world); the
# toy's recipes and annotators are stage cores, beside pipeline.
PACKAGE_ORDER = ("core", "analysis", "engines", "prms", "pipeline", "report", "runs")
BESIDE = {"prompts": "core", "toy/world": "core", "toy/tokenizer": "core", "toy/lm": "core", "toy/__init__": "core",
          "toy/recipes": "pipeline", "toy/annotators": "pipeline"}


def package_rank(f: Path) -> int | None:
    parts = f.relative_to(SRC).with_suffix("").parts
    if len(parts) == 1:  # prmlab/__init__.py: the front door loads nothing at import
        return None
    pkg = BESIDE.get("/".join(parts[:2]), BESIDE.get(parts[0], parts[0]))
    return PACKAGE_ORDER.index(pkg)


def test_each_package_imports_only_the_packages_before_it():
    """core < analysis < engines < prms < pipeline < report < runs (docs/architecture.md's code map): a benchmark or a
    notebook can take a package with what is before it, and nothing below the stage cores loads one."""
    up = [(f.relative_to(SRC).as_posix(), dep.relative_to(SRC).as_posix(), line)
          for f, edges in graph().items() if f.is_relative_to(SRC) and (a := package_rank(f)) is not None
          for dep, line, _ in edges if dep.is_relative_to(SRC) and (b := package_rank(dep)) is not None and b > a]
    assert not up, up
    assert len({f.parent for f in SRC.rglob("*.py")} - {SRC}) >= 5


def test_the_library_never_imports_the_stages_or_the_flows():
    """The library is what stages/ and flows/ call, never the other way round (a stage's code deps are its imports:
    a library module importing a flow would make the flows part of the study)."""
    outside = [(f.relative_to(ROOT), dep.relative_to(ROOT)) for f, edges in graph().items() if f.is_relative_to(SRC)
               for dep, _, _ in edges if not dep.is_relative_to(SRC)]
    assert not outside, outside
    for f in SRC.rglob("*.py"):
        text = f.read_text()
        assert "import stages" not in text and "from stages" not in text and "from flows" not in text, f


def flows_problems(folder: Path) -> list[str]:
    """What breaks the flows' limits in `folder`: more than FLOWS_MAX_LINES lines in all, more than FLOWS_MAX_DEFERRED
    prmlab imports inside functions, an import of prmlab or flows inside a function that gives no reason."""
    files = sorted(folder.glob("*.py"))
    problems = []
    if (n := sum(len(f.read_text().splitlines()) for f in files)) > FLOWS_MAX_LINES:
        problems.append(f"{n} lines, more than {FLOWS_MAX_LINES}: move what is not orchestration into the library")
    inside = sorted({(f, line, dep.is_relative_to(SRC)) for f in files for dep, line, top in _imports(f) if not top})
    if (k := sum(lib for _, _, lib in inside)) > FLOWS_MAX_DEFERRED:
        problems.append(f"{k} prmlab imports inside functions, more than {FLOWS_MAX_DEFERRED}")
    problems += [f"{f.name}:{line}: an import inside a function gives no reason (# deferred: ...)"
                 for f, line, _ in inside if "# deferred:" not in f.read_text().splitlines()[line - 1]]
    return problems


def test_flows_orchestrate_only():
    """flows/ holds the Prefect flows and the command lines: the study store, the dashboards, `prmlab eval`'s work and
    the process helpers are the library's (prmlab.runs.store, .dashboards, .adhoc, .processes)."""
    assert not flows_problems(FLOWS), flows_problems(FLOWS)


def test_the_flows_limits_catch_a_longer_flow_and_a_third_deferred_import(tmp_path):
    for f in FLOWS.glob("*.py"):
        (tmp_path / f.name).write_text(f.read_text())
    cli = tmp_path / "cli.py"
    cli.write_text(cli.read_text() + "\n" * FLOWS_MAX_LINES)
    assert any("lines, more than" in p for p in flows_problems(tmp_path))
    cli.write_text(cli.read_text() + "\n\ndef later():\n" + "".join(
        f"    from prmlab import {m}  # deferred: a test\n" for m in ("records", "steps", "stats")[:FLOWS_MAX_DEFERRED + 1])
        + "    from prmlab import sources\n")
    got = flows_problems(tmp_path)
    assert any("prmlab imports inside functions, more than" in p for p in got), got
    assert any("cli.py" in p and "gives no reason" in p for p in got), got


def test_dvc_yaml_code_deps_are_what_each_stage_imports():
    """Each stage's Python deps in dvc.yaml (src/prmlab, stages/) are exactly the files its module loads
    (`import_graph.closure`), so an edit reruns the stages that import it and no others: an edit to an LLM
    backend (generation.py) reruns only the stages that generate (when deps were listed by hand, 16 of 19 groups listed it). A
    folder dep (src/prmlab/toy, src/prmlab/prompts) stands for the files in it. tests/graph_audit.py checks the
    other way round at run time: nothing a stage reads is undeclared."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    wrong = {}
    for name, spec in stages.items():
        st = spec.get("do", spec)
        module = shlex.split(st["cmd"])[2]
        imports = {p.relative_to(ROOT).as_posix() for p in closure(ROOT / "stages" / f"{module.split('.')[1]}.py")}
        imports.add("stages/__init__.py")
        deps = [d for d in st["deps"] if isinstance(d, str)]
        folders = [d for d in deps if (ROOT / d).is_dir() and d.startswith("src/")]
        listed = {d for d in deps if d.endswith(".py") and d.startswith(("src/prmlab/", "stages/"))}
        needed = {f for f in imports if not any(f.startswith(d + "/") for d in folders)}
        if listed != needed:
            wrong[name] = {"missing": sorted(needed - listed), "not imported": sorted(listed - needed)}
    assert not wrong, wrong


def test_generation_is_a_dependency_of_the_stages_that_generate_only():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    users = {name for name, spec in stages.items() if "src/prmlab/engines/generation.py" in spec.get("do", spec)["deps"]}
    # eval_bon and eval_prmbench generate too: a generative verifier may be among their PRMs.
    assert users == {"bootstrap", "train_judge", "sample", "label_mc", "label_judge", "label_method", "toy_human", "ceiling",
                     "build_processbench", "sample_eval", "eval_processbench", "eval_bon", "eval_prmbench",
                     "inputs"} - {"inputs"}, users
