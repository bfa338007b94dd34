"""The ``git edda`` application object and what every command shares: the
common options, the filter options of ``log`` and ``search``, the scope
options of recording commands, bounds on numbers, and the Output type.

Commands (one module per group: record, browse, retrieve, share, admin)
parse arguments, call a use case in :mod:`gitmem.app`, and return an
:class:`Output`; :mod:`gitmem.cli.main` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from cyclopts import App, Parameter

from gitmem import __version__
from gitmem.app.record import Who
from gitmem.errors import ExitCode, UsageError
from gitmem.memory.timespec import parse_time
from gitmem.storage.clock import wall_us

if TYPE_CHECKING:
    from gitmem.app.browse import Filters


@dataclass
class Output:
    """What a command produced: data for --json (a JSON object, or None when
    the command wrote its output itself), text for people, an exit code."""

    data: Any
    text: str = ""
    code: ExitCode = ExitCode.OK
    page: bool = False
    "Whether the text may be long enough for the pager (listings, show, packs)."


@Parameter(name="*")
@dataclass(frozen=True)
class Common:
    json: Annotated[bool, Parameter(name="--json", negative="")] = False
    "Print machine-readable JSON on stdout."
    repo: Annotated[str | None, Parameter(name=["--repo", "-C"])] = None
    "Run as if started in this directory."
    no_pager: Annotated[bool, Parameter(name=["--no-pager", "-P"], negative="")] = False
    "Do not pipe long output into a pager (GIT_PAGER, core.pager, PAGER, less)."


@Parameter(name="*")
@dataclass(frozen=True)
class WhoOptions:
    session: str | None = None
    "Session scope id (default: $GITMEM_SESSION)."
    capsule: str | None = None
    "Capsule the event belongs to (id or unique prefix)."
    agent: str | None = None
    "Agent scope id (default: $GITMEM_AGENT, or claude-code inside Claude Code)."

    def who(self) -> Who:
        return Who(session=self.session, capsule=self.capsule, agent=self.agent)


@Parameter(name="*")
@dataclass(frozen=True)
class FilterOptions:
    type: list[str] | None = None
    "Only events of this type (repeatable: any of them)."
    session: list[str] | None = None
    "Only events of this session scope id (repeatable)."
    capsule: list[str] | None = None
    "Only events in this capsule, id or unique prefix (repeatable)."
    actor: list[str] | None = None
    "Only events recorded by this agent or user id (repeatable)."
    tag: list[str] | None = None
    "Only events with this tag (repeatable: any of them)."
    path: list[str] | None = None
    "Only events about this path: exact, directory prefix (src/) or glob (*.py); repeatable."
    since: str | None = None
    "Only events at or after this time: 2026-01-31, 2026-01-31T12:00, or an age such as 7d, 12h."
    until: str | None = None
    "Only events before this time (same forms as --since)."

    def filters(self) -> Filters:
        from gitmem.app.browse import Filters

        return Filters(
            types=tuple(self.type or ()),
            sessions=tuple(self.session or ()),
            capsules=tuple(self.capsule or ()),
            actors=tuple(self.actor or ()),
            tags=tuple(self.tag or ()),
            paths=tuple(self.path or ()),
            since=self.since,
            until=self.until,
        )


DEFAULT_COMMON = Common()
DEFAULT_WHO = WhoOptions()
DEFAULT_FILTERS = FilterOptions()

app = App(
    name="git edda",
    help="gitmem: durable, branch-aware memory for AI coding agents, stored in this git repository.",
    version=__version__,
    help_format="plaintext",
    # No "--empty-tag" for list options: leaving an option out already means none.
    default_parameter=Parameter(negative_iterable=()),
)
capsule_app = App(name="capsule", help="Open, close and list capsules (sessions, workflow steps).")
app.command(capsule_app)

# Bounds of the numeric options. Results and candidates reach Tantivy and
# usearch, which abort the process on absurd sizes (a SIGABRT, not an error).
MAX_RESULTS = 10_000  # search --limit
MAX_ASK = 1_000  # ask --limit (ask searches four times as many)
MAX_LOG_LIMIT = 1_000_000_000  # log --limit
MAX_BUDGET = 1_000_000  # context --budget, in tokens


def in_range(option: str, value: int, low: int, high: int) -> int:
    """``value``, or a usage error naming ``option``'s range."""
    if not low <= value <= high:
        raise UsageError(
            f"{option} must be between {low:,} and {high:,}, not {value:,}",
            f"pass {option} N with N from {low:,} to {high:,}",
        )
    return value


def check_branch(option: str, name: str | None) -> str | None:
    """``name`` (a branch name given on the command line), or a usage error
    when git would not accept it as a branch name (an empty string included)."""
    from gitmem.records.validate import branch_problem

    if name is None:
        return None
    why = branch_problem(name)
    if why:
        raise UsageError(
            f"{option} {name[:80]!r} is not a branch name: it {why}",
            "give a branch name as 'git branch' lists it, or leave the option out",
        )
    return name


def now_or_wall(now: str | None) -> int:
    """``--now`` as microseconds (relative to the wall clock), else the wall clock."""
    return parse_time(now, wall_us()) if now else wall_us()
