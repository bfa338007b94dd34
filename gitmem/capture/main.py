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
from gitmem.storage.gitconfig import get_bool, read_config
from gitmem.storage.locate import locate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_FIELDS = ("type", "body", "session", "agent", "capsule", "branch", "time")


def parse_events(text: str) -> list[Draft]:
    """Drafts from a JSON object, a JSON array, or JSON lines."""
    text = text.strip()
    if not text:
        raise UsageError(
            "no event on standard input",
            'pipe a JSON event such as {"type": "note", "body": {"text": "hi"}}',
        )
    try:
        data: Any = json.loads(text)
        items = data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        try:
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"standard input is not JSON: {exc}", "send one JSON event per line"
            ) from None
    drafts = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise UsageError("each event must be a JSON object with a string 'type'")
        unknown = set(item) - set(_FIELDS)
        if unknown:
            raise UsageError(
                f"unknown event field(s): {', '.join(sorted(unknown))}",
                f"allowed: {', '.join(_FIELDS)}",
            )
        kwargs = {k: item[k] for k in _FIELDS if k in item and k != "body"}
        drafts.append(Draft(body=item.get("body", {}), **kwargs))
    return drafts


def capture(text: str, cwd: str | None = None) -> list[str]:
    """Seal and durably spool the events in ``text``; return their ids."""
    location = locate(cwd)
    config = read_config(location)
    sealed = Sealer(location, config).seal(parse_events(text))
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
    try:
        ids = capture(sys.stdin.read(), cwd)
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
