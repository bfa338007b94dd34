"""``gitmem-capture``: record events from a fresh process, fast.

Reads one event, a JSON array of events, or JSON lines from standard input::

    {"type": "note", "body": {"text": "…"}, "session": "…", "capsule": "…"}

seals them, spools them durably and prints one event id per line. The event
is acknowledged (exit 0) only once its spool file is on disk; a later
``git edda`` command (or ``git edda flush``) commits it into git.

This is the hook path: it imports only the standard library and gitmem's
stdlib-only modules (no pygit2, msgspec, pyarrow, cyclopts…). Exit codes are
those of :class:`gitmem.errors.ExitCode`.
"""

from __future__ import annotations

import json
import sys

from gitmem.capture.sealer import Draft, Sealer
from gitmem.errors import ExitCode, GitmemError, UsageError, exit_code_for
from gitmem.storage import spool
from gitmem.storage.gitconfig import check_writable, get_bool, get_int, read_config
from gitmem.storage.locate import locate
from gitmem.storage.lock import limit_waits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from gitmem.storage.gitconfig import Config
    from gitmem.storage.locate import RepoLocation

_FIELDS = ("type", "body", "session", "agent", "capsule", "branch", "time")
LOCK_WAIT = 1.0  # seconds capture waits for the clock lock before giving up
DEFAULT_MAX_CAPTURE_BYTES = 8 * 1024 * 1024  # edda.maxCaptureBytes


def parse_events(text: str) -> list[Draft]:
    """Drafts from a JSON object, a JSON array, or JSON lines (UsageError on
    anything else: every way JSON can be malformed or hostile ends here)."""
    text = text.strip()
    if not text:
        raise UsageError(
            "no event on standard input",
            'pipe a JSON event such as {"type": "note", "body": {"text": "hi"}}',
        )
    try:
        data: Any = _loads(text)
        items = data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        items = [_loads(line) for line in text.splitlines() if line.strip()]
    if not items:
        raise UsageError("the event list on standard input is empty", "send at least one event")
    drafts = []
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise UsageError(f"event #{n} must be a JSON object with a string 'type'")
        unknown = set(item) - set(_FIELDS)
        if unknown:
            shown = ", ".join(sorted(repr(k[:40]) for k in unknown)[:5])
            raise UsageError(f"unknown event field(s): {shown}", f"allowed: {', '.join(_FIELDS)}")
        # Field values are checked by the sealer (check_draft), as for every draft.
        kwargs = {k: item[k] for k in _FIELDS if k in item and k != "body"}
        drafts.append(Draft(body=item.get("body", {}), **kwargs))
    return drafts


def _loads(text: str) -> Any:
    """``json.loads`` with every failure a UsageError: syntax (JSONDecodeError is
    re-raised for the JSON-lines fallback), integers of more than 4,300 digits
    (ValueError) and nesting deep enough to exhaust the stack (RecursionError)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:
        reason = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise UsageError(f"standard input is not acceptable JSON: {reason}") from None


def read_input(stream: Any, limit: int) -> str:
    """At most ``limit`` bytes of ``stream``; UsageError when there is more
    (a hook must not spend a minute and a gigabyte on one 50 MB event)."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise UsageError(
            f"the input is larger than {limit} bytes",
            "send less, or raise git config edda.maxCaptureBytes",
        )
    try:
        return str(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError("standard input is not UTF-8 text") from None


def capture(text: str | None, cwd: str | None = None, *, stream: Any = None) -> list[str]:
    """Seal and durably spool the events in ``text`` (or read from the binary
    ``stream``, bounded by ``edda.maxCaptureBytes``); return their ids.

    Every event is validated completely before anything is written, so an id
    printed here is one that a flush will commit.
    """
    location = locate(cwd)
    config = read_config(location)
    check_writable(location, config)
    limit = get_int(config, "edda.maxCaptureBytes", DEFAULT_MAX_CAPTURE_BYTES)
    if text is None:
        text = read_input(stream, limit)
    elif len(text) > limit // 4 and len(text.encode("utf-8", "surrogatepass")) > limit:
        raise UsageError(
            f"the input is larger than {limit} bytes",
            "send less, or raise git config edda.maxCaptureBytes",
        )
    try:
        drafts = parse_events(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"standard input is not JSON: {exc}", "send one JSON event per line"
        ) from None
    return spool_drafts(location, config, drafts)


def spool_drafts(location: RepoLocation, config: Config, drafts: Sequence[Draft]) -> list[str]:
    """Seal ``drafts`` (validated, scrubbed, truncated) and write them durably
    to the capture spool in one file; return their ids. The boundary every
    fresh-process capture goes through (``gitmem-capture``, agent hooks)."""
    sealed = Sealer(location, config).seal(drafts)
    spool.write_spool(
        location.state_path,
        [{"envelope": env, "body": body} for env, body in sealed],
        fsync=get_bool(config, "edda.fsync", True),
    )
    return [env["id"] for env, _ in sealed]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    cwd = args[args.index("-C") + 1] if "-C" in args[:-1] else None
    # An agent's tool call waits for us: a stuck lock holder must cost it at
    # most this, and an error (nothing acknowledged), never a hang.
    limit_waits(LOCK_WAIT)
    try:
        ids = capture(None, cwd, stream=sys.stdin.buffer)
    except GitmemError as exc:
        # One line, like `git edda: error: …`: hooks surface only the first line.
        print(f"gitmem-capture: {' '.join(str(exc).split())}", file=sys.stderr)
        return int(exit_code_for(exc))
    except Exception as exc:  # a hook must never dump a traceback on the agent
        print(f"gitmem-capture: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return int(ExitCode.ERROR)
    sys.stdout.write("".join(f"{i}\n" for i in ids))
    return 0


if __name__ == "__main__":
    sys.exit(main())
