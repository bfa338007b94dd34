"""A sidecar's directories: its root, its generations, what a build wrote.

A sidecar lives in ``<git common dir>/edda/<name>/`` (shared by all
worktrees). A full build writes a new generation directory
``g-<time>-<hex>/`` (:func:`new_generation`) and switches to it by writing
the manifest (:mod:`gitmem.sidecar.manifest`), which names it; readers that
opened the previous generation keep their open files, and the older
generations go once the new one is current. An incremental build rewrites
files inside the current generation.

As it writes files, a build records their checksums in the generation's
``written.json``: should it die before writing its manifest, the next build
knows those files for its own work, not damage (:func:`verify_part`).
Anything found where the root should be is removed, never reported: the
whole directory is derived data.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gitmem.errors import IndexDamagedError
from gitmem.sidecar import integrity
from gitmem.sidecar.manifest import checksum
from gitmem.storage.files import write_atomic
from gitmem.storage.locate import RepoLocation

GENERATION_PREFIX = "g-"
# in a generation: the checksums of its files as the last build wrote them
# (the manifest's, unless that build died before writing the manifest)
WRITTEN = "written.json"


def sidecar_root(location: RepoLocation, name: str) -> Path:
    """The directory of the sidecar ``name`` (``index``, ...) of a repository."""
    return location.state_dir / name


def exists(root: Path) -> bool:
    """Whether a sidecar was ever built here (anything at its path counts)."""
    return root.exists() or root.is_symlink()


def prepare_root(root: Path) -> None:
    """Create the root directory. Anything else at its path is damage: the
    whole directory is derived data, so it is removed, never reported."""
    if exists(root) and not root.is_dir():
        root.unlink()
    root.mkdir(parents=True, exist_ok=True)


@contextmanager
def new_generation(root: Path) -> Iterator[Path]:
    """A new, empty generation directory for a full build. Should the block
    fail, the directory goes; should it succeed (it wrote the manifest naming
    this generation), every other generation goes."""
    name = f"{GENERATION_PREFIX}{int(time.time())}-{os.urandom(3).hex()}"
    directory = root / name
    directory.mkdir()
    try:
        yield directory
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    # Readers that opened the previous generation keep their open files.
    remove_old(root, keep={name})


def remove_old(root: Path, keep: set[str]) -> None:
    """Remove every generation but those in ``keep`` (the current one, and
    what builds killed midway left)."""
    for entry in root.iterdir():
        if entry.is_dir() and entry.name.startswith(GENERATION_PREFIX) and entry.name not in keep:
            shutil.rmtree(entry, ignore_errors=True)


def remove_temporary(directory: Path) -> None:
    """Delete temporary files (``.<name>.<…>.tmp``) left by killed writes."""
    for entry in directory.iterdir():
        if entry.name.startswith(".") and entry.name.endswith(".tmp"):
            entry.unlink(missing_ok=True)


def remove(path: Path) -> None:
    """Remove a file, or a directory found where a file belongs."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def write_written(
    directory: Path,
    names: list[str],
    known: dict[str, str] | None = None,
    *,
    order: list[str] | None = None,
) -> dict[str, str]:
    """Checksum ``names`` (paths inside the generation ``directory``) as they
    are now and record them in ``written.json``; returns the checksums, for
    the manifest. Only files new or rewritten since their last checksum are
    read, and none whose checksum is ``known`` (links to files of the
    previous generation: :func:`gitmem.sidecar.integrity.describe`).
    ``order``: files whose order matters (a table's segments), recorded too."""
    files = integrity.describe(directory, names, known)
    record: dict[str, object] = {"files": files}
    if order is not None:
        record["order"] = list(order)
    record["checksum"] = checksum(record)
    write_atomic(str(directory / WRITTEN), json.dumps(record).encode(), fsync=False)
    return files


def _written_record(directory: Path) -> dict[str, object]:
    try:
        raw = json.loads((directory / WRITTEN).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable, not UTF-8, not JSON
        return {}
    if not isinstance(raw, dict) or raw.get("checksum") != checksum(raw):
        return {}
    return raw


def read_written(directory: Path) -> dict[str, str]:
    """The checksums the last build recorded as it wrote files ({} when
    none, or when the record itself is damaged)."""
    files = _written_record(directory).get("files")
    if not isinstance(files, dict):
        return {}
    return {str(k): str(v) for k, v in files.items()}


def read_written_order(directory: Path) -> list[str] | None:
    """The ``order`` the last build recorded (None when it recorded none)."""
    order = _written_record(directory).get("order")
    if not isinstance(order, list) or not all(isinstance(n, str) for n in order):
        return None
    return order


def parts(files: dict[str, str]) -> dict[str, dict[str, str]]:
    """Checksums grouped by what must match as a whole: a file at the top
    of the generation, or a directory (whose files belong together: a
    full-text index's meta.json names its segments)."""
    grouped: dict[str, dict[str, str]] = {}
    for name, value in files.items():
        grouped.setdefault(name.split("/", 1)[0], {})[name] = value
    return grouped


def verify_part(
    directory: Path, files: dict[str, str], part: str, written: dict[str, str], deep: bool
) -> bool:
    """Check one part (see :func:`parts`) against the manifest's ``files``,
    else against ``written`` (:func:`read_written`); True when only the
    latter vouched for it. IndexDamagedError when neither does."""
    try:
        described = parts(files).get(part)
        if described is None:
            raise IndexDamagedError(f"the manifest has no checksum for {part}")
        integrity.verify(directory, described, deep=deep)
        return False
    except IndexDamagedError:
        recorded = parts(written).get(part)
        if recorded is None:
            raise
        integrity.verify(directory, recorded, deep=deep)
        return True
