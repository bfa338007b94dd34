"""Which memory branches a push sends: ``edda.push`` and ``edda.pushBranch``.

Every clone of a repository gets what its remote holds, so a pushed chain
reaches every fresh clone and stays there. By default (``tracked``) a push
sends what teammates need (spec/sync.md §7, "What a push sends"):

``tracked`` (default)
    the trunk, the current branch, every branch whose code is on the remote
    (a remote-tracking branch ``<remote>/<branch>``, or ``branch.<b>.remote``
    naming it), and every chain the remote already holds;
``current``
    the trunk and the current branch;
``all``
    every memory branch, the detached HEAD chain included.

``edda.pushBranch`` (multi-valued, globs such as ``release/*``; ``*`` also
matches ``/``) adds branches in any mode. Whatever the mode, a chain holding
a redaction of an event that the remote has or gets is pushed: redactions
must travel. Pulls are not affected: they bring every chain the remote has.

The payload store is a single snapshot, so what stays local must also stay
out of it: the snapshot pushed lacks the payloads of events only unpushed
chains hold (:meth:`gitmem.storage.ledger.Ledger.outgoing_payloads`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from gitmem.errors import UsageError
from gitmem.records import layout
from gitmem.storage.gitconfig import Config, get_last

if TYPE_CHECKING:
    from gitmem.memory.api import Memory
    from gitmem.sync.transport import Remote

PUSH_MODES = ("tracked", "current", "all")
DEFAULT_PUSH = "tracked"


@dataclass
class PushSelection:
    """The local chains a push sends, those it leaves local, and the events
    only the latter hold (whose payloads stay out of the pushed store)."""

    mode: str
    refs: list[str] = field(default_factory=list)
    held_back: list[str] = field(default_factory=list)
    local_only: list[str] = field(default_factory=list)  # event ids


def push_mode(config: Config) -> str:
    """``edda.push``: ``tracked`` (default), ``current`` or ``all``."""
    value = (get_last(config, "edda.push") or DEFAULT_PUSH).strip().lower()
    if value not in PUSH_MODES:
        raise UsageError(
            f"edda.push is {value!r}: it must be one of {', '.join(PUSH_MODES)}",
            "fix it with: git config edda.push tracked",
        )
    return value


def push_patterns(config: Config) -> list[str]:
    """``edda.pushBranch``: globs of branch names always pushed."""
    return [p.strip() for p in config.get("edda.pushbranch", []) if p.strip()]


def select_push(
    memory: Memory, remote: Remote, local: Mapping[str, str], mirror: Mapping[str, str]
) -> PushSelection:
    """Which of the ``local`` chains (ref -> tip) a push to ``remote`` sends,
    given what it held at the last fetch (``mirror``)."""
    from gitmem.branches.prune import events_between, redacts_outside

    config = memory.config
    mode = push_mode(config)
    selection = PushSelection(mode)
    if mode == "all":
        selection.refs = sorted(local)
        return selection
    patterns = push_patterns(config)
    trunk, current = memory.trunk, memory.branch
    tracking = _code_on(memory, remote) if mode == "tracked" else set()
    chosen, others = [], []
    for ref in sorted(local):
        name = layout.branch_of_ref(ref)
        wanted = name is not None and (
            name in (trunk, current)
            or name in tracking
            or any(fnmatchcase(name, p) for p in patterns)
        )
        if wanted or (mode == "tracked" and ref in mirror):
            chosen.append(ref)
        else:
            others.append(ref)
    ledger = memory.ledger
    remote_tips = [tip for ref, tip in mirror.items() if layout.is_chain_ref(ref)]
    while True:
        shared = [local[r] for r in chosen] + remote_tips
        # Of the chains held back, only their own events' ids and their
        # redactions are needed (every envelope of them, held, was ~3 KB
        # an event: 1.7 GB for a team's feature branches at a million events).
        local_only: set[str] = set()
        redactions: dict[str, list[dict[str, Any]]] = {r: [] for r in others}
        for r in others:
            for envelope in events_between(ledger, [local[r]], shared):
                if isinstance(envelope.get("id"), str):
                    local_only.add(envelope["id"])
                if envelope.get("type") == "redaction":
                    redactions[r].append(envelope)
        # A redaction of an event the remote has, or will have, must go with
        # it: left behind, the remote and every clone keep the payload.
        redacting = [r for r in others if redacts_outside(ledger, redactions[r], local_only)]
        if not redacting:
            break
        chosen += redacting
        others = [r for r in others if r not in redacting]
    selection.refs = sorted(chosen)
    selection.held_back = others
    selection.local_only = sorted(local_only)
    return selection


def _code_on(memory: Memory, remote: Remote) -> set[str]:
    """Branches whose code is on ``remote``: a remote-tracking branch of that
    name, or an upstream there (``branch.<name>.remote``)."""
    from gitmem.branches.gitinfo import REMOTES, local_branches

    prefix = f"{REMOTES}{remote.name}/"
    names = (
        {
            ref[len(prefix) :]
            for ref in memory.backend.list_refs(prefix)
            if not ref.endswith("/HEAD")
        }
        if remote.key == remote.name
        else set()
    )
    for name in local_branches(memory.backend):
        if get_last(memory.config, f"branch.{name}.remote") == remote.name:
            names.add(name)
    return names
