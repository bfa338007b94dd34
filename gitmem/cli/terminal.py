"""Where human output goes: colour and the pager, chosen as git chooses them.

**Colour** follows ``color.edda``, else ``color.ui`` (git's values: ``auto``,
the default, colours only a terminal or a pager git started; ``always``;
``never``; ``true`` means ``auto`` and ``false`` ``never``, as in git). A
non-empty ``NO_COLOR`` turns ``auto`` off, as https://no-color.org asks; an
explicit ``always`` in git config still wins. ``TERM=dumb`` gets none.

**The pager** is the first of ``GIT_PAGER``, ``core.pager``, ``PAGER`` and
``less`` (an empty value or ``cat``: no pager), run through the shell with
``LESS=FRX`` and ``LV=-c`` unless those are set, as git runs it. It is used
only when standard output is a terminal, only for commands whose output can
be long (listings, ``show``, search, context packs, ``ask``), never for
``--json``, and not with ``--no-pager`` (``-P``). ``less -F`` quits at once
when the text fits on one screen.

The settings are read in one ``git config`` call before a command runs
(rendering needs to know about colour) and kept here for that one run.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import TextIO

from gitmem.cli.pager import run_pager
from gitmem.memory.describe import SHORT_ID


@dataclass(frozen=True)
class Terminal:
    """How one run's human output is shown."""

    colour: bool = False
    pager: str | None = None  # a shell command; None: write to stdout


PLAIN = Terminal()
_current = PLAIN

_KEYS = r"^(color\.ui|color\.edda|core\.pager)$"
_ALWAYS = ("always",)
_NEVER = ("never", "false", "no", "off", "0")
# An id as listings and packs print it: "[a1b2c3d4e5f6]".
_REF = re.compile(rf"\[([0-9a-f]{{{SHORT_ID}}})\]")


def current() -> Terminal:
    """The settings of the command running now (plain outside a run)."""
    return _current


def use(terminal: Terminal) -> None:
    """Make ``terminal`` the settings rendering consults (main sets, then resets, it)."""
    global _current
    _current = terminal


def _paint(text: str, code: str) -> str:
    return f"\x1b[{code}m{text}\x1b[m" if _current.colour and text else text


def yellow(text: str) -> str:
    """``text`` in yellow when colouring (git's colour for commit ids)."""
    return _paint(text, "33")


def bold(text: str) -> str:
    """``text`` in bold when colouring (headings)."""
    return _paint(text, "1")


def markdown(text: str) -> str:
    """Markdown a library rendered (context packs, ``ask``) with its headings
    bold and its ``[id]`` references yellow, when colouring."""
    if not _current.colour:
        return text
    lines = []
    for line in text.split("\n"):
        if line.startswith("#"):
            lines.append(bold(line))
        else:
            lines.append(_REF.sub(lambda m: "[" + yellow(m.group(1)) + "]", line))
    return "\n".join(lines)


def read_settings(
    repo: str | None, *, paging: bool, stdout: TextIO, tty: bool | None = None
) -> Terminal:
    """The colour and pager for a run on ``repo`` (``-C``; None: the current
    directory) writing to ``stdout`` (a terminal if ``tty``; None: ask
    ``stdout``); ``paging`` False for ``--no-pager``."""
    from gitmem.storage.locate import read_git_output

    tty = _isatty(stdout) if tty is None else tty
    raw = read_git_output(["config", "-z", "--get-regexp", _KEYS], repo or ".")
    config: dict[str, str] = {}
    for record in (raw or b"").decode("utf-8", "replace").split("\0"):
        key, _, value = record.partition("\n")
        if key:
            config[key.lower()] = value  # the last one wins, as in git
    pager = _pager(config) if paging and tty else None
    return Terminal(colour=_colour(config, tty or pager is not None), pager=pager)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def _colour(config: dict[str, str], terminal: bool) -> bool:
    setting = config.get("color.edda", config.get("color.ui", "auto")).strip().lower()
    if setting in _ALWAYS:
        return True
    if setting in _NEVER:
        return False
    if os.environ.get("NO_COLOR"):  # auto, by default or by choice
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    # git sets GIT_PAGER_IN_USE when it started a pager for us (pager.edda).
    return terminal or os.environ.get("GIT_PAGER_IN_USE", "").lower() in ("true", "1")


def _pager(config: dict[str, str]) -> str | None:
    command = os.environ.get("GIT_PAGER")
    if command is None:
        command = config.get("core.pager")
    if command is None:
        command = os.environ.get("PAGER")
    if command is None:
        command = "less"
    return None if not command.strip() or command.strip() == "cat" else command


def write(text: str, terminal: Terminal, *, page: bool) -> None:
    """Write ``text`` (ending in a newline) to stdout, through the pager when
    ``page`` and the run has one; if the pager cannot be started, directly."""
    if not page or terminal.pager is None or not run_pager(text, terminal.pager):
        sys.stdout.write(text)
