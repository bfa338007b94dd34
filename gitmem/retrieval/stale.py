"""Whether the code a decision is about changed after it was made, by blob id.

A decision names files or directories (``paths``). The code as it was when
the decision was recorded is the newest first-parent commit of ``HEAD`` at or
before the decision's time; the code now is ``HEAD``. The decision is
**stale** when the set of (path, blob id) under its paths differs between the
two: a file edited, added or removed. Modification times play no part, so a
checkout, a clone or ``touch`` changes nothing.

Batched: one ``git log`` for the commit times, one ``git ls-tree`` per
distinct "then" commit and one for ``HEAD``, however many decisions.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from gitmem.storage.locate import RepoLocation, read_git_output

HISTORY_LIMIT = 50_000  # first-parent commits looked at for "then"
MARK = "STALE: its code changed since"


@dataclass(frozen=True)
class Staleness:
    """What changed under a decision's paths since it was made."""

    stale: bool
    changed: tuple[str, ...] = ()  # the files whose blob differs (added, edited or removed)
    since: str | None = None  # the commit the decision's code is compared from


def _tree(location: RepoLocation, commit: str, paths: Sequence[str]) -> dict[str, str]:
    """path -> blob id under ``paths`` (files or directories) in ``commit``."""
    out = read_git_output(
        ["ls-tree", "-r", "-z", "--full-tree", commit, "--", *paths], location.cwd
    )
    blobs: dict[str, str] = {}
    for record in (out or b"").decode("utf-8", "surrogateescape").split("\0"):
        meta, _, path = record.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == "blob":
            blobs[path] = fields[2]
    return blobs


def _history(location: RepoLocation, oldest: int) -> tuple[list[int], list[str]]:
    """First-parent commits of HEAD from the newest one before ``oldest``
    (seconds) on, oldest first: (commit times, ids)."""
    out = read_git_output(
        [
            "log",
            "--first-parent",
            f"-n{HISTORY_LIMIT}",
            f"--since={oldest}",
            "--format=%ct %H",
            "HEAD",
        ],
        location.cwd,
    )
    boundary = read_git_output(
        ["log", "--first-parent", "-n1", f"--until={oldest}", "--format=%ct %H", "HEAD"],
        location.cwd,
    )
    pairs: list[tuple[int, str]] = []
    for line in ((out or b"") + (boundary or b"")).decode("ascii", "replace").splitlines():
        stamp, _, commit = line.partition(" ")
        if stamp.isdigit() and commit and (int(stamp), commit) not in pairs:
            pairs.append((int(stamp), commit))
    pairs.sort()
    # Commit times need not increase along history (clock skew, rebases):
    # keep the running maximum so bisect finds the newest commit not after t.
    times: list[int] = []
    top = 0
    for seconds, _ in pairs:
        top = max(top, seconds)
        times.append(top)
    return times, [c for _, c in pairs]


def _within(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def staleness(
    location: RepoLocation, decisions: Mapping[str, tuple[int, Sequence[str]]]
) -> dict[str, Staleness]:
    """For each decision id -> (time in µs, paths): whether its code changed.

    Paths that are globs are left out (git cannot list them exactly); a
    decision without plain paths, or in a repository without commits, is not
    stale."""
    plain = {
        key: (when, [p.strip("/") for p in paths if p and not any(c in p for c in "*?[")])
        for key, (when, paths) in decisions.items()
    }
    wanted = sorted({p for _, paths in plain.values() for p in paths})
    result = {key: Staleness(False) for key in decisions}
    if not wanted:
        return result
    times, commits = _history(location, min(when for when, _ in plain.values()) // 1_000_000)
    if not commits:
        return result
    now = _tree(location, "HEAD", wanted)
    then_trees: dict[str | None, dict[str, str]] = {None: {}}
    for key, (when, paths) in plain.items():
        if not paths:
            continue
        at = bisect.bisect_right(times, when // 1_000_000) - 1
        commit = commits[at] if at >= 0 else None
        if commit not in then_trees:
            then_trees[commit] = _tree(location, commit, wanted) if commit else {}
        before = {p: b for p, b in then_trees[commit].items() if _within(p, paths)}
        after = {p: b for p, b in now.items() if _within(p, paths)}
        changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        result[key] = Staleness(bool(changed), tuple(changed), commit)
    return result


StaleFn = Callable[[Mapping[str, tuple[int, Sequence[str]]]], Mapping[str, Staleness]]
"""``staleness`` bound to a repository: decision id -> (time, paths) in,
decision id -> :class:`Staleness` out."""


def mark(text: str, stale: Staleness | None) -> str:
    """``text`` with the stale marker and the first changed files, when stale."""
    if stale is None or not stale.stale:
        return text
    shown = ", ".join(stale.changed[:3]) + (" …" if len(stale.changed) > 3 else "")
    return f"{text} ({MARK}: {shown})"
