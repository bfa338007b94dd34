"""``verify``'s checks of the event chains: every commit's shape and format,
every envelope's soundness and canonical form, no event twice in a chain.

:func:`commit_problems` is also the check a pull makes on incoming commits
(:mod:`gitmem.sync.incoming`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitmem.memory.checkedevents import CheckedEvents
from gitmem.memory.report import Problem, Report, error_text
from gitmem.records import canonical, layout
from gitmem.storage.envelope import RECORD_VERSION, envelope_problems

if TYPE_CHECKING:
    from gitmem.memory.api import Memory


def check_chain(
    memory: Memory,
    ref: str,
    tip: str,
    report: Report,
    checked: CheckedEvents,
    seen_commits: set[str],
) -> None:
    """Check every commit and envelope reachable from ``tip`` (on ``ref``).

    Each sound event seen for the first time goes into ``checked``, with
    where it was met, for the payload checks; ``seen_commits`` spans all
    chains, so a commit shared by several is counted once.
    """
    backend = memory.backend
    chain_ids: set[str] = set()
    stack = [tip]
    visited = {tip}
    while stack:
        oid = stack.pop()
        try:
            info = backend.read_commit(oid)
        except Exception as exc:
            report.problems.append(Problem(f"commit unreadable: {error_text(exc)}", ref, oid, oid))
            continue
        for parent in info.parents:
            if parent not in visited:
                visited.add(parent)
                stack.append(parent)
        check_commit(memory, ref, oid, info, report, checked, seen_commits, chain_ids)


def check_commits(
    memory: Memory,
    ref: str,
    commits: list[str],
    report: Report,
    checked: CheckedEvents,
    seen_commits: set[str],
) -> None:
    """Check these commits of ``ref`` and their envelopes, as
    :func:`check_chain` checks every commit of a chain (an incremental
    verification: the commits added since the last one)."""
    chain_ids: set[str] = set()
    for oid in commits:
        try:
            info = memory.backend.read_commit(oid)
        except Exception as exc:
            report.problems.append(Problem(f"commit unreadable: {error_text(exc)}", ref, oid, oid))
            continue
        check_commit(memory, ref, oid, info, report, checked, seen_commits, chain_ids)


def check_commit(
    memory: Memory,
    ref: str,
    oid: str,
    info: Any,
    report: Report,
    checked: CheckedEvents,
    seen_commits: set[str],
    chain_ids: set[str],
) -> None:
    """Check one commit (read as ``info``) of ``ref`` and its envelopes;
    ``chain_ids`` holds the ids seen so far in the chain."""
    backend = memory.backend
    fmt = layout.parse_trailers(info.message).get(layout.FORMAT_TRAILER)
    if fmt is not None and fmt.isdigit() and int(fmt) > layout.FORMAT_VERSION:
        report.problems.append(
            Problem(f"commit written in newer format {fmt}; upgrade gitmem", ref, oid, oid)
        )
        return
    first_visit = oid not in seen_commits
    seen_commits.add(oid)
    if first_visit:
        report.commits += 1
    shape, entries = commit_problems(backend, oid, info)
    report.problems.extend(Problem(text, ref, oid, obj) for text, obj in shape)
    if entries is None:
        return
    for entry in sorted(entries):
        try:
            data = backend.read_blob(entry.oid)
            env = canonical.decode(data)
        except Exception as exc:
            report.problems.append(
                Problem(f"envelope unreadable: {error_text(exc)}", ref, oid, entry.oid)
            )
            continue
        problems = envelope_problems(env, strict=False)
        eid = env.get("id") if isinstance(env, dict) else None
        eid = eid if isinstance(eid, str) else None
        if not problems:
            # Rules only new events must meet (spec/storage.md §17): memory
            # an older gitmem wrote may break them without being damaged.
            for text in envelope_problems(env):
                report.warnings.append(
                    Problem(f"written before today's rules: {text}", ref, oid, entry.oid, eid)
                )
        if not canonical.is_canonical(data):
            problems.append("envelope is not in canonical encoding")
        if isinstance(env, dict) and isinstance(env.get("v"), int) and env["v"] > RECORD_VERSION:
            report.warnings.append(
                Problem(f"event written with record version {env['v']}", ref, oid, entry.oid, eid)
            )
        for text in problems:
            fld = text.split("'")[1] if text.startswith("field '") else None
            report.problems.append(Problem(text, ref, oid, entry.oid, eid, fld))
        if problems or eid is None:
            continue
        if eid in chain_ids and first_visit:
            report.problems.append(
                Problem("event appears twice in the chain", ref, oid, entry.oid, eid)
            )
        chain_ids.add(eid)
        if checked.add(eid, env, ref, oid):
            report.events += 1


def commit_problems(
    backend: Any, oid: str, info: Any
) -> tuple[list[tuple[str, str]], list[Any] | None]:
    """What is wrong with the shape of memory commit ``oid`` (spec/storage.md §3
    and spec/sync.md): (problem, object) pairs, and the ``events/`` entries
    (None when the tree cannot be read). Shared by ``verify`` and by the
    checks a pull makes on incoming commits: a code commit, a tree with
    anything besides ``events/``, a merge that carries events, entries out
    of sequence or a wrong ``Edda-Events`` count are all refused.
    """
    problems: list[tuple[str, str]] = []
    trailers = layout.parse_trailers(info.message)
    fmt = trailers.get(layout.FORMAT_TRAILER)
    if fmt is None or not fmt.isdigit():
        problems.append(("commit has no Edda-Format trailer (not a memory commit)", oid))
    try:
        root = backend.read_tree(info.tree)
        events_tree = next((e.oid for e in root if e.name == layout.EVENTS_DIR), None)
        entries = backend.read_tree(events_tree) if events_tree else []
    except Exception as exc:
        return [*problems, (f"commit tree unreadable: {error_text(exc)}", info.tree)], None
    if any(e.name != layout.EVENTS_DIR or e.mode != layout.MODE_TREE for e in root):
        problems.append(("commit tree holds more than events/ (not a memory commit)", info.tree))
    if len(info.parents) > 1 and entries:
        problems.append(("a merge commit carries events (merges must not)", oid))
    if len(info.parents) <= 1 and not entries and layout.BRANCH_TRAILER not in trailers:
        problems.append(("commit holds no events and is not a fork commit", oid))
    if len(info.parents) <= 1:
        names = sorted(e.name for e in entries)
        if names != [layout.entry_name(i) for i in range(len(names))]:
            problems.append(("event entries are not numbered 000000, 000001, …", str(events_tree)))
        if any(e.mode != layout.MODE_BLOB for e in entries):
            problems.append(("an event entry is not a file", str(events_tree)))
        count = trailers.get(layout.COUNT_TRAILER)
        if count is not None and count != str(len(entries)):
            problems.append((f"Edda-Events says {count} but the commit holds {len(entries)}", oid))
    return problems, entries
