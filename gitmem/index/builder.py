"""Building the search index, under the builder lock: the choice of a full or
an incremental build, and what changed in memory becoming rows, documents and
vectors (the rules and the order of writes: :mod:`gitmem.index.refresh`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.errors import GitmemError, IndexDamagedError
from gitmem.index import table as tables
from gitmem.index.eventrow import blank, event_row
from gitmem.index.manifest import Manifest, generation_files, read_manifest, write_manifest
from gitmem.index.segments import NewTexts, Runs, remove_stale
from gitmem.index.state import Progress, RefreshReport, RefreshState
from gitmem.records import layout
from gitmem.sidecar import generations
from gitmem.storage.payloadlist import UNKNOWN, PayloadListing, listed

if TYPE_CHECKING:
    import pyarrow as pa

    from gitmem.index.fulltext import TextDoc
    from gitmem.memory.api import Memory
    from gitmem.storage.payloads import Roots


BULK_COMMITS = 2_000
"""A refresh that reads at least this many memory commits (a full build, a
pull of many events) lists the payload store first and reads each body by
its blob: a lookup by path would need libgit2's cache (see
:mod:`gitmem.storage.payloadlist`). Below, listing a large store would cost
more than the lookups it saves."""


class Builder:
    """One refresh of the index, under the builder lock (see :mod:`gitmem.index.refresh`)."""

    def __init__(
        self,
        mem: Memory,
        root: Path,
        progress: Progress | None,
        embed: bool,
        *,
        embed_all: bool = False,
    ) -> None:
        self.mem = mem
        self.root = root
        self.progress = progress or (lambda stage, done, total: None)
        self.embed = embed
        # Embed every text now (git edda index), not only what fits in
        # edda.embed.budget (see gitmem.index.embedding).
        self.embed_all = embed_all
        self.backend = mem.backend
        self.ledger = mem.ledger

    # -- the decision ------------------------------------------------------------
    def run(self, rebuild: bool, *, deep: bool = False) -> RefreshReport:
        tips = self.ledger.memory_refs()
        payloads = self.backend.read_ref(layout.PAYLOAD_REF)
        manifest = read_manifest(self.root)
        reason = self._full_reason(manifest, tips, rebuild)
        if reason:
            return self._full(tips, payloads, reason)
        assert manifest is not None
        try:
            state = RefreshState.open(self.root / manifest.generation, manifest, deep=deep)
        except IndexDamagedError as exc:
            return self._full(tips, payloads, f"damaged sidecar ({exc})")
        if tips == manifest.tips and payloads == manifest.payloads:
            report = RefreshReport("none", events=manifest.events)
            if state.dropped_vectors:
                report.warnings.append(f"vector index rebuilt: {state.dropped_vectors}")
            before = (manifest.model, manifest.dim, manifest.unembedded, manifest.embed_error)
            removed = self._vectors(state, manifest, report, new_texts=NewTexts())
            after = (manifest.model, manifest.dim, manifest.unembedded, manifest.embed_error)
            if before != after or report.vectors or removed or state.dropped_vectors:
                self._commit(state, manifest, tips, payloads, report)
            return report
        report = RefreshReport("incremental")
        self._apply(state, manifest, tips, payloads, report)
        return report

    def _full_reason(self, manifest: Manifest | None, tips: dict[str, str], rebuild: bool) -> str:
        if rebuild:
            return "requested"
        if manifest is None:
            return "no usable index"
        for ref, old in manifest.tips.items():
            new = tips.get(ref)
            if new is None:
                return f"{ref} was deleted"
            if new != old and not self.backend.is_ancestor(old, new):
                return f"{ref} was rewound"
        return ""

    def _full(self, tips: dict[str, str], payloads: str | None, reason: str) -> RefreshReport:
        report = RefreshReport("full", reason=reason)
        with generations.new_generation(self.root) as directory:
            manifest = Manifest.empty(directory.name)
            state = RefreshState.create(directory, manifest)
            self._apply(state, manifest, tips, payloads, report)
        return report

    # -- walking new commits -------------------------------------------------------
    def _apply(
        self,
        state: RefreshState,
        manifest: Manifest,
        tips: dict[str, str],
        payloads: str | None,
        report: RefreshReport,
    ) -> None:
        known_commits = state.member_commits()
        members: list[pa.Table] = []
        to_read: list[tuple[str, str]] = []  # (commit, ref)
        seen_commits: set[str] = set()
        for ref in sorted(tips):
            old = manifest.tips.get(ref)
            if old == tips[ref]:
                continue
            commits = self.backend.commits_between([tips[ref]], [old] if old else [])
            have = state.commits_of(ref)
            members.append(tables.member_table(ref, [c for c in commits if c not in have]))
            for commit in commits:
                if commit in known_commits or commit in seen_commits:
                    continue
                seen_commits.add(commit)
                to_read.append((commit, ref))
        del known_commits, seen_commits
        tree = self.ledger.payload_roots(payloads) if payloads else None
        # Rows go to sorted run files as they are made (a few thousand in
        # memory at a time): at a million events the rows alone would take
        # gigabytes. Duplicates, and rows already in the table, are dropped
        # when the runs are merged into it.
        listing = listed(self.backend, tree) if len(to_read) >= BULK_COMMITS else None
        added = self._added(manifest.payloads, payloads, tree) if listing is None else {}
        runs = Runs(state.directory)
        targets = state.redaction_targets()
        try:
            # Each commit, envelope and body is read once: with the store
            # listed, no lookup needs libgit2's cache, which would otherwise
            # keep ~250 MB of commits and trees at a million events.
            with self.backend.streaming() if listing is not None else nullcontext():
                for done, (commit, ref) in enumerate(to_read, 1):
                    for envelope, event_ref, _commit in self._envelopes(commit, ref):
                        body, _ = self._body(tree, envelope, listing, added)
                        row = event_row(envelope, body, event_ref, commit)
                        if row["type"] == "redaction" and row["target"]:
                            targets.add(row["target"])
                        runs.add(row)
                    self.progress("reading memory commits", done, len(to_read))
            del listing, added
            runs.flush()
            # Bodies that were missing may have arrived (a payload store merged by sync).
            revived: list[tables.EventRow] = []
            if payloads != manifest.payloads:
                for row in state.missing_rows():
                    envelope = json.loads(row["envelope"])
                    body, _ = self.ledger.checked_body(tree, envelope)
                    if body is not None and row["id"] not in targets:
                        revived.append(event_row(envelope, body, row["ref"], row["commit"]))
            # A payload altered behind gitmem's back under an indexed event: its
            # text is no longer vouched for, so the row loses it, as Memory's
            # readers show "payload does not match its envelope".
            altered = self._altered(state, manifest.payloads, payloads, tree)
            # Redactions: every target of a redaction event loses its text
            # everywhere (new rows are blanked as they are merged).
            newly_redacted = state.unredacted_rows(targets)
            for row in newly_redacted:
                blank(row)
            replaced = [*revived, *newly_redacted, *altered]
            self.progress("events table", 0, runs.count)
            merged = state.update_events(runs, replaced, blank=targets)
            self.progress("events table", runs.count, runs.count)
        finally:
            runs.close()
        state.add_members(members)
        report.added = merged.added
        report.redacted = len(newly_redacted)
        lost_text = [r for r in [*newly_redacted, *altered] if not r["was_missing"]]
        if lost_text or state.fulltext is None or merged.texts.overflow:
            if lost_text:
                report.rebuilt.append("fulltext")
            manifest.fulltext = state.rebuild_fulltext(self.progress)
        else:
            state.fulltext.update(_docs(merged.texts.batches()))
            self._vouch(state, manifest)  # the full text changed in place
        self._vectors(state, manifest, report, new_texts=merged.texts, redacted=lost_text)
        self._vouch(state, manifest)
        self._commit(state, manifest, tips, payloads, report)

    def _altered(
        self, state: RefreshState, before: str | None, after: str | None, tree: Roots | None
    ) -> list[tables.EventRow]:
        """Rows whose payload bytes changed since the last refresh and no longer
        match their envelope, remade without a body (the old text kept aside
        in ``_old_text`` so the full text and vectors drop it)."""
        if not before or before == after:
            return []
        try:
            old_tree = self.ledger.payload_roots(before)
            changed = set(self.ledger.changed_payloads(old_tree, tree)) if old_tree else set()
        except GitmemError:  # the old snapshot was pruned: nothing to compare with
            return []
        rows: list[tables.EventRow] = []
        for row in state.unredacted_rows(changed):
            envelope = json.loads(row["envelope"])
            body, _ = self.ledger.checked_body(tree, envelope)
            if body is None and not row["missing"]:
                fresh = event_row(envelope, None, row["ref"], row["commit"])
                fresh["_old_text"], fresh["was_missing"] = row["text"], False
                rows.append(fresh)
        return rows

    def _added(self, before: str | None, after: str | None, tree: Roots | None) -> dict[str, str]:
        """The payloads store ``after`` (read: ``tree``) gained since the
        indexed store ``before``: event id -> blob. git's comparison of the
        two, which the check for altered payloads makes anyway (and
        remembers), names the new events' payloads, so their bodies are read
        by blob instead of by path (a lookup parses its fan-out directory,
        ~1 ms at a million events, the first time: ~0.1 s of a 1.25 s
        refresh of 100 new events there)."""
        if not before or before == after or tree is None:
            return {}
        try:
            old_tree = self.ledger.payload_roots(before)
            if old_tree is None:
                return {}
            differences = self.ledger.payload_differences(old_tree, tree)
        except GitmemError:  # the old snapshot was pruned: bodies are looked up
            return {}
        return {
            eid: new for eid, (old, new) in differences.items() if old is None and new is not None
        }

    def _body(
        self,
        tree: Roots | None,
        envelope: dict[str, Any],
        listing: PayloadListing | None,
        added: Mapping[str, str] | None = None,
    ) -> tuple[dict[str, Any] | None, str | None]:
        """An event's checked body, by its blob when ``listing`` or ``added``
        knows it."""
        blob = added.get(envelope["id"]) if added else None
        if blob is not None:
            return self.ledger.checked_body(tree, envelope, blob, known=True)
        if listing is not None:
            found, blob = listing.blob(envelope["id"])
            if found != UNKNOWN:
                return self.ledger.checked_body(tree, envelope, blob, known=True)
        return self.ledger.checked_body(tree, envelope)

    def _envelopes(self, commit: str, ref: str) -> Iterator[tuple[dict[str, Any], str, str]]:
        from gitmem.storage.eventchain import check_format

        info = self.backend.read_commit(commit)
        check_format(info.message, f"memory commit {commit} on {ref}")
        # The chain an event was written to, from its commit's subject ("… on
        # <branch>"): the same however the index was built (walk order would
        # credit an inherited event to whichever chain was walked first).
        subject = info.message.split("\n", 1)[0]
        _, sep, where = subject.rpartition(" on ")
        if sep:
            ref = layout.DETACHED_REF if where == "detached HEAD" else layout.branch_ref(where)
        for _blob, envelope in self.ledger.commit_envelopes(commit, info):
            if isinstance(envelope, dict) and isinstance(envelope.get("id"), str):
                yield envelope, ref, commit

    # -- vectors ---------------------------------------------------------------------
    def _vectors(
        self,
        state: RefreshState,
        manifest: Manifest,
        report: RefreshReport,
        *,
        new_texts: NewTexts,
        redacted: list[tables.EventRow] | tuple[()] = (),
    ) -> int:
        """Bring the vectors in step; returns how many vectors were removed
        (their files changed, so the manifest must vouch for them again)."""
        from gitmem.index.embedding import VectorSync, embed_budget

        budget: float | None = None
        if not self.embed_all:
            try:
                budget = embed_budget(self.mem.config)
            except GitmemError as exc:  # a bad setting: the default, and say so
                report.warnings.append(str(exc))
                budget = embed_budget({})
        sync = VectorSync(
            self.mem, self.root, state, manifest, report, self.progress, budget=budget
        )
        sync.run(new_texts, list(redacted), enabled=self.embed, reconcile=self.embed_all)
        return sync.removed

    def _vouch(self, state: RefreshState, manifest: Manifest) -> dict[str, str]:
        """Checksum the generation's files as they are now (only files new or
        rewritten since their last checksum are read) and record them in
        ``written.json``: should this process die before writing the manifest,
        the next refresh knows these files are its own work, not damage."""
        names = generation_files(state.directory, manifest.fulltext, state.segments)
        return generations.write_written(state.directory, names, order=state.segments)

    def _commit(
        self,
        state: RefreshState,
        manifest: Manifest,
        tips: dict[str, str],
        payloads: str | None,
        report: RefreshReport,
    ) -> None:
        state.write_tables()
        # Every file is final now: the manifest vouches for their checksums.
        manifest.files = self._vouch(state, manifest)
        manifest.segments = list(state.segments)
        manifest.tips = dict(tips)
        manifest.payloads = payloads
        manifest.events = state.count()
        report.events = manifest.events
        try:
            manifest.trunk = self.mem.trunk
        except Exception:  # a trunk we cannot resolve only affects trunk-following
            manifest.trunk = None
        write_manifest(self.root, manifest)
        state.remove_stale_fulltext(manifest.fulltext)
        remove_stale(state.directory, manifest.segments)
        if report.redacted:
            # Text just redacted may survive elsewhere: in a generation left
            # by a build that was killed, or a temporary file of a killed write.
            generations.remove_old(self.root, keep={manifest.generation})
            generations.remove_temporary(state.directory)


def _docs(batches: Iterator[list[tables.TextRow]]) -> Iterator[TextDoc]:
    from gitmem.index.fulltext import TextDoc

    for rows in batches:
        for row in rows:
            yield TextDoc(row["id"], row["key64"], row["text"])
