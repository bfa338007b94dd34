"""Data files that ship inside gitmem and are trusted only by their content.

The built-in embedders read weights and vocabularies from
``gitmem/embed/data/``. Each file is pinned by size and SHA-256, so that
nothing (a damaged install, a file replaced by hand) can silently change the
vectors stored under a model's id. Hashing tens of megabytes on every start
would cost more than loading them, so a caller may pass a ``stamp_dir``
where the result of a successful check is remembered, keyed by each file's
(path, size, mtime_ns, inode): a file that changes in any way that matters
gets a new mtime or inode, and is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from gitmem.errors import DependencyError

DATA_DIR = Path(__file__).parent / "data"

REINSTALL_HINT = (
    "reinstall gitmem (pip install --force-reinstall git-edda, or pipx reinstall git-edda), "
    "or choose another provider with git config edda.embed.provider "
    "(minilm, static, ollama, openai, none)"
)

_STAMP_FORMAT = 1
# A file modified this recently may still change within the same mtime tick
# (the "racy git" problem): hash it, but do not remember the result.
_RACY_NS = 2_000_000_000

Stamp = tuple[str, int, int, int, str]  # path, size, mtime_ns, inode, sha256
Signature = tuple[tuple[int, int, int], ...]
T = TypeVar("T")


class PinnedFile(NamedTuple):
    """A data file of a built-in embedder, trusted only by content."""

    relpath: str  # relative to DATA_DIR (or to a test's root)
    size: int
    sha256: str


class PinnedSet(NamedTuple):
    """The files one embedder needs, and how to talk about them."""

    files: tuple[PinnedFile, ...]
    stamp_name: str  # the stamp file's name in a stamp directory
    owner: str  # "the static embedder": names the files in "missing" errors
    origin: str  # "the pinned wordllama 0.4.0.post1 file": what a mismatch differs from


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file's bytes, hex."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _read_stamp(stamp_path: Path) -> set[Stamp]:
    try:
        data = json.loads(stamp_path.read_bytes())
        if data.get("format") != _STAMP_FORMAT:
            return set()
        return {
            (str(p), int(size), int(mtime), int(ino), str(sha))
            for p, size, mtime, ino, sha in data["verified"]
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return set()  # a missing or damaged stamp only costs a re-hash


def _write_stamp(stamp_path: Path, entries: list[Stamp]) -> None:
    tmp = stamp_path.with_name(f".{stamp_path.name}.{os.getpid()}.tmp")
    try:
        stamp_path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"format": _STAMP_FORMAT, "verified": entries}))
        os.replace(tmp, stamp_path)
    except OSError:
        # The stamp is an optimisation: a read-only state directory must not
        # stop embeddings from working.
        try:
            tmp.unlink()
        except OSError:
            pass


def verify(pins: PinnedSet, root: Path, stamp_dir: Path | None = None) -> int:
    """Check the pinned files under ``root`` (size and SHA-256).

    Returns how many files had to be hashed (0 when ``stamp_dir`` holds a
    stamp for every file as it is now). Raises :class:`DependencyError`
    naming the file, the expected and the actual digest on any mismatch.
    """
    stamp_path = stamp_dir / pins.stamp_name if stamp_dir is not None else None
    stamped = _read_stamp(stamp_path) if stamp_path is not None else set()
    entries: list[Stamp] = []
    hashed = 0
    stampable = True
    for pin in pins.files:
        path = root / pin.relpath
        try:
            st = os.stat(path)
        except OSError as exc:
            raise DependencyError(
                f"{pins.owner}'s {pin.relpath} is missing from {root} "
                f"({exc.strerror or exc}): this gitmem installation is incomplete",
                REINSTALL_HINT,
            ) from None
        entry = (str(path), st.st_size, st.st_mtime_ns, st.st_ino, pin.sha256)
        entries.append(entry)
        if entry in stamped:
            continue
        try:
            actual = sha256_file(path)
        except OSError as exc:
            raise DependencyError(
                f"{path} is unreadable ({exc.strerror or exc})", REINSTALL_HINT
            ) from None
        hashed += 1
        if actual != pin.sha256 or st.st_size != pin.size:
            raise DependencyError(
                f"{path} does not match {pins.origin}: "
                f"expected sha256 {pin.sha256} ({pin.size} bytes), "
                f"found sha256 {actual} ({st.st_size} bytes)",
                REINSTALL_HINT,
            )
        if os.stat(path).st_mtime_ns != st.st_mtime_ns or (
            time.time_ns() - st.st_mtime_ns < _RACY_NS
        ):
            stampable = False
    if stamp_path is not None and hashed and stampable:
        _write_stamp(stamp_path, entries)
    return hashed


def signature(files: Sequence[PinnedFile], root: Path) -> Signature:
    """The (size, mtime, inode) of every file: what a process cache of the
    loaded files is keyed by. ((-1,-1,-1),) when one is missing: never a
    cache hit, so that the verification names what is missing."""
    out = []
    for pin in files:
        try:
            st = os.stat(root / pin.relpath)
            out.append((st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            return ((-1, -1, -1),)
    return tuple(out)


class Loaded(Generic[T]):
    """A set of pinned files, verified and loaded once per process and data
    directory, and shared by every embedder of the process: the daemon, the
    MCP server or a library user searching in a loop pays the load (tens of
    milliseconds) once. An entry is reused only while every file keeps its
    (size, mtime, inode): a replaced file is verified and loaded again. One
    lock: two threads must not both load tens of megabytes."""

    def __init__(self, pins: PinnedSet, load: Callable[[Path], T]) -> None:
        self._pins = pins
        self._load = load
        self._entries: dict[str, tuple[Signature, T]] = {}
        self._lock = threading.Lock()

    def get(self, root: Path, stamp_dir: Path | None) -> T:
        """The files under ``root``, loaded; verified first unless this
        process already loaded them as they are (see :func:`verify`)."""
        with self._lock:
            now = signature(self._pins.files, root)
            entry = self._entries.get(str(root))
            if entry is None or entry[0] != now:
                verify(self._pins, root, stamp_dir)
                entry = self._entries[str(root)] = (now, self._load(root))
            return entry[1]
