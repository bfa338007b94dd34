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
from gitmem.records.names import REQUIRED_FIELDS
from gitmem.storage import clock
from gitmem.storage.envelope import seal
from gitmem.storage.gitconfig import Config, get_int, repo_scope_id, user_scope_id
from gitmem.storage.locate import RepoLocation, memory_branch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

_UNSET: Any = object()


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
        branch: str | None = _UNSET,
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


def check_draft(draft: Draft) -> None:
    """Reject unknown types and missing required fields (hot-path validation)."""
    required = REQUIRED_FIELDS.get(draft.type)
    if required is None:
        raise UsageError(
            f"unknown event type {draft.type!r}",
            f"use one of: {', '.join(REQUIRED_FIELDS)}",
        )
    if not isinstance(draft.body, dict):
        raise UsageError(f"the body of a {draft.type} event must be a JSON object")
    missing = [name for name in required if name not in draft.body]
    if missing:
        raise UsageError(
            f"a {draft.type} event needs the field(s): {', '.join(missing)}",
            f"add {', '.join(repr(m) for m in missing)} to the body",
        )


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
        self.repo = repo_scope_id(location, config)
        self.user = user_scope_id(config)
        self.default_branch = memory_branch(location)
        self.default_agent = agent_from_env()
        self.default_session = os.environ.get("GITMEM_SESSION") or None

    def seal(self, drafts: Sequence[Draft]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Validate, scrub, truncate, time and seal ``drafts``: [(envelope, body)]."""
        for draft in drafts:
            check_draft(draft)
        clocked = [d for d in drafts if d.time is None]
        start = clock.tick(self.location.state_path, len(clocked)) if clocked else 0
        sealed = []
        offset = 0
        for draft in drafts:
            if draft.time is None:
                when = start + offset
                offset += 1
            else:
                when = draft.time
            prepared = prepare_body(draft.body, self.scrubber, self.max_field_bytes)
            scope = {
                "repo": self.repo,
                "branch": self.default_branch if draft.branch is _UNSET else draft.branch,
                "session": draft.session or self.default_session,
                "agent": draft.agent or self.default_agent,
                "user": self.user,
            }
            envelope, _ = seal(
                draft.type, prepared.body, scope=scope, time_us=when, capsule=draft.capsule
            )
            sealed.append((envelope, prepared.body))
        return sealed
