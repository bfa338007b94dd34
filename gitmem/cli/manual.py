"""Help for ``git edda`` on the terminal: ``git edda help [COMMAND]`` and
``git edda COMMAND -h``, read from the command definitions
(:mod:`gitmem.cli.introspect`); the manual pages are :mod:`gitmem.cli.roff`.

Everything here is derived from the cyclopts app (names, options, defaults,
choices, docstrings), so help cannot say one thing while a command does
another. The manual pages in ``man/man1`` are copies of :func:`man_pages`
checked by a test; ``python tools/manpages.py DIR`` rewrites them.

git turns ``git edda --help`` into ``git help edda``, which runs ``man
git-edda``; man-db searches ``BIN/../share/man`` for every ``BIN`` on
``PATH``, where installing the wheel puts the pages next to the ``git-edda``
script that git itself found on ``PATH``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from cyclopts import App

from gitmem.cli.introspect import (
    NAME_COLUMN,
    PROGRAM,
    WIDTH,
    Command,
    Option,
    describe,
    resolve,
)
from gitmem.cli.root import DEFAULT_COMMON, Common, Output, app
from gitmem.errors import ExitCode

# ---------------------------------------------------------------------------
# Text for the terminal


def _rows(options: Sequence[Option], indent: str = "    ") -> list[str]:
    lines = []
    body = " " * (len(indent) + NAME_COLUMN + 2)
    for opt in options:
        label = indent + opt.label
        if len(opt.label) <= NAME_COLUMN and opt.text:
            lines += _wrap(opt.text, f"{label:<{len(body)}}", body)
            continue
        lines.append(label)
        if opt.text:
            lines += _wrap(opt.text, body, body)
    return lines


def _wrap(text: str, first: str, rest: str) -> list[str]:
    # Not at hyphens: option names and "claude-code" stay whole.
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=first,
        subsequent_indent=rest,
        break_on_hyphens=False,
        break_long_words=False,
    )


def text_help(cmd: Command) -> str:
    """``git edda help COMMAND``: usage, description, arguments and options."""
    lines = [f"usage: {cmd.usage}", "", *_wrap(cmd.summary, "", "")]
    if cmd.description:
        lines += ["", *cmd.description.splitlines()]
    if cmd.arguments:
        lines += ["", "arguments:", *_rows(cmd.arguments)]
    if cmd.options:
        lines += ["", "options:", *_rows(cmd.options)]
    for sub in cmd.subcommands:
        lines += ["", "", text_help(sub)]
    return "\n".join(lines)


def common_options(root: App = app) -> tuple[Option, ...]:
    """The options every command takes (``--json``, ``-C/--repo``): those of
    ``help``, which takes nothing else (a test checks every command has them)."""
    return describe(root, ("help",)).options


def text_overview(program: Command, common: Sequence[Option]) -> str:
    """``git edda help``: every command with its one-line description."""
    flags = " ".join(f"[{o.names[0]}{' ' + o.value if o.value else ''}]" for o in common)
    lines = [
        " ".join(w for w in ("usage:", PROGRAM, flags, "COMMAND [ARGS]") if w),
        f"       {PROGRAM} help [COMMAND]",
        "",
        *_wrap(program.summary, "", ""),
        "",
        "commands:",
    ]
    leaves = list(program.leaves())
    column = max(len(" ".join(c.path)) for c in leaves) + 2
    for cmd in leaves:
        name = f"   {' '.join(cmd.path):<{column}}"
        lines += _wrap(cmd.summary, name, " " * len(name))
    if common:
        lines += ["", "options every command takes (before or after the command):", *_rows(common)]
    lines += [
        "",
        f"'{PROGRAM} help COMMAND' (or '{PROGRAM} COMMAND -h') shows a command's options;",
        f"'{PROGRAM} --help' and 'man git-edda-COMMAND' show the manual pages.",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The command


@app.command(name="help")
def help_(*command: str, common: Common = DEFAULT_COMMON) -> Output:
    """Show help: every command with a one-line description, or one COMMAND's
    usage, options and description.

    'git edda COMMAND -h' prints the same; 'git edda --help' and
    'man git-edda-COMMAND' show the manual pages.

    Parameters
    ----------
    command
        The command (two words for a capsule command: capsule open).
    """
    if not command:
        program = describe(options=False)
        return Output(program.to_json(), text_overview(program, common_options()))
    cmd = resolve(command)
    return Output(cmd.to_json(), text_help(cmd), ExitCode.OK)


__all__ = ["common_options", "help_", "text_help", "text_overview"]
