"""Filtering events: by type, branch, session, capsule, actor, tag, path and time."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from gitmem.memory.event import Event

_PATH_FIELDS = ("paths", "files")


@dataclass(frozen=True)
class EventFilter:
    """What to select. Empty fields match everything.

    ``paths`` match a body's ``paths`` / ``files`` entries exactly, as a
    directory prefix (``src/`` matches ``src/a.py``) or as a glob (``*.py``).
    ``since``/``until`` are inclusive/exclusive microsecond times.
    """

    types: Sequence[str] = ()
    sessions: Sequence[str] = ()
    capsules: Sequence[str] = ()
    actors: Sequence[str] = ()
    tags: Sequence[str] = ()
    paths: Sequence[str] = ()
    since: int | None = None
    until: int | None = None
    include_redacted: bool = True

    def matches(self, event: Event) -> bool:
        if self.types and event.type not in self.types:
            return False
        if self.since is not None and event.time < self.since:
            return False
        if self.until is not None and event.time >= self.until:
            return False
        if self.sessions and event.scope.get("session") not in self.sessions:
            return False
        if self.capsules and not (event.capsule in self.capsules or event.id in self.capsules):
            return False
        if self.actors and not (
            {event.scope.get("agent"), event.scope.get("user")} & set(self.actors)
        ):
            return False
        if event.redacted and not self.include_redacted:
            return False
        if self.tags:
            tags = event.field("tags", [])
            if not isinstance(tags, list) or not set(self.tags) & set(tags):
                return False
        if self.paths:
            stored: list[str] = []
            for name in _PATH_FIELDS:
                value = event.field(name, [])
                if isinstance(value, list):
                    stored.extend(str(v) for v in value)
            if not any(path_matches(p, pattern) for p in stored for pattern in self.paths):
                return False
        return True


_GLOB_CHARS = frozenset("*?[")


def path_matches(path: str, pattern: str) -> bool:
    """Exact match, directory prefix, or glob."""
    path = path.removeprefix("./")
    pattern = pattern.removeprefix("./")
    if path == pattern:
        return True
    if pattern.endswith("/") and path.startswith(pattern):
        return True
    if path.startswith(pattern.rstrip("/") + "/"):
        return True
    # Without a glob character the pattern matches only itself (checked above):
    # skip compiling it, which the first match of each distinct path would pay.
    return not _GLOB_CHARS.isdisjoint(pattern) and fnmatchcase(path, pattern)


def paths_overlap(left: Iterable[str], right: Iterable[str]) -> bool:
    """Whether any path of ``left`` matches any of ``right`` (either way round:
    exact, directory prefix or glob)."""
    right = list(right)
    return any(path_matches(a, b) or path_matches(b, a) for a in left for b in right)
