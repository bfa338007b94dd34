"""What the ``git edda`` commands are, read from their cyclopts definitions:
names, usage, options with their help text, defaults and choices.

Help (:mod:`gitmem.cli.manual`) and the manual pages (:mod:`gitmem.cli.roff`)
are rendered from these descriptions, so they cannot say one thing while a
command does another.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cyclopts import App

from gitmem.cli.root import app
from gitmem.errors import UsageError

PROGRAM = "git edda"
WIDTH = 80  # text help is wrapped to this many columns, whatever the terminal
NAME_COLUMN = 24  # option names narrower than this share a line with their help


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
