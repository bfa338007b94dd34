"""Reading many blobs through one ``git cat-file --batch`` process.

A process per blob would cost a few milliseconds each (thousands of files
in a cold build); libgit2 would cost its import. Requests are written by a
thread while this one reads the answers, so neither pipe fills up and
blocks the other side.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator, Sequence

from gitmem.errors import GitError
from gitmem.storage.locate import clean_git_env


def read_blobs(cwd: str, oids: Sequence[str]) -> Iterator[tuple[str, bytes | None]]:
    """``(oid, bytes)`` for each of ``oids``, in order; None for a blob the
    object store does not have (a partial clone: it is not fetched)."""
    if not oids:
        return
    env = clean_git_env()
    env["GIT_NO_LAZY_FETCH"] = "1"  # git >= 2.44: never fetch a missing blob from a promisor
    try:
        proc = subprocess.Popen(
            ["git", "cat-file", "--batch"],
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
            for oid in oids:
                stdin.write(oid.encode() + b"\n")
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
                yield oid, None
                continue
            if len(fields) != 3:
                raise GitError(f"git cat-file: unexpected answer {header[:100]!r}")
            size = int(fields[2])
            data = stdout.read(size)
            stdout.read(1)  # the newline after the contents
            if len(data) != size:
                raise GitError(f"git cat-file stopped inside blob {oid}")
            yield oid, data
    finally:
        # Done, or abandoned midway: either way the process has nothing more to say.
        if proc.poll() is None:
            proc.kill()
        stdout.close()
        proc.wait()
        writer.join()
