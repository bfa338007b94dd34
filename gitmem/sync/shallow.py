"""Shallow clones: find memory history cut short and fetch it whole.

A ``--depth`` fetch of memory refs (CI checkouts, a hand-written refspec)
leaves memory commits in ``$GIT_DIR/shallow``: their parents are missing, so
older events are silently invisible. gitmem's own fetch never passes
``--depth``; when it finds truncated memory it repairs it without deepening
the code history (``git fetch --unshallow`` would fetch every code commit):

1. fetch the remote's ``refs/edda/*`` whole into a scratch repository that
   has no shallow boundary;
2. fetch from that scratch repository into the mirror with an infinite
   depth. Git then has every parent of the memory commits and removes them
   from ``shallow``, while code commits, unknown to the scratch repository,
   keep their boundary.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from gitmem.errors import RemoteError
from gitmem.records import layout
from gitmem.storage.backends.base import Backend
from gitmem.storage.locate import RepoLocation, run_git
from gitmem.sync.transport import Remote

INFINITE_DEPTH = 2147483647


def shallow_commits(location: RepoLocation) -> list[str]:
    try:
        with open(os.path.join(location.common_path, "shallow"), encoding="ascii") as handle:
            return handle.read().split()
    except FileNotFoundError:
        return []


def truncated_memory(location: RepoLocation, backend: Backend) -> list[str]:
    """Memory commits at a shallow boundary (their history is missing)."""
    found = []
    for oid in shallow_commits(location):
        if not backend.has_object(oid):
            continue
        try:
            info = backend.read_commit(oid)
        except Exception:
            continue
        if layout.FORMAT_TRAILER in layout.parse_trailers(info.message):
            found.append(oid)
    return found


def repair(location: RepoLocation, remote: Remote) -> None:
    """Fetch the remote's memory history whole (see the module docstring)."""
    scratch_root = os.path.join(location.state_path, "tmp")
    os.makedirs(scratch_root, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="unshallow-", suffix=".git", dir=scratch_root)
    try:
        run_git(["init", "--quiet", "--bare", scratch], location.cwd)
        url = remote_url(location, remote)
        try:
            run_git(
                ["fetch", "--quiet", "--no-tags", url, f"+{layout.REF_ROOT}*:{layout.REF_ROOT}*"],
                scratch,
            )
        except Exception as exc:
            raise RemoteError(
                f"could not fetch whole memory history from {remote.name}: {exc}"
            ) from None
        run_git(
            [
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                f"--depth={INFINITE_DEPTH}",
                scratch,
                f"+{layout.REF_ROOT}*:{remote.mirror_prefix}*",
            ],
            location.cwd,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def remote_url(location: RepoLocation, remote: Remote) -> str:
    """The URL of a configured remote (a URL given directly is returned as is),
    made absolute when it is a relative path."""
    url = remote.name
    if remote.key == remote.name:
        url = run_git(["remote", "get-url", remote.name], location.cwd).decode().strip()
    if "://" not in url and not os.path.isabs(url) and ":" not in url.split("/")[0]:
        url = os.path.abspath(os.path.join(location.cwd, url))
    return url
