"""Turn drafts (type + body + scope) into sealed events, the same way on every path.

Both the capture hot path (spool) and in-process appends go through
:class:`Sealer`, so scrubbing, truncation, scope defaults and clock rules
cannot drift apart. Standard library only.
"""

from __future__ import annotations

import os

from gitmem.capture.prepare import DEFAULT_MAX_FIELD_BYTES, prepare_body
from gitmem.capture.scrub import Scrubber, ScrubPatternError, default_scrubber
from gitmem.errors import UsageError
from gitmem.records import canonical
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg, CurrentBranch
from gitmem.records.names import REQUIRED_FIELDS
from gitmem.records.validate import (
    Limits,
    branch_problem,
    capsule_problem,
    event_problems,
    json_problems,
    scope_value_problem,
    time_problem,
)
from gitmem.storage import clock
from gitmem.storage.envelope import seal
from gitmem.storage.gitconfig import (
    Config,
    get_int,
    get_last,
    limits,
    repo_scope_id,
    user_scope_id,
)
from gitmem.storage.locate import RepoLocation, memory_branch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


# Types that name their capsule themselves (or start one): never put in the current one.
_OWN_CAPSULE = ("capsule_open", "capsule_close")


def current_capsule(location: RepoLocation) -> dict[str, str] | None:
    """The current capsule of this worktree ({"capsule", "session"?}), when
    one is open and its id is well formed (a bad $GITMEM_CAPSULE is ignored,
    not a reason to refuse events)."""
    from gitmem.capture.active import read_active

    active = read_active(location)
    capsule = active.get("capsule")
    if capsule is None or capsule_problem(capsule):
        return None
    out = {"capsule": capsule}
    if active.get("session") and not os.environ.get("GITMEM_CAPSULE"):
        out["session"] = active["session"]
    return out


class Draft:
    """An event to record. Unset scope fields take the sealer's defaults.

    ``branch=None`` means "detached HEAD"; leaving it unset means "the
    checked-out branch". ``time`` is for imports and tests; else the clock.
    (A plain class: dataclasses imports inspect, ~5 ms on the hook path.)
    """

    __slots__ = ("agent", "body", "branch", "capsule", "session", "time", "type")

    def __init__(
        self,
        type: str,
        body: dict[str, Any],
        session: str | None = None,
        agent: str | None = None,
        capsule: str | None = None,
        branch: BranchArg = CURRENT_BRANCH,
        time: int | None = None,
    ) -> None:
        self.type = type
        self.body = body
        self.session = session
        self.agent = agent
        self.capsule = capsule
        self.branch = branch
        self.time = time

    def __repr__(self) -> str:
        return f"Draft({self.type!r}, {self.body!r})"


def agent_from_env() -> str | None:
    """The agent scope id from the environment: ``GITMEM_AGENT``, or Claude Code."""
    agent = os.environ.get("GITMEM_AGENT")
    if agent:
        return agent
    if os.environ.get("CLAUDECODE") == "1":
        return "claude-code"
    return None


def check_draft(draft: Draft, limits: Limits | None = None, now_us: int | None = None) -> None:
    """Refuse a draft that could not become a valid event (spec/storage.md,
    "What a valid event is"): unknown type, a body that is not bounded JSON or
    lacks a required field, scope values that are not short strings, a branch
    git would refuse, a capsule that is not an id, a time out of bounds."""
    if not isinstance(draft.type, str) or draft.type not in REQUIRED_FIELDS:
        raise UsageError(
            f"unknown event type {draft.type!r}",
            f"use one of: {', '.join(REQUIRED_FIELDS)}",
        )
    if not isinstance(draft.body, dict):
        raise UsageError(f"the body of a {draft.type} event must be a JSON object")
    problems = json_problems(draft.body, lenient=True)
    if problems:
        raise UsageError(f"invalid {draft.type} event: {problems[0]}")
    missing = [name for name in REQUIRED_FIELDS[draft.type] if name not in draft.body]
    if missing:
        raise UsageError(
            f"a {draft.type} event needs the field(s): {', '.join(missing)}",
            f"add {', '.join(repr(m) for m in missing)} to the body",
        )
    for name in ("session", "agent"):
        value = getattr(draft, name)
        why = None if value is None or value == "" else scope_value_problem(value)
        if why:
            raise UsageError(f"the event's {name} {why}", f"give a short {name} id")
    if draft.capsule is not None and capsule_problem(draft.capsule):
        raise UsageError(
            f"the event's capsule {draft.capsule!r:.60} is not a capsule id",
            "give the 32-digit id of a capsule_open event ('git edda capsule list')",
        )
    if not isinstance(draft.branch, CurrentBranch) and draft.branch is not None:
        why = branch_problem(draft.branch)
        if why:
            raise UsageError(
                f"the event's branch {draft.branch!r:.60} {why}",
                "give a branch name git accepts ('git check-ref-format --branch NAME')",
            )
    if draft.time is not None:
        why = time_problem(draft.time, now_us, limits or Limits())
        if why:
            raise UsageError(f"the event's time {why}", "leave 'time' out to use the clock")


class Sealer:
    """Seals drafts for one repository with its configured capture rules."""

    def __init__(self, location: RepoLocation, config: Config) -> None:
        self.location = location
        extra = config.get("edda.scrubpattern", [])
        allow = config.get("edda.scruballow", [])
        try:
            self.scrubber: Scrubber = (
                Scrubber(extra, allow) if (extra or allow) else default_scrubber()
            )
        except ScrubPatternError as exc:
            raise UsageError(
                str(exc), "fix or remove it: git config --unset-all edda.scrubPattern"
            ) from None
        self.max_field_bytes = get_int(config, "edda.maxFieldBytes", DEFAULT_MAX_FIELD_BYTES)
        self.limits = limits(config)
        self.repo = self._scope_id(
            "repo",
            repo_scope_id(location, config),
            "git config edda.repo" if get_last(config, "edda.repo") else "the directory name",
        )
        self.user = self._scope_id("user", user_scope_id(config), "git config user.email")
        self.default_agent = self._scope_id("agent", agent_from_env(), "$GITMEM_AGENT")
        self.default_session = self._scope_id(
            "session", os.environ.get("GITMEM_SESSION") or None, "$GITMEM_SESSION"
        )

    def _scope_id(self, name: str, value: str | None, source: str) -> str | None:
        """A scope id with secrets masked (the envelope can never be redacted),
        refused when it is not a short single-line string."""
        if not value:
            return None
        # A name from the file system or the environment may hold bytes that
        # are not UTF-8 (lone surrogates): stored as U+FFFD, like any string.
        value = self.scrubber.scrub(canonical.normalize(value)).text
        why = scope_value_problem(value)
        if why:
            raise UsageError(f"the {name} scope id from {source} {why}", f"fix {source}")
        return value

    def seal(self, drafts: Sequence[Draft]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Validate, scrub, truncate, time and seal ``drafts``: [(envelope, body)].

        Every sealed event is checked with :func:`event_problems`, the same
        check a flush, an import and a pull make, so what this returns (and
        capture acknowledges) is always accepted by them.
        """
        now = clock.wall_us()
        for draft in drafts:
            check_draft(draft, self.limits, now)
        # Read per call, not per Sealer: a long-lived process outlives checkouts
        # and capsules.
        default_branch = memory_branch(self.location)
        current = current_capsule(self.location)
        clocked = [d for d in drafts if d.time is None]
        start = (
            clock.tick(self.location.state_path, len(clocked), now, skew_us=self.limits.skew_us)
            if clocked
            else 0
        )
        sealed = []
        offset = 0
        for n, draft in enumerate(drafts, 1):
            if draft.time is None:
                when = start + offset
                offset += 1
            else:
                when = draft.time
            body = prepare_body(draft.body, self.scrubber, self.max_field_bytes)
            branch = default_branch if isinstance(draft.branch, CurrentBranch) else draft.branch
            if branch and self.scrubber.scrub(branch).findings:
                raise UsageError(
                    "the event's branch name looks like a secret",
                    "memory refs carry branch names to every clone: rename the branch",
                )
            scope = {
                "repo": self.repo,
                "branch": branch,
                "session": self._scope_id("session", draft.session, "the event")
                or self.default_session,
                "agent": self._scope_id("agent", draft.agent, "the event") or self.default_agent,
                "user": self.user,
            }
            capsule = draft.capsule
            if capsule is None and current is not None and draft.type not in _OWN_CAPSULE:
                # The current capsule (``capsule open``, $GITMEM_CAPSULE) takes
                # what is recorded in its session while it is open.
                owner = current.get("session")
                if owner is None or owner == scope["session"]:
                    capsule = current["capsule"]
            envelope, _ = seal(draft.type, body, scope=scope, time_us=when, capsule=capsule)
            problems = event_problems(
                envelope, body, now_us=now, limits=self.limits, known_types_only=True, strict=True
            )
            if problems:
                where = f"event #{n}" if len(drafts) > 1 else f"the {draft.type} event"
                raise UsageError(f"{where} cannot be stored: {problems[0]}")
            sealed.append((envelope, body))
        return sealed
