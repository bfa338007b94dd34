"""What one file says, before any cross-file resolution: the contract between
the extractors (:mod:`gitmem.graph.extract`, one per language) and the
resolver (:mod:`gitmem.graph.resolve`).

Facts depend only on a blob's bytes, its path's language and
:data:`EXTRACTOR_VERSION`, so they are cached by blob id: a blob parsed once
is never parsed again (another branch, another worktree, a rename).

Conventions:

* lines are 1-based and inclusive; bytes are 0-based offsets, end exclusive;
* ``qualname`` is a definition's dotted path *within its file*
  (``Parser.parse``, ``outer.inner``); the file itself is ``""``;
* ``scope`` names the innermost definition a fact occurs in (``""``: file level);
* names are as written in the source (no case folding).
"""

from __future__ import annotations

from typing import Literal

import msgspec

EXTRACTOR_VERSION = 1
"""Bump when extraction changes what it produces: cached facts of another
version are parsed again."""

NodeKind = Literal[
    "file",  # every indexed file
    "module",  # a package or module that is not a file here (an external import), or a namespace
    "class",  # class, struct, enum, record, object
    "interface",  # interface, trait, protocol
    "type",  # type alias, typedef
    "function",
    "method",  # a function defined directly in a class, interface, impl or object
    "constant",  # a module- or class-level constant (Python: an UPPER_CASE assignment)
    "section",  # a Markdown heading section
]

EdgeKind = Literal[
    "contains",  # file -> its top-level definitions; definition -> nested ones
    "imports",  # file -> file (resolved) or module (external)
    "calls",  # definition (or file, for top-level code) -> definition
    "extends",  # class -> base class (interface -> base interface)
    "implements",  # class -> interface/trait/protocol it implements
    "references",  # a name used but not called
    "documents",  # a doc section -> a symbol it names
]


class Definition(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A symbol defined in the file."""

    name: str
    qualname: str
    kind: NodeKind
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    signature: str = ""  # the header up to the body, whitespace collapsed, at most 200 chars
    doc: str = ""  # docstring or leading comment, at most 500 chars
    parent: str = ""  # qualname of the enclosing definition ("" at file level)


class Import(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``import``/``from``/``require``/``use``/``#include``… as written."""

    module: str  # "os.path", "./util", "github.com/x/y", "stdio.h", "..models"
    names: tuple[str, ...] = ()  # names imported from it (empty: the module itself)
    alias: str = ""  # the local name bound to the module, when renamed
    line: int = 0
    scope: str = ""


class Call(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A call: ``receiver.name(...)`` or ``name(...)`` (``new Name(...)`` too)."""

    name: str  # the called identifier: "baz" in a.b.baz()
    receiver: str = ""  # "a.b", "self", "this", "super", "" for a bare call
    line: int = 0
    scope: str = ""


class Reference(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A name used but not called (a type in an annotation, a function passed
    as a value, a base class is an :class:`Inherit` instead)."""

    name: str
    line: int = 0
    scope: str = ""


class Inherit(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``class child(base)``, ``extends``, ``implements``, ``impl Trait for T``."""

    child: str  # qualname of the subclass (or the implementing type)
    base: str  # the base as written ("Base", "pkg.Base", "Iterator<T>" -> "Iterator")
    kind: Literal["extends", "implements"] = "extends"
    line: int = 0


class Mention(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A code-like name in a doc section (``inline code`` or a CamelCase or
    snake_case word), which may document a symbol."""

    name: str
    section: str  # qualname of the section
    line: int = 0


class FileFacts(msgspec.Struct, forbid_unknown_fields=True):
    """Everything extracted from one blob."""

    language: str  # "python", "javascript", …, "markdown", or "text" (a file node only)
    lines: int
    definitions: list[Definition] = []
    imports: list[Import] = []
    calls: list[Call] = []
    references: list[Reference] = []
    inherits: list[Inherit] = []
    mentions: list[Mention] = []
    error: str = ""  # why the file could not be parsed (it is still a file node)
    version: int = EXTRACTOR_VERSION
