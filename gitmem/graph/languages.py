"""The languages the code graph parses: **one entry per language**, here and
nowhere else.

An entry (:class:`LanguageSpec`) says which files are in the language
(extensions, file names, ``#!`` interpreters), which tree-sitter grammar
parses them, and what to look for, as tree-sitter queries, one per concern:

* ``definitions``: ``@def`` on the definition's node, ``@name`` on its name,
  the kind set with ``(#set! kind …)`` (a :data:`~gitmem.graph.facts.NodeKind`,
  or ``impl`` for a block that adds members to a type named elsewhere:
  Rust ``impl``, Swift ``extension``); optionally ``@receiver`` (a Go
  method's receiver type, which prefixes the qualified name). A
  ``function`` directly inside a class, interface, impl (or whatever the
  entry's ``method_parents`` lists) is a method;
* ``imports``: ``@import`` on the statement; the entry's ``imports_of``
  turns it into :class:`~gitmem.graph.facts.Import` facts (module as
  written, names, alias);
* ``calls``: ``@call`` on the call, ``@name`` on the called name and
  optionally ``@receiver``;
* ``references``: ``@ref.type`` on a name in a type position (kept),
  ``@ref.value`` on a name used as a value (kept when capitalised: see
  :mod:`gitmem.graph.extract`);
* ``inherits``: ``@base`` on a base as written, ``(#set! kind extends)`` or
  ``implements``; ``base`` when the syntax does not say (C#, Swift: the
  entry's ``base_kind`` decides by position and naming convention).

Adding a language is one more entry in :data:`LANGUAGES` (and its grammar
package in ``pyproject.toml``). Grammars are loaded on first use and cached
per process; each language's queries are compiled once per process into one
query (one pass over the tree).
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from gitmem.graph.facts import Import

if TYPE_CHECKING:
    import tree_sitter


# -- helpers the entries use ---------------------------------------------------


def _text(node: tree_sitter.Node | None) -> str:
    if node is None:
        return ""
    raw = node.text
    return raw.decode("utf-8", "replace") if raw else ""


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] in "\"'`<" and text[-1] in "\"'`>":
        return text[1:-1]
    return text


def _named(node: tree_sitter.Node, *types: str) -> list[tree_sitter.Node]:
    return [c for c in node.named_children if c.type in types]


def _descendants(node: tree_sitter.Node, *types: str) -> list[tree_sitter.Node]:
    """Named descendants of the given types, in order, not descending into them."""
    found: list[tree_sitter.Node] = []
    stack = list(reversed(node.named_children))
    while stack:
        n = stack.pop()
        if n.type in types:
            found.append(n)
        else:
            stack.extend(reversed(n.named_children))
    return found


# -- imports, one function per language that needs one ------------------------


def _python_imports(node: tree_sitter.Node) -> list[Import]:
    line = node.start_point[0] + 1
    if node.type == "import_statement":
        out = []
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                out.append(
                    Import(
                        module=_text(child.child_by_field_name("name")),
                        alias=_text(child.child_by_field_name("alias")),
                        line=line,
                    )
                )
            else:
                out.append(Import(module=_text(child), line=line))
        return out
    # import_from_statement / future_import_statement
    module = _text(node.child_by_field_name("module_name")) or "__future__"
    names: list[str] = []
    alias = ""
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            names.append(_text(child.child_by_field_name("name")))
            # one alias per fact: a renamed name gets its own fact
        else:
            names.append(_text(child))
    if any(c.type == "wildcard_import" for c in node.named_children):
        names.append("*")
    out = []
    plain = [
        n for c, n in zip(node.children_by_field_name("name"), names) if c.type != "aliased_import"
    ]
    if "*" in names:
        plain.append("*")
    if plain:
        out.append(Import(module=module, names=tuple(plain), alias=alias, line=line))
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            out.append(
                Import(
                    module=module,
                    names=(_text(child.child_by_field_name("name")),),
                    alias=_text(child.child_by_field_name("alias")),
                    line=line,
                )
            )
    return out


# -- per-language kind refinements ---------------------------------------------


def _python_kind(node: tree_sitter.Node, kind: str) -> str:
    """A class whose bases include ``Protocol`` is an interface."""
    if kind == "class":
        bases = node.child_by_field_name("superclasses")
        if bases is not None:
            for base in bases.named_children:
                if base.type == "subscript":
                    base = base.child_by_field_name("value") or base
                text = _text(base)
                if text == "Protocol" or text.endswith(".Protocol"):
                    return "interface"
    return kind


# -- the table -----------------------------------------------------------------

ImportsOf = Callable[["tree_sitter.Node"], list[Import]]
KindOf = Callable[["tree_sitter.Node", str], str]
BaseKind = Callable[["tree_sitter.Node", str, int], str]

_UPPER = re.compile(r"_*[A-Z][A-Z0-9_]*\Z")


@dataclass(frozen=True)
class LanguageSpec:
    """One language: its files, its grammar and its queries."""

    name: str
    extensions: tuple[str, ...]
    grammar: tuple[str, str] | None = None  # (module, function returning the language pointer)
    filenames: tuple[str, ...] = ()
    interpreters: tuple[str, ...] = ()  # "#!" interpreters ("python3", "bash", …)
    definitions: str = ""
    imports: str = ""
    calls: str = ""
    references: str = ""
    inherits: str = ""
    imports_of: ImportsOf | None = None
    kind_of: KindOf | None = None  # refines a definition's kind (a Protocol class is an interface)
    base_kind: BaseKind | None = None  # (class node, child kind, position) -> extends/implements
    method_parents: frozenset[str] = frozenset({"class", "interface", "impl"})
    wrappers: frozenset[str] = frozenset()  # nodes around a definition (decorators, export, template)
    comments: frozenset[str] = frozenset({"comment"})
    doc_skip: frozenset[str] = frozenset()  # siblings between a doc comment and its definition
    docstring: str = "comment"  # "python": the body's first string; "comment": leading comments
    constant_name: re.Pattern[str] | None = _UPPER  # a constant's name must match this
    extra: dict[str, str] = field(default_factory=dict)


PYTHON = LanguageSpec(
    name="python",
    extensions=(".py", ".pyi", ".pyw"),
    grammar=("tree_sitter_python", "language"),
    interpreters=("python", "python2", "python3"),
    definitions="""
((class_definition name: (identifier) @name) @def (#set! kind class))
((function_definition name: (identifier) @name) @def (#set! kind function))
((module (expression_statement (assignment left: (identifier) @name) @def)) (#set! kind constant))
((class_definition body: (block (expression_statement (assignment left: (identifier) @name) @def)))
  (#set! kind constant))
((type_alias_statement left: (type (identifier) @name)) @def (#set! kind type))
""",
    imports="""
(import_statement) @import
(import_from_statement) @import
(future_import_statement) @import
""",
    calls="""
(call function: (identifier) @name) @call
(call function: (attribute object: (_) @receiver attribute: (identifier) @name)) @call
(call function: (list_splat (identifier) @name)) @call
(call function: (list_splat (attribute object: (_) @receiver attribute: (identifier) @name))) @call
(call function: (parenthesized_expression (identifier) @name)) @call
(call function: (parenthesized_expression
  (attribute object: (_) @receiver attribute: (identifier) @name))) @call
""",
    references="""
(type (identifier) @ref.type)
(type (attribute) @ref.type)
(decorator (identifier) @ref.type)
(decorator (attribute) @ref.type)
(argument_list (identifier) @ref.value)
(argument_list (attribute) @ref.value)
(keyword_argument value: (identifier) @ref.value)
(assignment right: (identifier) @ref.value)
(return_statement (identifier) @ref.value)
""",
    inherits="""
((class_definition superclasses: (argument_list (identifier) @base)) (#set! kind extends))
((class_definition superclasses: (argument_list (attribute) @base)) (#set! kind extends))
((class_definition superclasses: (argument_list (subscript) @base)) (#set! kind extends))
""",
    imports_of=_python_imports,
    kind_of=_python_kind,
    wrappers=frozenset({"decorated_definition"}),
    docstring="python",
)


LANGUAGES: dict[str, LanguageSpec] = {spec.name: spec for spec in (PYTHON,)}
"""Every language, by name."""

MARKDOWN_EXTENSIONS = (".md", ".markdown")

_BY_EXTENSION: dict[str, str] = {}
_BY_FILENAME: dict[str, str] = {}
_BY_INTERPRETER: dict[str, str] = {}
for _spec in LANGUAGES.values():
    for _ext in _spec.extensions:
        _BY_EXTENSION[_ext] = _spec.name
    for _fn in _spec.filenames:
        _BY_FILENAME[_fn] = _spec.name
    for _interp in _spec.interpreters:
        _BY_INTERPRETER[_interp] = _spec.name
for _ext in MARKDOWN_EXTENSIONS:
    _BY_EXTENSION[_ext] = "markdown"


def language_for(path: str, head: bytes = b"") -> str | None:
    """The language of the file at ``path`` (``head``: its first bytes, for a
    ``#!`` line), or None when it is not a language we parse."""
    name = path.rsplit("/", 1)[-1]
    found = _BY_FILENAME.get(name)
    if found:
        return found
    dot = name.rfind(".")
    if dot > 0:
        found = _BY_EXTENSION.get(name[dot:].lower())
        if found:
            return found
    if head.startswith(b"#!"):
        first = head[2:].split(b"\n", 1)[0].decode("latin-1").split()
        if first:
            interp = first[0].rsplit("/", 1)[-1]
            if interp == "env":
                args = [a for a in first[1:] if not a.startswith("-")]
                interp = args[0] if args else ""
            found = _BY_INTERPRETER.get(interp)
            if found is None:
                found = _BY_INTERPRETER.get(interp.rstrip("0123456789."))
            return found
    return None


# -- compiled, per process -------------------------------------------------------

CONCERNS = ("definitions", "imports", "calls", "references", "inherits")


@dataclass(frozen=True)
class Compiled:
    """A language's grammar and its one query, with what each pattern is for."""

    spec: LanguageSpec
    language: tree_sitter.Language
    query: tree_sitter.Query
    concern: tuple[str, ...]  # per pattern index: one of CONCERNS
    kind: tuple[str, ...]  # per pattern index: its (#set! kind …), or ""


@cache
def compiled(name: str) -> Compiled:
    """The grammar and query of language ``name``, loaded and compiled once."""
    import tree_sitter

    spec = LANGUAGES[name]
    assert spec.grammar is not None
    module, function = spec.grammar
    language = tree_sitter.Language(getattr(importlib.import_module(module), function)())
    parts: list[tuple[int, str]] = []
    source = ""
    for concern in CONCERNS:
        parts.append((len(source.encode()), concern))
        source += getattr(spec, concern) + "\n"
    query = tree_sitter.Query(language, source)
    concerns: list[str] = []
    kinds: list[str] = []
    for index in range(query.pattern_count):
        start = query.start_byte_for_pattern(index)
        concerns.append([c for offset, c in parts if offset <= start][-1])
        kinds.append(str(query.pattern_settings(index).get("kind") or ""))
    return Compiled(spec, language, query, tuple(concerns), tuple(kinds))


_local = threading.local()


def parser(name: str) -> tree_sitter.Parser:
    """A parser for language ``name`` (one per thread: parsers are not shared)."""
    import tree_sitter

    parsers: dict[str, tree_sitter.Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    found = parsers.get(name)
    if found is None:
        found = parsers[name] = tree_sitter.Parser(compiled(name).language)
    return found
