"""The import graph of prmlab's modules, the stages and the flows, from the source files (no import runs).

`graph()`: module -> [(imported module, line, at module level?)] for every `prmlab`, `stages` and `flows` import of
the library and flows/, module- and function-level. `closure(file)`: the files loading `file` loads (module-level
imports followed to the end, packages' __init__ included, the recorders left out): what a stage reads of the code
that decides its outputs, so what dvc.yaml must list as its deps.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("prmlab", "stages", "flows")


def module_file(name: str) -> Path | None:
    for base in (ROOT / "src", ROOT):
        p = base.joinpath(*name.split("."))
        for c in (p.with_suffix(".py"), p / "__init__.py"):
            if c.is_file():
                return c
    return None


def _imports(f: Path):
    """(imported module file, line, module level?) for each prmlab/stages/flows name `f` imports."""
    tree = ast.parse(f.read_text())
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for n in names:
            parts = n.split(".")
            if parts[0] not in PACKAGES:
                continue
            for k in range(1, len(parts) + 1):  # a package's __init__ runs before its modules
                if (c := module_file(".".join(parts[:k]))) is not None and c != f:
                    yield c, node.lineno, id(node) in top


def graph() -> dict[Path, list[tuple[Path, int, bool]]]:
    files = sorted((ROOT / "src" / "prmlab").rglob("*.py")) + sorted((ROOT / "flows").glob("*.py"))
    return {f: sorted(set(_imports(f))) for f in files}


# Modules that record what a stage computes and write none of its outputs (MLflow runs, progress lines): a stage
# loads them, but they decide nothing it writes, so they are no DVC dependency and an edit to them reruns nothing.
# graph_audit checks at run time that no file under a stage's outputs is written from them.
RECORDERS = frozenset({ROOT / "src" / "prmlab" / "core" / "tracking.py"})


def closure(f: Path, skip: frozenset[Path] = RECORDERS) -> set[Path]:
    """The files loading `f` loads, less the recorders (`skip`) and what only they load: what decides its outputs."""
    seen, todo = set(), [f]
    while todo:
        x = todo.pop()
        if x not in seen and x not in skip:
            seen.add(x)
            todo += [c for c, _, top in _imports(x) if top]
    return seen


def cycles(g: dict[Path, list]) -> list[list[Path]]:
    """The strongly connected components of more than one module (Tarjan), each an import circle."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w, _, _ in g.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in g:
        if v not in index:
            visit(v)
    return out
