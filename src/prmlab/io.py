"""JSONL I/O with atomic writes and errors that name the file and line.

Writes go to a temp file in the same folder, then `os.replace`, so an interrupted stage never
leaves a half file that DVC or the next stage would take for complete. `ShardWriter` makes long
stages resumable: each finished shard is its own atomic file, and a rerun skips shards that exist.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from prmlab.records import Record, RecordError

R = TypeVar("R", bound=Record)


class DataError(ValueError):
    """Bad input data; the message names the file and line."""


def atomic_write_text(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
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


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: malformed JSON ({e.msg} at column {e.colno})") from None


def read_jsonl(path: str | Path, cls: type[R] | None = None) -> list:
    out = []
    for lineno, obj in iter_jsonl(path):
        if cls is None:
            out.append(obj)
            continue
        try:
            out.append(cls.from_dict(obj))
        except (RecordError, TypeError) as e:
            raise DataError(f"{path}:{lineno}: {e}") from None
    return out


def read_json(path: str | Path) -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{path}:{e.lineno}: malformed JSON ({e.msg})") from None


class ShardWriter:
    """Resumable output: shards land atomically in `<out>.shards/`, `finish()` joins them into `out`.

    A rerun after a kill sees the finished shards (`done(i)`) and skips them, so no work is redone
    and no record is duplicated. The shard folder is removed once the joined file is written.
    """

    def __init__(self, out: str | Path, fingerprint: str = ""):
        self.out = Path(out)
        self.dir = self.out.with_name(self.out.name + ".shards")
        self.dir.mkdir(parents=True, exist_ok=True)
        # Shards made with other inputs or params must not be reused.
        fp = self.dir / "FINGERPRINT"
        if fp.exists() and fp.read_text() != fingerprint:
            for p in self.dir.glob("shard-*.jsonl"):
                p.unlink()
        atomic_write_text(fp, fingerprint)

    def path(self, i: int) -> Path:
        return self.dir / f"shard-{i:05d}.jsonl"

    def done(self, i: int) -> bool:
        return self.path(i).exists()

    def write(self, i: int, rows: Iterable[Any]) -> None:
        write_jsonl(self.path(i), rows)

    def read(self, i: int, cls: type[R] | None = None) -> list:
        return read_jsonl(self.path(i), cls)

    def finish(self, n_shards: int) -> int:
        lines: list[str] = []
        for i in range(n_shards):
            lines.extend(line for line in self.path(i).read_text(encoding="utf-8").splitlines() if line)
        atomic_write_text(self.out, "".join(line + "\n" for line in lines))
        for p in self.dir.iterdir():
            p.unlink()
        self.dir.rmdir()
        return len(lines)
