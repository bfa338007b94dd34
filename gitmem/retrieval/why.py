"""Why is this code like this: the memory that touches a file or a symbol.

``why`` takes a file path, a ``path:qualname`` or a symbol name, finds what
it is in the code graph (when there is one) and its close neighbours (one
hop through calls, imports, inheritance and references, either way), and
lists the events that name those files or symbols:

* decisions, binding ones first, then proposed, then superseded, each newest
  first and flagged **stale** when the code under its paths changed since it
  was made (:mod:`gitmem.retrieval.stale`);
* learnings, mistakes and checkpoints;
* the sessions (capsules) whose tool calls touched the files;
* the code commits memory links to (``commit_link``) that changed them.

An event names a file through its body's ``paths``/``files``; an entry
``path:qualname`` (or ``path::qualname``) names a symbol of that file.
Without a graph, ``why`` still answers for files and directories.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitmem.memory.decisions import decision_states
from gitmem.memory.query import EventFilter, paths_overlap
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg

if TYPE_CHECKING:
    from gitmem.graph.view import GraphView
    from gitmem.memory.event import Event
    from gitmem.memory.source import EventSource
    from gitmem.retrieval.stale import Staleness
    from gitmem.storage.locate import RepoLocation

NEIGHBOUR_KINDS = ("calls", "imports", "extends", "implements", "references")
SECTIONS = ("decisions", "learnings", "mistakes", "checkpoints", "sessions", "commits")


@dataclass
class Target:
    """What the argument names: files, and symbols as ``path:qualname``."""

    text: str
    files: list[str]
    symbols: list[str] = field(default_factory=list)
    neighbour_files: list[str] = field(default_factory=list)
    neighbour_symbols: list[str] = field(default_factory=list)


@dataclass
class WhyItem:
    """One event that touches the target."""

    event: Event
    section: str
    via: list[str]  # the files or symbols it names that made it match
    near: bool = False  # through a neighbour only, not the target itself
    status: str = ""  # decisions: binding, proposed, superseded
    stale: Staleness | None = None


@dataclass
class WhyResult:
    target: Target
    items: list[WhyItem]
    graph: bool = False  # whether a code graph resolved the target

    def section(self, name: str) -> list[WhyItem]:
        return [i for i in self.items if i.section == name]

    def to_text(self, width: int = 90) -> str:
        """The answer for people and models: the target, then one line per
        item by section (id, time, status for decisions, summary, what it
        names), stale decisions with the files that changed."""
        from gitmem.memory.describe import SHORT_ID, short_id
        from gitmem.memory.timespec import format_time

        t = self.target
        lines = [f"why {t.text}: {', '.join(t.files) or 'nothing in the code graph'}"]
        if t.neighbour_files:
            lines.append(f"  near: {', '.join(t.neighbour_files[:10])}")
        for name in SECTIONS:
            items = self.section(name)
            if not items:
                continue
            lines.append(f"\n{name.capitalize()}")
            for item in items:
                e = item.event
                line = f"  [{short_id(e.id)}] {format_time(e.time)} "
                if name == "decisions":
                    line += f"{item.status:<10} "
                elif name == "commits":
                    line += f"{str(e.field('sha', ''))[:SHORT_ID]} "
                line += e.summary(width)
                more = " …" if len(item.via) > 3 else ""
                line += f"  ({', '.join(item.via[:3])}{more}" + (", nearby)" if item.near else ")")
                lines.append(line)
                if item.stale is not None and item.stale.stale:
                    changed = ", ".join(item.stale.changed[:3])
                    extra = len(item.stale.changed) - 3
                    tail = f" and {extra} more" if extra > 0 else ""
                    lines.append(f"      STALE: {changed}{tail} changed since it was made")
        if len(lines) == 1 or (len(lines) == 2 and t.neighbour_files):
            lines.append("no memory touches it")
        if not self.graph:
            lines.append(
                "\nhint: without a code graph only paths are matched; build it with"
                " 'git edda code index' for symbols and their neighbours"
            )
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        def item(i: WhyItem) -> dict[str, object]:
            out: dict[str, object] = {
                "id": i.event.id,
                "event": i.event.to_json(),
                "via": i.via,
                "near": i.near,
            }
            if i.section == "decisions":
                out["status"] = i.status
                out["stale"] = bool(i.stale and i.stale.stale)
                out["changed"] = list(i.stale.changed) if i.stale else []
            return out

        return {
            "graph": self.graph,
            "target": {
                "text": self.target.text,
                "files": self.target.files,
                "symbols": self.target.symbols,
                "neighbour_files": self.target.neighbour_files,
                "neighbour_symbols": self.target.neighbour_symbols,
            },
            **{name: [item(i) for i in self.section(name)] for name in SECTIONS},
        }


def _split_symbol(entry: str) -> tuple[str, str]:
    """``path:qualname`` / ``path::qualname`` -> (path, qualname); else (entry, "")."""
    for sep in ("::", ":"):
        path, found, qualname = entry.partition(sep)
        if found and path and qualname and "/" not in qualname:
            return path, qualname
    return entry, ""


def locate_target(text: str, graph: GraphView | None, files_here: Sequence[str]) -> Target:
    """What ``text`` names, and its one-hop neighbourhood when there is a graph."""
    path, qualname = _split_symbol(text.strip())
    target = Target(text, [])
    ids: set[str] = set()
    if graph is None:
        target.files = [path.strip("/")]
        if qualname:
            target.symbols = [f"{path}:{qualname}"]
        return target
    nodes = graph.nodes.to_pydict() if graph.nodes.num_rows else {"id": []}
    rows = range(len(nodes["id"]))
    clean = path.strip("/")
    if qualname:
        hits = [r for r in rows if nodes["path"][r] == clean and nodes["qualname"][r] == qualname]
    elif clean in files_here or any(f.startswith(clean + "/") for f in files_here):
        hits = [
            r
            for r in rows
            if nodes["kind"][r] == "file"
            and (nodes["path"][r] == clean or nodes["path"][r].startswith(clean + "/"))
        ]
        target.files = [clean]
    else:  # a bare name: every symbol so named
        hits = [r for r in rows if nodes["name"][r] == clean or nodes["qualname"][r] == clean]
    for r in hits:
        ids.add(nodes["id"][r])
        if nodes["path"][r] and nodes["path"][r] not in target.files:
            target.files.append(nodes["path"][r])
        if nodes["qualname"][r]:
            target.symbols.append(f"{nodes['path'][r]}:{nodes['qualname'][r]}")
    if not hits and not target.files:
        target.files = [clean]
        return target
    index = {nodes["id"][r]: r for r in rows}
    edges = graph.edges.to_pydict() if graph.edges.num_rows else {"src": []}
    near: set[str] = set()
    for e in range(len(edges["src"])):
        if edges["kind"][e] not in NEIGHBOUR_KINDS:
            continue
        src, dst = edges["src"][e], edges["dst"][e]
        if src in ids and dst not in ids:
            near.add(dst)
        elif dst in ids and src not in ids:
            near.add(src)
    for node in sorted(near):
        found = index.get(node)
        if found is None or not nodes["path"][found]:
            continue  # an external module
        r = found
        if nodes["path"][r] not in target.files and nodes["path"][r] not in target.neighbour_files:
            target.neighbour_files.append(nodes["path"][r])
        if nodes["qualname"][r]:
            target.neighbour_symbols.append(f"{nodes['path'][r]}:{nodes['qualname'][r]}")
    target.files.sort()
    target.neighbour_files.sort()
    return target


def _named(event: Event) -> list[str]:
    """The files and symbols an event's body names."""
    out: list[str] = []
    for key in ("paths", "files"):
        value = event.field(key, [])
        if isinstance(value, list):
            out += [v for v in value if isinstance(v, str) and v]
    return out


def _matches(named: Sequence[str], files: Sequence[str], symbols: Sequence[str]) -> list[str]:
    hits = []
    for entry in named:
        path, qualname = _split_symbol(entry)
        if qualname:
            if f"{path.strip('/')}:{qualname}" in symbols or (
                not symbols and paths_overlap([path], files)
            ):
                hits.append(entry)
        elif paths_overlap([entry], files):
            hits.append(entry)
    return hits


def _commit_files(location: RepoLocation, shas: Sequence[str]) -> dict[str, list[str]]:
    """sha -> the files it changed (two git processes for all of them)."""
    from gitmem.errors import GitError
    from gitmem.storage.locate import run_git

    wanted = sorted({s for s in shas if s and all(c in "0123456789abcdef" for c in s)})
    if not wanted:
        return {}
    try:
        # Only commits this clone has: diff-tree stops at the first unknown one.
        check = run_git(
            ["cat-file", "--batch-check"], location.cwd, "".join(f"{s}\n" for s in wanted).encode()
        )
        present = [
            line.split()[0]
            for line in check.decode("ascii", "replace").splitlines()
            if line.split()[1:2] == ["commit"]
        ]
        if not present:
            return {}
        raw = run_git(
            ["diff-tree", "--stdin", "-r", "--root", "-z", "--name-only"],
            location.cwd,
            "".join(f"{s}\n" for s in present).encode(),
        )
    except GitError:
        return {}
    # With --stdin, each commit's files follow a NUL-terminated line of its id.
    out: dict[str, list[str]] = {}
    current: str | None = None
    known = set(present)
    for token in raw.decode("utf-8", "surrogateescape").split("\0"):
        token = token.strip("\n")
        if token in known:
            current = token
            out.setdefault(current, [])
        elif current is not None and token:
            out[current].append(token)
    return out


def why(
    source: EventSource,
    location: RepoLocation,
    text: str,
    *,
    graph: GraphView | None = None,
    files_here: Sequence[str] = (),
    branch: BranchArg = CURRENT_BRANCH,
    limit: int = 20,
) -> WhyResult:
    """The memory that touches ``text`` (a file, ``path:qualname`` or a name)
    or its close neighbours in ``graph``; at most ``limit`` items per section."""
    from gitmem.retrieval.stale import staleness

    target = locate_target(text, graph, files_here)
    own_files, own_symbols = target.files, target.symbols
    all_files = [*own_files, *target.neighbour_files]
    all_symbols = [*own_symbols, *target.neighbour_symbols]

    def match(event: Event) -> tuple[list[str], bool] | None:
        direct = _matches(_named(event), own_files, own_symbols)
        if direct:
            return direct, False
        near = _matches(_named(event), all_files, all_symbols)
        return (near, True) if near else None

    types = ("decision", "ratify", "learning", "mistake", "checkpoint", "observation")
    events = source.events(EventFilter(types=types, include_redacted=False), branch=branch)
    items: list[WhyItem] = []
    states = {
        s.event.id: s
        for s in decision_states(e for e in events if e.type in ("decision", "ratify"))
    }
    capsules: dict[str, list[str]] = {}
    for event in events:
        found = match(event) if event.type != "ratify" else None
        if found is None:
            continue
        via, near = found
        if event.type == "decision":
            state = states.get(event.id)
            items.append(
                WhyItem(event, "decisions", via, near, state.status if state else "proposed")
            )
        elif event.type == "observation":
            if event.capsule:
                capsules.setdefault(event.capsule, [])
                capsules[event.capsule] += [v for v in via if v not in capsules[event.capsule]]
        else:
            items.append(WhyItem(event, event.type + "s", via, near))
    for capsule_id, via in capsules.items():
        try:
            opened = source.get(capsule_id)
        except Exception:  # a capsule of another branch: its tool calls still count
            continue
        items.append(WhyItem(opened, "sessions", via))
    links = source.events(
        EventFilter(types=("commit_link",), include_redacted=False), branch=branch
    )
    changed = _commit_files(location, [str(e.field("sha", "")) for e in links if e.field("sha")])
    for link in links:
        hits = _matches(changed.get(str(link.field("sha", "")), []), all_files, [])
        if hits:
            near = not _matches(hits, own_files, [])
            items.append(WhyItem(link, "commits", hits, near))
    decisions = [i for i in items if i.section == "decisions"]
    stale = staleness(
        location,
        {
            i.event.id: (i.event.time, [_split_symbol(p)[0] for p in _named(i.event)])
            for i in decisions
        },
    )
    for i in decisions:
        i.stale = stale.get(i.event.id)
    rank = {"binding": 0, "proposed": 1, "superseded": 2}
    ordered: list[WhyItem] = []
    for name in SECTIONS:
        section = [i for i in items if i.section == name]
        section.sort(key=lambda i: (rank.get(i.status, 0), i.near, -i.event.time, i.event.id))
        ordered += section[:limit]
    return WhyResult(target, ordered, graph is not None)
