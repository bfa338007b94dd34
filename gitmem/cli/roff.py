"""The manual pages (roff, man(7) macros): ``git-edda.1`` and one page per
command, rendered from the command descriptions (:mod:`gitmem.cli.introspect`).

The pages in ``man/man1`` are copies of :func:`man_pages` checked by a test;
``python tools/manpages.py DIR`` rewrites them. git turns ``git edda --help``
into ``git help edda``, which runs ``man git-edda``; man-db searches
``BIN/../share/man`` for every ``BIN`` on ``PATH``, where installing the
wheel puts the pages next to the ``git-edda`` script git itself found.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cyclopts import App

from gitmem.cli.introspect import Command, Option, describe
from gitmem.cli.manual import common_options
from gitmem.cli.root import app
from gitmem.errors import ExitCode

# ---------------------------------------------------------------------------
# Manual pages (roff, man(7) macros)


def _roff(text: str) -> str:
    r"""``text`` safe as roff text: backslashes escaped, hyphens as ``\-`` (an
    ASCII hyphen-minus in output, so options copy and search as typed), and no
    line read as a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line for line in text.split("\n"))


def _roff_paragraphs(text: str) -> list[str]:
    """Docstring prose as roff paragraphs: lines are filled, except that a
    line starting with an option (``--pre-push also …``) starts a new line,
    as the docstrings write them."""
    out: list[str] = []
    for para in text.split("\n\n"):
        out.append(".PP")
        for line in para.splitlines():
            line = line.strip()
            if line.startswith("-") and out[-1] != ".PP":
                out.append(".br")
            out.append(_roff(line))
    return out


def _roff_label(opt: Option) -> str:
    if opt.positional:
        return f"\\fI{_roff(opt.names[0])}\\fR"
    head = ", ".join(f"\\fB{_roff(n)}\\fR" for n in opt.names)
    if opt.value:
        head += f" \\fI{_roff(opt.value)}\\fR"
    return ", ".join([head, *(f"\\fB{_roff(n)}\\fR" for n in opt.negatives)])


def _roff_items(options: Sequence[Option]) -> list[str]:
    out = []
    for opt in options:
        out += [".TP", _roff_label(opt)]
        out.append(_roff(opt.text) if opt.text else "\\&")
    return out


def _roff_synopsis(cmd: Command) -> str:
    """The usage line with the command in bold and placeholders in italics."""
    words = [f"\\fB{_roff(cmd.name)}\\fR"]
    if cmd.subcommands:
        words.append("\\fICOMMAND\\fR")
    elif cmd.options:
        words.append("[\\fIOPTIONS\\fR]")
    for arg in cmd.arguments:
        label = f"\\fI{_roff(arg.names[0])}\\fR" + ("..." if arg.repeatable else "")
        words.append(label if arg.required else f"[{label}]")
    return " ".join(words)


def _header(page: str, summary: str) -> list[str]:
    return [
        '.\\" Generated from the command definitions by gitmem.cli.roff: do not edit.',
        '.\\" Regenerate with: python tools/manpages.py man/man1',
        f'.TH "{_roff(page.upper())}" "1" "" "git\\-edda" "Git Edda Manual"',
        ".nh",  # no hyphenation: option names must read as typed
        ".ad l",  # ragged right, as git's pages are
        ".SH NAME",
        f"{_roff(page)} \\- {_roff(summary)}",
    ]


def man_page(cmd: Command) -> str:
    """The manual page of one command (a command with subcommands describes them all)."""
    leaves = list(cmd.leaves())
    out = _header(cmd.page, cmd.summary)
    out += [".SH SYNOPSIS", ".nf"]
    out += [_roff_synopsis(leaf) for leaf in leaves]
    out += [".fi", ".SH DESCRIPTION", _roff(cmd.summary)]
    if cmd.description:
        out += _roff_paragraphs(cmd.description)
    if cmd.subcommands:
        out.append(".SH COMMANDS")
        for sub in leaves:
            out += [".SS " + _roff(" ".join(sub.path)), _roff(sub.summary)]
            if sub.description:
                out += _roff_paragraphs(sub.description)
            if sub.arguments or sub.options:
                heading = "Arguments and options:" if sub.arguments else "Options:"
                out += [".PP", heading, *_roff_items(sub.arguments + sub.options)]
    else:
        if cmd.arguments:
            out += [".SH ARGUMENTS", *_roff_items(cmd.arguments)]
        if cmd.options:
            out += [".SH OPTIONS", *_roff_items(cmd.options)]
    out += [".SH SEE ALSO", "\\fBgit\\-edda\\fR(1)"]
    return "\n".join(out) + "\n"


_EXIT_STATUS = {
    ExitCode.OK: "Success.",
    ExitCode.ERROR: "An error: git failed, or an internal error (logged to <git common dir>/edda/log/cli.log).",
    ExitCode.USAGE: "Bad arguments or bad input data, or a repository gitmem refuses.",
    ExitCode.NOT_FOUND: "No such event, capsule, ref or repository.",
    ExitCode.VERIFY_FAILED: "verify found problems, or a pull refused invalid memory from a remote.",
    ExitCode.CONFLICT: "An import conflict, or a concurrent update that did not settle.",
    ExitCode.FORMAT: "Memory written by a newer, incompatible gitmem.",
    ExitCode.DEPENDENCY: "A dependency is missing or unusable.",
    ExitCode.REMOTE: "A git remote could not be reached, or refused an update.",
}


def man_page_program(program: Command, common: Sequence[Option]) -> str:
    """``git-edda(1)``: what gitmem is, every command, the common options, exit codes."""
    out = _header("git-edda", program.summary)
    flags = " ".join(f"[{o.names[0]}{' ' + o.value if o.value else ''}]" for o in common)
    out += [
        ".SH SYNOPSIS",
        ".nf",
        f"\\fBgit edda\\fR {_roff(flags)} \\fICOMMAND\\fR [\\fIARGS\\fR]",
        "\\fBgit edda help\\fR [\\fICOMMAND\\fR]",
        "\\fBgit edda\\fR \\fICOMMAND\\fR \\fB\\-h\\fR",
        ".fi",
        ".SH DESCRIPTION",
        _roff(program.summary),
        ".PP",
        _roff(
            "Every command is described in its own page, git-edda-COMMAND(1); "
            "'git edda help COMMAND' prints the same without man."
        ),
        ".SH COMMANDS",
    ]
    for cmd in program.leaves():
        out += [".TP", f"\\fB{_roff(' '.join(cmd.path))}\\fR", _roff(cmd.summary)]
    if common:
        out += [
            ".SH OPTIONS",
            _roff("Every command takes these, before or after the command."),
            *_roff_items(common),
        ]
    out.append(".SH EXIT STATUS")
    for code in ExitCode:
        out += [".TP", str(int(code)), _roff(_EXIT_STATUS[code])]
    pages = sorted({cmd.page for cmd in program.subcommands})
    out += [
        ".SH SEE ALSO",
        ",\n".join(f"\\fB{_roff(p)}\\fR(1)" for p in pages) + ",",
        "\\fBgit\\fR(1)",
    ]
    return "\n".join(out) + "\n"


def man_pages(root: App = app) -> dict[str, str]:
    """Every manual page, by file name (``git-edda.1``, ``git-edda-search.1`` …)."""
    program = describe(root)
    pages = {"git-edda.1": man_page_program(program, common_options(root))}
    for cmd in program.subcommands:
        pages[f"{cmd.page}.1"] = man_page(cmd)
    return pages


def write_man_pages(directory: Path, root: App = app) -> list[Path]:
    """Write :func:`man_pages` into ``directory``, removing pages of commands
    that no longer exist; return the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    pages = man_pages(root)
    for stale in directory.glob("git-edda*.1"):
        if stale.name not in pages:
            stale.unlink()
    written = []
    for name, text in pages.items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
