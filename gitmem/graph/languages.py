"""The languages the code graph parses: **one entry per language**, here and
nowhere else.

An entry (:class:`LanguageSpec`) says which files are in the language
(extensions, file names, ``#!`` interpreters), which tree-sitter grammar
package parses them, small settings (which nodes wrap a definition, which
comments are docs, which names are built-in types), and what to look for,
as tree-sitter queries, one per concern:

* ``definitions``: ``@def`` on the definition's node, ``@name`` on its name,
  the kind set with ``(#set! kind …)``: a :data:`~gitmem.graph.facts.NodeKind`,
  or ``impl`` for a block that adds members to a type named elsewhere (Rust
  ``impl``, Swift ``extension``), whose name prefixes its members;
  ``(#set! declaration yes)`` marks a declaration without a body; optionally
  ``@receiver``, a Go method's receiver type. A ``function`` directly inside
  a class, interface or impl (or whatever the entry's ``method_parents``
  lists) becomes a method;
* ``imports``: ``@import`` on the statement; the entry's ``imports_of``
  turns it into :class:`~gitmem.graph.facts.Import` facts (module as
  written, names, alias);
* ``calls``: ``@call`` on the call, ``@name`` on the called name, and
  ``@receiver`` on the receiver, or ``@callee`` on an expression whose
  source up to the name is the receiver;
* ``references``: ``@ref.type`` on a name in a type position (kept),
  ``@ref.value`` on a name used as a value (kept when capitalised: see
  :mod:`gitmem.graph.extract`);
* ``inherits``: ``@base`` on a base as written, with ``(#set! kind
  extends)`` or ``implements``, or ``base`` when the syntax does not say
  (C#, Swift: the entry's ``base_kind`` decides).

Adding a language is one more entry in :data:`LANGUAGES` (and its grammar
package in ``pyproject.toml``) plus a fixture project in
``tests/data/code/<language>/``. Grammars are loaded on first use and each
language's queries are compiled once, into one query (one pass over the
tree), and both are kept for the life of the process; parsers are per
thread.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
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


def _line(node: tree_sitter.Node) -> int:
    return node.start_point[0] + 1


def _string(node: tree_sitter.Node | None) -> str:
    """A string literal's value (quotes removed, escapes left as written)."""
    if node is None:
        return ""
    return _unquote(_text(node))


def _split_names(
    module: str, names: list[str], aliased: list[tuple[str, str]], line: int
) -> list[Import]:
    """Facts for ``from module import names, a as b``: one for the plain
    names, one per renamed name (its alias is the local name)."""
    out = []
    if names or not aliased:
        out.append(Import(module=module, names=tuple(names), line=line))
    out.extend(Import(module=module, names=(n,), alias=a, line=line) for n, a in aliased)
    return out


def _python_imports(node: tree_sitter.Node) -> list[Import]:
    line = _line(node)
    if node.type == "import_statement":
        out = []
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                module = _text(child.child_by_field_name("name"))
                alias = _text(child.child_by_field_name("alias"))
                out.append(Import(module=module, alias=alias, line=line))
            else:
                out.append(Import(module=_text(child), line=line))
        return out
    # import_from_statement, future_import_statement
    module = _text(node.child_by_field_name("module_name")) or "__future__"
    names: list[str] = []
    aliased: list[tuple[str, str]] = []
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            name = _text(child.child_by_field_name("name"))
            aliased.append((name, _text(child.child_by_field_name("alias"))))
        else:
            names.append(_text(child))
    if any(c.type == "wildcard_import" for c in node.named_children):
        names.append("*")
    return _split_names(module, names, aliased, line)


def _js_imports(node: tree_sitter.Node) -> list[Import]:
    line = _line(node)
    if node.type == "call_expression":  # require("x"), import("x")
        args = node.child_by_field_name("arguments")
        first = args.named_children[0] if args is not None and args.named_children else None
        module = _string(first) if first is not None and first.type == "string" else ""
        parent = node.parent
        if parent is not None and parent.type == "await_expression":
            parent = parent.parent
        if parent is not None and parent.type == "variable_declarator":
            bound = parent.child_by_field_name("name")
            if bound is not None and bound.type == "identifier":
                return [Import(module=module, alias=_text(bound), line=line)]
            if bound is not None and bound.type == "object_pattern":
                keys = [_text(c.child_by_field_name("key") or c) for c in bound.named_children]
                return [Import(module=module, names=tuple(keys), line=line)]
        return [Import(module=module, line=line)]
    source = node.child_by_field_name("source")
    names: list[str] = []
    aliased: list[tuple[str, str]] = []
    out: list[Import] = []
    for clause in node.named_children:
        if clause.type == "import_require_clause":  # TypeScript: import x = require("y")
            bound = clause.named_children[0] if clause.named_children else None
            module = _string(clause.child_by_field_name("source"))
            return [Import(module=module, alias=_text(bound), line=line)]
        if clause.type == "import_clause":
            for part in clause.named_children:
                if part.type == "identifier":  # the default export
                    aliased.append(("default", _text(part)))
                elif part.type == "namespace_import":
                    bound = part.named_children[0] if part.named_children else None
                    out.append(Import(module=_string(source), alias=_text(bound), line=line))
                elif part.type == "named_imports":
                    _js_specifiers(part, names, aliased)
        elif clause.type == "export_clause":
            _js_specifiers(clause, names, aliased)
    module = _string(source)
    if node.type == "export_statement" and not names and not aliased and not out:
        names.append("*")  # export * from "x"
    if out and not names and not aliased:
        return out
    return out + _split_names(module, names, aliased, line)


def _js_specifiers(
    node: tree_sitter.Node, names: list[str], aliased: list[tuple[str, str]]
) -> None:
    for spec in node.named_children:
        name = _text(spec.child_by_field_name("name"))
        alias = spec.child_by_field_name("alias")
        if alias is not None:
            aliased.append((name, _text(alias)))
        elif name:
            names.append(name)


def _go_imports(node: tree_sitter.Node) -> list[Import]:
    alias = node.child_by_field_name("name")
    return [
        Import(
            module=_string(node.child_by_field_name("path")),
            alias=_text(alias) if alias is not None else "",
            line=_line(node),
        )
    ]


def _rust_use(node: tree_sitter.Node, prefix: str, line: int, out: list[Import]) -> None:
    kind = node.type
    if kind == "scoped_use_list":
        path = _text(node.child_by_field_name("path"))
        module = f"{prefix}::{path}" if prefix and path else (path or prefix)
        names: list[str] = []
        aliased: list[tuple[str, str]] = []
        items = node.child_by_field_name("list")
        for item in items.named_children if items is not None else []:
            if item.type in ("identifier", "self", "super", "crate"):
                names.append(_text(item))
            elif item.type == "use_as_clause":
                aliased.append(
                    (
                        _text(item.child_by_field_name("path")),
                        _text(item.child_by_field_name("alias")),
                    )
                )
            else:
                _rust_use(item, module, line, out)
        if names or aliased:
            out.extend(_split_names(module, names, aliased, line))
    elif kind == "use_list":
        for item in node.named_children:
            _rust_use(item, prefix, line, out)
    elif kind == "use_as_clause":
        path = _text(node.child_by_field_name("path"))
        module, _, name = path.rpartition("::")
        module = f"{prefix}::{module}" if prefix and module else (module or prefix)
        out.append(
            Import(
                module=module,
                names=(name,),
                alias=_text(node.child_by_field_name("alias")),
                line=line,
            )
        )
    elif kind == "use_wildcard":
        path = _text(node.named_children[0]) if node.named_children else ""
        module = f"{prefix}::{path}" if prefix and path else (path or prefix)
        out.append(Import(module=module, names=("*",), line=line))
    else:  # a path: a::b::c imports c from a::b
        path = _text(node)
        module, _, name = path.rpartition("::")
        module = f"{prefix}::{module}" if prefix and module else (module or prefix)
        if module:
            out.append(Import(module=module, names=(name,), line=line))
        else:
            out.append(Import(module=name, line=line))


def _rust_imports(node: tree_sitter.Node) -> list[Import]:
    line = _line(node)
    if node.type == "mod_item":  # mod x; (a file of the crate)
        return [Import(module=_text(node.child_by_field_name("name")), line=line)]
    out: list[Import] = []
    argument = node.child_by_field_name("argument")
    if argument is not None:
        _rust_use(argument, "", line, out)
    return out


def _dotted_import(path: str, line: int, alias: str = "", wildcard: bool = False) -> list[Import]:
    """``a.b.C`` -> module ``a.b``, names ``C``; ``a.b.*`` -> module ``a.b``, names ``*``."""
    if wildcard:
        return [Import(module=path.removesuffix(".*"), names=("*",), alias=alias, line=line)]
    module, _, name = path.rpartition(".")
    if not module:
        return [Import(module=name, alias=alias, line=line)]
    return [Import(module=module, names=(name,), alias=alias, line=line)]


def _java_imports(node: tree_sitter.Node) -> list[Import]:
    path = ""
    wildcard = False
    for child in node.named_children:
        if child.type in ("scoped_identifier", "identifier"):
            path = _text(child)
        elif child.type == "asterisk":
            wildcard = True
    return _dotted_import(path, _line(node), wildcard=wildcard)


def _kotlin_imports(node: tree_sitter.Node) -> list[Import]:
    path = ""
    alias = ""
    for child in node.named_children:
        if child.type == "qualified_identifier":
            path = _text(child)
        elif child.type == "identifier":
            alias = _text(child)
    wildcard = _text(node).rstrip().endswith("*")
    if wildcard:
        return [Import(module=path, names=("*",), line=_line(node))]
    return _dotted_import(path, _line(node), alias=alias)


def _include_imports(node: tree_sitter.Node) -> list[Import]:
    path = node.child_by_field_name("path")
    if path is None:
        return []
    return [Import(module=_unquote(_text(path)), line=_line(node))]


def _ruby_imports(node: tree_sitter.Node) -> list[Import]:
    method = _text(node.child_by_field_name("method"))
    args = node.child_by_field_name("arguments")
    first = args.named_children[0] if args is not None and args.named_children else None
    if first is None or first.type != "string":
        return []
    module = _string(first)
    if method == "require_relative" and not module.startswith("."):
        module = "./" + module
    return [Import(module=module, line=_line(node))]


def _csharp_imports(node: tree_sitter.Node) -> list[Import]:
    alias = node.child_by_field_name("name")
    path = ""
    for child in node.named_children:
        if child.type in ("qualified_name", "identifier") and child != alias:
            path = _text(child)
    return [Import(module=path, alias=_text(alias) if alias is not None else "", line=_line(node))]


def _php_imports(node: tree_sitter.Node) -> list[Import]:
    line = _line(node)
    if node.type != "namespace_use_declaration":  # require, include (…_once)
        strings = _descendants(node, "string", "encapsed_string")
        if not strings:
            return []
        module = _string(strings[-1])
        if "__DIR__" in _text(node) and module.startswith("/"):
            module = "." + module
        return [Import(module=module, line=line)]
    out: list[Import] = []
    group_prefix = ""
    for child in node.named_children:
        if child.type == "namespace_name":
            group_prefix = _text(child)
    for clause in _descendants(node, "namespace_use_clause"):
        alias = clause.child_by_field_name("alias")
        target = next(
            (
                c
                for c in clause.named_children
                if c.type in ("qualified_name", "name") and c != alias
            ),
            None,
        )
        full = _text(target).lstrip("\\")
        if group_prefix:
            full = f"{group_prefix}\\{full}"
        module, _, name = full.rpartition("\\")
        out.append(
            Import(
                module=module or name,
                names=(name,) if module else (),
                alias=_text(alias) if alias is not None else "",
                line=line,
            )
        )
    return out


def _swift_imports(node: tree_sitter.Node) -> list[Import]:
    path = ""
    for child in node.named_children:
        if child.type == "identifier":
            path = _text(child)
    # import struct A.B imports one declaration of module A
    if any(
        c.type in ("struct", "class", "enum", "protocol", "func", "var", "let", "typealias")
        for c in node.children
    ):
        return _dotted_import(path, _line(node))
    return [Import(module=path, line=_line(node))]


def _bash_imports(node: tree_sitter.Node) -> list[Import]:
    arg = node.child_by_field_name("argument")
    if arg is None:
        return []
    return [Import(module=_unquote(_text(arg)), line=_line(node))]


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


def _kotlin_kind(node: tree_sitter.Node, kind: str) -> str:
    if kind == "class" and any(c.type == "interface" for c in node.children):
        return "interface"
    return kind


def _swift_kind(node: tree_sitter.Node, kind: str) -> str:
    if kind == "class":
        declared = node.child_by_field_name("declaration_kind")
        if declared is not None and declared.type == "extension":
            return "impl"
    return kind


def _csharp_base(node: tree_sitter.Node, child_kind: str, position: int, base: str) -> str:
    """C# does not say: by convention an interface's name is I + capital; only
    the first base of a class can be a class."""
    name = base.rsplit(".", 1)[-1]
    is_interface = len(name) > 1 and name[0] == "I" and name[1].isupper()
    if node.type == "class_declaration" and position == 0 and not is_interface:
        return "extends"
    return "implements"


def _swift_base(node: tree_sitter.Node, child_kind: str, position: int, base: str) -> str:
    """Swift does not say: a class's first base may be its superclass; every
    other base (and any base of a struct, enum or extension) is a protocol."""
    declared = node.child_by_field_name("declaration_kind")
    if declared is not None and declared.type == "class" and position == 0:
        return "extends"
    return "implements"


# -- the table -----------------------------------------------------------------

ImportsOf = Callable[["tree_sitter.Node"], list[Import]]
KindOf = Callable[["tree_sitter.Node", str], str]
BaseKind = Callable[["tree_sitter.Node", str, int, str], str]

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
    base_kind: BaseKind | None = (
        None  # (class node, its kind, position, base) -> extends/implements
    )
    method_parents: frozenset[str] = frozenset({"class", "interface", "impl"})
    wrappers: frozenset[str] = (
        frozenset()
    )  # nodes around a definition (decorators, export, template)
    groups: frozenset[str] = (
        frozenset()
    )  # declaration groups: a wrapper when they hold one definition
    comments: frozenset[str] = frozenset({"comment"})
    # Siblings just before a definition that belong to it (Rust attributes): in
    # its span, and between it and its doc comment.
    doc_skip: frozenset[str] = frozenset()
    ref_skip: frozenset[str] = (
        frozenset()
    )  # a reference under one of these is not one (type parameters)
    builtins: frozenset[str] = frozenset()  # type names never worth a reference (int, string)
    docstring: str = "comment"  # "python": the body's first string; "comment": leading comments
    constant_name: re.Pattern[str] | None = _UPPER  # a constant's name must match this


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
((module (expression_statement (assignment left: (identifier) @name
  type: (type [(identifier) (attribute attribute: (identifier))] @_alias)) @def))
  (#match? @_alias "TypeAlias$") (#set! kind type))
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
(keyword_argument value: (identifier) @ref.value)
(default_parameter value: (identifier) @ref.value)
(typed_default_parameter value: (identifier) @ref.value)
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
    builtins=frozenset(
        [
            "int",
            "float",
            "complex",
            "str",
            "bytes",
            "bool",
            "object",
            "None",
            "list",
            "dict",
            "set",
            "frozenset",
            "tuple",
            "type",
        ]
    ),
    docstring="python",
)

# JavaScript's queries, shared by TypeScript and TSX (their grammars extend it).
_JS_DEFINITIONS = """
((function_declaration name: (identifier) @name) @def (#set! kind function))
((generator_function_declaration name: (identifier) @name) @def (#set! kind function))
((method_definition name: [(property_identifier) (private_property_identifier)] @name) @def
  (#set! kind function))
((variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @def (#set! kind function))
((program (lexical_declaration (variable_declarator name: (identifier) @name) @def))
  (#set! kind constant))
((program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name) @def)))
  (#set! kind constant))
"""
_JS_IMPORTS = """
(import_statement) @import
(export_statement source: (string)) @import
((call_expression function: (identifier) @_f arguments: (arguments . (string))) @import
  (#eq? @_f "require"))
(call_expression function: (import) arguments: (arguments . (string))) @import
"""
_JS_CALLS = """
(call_expression function: (identifier) @name) @call
(call_expression function: (member_expression object: (_) @receiver
  property: [(property_identifier) (private_property_identifier)] @name)) @call
(call_expression function: (super) @name) @call
(new_expression constructor: (identifier) @name) @call
(new_expression constructor: (member_expression object: (_) @receiver
  property: (property_identifier) @name)) @call
"""
_JS_REFERENCES = """
(arguments (identifier) @ref.value)
(variable_declarator value: (identifier) @ref.value)
(assignment_expression right: (identifier) @ref.value)
(return_statement (identifier) @ref.value)
(pair value: (identifier) @ref.value)
"""
_JSX_REFERENCES = """
(jsx_opening_element name: (_) @ref.value)
(jsx_self_closing_element name: (_) @ref.value)
"""
_JS_WRAPPERS = frozenset({"export_statement"})
_JS_GROUPS = frozenset({"lexical_declaration", "variable_declaration"})

JAVASCRIPT = LanguageSpec(
    name="javascript",
    extensions=(".js", ".mjs", ".cjs", ".jsx"),
    grammar=("tree_sitter_javascript", "language"),
    interpreters=("node", "nodejs"),
    definitions=_JS_DEFINITIONS
    + """
((class_declaration name: (identifier) @name) @def (#set! kind class))
((field_definition property: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @def (#set! kind function))
""",
    imports=_JS_IMPORTS,
    calls=_JS_CALLS,
    references=_JS_REFERENCES + _JSX_REFERENCES,
    inherits="""
((class_heritage (identifier) @base) (#set! kind extends))
((class_heritage (member_expression) @base) (#set! kind extends))
""",
    imports_of=_js_imports,
    wrappers=_JS_WRAPPERS,
    groups=_JS_GROUPS,
)

_TS_DEFINITIONS = (
    _JS_DEFINITIONS
    + """
((class_declaration name: (type_identifier) @name) @def (#set! kind class))
((abstract_class_declaration name: (type_identifier) @name) @def (#set! kind class))
((interface_declaration name: (type_identifier) @name) @def (#set! kind interface))
((type_alias_declaration name: (type_identifier) @name) @def (#set! kind type))
((enum_declaration name: (identifier) @name) @def (#set! kind class))
((method_signature name: (property_identifier) @name) @def (#set! kind function))
((abstract_method_signature name: (property_identifier) @name) @def (#set! kind function))
((public_field_definition name: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @def (#set! kind function))
((function_signature name: (identifier) @name) @def (#set! kind function) (#set! declaration yes))
((internal_module name: [(identifier) (nested_identifier)] @name) @def (#set! kind module))
((module name: [(identifier) (nested_identifier) (string)] @name) @def (#set! kind module))
"""
)
_TS_REFERENCES = (
    _JS_REFERENCES
    + """
(type_identifier) @ref.type
(nested_type_identifier) @ref.type
"""
)
_TS_INHERITS = """
((extends_clause value: (_) @base) (#set! kind extends))
((implements_clause (_) @base) (#set! kind implements))
((extends_type_clause type: (_) @base) (#set! kind extends))
"""
_TS_REF_SKIP = frozenset({"type_parameter", "nested_type_identifier"})

TYPESCRIPT = LanguageSpec(
    name="typescript",
    extensions=(".ts", ".mts", ".cts"),
    grammar=("tree_sitter_typescript", "language_typescript"),
    interpreters=("ts-node", "tsx", "deno", "bun"),
    definitions=_TS_DEFINITIONS,
    imports=_JS_IMPORTS,
    calls=_JS_CALLS,
    references=_TS_REFERENCES,
    inherits=_TS_INHERITS,
    imports_of=_js_imports,
    wrappers=_JS_WRAPPERS | {"ambient_declaration"},
    groups=_JS_GROUPS,
    ref_skip=_TS_REF_SKIP,
)

TSX = LanguageSpec(
    name="tsx",
    extensions=(".tsx",),
    grammar=("tree_sitter_typescript", "language_tsx"),
    definitions=_TS_DEFINITIONS,
    imports=_JS_IMPORTS,
    calls=_JS_CALLS,
    references=_TS_REFERENCES + _JSX_REFERENCES,
    inherits=_TS_INHERITS,
    imports_of=_js_imports,
    wrappers=_JS_WRAPPERS | {"ambient_declaration"},
    groups=_JS_GROUPS,
    ref_skip=_TS_REF_SKIP,
)

GO = LanguageSpec(
    name="go",
    extensions=(".go",),
    grammar=("tree_sitter_go", "language"),
    definitions="""
((function_declaration name: (identifier) @name) @def (#set! kind function))
((method_declaration receiver: (parameter_list (parameter_declaration type: (_) @receiver))
  name: (field_identifier) @name) @def (#set! kind function))
((type_spec name: (type_identifier) @name type: (struct_type)) @def (#set! kind class))
((type_spec name: (type_identifier) @name type: (interface_type)) @def (#set! kind interface))
((type_spec name: (type_identifier) @name
  type: [(type_identifier) (qualified_type) (generic_type) (pointer_type) (function_type) (map_type)
         (slice_type) (array_type) (channel_type)]) @def (#set! kind type))
((type_alias name: (type_identifier) @name) @def (#set! kind type))
((method_elem name: (field_identifier) @name) @def (#set! kind function))
((source_file (const_declaration (const_spec name: (identifier) @name) @def)) (#set! kind constant))
""",
    imports="""
(import_spec) @import
""",
    calls="""
(call_expression function: (identifier) @name) @call
(call_expression function: (selector_expression operand: (_) @receiver field: (field_identifier) @name))
  @call
""",
    references="""
(type_identifier) @ref.type
(qualified_type) @ref.type
(argument_list (identifier) @ref.value)
""",
    inherits="""
((field_declaration !name type: [(type_identifier) (qualified_type) (generic_type)] @base)
  (#set! kind extends))
((field_declaration !name type: (pointer_type [(type_identifier) (qualified_type)] @base))
  (#set! kind extends))
((interface_type (type_elem . [(type_identifier) (qualified_type)] @base .)) (#set! kind extends))
""",
    imports_of=_go_imports,
    groups=frozenset({"type_declaration", "const_declaration"}),
    ref_skip=frozenset({"qualified_type", "type_parameter_declaration"}),
    builtins=frozenset(
        [
            "bool",
            "byte",
            "complex64",
            "complex128",
            "error",
            "float32",
            "float64",
            "int",
            "int8",
            "int16",
            "int32",
            "int64",
            "rune",
            "string",
            "uint",
            "uint8",
            "uint16",
            "uint32",
            "uint64",
            "uintptr",
            "any",
            "comparable",
        ]
    ),
    constant_name=None,
)

RUST = LanguageSpec(
    name="rust",
    extensions=(".rs",),
    grammar=("tree_sitter_rust", "language"),
    definitions="""
((struct_item name: (type_identifier) @name) @def (#set! kind class))
((enum_item name: (type_identifier) @name) @def (#set! kind class))
((union_item name: (type_identifier) @name) @def (#set! kind class))
((trait_item name: (type_identifier) @name) @def (#set! kind interface))
((type_item name: (type_identifier) @name) @def (#set! kind type))
((function_item name: (identifier) @name) @def (#set! kind function))
((function_signature_item name: (identifier) @name) @def (#set! kind function))
((mod_item name: (identifier) @name body: (declaration_list)) @def (#set! kind module))
((impl_item type: (_) @name) @def (#set! kind impl))
((const_item name: (identifier) @name) @def (#set! kind constant))
((static_item name: (identifier) @name) @def (#set! kind constant))
((macro_definition name: (identifier) @name) @def (#set! kind function))
""",
    imports="""
(use_declaration) @import
(mod_item !body) @import
""",
    calls="""
(call_expression function: (identifier) @name) @call
(call_expression function: (field_expression value: (_) @receiver field: (field_identifier) @name)) @call
(call_expression function: (scoped_identifier path: (_) @receiver name: (identifier) @name)) @call
(call_expression function: (generic_function function: (identifier) @name)) @call
(call_expression function: (generic_function
  function: (scoped_identifier path: (_) @receiver name: (identifier) @name))) @call
(call_expression function: (generic_function
  function: (field_expression value: (_) @receiver field: (field_identifier) @name))) @call
(token_tree [(identifier) (self)] @receiver . ["." "::"] . (identifier) @name @call
  . (token_tree . "("))
(token_tree (identifier) @name @call . (token_tree . "("))
""",
    references="""
(type_identifier) @ref.type
(scoped_type_identifier) @ref.type
(arguments (identifier) @ref.value)
""",
    inherits="""
((impl_item trait: (_) @base) (#set! kind implements))
((trait_item bounds: (trait_bounds [(type_identifier) (scoped_type_identifier) (generic_type)] @base))
  (#set! kind extends))
""",
    imports_of=_rust_imports,
    comments=frozenset({"line_comment", "block_comment"}),
    doc_skip=frozenset({"attribute_item"}),
    ref_skip=frozenset({"type_parameter", "scoped_type_identifier", "impl_item"}),
    constant_name=None,
)

JAVA = LanguageSpec(
    name="java",
    extensions=(".java",),
    grammar=("tree_sitter_java", "language"),
    definitions="""
((class_declaration name: (identifier) @name) @def (#set! kind class))
((interface_declaration name: (identifier) @name) @def (#set! kind interface))
((enum_declaration name: (identifier) @name) @def (#set! kind class))
((record_declaration name: (identifier) @name) @def (#set! kind class))
((annotation_type_declaration name: (identifier) @name) @def (#set! kind interface))
((method_declaration name: (identifier) @name) @def (#set! kind function))
((constructor_declaration name: (identifier) @name) @def (#set! kind function))
((compact_constructor_declaration name: (identifier) @name) @def (#set! kind function))
((class_body (field_declaration declarator: (variable_declarator name: (identifier) @name)) @def)
  (#set! kind constant))
((interface_body (constant_declaration declarator: (variable_declarator name: (identifier) @name))
  @def) (#set! kind constant))
""",
    imports="""
(import_declaration) @import
""",
    calls="""
(method_invocation object: (_) @receiver name: (identifier) @name) @call
(method_invocation !object name: (identifier) @name) @call
(object_creation_expression type: [(type_identifier) (scoped_type_identifier)] @name) @call
(object_creation_expression type: (generic_type [(type_identifier) (scoped_type_identifier)] @name))
  @call
(explicit_constructor_invocation constructor: _ @name) @call
""",
    references="""
(type_identifier) @ref.type
(scoped_type_identifier) @ref.type
(argument_list (identifier) @ref.value)
(argument_list (field_access) @ref.value)
""",
    inherits="""
((superclass (_) @base) (#set! kind extends))
((super_interfaces (type_list (_) @base)) (#set! kind implements))
((extends_interfaces (type_list (_) @base)) (#set! kind extends))
""",
    imports_of=_java_imports,
    comments=frozenset({"line_comment", "block_comment"}),
    ref_skip=frozenset({"type_parameter", "scoped_type_identifier"}),
)

# C's queries, shared by C++ (its grammar extends C's).
_C_DEFINITIONS = """
((function_definition declarator: (function_declarator declarator: (identifier) @name)) @def
  (#set! kind function))
((function_definition declarator: (pointer_declarator
  declarator: (function_declarator declarator: (identifier) @name))) @def (#set! kind function))
((function_definition declarator: (pointer_declarator declarator: (pointer_declarator
  declarator: (function_declarator declarator: (identifier) @name)))) @def (#set! kind function))
((struct_specifier name: (type_identifier) @name body: (_)) @def (#set! kind class))
((union_specifier name: (type_identifier) @name body: (_)) @def (#set! kind class))
((enum_specifier name: (type_identifier) @name body: (_)) @def (#set! kind class))
((type_definition declarator: (type_identifier) @name) @def (#set! kind type))
((type_definition declarator: (pointer_declarator declarator: (type_identifier) @name)) @def
  (#set! kind type))
((type_definition declarator: (function_declarator declarator: (parenthesized_declarator
  (pointer_declarator declarator: (type_identifier) @name)))) @def (#set! kind type))
((preproc_def name: (identifier) @name) @def (#set! kind constant))
((preproc_function_def name: (identifier) @name) @def (#set! kind function))
"""
_C_CALLS = """
(call_expression function: (identifier) @name) @call
(call_expression function: (field_expression argument: (_) @receiver field: (field_identifier) @name))
  @call
"""
_C_REFERENCES = """
(type_identifier) @ref.type
(argument_list (identifier) @ref.value)
"""

C = LanguageSpec(
    name="c",
    extensions=(".c", ".h"),
    grammar=("tree_sitter_c", "language"),
    definitions=_C_DEFINITIONS,
    imports="""
(preproc_include) @import
""",
    calls=_C_CALLS,
    references=_C_REFERENCES,
    imports_of=_include_imports,
)

CPP = LanguageSpec(
    name="cpp",
    extensions=(".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp", ".tpp"),
    grammar=("tree_sitter_cpp", "language"),
    definitions=_C_DEFINITIONS
    + """
((function_definition declarator: (function_declarator
  declarator: [(field_identifier) (qualified_identifier) (destructor_name) (operator_name)] @name))
  @def (#set! kind function))
((function_definition declarator: (reference_declarator (function_declarator
  declarator: [(identifier) (field_identifier) (qualified_identifier) (operator_name)] @name)))
  @def (#set! kind function))
((function_definition declarator: (pointer_declarator declarator: (function_declarator
  declarator: [(field_identifier) (qualified_identifier) (operator_name)] @name)))
  @def (#set! kind function))
((field_declaration_list (field_declaration declarator: (function_declarator
  declarator: [(field_identifier) (destructor_name) (operator_name)] @name)) @def)
  (#set! kind function) (#set! declaration yes))
((field_declaration_list (declaration declarator: (function_declarator
  declarator: [(identifier) (field_identifier) (destructor_name)] @name)) @def)
  (#set! kind function) (#set! declaration yes))
((class_specifier name: [(type_identifier) (qualified_identifier)] @name body: (_)) @def
  (#set! kind class))
((struct_specifier name: (qualified_identifier) @name body: (_)) @def (#set! kind class))
((namespace_definition name: [(namespace_identifier) (nested_namespace_specifier)] @name) @def
  (#set! kind module))
((alias_declaration name: (type_identifier) @name) @def (#set! kind type))
""",
    imports="""
(preproc_include) @import
""",
    calls=_C_CALLS
    + """
(call_expression function: (qualified_identifier scope: (_) @receiver name: (identifier) @name)) @call
(call_expression function: (qualified_identifier
  name: (qualified_identifier name: (identifier) @name)) @callee) @call
(call_expression function: (qualified_identifier name: (qualified_identifier
  name: (qualified_identifier name: (identifier) @name))) @callee) @call
(call_expression function: (template_function name: (identifier) @name)) @call
(call_expression function: (qualified_identifier scope: (_) @receiver
  name: (template_function name: (identifier) @name))) @call
(call_expression function: (field_expression argument: (_) @receiver
  field: (template_method name: (field_identifier) @name))) @call
(new_expression type: (type_identifier) @name) @call
(new_expression type: (qualified_identifier scope: (_) @receiver name: (type_identifier) @name)) @call
(new_expression type: (template_type name: (type_identifier) @name)) @call
""",
    references=_C_REFERENCES,
    inherits="""
((base_class_clause [(type_identifier) (qualified_identifier) (template_type)] @base)
  (#set! kind extends))
""",
    imports_of=_include_imports,
    wrappers=frozenset({"template_declaration"}),
    ref_skip=frozenset({"qualified_identifier", "template_type", "type_parameter_declaration"}),
)

RUBY = LanguageSpec(
    name="ruby",
    extensions=(".rb", ".rake", ".gemspec", ".ru"),
    grammar=("tree_sitter_ruby", "language"),
    filenames=("Rakefile", "Gemfile", "Guardfile", "Vagrantfile", "Brewfile", "Podfile"),
    interpreters=("ruby",),
    definitions="""
((class name: [(constant) (scope_resolution)] @name) @def (#set! kind class))
((module name: [(constant) (scope_resolution)] @name) @def (#set! kind module))
((method name: (_) @name) @def (#set! kind function))
((singleton_method name: (_) @name) @def (#set! kind function))
((program (assignment left: (constant) @name) @def) (#set! kind constant))
((class (body_statement (assignment left: (constant) @name) @def)) (#set! kind constant))
((module (body_statement (assignment left: (constant) @name) @def)) (#set! kind constant))
""",
    imports="""
((call !receiver method: (identifier) @_m arguments: (argument_list . (string))) @import
  (#any-of? @_m "require" "require_relative" "load"))
""",
    calls="""
(call receiver: (_) @receiver method: [(identifier) (constant)] @name) @call
(call !receiver method: [(identifier) (constant)] @name) @call
(call method: (super) @name) @call
""",
    references="""
(argument_list (constant) @ref.value)
(argument_list (scope_resolution) @ref.value)
(assignment right: (constant) @ref.value)
""",
    inherits="""
((superclass (_) @base) (#set! kind extends))
((call !receiver method: (identifier) @_m arguments: (argument_list [(constant) (scope_resolution)] @base))
  (#any-of? @_m "include" "extend" "prepend") (#set! kind implements))
""",
    imports_of=_ruby_imports,
    method_parents=frozenset({"class", "interface", "impl", "module"}),
    constant_name=None,
)

CSHARP = LanguageSpec(
    name="csharp",
    extensions=(".cs",),
    grammar=("tree_sitter_c_sharp", "language"),
    definitions="""
((class_declaration name: (identifier) @name) @def (#set! kind class))
((struct_declaration name: (identifier) @name) @def (#set! kind class))
((record_declaration name: (identifier) @name) @def (#set! kind class))
((enum_declaration name: (identifier) @name) @def (#set! kind class))
((interface_declaration name: (identifier) @name) @def (#set! kind interface))
((method_declaration name: (identifier) @name) @def (#set! kind function))
((constructor_declaration name: (identifier) @name) @def (#set! kind function))
((destructor_declaration name: (identifier) @name) @def (#set! kind function))
((local_function_statement name: (identifier) @name) @def (#set! kind function))
((delegate_declaration name: (identifier) @name) @def (#set! kind type))
((namespace_declaration name: [(identifier) (qualified_name)] @name) @def (#set! kind module))
((field_declaration (modifier) @_m (variable_declaration (variable_declarator name: (identifier) @name)))
  @def (#eq? @_m "const") (#set! kind constant))
""",
    imports="""
(using_directive) @import
""",
    calls="""
(invocation_expression function: (identifier) @name) @call
(invocation_expression function: (generic_name (identifier) @name)) @call
(invocation_expression function: (member_access_expression
  name: [(identifier) (generic_name (identifier))] @name) @callee) @call
(object_creation_expression type: (identifier) @name) @call
(object_creation_expression type: (generic_name (identifier) @name)) @call
(object_creation_expression type: (qualified_name name: (_) @name) @callee) @call
(constructor_initializer ["base" "this"] @name) @call
""",
    references="""
(_ type: (identifier) @ref.type)
(_ type: (qualified_name) @ref.type)
(_ returns: (identifier) @ref.type)
(_ returns: (qualified_name) @ref.type)
(generic_name (identifier) @ref.type)
(type_argument_list (identifier) @ref.type)
(argument (identifier) @ref.value)
(argument (member_access_expression) @ref.value)
""",
    inherits="""
((base_list (_) @base) (#set! kind base))
""",
    imports_of=_csharp_imports,
    base_kind=_csharp_base,
    constant_name=None,
)

PHP = LanguageSpec(
    name="php",
    extensions=(".php", ".phtml", ".php5", ".php7", ".php8"),
    grammar=("tree_sitter_php", "language_php"),
    interpreters=("php",),
    definitions="""
((class_declaration name: (name) @name) @def (#set! kind class))
((interface_declaration name: (name) @name) @def (#set! kind interface))
((trait_declaration name: (name) @name) @def (#set! kind interface))
((enum_declaration name: (name) @name) @def (#set! kind class))
((function_definition name: (name) @name) @def (#set! kind function))
((method_declaration name: (name) @name) @def (#set! kind function))
((namespace_definition name: (namespace_name) @name body: (compound_statement)) @def (#set! kind module))
((const_element (name) @name) @def (#set! kind constant))
""",
    imports="""
(namespace_use_declaration) @import
(require_expression) @import
(require_once_expression) @import
(include_expression) @import
(include_once_expression) @import
""",
    calls="""
(function_call_expression function: [(name) (qualified_name)] @name) @call
(member_call_expression object: (_) @receiver name: (name) @name) @call
(nullsafe_member_call_expression object: (_) @receiver name: (name) @name) @call
(scoped_call_expression scope: (_) @receiver name: (name) @name) @call
(object_creation_expression [(name) (qualified_name)] @name) @call
""",
    references="""
(named_type [(name) (qualified_name)] @ref.type)
(class_constant_access_expression . [(name) (qualified_name)] @ref.value)
(argument (name) @ref.value)
""",
    inherits="""
((base_clause [(name) (qualified_name)] @base) (#set! kind extends))
((class_interface_clause [(name) (qualified_name)] @base) (#set! kind implements))
((declaration_list (use_declaration [(name) (qualified_name)] @base)) (#set! kind implements))
""",
    imports_of=_php_imports,
    builtins=frozenset({"self", "static", "parent"}),
)

KOTLIN = LanguageSpec(
    name="kotlin",
    extensions=(".kt", ".kts"),
    grammar=("tree_sitter_kotlin", "language"),
    definitions="""
((class_declaration name: (identifier) @name) @def (#set! kind class))
((object_declaration name: (identifier) @name) @def (#set! kind class))
((function_declaration name: (identifier) @name) @def (#set! kind function))
((type_alias type: (identifier) @name) @def (#set! kind type))
((source_file (property_declaration (variable_declaration (identifier) @name)) @def)
  (#set! kind constant))
((class_body (property_declaration (variable_declaration (identifier) @name)) @def)
  (#set! kind constant))
""",
    imports="""
(import) @import
""",
    calls="""
(call_expression . (identifier) @name) @call
(call_expression . (navigation_expression . (_) @receiver (identifier) @name .)) @call
""",
    references="""
(user_type (identifier) @ref.type)
(value_argument (identifier) @ref.value)
""",
    inherits="""
((delegation_specifier (constructor_invocation (user_type) @base)) (#set! kind extends))
((delegation_specifier (user_type) @base) (#set! kind implements))
""",
    imports_of=_kotlin_imports,
    kind_of=_kotlin_kind,
    comments=frozenset({"line_comment", "block_comment"}),
)

SWIFT = LanguageSpec(
    name="swift",
    extensions=(".swift",),
    grammar=("tree_sitter_swift", "language"),
    interpreters=("swift",),
    definitions="""
((class_declaration name: [(type_identifier) (user_type)] @name) @def (#set! kind class))
((protocol_declaration name: (type_identifier) @name) @def (#set! kind interface))
;; "name" also labels the return type: the first match of a node (its real
;; name, an identifier or an operator) is the one kept.
((function_declaration name: _ @name) @def (#set! kind function))
((protocol_function_declaration name: _ @name) @def (#set! kind function))
((init_declaration name: "init" @name) @def (#set! kind function))
((typealias_declaration name: (type_identifier) @name) @def (#set! kind type))
((source_file (property_declaration (value_binding_pattern mutability: "let")
  name: (pattern bound_identifier: (simple_identifier) @name)) @def) (#set! kind constant))
""",
    imports="""
(import_declaration) @import
""",
    calls="""
(call_expression . (simple_identifier) @name) @call
(call_expression . (navigation_expression target: (_) @receiver
  suffix: (navigation_suffix suffix: (simple_identifier) @name))) @call
""",
    references="""
(user_type (type_identifier) @ref.type)
(value_argument value: (simple_identifier) @ref.value)
""",
    inherits="""
((inheritance_specifier inherits_from: (_) @base) (#set! kind base))
""",
    imports_of=_swift_imports,
    kind_of=_swift_kind,
    base_kind=_swift_base,
    comments=frozenset({"comment", "multiline_comment"}),
    constant_name=None,
)

BASH = LanguageSpec(
    name="bash",
    extensions=(".sh", ".bash"),
    grammar=("tree_sitter_bash", "language"),
    filenames=(".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile"),
    interpreters=("sh", "bash", "dash", "ksh", "zsh"),
    definitions="""
((function_definition name: (word) @name) @def (#set! kind function))
""",
    imports="""
((command name: (command_name (word) @_c) argument: (_)) @import (#any-of? @_c "source" "."))
""",
    calls="""
(command name: (command_name (word) @name)) @call
""",
    imports_of=_bash_imports,
)

LANGUAGES: dict[str, LanguageSpec] = {
    spec.name: spec
    for spec in (
        PYTHON,
        JAVASCRIPT,
        TYPESCRIPT,
        TSX,
        GO,
        RUST,
        JAVA,
        C,
        CPP,
        RUBY,
        CSHARP,
        PHP,
        KOTLIN,
        SWIFT,
        BASH,
    )
}
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


# A ``.h`` file is C unless its first bytes show C++ (a class, a namespace, a
# template, a standard header without ``.h``).
_CPP_HEADER = re.compile(
    rb"^[ \t]*(?:class[ \t]+\w+[ \t]*(?::[^:]|\{|$)|namespace\b|template[ \t]*<|"
    rb"using[ \t]+namespace\b|#[ \t]*include[ \t]*<[a-z_]+>)",
    re.M,
)

HEAD_BYTES = 8192
"""How much of a file :func:`language_for` needs to see (a ``#!`` line, C++ in a ``.h``)."""


def language_for(path: str, head: bytes = b"") -> str | None:
    """The language of the file at ``path``, or None when it is not a language
    we parse. ``head``, the file's first bytes (up to :data:`HEAD_BYTES`),
    decides for a file without an extension (its ``#!`` line) and for a
    ``.h`` file (C++ when it looks like C++, else C)."""
    name = path.rsplit("/", 1)[-1]
    found = _BY_FILENAME.get(name)
    if found:
        return found
    dot = name.rfind(".")
    if dot > 0:
        found = _BY_EXTENSION.get(name[dot:].lower())
        if found == "c" and name.endswith(".h") and _CPP_HEADER.search(head):
            return "cpp"
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
    declaration: tuple[bool, ...]  # per pattern index: a declaration without a body


# Grammars and compiled queries are kept for the life of the process: they are
# few, and py-tree-sitter 0.25 has been seen to crash (a segmentation fault)
# compiling a query after another one with predicates was freed.
_GRAMMARS: dict[tuple[str, str], tree_sitter.Language] = {}
_COMPILED: dict[str, Compiled] = {}
_COMPILE_LOCK = threading.Lock()


def _grammar(module: str, function: str) -> tree_sitter.Language:
    import tree_sitter

    found = _GRAMMARS.get((module, function))
    if found is None:
        pointer = getattr(importlib.import_module(module), function)()
        found = _GRAMMARS[(module, function)] = tree_sitter.Language(pointer)
    return found


def compiled(name: str) -> Compiled:
    """The grammar and query of language ``name``, loaded and compiled once."""
    found = _COMPILED.get(name)
    if found is None:
        with _COMPILE_LOCK:  # one compilation per language, none thrown away
            found = _COMPILED.get(name)
            if found is None:
                found = _COMPILED[name] = _compile(name)
    return found


def _compile(name: str) -> Compiled:
    import tree_sitter

    spec = LANGUAGES[name]
    assert spec.grammar is not None
    language = _grammar(*spec.grammar)
    parts: list[tuple[int, str]] = []
    source = ""
    for concern in CONCERNS:
        parts.append((len(source.encode()), concern))
        source += getattr(spec, concern) + "\n"
    query = tree_sitter.Query(language, source)
    concerns: list[str] = []
    kinds: list[str] = []
    declarations: list[bool] = []
    for index in range(query.pattern_count):
        start = query.start_byte_for_pattern(index)
        concerns.append([c for offset, c in parts if offset <= start][-1])
        settings = query.pattern_settings(index)
        kinds.append(str(settings.get("kind") or ""))
        declarations.append(bool(settings.get("declaration")))
    return Compiled(spec, language, query, tuple(concerns), tuple(kinds), tuple(declarations))


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
