"""Reading many blobs (or their sizes) through one ``git cat-file`` process.

A process per blob would cost a few milliseconds each (thousands of files
in a cold build); libgit2 would cost its import. Requests are written by a
thread while this one reads the answers, so neither pipe fills up and
blocks the other side. A blob the object store lacks (a partial clone) is
reported missing, not fetched (``GIT_NO_LAZY_FETCH``, git 2.44 and later).
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator, Sequence
from typing import IO

from gitmem.errors import GitError
from gitmem.storage.locate import clean_git_env


def _batch(
    cwd: str, oids: Sequence[str], option: str
) -> Iterator[tuple[str, list[bytes], IO[bytes]]]:
    """``(oid, header fields, stdout)`` per oid from ``git cat-file OPTION``;
    the caller reads the contents after a ``--batch`` header."""
    env = clean_git_env()
    env["GIT_NO_LAZY_FETCH"] = "1"
    try:
        proc = subprocess.Popen(
            ["git", "cat-file", option],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except FileNotFoundError as exc:
        raise GitError("the git command is not installed", "install git and retry") from exc
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def feed() -> None:
        try:
            stdin.write(b"".join(oid.encode() + b"\n" for oid in oids))
            stdin.close()
        except (BrokenPipeError, ValueError):
            pass  # the reader stopped early and closed the process

    writer = threading.Thread(target=feed, name="cat-file-feed", daemon=True)
    writer.start()
    try:
        for oid in oids:
            header = stdout.readline()
            if not header:
                raise GitError(f"git cat-file stopped before blob {oid}")
            fields = header.split()
            if len(fields) == 2 and fields[1] == b"missing":
                fields = []
            elif len(fields) != 3:
                raise GitError(f"git cat-file: unexpected answer {header[:100]!r}")
            yield oid, fields, stdout
    finally:
        # Done, or abandoned midway: either way the process has nothing more to say.
        if proc.poll() is None:
            proc.kill()
        stdout.close()
        proc.wait()
        writer.join()


def read_blobs(cwd: str, oids: Sequence[str]) -> Iterator[tuple[str, bytes | None]]:
    """``(oid, bytes)`` for each of ``oids``, in order; None for a missing blob."""
    if not oids:
        return
    for oid, fields, stdout in _batch(cwd, oids, "--batch"):
        if not fields:
            yield oid, None
            continue
        size = int(fields[2])
        data = stdout.read(size)
        stdout.read(1)  # the newline after the contents
        if len(data) != size:
            raise GitError(f"git cat-file stopped inside blob {oid}")
        yield oid, data


def blob_sizes(cwd: str, oids: Sequence[str]) -> dict[str, int | None]:
    """Each blob's size in bytes (None: missing), without reading it."""
    if not oids:
        return {}
    return {
        oid: int(fields[2]) if fields else None
        for oid, fields, _ in _batch(cwd, oids, "--batch-check")
    }
