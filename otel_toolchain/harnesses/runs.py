"""Files and folders of recorded runs, as runs: each stream file, stored session or database session is one.

A folder is walked for ``*.jsonl``, ``*.jsonl.zst`` (the plain file wins when both exist),
SQLite databases (``*.db``) and OpenCode ``storage/`` trees; the CLIs' sidecars (prompt
histories, ``journal.jsonl``, ``*.meta.json``) are passed over. Whether a file is a stream or
a store file, and of which harness, is read from its first lines when the run is opened.
Copies are read once: a forked Codex rollout or branched Pi file leaves out the calls of its
parent when the parent is among the inputs, and a legacy OpenCode session the database also
has is read from the database only.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path

from otel_toolchain._input.lines import ZST_SUFFIX, iter_lines
from otel_toolchain.errors import StreamError
from otel_toolchain.harnesses.detect import DETECT_LINES, STORE, STREAM, detect_format
from otel_toolchain.harnesses.opener import Opened, open_lines
from otel_toolchain.harnesses.stores.codex_workdirs import CodexHome
from otel_toolchain.harnesses.stores.opencode import Session, db_sessions, is_sqlite, is_storage_root, storage_sessions

__all__ = ["Opened", "Run", "expand", "runs_in", "size_of"]

_SIDECARS = frozenset({"history.jsonl", "session_index.jsonl", "journal.jsonl"})
_UUID_FILE = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl(?:\.zst)?$")
_CALL_IDS = {"codex": re.compile(r'"call_id":\s*"([^"\\]+)"'),
             "pi": re.compile(r'"(?:toolCallId|id)":\s*"([^"\\]+)"')}


@dataclass(frozen=True)
class Run:
    """One recorded run; ``open`` reads it (a file's first lines say what it is)."""

    source: str
    size: int
    opener: Callable[[Callable[[int], None] | None], Opened] = field(repr=False)

    def open(self, on_bytes: Callable[[int], None] | None = None) -> Opened:
        """Start reading; ``on_bytes`` hears of every line's size as it is read (for progress bars).

        Raises:
            StreamError: the file is neither a stream nor a store file of a known harness.
            MissingExtra: a ``.zst`` file and no zstandard to read it.
        """
        return self.opener(on_bytes)


def _wanted(path: Path) -> bool:
    name = path.name
    if name in _SIDECARS or name.endswith(".meta.json"):
        return False
    if name.endswith(".jsonl"):
        return True
    if name.endswith(".jsonl" + ZST_SUFFIX):
        return not path.with_name(name[: -len(ZST_SUFFIX)]).exists()
    return name.endswith(".db") and is_sqlite(path)


def _walk(folder: Path) -> Iterator[Path]:
    if is_storage_root(folder):
        yield folder
        return
    for root, dirs, files in os.walk(folder):
        here = Path(root)
        dirs.sort()
        for name in list(dirs):
            if is_storage_root(here / name):
                dirs.remove(name)
                yield here / name
        yield from (here / name for name in sorted(files) if _wanted(here / name))


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """The files (and OpenCode ``storage/`` trees) to read: files as given, folders walked in name order."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        found.extend(_walk(path) if path.is_dir() else [path])
    return found


class _Parents:
    """Where a fork's parent is among the inputs, and the call ids it holds."""

    def __init__(self, files: list[Path]) -> None:
        self.by_name = {path.name: path for path in files}
        self.by_uuid = {match.group(1): path for path in files if (match := _UUID_FILE.search(path.name))}

    def skip_for(self, harness: str, head: list[str], path: Path) -> frozenset[str]:
        parent = self._parent(harness, head)
        if parent is None or parent == path:
            return frozenset()
        pattern = _CALL_IDS[harness]
        return frozenset(found for line in iter_lines(parent) for found in pattern.findall(line))

    def _parent(self, harness: str, head: list[str]) -> Path | None:
        if harness == "pi" and head:
            header = re.search(r'"(?:branchedFrom|parentSession)":\s*"([^"\\]+)"', head[0])
            return self.by_name.get(header.group(1).replace("\\", "/").rsplit("/", 1)[-1]) if header else None
        if harness == "codex":
            ids = [m.group(1) for line in head if '"session_meta"' in line
                   for m in [re.search(r'"payload":\s*\{"id":\s*"([^"]+)"', line)] if m]
            distinct = list(dict.fromkeys(ids))
            return self.by_uuid.get(distinct[1]) if len(distinct) > 1 else None
        return None


def _counted(lines: Iterator[str], on_bytes: Callable[[int], None] | None) -> Iterator[str]:
    if on_bytes is None:
        return lines
    return _counting(lines, on_bytes)


def _counting(lines: Iterator[str], on_bytes: Callable[[int], None]) -> Iterator[str]:
    for line in lines:
        on_bytes(getattr(line, "size", len(line)) + 1)  # a LongLine holds only its first bytes
        yield line


def _file_run(path: Path, harness: str, strict: bool, parents: _Parents, *, calls_only: bool,
              codex_home: CodexHome | None) -> Run:
    source = str(path)

    def opener(on_bytes: Callable[[int], None] | None) -> Opened:
        lines = _counted(iter_lines(path), on_bytes)
        head = list(islice(lines, DETECT_LINES))
        found = detect_format(head)
        skip = parents.skip_for(found[0], head, path) if found is not None and found[1] == STORE else frozenset()
        opened = open_lines(chain(head, lines), harness, strict, source=source, skip=skip, calls_only=calls_only,
                            codex_home=codex_home)
        return opened if opened is not None else Opened("unknown" if harness == "auto" else harness, STREAM, iter(()))

    return Run(source, size_of(path), opener)


def size_of(path: Path) -> int:
    """A file's size, or the sum of a folder's files; 0 for what cannot be read (for progress bars)."""
    try:
        if path.is_dir():
            return sum(child.stat().st_size for child in path.rglob("*") if child.is_file())
        return path.stat().st_size
    except OSError:
        return 0


def runs_in(paths: Iterable[str | Path], *, harness: str = "auto", strict: bool = False,
            calls_only: bool = False, codex_home: CodexHome | None = None) -> Iterator[Run]:
    """Every run in ``paths`` (see the module docstring); OpenCode databases come before ``storage/`` trees.

    ``calls_only``: the reader may leave out what only usage and the model need (``analyze``).
    ``codex_home``: where Codex streams' rollouts are looked for (see :func:`~.opener.reader_of`).
    """
    files = expand(paths)
    parents = _Parents(files)
    databases = {path for path in files if not path.name.endswith((".jsonl", ".jsonl.zst")) and is_sqlite(path)}
    trees = {path for path in files if path.is_dir()}
    for path in files:
        if path not in databases and path not in trees:
            yield _file_run(path, harness, strict, parents, calls_only=calls_only, codex_home=codex_home)
    stored: set[str] = set()
    for database in sorted(databases):
        try:
            sessions = db_sessions(database)
        except sqlite3.Error as exc:
            yield _unreadable(database, f"not an OpenCode database: {exc}")
            continue
        stored.update(session.session_id for session in sessions)
        yield from (_session_run(session, strict) for session in sessions)
    for tree in sorted(trees):
        try:
            legacy = storage_sessions(tree, skip=stored)
        except OSError as exc:
            yield _unreadable(tree, f"cannot read: {exc.strerror or exc}")
            continue
        yield from (_session_run(session, strict) for session in legacy)


def _session_run(session: Session, strict: bool) -> Run:
    return Run(session.source, 0, lambda on_bytes: Opened("opencode", STORE, session.events(strict=strict)))


def _unreadable(path: Path, message: str) -> Run:
    """A run that says why it cannot be read when it is opened, so the other runs are still read."""

    def opener(on_bytes: Callable[[int], None] | None) -> Opened:
        raise StreamError(message, source=str(path))

    return Run(str(path), 0, opener)
