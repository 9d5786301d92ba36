"""Test-only: records what a stage process really reads and imports (tests/test_dvc_graph.py).

Active only when PRMLAB_AUDIT_DIR is set and this folder is on PYTHONPATH; each Python process
then writes <dir>/<pid>.json at exit: its argv and DVC stage, the files it opened for reading, the modules it
imported (with their files), and the files written from a recorder module (PRMLAB_AUDIT_RECORDERS: paths joined by
os.pathsep; a write counts as the recorder's when one of its frames is on the stack), so tests/graph_audit.py can show
that no recorder writes a stage's outputs.
"""

import atexit
import json
import os
import sys

_dir = os.environ.get("PRMLAB_AUDIT_DIR")
if _dir:
    _reads: set[str] = set()
    _recorder_writes: set[str] = set()
    _recorders = tuple(p for p in os.environ.get("PRMLAB_AUDIT_RECORDERS", "").split(os.pathsep) if p)

    def _by_recorder() -> bool:
        f = sys._getframe(2)
        while f is not None:
            if f.f_code.co_filename.endswith(_recorders):
                return True
            f = f.f_back
        return False

    def _wrote(path) -> None:
        if _recorders and isinstance(path, str | bytes) and _by_recorder():
            _recorder_writes.add(os.path.abspath(os.fsdecode(path)))

    def _hook(event, args):
        if event == "os.rename" and len(args) > 1:  # os.rename and os.replace: an atomic write's last step
            _wrote(args[1])
            return
        if event in ("sqlite3.connect", "os.mkdir") and args:  # SQLite opens its files in C, unseen by "open"
            _wrote(args[0])
            return
        if event == "open" and args and isinstance(args[0], str | bytes):
            mode = args[1] if len(args) > 1 else "r"
            if isinstance(mode, str) and ("w" in mode or "a" in mode or "x" in mode or "+" in mode):
                _wrote(args[0])
                return
            if isinstance(mode, int) or mode is None:  # os.open flags: keep read-only opens
                flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
                if flags & (os.O_WRONLY | os.O_RDWR):
                    _wrote(args[0])
                    return
            path = os.fsdecode(args[0])
            _reads.add(os.path.abspath(path))

    def _dump():
        mods = sorted({m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)})
        with open(os.path.join(_dir, f"{os.getpid()}.json"), "w") as f:
            json.dump({"argv": sys.argv, "stage": os.environ.get("DVC_STAGE"), "cwd": os.getcwd(), "reads": sorted(_reads), "modules": mods,
                       "recorder_writes": sorted(_recorder_writes)}, f)

    sys.addaudithook(_hook)
    atexit.register(_dump)
