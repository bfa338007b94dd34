"""Is the code graph current? HEAD's commit, the uncommitted changes (for a
graph that includes them), the settings and the versions, compared with
what the manifest recorded.

HEAD is read from the ref files with the standard library (well under a
millisecond, where ``git rev-parse`` costs a process); reftable
repositories and anything unusual ask git. The uncommitted changes cost a
``git status``, only for a graph built with them.
"""

from __future__ import annotations

import os

from gitmem.graph.facts import EXTRACTOR_VERSION
from gitmem.graph.manifest import GraphManifest
from gitmem.graph.scan import Settings, current_status
from gitmem.graph.schema import SCHEMA_VERSION
from gitmem.storage.locate import RepoLocation, read_git_output

_HEX = frozenset("0123456789abcdef")


def _oid(text: str) -> str | None:
    text = text.strip()
    return text if len(text) in (40, 64) and set(text) <= _HEX else None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read(4096)
    except (OSError, UnicodeDecodeError):
        return None


def _packed(common: str, ref: str) -> str | None:
    try:
        with open(os.path.join(common, "packed-refs"), encoding="utf-8") as handle:
            for line in handle:
                oid, _, name = line.rstrip("\n").partition(" ")
                if name == ref:
                    return _oid(oid)
    except (OSError, UnicodeDecodeError):
        return None
    return None


def head_commit(location: RepoLocation) -> str | None:
    """HEAD's commit id (None on an unborn branch)."""
    if not location.uses_reftable:
        head = _read(os.path.join(location.git_path, "HEAD"))
        if head is not None:
            if head.startswith("ref: "):
                ref = head[5:].strip()
                if ref.startswith("refs/heads/"):
                    loose = _read(os.path.join(location.common_path, ref))
                    if loose is not None:
                        found = _oid(loose)
                        if found is not None:
                            return found
                    elif not os.path.exists(os.path.join(location.common_path, ref)):
                        return _packed(location.common_path, ref)
            elif (found := _oid(head)) is not None:
                return found
    out = read_git_output(["rev-parse", "-q", "--verify", "HEAD^{commit}"], location.cwd)
    return _oid((out or b"").decode()) if out else None


def stale_reason(location: RepoLocation, manifest: GraphManifest, settings: Settings) -> str:
    """Why the graph no longer reflects what it follows ("" when it does)."""
    if manifest.extractor != EXTRACTOR_VERSION:
        return f"extractor version {manifest.extractor} -> {EXTRACTOR_VERSION}"
    if manifest.schema != SCHEMA_VERSION:
        return f"table schema version {manifest.schema} -> {SCHEMA_VERSION}"
    if manifest.settings != settings.fingerprint:
        return "edda.code settings changed"
    if manifest.mode == "commit":
        return ""  # a commit named by hand does not move
    if head_commit(location) != manifest.commit:
        return "HEAD moved"
    if manifest.mode == "worktree" and current_status(location) != manifest.status:
        return "uncommitted changes changed"
    return ""
