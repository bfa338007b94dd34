"""The one error hierarchy of gitmem, and the only place exit codes are defined.

Every error the library raises on purpose derives from :class:`GitmemError`.
Each carries a one-line ``message`` (what went wrong) and a ``hint`` (what to
do next). The CLI maps an error to its exit code with :func:`exit_code_for`;
nothing else in the package decides exit codes.

This module is imported on the capture hot path: standard library only.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes of ``git edda`` (documented in the README)."""

    OK = 0
    ERROR = 1  # unexpected or generic failure
    USAGE = 2  # bad arguments or bad input data
    NOT_FOUND = 3  # no such event, capsule, ref or repository
    VERIFY_FAILED = 4  # `verify` found problems, or a pull refused invalid memory
    CONFLICT = 5  # import conflict, concurrent update that did not settle
    FORMAT = 6  # memory written by a newer, incompatible gitmem
    DEPENDENCY = 7  # an optional or required dependency is missing
    REMOTE = 8  # a git remote could not be reached, or refused an update


class GitmemError(Exception):
    """Root of every error gitmem raises on purpose."""

    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} (hint: {self.hint})"


class UsageError(GitmemError):
    """Arguments or input data are not acceptable."""

    exit_code = ExitCode.USAGE


class NotARepositoryError(GitmemError):
    """The path is not inside a git repository."""

    exit_code = ExitCode.NOT_FOUND


class NotFoundError(GitmemError):
    """An event, capsule or other named thing does not exist."""

    exit_code = ExitCode.NOT_FOUND


class AmbiguousIdError(UsageError):
    """An id prefix matches more than one event."""


class ConflictError(GitmemError):
    """A compare-and-swap kept failing, or an import met an existing event."""

    exit_code = ExitCode.CONFLICT


class FormatError(GitmemError):
    """Stored data is malformed (a corrupt record, not a bug in the caller)."""

    exit_code = ExitCode.ERROR


class IndexDamagedError(GitmemError):
    """A sidecar index file does not match its manifest or cannot be opened
    (any sidecar: the search index, and next the code graph).

    The indexes are derived data: whoever catches this rebuilds them. Only
    the places that detect damage raise it, so an unrelated bug (a plain
    ``ValueError``) is never mistaken for damage and silently rebuilt over."""

    exit_code = ExitCode.ERROR


class FormatTooNewError(GitmemError):
    """Memory was written in a newer storage format than this gitmem understands."""

    exit_code = ExitCode.FORMAT


class VerifyFailedError(GitmemError):
    """`verify` found at least one problem."""

    exit_code = ExitCode.VERIFY_FAILED


class RejectedError(GitmemError):
    """Memory from a remote failed the checks it must pass before it is merged
    (spec/sync.md, "Incoming checks"); nothing was merged."""

    exit_code = ExitCode.VERIFY_FAILED


class DependencyError(GitmemError):
    """A dependency is missing or unusable."""

    exit_code = ExitCode.DEPENDENCY


class GitError(GitmemError):
    """A git operation failed (the git CLI or libgit2 reported an error)."""

    exit_code = ExitCode.ERROR


class RemoteError(GitError):
    """A git remote could not be reached, or refused an update for a reason
    other than having moved (which sync retries)."""

    exit_code = ExitCode.REMOTE


def exit_code_for(error: BaseException) -> ExitCode:
    """Return the process exit code for ``error`` (``ERROR`` for anything unexpected)."""
    if isinstance(error, GitmemError):
        return error.exit_code
    return ExitCode.ERROR
