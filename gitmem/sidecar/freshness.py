"""Is a sidecar fresh? Memory ref tips read without libgit2, compared with
the ones its manifest recorded: the staleness check on every query.

Reading loose refs and ``packed-refs`` with the standard library takes well
under a millisecond, where opening the repository with pygit2 costs ~60 ms
of imports. Repositories with reftable storage fall back to
``git for-each-ref``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from gitmem.records import layout
from gitmem.storage.locate import RepoLocation, read_git_output

_HEX = frozenset("0123456789abcdef")


def _is_oid(text: str) -> bool:
    return len(text) in (40, 64) and set(text) <= _HEX


def _packed(common: str) -> dict[str, str]:
    refs: dict[str, str] = {}
    try:
        with open(os.path.join(common, "packed-refs"), encoding="utf-8") as handle:
            for line in handle:
                if line.startswith(("#", "^")):
                    continue
                oid, _, name = line.rstrip("\n").partition(" ")
                if name.startswith(layout.REF_ROOT) and _is_oid(oid):
                    refs[name] = oid
    except FileNotFoundError:
        pass
    return refs


def _loose(common: str) -> dict[str, str]:
    refs: dict[str, str] = {}
    root = os.path.join(common, *layout.REF_ROOT.rstrip("/").split("/"))
    for directory, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".lock"):
                continue
            path = os.path.join(directory, name)
            try:
                with open(path, encoding="utf-8") as handle:
                    oid = handle.read(80).strip()
            except OSError:
                continue
            if _is_oid(oid):
                rel = os.path.relpath(path, common).replace(os.sep, "/")
                refs[rel] = oid
    return refs


def memory_tips(location: RepoLocation) -> dict[str, str]:
    """Every ref under ``refs/edda/`` (chains and the payload store) and its tip."""
    if location.uses_reftable:
        out = read_git_output(
            ["for-each-ref", "--format=%(objectname) %(refname)", layout.REF_ROOT],
            location.cwd,
        )
        refs = {}
        for line in (out or b"").decode("utf-8", "replace").splitlines():
            oid, _, name = line.partition(" ")
            refs[name] = oid
        return refs
    common = location.common_path
    refs = _packed(common)
    refs.update(_loose(common))  # a loose ref overrides its packed copy
    return refs


def memory_state(location: RepoLocation) -> tuple[dict[str, str], str | None]:
    """(chain ref -> tip, the payload store's tip) as they are now: what a
    sidecar built from memory records in its manifest."""
    tips = memory_tips(location)
    payloads = tips.pop(layout.PAYLOAD_REF, None)
    return {r: t for r, t in tips.items() if layout.is_chain_ref(r)}, payloads


def reflects_memory(
    location: RepoLocation, chains: Mapping[str, str], payloads: str | None
) -> bool:
    """True when the chain tips and payload store tip a sidecar recorded are
    the current ones (standard library only)."""
    now_chains, now_payloads = memory_state(location)
    return now_chains == chains and now_payloads == payloads
