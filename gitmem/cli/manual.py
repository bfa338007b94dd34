"""Help for ``git edda``, read from the command definitions: ``git edda help``,
``git edda COMMAND -h`` and the manual pages (``git-edda.1``, ``git-edda-search.1`` …).

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

import difflib
import inspect
import re
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cyclopts import App

from gitmem.cli.root import DEFAULT_COMMON, Common, Output, app
from gitmem.errors import ExitCode, UsageError

PROGRAM = "git edda"
WIDTH = 80  # text help is wrapped to this many columns, whatever the terminal
_NAME_COLUMN = 24  # option names narrower than this share a line with their help


@dataclass(frozen=True)
class Option:
    """One parameter of a command, as a user types it."""

    names: tuple[str, ...]  # "-C", "--repo"; for an argument, its label ("QUERY")
    value: str | None = None  # what follows the name: "N", "PATH", "a|b"; None for a flag
    negatives: tuple[str, ...] = ()  # "--no-explain"
    help: str = ""
    choices: tuple[str, ...] = ()
    default: str | None = None
    repeatable: bool = False
    required: bool = False
    positional: bool = False

    @property
    def label(self) -> str:
        """The names as help shows them: ``-C, --repo REPO``, ``--explain, --no-explain``."""
        if self.positional:
            return self.names[0]
        head = ", ".join(self.names)
        if self.value:
            head += f" {self.value}"
        return ", ".join([head, *self.negatives])

    @property
    def text(self) -> str:
        """The help text, then what the definition adds: choices, required,
        repeatable, default."""
        parts = [self.help] if self.help else []
        if self.positional and self.choices:
            parts.append(f"One of: {', '.join(self.choices)}.")
        if self.positional and self.required:
            parts.append("Required.")
        if self.repeatable and not self.positional and "repeat" not in self.help:
            parts.append("Repeatable.")
        if self.default is not None:
            parts.append(f"Default: {self.default}.")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """What ``git edda help --json`` gives for this option."""
        return {
            "names": list(self.names),
            "value": self.value,
            "negatives": list(self.negatives),
            "help": self.help,
            "choices": list(self.choices),
            "default": self.default,
            "repeatable": self.repeatable,
            "required": self.required,
            "positional": self.positional,
        }


@dataclass(frozen=True)
class Command:
    """A command (or the program itself, whose path is empty) as help describes it."""

    path: tuple[str, ...]
    summary: str
    description: str = ""  # the docstring after its first paragraph, lines as written
    arguments: tuple[Option, ...] = ()
    options: tuple[Option, ...] = ()
    subcommands: tuple[Command, ...] = ()

    @property
    def name(self) -> str:
        """``git edda capsule open``."""
        return " ".join((PROGRAM, *self.path))

    @property
    def page(self) -> str:
        """The manual page's name: ``git-edda-capsule`` for ``capsule`` and ``capsule open``."""
        return "-".join(["git-edda", *self.path[:1]])

    @property
    def usage(self) -> str:
        """``git edda search [OPTIONS] QUERY``."""
        if self.subcommands:
            return f"{self.name} COMMAND"
        words = [self.name]
        if self.options:
            words.append("[OPTIONS]")
        for arg in self.arguments:
            label = arg.names[0] + ("..." if arg.repeatable else "")
            words.append(label if arg.required else f"[{label}]")
        return " ".join(words)

    def leaves(self) -> Iterator[Command]:
        """This command, or the commands under it, that run something."""
        if not self.subcommands:
            yield self
        for sub in self.subcommands:
            yield from sub.leaves()

    def to_json(self) -> dict[str, Any]:
        """What ``git edda help [COMMAND] --json`` prints."""
        return {
            "command": list(self.path),
            "usage": self.usage,
            "summary": self.summary,
            "description": self.description,
            "arguments": [a.to_json() for a in self.arguments],
            "options": [o.to_json() for o in self.options],
            "commands": [c.to_json() for c in self.subcommands],
        }


# ---------------------------------------------------------------------------
# Reading the definitions


def _docstring(sub: App) -> tuple[str, str]:
    """(first paragraph joined on one line, the rest) of a command's docstring,
    without a numpydoc ``Parameters`` section (cyclopts reads that for the options)."""
    func = sub.default_command
    text = inspect.getdoc(func) if func is not None else None
    if text is None:
        text = inspect.cleandoc(sub.help or "")
    text = re.split(r"^Parameters\n-{3,}\n", text, maxsplit=1, flags=re.M)[0].strip()
    first, _, rest = text.partition("\n\n")
    return " ".join(first.split()), rest.strip()


def _value_name(argument: Any) -> str | None:
    """What follows an option on the command line, from its definition."""
    count, _ = argument.token_count()
    if count == 0:
        return None
    if argument.parameter.metavar:
        return str(argument.parameter.metavar)
    choices = argument.get_choices()
    if choices:
        return "|".join(choices)
    hint = argument.hint
    if hint is int or "int" in {getattr(a, "__name__", "") for a in getattr(hint, "__args__", ())}:
        return "N"
    if hint is Path or Path in getattr(hint, "__args__", ()):
        return "PATH"
    return str(argument.field_info.name).upper()


def _default(argument: Any) -> str | None:
    """The default worth telling: not for flags, and not an absent value."""
    value = argument.field_info.default
    if argument.token_count()[0] == 0 or value is None or value in ("", inspect.Parameter.empty):
        return None
    return str(value)


def _option(argument: Any) -> Option:
    count, many = argument.token_count()
    negatives = tuple(argument.negatives)
    positional = (
        argument.index is not None or argument.field_info.kind is inspect.Parameter.VAR_POSITIONAL
    )
    names: tuple[str, ...]
    if positional:
        names = (str(argument.field_info.name).upper(),)
    else:
        given = [n for n in argument.names if n not in negatives]
        # git's order: the short name first (-C, --repo).
        names = tuple(sorted(given, key=lambda n: n.startswith("--")))
    return Option(
        names=names,
        value=None if positional else _value_name(argument),
        # Only a negative that does something: a flag's --no-X when the flag
        # is on by default. cyclopts also makes --no-X for flags that are off
        # (--no-no-hooks) and --empty-X for list options, which mean what
        # leaving the option out means.
        negatives=negatives if count == 0 and argument.field_info.default is True else (),
        choices=tuple(argument.get_choices() or ()),
        help=" ".join((argument.parameter.help or "").split()),
        default=_default(argument),
        repeatable=bool(many),
        required=bool(argument.required),
        positional=positional,
    )


def describe(root: App = app, path: Sequence[str] = (), *, options: bool = True) -> Command:
    """The command at ``path`` under ``root`` (the program itself for ``()``);
    without ``options``, summaries only (reading the options of every command
    takes cyclopts half a second)."""
    node = _node(root, path)
    summary, description = _docstring(node)
    if node.default_command is None:
        subs = tuple(
            describe(root, (*path, name), options=options) for name in _command_names(node)
        )
        return Command(tuple(path), summary, description, subcommands=subs)
    if not options:
        return Command(tuple(path), summary, description)
    params = [
        _option(a)
        for a in node.assemble_argument_collection(parse_docstring=True).filter_by(show=True)
    ]
    return Command(
        tuple(path),
        summary,
        description,
        arguments=tuple(o for o in params if o.positional),
        options=tuple(o for o in params if not o.positional),
    )


def _node(root: App, path: Sequence[str]) -> App:
    node = root
    for word in path:
        node = node[word]
    return node


def _command_names(node: App) -> list[str]:
    """The visible subcommands of ``node``, sorted (no --help/--version)."""
    return sorted(n for n in node if not n.startswith("-") and node[n].show)


def resolve(words: Sequence[str], root: App = app) -> Command:
    """The command ``words`` names (``["capsule", "open"]``), or a usage error."""
    node: App = root
    path: list[str] = []
    for word in words:
        listing = " ".join(["git edda help", *path])
        if node.default_command is not None:
            raise UsageError(f"'{' '.join(path)}' has no subcommand {word!r}", f"see '{listing}'")
        names = _command_names(node)
        if word not in names:
            close = difflib.get_close_matches(word, names, n=1)
            guess = f"; did you mean '{' '.join([*path, close[0]])}'?" if close else ""
            raise UsageError(
                f"{word!r} is not a {' '.join([PROGRAM, *path])} command",
                f"'{listing}' lists them{guess}",
            )
        node, path = node[word], [*path, word]
    return describe(root, path)


def command_words(argv: Sequence[str], root: App = app) -> list[str]:
    """The longest run of leading words in ``argv`` that names a command
    (``["capsule", "open"]`` for ``capsule open KIND --intent x``)."""
    node: App = root
    path: list[str] = []
    for word in argv:
        if node.default_command is not None or word not in _command_names(node):
            break
        node, path = node[word], [*path, word]
    return path


def help_request(argv: Sequence[str]) -> list[str] | None:
    """``help`` arguments when ``argv`` asks for help with ``-h``/``--help``
    (anywhere before ``--``, as cyclopts reads them), else None.

    ``git edda --help`` never gets here: git turns it into ``git help edda``
    (the manual page); ``git edda -h`` and ``git edda COMMAND --help`` do."""
    args = list(argv)
    if "--" in args:
        args = args[: args.index("--")]
    if "-h" not in args and "--help" not in args:
        return None
    words = []
    for arg in args:
        if arg.startswith("-"):
            break
        words.append(arg)
    path = command_words(words)
    if len(path) < len(words) and _node(app, path).default_command is None:
        resolve(words)  # a word that is not a command where one belongs: say so
    return ["help", *path, *(["--json"] if "--json" in args else [])]


# ---------------------------------------------------------------------------
# Text for the terminal


def _rows(options: Sequence[Option], indent: str = "    ") -> list[str]:
    lines = []
    body = " " * (len(indent) + _NAME_COLUMN + 2)
    for opt in options:
        label = indent + opt.label
        if len(opt.label) <= _NAME_COLUMN and opt.text:
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
        '.\\" Generated from the command definitions by gitmem.cli.manual: do not edit.',
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
