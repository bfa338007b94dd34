"""A scripted stand-in for the Anthropic Messages API, so that the real Claude
Code CLI runs offline: it answers ``POST /v1/messages`` from a list of turns,
streamed as server-sent events the way the real API streams them, and records
every request it receives so that a test can assert what reached the model.

Only the agent's own loop consumes the script: a request that offers no
``tools`` (Claude Code has made side requests for titles or quota probes) gets a
short canned answer, so a script does not depend on how many of those a CLI
version makes. Compaction's request for a summary of the conversation (it
offers tools, but asks for text only) gets :data:`COMPACT_SUMMARY`, in the
``<analysis>``/``<summary>`` form the request asks for: version 2.1.330 sends
that request twice for one ``/compact``, so it cannot come from the script. Version 2.1.330 with non-essential traffic off sends nothing but
``POST /v1/messages?beta=true``; with it on, it also sends ``HEAD /api/hello``
first (answered 200 here). ``count_tokens`` is answered; any other path gets
the API's 404 error body.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-scripted"
# How Claude Code's compaction prompt asks for the summary (both its whole-
# conversation and its recent-portion variants, in version 2.1.330).
COMPACT_REQUEST = "Your task is to create a detailed summary of the"
COMPACT_SUMMARY = (
    "<analysis>\nThe user asked for a change; it was made with the tools.\n</analysis>\n\n"
    "<summary>\n1. Primary Request and Intent: SCRIPTED-COMPACT-SUMMARY of the work so far.\n"
    "</summary>"
)


@dataclass(frozen=True)
class Turn:
    """One answer of the model: content blocks and the stop reason."""

    blocks: tuple[dict[str, Any], ...]
    stop_reason: str


_ids = itertools.count(1)


def say(text: str) -> Turn:
    """A turn that answers with ``text`` and ends the agent's loop."""
    return Turn(({"type": "text", "text": text},), "end_turn")


def call(tool: str, text: str = "", /, **tool_input: Any) -> Turn:
    """A turn that calls ``tool`` with ``tool_input`` (optionally after some text)."""
    block = {"type": "tool_use", "id": "", "name": tool}  # numbered by the model
    blocks = ({"type": "text", "text": text},) if text else ()
    return Turn((*blocks, {**block, "input": tool_input}), "tool_use")


@dataclass(frozen=True)
class Request:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None

    @property
    def is_agent_turn(self) -> bool:
        """A request of the agent's loop (it offers tools), not a side request
        nor compaction's request for a summary."""
        return (
            self.method == "POST"
            and self.path.split("?")[0] == "/v1/messages"
            and isinstance(self.body, dict)
            and bool(self.body.get("tools"))
            and not self.is_compaction
        )

    @property
    def is_compaction(self) -> bool:
        """Compaction's request: the last user message asks for a summary of
        the conversation (appended after the conversation it summarises; a
        system reminder may follow it)."""
        messages = self.body.get("messages") if isinstance(self.body, dict) else None
        users = [m for m in messages or [] if isinstance(m, dict) and m.get("role") == "user"]
        if not users:
            return False
        content = users[-1].get("content")
        blocks = [content] if isinstance(content, str) else content or []
        texts = [b if isinstance(b, str) else b.get("text", "") for b in blocks]
        return any(isinstance(t, str) and COMPACT_REQUEST in t for t in texts)


@dataclass
class ScriptedModel:
    """The server; use as a context manager. ``url`` goes to ANTHROPIC_BASE_URL."""

    script: list[Turn] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    final: Turn = field(default_factory=lambda: say("(end of script)"))
    summary: Turn = field(default_factory=lambda: say(COMPACT_SUMMARY))

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        # Tool-use ids numbered per model, so that a run's payloads are the
        # same whichever tests ran before it in the process.
        numbers = itertools.count(1)
        self.script = [
            Turn(
                tuple(
                    {**b, "id": b["id"] or f"toolu_scripted_{next(numbers):02d}"}
                    if b["type"] == "tool_use"
                    else b
                    for b in turn.blocks
                ),
                turn.stop_reason,
            )
            for turn in self.script
        ]
        self._pending = list(self.script)
        self._server: ThreadingHTTPServer | None = None

    # -- what tests read -------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "the server is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def turns(self) -> list[Request]:
        """The requests of the agent's loop, in order."""
        return [r for r in self.requests if r.is_agent_turn]

    @property
    def compactions(self) -> list[Request]:
        """Compaction's requests for a summary, in order."""
        return [r for r in self.requests if r.is_compaction]

    @property
    def unused(self) -> list[Turn]:
        """Script turns the CLI never asked for."""
        return list(self._pending)

    # -- life cycle ------------------------------------------------------

    def __enter__(self) -> ScriptedModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the test reads ``requests`` instead

            def _record(self) -> Request:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                request = Request(self.command, self.path, dict(self.headers), body)
                with model._lock:
                    model.requests.append(request)
                return request

            def _send(self, status: int, payload: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def _not_found(self) -> None:
                error = {
                    "type": "error",
                    "error": {"type": "not_found_error", "message": "scripted"},
                }
                self._send(404, json.dumps(error).encode(), "application/json")

            def do_GET(self) -> None:
                self._record()
                self._not_found()

            def do_HEAD(self) -> None:
                self._record()
                self._send(200, b"", "text/plain")

            def do_POST(self) -> None:
                request = self._record()
                path = request.path.split("?")[0]
                if path == "/v1/messages/count_tokens":
                    self._send(200, b'{"input_tokens": 100}', "application/json")
                elif path == "/v1/messages" and isinstance(request.body, dict):
                    turn = model._next(request)
                    if request.body.get("stream"):
                        self._send(200, _sse(turn), "text/event-stream")
                    else:
                        self._send(200, json.dumps(_message(turn)).encode(), "application/json")
                else:
                    self._not_found()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _next(self, request: Request) -> Turn:
        if request.is_compaction:
            return self.summary
        if not request.is_agent_turn:
            return say("Scripted side answer")
        with self._lock:
            return self._pending.pop(0) if self._pending else self.final


def _message(turn: Turn) -> dict[str, Any]:
    return {
        "id": f"msg_scripted_{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": list(turn.blocks),
        "stop_reason": turn.stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def _sse(turn: Turn) -> bytes:
    """The turn as the Messages API streams it: a start, each block as
    start/delta/stop (tool input as one ``input_json_delta``), the stop reason
    in ``message_delta``, then ``message_stop``."""
    start = {**_message(turn), "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": 10, "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": start})]
    for index, block in enumerate(turn.blocks):
        if block["type"] == "text":
            head: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            head = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"index": index, "content_block": head}),
            ("content_block_delta", {"index": index, "delta": delta}),
            ("content_block_stop", {"index": index}),
        ]
    events += [
        (
            "message_delta",
            {
                "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 10},
            },
        ),
        ("message_stop", {}),
    ]
    return b"".join(
        f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()
        for name, data in events
    )
