"""Safe outputs: checked before any work, written to a temporary file and renamed into place.

* ``check_output(path, inputs)`` before a command does its work: the folder must exist, the path
  must not be a folder nor any of the inputs (``simulate T --json T`` would destroy the trace); an
  existing file is replaced only with ``force`` or with a notice (``notice``).
* ``atomic_output(path)`` yields a temporary path next to ``path`` and renames it into place only
  when the block succeeds: a command killed mid-way never leaves a corrupt file at the final path.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path


class OutputError(ValueError):
    """An output path that would lose data or cannot be written."""


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _inside(p: Path, d: Path) -> bool:
    try:
        p.resolve().relative_to(d.resolve())
        return True
    except ValueError:
        return False


def check_output(path: str | Path, inputs: Iterable[str | Path | None] = (), *, what: str = "output",
                 force: bool = True, notice: Callable[[str], None] | None = None) -> Path:
    """Checks ``path`` before any work is done (see the module doc); returns it as a Path.

    ``force=False`` refuses to replace an existing file; with ``force=True`` the replacement is
    announced through ``notice`` (when given)."""
    p = Path(path)
    if str(path) == "" or p.name in ("", ".", ".."):
        raise OutputError(f"{what} {str(path)!r}: not a file name")
    if p.is_dir():
        raise OutputError(f"{what} {p}: is a directory; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"{what} {p}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise OutputError(f"{what} {p}: folder {parent} is not writable")
    for i in inputs:
        if i is None:
            continue
        q = Path(i)
        if _same(p, q) or (q.is_dir() and _inside(p, q) and p.suffix in (".otf2", ".def", ".evt", ".meta", ".bin")):
            raise OutputError(f"{what} {p} is the input {q}: writing it would destroy the input; choose another path")
    if p.exists():
        if not force:
            raise OutputError(f"{what} {p} exists; pass --force to replace it")
        if notice is not None:
            notice(f"replacing the existing {p}")
    return p


@contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """A temporary path in ``path``'s folder, renamed to ``path`` when the block ends without error
    (removed otherwise)."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.part-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, p)
    finally:
        if tmp.exists():
            try:
                tmp.unlink()
            except OSError:
                pass


def write_text_atomic(path: str | Path, text: str) -> Path:
    with atomic_output(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)
