"""prmlab's front door: the names a notebook needs, loaded lazily. `import prmlab` and `import prmlab.<module>` must
load nothing the module itself does not import (every stage imports the package, and a stage's imports are its DVC
dependencies), while each exported name resolves where `prmlab.__init__` says it lives, and its docstring example
runs."""

from __future__ import annotations

import ast
import doctest
import json
import subprocess
import sys

import pytest
from import_graph import ROOT, closure, module_file

import prmlab


def loaded(code: str) -> dict:
    """The prmlab modules and heavy packages loaded after running `code` in a fresh interpreter."""
    probe = (f"import sys\n{code}\nimport json\n"
             "print(json.dumps({'prmlab': sorted(m for m in sys.modules if m == 'prmlab' or m.startswith('prmlab.')),"
             " 'heavy': sorted(m for m in ('torch', 'transformers', 'mlflow', 'matplotlib') if m in sys.modules)}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.splitlines()[-1])


def test_import_prmlab_loads_none_of_the_exported_modules():
    got = loaded("import prmlab")
    assert got == {"prmlab": ["prmlab"], "heavy": []}, got


def test_a_module_of_prmlab_loads_its_own_imports_only():
    """What `import prmlab.core.records` (or params, steps) loads is its static closure (tests/import_graph), the
    package's __init__ included and nothing the front door names."""
    for name in ("prmlab.core.records", "prmlab.core.params", "prmlab.core.steps"):
        parents = {name.rsplit(".", k)[0] for k in range(1, name.count("."))}  # its packages load first
        want = sorted({"prmlab", *parents, *(".".join(p.relative_to(ROOT / "src").with_suffix("").parts).removesuffix(".__init__")
                                             for p in closure(module_file(name)))})
        assert loaded(f"import {name}")["prmlab"] == want, name


def test_the_front_door_names_at_least_five_and_each_lives_where_it_says():
    """`__all__` and `dir(prmlab)` agree; each name is defined at the top of its module (read, not imported);
    an unknown name is an AttributeError, and a submodule still imports by `from prmlab import <module>`."""
    assert len(prmlab.__all__) >= 5 and set(prmlab.__all__) <= set(dir(prmlab))
    for name, home in prmlab._HOMES.items():
        tree = ast.parse(module_file(home).read_text())
        top = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        top |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        top |= {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
        assert name in top, f"{name} is not defined in {home}"
    with pytest.raises(AttributeError, match="no_such_name"):
        prmlab.no_such_name  # noqa: B018
    from prmlab.core import records  # a submodule, not a front-door name

    assert records.ProcessBenchItem


def test_the_docstring_example_runs():
    """ProcessBench F1 on three hand-made items, as prmlab's docstring shows it."""
    result = doctest.testmod(prmlab, verbose=False)
    assert result.attempted >= 5 and result.failed == 0, result


def test_load_prm_dispatches_to_make_scorer(monkeypatch):
    """`load_prm` is `make_scorer` given a spec: a name is a spec with its layout read from its files."""
    from prmlab.prms import layouts

    calls = []
    monkeypatch.setattr(layouts, "make_scorer", lambda backend, path, **kw: calls.append((backend, path, kw)) or "scorer")
    assert prmlab.load_prm("models/prm/judge") == "scorer"
    assert prmlab.load_prm(prmlab.PRMSpec("m", "eurus", "ref"), "transformers", batch_size=4) == "scorer"
    assert calls[0] == ("transformers", "models/prm/judge", {"layout": None, "reference": None, "verifier": None,
                                                              "votes_file": None})
    assert calls[1][2] == {"layout": "eurus", "reference": "ref", "verifier": None, "votes_file": None, "batch_size": 4}
