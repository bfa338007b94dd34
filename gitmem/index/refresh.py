"""Keeping the sidecar indexes current.

The manifest records the memory tips the index reflects. A refresh compares
them with the current tips:

* equal: nothing to do (the check reads refs with the standard library);
* every indexed tip an ancestor of its current tip: walk only the new commits
  and add their events (``incremental``);
* anything else (a chain rewound, a ref deleted, a missing, corrupt or
  foreign-version sidecar, ``--rebuild``): build a new generation directory
  from scratch and switch the manifest to it (``full``).

Writes go in an order that makes a crash at any point harmless: full text,
vectors, tables, then the manifest (renamed into place). Work the manifest
does not yet record is redone next time and deduplicated by event id.
One process builds at a time (an ``flock`` on ``index/lock``); readers never
wait for a build unless there is no previous version to read.

A redaction removes its target's text from every index. Tantivy and usearch
only mark deleted entries and keep their bytes until a merge, so the full-text
and vector indexes are rebuilt without the target (the bytes are gone when
this returns), and the embedding cache drops the target's text digest.

The manifest records a checksum of every file of its generation and one of
itself (:mod:`gitmem.index.integrity`). A file that does not match is damage:
the tables or the full text damaged mean a full build, the vector index
damaged means only that index is rebuilt (from the embedding cache).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, field
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.errors import ConflictError, GitmemError, IndexDamagedError
from gitmem.index import compute as pc
from gitmem.index import integrity
from gitmem.index import table as tables
from gitmem.memory.describe import event_text, paths_of
from gitmem.records import layout
from gitmem.storage.locate import RepoLocation

if TYPE_CHECKING:
    import pyarrow as pa

    from gitmem.index.compute import Column
    from gitmem.index.fulltext import FullText, TextDoc
    from gitmem.memory.api import Memory

# 2: full-text documents carry key64; 3: as a fast field; 4: line column;
# 5: the manifest holds checksums of every file and of itself
INDEX_VERSION = 5
INDEX_DIR = "index"
MANIFEST = "manifest.json"
# in a generation: the checksums of its files as the last refresh wrote them
# (the manifest's, unless that refresh died before writing the manifest)
WRITTEN = "written.json"
LOCK_TIMEOUT = 600.0

Progress = Callable[[str, int, int], None]  # (stage, done, total)


def index_root(location: RepoLocation) -> Path:
    return location.state_dir / INDEX_DIR


@dataclass
class Manifest:
    """What the sidecar files reflect; written last, atomically."""

    version: int
    generation: str  # the directory (under index/) holding this version's files
    fulltext: str  # the full-text directory inside the generation
    tips: dict[str, str]  # chain ref -> tip
    payloads: str | None  # the payload store's tip
    events: int
    trunk: str | None  # the trunk when this was built (readers need it without libgit2)
    model: str | None = None  # the embedder whose vectors vectors.usearch holds
    dim: int | None = None
    unembedded: int = 0  # rows with text but no vector yet (embedding failed or disabled)
    embed_error: str | None = None  # why the last embedding failed; queries then do not retry
    # "<size>:<crc32>" of every file of the generation, by path inside it
    files: dict[str, str] = field(default_factory=dict)
    checksum: str = ""  # CRC-32 of the other fields (see _manifest_checksum)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


_MANIFEST_FIELDS = frozenset(f.name for f in dataclass_fields(Manifest))
_MANIFEST_REQUIRED = frozenset(
    f.name
    for f in dataclass_fields(Manifest)
    if f.default is MISSING and f.default_factory is MISSING
)


def _manifest_checksum(fields: Mapping[str, object]) -> str:
    """CRC-32 of a manifest's fields other than ``checksum``, as canonical JSON:
    a flipped bit in a tip or a count is caught like one in a table."""
    rest = {k: v for k, v in fields.items() if k != "checksum"}
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return f"{zlib.crc32(text.encode()):08x}"


def _plain_name(name: object) -> bool:
    """A file or directory name inside the index, never a path out of it."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name


def read_manifest(root: Path) -> Manifest | None:
    """The manifest, or None when missing, unreadable, damaged (its checksum
    differs) or of another version."""
    # Only reading and parsing may fail here: an error from our own code
    # must not pass for a missing manifest (that would rebuild the index).
    try:
        raw = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable, not UTF-8, not JSON
        return None
    if not isinstance(raw, dict) or raw.get("version") != INDEX_VERSION:
        return None
    if raw.get("checksum") != _manifest_checksum(raw):
        return None
    if not _MANIFEST_REQUIRED <= raw.keys() <= _MANIFEST_FIELDS:
        return None
    manifest = Manifest(**raw)
    if not isinstance(manifest.files, dict) or not all(
        isinstance(v, str) for v in manifest.files.values()
    ):
        return None
    names = [manifest.generation, manifest.fulltext]
    names += [part for path in manifest.files for part in str(path).split("/", 1)]
    if not all(_plain_name(name) for name in names):
        return None
    if not (root / manifest.generation).is_dir():
        return None
    return manifest


def _write_manifest(root: Path, manifest: Manifest) -> None:
    from gitmem.storage.files import write_atomic

    manifest.checksum = _manifest_checksum(manifest.to_json())
    data = json.dumps(manifest.to_json(), sort_keys=True, indent=1).encode()
    path = root / MANIFEST
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)  # damage: a rename cannot replace a directory
    write_atomic(str(path), data, fsync=False)


def check_generation(
    directory: Path, manifest: Manifest, *, deep: bool = False, vectors: bool = True
) -> dict[str, integrity.Identity]:
    """Check the generation's files against the manifest's checksums (the
    vector index too, with ``vectors``); IndexDamagedError when one differs.
    Returns the identities checked (see :func:`integrity.unchanged`)."""
    from gitmem.index.vectors import VECTORS_FILE

    required = (tables.EVENTS_FILE, tables.MEMBERS_FILE, f"{manifest.fulltext}/meta.json")
    for name in required:
        if name not in manifest.files:
            raise IndexDamagedError(f"the manifest has no checksum for {name}")
    files = {k: v for k, v in manifest.files.items() if vectors or k != VECTORS_FILE}
    return integrity.verify(directory, files, deep=deep)


def generation_files(directory: Path, fulltext: str) -> list[str]:
    """The files of a generation a manifest vouches for: both tables (once
    written), the full-text directory's files (not Tantivy's lock files, which
    readers create) and the vector index when there is one."""
    from gitmem.index.vectors import VECTORS_FILE

    names = [n for n in (tables.EVENTS_FILE, tables.MEMBERS_FILE) if (directory / n).is_file()]
    with os.scandir(directory / fulltext) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name.startswith(".tantivy-") and entry.name.endswith(".lock"):
                continue
            if entry.is_file(follow_symlinks=False):
                names.append(f"{fulltext}/{entry.name}")
    if (directory / VECTORS_FILE).is_file():
        names.append(VECTORS_FILE)
    return names


def _parts(files: dict[str, str]) -> dict[str, dict[str, str]]:
    """Checksums grouped by what must match as a whole: each table, the
    vector index, and a full-text directory (its meta.json names its segments)."""
    parts: dict[str, dict[str, str]] = {}
    for name, value in files.items():
        parts.setdefault(name.split("/", 1)[0], {})[name] = value
    return parts


def _read_written(directory: Path) -> dict[str, str]:
    """The checksums the last refresh recorded as it wrote files ({} when
    none, or when the record itself is damaged)."""
    try:
        raw = json.loads((directory / WRITTEN).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable, not UTF-8, not JSON
        return {}
    if not isinstance(raw, dict) or raw.get("checksum") != _manifest_checksum(raw):
        return {}
    files = raw.get("files")
    if not isinstance(files, dict):
        return {}
    return {str(k): str(v) for k, v in files.items()}


@contextmanager
def builder_lock(root: Path, timeout: float) -> Iterator[None]:
    """One index builder at a time (ConflictError after ``timeout`` seconds)."""
    from gitmem.storage.lock import LOCK_FILE, writer_lock

    lock = root / LOCK_FILE
    if lock.is_dir() and not lock.is_symlink():
        shutil.rmtree(lock, ignore_errors=True)  # damage: nothing can hold a directory
    with writer_lock(root, timeout=timeout, what="index builder lock"):
        yield


@dataclass
class RefreshReport:
    """What a refresh did."""

    mode: str  # "none", "incremental" or "full"
    events: int = 0  # events in the index afterwards
    added: int = 0
    redacted: int = 0
    embedded: int = 0  # texts embedded (cache misses)
    vectors: int = 0  # vectors added to the vector index
    rebuilt: list[str] = field(default_factory=list)  # indexes rebuilt whole
    reason: str = ""  # why a full build happened
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def is_fresh(location: RepoLocation, manifest: Manifest | None, *, vectors: bool = True) -> bool:
    """True when the manifest reflects the current memory tips (stdlib only)
    and, with ``vectors``, every text has a vector or embedding failed last time."""
    from gitmem.index.refs import memory_tips

    if manifest is None:
        return False
    if vectors and manifest.unembedded and manifest.embed_error is None:
        return False
    tips = memory_tips(location)
    payloads = tips.pop(layout.PAYLOAD_REF, None)
    chains = {r: t for r, t in tips.items() if layout.is_chain_ref(r)}
    return chains == manifest.tips and payloads == manifest.payloads


def _index_directory(root: Path) -> None:
    """Create the index directory. Anything else at its path is damage: the
    whole directory is derived data, so it is removed, never reported."""
    if (root.exists() or root.is_symlink()) and not root.is_dir():
        root.unlink()
    root.mkdir(parents=True, exist_ok=True)


def refresh(
    mem: Memory,
    *,
    rebuild: bool = False,
    embed: bool = True,
    progress: Progress | None = None,
    timeout: float = LOCK_TIMEOUT,
    deep: bool = False,
) -> RefreshReport:
    """Bring the indexes up to date with memory (see the module docstring).

    ``deep`` checks every byte of every file against the manifest's checksums,
    not only the files whose stamp is out of date (see :mod:`gitmem.index.integrity`)."""
    started = time.monotonic()
    root = index_root(mem.location)
    _index_directory(root)
    with builder_lock(root, timeout):
        mem.flush()
        builder = _Builder(mem, root, progress, embed)
        report = builder.run(rebuild, deep=deep)
    report.seconds = round(time.monotonic() - started, 3)
    return report


def refresh_existing(mem: Memory) -> RefreshReport | None:
    """Refresh the index now if one was ever built here (None otherwise).

    ``git edda redact`` and ``gc`` call this so that the index's copy of a
    redacted text is gone when they return, not at the next query."""
    root = index_root(mem.location)
    if not (root.exists() or root.is_symlink()):
        return None
    return refresh(mem)


def try_refresh(mem: Memory, *, wait: float, embed: bool = True) -> RefreshReport | None:
    """Refresh unless another process is building and ``wait`` runs out:
    then None, and the caller reads the previous version."""
    try:
        return refresh(mem, embed=embed, timeout=wait)
    except ConflictError:
        return None


class _Builder:
    def __init__(self, mem: Memory, root: Path, progress: Progress | None, embed: bool) -> None:
        self.mem = mem
        self.root = root
        self.progress = progress or (lambda stage, done, total: None)
        self.embed = embed
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
            self._vectors(state, manifest, report, new_texts=[])
            after = (manifest.model, manifest.dim, manifest.unembedded, manifest.embed_error)
            if before != after or report.vectors or state.dropped_vectors:
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
        generation = f"g-{int(time.time())}-{os.urandom(3).hex()}"
        directory = self.root / generation
        directory.mkdir()
        manifest = Manifest(INDEX_VERSION, generation, "fulltext", {}, None, 0, None, None, None, 0)
        state = RefreshState.create(directory, manifest)
        report = RefreshReport("full", reason=reason)
        try:
            self._apply(state, manifest, tips, payloads, report)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        # Readers that opened the previous generation keep their open files.
        self._remove_stale(keep={generation})
        return report

    def _remove_stale(self, keep: set[str]) -> None:
        for entry in self.root.iterdir():
            if entry.is_dir() and entry.name.startswith("g-") and entry.name not in keep:
                shutil.rmtree(entry, ignore_errors=True)

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
        known_ids = state.ids()
        members: list[tables.MemberRow] = []
        to_read: list[tuple[str, str]] = []  # (commit, ref)
        seen_commits: set[str] = set()
        for ref in sorted(tips):
            old = manifest.tips.get(ref)
            if old == tips[ref]:
                continue
            commits = self.backend.commits_between([tips[ref]], [old] if old else [])
            have = state.commits_of(ref)
            members.extend({"ref": ref, "commit": c} for c in commits if c not in have)
            for commit in commits:
                if commit in known_commits or commit in seen_commits:
                    continue
                seen_commits.add(commit)
                to_read.append((commit, ref))
        tree = self.ledger.payload_tree(payloads) if payloads else None
        # Rows are made as each commit is read, never holding every envelope
        # at once (at 100,000 events the envelope dicts alone took ~250 MB).
        new_rows: list[tables.EventRow] = []
        for done, (commit, ref) in enumerate(to_read, 1):
            for envelope, event_ref, _commit in self._envelopes(commit, ref):
                if envelope["id"] in known_ids:
                    continue
                known_ids.add(envelope["id"])
                body, _ = self.ledger.checked_body(tree, envelope)
                new_rows.append(_row(envelope, body, event_ref, commit))
            self.progress("reading memory commits", done, len(to_read))
        # Bodies that were missing may have arrived (a payload store merged by sync).
        revived: list[tables.EventRow] = []
        if payloads != manifest.payloads:
            for row in state.missing_rows():
                envelope = json.loads(row["envelope"])
                body, _ = self.ledger.checked_body(tree, envelope)
                if body is not None:
                    revived.append(_row(envelope, body, row["ref"], row["commit"]))
        # A payload altered behind gitmem's back under an indexed event: its
        # text is no longer vouched for, so the row loses it, as Memory's
        # readers show "payload does not match its envelope".
        altered = self._altered(state, manifest.payloads, payloads, tree)
        # Redactions: every target of a redaction event loses its text everywhere.
        targets = {r["target"] for r in new_rows if r["type"] == "redaction" and r["target"]}
        targets |= state.redaction_targets()
        for row in new_rows:
            if row["id"] in targets:
                _blank(row)
        revived = [r for r in revived if r["id"] not in targets]
        newly_redacted = state.unredacted_rows(targets)
        for row in newly_redacted:
            _blank(row)
        report.added = len(new_rows)
        report.redacted = len(newly_redacted)

        replaced = [*revived, *newly_redacted, *altered]
        state.update_tables(new_rows, replaced, members)
        # The table has its own copy now; what follows needs only the text.
        new_texts = [_text_only(r) for r in new_rows]
        revived_texts = [_text_only(r) for r in revived]
        del new_rows, revived
        lost_text = [r for r in [*newly_redacted, *altered] if not r["was_missing"]]
        texts = [r for r in [*new_texts, *revived_texts] if r["text"]]
        if lost_text or state.fulltext is None:
            if lost_text:
                report.rebuilt.append("fulltext")
            manifest.fulltext = state.rebuild_fulltext(self.progress)
        else:
            state.fulltext.update(_docs(texts))
            self._vouch(state, manifest)  # the full text changed in place
        self._vectors(state, manifest, report, new_texts=texts, redacted=lost_text)
        self._vouch(state, manifest)
        self._commit(state, manifest, tips, payloads, report)

    def _altered(
        self, state: RefreshState, before: str | None, after: str | None, tree: str | None
    ) -> list[tables.EventRow]:
        """Rows whose payload bytes changed since the last refresh and no longer
        match their envelope, remade without a body (the old text kept aside
        in ``_old_text`` so the full text and vectors drop it)."""
        if not before or before == after:
            return []
        try:
            old_tree = self.ledger.payload_tree(before)
            changed = set(self.ledger.changed_payloads(old_tree, tree)) if old_tree else set()
        except GitmemError:  # the old snapshot was pruned: nothing to compare with
            return []
        rows: list[tables.EventRow] = []
        for row in state.unredacted_rows(changed):
            envelope = json.loads(row["envelope"])
            body, _ = self.ledger.checked_body(tree, envelope)
            if body is None and not row["missing"]:
                fresh = _row(envelope, None, row["ref"], row["commit"])
                fresh["_old_text"], fresh["was_missing"] = row["text"], False
                rows.append(fresh)
        return rows

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
        new_texts: list[tables.TextRow],
        redacted: list[tables.EventRow] | tuple[()] = (),
    ) -> None:
        from gitmem.index.embedding import VectorSync

        sync = VectorSync(self.mem, self.root, state, manifest, report, self.progress)
        sync.run(new_texts, list(redacted), enabled=self.embed)

    def _vouch(self, state: RefreshState, manifest: Manifest) -> dict[str, str]:
        """Checksum the generation's files as they are now (only files new or
        rewritten since their last checksum are read) and record them in
        ``written.json``: should this process die before writing the manifest,
        the next refresh knows these files are its own work, not damage."""
        names = generation_files(state.directory, manifest.fulltext)
        files = integrity.describe(state.directory, names)
        record: dict[str, object] = {"files": files}
        record["checksum"] = _manifest_checksum(record)
        from gitmem.storage.files import write_atomic

        write_atomic(str(state.directory / WRITTEN), json.dumps(record).encode(), fsync=False)
        return files

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
        manifest.tips = dict(tips)
        manifest.payloads = payloads
        manifest.events = state.count()
        report.events = manifest.events
        try:
            manifest.trunk = self.mem.trunk
        except Exception:  # a trunk we cannot resolve only affects trunk-following
            manifest.trunk = None
        _write_manifest(self.root, manifest)
        state.remove_stale_fulltext(manifest.fulltext)
        if report.redacted:
            # Text just redacted may survive elsewhere: in a generation left
            # by a build that was killed, or a temporary file of a killed write.
            self._remove_stale(keep={manifest.generation})
            state.remove_temporary()


def _row(
    envelope: dict[str, Any], body: dict[str, Any] | None, ref: str, commit: str
) -> tables.EventRow:
    from gitmem.index.vectors import key64

    event_type = str(envelope.get("type", ""))
    scope = envelope.get("scope")
    scope = scope if isinstance(scope, dict) else {}
    body_ok = isinstance(body, dict)
    b: dict[str, Any] | None = body if body_ok else None
    tags = b.get("tags") if b else None
    target = b.get("target") if b else None
    if event_type == "capsule_close" and b:
        target = b.get("capsule")
    key = b.get("key") if b and event_type == "decision" else None
    return {
        "id": envelope["id"],
        "key64": key64(envelope["id"]),
        "type": event_type,
        "time": int(envelope.get("time", 0)),
        "commit": commit,
        "ref": ref,
        # Validation keeps non-strings out (spec/storage.md "What a valid event
        # is"); memory written before it existed may still hold them, and one
        # such value must not make the whole table unbuildable.
        "session": _text_or_none(scope.get("session")),
        "agent": _text_or_none(scope.get("agent")),
        "user": _text_or_none(scope.get("user")),
        "capsule": _text_or_none(envelope.get("capsule")),
        "key": str(key) if key is not None else None,
        "target": str(target) if isinstance(target, str) else None,
        "paths": paths_of(b),
        "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
        "redacted": False,
        "missing": b is None,
        "was_missing": b is None,
        "text": event_text(event_type, b),
        "line": _decision_line(envelope, b, ref, commit) if event_type == "decision" else None,
        "envelope": json.dumps(envelope, sort_keys=True, ensure_ascii=False),
        "body": json.dumps(b, sort_keys=True, ensure_ascii=False) if b is not None else None,
    }


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _decision_line(
    envelope: dict[str, Any], body: dict[str, Any] | None, ref: str, commit: str
) -> str | None:
    """A decision described as context packs show it (the ``line`` column)."""
    from gitmem.memory.describe import LINE_WIDTH, describe
    from gitmem.memory.event import Event

    if body is None:
        return None
    return describe(Event(envelope, body, ref, commit, False), LINE_WIDTH)


def _text_only(row: tables.EventRow) -> tables.TextRow:
    """What the full text and the vectors need of a row, after the table took it."""
    return {"id": row["id"], "key64": row["key64"], "text": row["text"]}


def _blank(row: tables.EventRow) -> None:
    """Strip everything a redacted event's body said; its envelope stays."""
    row.setdefault("_old_text", row["text"])
    row["redacted"], row["missing"], row["text"] = True, False, ""
    row["line"] = row["body"] = row["key"] = row["target"] = None
    row["paths"], row["tags"] = [], []


def _verify_part(
    directory: Path, manifest: Manifest, part: str, written: dict[str, str], deep: bool
) -> bool:
    """Check one part against the manifest, else against ``written.json``;
    True when only the latter vouched for it. IndexDamagedError when neither does."""
    try:
        described = _parts(manifest.files).get(part)
        if described is None:
            raise IndexDamagedError(f"the manifest has no checksum for {part}")
        integrity.verify(directory, described, deep=deep)
        return False
    except IndexDamagedError:
        recorded = _parts(written).get(part)
        if recorded is None:
            raise
        integrity.verify(directory, recorded, deep=deep)
        return True


def _accept_written(directory: Path, manifest: Manifest, deep: bool) -> set[str]:
    """Check the parts (tables, full text) against the manifest or, failing
    that, ``written.json``; returns those only the latter vouched for."""
    written = _read_written(directory)
    if not written:
        check_generation(directory, manifest, deep=deep, vectors=False)  # raises the damage
    parts = [tables.EVENTS_FILE, tables.MEMBERS_FILE, manifest.fulltext]
    return {p for p in parts if _verify_part(directory, manifest, p, written, deep)}


def _remove(path: Path) -> None:
    """Remove a file, or a directory found where a file belongs."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _docs(rows: list[tables.TextRow]) -> Iterator[TextDoc]:
    from gitmem.index.fulltext import TextDoc

    for row in rows:
        yield TextDoc(row["id"], row["key64"], row["text"])


class RefreshState:
    """The files of one generation, loaded for updating."""

    def __init__(
        self, directory: Path, events: pa.Table, members: pa.Table, fulltext: FullText | None
    ) -> None:
        self.directory = directory
        self.events = events
        self.members = members
        self.fulltext = fulltext
        self._dirty = False
        self.dropped_vectors = ""  # why a damaged vector index was removed on opening

    @classmethod
    def open(cls, directory: Path, manifest: Manifest, *, deep: bool = False) -> RefreshState:
        """The generation's files, checked against the manifest first: damaged
        tables or full text raise IndexDamagedError (the caller builds anew);
        a damaged vector index is removed and rebuilt by the vector sync."""
        from gitmem.index.fulltext import FullText
        from gitmem.index.vectors import VECTORS_FILE

        try:
            check_generation(directory, manifest, deep=deep, vectors=False)
            newer: set[str] = set()
        except IndexDamagedError:
            # A refresh that died before its manifest write leaves files the
            # manifest does not describe; any mix of old and new versions is
            # sound (rows, documents and vectors are deduplicated by event id),
            # so a part matching what that refresh recorded as written is no damage.
            newer = _accept_written(directory, manifest, deep)
        dropped = ""
        vectors = directory / VECTORS_FILE
        if VECTORS_FILE in manifest.files or vectors.exists() or vectors.is_symlink():
            try:
                _verify_part(directory, manifest, VECTORS_FILE, _read_written(directory), deep)
            except IndexDamagedError as exc:
                dropped = str(exc)
                _remove(vectors)
                manifest.model = manifest.dim = None  # nothing vouches for any vector now
        events = tables.read(directory / tables.EVENTS_FILE, tables.event_schema())
        members = tables.read(directory / tables.MEMBERS_FILE, tables.member_schema())
        if tables.EVENTS_FILE not in newer and events.num_rows != manifest.events:
            raise IndexDamagedError(
                f"{tables.EVENTS_FILE} holds {events.num_rows} rows, the manifest says {manifest.events}"
            )
        fulltext = FullText(directory / manifest.fulltext)
        if fulltext.count() > events.num_rows:
            raise IndexDamagedError("full-text index holds more documents than the table")
        state = cls(directory, events, members, fulltext)
        state.dropped_vectors = dropped
        return state

    @classmethod
    def create(cls, directory: Path, manifest: Manifest) -> RefreshState:
        events = tables.from_rows([], tables.event_schema())
        members = tables.from_rows([], tables.member_schema())
        state = cls(directory, events, members, None)
        state._dirty = True
        return state

    # reads
    def count(self) -> int:
        return int(self.events.num_rows)

    def ids(self) -> set[str]:
        return set(self.events.column("id").to_pylist())

    def member_commits(self) -> set[str]:
        return set(self.members.column("commit").to_pylist())

    def commits_of(self, ref: str) -> set[str]:

        mask = pc.equal(self.members.column("ref"), ref)
        return set(pc.filter(self.members, mask).column("commit").to_pylist())

    def _rows(self, mask: Column) -> list[tables.EventRow]:
        rows: list[tables.EventRow] = pc.filter(self.events, mask).to_pylist()
        for row in rows:
            row["was_missing"] = row["missing"]
        return rows

    def missing_rows(self) -> list[tables.EventRow]:
        return self._rows(self.events.column("missing"))

    def redaction_targets(self) -> set[str]:

        rows = pc.filter(self.events, pc.equal(self.events.column("type"), "redaction"))
        return {t for t in rows.column("target").to_pylist() if t}

    def unredacted_rows(self, ids: set[str]) -> list[tables.EventRow]:
        import pyarrow as pa

        if not ids:
            return []
        wanted = pc.is_in(self.events.column("id"), value_set=pa.array(sorted(ids)))
        return self._rows(pc.and_(wanted, pc.invert(self.events.column("redacted"))))

    def text_rows(self) -> Iterator[tuple[str, int, str]]:
        """(id, key64, text) of every row with text."""

        rows = pc.filter(self.events, pc.not_equal(self.events.column("text"), ""))
        ids = rows.column("id").to_pylist()
        keys = rows.column("key64").to_pylist()
        texts = rows.column("text").to_pylist()
        yield from zip(ids, keys, texts, strict=True)

    # writes
    def update_tables(
        self,
        new_rows: list[tables.EventRow],
        replaced: list[tables.EventRow],
        members: list[tables.MemberRow],
    ) -> None:
        import pyarrow as pa

        schema = tables.event_schema()
        events = self.events
        if replaced:
            drop = pc.is_in(events.column("id"), value_set=pa.array([r["id"] for r in replaced]))
            events = pc.filter(events, pc.invert(drop))
        if new_rows or replaced:
            added = tables.from_rows([*new_rows, *replaced], schema)
            events = tables.sort_events(pa.concat_tables([events, added]))
            self.events = events
            self._dirty = True
        if members:
            added_members = tables.from_rows(members, tables.member_schema())
            self.members = pa.concat_tables([self.members, added_members])
            self._dirty = True

    def write_tables(self) -> None:
        if not self._dirty:
            return
        tables.write(self.directory / tables.EVENTS_FILE, self.events.combine_chunks())
        tables.write(self.directory / tables.MEMBERS_FILE, self.members.combine_chunks())
        self._dirty = False

    def rebuild_fulltext(self, progress: Progress) -> str:
        """A new full-text directory holding every row with text; returns its name."""
        from gitmem.index.fulltext import FullText, TextDoc

        name = f"fulltext-{os.urandom(3).hex()}"
        fulltext = FullText(self.directory / name, create=True)
        rows = list(self.text_rows())
        chunk = 20000
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            fulltext.update(TextDoc(i, k, t) for i, k, t in part)
            progress("full-text index", min(start + chunk, len(rows)), len(rows))
        if not rows:
            fulltext.update([])
        self.fulltext = fulltext
        return name

    def remove_temporary(self) -> None:
        """Delete temporary files (``.<name>.<…>.tmp``) left by killed writes."""
        for entry in self.directory.iterdir():
            if entry.name.startswith(".") and entry.name.endswith(".tmp"):
                entry.unlink(missing_ok=True)

    def remove_stale_fulltext(self, keep: str) -> None:
        for entry in self.directory.iterdir():
            if entry.is_dir() and entry.name.startswith("fulltext") and entry.name != keep:
                shutil.rmtree(entry, ignore_errors=True)
