"""Setting up and looking after memory: init, redact, gc, verify, export, import, flush."""

from __future__ import annotations

import errno
import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from cyclopts import Parameter

from gitmem.cli.record import read_file
from gitmem.cli.render import sid, sync_lines
from gitmem.cli.root import (
    DEFAULT_COMMON,
    DEFAULT_WHO,
    Common,
    Output,
    WhoOptions,
    app,
    check_branch,
)
from gitmem.errors import ExitCode, UsageError
from gitmem.memory.describe import plural

if TYPE_CHECKING:
    from gitmem.memory.bundle import ImportResult

# Memory commits live under refs/edda/ and refs/edda-remotes/, which
# `git log --all` (and gitk --all) walk too. The exclusion must come before
# --all, and the glob covers both roots.
LOG_HINT = (
    "hint: git log --all shows memory commits too; git log --exclude='refs/edda*' --all hides them"
)


@app.command
def init(
    *,
    uninstall: bool = False,
    no_hooks: Annotated[bool, Parameter(negative="")] = False,
    pre_push: bool = False,
    no_fetch: Annotated[bool, Parameter(negative="")] = False,
    bare_ok: bool = False,
    hooks_path_ok: bool = False,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Set up gitmem here (idempotent): state, git hooks, and a first pull when
    the remote has memory and this clone has none.

    Parameters
    ----------
    uninstall
        Remove gitmem's git hooks (restoring any they chained); memory stays.
    no_hooks
        Skip the git hooks.
    pre_push
        Also install a pre-push hook that pushes memory with the code.
    no_fetch
        Skip the first pull.
    bare_ok
        Set gitmem up in a bare repository (recorded as edda.bareOk).
    hooks_path_ok
        Install the hooks even when core.hooksPath points into the work tree
        (husky's .husky), where they change files the project shares.
    """
    from gitmem.app import admin

    if uninstall:
        removed = admin.uninstall(common.repo)
        restored = f"; restored {', '.join(removed.restored)}" if removed.restored else ""
        return Output(
            removed.to_json(),
            f"removed gitmem hooks from {removed.hooks_dir}: {', '.join(removed.removed) or 'none'}{restored}",
        )
    report = admin.init(
        common.repo,
        hooks=not no_hooks,
        pre_push=pre_push,
        bootstrap=not no_fetch,
        bare_ok=bare_ok,
        hooks_path_ok=hooks_path_ok,
    )
    lines = [
        f"gitmem ready in {report.repository} (memory of branch {report.branch or 'detached HEAD'} at {report.memory_ref})"
    ]
    hooks = report.hooks
    if hooks:
        done = hooks.installed + hooks.updated + hooks.unchanged + hooks.chained
        lines.append(f"git hooks in {hooks.hooks_dir}: {', '.join(done)}")
        if hooks.chained:
            lines.append(
                f"  chained existing {'hook' if len(hooks.chained) == 1 else 'hooks'},"
                f" which still run first: {', '.join(hooks.chained)}"
            )
        for hook, why in hooks.skipped.items():
            lines.append(f"  skipped {hook}: {why}")
    boot = report.bootstrap
    if boot and boot.pulled and boot.report is not None:
        lines.append(f"fetched memory from {boot.remote}:")
        lines += ["  " + line for line in sync_lines(boot.report.to_json())]
    elif boot and boot.error:
        lines.append(f"could not fetch memory from {boot.remote}: {boot.error}")
    lines.append(LOG_HINT)
    return Output(report.to_json(), "\n".join(lines))


@app.command
def redact(
    id: str,
    *,
    reason: str,
    purge: bool = False,
    who: WhoOptions = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Remove an event's payload (its envelope stays); --purge also destroys the local bytes.

    Parameters
    ----------
    id
        The event's id or unique prefix.
    reason
        Why (recorded with the redaction; must not repeat the secret).
    purge
        Also destroy the bytes in the local object store now (else: git edda gc).
    """
    from gitmem.app import admin

    done = admin.redact(common.repo, id, reason=reason, purge=purge, who=who.who())
    data: dict[str, Any] = {"redaction": done.redaction.id, "target": done.target}
    text = f"redacted {sid(done.target)} (redaction {sid(done.redaction.id)})"
    if done.purge is not None:
        data["purge"] = done.purge.to_json()
        text += f"; purged {plural(done.purge.destroyed, 'object')} from the local store"
    else:
        text += "; run 'git edda gc' to destroy the bytes in the local object store"
    text += _index_note(done.index_redacted, data)
    return Output(data, text + ". Rotate any leaked secret: remotes may still hold it.")


def _index_note(removed: int | None, data: dict[str, Any]) -> str:
    if removed is None:
        return ""
    data["index_redacted"] = removed
    return f"; removed {removed} from the search index" if removed else ""


@app.command
def gc(*, common: Common = DEFAULT_COMMON) -> Output:
    """Destroy redacted payload bytes in the local object store and repack
    (and remove redacted text from the search index)."""
    from gitmem.app import admin

    done = admin.gc(common.repo)
    result: dict[str, Any] = done.purge.to_json()
    index = _index_note(done.index_redacted, result)
    return Output(
        result,
        f"destroyed {plural(result['destroyed'], 'redacted object')};"
        f" {result['still_referenced']} still used elsewhere{index}",
    )


@app.command
def verify(*, incremental: bool = False, common: Common = DEFAULT_COMMON) -> Output:
    """Re-derive every digest and link; exit 4 when anything is wrong.

    Parameters
    ----------
    incremental
        Check only the commits and payloads new since the last verification
        that found nothing wrong (everything when that cannot be sound).
    """
    from gitmem.app import admin

    report = admin.verify(common.repo, incremental=incremental)
    new = "new " if report.mode == "incremental" else ""
    lines = [
        f"checked {plural(report.refs, 'ref')}, {report.commits} {new}commit"
        f"{'' if report.commits == 1 else 's'}, {plural(report.events, new + 'event')},"
        f" {plural(report.payloads, 'payload')}, {report.redacted} redacted"
        + (" (incremental: since the last clean verification)" if new else "")
    ]
    if report.fallback:
        lines.append(f"checked everything: {report.fallback}")
    lines += [f"problem: {p}" for p in report.problems]
    lines += [f"warning: {w}" for w in report.warnings]
    lines.append("ok" if report.ok else f"{plural(len(report.problems), 'problem')} found")
    return Output(
        report.to_json(), "\n".join(lines), ExitCode.OK if report.ok else ExitCode.VERIFY_FAILED
    )


@app.command(name="export")
def export_(
    *,
    output: Path | None = None,
    format: Literal["json", "parquet"] = "json",
    branch: str | None = None,
    common: Common = DEFAULT_COMMON,
) -> Output | None:
    """Export memory (all branches unless --branch) as a JSON bundle or Parquet.

    Parameters
    ----------
    output
        The file to write. Without it a JSON bundle goes to standard output,
        alone (with --json too: the bundle is the JSON).
    format
        json (a bundle 'git edda import' reads) or parquet (for analysis; its
        columns are in formats/export-parquet.v1.json).
    branch
        Only this branch's memory.
    """
    from gitmem.app import admin

    check_branch("--branch", branch)
    if output is not None:
        _check_output(output)
        with _writing(output):
            done = admin.export(common.repo, format=format, branch=branch, output=output)
        return Output(
            {"events": done.events, "output": str(output)},
            f"wrote {plural(done.events, 'event')} to {output}",
        )
    sink = _Stdout()
    try:
        admin.export(common.repo, format=format, branch=branch, stream=sink)
        sink.flush()
    except _ReaderGone:
        # The reader stopped early (| head): quiet and non-zero, as git is.
        _silence_stdout()
        return Output(None, "", ExitCode.ERROR)
    # Standard output holds the bundle and nothing else, so that it stays
    # valid JSON (a summary after it, as --json would print, breaks it).
    return Output(None)


class _ReaderGone(Exception):
    """Standard output's reader closed the pipe."""


class _Stdout:
    """Standard output for the bundle as it is written: a closed pipe
    raises :class:`_ReaderGone`, any other failure a usage error."""

    def write(self, data: bytes) -> int:
        out = sys.stdout.buffer
        view = memoryview(data)
        try:
            # A write into a pipe closed midway can return a short count
            # instead of raising: the next write raises.
            while view:
                written = out.write(view)
                if not written:
                    raise OSError(errno.EIO, "standard output accepted nothing")
                view = view[written:]
        except BrokenPipeError:
            raise _ReaderGone from None
        except OSError as exc:
            raise _unwritable(exc) from None
        return len(data)

    def flush(self) -> None:
        try:
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            raise _ReaderGone from None
        except OSError as exc:
            raise _unwritable(exc) from None


def _unwritable(exc: OSError) -> UsageError:
    reason = exc.strerror or str(exc)
    return UsageError(
        f"cannot write the bundle to standard output: {' '.join(reason.split())}",
        "write it to a file with --output FILE",
    )


def _silence_stdout() -> None:
    """Point standard output at /dev/null (what is still buffered goes there),
    so the output written after a closed pipe raises nothing."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # not a real file (in-process runs): nothing to do
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


@app.command(name="import")
def import_(
    file: Annotated[Path, Parameter(allow_leading_hyphen=True)],
    *,
    on_conflict: Literal["skip", "overwrite", "error"] = "skip",
    dry_run: bool = False,
    onto: str | None = None,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Import a bundle written by export ('-' reads standard input).

    Parameters
    ----------
    file
        The bundle ('-': standard input).
    on_conflict
        When an event is already here with a different payload: keep ours (skip),
        restore the bundle's (overwrite), or stop (error).
    dry_run
        Say what would be imported and redacted; write nothing.
    onto
        Also merge the memory of the bundle's branches into this branch's
        (events keep the branch they were recorded on: a bundle from main
        into a repository on master needs --onto master to show there).
    """
    from gitmem.app import admin

    check_branch("--onto", onto)
    stdin = str(file) == "-"
    data = sys.stdin.buffer.read() if stdin else read_file(file)
    result = admin.import_(
        common.repo,
        data,
        on_conflict=on_conflict,
        dry_run=dry_run,
        onto=onto,
        name="standard input" if stdin else str(file),
    )
    return Output(result.to_json(), "\n".join(_import_lines(result, str(file))))


def _import_lines(result: ImportResult, file: str) -> list[str]:
    dry = result.dry_run
    lines = [
        f"{'would redact' if dry else 'redacted'} {sid(eid)} (the bundle carries its redaction)"
        for eid in result.redacts
    ]
    lines.append(
        f"{'would import' if dry else 'imported'} {plural(result.imported, 'event')}; "
        f"{result.skipped} skipped, {result.overwritten} restored, "
        f"{plural(result.redactions_applied, 'redaction')} {'to apply' if dry else 'applied'}"
    )
    onto = result.onto
    if onto is not None:
        sources = [b for b in sorted(result.branches) if b != onto]
        if dry:
            lines += [f"would merge the memory of {b} into {onto}" for b in sources]
        lines += [
            f"memory of {m.source} into {m.into}: {m.outcome}"
            + (f", +{plural(m.events, 'event')}" if m.events else "")
            for m in result.merged
        ]
    total = sum(result.branches.values()) + result.detached
    if total and not result.visible:
        lines.append(_not_here_hint(result, file))
    return lines


def _not_here_hint(result: ImportResult, file: str) -> str:
    """Where the bundle's events went, when the checked-out branch's memory
    shows none of them (a bundle from main in a repository on master)."""
    names = sorted(result.branches)
    where = [f"branch {', '.join(names)}"] if names else []
    if result.detached:
        where.append("the detached-HEAD chain")
    here = result.branch
    shown = f"{here}'s memory" if here is not None else "the memory of this detached HEAD"
    text = (
        f"note: {shown} shows none of the bundle's events (log, context and search"
        f" here will not find them): they are in the memory of {' and '.join(where)}"
    )
    if names:
        text += f". See them with 'git edda log --branch {names[0]}'"
        if here is not None:
            text += (
                f", or add them to {here}'s memory with"
                f" 'git edda import {shlex.quote(file)} --onto {here}'"
            )
    return text + "."


def _check_output(output: Path) -> None:
    """Refuse, before any work, an output path that cannot be a file."""
    if output.is_dir():
        raise UsageError(f"--output {output} is a directory", "name a file to write")
    parent = output.parent
    if not parent.is_dir():
        raise UsageError(
            f"--output {output}: the directory {parent} does not exist",
            "create it first, or name a file in an existing directory",
        )


@contextmanager
def _writing(output: Path) -> Iterator[None]:
    """Turn a failure to write the file the user named (a full disk, no
    permission, a path that is not a file) into a usage error; a file this
    command created and could not finish is removed."""
    existed = os.path.lexists(output)
    try:
        yield
    except OSError as exc:
        if not existed and output.is_file():
            with suppress(OSError):
                output.unlink()
        reason = exc.strerror or str(exc)
        raise UsageError(
            f"cannot write {output}: {' '.join(reason.split())}",
            "check that the directory exists and is writable, that the path is not a"
            " directory, and that the disk has room",
        ) from None


@app.command
def flush(*, common: Common = DEFAULT_COMMON) -> Output:
    """Commit events waiting in the capture spool."""
    from gitmem.app import admin

    result = admin.flush(common.repo)
    text = f"flushed {plural(result.events, 'event')} from {plural(result.files, 'spool file')}"
    if result.quarantined:
        kept = plural(len(result.quarantined), "unreadable file")
        text += f"; {kept} kept in {Path(result.quarantined[0]).parent}"
    return Output(result.__dict__, text)
