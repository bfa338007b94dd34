"""The MCP server's tools and resource, over the use cases of :mod:`gitmem.app`.

Importing this module imports the ``mcp`` SDK (about a second): only
:func:`gitmem.mcp.serve` does, when ``git edda mcp`` runs.

Every tool takes validated arguments (the SDK checks them against the schema
built from the annotations below and answers a tool error, ``isError``, when
they do not fit), calls one use case, and returns a short text for the model
plus the same result as structured content. Ids in the text are 12
characters; ``show`` expands them. A :class:`~gitmem.errors.GitmemError`
becomes a tool error with its message and hint; anything else becomes a tool
error naming the log that holds the traceback. The server never stops on a
failed call.
"""

# No "from __future__ import annotations": the SDK reads these signatures at
# run time to build each tool's input schema.

import datetime
import os
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, StringConstraints

from gitmem.app import browse, code, record, retrieve
from gitmem.app.browse import Filters
from gitmem.app.record import Unchanged, Who
from gitmem.app.session import Repo
from gitmem.errors import GitmemError
from gitmem.mcp import render
from gitmem.memory.describe import plural, ref
from gitmem.memory.event import Event

SERVER_NAME = "gitmem"
CONTEXT_URI = "gitmem://context"
LOG_NAME = "mcp.log"

# Bounds: a model's mistake (limit 10**9) must not reach Tantivy or usearch,
# which abort the process on absurd sizes, nor flood the model's context.
MAX_RESULTS = 50
MAX_LOG = 200
MIN_BUDGET, MAX_BUDGET = 100, 50_000
MAX_TEXT = 100_000  # characters of a note or learning (the store truncates fields further)
MAX_SHORT = 2_000  # a key, value, reason, topic, tag or path
MAX_ITEMS = 50  # entries of a list argument
MAX_PIN_DAYS = 3_650
MAX_CODE_DEPTH = 10
MAX_CODE_RESULTS = 100  # nodes a traversal returns to the model (the rest counted)

INSTRUCTIONS = """\
gitmem is this git repository's durable memory: decisions, notes, learnings,
mistakes, checkpoints and what agents did, kept in git and shared with the
team. Read it before you work (context, search, ask) and record what the next
session should know (decide, learn, note, checkpoint). Results carry 12-character
ids in brackets, [a1b2c3d4e5f6]; pass one to show for the whole event, or to
ratify and pin."""

# -- argument types (their descriptions reach the model through the schema) -----
Text = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TEXT),
]
Short = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_SHORT)]
Remark = Annotated[str, StringConstraints(strip_whitespace=True, max_length=MAX_SHORT)]
EventId = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=4, max_length=80),
    Field(description="An event id or a unique prefix of it (the 12 characters results show)."),
]
Paths = Annotated[
    list[Short],
    Field(
        max_length=MAX_ITEMS,
        description="Files it is about, relative to the repository root (context packs show "
        "it when these files are in play).",
    ),
]
Tags = Annotated[list[Short], Field(max_length=MAX_ITEMS, description="Tags.")]
Types = Annotated[
    list[Short],
    Field(
        max_length=MAX_ITEMS,
        description="Only these event types (decision, note, learning, mistake, pattern, "
        "checkpoint, prompt, observation, commit_link, ...).",
    ),
]
PathFilter = Annotated[
    list[Short] | None,
    Field(max_length=MAX_ITEMS, description="Only events about these files or globs."),
]
Since = Annotated[
    str | None,
    Field(
        max_length=64,
        description="Only events at or after this time: 2026-01-31, 2026-01-31T12:00, or an "
        "age such as 7d or 12h.",
    ),
]
CodeSymbol = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_SHORT),
    Field(
        description="What to look at: a file path (src/app.py), path:qualname as the code tools "
        "print it (src/app.py:Parser.parse), a qualified name (Parser.parse) or a bare name. "
        "A name several symbols share returns the candidates: pass one of them."
    ),
]
CodeDepth = Annotated[
    int, Field(ge=1, le=MAX_CODE_DEPTH, description="How many steps away to follow.")
]
CodeKind = Literal[
    "file", "module", "class", "interface", "type", "function", "method", "constant", "section"
]
ReadOnly = ToolAnnotations(read_only_hint=True, open_world_hint=False)
Writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


class RejectedIdea(BaseModel):
    """An idea tried and dropped, and why."""

    idea: Short
    reason: Remark = ""


def result(text: str, data: dict[str, Any]) -> CallToolResult:
    """A tool's answer: text for the model, the same as structured content."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def recorded(event: Event | Unchanged, what: str) -> CallToolResult:
    """An event written, or nothing written and why."""
    if isinstance(event, Unchanged):
        return result(
            f"{ref(event.event.id)} {event.why}; nothing written",
            {"id": event.event.id, "unchanged": event.why},
        )
    return result(
        f"{what} {ref(event.id)} on {event.branch or 'detached HEAD'}",
        {"id": event.id, "type": event.type, "branch": event.branch},
    )


class Tools:
    """The tools, bound to one repository; calls run one at a time (the SDK
    runs synchronous tools in worker threads)."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.who = Who(agent=_agent())
        self._lock = threading.Lock()

    @contextmanager
    def call(self, tool: str) -> Iterator[None]:
        """Run one tool call: serialised, gitmem's errors as tool errors."""
        with self._lock:
            try:
                yield
            except GitmemError as exc:
                hint = f"\nhint: {exc.hint}" if exc.hint else ""
                raise ToolError(f"{exc.message}{hint}") from None
            except ToolError:
                raise
            except Exception as exc:
                where = _log_internal_error(self.repo, tool, exc)
                detail = f" (details in {where})" if where else ""
                raise ToolError(f"internal error in {tool}: {type(exc).__name__}{detail}") from None

    # -- reading ----------------------------------------------------------------
    def search(
        self,
        query: Annotated[Text, Field(description="What to look for, in plain words.")],
        limit: Annotated[int, Field(ge=1, le=MAX_RESULTS)] = 10,
        types: Types | None = None,
        paths: PathFilter = None,
        since: Since = None,
    ) -> CallToolResult:
        """Search the repository's memory by text and meaning (hybrid full-text and
        vector search, newer first on a tie). Use it to find what was decided,
        learnt or done about a topic before you act on it. Returns ranked hits,
        one a line: [id] time type summary. Pass an id to show for the full event."""
        from gitmem.storage.clock import wall_us

        with self.call("search"):
            found = retrieve.search(
                self.repo,
                query,
                now_us=wall_us(),
                filters=Filters(types=tuple(types or ()), paths=tuple(paths or ()), since=since),
                limit=limit,
            )
            text = "\n".join(
                f"{n}. {render.line(h.event)}"
                + (f" (superseded by {ref(h.superseded_by)})" if h.superseded_by else "")
                for n, h in enumerate(found.hits, 1)
            )
            text = (text or "no matches") + "".join(f"\nwarning: {w}" for w in found.warnings)
            hits = [
                render.brief(h.event)
                | {"score": round(h.score, 6), "superseded_by": h.superseded_by}
                for h in found.hits
            ]
            return result(text, {"query": query, "hits": hits, "warnings": found.warnings})

    def context(
        self,
        query: Annotated[
            str | None,
            Field(max_length=MAX_SHORT, description="What you are about to do (adds search hits)."),
        ] = None,
        budget: Annotated[
            int, Field(ge=MIN_BUDGET, le=MAX_BUDGET, description="The pack's size in tokens.")
        ] = 2000,
        paths: Annotated[
            list[Short] | None,
            Field(
                max_length=MAX_ITEMS,
                description="Files in play (default: those changed in the working tree).",
            ),
        ] = None,
    ) -> CallToolResult:
        """What you should know now, within a token budget: pinned items, the open
        capsule (session), the latest checkpoint, binding and proposed decisions,
        learnings and mistakes about the files in play, hits for the query, and
        recent activity. Call it at the start of a task or after losing your place.
        Returns a markdown pack; every line carries an id that show expands."""
        from gitmem.storage.clock import wall_us

        with self.call("context"):
            pack = retrieve.context(
                self.repo, query or None, now_us=wall_us(), budget=budget, paths=paths
            )
            return result(pack.to_markdown() or "memory is empty", pack.to_json())

    def show(self, id: EventId) -> CallToolResult:
        """One event in full (every field of its body, who recorded it, when, on
        which branch). Use it to expand an id from another tool's result."""
        with self.call("show"):
            event = browse.show(self.repo, id)
            return result(render.show_text(event), render.full(event))

    def log(
        self,
        limit: Annotated[int, Field(ge=1, le=MAX_LOG)] = 20,
        types: Types | None = None,
        paths: PathFilter = None,
        since: Since = None,
        capsule: Annotated[
            str | None,
            Field(max_length=80, description="Only events of this capsule (id or prefix)."),
        ] = None,
    ) -> CallToolResult:
        """The newest events of the current branch's memory, newest first, as git
        log lists commits; filters narrow them. Use it to see what happened
        recently (in a session: pass its capsule id). One event a line."""
        from gitmem.storage.clock import wall_us

        with self.call("log"):
            events = browse.log(
                self.repo,
                Filters(
                    types=tuple(types or ()),
                    paths=tuple(paths or ()),
                    capsules=(capsule,) if capsule else (),
                    since=since,
                ),
                now_us=wall_us(),
                limit=limit,
                include_redacted=False,
                newest_first=True,
            )
            return result(
                render.lines(events, "no events"), {"events": [render.brief(e) for e in events]}
            )

    def ask(
        self,
        query: Annotated[
            str | None,
            Field(
                max_length=MAX_SHORT,
                description="A decision key (db.engine) for its history, or text to rank "
                "decisions by; leave out for an overview of active decisions.",
            ),
        ] = None,
        include_superseded: bool = False,
        limit: Annotated[int, Field(ge=1, le=MAX_RESULTS)] = 10,
    ) -> CallToolResult:
        """Decisions: without a query, the active ones; with a decision key, its
        timeline (who decided what, what superseded it, ratifications); with
        other text, the decisions most relevant to it with related commits,
        notes and checkpoints. Use it before changing something a decision
        may govern. Returns markdown with ids."""
        from gitmem.storage.clock import wall_us

        with self.call("ask"):
            answer = retrieve.ask(
                self.repo,
                query or None,
                now_us=wall_us(),
                include_superseded=include_superseded,
                limit=limit,
            )
            return result(answer.to_markdown(), answer.to_json())

    def why(
        self,
        target: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_SHORT,
                description="A file or directory (src/cache.py), a symbol as "
                "PATH:QUALNAME (src/cache.py:Cache.get), or a symbol name.",
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=MAX_RESULTS)] = 10,
    ) -> CallToolResult:
        """Why is this code like this: the decisions (binding first, newest
        first), learnings, mistakes, checkpoints, sessions and commits that
        touch a file or symbol or its close neighbours in the code graph.
        Decisions whose files changed since they were made are marked STALE.
        Use it before changing a file or function. One item a line, with ids
        that show expands."""
        with self.call("why"):
            answer = retrieve.why(self.repo, target, limit=limit)
            return result(answer.to_text(), answer.to_json())

    def capsule_status(self) -> CallToolResult:
        """The current capsule (the session or workflow step new events belong
        to) and every capsule still open on this branch, with their intents and
        event counts. Use it to know which session you are in."""
        from gitmem.capture.active import read_active
        from gitmem.storage.locate import locate

        with self.call("capsule_status"):
            current = read_active(locate(self.repo)).get("capsule")
            found = record.capsules(self.repo, open_only=True)
            rows = [
                f"{ref(c.id)} {c.kind:<8} {plural(c.events, 'event'):>10}  {c.intent or '(no intent)'}"
                + ("  <- current" if c.id == current else "")
                for c in found
            ]
            head = f"current capsule: {ref(current) if current else 'none'}"
            text = head + "\nopen capsules:\n" + ("\n".join(rows) or "none")
            data = {
                "current": current,
                "open": [c.__dict__ | {"open": c.is_open} for c in found],
            }
            return result(text, data)

    # -- recording --------------------------------------------------------------
    def note(
        self,
        text: Annotated[Text, Field(description="The note, in full sentences.")],
        tags: Tags | None = None,
        paths: Paths | None = None,
    ) -> CallToolResult:
        """Record a note: a fact, an observation or a result the team or a later
        session should find (use decide for choices, learn for lessons).
        Returns the new event's id."""
        with self.call("note"):
            event = record.note(self.repo, text, tags=tags or (), paths=paths or (), who=self.who)
            return recorded(event, "noted")

    def decide(
        self,
        key: Annotated[
            Short, Field(description="What is decided, as a dotted key (db.engine, api.style).")
        ],
        value: Annotated[Short, Field(description="The choice made.")],
        reason: Annotated[Remark, Field(description="Why.")] = "",
        scope: Annotated[Remark, Field(description="Where it applies, in a few words.")] = "",
        paths: Paths | None = None,
        tags: Tags | None = None,
    ) -> CallToolResult:
        """Record a decision key = value; it supersedes the active decision on the
        same key. A decision recorded by an agent is proposed (not binding) until
        a person ratifies it. Check ask first: do not contradict a binding
        decision without saying why. Returns the new decision's id."""
        with self.call("decide"):
            done = record.decide(
                self.repo,
                key,
                value,
                reason=reason,
                scope=scope,
                paths=paths or (),
                tags=tags or (),
                who=self.who,
            )
            status = "binding" if done.binding else "proposed (not binding until ratified)"
            out = recorded(done.event, "decided")
            text = out.content[0].text if isinstance(out.content[0], TextContent) else ""
            superseded = f", superseding {ref(done.supersedes)}" if done.supersedes else ""
            return result(
                f"{text}: {key} = {value}, {status}{superseded}",
                {
                    "id": done.event.id,
                    "key": key,
                    "value": value,
                    "binding": done.binding,
                    "supersedes": done.supersedes,
                },
            )

    def ratify(
        self,
        id: EventId,
        note: Annotated[Remark, Field(description="A remark recorded with it.")] = "",
    ) -> CallToolResult:
        """Ratify a decision, making a proposed decision binding. Only when the
        user asked you to ratify it. Returns the ratification's id, or says it
        was already ratified."""
        with self.call("ratify"):
            return recorded(record.ratify(self.repo, id, note=note, who=self.who), "ratified with")

    def pin(
        self,
        id: Annotated[
            str,
            StringConstraints(strip_whitespace=True, min_length=4, max_length=90),
            Field(description="An event id or prefix; summary:ID pins a capsule's summary."),
        ],
        reason: Annotated[Remark, Field(description="Why it matters.")] = "",
        expires_in_days: Annotated[
            int | None,
            Field(ge=1, le=MAX_PIN_DAYS, description="End the pin after this many days."),
        ] = None,
    ) -> CallToolResult:
        """Pin an event so that every context pack shows it first (a rule everyone
        must see, a known trap). Use sparingly. Returns the pin's id."""
        from gitmem.storage.clock import wall_us

        with self.call("pin"):
            now = wall_us()
            expires = None if expires_in_days is None else now + expires_in_days * 86_400_000_000
            done = record.pin(self.repo, id, reason=reason, expires=expires, now=now, who=self.who)
            return recorded(done, "pinned with")

    def checkpoint(
        self,
        next: Annotated[Remark, Field(description="The next step.")] = "",
        summary: Annotated[Remark, Field(description="Where the work stands.")] = "",
        hypotheses: Annotated[
            list[Short] | None, Field(max_length=MAX_ITEMS, description="Working hypotheses.")
        ] = None,
        rejected: Annotated[
            list[RejectedIdea] | None,
            Field(max_length=MAX_ITEMS, description="Ideas tried and dropped, with why."),
        ] = None,
        questions: Annotated[
            list[Short] | None, Field(max_length=MAX_ITEMS, description="Open questions.")
        ] = None,
        paths: Paths | None = None,
    ) -> CallToolResult:
        """Record where the work stands so that you (after a context compaction)
        or the next session can pick it up: the next step, a summary, hypotheses,
        rejected ideas and open questions. The newest checkpoint leads every
        context pack. Give at least one field. Returns the checkpoint's id."""
        with self.call("checkpoint"):
            event = record.checkpoint(
                self.repo,
                next=next,
                summary=summary,
                hypotheses=hypotheses or (),
                rejected=[(r.idea, r.reason) for r in rejected or ()],
                open_questions=questions or (),
                paths=paths or (),
                who=self.who,
            )
            return recorded(event, "checkpoint")

    def learn(
        self,
        text: Annotated[Text, Field(description="What was learnt, in a sentence or two.")],
        kind: Annotated[
            Literal["learning", "pattern", "mistake"],
            Field(
                description="learning: a fact about this code; pattern: a way of doing things "
                "here; mistake: something that went wrong, to avoid."
            ),
        ] = "learning",
        topic: Annotated[Remark, Field(description="What it is about, in a few words.")] = "",
        paths: Paths | None = None,
        tags: Tags | None = None,
    ) -> CallToolResult:
        """Record a learning, pattern or mistake, tied to the files it concerns:
        context packs show it whenever those files are in play, and editing them
        warns about recorded mistakes. Returns the new event's id."""
        with self.call("learn"):
            event = record.learn(
                self.repo,
                text,
                kind=kind,
                topic=topic,
                paths=paths or (),
                tags=tags or (),
                who=self.who,
            )
            return recorded(event, kind)

    # -- the code graph -----------------------------------------------------------
    def code_find(
        self,
        name: Annotated[Short, Field(description="A name or part of one (Parser, parse_h).")],
        kinds: Annotated[
            list[CodeKind] | None, Field(max_length=9, description="Only these kinds.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_RESULTS)] = 10,
    ) -> CallToolResult:
        """Find where a class, function, method, constant or file of this
        repository's code is defined, by name: exact matches first, then names
        starting with it, then names containing it (case-insensitive). Use it to
        locate the thing the user means before reading files. One match a line:
        match, kind, path:qualname, path:line."""
        with self.call("code_find"):
            found = code.find(self.repo, name, kinds=kinds or (), limit=limit)
            return result(
                _with_warnings(found.to_text(), found.warnings),
                {
                    "query": name,
                    "matches": [_brief(m.symbol) | {"match": m.match} for m in found.matches],
                },
            )

    def code_callers(self, symbol: CodeSymbol, depth: CodeDepth = 2) -> CallToolResult:
        """Who calls a function, method or class in this repository's code, and
        who calls them, up to depth steps: each caller once, at its nearest, with
        the route that reaches it. Use it before changing what a function does or
        takes. One caller a line: depth, kind, path:qualname, route."""
        with self.call("code_callers"):
            return _walked(code.callers(self.repo, symbol, depth=depth))

    def code_callees(self, symbol: CodeSymbol, depth: CodeDepth = 1) -> CallToolResult:
        """What a function or method of this repository's code calls (a file: all
        of its code), and what those call, up to depth steps: each callee once, at
        its nearest. Use it to understand what a function relies on without
        reading each file. One callee a line: depth, kind, path:qualname, route."""
        with self.call("code_callees"):
            return _walked(code.callees(self.repo, symbol, depth=depth))

    def code_impact(self, target: CodeSymbol, depth: CodeDepth = 3) -> CallToolResult:
        """The blast radius of changing a file or symbol: everything in this
        repository that imports, calls, extends or implements it, transitively
        up to depth steps, with the tests among them listed apart (run those
        after the change). One dependent a line: depth, kind, path:qualname."""
        with self.call("code_impact"):
            return _walked(code.impact(self.repo, target, depth=depth))

    def code_neighbors(self, symbol: CodeSymbol) -> CallToolResult:
        """Every relation of one symbol or file, one step away, both ways: what
        contains it, imports it, calls it, extends it, references it, documents
        it, and what it contains, imports, calls, extends. Use it to get one's
        bearings around a symbol. One edge a line: kind, -> (out) or <- (in), the
        other end, how it was resolved."""
        with self.call("code_neighbors"):
            around = code.neighbors(self.repo, symbol)
            hood = around.neighborhood
            rows = [
                _brief(n.symbol)
                | {"direction": n.direction, "edge": n.kind, "confidence": round(n.confidence, 2)}
                for n in hood.neighbors[:MAX_CODE_RESULTS]
            ]
            data = {
                "symbol": _brief(hood.symbol),
                "neighbors": rows,
                "more": max(0, len(hood.neighbors) - MAX_CODE_RESULTS),
            }
            return result(_with_warnings(hood.to_text(), around.warnings), data)

    def code_map(
        self,
        focus: Annotated[
            list[Short] | None,
            Field(
                max_length=MAX_ITEMS,
                description="Files the work is about (paths from the repository root): the "
                "map ranks what surrounds them first.",
            ),
        ] = None,
        budget: Annotated[
            int, Field(ge=MIN_BUDGET, le=MAX_BUDGET, description="The map's size in tokens.")
        ] = 1000,
    ) -> CallToolResult:
        """A map of this repository's code: its most important classes, functions
        and methods (PageRank over calls, inheritance and imports, centred on the
        focus files when given), as one-line signatures grouped by file, within a
        token budget. Use it at the start of a task in unfamiliar code, instead
        of listing and opening files."""
        with self.call("code_map"):
            mapped = code.repo_map(self.repo, focus=focus or (), budget=budget)
            made = mapped.map
            data = {
                "tokens": made.tokens,
                "files": [
                    {"path": path, "symbols": [e.qualname for e in entries]}
                    for path, entries in made.files
                ],
            }
            text = made.text.rstrip("\n") or "the code graph has no symbols"
            return result(_with_warnings(text, mapped.warnings), data)

    def context_resource(self) -> str:
        """The context pack (default budget) as markdown."""
        from gitmem.storage.clock import wall_us

        with self.call("context"):
            return retrieve.context(self.repo, now_us=wall_us()).to_markdown() or "memory is empty"


READ_TOOLS = (
    "search",
    "context",
    "show",
    "log",
    "ask",
    "why",
    "capsule_status",
    "code_find",
    "code_callers",
    "code_callees",
    "code_impact",
    "code_neighbors",
    "code_map",
)
WRITE_TOOLS = ("note", "decide", "ratify", "pin", "checkpoint", "learn")


def build_server(repo: Repo) -> MCPServer:
    """The server for the repository containing ``repo`` (None: the current directory)."""
    from gitmem import __version__

    tools = Tools(repo)
    server: MCPServer = MCPServer(
        SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    for name in READ_TOOLS + WRITE_TOOLS:
        server.add_tool(
            getattr(tools, name),
            name=name,
            annotations=ReadOnly if name in READ_TOOLS else Writes,
            structured_output=False,  # each tool builds its own structured content
        )
    server.resource(
        CONTEXT_URI,
        name="context",
        description="What an agent should know now about this repository: the context pack "
        "(pins, open capsule, checkpoint, decisions, learnings, recent activity).",
        mime_type="text/markdown",
    )(tools.context_resource)
    return server


def run_stdio(repo: Repo) -> None:
    """Serve over stdio until the client closes standard input."""
    from gitmem.ipc.control import ensure_started
    from gitmem.storage.locate import locate

    location = locate(repo)  # not a repository: say so now, not on the first call
    # Claude Code starts its MCP servers with the session: the daemon is then
    # warm before the first prompt's hook needs it.
    ensure_started(location)
    build_server(repo).run("stdio")


def _brief(symbol: Any) -> dict[str, Any]:
    """A code symbol for the model: what names it and where it is."""
    return {"ref": symbol.ref, "kind": symbol.kind, "location": symbol.location}


def _with_warnings(text: str, warnings: tuple[str, ...]) -> str:
    return "\n".join([text, *(f"warning: {w}" for w in warnings)])


def _walked(walked: Any) -> CallToolResult:
    """A traversal, capped at :data:`MAX_CODE_RESULTS` nodes of each list."""
    t = walked.traversal
    labels = {s.id: s.ref for s in t.start}
    labels.update((r.symbol.id, r.symbol.ref) for r in (*t.results, *t.tests))

    def rows(items: Any) -> list[dict[str, Any]]:
        return [
            _brief(r.symbol)
            | {
                "depth": r.depth,
                "via": r.via,
                "route": [labels.get(i, i) for i in r.route[1:-1]],
                "confidence": round(r.confidence, 2),
            }
            for r in items[:MAX_CODE_RESULTS]
        ]

    data: dict[str, Any] = {
        "query": t.query,
        "symbol": _brief(t.start[0]),
        "depth": t.depth,
        "results": rows(t.results),
        "more": max(0, len(t.results) - MAX_CODE_RESULTS),
    }
    if t.query == "impact":
        data["tests"] = rows(t.tests)
        data["more_tests"] = max(0, len(t.tests) - MAX_CODE_RESULTS)
        data["files"] = t.files
    text = t.to_text()
    lines = text.splitlines()
    if len(lines) > 2 * MAX_CODE_RESULTS + 2:
        text = (
            "\n".join(lines[: 2 * MAX_CODE_RESULTS + 2])
            + f"\n… {len(lines) - 2 * MAX_CODE_RESULTS - 2} more lines"
        )
    return result(_with_warnings(text, walked.warnings), data)


def _agent() -> str:
    """The agent scope id of what the server records: ``$GITMEM_AGENT``,
    claude-code inside Claude Code, else ``mcp`` (an MCP client is an agent)."""
    from gitmem.capture.sealer import agent_from_env

    return agent_from_env() or "mcp"


def _log_internal_error(repo: Repo, tool: str, exc: BaseException) -> str | None:
    """Append the traceback, secrets masked, to ``mcp.log`` under the common
    dir; return its path (None when it cannot be written)."""
    try:
        from gitmem.capture.scrub import default_scrubber
        from gitmem.storage.locate import locate

        trace = "".join(traceback.format_exception(exc))
        stamp = datetime.datetime.now(datetime.UTC).isoformat()
        text = default_scrubber().scrub(f"--- {stamp} tool {tool}\n{trace}").text
        directory = locate(repo).state_dir / "log"
        os.makedirs(directory, exist_ok=True)
        path = directory / LOG_NAME
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
        return str(path)
    except Exception:
        return None
