"""What the daemon does for a request: a hook call, or a command line.

Each runs the same code its client would have run in-process (the hook
handler, :func:`gitmem.cli.main.run`), in the client's working directory
and with its per-call environment (:data:`gitmem.ipc.client.REQUEST_ENV`),
and answers what that code would have written.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import os
from collections.abc import Iterator
from typing import Any

from gitmem.ipc.client import FORWARDED, REQUEST_ENV


class BadRequest(Exception):
    """A request without the fields its op needs."""


def _text(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str):
        raise BadRequest(f"{key} is not a string")
    return value


def _words(request: dict[str, Any], key: str) -> list[str]:
    value = request.get(key)
    if not isinstance(value, list) or not all(isinstance(w, str) for w in value):
        raise BadRequest(f"{key} is not a list of strings")
    return value


@contextlib.contextmanager
def as_client(request: dict[str, Any]) -> Iterator[None]:
    """Run in the client's directory with its per-call environment."""
    environ = request.get("environ")
    if not isinstance(environ, dict):
        raise BadRequest("environ is not an object")
    cwd = _text(request, "cwd")
    saved = {k: os.environ.get(k) for k in REQUEST_ENV}
    here = os.getcwd()
    os.chdir(cwd)  # an OSError: the client's directory is gone; it falls back
    try:
        for key in REQUEST_ENV:
            value = environ.get(key)
            if isinstance(value, str) and "\0" not in value:
                os.environ[key] = value
            else:
                os.environ.pop(key, None)
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
        os.chdir(here)


def hook(request: dict[str, Any]) -> dict[str, Any]:
    """``git edda hook AGENT``: the JSON line the hook would print ('' for none)."""
    from gitmem.agents.hooks import hook_output

    agent = _text(request, "agent")
    if agent not in ("claude", "generic"):
        raise BadRequest(f"no hook for agent {agent!r}")
    repo = request.get("repo")
    if repo is not None and not isinstance(repo, str):
        raise BadRequest("repo is not a string")
    try:
        data = base64.b64decode(_text(request, "stdin"), validate=True)
    except binascii.Error as exc:
        raise BadRequest(f"stdin is not base64: {exc}") from None
    with as_client(request):
        out = hook_output(agent, repo, _words(request, "rest"), data)
    return {"ok": True, "stdout": out}


def cli(request: dict[str, Any]) -> dict[str, Any]:
    """A forwarded command line: its exit code, what it wrote, and the text
    it would have shown through the pager (the client runs the pager)."""
    from gitmem.cli.main import run
    from gitmem.cli.terminal import Terminal

    argv = _words(request, "argv")
    if not argv or argv[0] not in FORWARDED:
        raise BadRequest("not a command the daemon runs")
    tty = request.get("tty") is True
    paged: list[tuple[str, str | None]] = []

    def show(text: str, terminal: Terminal, *, page: bool) -> None:
        if page and terminal.pager is not None:
            paged.append((text, terminal.pager))
        else:
            print(text, end="")

    out, err = io.StringIO(), io.StringIO()
    with as_client(request), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(argv, tty=tty, show=show)
    text, pager = paged[0] if paged else ("", None)
    return {
        "ok": True,
        "code": code,
        "stdout": out.getvalue(),
        "stderr": err.getvalue(),
        "paged": text,
        "pager": pager,
    }
