"""JSONL I/O with atomic writes and errors that name the file and line.

Writes go to a temp file in the same folder, then `os.replace`, so an interrupted stage never
leaves a half file that DVC or the next stage would take for complete. `ShardWriter` makes long
stages resumable: each finished shard is its own atomic file, and a rerun skips shards that exist.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from prmlab.core.records import Problem, Record, RecordError, Response

R = TypeVar("R", bound=Record)


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


# mkstemp creates 0600 files; outputs get the mode any new file gets (0644 under the usual umask 022).
FILE_MODE = 0o666 & ~_umask()


class DataError(ValueError):
    """Bad input data; the message names the file and line."""


class Fault(RuntimeError):
    """What a stage runs on failed (a server, a Ray cluster's replicas), not its input: the stage runner ends it in one
    line naming it, exit 1 (not 2, bad input's: a flow may retry it)."""


MIN_FREE_BYTES = 64 * 2**20  # an output folder with less free space is refused before the work (check_writable)


def inside(folder: str | Path, path: str | Path) -> bool:
    """`path` (relative to `folder`) names something strictly inside `folder`: not absolute, not `folder` itself,
    not out of it through `..` or a symlinked folder (the last part may be a link: removing it removes the link).
    What a tool that deletes or overwrites a path built from input data (a graph's outs, a CLI value) checks first."""
    base = Path(folder).resolve()
    p = Path(os.path.normpath(base / path))
    return p != base and p.parent.resolve().is_relative_to(base)


def check_writable(path: str | Path) -> None:
    """The folder output `path` goes in (or its nearest existing parent: nothing is made here) takes a new file
    and has MIN_FREE_BYTES free: a read-only or full folder stops a stage before its work, not after it
    (eval_bon had scored every PRM, then lost it all to a read-only folder, in a traceback)."""
    import shutil

    folder = Path(path).absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise DataError(f"{path}: cannot write: {folder} is a file, not a folder")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".prmlab-probe."):
            pass
        free = shutil.disk_usage(folder).free
    except OSError as e:
        raise DataError(f"{path}: cannot write in {folder} ({e.strerror or type(e).__name__})") from None
    if free < MIN_FREE_BYTES:
        raise DataError(f"{path}: {folder} has {free / 2**20:.1f} MiB free (at least {MIN_FREE_BYTES // 2**20} MiB "
                        "needed to write outputs): free some space first")


def atomic_write_text(path: str | Path, text: str) -> None:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # A temp file of this path left by a killed writer (kill -9 skips the cleanup below).
        for stale in path.parent.glob(f".{path.name}.*.tmp"):
            stale.unlink(missing_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise DataError(f"{path}: cannot write ({e.strerror or type(e).__name__})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except OSError as e:  # a disk that filled during the stage: one line naming the output, the temp file gone
        Path(tmp).unlink(missing_ok=True)
        raise DataError(f"{path}: cannot write ({e.strerror or type(e).__name__})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _dumps(obj: Any) -> str:
    if isinstance(obj, Record):
        obj = obj.to_dict()
    return json.dumps(obj, ensure_ascii=False)


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    lines = [_dumps(r) for r in rows]
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=True) + "\n")


# A JSONL line longer than this is refused, never read whole: /dev/zero, or a binary file without a newline, given
# as a score file had filled memory. The longest line a study writes (a response, a training example) is kilobytes.
MAX_LINE_BYTES = 64 * 2**20


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    with open(path, "rb") as f:
        for lineno, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise DataError(f"{path}:{lineno}: a line longer than {MAX_LINE_BYTES >> 20} MiB (not a JSONL file?)")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataError(f"{path}:{lineno}: not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})") from None
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line.rstrip("\r\n"))  # so a column past the end reads as such
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: malformed JSON ({e.msg} at column {e.colno})") from None


def read_jsonl(path: str | Path, cls: type[R] | None = None) -> list:
    return [rec for _, rec in read_jsonl_lines(path, cls)]


def read_jsonl_lines(path: str | Path, cls: type[R] | None = None) -> list[tuple[int, Any]]:
    """(line number, record) pairs, each record validated (types, ranges) and its id unique in the file;
    the line numbers let a stage name the line when a check needs another file (e.g. the step count)."""
    out = []
    seen: dict[Any, int] = {}
    for lineno, obj in iter_jsonl(path):
        if cls is None:
            out.append((lineno, obj))
            continue
        try:
            rec = cls.from_dict(obj)
        except (RecordError, TypeError) as e:
            raise DataError(f"{path}:{lineno}: {e}") from None
        ident = rec.ident()
        if ident is not None:
            if ident in seen:
                raise DataError(f"{path}:{lineno}: field '{cls.key}': duplicate {ident!r} (first on line {seen[ident]})")
            seen[ident] = lineno
        out.append((lineno, rec))
    return out


def read_json(path: str | Path) -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 (byte 0x{e.object[e.start]:02x} at offset {e.start})") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{path}:{e.lineno}: malformed JSON ({e.msg})") from None


def read_problems_and_responses(problems_path: str | Path, samples_path: str | Path) -> tuple[dict, list]:
    """A stage's problems (by id) and responses, each response naming a known problem, else a DataError
    naming the samples file's field."""
    problems = {p.id: p for p in read_jsonl(problems_path, Problem)}
    responses = read_jsonl(samples_path, Response)
    missing = sorted({r.problem_id for r in responses} - set(problems))
    if missing:
        raise DataError(f"{samples_path}: field 'problem_id' names problems not in {problems_path}: {missing[:5]}")
    return problems, responses


def output_lock(out: str | Path):
    """Hold the one-writer lock of an output that is not sharded (a checkpoint folder): a second run on the
    same output stops with one line instead of both writing it. The lock file lives in the
    temp dir, keyed by the output's absolute path, so the output's folder (a DVC out) holds nothing else;
    it is released when the process ends. Returns the open lock file (keep it referenced)."""
    import fcntl
    import hashlib

    path = Path(out).resolve()
    d = Path(tempfile.gettempdir()) / "prmlab-locks"
    d.mkdir(exist_ok=True)
    f = open(d / (hashlib.md5(str(path).encode()).hexdigest() + ".lock"), "a")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise DataError(f"{out}: another run is writing this output; wait for it to finish or stop it") from None
    return f


class ShardWriter:
    """Resumable output: shards land atomically in `<out>.shards/`, `finish()` joins them into `out`.

    A rerun after a kill sees the finished shards (`done(i)`) and skips them, so no work is redone
    and no record is duplicated. The shard folder is removed once the joined file is written.
    """

    def __init__(self, out: str | Path, fingerprint: str = ""):
        self.out = Path(out)
        self.dir = self.out.with_name(self.out.name + ".shards")
        self.dir.mkdir(parents=True, exist_ok=True)
        # One writer per output: a second run of the stage on the same output would redo the work, race
        # the first on its shards and crash on a shard the other removed. The lock dies with the process.
        import fcntl

        self._lock = open(self.dir / "LOCK", "a")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise DataError(f"{self.out}: another run is writing this output (lock {self.dir / 'LOCK'} is held); "
                            "wait for it to finish or stop it") from None
        # Shards made with other inputs or params must not be reused.
        fp = self.dir / "FINGERPRINT"
        old = sorted(self.dir.glob("shard-*.jsonl"))
        if old and (not fp.exists() or fp.read_text() != fingerprint):
            # Said aloud: a rerun that redoes work should say why (model, code, params or inputs changed).
            print(f"[{self.out.name}] discarding {len(old)} shard(s) in {self.dir}: made with other params, inputs, "
                  "model weights, tokenizer, template or code", file=sys.stderr)
            for p in old + sorted(self.dir.glob("meta-*.json")):
                p.unlink()
        for stale in self.dir.glob(".*.tmp"):  # left by a writer killed mid-shard
            stale.unlink()
        atomic_write_text(fp, fingerprint)

    def path(self, i: int) -> Path:
        return self.dir / f"shard-{i:05d}.jsonl"

    def done(self, i: int) -> bool:
        return self.path(i).exists()

    def write(self, i: int, rows: Iterable[Any]) -> None:
        write_jsonl(self.path(i), rows)

    def read(self, i: int, cls: type[R] | None = None) -> list:
        return read_jsonl(self.path(i), cls)

    def write_meta(self, i: int, obj: Any) -> None:
        """Counts that belong to shard i but not to its records (e.g. responses dropped), kept beside it
        so a resumed run reports what an uninterrupted one would. Write before the shard itself."""
        write_json(self.dir / f"meta-{i:05d}.json", obj)

    def read_meta(self, i: int) -> Any:
        return read_json(self.dir / f"meta-{i:05d}.json")

    def finish(self, n_shards: int) -> int:
        lines: list[str] = []
        for i in range(n_shards):
            lines.extend(line for line in self.path(i).read_text(encoding="utf-8").splitlines() if line)
        atomic_write_text(self.out, "".join(line + "\n" for line in lines))
        for p in self.dir.iterdir():
            p.unlink()
        self.dir.rmdir()
        self._lock.close()
        return len(lines)


def fingerprint(*parts) -> str:
    import hashlib
    import json

    return hashlib.md5(json.dumps([str(p) for p in parts]).encode()).hexdigest()
