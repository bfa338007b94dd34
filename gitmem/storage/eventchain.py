"""Event chains in git: an event on its way in (:class:`Sealed`) and as found
(:class:`Located`), the commit that adds events to a chain, and reading the
chains back (refs, commits, envelopes, counts).

Format of the commits: spec/storage.md §3. :class:`ChainReader` is one part
of :class:`gitmem.storage.ledger.Ledger`, which moves the refs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitmem.errors import FormatError, FormatTooNewError
from gitmem.records import canonical, layout
from gitmem.storage.backends.base import Backend
from gitmem.storage.objects import ObjectBatch


@dataclass(frozen=True)
class Sealed:
    """An event ready to commit: its envelope and its logical body."""

    envelope: dict[str, Any]
    body: dict[str, Any] | None  # None: committed without a payload (imported redacted)
    ref_override: str | None = None

    @property
    def ref(self) -> str:
        if self.ref_override is not None:
            return self.ref_override
        return layout.branch_ref(self.envelope.get("scope", {}).get("branch"))


@dataclass(frozen=True)
class Located:
    """An envelope as found in the chain: where it lives."""

    envelope: dict[str, Any]
    ref: str
    commit: str
    blob: str


def check_format(message: str, where: str) -> None:
    """Raise FormatTooNewError when a commit was written by a newer format."""
    trailer = layout.parse_trailers(message).get(layout.FORMAT_TRAILER)
    try:
        version = int(trailer) if trailer is not None else layout.FORMAT_VERSION
    except ValueError:
        version = layout.FORMAT_VERSION + 1  # unreadable marker: treat as unknown
    if version > layout.FORMAT_VERSION:
        raise FormatTooNewError(
            f"{where} was written in storage format {trailer}; this gitmem reads format "
            f"{layout.FORMAT_VERSION}",
            "upgrade gitmem (pip install -U git-edda) to read and write this memory",
        )


def event_commit(
    batch: ObjectBatch, items: list[Sealed], parent: str | None, branch: str | None
) -> str:
    """Add to ``batch`` the commit that appends ``items`` (in this order) after
    ``parent`` on ``branch``'s chain; returns its id."""
    entries = [
        (layout.entry_name(i), layout.MODE_BLOB, batch.blob(canonical.encode(s.envelope)))
        for i, s in enumerate(items)
    ]
    root = batch.tree([(layout.EVENTS_DIR, layout.MODE_TREE, batch.tree(entries))])
    message = layout.commit_message([s.envelope for s in items], branch)
    when = max(s.envelope["time"] for s in items) // 1_000_000
    return batch.commit(root, [parent] if parent else [], message, when)


class ChainReader:
    """Reading the event chains of one repository (needs only its backend)."""

    backend: Backend

    def memory_refs(self) -> dict[str, str]:
        """Every event-chain ref and its tip (the payload ref excluded)."""
        refs = self.backend.list_refs(layout.REF_ROOT)
        return {r: t for r, t in refs.items() if layout.is_chain_ref(r)}

    def walk(self, tip: str) -> Iterator[tuple[str, Any]]:
        """Every commit reachable from ``tip`` once, newest first (parents after children)."""
        seen = {tip}
        stack = [tip]
        while stack:
            oid = stack.pop()
            info = self.backend.read_commit(oid)
            yield oid, info
            for parent in info.parents:
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)

    def commit_envelopes(self, commit: str, info: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        """(blob oid, decoded envelope) of every event a commit adds."""
        events_tree = self.backend.read_path(info.tree, layout.EVENTS_DIR)
        if events_tree is None:
            return
        for entry in sorted(self.backend.read_tree(events_tree)):
            data = self.backend.read_blob(entry.oid)
            try:
                envelope = canonical.decode(data)
            except ValueError as exc:
                raise FormatError(f"event blob {entry.oid} in commit {commit} is not JSON") from exc
            yield entry.oid, envelope

    def envelopes(self, refs: Sequence[str] | None = None) -> Iterator[Located]:
        """Every distinct event reachable from ``refs`` (default: all memory refs).

        An event reachable from several refs is yielded once, at the first ref.
        """
        tips = self.memory_refs()
        chosen = list(tips) if refs is None else [r for r in refs if r in tips]
        seen_commits: set[str] = set()
        seen_ids: set[str] = set()
        for ref in chosen:
            for oid, info in self.walk(tips[ref]):
                if oid in seen_commits:
                    continue
                seen_commits.add(oid)
                check_format(info.message, f"memory commit {oid} on {ref}")
                for blob, envelope in self.commit_envelopes(oid, info):
                    eid = envelope.get("id") if isinstance(envelope, dict) else None
                    if not isinstance(eid, str) or eid in seen_ids:
                        continue
                    seen_ids.add(eid)
                    yield Located(envelope, ref, oid, blob)

    def chains(self, tips: Mapping[str, str]) -> dict[str, list[Located]]:
        """Each chain's distinct events (ref -> what :meth:`envelopes` gives for
        that ref alone), every commit's envelopes read and decoded once for
        all of them: the branches of one repository share most of their
        history, and reading it once per chain held one decoded copy of the
        trunk's events per branch (tens of gigabytes at a million events on
        20 branches). A shared event is the one object in every list, with
        the ``ref`` of the first chain that met it."""
        read: dict[str, list[Located]] = {}  # commit -> its events
        found: dict[str, list[Located]] = {}
        for ref, tip in tips.items():
            events: list[Located] = []
            seen_ids: set[str] = set()
            for oid, info in self.walk(tip):
                located = read.get(oid)
                if located is None:
                    check_format(info.message, f"memory commit {oid} on {ref}")
                    located = read[oid] = [
                        Located(envelope, ref, oid, blob)
                        for blob, envelope in self.commit_envelopes(oid, info)
                        if isinstance(envelope, dict) and isinstance(envelope.get("id"), str)
                    ]
                for loc in located:
                    if loc.envelope["id"] not in seen_ids:
                        seen_ids.add(loc.envelope["id"])
                        events.append(loc)
            found[ref] = events
        return found

    def count_events(self, include: Sequence[str], exclude: Sequence[str]) -> int:
        """Events added by commits reachable from ``include`` but not ``exclude``."""
        total = 0
        for oid in self.backend.commits_between(include, exclude):
            count = layout.parse_trailers(self.backend.read_commit(oid).message).get(
                layout.COUNT_TRAILER
            )
            total += int(count) if count and count.isdigit() else 0
        return total
