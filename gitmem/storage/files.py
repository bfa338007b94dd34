"""Durable file writes: write to a temporary name, fsync, rename, fsync the directory.

Standard library only (the capture hot path writes spool files with it).
"""

from __future__ import annotations

import os


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a rename inside ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(
    path: str,
    data: bytes,
    *,
    fsync: bool = True,
    mode: int = 0o644,
    tmp_dir: str | None = None,
    tmp_prefix: str | None = None,
    sync_dir: bool = True,
) -> None:
    """Write ``data`` to ``path`` so that readers see all of it or none of it.

    The temporary file goes in ``tmp_dir`` (default: beside ``path``, on the
    same file system, as a rename requires), named ``tmp_prefix`` + random
    when given (inside ``.git/objects`` it must follow git's ``tmp_obj_``
    convention, which ``git fsck`` ignores and ``git gc`` cleans up after a
    crash). With ``fsync`` the data and, if ``sync_dir``, the directory entry
    are durable when this returns.
    """
    head, name = os.path.split(path)
    unique = f"{os.getpid()}_{os.urandom(4).hex()}"
    tmp_name = f"{tmp_prefix}{unique}" if tmp_prefix else f".{name}.{unique}.tmp"
    tmp = os.path.join(tmp_dir or head, tmp_name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if fsync and sync_dir:
        fsync_dir(head)
