"""Test-only: records what a stage process really reads and imports (tests/test_dvc_graph.py).

Active only when PRMLAB_AUDIT_DIR is set and this folder is on PYTHONPATH; each Python process
then writes <dir>/<pid>.json at exit: its argv and DVC stage, the files it opened for reading, the modules it
imported (with their files).
"""

import atexit
import json
import os
import sys

_dir = os.environ.get("PRMLAB_AUDIT_DIR")
if _dir:
    _reads: set[str] = set()

    def _hook(event, args):
        if event == "open" and args and isinstance(args[0], str | bytes):
            mode = args[1] if len(args) > 1 else "r"
            if isinstance(mode, str) and ("w" in mode or "a" in mode or "x" in mode):
                return
            if isinstance(mode, int) or mode is None:  # os.open flags: keep read-only opens
                flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
                if flags & (os.O_WRONLY | os.O_RDWR):
                    return
            path = os.fsdecode(args[0])
            _reads.add(os.path.abspath(path))

    def _dump():
        mods = sorted({m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)})
        with open(os.path.join(_dir, f"{os.getpid()}.json"), "w") as f:
            json.dump({"argv": sys.argv, "stage": os.environ.get("DVC_STAGE"), "cwd": os.getcwd(), "reads": sorted(_reads), "modules": mods}, f)

    sys.addaudithook(_hook)
    atexit.register(_dump)
