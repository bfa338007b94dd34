"""Transcript ingest: the assistant's own words, from Claude Code's transcript.
Standard library only (it runs on Stop, SessionEnd and PreCompact).

The transcript (``transcript_path``) is JSONL: one object per line, the
assistant's lines being ``{"type": "assistant", "uuid", "message": {"id",
"role": "assistant", "content": [blocks]}}``, one line per content block.
Only ``text`` blocks are recorded (observation ``message``, tool
``assistant``): thinking, tool calls and tool results are not the
assistant's words, and tool calls are recorded by their own hooks.

The file is read as a delta from a cursor kept per session in
``<state>.cursor.json``: the byte offset after the last complete line read,
the file's identity (path, device, inode), its size then, and a digest of the
bytes just before the offset. A file that was replaced (another inode), that
shrank below the offset, or whose bytes before the offset changed is read
again from its start; the digests of the lines already recorded (their
``uuid``) keep that from recording anything twice. A partial last line is
left for the next call; a line over :data:`MAX_LINE_BYTES` is skipped, and
one call reads at most :data:`MAX_READ_BYTES` (the rest waits for the next).

Stop's ``last_assistant_message`` is the final message, usually also the
transcript's last text: recorded only when the transcript does not end with
it yet, and then remembered (``pending``) so that the line, once written,
is not recorded again.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat

from gitmem.agents import state
from gitmem.storage import files, lock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitmem.agents.hooks import HookCall
    from gitmem.capture.sealer import Draft

MAX_READ_BYTES = 4 * 1024 * 1024  # per call: a hook must stay quick
MAX_LINE_BYTES = 1024 * 1024  # a longer line is an image or a dump, not words
SEEN_KEPT = 4096  # digests of recorded lines kept (a reread finds them)
GUARD_BYTES = 256  # bytes before the offset whose digest tells a rewritten file
LOCK_WAIT = 2.0  # Stop runs in the background, SessionEnd may start meanwhile


def ingest(call: HookCall, final: str | None = None) -> int:
    """Record the assistant's text added to the session's transcript since
    the last call, and ``final`` (Stop's last message) unless the transcript
    has it; return how many messages were recorded.

    The drafts are spooled before the cursor moves: a process killed between
    the two records a message twice rather than losing it."""
    session = call.session
    if session is None:
        return 0
    where = call.payload.get("transcript_path")
    path = where if isinstance(where, str) and os.path.isabs(where) and "\0" not in where else None
    if path is None and not (final and final.strip()):
        return 0
    lock_path = state.path(call.location, session, ".lock")
    os.makedirs(os.path.dirname(lock_path), exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        lock.acquire(fd, lock_path, LOCK_WAIT, "transcript cursor")
        cursor = _load(call, session)
        entries: list[tuple[str, str, str]] = []
        if path is not None:
            entries, cursor = read_delta(path, cursor)
        seen = _strings(cursor.get("seen"))
        known = set(seen)
        pending = cursor.get("pending")
        last = _strings(cursor.get("last"))
        drafts: list[tuple[str, Draft]] = []
        group_id, group = "", ""
        for key, message_id, text in entries:
            mark = _digest(key)
            if mark in known:
                continue
            known.add(mark)
            seen.append(mark)
            group = group + _norm(text) if message_id and message_id == group_id else _norm(text)
            group_id = message_id
            last = [_digest(_norm(text)), _digest(group)]
            if pending in last:  # Stop recorded this message before the line was written
                pending = None
                drafts = [(m, d) for m, d in drafts if not (m and m == message_id)]
                continue
            drafts.append((message_id, call.translator.message(call.payload, text)))
        if final and final.strip():
            mark = _digest(_norm(final))
            if mark not in last:
                drafts.append(("", call.translator.message(call.payload, final)))
                pending = mark
                last = [mark]
        call.capture([d for _, d in drafts])
        cursor.update(seen=seen[-SEEN_KEPT:], last=last, pending=pending)
        _save(call, session, cursor)
        return len(drafts)
    finally:
        os.close(fd)


def read_delta(
    path: str, cursor: dict[str, Any]
) -> tuple[list[tuple[str, str, str]], dict[str, Any]]:
    """The assistant's texts in the complete lines after ``cursor``, as
    ``(line key, message id, text)``, and the cursor after them."""
    try:
        read = _read_from_cursor(path, cursor)
    except OSError:
        return [], cursor
    if read is None:
        return [], cursor
    info, start, skipping, data = read
    end = data.rfind(b"\n")
    lines: list[bytes] = []
    if end < 0:
        # No complete line: a partial one waits, unless it fills a whole read
        # (a line too long to keep: skipped up to its end, next time).
        consumed = len(data) if len(data) == MAX_READ_BYTES else 0
        skipping = skipping or consumed > 0
    else:
        consumed = end + 1
        lines = data[:consumed].split(b"\n")[:-1]
        if skipping:
            lines, skipping = lines[1:], False  # the end of the over-long line
    out = []
    for line in lines:
        found = _text_of(line) if len(line) <= MAX_LINE_BYTES else None
        if found is not None:
            out.append(found)
    new_offset = start + consumed
    guard_from = max(0, consumed - GUARD_BYTES)
    if new_offset - start >= GUARD_BYTES or start == 0:
        guard = _digest_bytes(data[guard_from:consumed])
    else:  # a short step: the guard reaches back before this read
        guard = _guard(path, new_offset)
    return out, dict(
        cursor,
        path=path,
        dev=info.st_dev,
        ino=info.st_ino,
        size=info.st_size,
        offset=new_offset,
        guard=guard,
        skip=skipping,
    )


def _read_from_cursor(
    path: str, cursor: dict[str, Any]
) -> tuple[os.stat_result, int, bool, bytes] | None:
    """The file's identity, where to start, whether an over-long line is being
    skipped, and up to :data:`MAX_READ_BYTES` from there (None: not a file)."""
    # O_NONBLOCK: a FIFO named as the transcript must not hang the hook.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        offset = cursor.get("offset")
        same = (
            cursor.get("path") == path
            and cursor.get("dev") == info.st_dev
            and cursor.get("ino") == info.st_ino
            and isinstance(offset, int)
            and 0 <= offset <= info.st_size
        )
        start = offset if same and isinstance(offset, int) else 0
        if start:
            handle.seek(max(0, start - GUARD_BYTES))
            if _digest_bytes(handle.read(min(start, GUARD_BYTES))) != cursor.get("guard"):
                start = 0  # rewritten in place: what we read before is gone
        skipping = bool(cursor.get("skip")) and start > 0
        handle.seek(start)
        return info, start, skipping, handle.read(MAX_READ_BYTES)


def _guard(path: str, offset: int) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, offset - GUARD_BYTES))
            return _digest_bytes(handle.read(min(offset, GUARD_BYTES)))
    except OSError:
        return ""


def _text_of(line: bytes) -> tuple[str, str, str] | None:
    """``(key, message id, text)`` of an assistant line with text, else None."""
    try:
        item = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(item, dict) or item.get("type") != "assistant":
        return None
    if item.get("isSidechain") is True:  # a subagent's words: SubagentStop has them
        return None
    message = item.get("message")
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        return None
    parts = [
        b["text"]
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    text = "\n\n".join(p for p in parts if p.strip()).strip()
    if not text:
        return None
    uuid = item.get("uuid")
    key = uuid if isinstance(uuid, str) and 0 < len(uuid) <= 200 else _digest_bytes(line)
    mid = message.get("id")
    return key, mid if isinstance(mid, str) else "", text


def _strings(value: Any) -> list[str]:
    return [s for s in value if isinstance(s, str)] if isinstance(value, list) else []


def _norm(text: str) -> str:
    """Text without its whitespace: Stop's message and the transcript's blocks
    may join the same words differently."""
    return "".join(text.split())


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _load(call: HookCall, session: str) -> dict[str, Any]:
    try:
        with open(state.path(call.location, session, ".cursor.json"), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(call: HookCall, session: str, cursor: dict[str, Any]) -> None:
    path = state.path(call.location, session, ".cursor.json")
    files.write_atomic(path, json.dumps(cursor, sort_keys=True).encode("utf-8"), fsync=False)
