"""Setting up and looking after memory: init, redact, gc, verify, export, import, flush."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gitmem.app.record import NOBODY, Who
from gitmem.app.session import Repo, open_memory, open_writer
from gitmem.errors import GitmemError, UsageError
from gitmem.githooks.install import HookReport
from gitmem.memory.api import Memory
from gitmem.memory.bundle import ImportResult, Sink
from gitmem.memory.event import Event
from gitmem.memory.purge import PurgeReport
from gitmem.memory.report import Report
from gitmem.records import layout
from gitmem.storage.spoolflush import FlushResult
from gitmem.sync.protocol import SyncReport


@dataclass(frozen=True)
class Bootstrap:
    """The first pull ``init`` tried: from ``remote``, done or not (and why)."""

    remote: str
    pulled: bool
    report: SyncReport | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"remote": self.remote, "pulled": self.pulled}
        if self.report is not None:
            out["report"] = self.report.to_json()
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class InitReport:
    """What ``init`` set up."""

    repository: str
    state_dir: str
    branch: str | None
    memory_ref: str
    backend: str
    hooks: HookReport | None
    bootstrap: Bootstrap | None

    def to_json(self) -> dict[str, Any]:
        return {
            "repository": self.repository,
            "state_dir": self.state_dir,
            "branch": self.branch,
            "memory_ref": self.memory_ref,
            "backend": self.backend,
            "hooks": self.hooks.to_json() if self.hooks else None,
            "bootstrap": self.bootstrap.to_json() if self.bootstrap else None,
        }


def init(
    repo: Repo = None,
    *,
    hooks: bool = True,
    pre_push: bool = False,
    bootstrap: bool = True,
    bare_ok: bool = False,
    hooks_path_ok: bool = False,
) -> InitReport:
    """Set gitmem up (idempotent): state dir, git hooks, and when this clone
    has no memory but its remote does, a first pull.

    Refuses (before anything is written) a bare repository unless ``bare_ok``
    (then remembered as ``edda.bareOk``), and hooks in a ``core.hooksPath``
    inside the work tree unless ``hooks_path_ok``."""
    from gitmem.githooks.install import check_hooks_dir, install

    with open_memory(repo) as mem:
        if mem.location.is_bare:
            _allow_bare(mem, bare_ok)
        if hooks and not hooks_path_ok:
            check_hooks_dir(mem.location)
        mem.location.state_dir.mkdir(parents=True, exist_ok=True)
        mem.flush()
        report = (
            install(mem.location, pre_push=pre_push, shared_ok=hooks_path_ok) if hooks else None
        )
        first = _bootstrap(mem) if bootstrap and not mem.ledger.memory_refs() else None
        return InitReport(
            repository=str(mem.location.workdir or mem.location.git_dir),
            state_dir=str(mem.location.state_dir),
            branch=mem.branch,
            memory_ref=layout.branch_ref(mem.branch),
            backend=mem.backend.name,
            hooks=report,
            bootstrap=first,
        )


def _allow_bare(mem: Memory, bare_ok: bool) -> None:
    """Refuse to set up a bare repository unless ``bare_ok``; then remember
    the choice (``edda.bareOk``) so that writing commands accept it."""
    from gitmem.storage.gitconfig import BARE_OK_KEY, get_bool
    from gitmem.storage.locate import run_git

    if get_bool(mem.config, BARE_OK_KEY, False):
        return
    if not bare_ok:
        raise UsageError(
            f"{mem.location.git_dir} is a bare repository: nobody works in it, so no"
            " hook would ever record anything and memory written here follows no checkout",
            "set gitmem up in a clone with a work tree; if memory belongs here, run"
            " 'git edda init --bare-ok'",
        )
    run_git(["config", BARE_OK_KEY, "true"], mem.location.cwd)
    mem.config[BARE_OK_KEY.lower()] = ["true"]


def _bootstrap(mem: Memory) -> Bootstrap | None:
    """Pull from the default remote when it has memory and we have none."""
    from gitmem.sync import transport
    from gitmem.sync.protocol import sync

    try:
        remote = transport.resolve_remote(mem.location, mem.config, None)
    except UsageError:
        return None  # no remote: nothing to bootstrap from
    try:
        if not transport.remote_has_memory(mem.location, remote, prompt=False):
            return Bootstrap(remote.name, pulled=False)
        report = sync(mem, remote.name, push=False)
    except GitmemError as exc:
        return Bootstrap(remote.name, pulled=False, error=str(exc))
    return Bootstrap(remote.name, pulled=True, report=report)


def uninstall(repo: Repo = None) -> HookReport:
    """Remove gitmem's git hooks, restoring the ones they chained. Memory stays."""
    from gitmem.githooks.install import uninstall as remove_hooks

    with open_memory(repo) as mem:
        return remove_hooks(mem.location)


@dataclass(frozen=True)
class Redacted:
    """A redaction recorded, with what was destroyed and removed from the index."""

    redaction: Event
    target: str
    purge: PurgeReport | None  # with purge: what gc destroyed
    index_redacted: int | None  # events removed from the search index (None: no index)


def redact(repo: Repo, id: str, *, reason: str, purge: bool = False, who: Who = NOBODY) -> Redacted:
    """Remove an event's payload (its envelope stays); with ``purge`` also
    destroy the bytes in the local object store. The search index drops its
    copy before this returns."""
    with open_writer(repo) as mem:
        event = mem.redact(id, reason, **who.scope(mem))
        purged = mem.purge() if purge else None
        removed = refresh_index(mem)
    return Redacted(event, str(event.field("target")), purged, removed)


@dataclass(frozen=True)
class Collected:
    """What ``gc`` destroyed, and the events it removed from the search index."""

    purge: PurgeReport
    index_redacted: int | None  # None: there is no index


def gc(repo: Repo = None) -> Collected:
    """Destroy redacted payload bytes in the local object store and repack
    (and remove redacted text from the search index)."""
    with open_writer(repo) as mem:
        result = mem.purge()
        return Collected(result, refresh_index(mem))


def refresh_index(mem: Memory) -> int | None:
    """Refresh the search index now (when there is one), so that its copy of
    redacted text is gone when ``redact`` or ``gc`` returns, not at the next
    query; returns the events it removed (None: there is no index)."""
    from gitmem.index.refresh import refresh_existing

    try:
        report = refresh_existing(mem)
    except GitmemError as exc:
        exc.message = f"the search index may still hold redacted text: {exc.message}"
        exc.hint = "run 'git edda index' to remove it"
        raise
    return None if report is None else report.redacted


def verify(repo: Repo = None, *, incremental: bool = False) -> Report:
    """Re-derive every digest and link of memory (with ``incremental``, only
    those new since the last clean verification)."""
    with open_memory(repo) as mem:
        report: Report = mem.verify(incremental=incremental)
        return report


def flush(repo: Repo = None) -> FlushResult:
    """Commit events waiting in the capture spool (in a bare repository too:
    acknowledged events must land, and every read flushes them anyway)."""
    with open_memory(repo) as mem:
        return mem.flush()


@dataclass(frozen=True)
class Exported:
    """An export: how many events, and the file written (None: the stream
    given, or else ``data``, holds the bundle)."""

    events: int
    output: Path | None
    data: bytes | None = None


def export(
    repo: Repo,
    *,
    format: Literal["json", "parquet"] = "json",
    branch: str | None = None,
    output: Path | None = None,
    stream: Sink | None = None,
) -> Exported:
    """Export memory (every branch unless ``branch``) as a JSON bundle or Parquet.

    The events are read and written one at a time (memory does not grow with
    the store): to the file ``output``, else a JSON bundle to ``stream``, else
    into ``data``. Parquet needs ``output``. Whatever reading the chains
    raises is raised before anything is written.
    """
    from gitmem.memory.bundle import write_bundle
    from gitmem.memory.exporting import export_events
    from gitmem.memory.parquet import write_parquet

    if format == "parquet" and output is None:
        raise UsageError("--format parquet needs --output FILE")
    with open_memory(repo) as mem:
        events = export_events(mem, branch)
        if output is not None:
            # An open file, not the path, for pyarrow too: given a path, it
            # deletes it when the write fails, and the path is the user's.
            with open(output, "wb") as handle:
                write = write_parquet if format == "parquet" else write_bundle
                return Exported(write(events, handle), output)
        if stream is not None:
            return Exported(write_bundle(events, stream), None)
        buffer = io.BytesIO()
        count = write_bundle(events, buffer)
    return Exported(count, None, buffer.getvalue())


def import_(
    repo: Repo,
    data: bytes,
    *,
    on_conflict: Literal["skip", "overwrite", "error"] = "skip",
    dry_run: bool = False,
    onto: str | None = None,
    name: str = "the input",
) -> ImportResult:
    """Import a bundle written by ``export``. Events keep the branch they were
    recorded on; ``onto`` then merges the memory of the bundle's branches into
    that branch's (a bundle from ``main`` into a repository whose trunk is
    ``master``). ``name`` names the input in error messages."""
    from gitmem.memory.bundle import import_bundle

    with open_writer(repo) as mem:
        return import_bundle(mem, data, strategy=on_conflict, dry_run=dry_run, onto=onto, name=name)
