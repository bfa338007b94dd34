"""A blob's bytes -> its :class:`~gitmem.graph.facts.FileFacts`.

:func:`extract` never raises: a file it cannot parse (its grammar cannot be
loaded, an unexpected failure) still gets facts with its language, its line
count and ``error`` set, and nothing else. A file with syntax errors is
parsed anyway: tree-sitter recovers, what it recognises is kept, and
``error`` stays empty. A path that is not in a language we parse gives
``FileFacts(language="text", lines=N)``.

What is extracted, for every language (the queries are in
:mod:`gitmem.graph.languages`):

* **definitions** with their spans. A definition starts at its first
  decorator, attribute or wrapper (``@decorator``, ``#[derive]``, ``export``,
  ``template<…>``) and ends at its last token that is not a comment
  (tree-sitter puts a comment after a block's last statement inside the
  block; Python's ``ast`` does not, and neither do we). A ``function``
  directly in a class, interface or impl (or a Ruby module) is a ``method``;
  so are a Go method (by its receiver) and a C++ ``A::f`` defined outside
  its class. Qualified names join the enclosing definitions with ``.``; a
  type alias or a constant holds nothing (a C ``typedef struct s {…} t``
  defines ``s`` at file level). A declaration without a body (a C++ method
  declared in its class) gives way to its definition in the same file;
* **calls**: every call whose callee is a name or ``receiver.name`` (and
  ``new Name(…)``, ``super(…)``, calls inside Rust macro arguments), at the
  line where the call expression starts (as ``ast`` counts it); the
  receiver as written, whitespace removed, at most 60 characters,
  ``super(…)`` as ``super``;
* **references**, kept bounded: a name in a type position (annotation,
  parameter, field or variable type, generic argument, Python decorator) is
  a reference unless it is one of the language's built-in types; a name used
  as a value (an argument, a default, the right side of an assignment, a
  return value, a JSX element) only when it is capitalised (its last dotted
  part starts with an upper-case letter after any ``_``), which keeps
  classes, enums and constants and leaves local variables out. A base is an
  inherit and a definition's own name is not a reference. One reference per
  (name, scope), at its first line;
* **imports** as written, one fact per renamed name (its alias is the local
  name);
* **inherits**: bases as written, generic arguments removed
  (``Iterator<T>`` -> ``Iterator``); an interface's bases are ``extends``;
* **docs**: a Python docstring, elsewhere the comments just above the
  definition (or its decorators and attributes), comment markers removed,
  at most 500 characters; **signatures**: the header up to the body,
  whitespace collapsed, at most 200 characters.

Markdown is split into heading sections (ATX ``#`` and setext underlines,
not inside fenced code or front matter), each a ``section`` definition whose
qualified name is its heading path joined with ``" > "``; ``inline code``
and CamelCase, snake_case or SCREAMING_SNAKE words in a section's own text
are :class:`~gitmem.graph.facts.Mention` facts.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, cast

from gitmem.graph.facts import (
    Call,
    Definition,
    FileFacts,
    Import,
    Inherit,
    Mention,
    NodeKind,
    Reference,
)
from gitmem.graph.languages import HEAD_BYTES, compiled, language_for, parser

if TYPE_CHECKING:
    import tree_sitter

    from gitmem.graph.languages import Compiled

_LINE = attrgetter("line")
_POSITION = itemgetter(0, 1)
_HAS_SPACE = re.compile(rb"\s").search

SIGNATURE_MAX = 200
DOC_MAX = 500
RECEIVER_MAX = 60

# Node types that hold a definition's body: the signature stops at the first.
_BODIES = frozenset(
    {
        "block",
        "body",
        "class_body",
        "compound_statement",
        "declaration_list",
        "enum_body",
        "enum_member_declaration_list",
        "enum_variant_list",
        "field_declaration_list",
        "function_body",
        "interface_body",
        "object_type",
        "protocol_body",
        "statement_block",
        "enum_class_body",
        "class_declaration_body",
        "annotation_type_body",
        "record_body",
        "constructor_body",
        "body_statement",
        "do_block",
    }
)


def _count_lines(data: bytes) -> int:
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def extract(path: str, data: bytes) -> FileFacts:
    """The facts of the file at ``path`` whose content is ``data``; never raises."""
    lines = _count_lines(data)
    try:
        name = language_for(path, data[:HEAD_BYTES])
    except Exception:
        name = None
    if name is None:
        return FileFacts(language="text", lines=lines)
    try:
        if name == "markdown":
            return _markdown(data, lines)
        return _extract(name, data, lines)
    except Exception as exc:
        return FileFacts(language=name, lines=lines, error=f"{type(exc).__name__}: {exc}"[:200])


_CONTAINERS = frozenset({"class", "interface", "impl", "module", "function", "method", "section"})
"""Kinds that hold other definitions (a type alias or a constant does not:
a C ``typedef struct s {…} t`` defines ``s`` at file level)."""


class _Def:
    """A definition being built (mutable; becomes a :class:`Definition`)."""

    __slots__ = (
        "declaration",
        "end",
        "forced_method",
        "kind",
        "name",
        "name_start",
        "node",
        "parent",
        "prefix",
        "qualname",
        "span",
        "start",
    )

    def __init__(
        self,
        node: tree_sitter.Node,
        span: tree_sitter.Node,
        name: str,
        kind: str,
        prefix: str,
        forced_method: bool,
        declaration: bool,
    ) -> None:
        self.start = node.start_byte
        self.end = node.end_byte
        self.span = span  # the node whose start begins the definition (a decorator, an export)
        self.node = node
        self.name = name
        self.kind = kind
        self.prefix = prefix
        self.forced_method = forced_method
        self.declaration = declaration
        self.parent: _Def | None = None
        self.qualname = ""
        self.name_start = -1


_GENERIC = re.compile(r"[<\[(].*", re.S)
_SPACE = re.compile(r"\s+")
_TEMPLATE_ARGS = re.compile(r"(?<=\w)<[^<>]*(?:<[^<>]*>[^<>]*)*>")


_TYPE_PREFIX = re.compile(r"^(?:[*&]\s*|'\w+\s+|(?:mut|dyn|const)\s+)+")


def _clean_type(text: str) -> str:
    """``*pkg.Foo[T]`` -> ``pkg.Foo``; ``&'a mut Foo<T>`` -> ``Foo``; ``\\Countable`` -> ``Countable``."""
    text = _TYPE_PREFIX.sub("", _GENERIC.sub("", text).strip())
    return _SPACE.sub("", text).lstrip("\\:")


def _split_qualified(text: str) -> tuple[str, str]:
    """``A::B::f`` -> (``A.B``, ``f``); ``f`` -> ("", ``f``)."""
    if "<" in text:  # A<T>::f -> A::f (not operator<, not Ruby's <=>)
        text = _TEMPLATE_ARGS.sub("", text)
    for sep in ("::", "\\"):
        if sep in text:
            text = text.replace(sep, ".")
    text = text.strip(".")
    if "." in text:
        prefix, _, last = text.rpartition(".")
        return prefix, last
    return "", text


_COMMENT_STARTS = (b"#", b"//", b"/*", b"*", b"--", b";")


def _last_token_end(
    node: tree_sitter.Node, comments: frozenset[str], data: bytes
) -> tuple[int, int]:
    """(row, end byte) of ``node``'s last token that is not a comment (nor a
    line end): tree-sitter puts a comment that follows a block's last
    statement inside the block, Python's ``ast`` does not, and neither do we."""
    end = node.end_byte
    row, column = node.end_point
    if column:
        line_start = data.rfind(b"\n", node.start_byte, end) + 1
        if not data[line_start:end].lstrip().startswith(_COMMENT_STARTS):
            return int(row), end  # the common case: the last line is code
    current = node
    while current.child_count:
        child: tree_sitter.Node | None = current.child(current.child_count - 1)
        while child is not None and (
            child.type in comments or child.start_byte == child.end_byte or child.type == "\n"
        ):
            child = child.prev_sibling
        if child is None:
            break
        current = child
    return int(current.end_point[0]), current.end_byte


def _collapse(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def _body_of(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The node holding ``node``'s body: its ``body`` field, a child of a body
    type, or one of those one level down (a Go ``type T struct {…}``, a
    JavaScript ``const f = () => {…}``)."""
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    children = node.children
    for child in children:
        if child.type in _BODIES:
            return child
    for child in children:
        if child.child_count and child.is_named:
            body = child.child_by_field_name("body")
            if body is not None:
                return body
            for grandchild in child.children:
                if grandchild.type in _BODIES:
                    return grandchild
    return None


def _signature(node: tree_sitter.Node, data: bytes) -> str:
    body = _body_of(node)
    start = node.start_byte
    end = body.start_byte if body is not None and body.start_byte > start else node.end_byte
    end = min(end, start + 4 * SIGNATURE_MAX)
    text = data[start:end].decode("utf-8", "replace")
    text = " ".join(text.split()).rstrip(" {:=")
    return _collapse(text, SIGNATURE_MAX)


_COMMENT_MARK = re.compile(r"^\s*(?:/\*\*?|\*/|\*(?!\*)|///?!?|//!|#+!?|--|;+)\s?", re.M)


def _clean_comment(text: str) -> str:
    text = text.strip()
    if text.endswith("*/"):
        text = text[:-2]
    lines = [_COMMENT_MARK.sub("", line, count=1).rstrip() for line in text.splitlines()]
    return "\n".join(line for line in lines).strip()


def _leading_comment(
    node: tree_sitter.Node, spec_comments: frozenset[str], skip: frozenset[str]
) -> str:
    parts: list[str] = []
    line = node.start_point[0]
    sibling = node.prev_sibling
    while sibling is not None:
        if sibling.type in skip:
            line = sibling.start_point[0]
            sibling = sibling.prev_sibling
            continue
        if sibling.type not in spec_comments or sibling.end_point[0] < line - 1:
            break
        raw = sibling.text
        parts.append(raw.decode("utf-8", "replace") if raw else "")
        line = sibling.start_point[0]
        sibling = sibling.prev_sibling
        if sum(len(p) for p in parts) > 4 * DOC_MAX:
            break
    if not parts:
        return ""
    text = "\n".join(_clean_comment(p) for p in reversed(parts))
    return _collapse_doc(text)


def _collapse_doc(text: str) -> str:
    text = text.strip()
    if len(text) > DOC_MAX:
        text = text[: DOC_MAX - 1].rstrip() + "…"
    return text


def _python_docstring(node: tree_sitter.Node) -> str:
    body = node.child_by_field_name("body")
    if body is None or not body.named_child_count:
        return ""
    statement: tree_sitter.Node | None = body.named_child(0)
    while statement is not None and statement.type == "comment":
        statement = statement.next_named_sibling
    if statement is None or statement.type != "expression_statement":
        return ""
    string = statement.named_child(0) if statement.named_child_count == 1 else None
    if string is None or string.type != "string":
        return ""
    parts = [
        c.text.decode("utf-8", "replace")
        for c in string.named_children
        if c.type in ("string_content", "escape_sequence") and c.text
    ]
    lines = "".join(parts).expandtabs().splitlines()
    if len(lines) > 1:
        indent = min(
            (len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()), default=0
        )
        lines = [lines[0].strip()] + [line[indent:].rstrip() for line in lines[1:]]
    return _collapse_doc("\n".join(lines))


def _receiver_text(node: tree_sitter.Node, data: bytes) -> str:
    """A receiver as written: whitespace removed, ``super(…)`` as ``super``,
    at most :data:`RECEIVER_MAX` characters."""
    start, end = node.start_byte, node.end_byte
    raw = data[start : min(end, start + 4 * RECEIVER_MAX)].decode("utf-8", "replace")
    text = "".join(raw.split())
    if text.startswith("super(") and text.endswith(")"):
        return "super"
    if len(text) > RECEIVER_MAX or end - start > 4 * RECEIVER_MAX:
        text = text[: RECEIVER_MAX - 1] + "…"
    return text


def _receiver_before(start: int, end: int, data: bytes) -> str:
    """The receiver of a call whose callee starts at ``start`` and whose
    name starts at ``end``: the source between, separators removed."""
    raw = data[start : min(end, start + 4 * RECEIVER_MAX)].decode("utf-8", "replace")
    text = "".join(raw.split()).rstrip(".:->?!&")
    if len(text) > RECEIVER_MAX or end - start > 4 * RECEIVER_MAX:
        text = text[: RECEIVER_MAX - 1] + "…"
    return text


def _is_capitalised(name: str) -> bool:
    last = name.rsplit(".", 1)[-1].lstrip("_")
    return bool(last) and last[0].isupper()


def _extract(name: str, data: bytes, lines: int) -> FileFacts:
    import tree_sitter

    c: Compiled = compiled(name)
    spec = c.spec
    tree = parser(name).parse(data)
    matches = tree_sitter.QueryCursor(c.query).matches(tree.root_node)

    concern_of = c.concern
    kind_of = c.kind
    def_matches: list[tuple[int, dict[str, list[tree_sitter.Node]]]] = []
    constant_matches: list[tuple[int, dict[str, list[tree_sitter.Node]]]] = []
    call_matches: list[dict[str, list[tree_sitter.Node]]] = []
    import_nodes: list[tree_sitter.Node] = []
    type_refs: list[tree_sitter.Node] = []
    value_refs: list[tree_sitter.Node] = []
    bases: list[tuple[tree_sitter.Node, str]] = []
    for index, caps in matches:
        concern = concern_of[index]
        if concern == "calls":
            call_matches.append(caps)
        elif concern == "references":
            refs = caps.get("ref.type")
            if refs:
                type_refs.extend(refs)
            refs = caps.get("ref.value")
            if refs:
                value_refs.extend(refs)
        elif concern == "definitions":
            # Constants last: a node that is also something else (a JavaScript
            # ``const f = () => …``) is that other thing.
            (constant_matches if kind_of[index] == "constant" else def_matches).append(
                (index, caps)
            )
        elif concern == "imports":
            import_nodes.extend(caps["import"])
        else:
            bases.extend((b, kind_of[index]) for b in caps["base"])

    defs = _definitions(c, def_matches + constant_matches)
    definitions = _finish_definitions(c, defs, data)

    # Scopes: the innermost definition (or impl) whose node holds a position.
    starts = [d.start for d in defs]

    def scope_of(pos: int) -> _Def | None:
        i = bisect_right(starts, pos) - 1
        found = defs[i] if i >= 0 else None
        while found is not None and not (found.start <= pos < found.end):
            found = found.parent
        return found

    def scope_name(pos: int) -> str:
        found = scope_of(pos)
        return found.qualname if found is not None else ""

    # The hot loop (a call every few lines): inlined lookups, no helper calls
    # on the common path.
    located: list[tuple[int, int, Call]] = []  # (call start, name start, call): source order
    append_call = located.append
    seen_calls: set[int] = set()
    seen_add = seen_calls.add
    ndefs = len(defs)
    for caps in call_matches:
        name_node = caps["name"][0]
        name_start = name_node.start_byte
        if name_start in seen_calls:
            continue
        seen_add(name_start)
        call_name = data[name_start : name_node.end_byte].decode("utf-8", "replace")
        receiver = ""
        found = caps.get("receiver")
        if found:
            node = found[0]
            raw = data[node.start_byte : node.end_byte]
            if len(raw) <= RECEIVER_MAX and not _HAS_SPACE(raw) and not raw.startswith(b"super("):
                receiver = raw.decode("utf-8", "replace")
            else:
                receiver = _receiver_text(node, data)
        else:
            found = caps.get("callee")
            if found and found[0].start_byte < name_start:
                receiver = _receiver_before(found[0].start_byte, name_start, data)
        if "\\" in call_name:  # PHP: \strlen, \App\f
            prefix, _, call_name = call_name.rpartition("\\")
            receiver = receiver or prefix.lstrip("\\")
        if not call_name:
            continue
        call_node = caps["call"][0]
        pos = call_node.start_byte
        scope = ""
        if ndefs:
            i = bisect_right(starts, pos) - 1
            owner = defs[i] if i >= 0 else None
            while owner is not None and not (owner.start <= pos < owner.end):
                owner = owner.parent
            if owner is not None:
                scope = owner.qualname
        append_call(
            (pos, name_start, Call(call_name, receiver, call_node.start_point[0] + 1, scope))
        )
    located.sort(key=_POSITION)
    calls = [call for _, _, call in located]

    references: list[Reference] = []
    seen_refs: set[tuple[str, str]] = set()
    # A base is an Inherit, a definition's own name is not a use of it.
    skip_starts = {b.start_byte for b, _ in bases}
    skip_starts.update(d.name_start for d in defs)
    ref_skip = spec.ref_skip
    builtins = spec.builtins
    for ref_nodes, check in ((type_refs, False), (value_refs, True)):
        for node in ref_nodes:
            start = node.start_byte
            if start in skip_starts:
                continue
            ref_name = _text(node)
            if " " in ref_name or "\n" in ref_name:
                ref_name = "".join(ref_name.split())
            if not ref_name or (check and not _is_capitalised(ref_name)) or ref_name in builtins:
                continue
            scope = scope_name(start)
            if (ref_name, scope) in seen_refs:
                continue
            parent = node.parent
            if ref_skip and parent is not None and parent.type in ref_skip:
                continue
            seen_refs.add((ref_name, scope))
            references.append(Reference(ref_name, node.start_point[0] + 1, scope))
    references.sort(key=_LINE)

    imports: list[Import] = []
    imports_of = spec.imports_of
    if imports_of is not None:
        for node in import_nodes:
            scope = scope_name(node.start_byte)
            for imp in imports_of(node):
                if imp.module or imp.names:
                    if scope:
                        imp = Import(imp.module, imp.names, imp.alias, imp.line, scope)
                    imports.append(imp)
    imports.sort(key=_LINE)

    inherits: list[Inherit] = []
    position: dict[int, int] = {}
    seen_bases: set[tuple[int, int]] = set()
    for node, kind in bases:
        if (node.start_byte, node.end_byte) in seen_bases:
            continue
        seen_bases.add((node.start_byte, node.end_byte))
        owner = scope_of(node.start_byte)
        while owner is not None and owner.kind not in ("class", "interface", "impl"):
            owner = owner.parent
        if owner is None:
            continue
        base_name = _clean_type(_text(node))
        if not base_name:
            continue
        count = position.get(owner.start, 0)
        position[owner.start] = count + 1
        if kind == "base":
            if spec.base_kind is not None:
                kind = spec.base_kind(owner.node, owner.kind, count, base_name)
            else:
                kind = "extends"
        if owner.kind == "interface":
            kind = "extends"
        inherits.append(
            Inherit(
                child=owner.qualname,
                base=base_name,
                kind="implements" if kind == "implements" else "extends",
                line=node.start_point[0] + 1,
            )
        )

    return FileFacts(
        language=name,
        lines=lines,
        definitions=definitions,
        imports=imports,
        calls=calls,
        references=references,
        inherits=inherits,
    )


def _definitions(
    c: Compiled, def_matches: list[tuple[int, dict[str, list[tree_sitter.Node]]]]
) -> list[_Def]:
    """The definitions found, sorted by position, nested, with qualified names."""
    spec = c.spec
    kind_of = c.kind
    declaration_of = c.declaration
    defs: list[_Def] = []
    seen: set[tuple[int, int]] = set()
    wrappers = spec.wrappers
    groups = spec.groups
    doc_skip = spec.doc_skip
    refine = spec.kind_of
    constant_name = spec.constant_name
    for index, caps in def_matches:
        node = caps["def"][0]
        key = (node.start_byte, node.end_byte)
        if key in seen:
            continue
        name_nodes = caps.get("name")
        if not name_nodes:
            continue
        kind = kind_of[index]
        raw_name = _text(name_nodes[0])
        if raw_name[:1] in "\"'":
            raw_name = raw_name.strip("\"'")
        if kind == "impl":
            prefix, def_name = "", _clean_type(raw_name)
        else:
            prefix, def_name = _split_qualified(raw_name)
        if not def_name:
            continue
        if kind == "constant" and constant_name is not None and not constant_name.match(def_name):
            continue
        seen.add(key)
        receiver = caps.get("receiver")
        forced = False
        if receiver:
            prefix = _clean_type(_text(receiver[0]))
            forced = bool(prefix)
        elif prefix and kind == "function":
            forced = True  # C++ A::f defined outside its class
        if refine is not None:
            kind = refine(node, kind)
        span = node
        parent = node.parent
        while parent is not None and (
            parent.type in wrappers or (parent.type in groups and parent.named_child_count == 1)
        ):
            span = parent
            parent = parent.parent
        if doc_skip:
            before = span.prev_sibling
            while before is not None and before.type in doc_skip:
                span = before
                before = before.prev_sibling
        d = _Def(node, span, def_name, kind, prefix, forced, declaration_of[index])
        d.name_start = name_nodes[0].start_byte
        defs.append(d)

    defs.sort(key=lambda d: (d.start, -d.end))
    stack: list[_Def] = []
    method_parents = spec.method_parents
    for d in defs:
        while stack and stack[-1].end <= d.start:
            stack.pop()
        while stack and stack[-1].end < d.end:  # overlapping, not nested: not a parent
            stack.pop()
        parent_def = None
        for candidate in reversed(stack):
            if candidate.kind in _CONTAINERS:
                parent_def = candidate
                break
        d.parent = parent_def
        base = parent_def.qualname if parent_def is not None else ""
        if d.prefix:
            base = f"{base}.{d.prefix}" if base else d.prefix
        d.qualname = f"{base}.{d.name}" if base else d.name
        d.prefix = base  # from here on: the parent's qualname
        if d.kind == "function" and (
            d.forced_method or (parent_def is not None and parent_def.kind in method_parents)
        ):
            d.kind = "method"
        stack.append(d)
    return defs


def _finish_definitions(c: Compiled, defs: list[_Def], data: bytes) -> list[Definition]:
    spec = c.spec
    comments = spec.comments
    definitions: list[Definition] = []
    seen_constants: set[str] = set()
    # A declaration (a C++ method declared in its class) gives way to a
    # definition of the same symbol in the same file.
    defined = {(d.qualname, d.kind) for d in defs if not d.declaration}
    python = spec.docstring == "python"
    for d in defs:
        if d.kind == "impl":
            continue
        if d.declaration and (d.qualname, d.kind) in defined:
            continue
        if d.kind == "constant":
            if d.qualname in seen_constants:
                continue  # reassigned: the first assignment defines it
            seen_constants.add(d.qualname)
        node = d.node
        span = d.span
        end_row, end_byte = _last_token_end(node, comments, data)
        if python:
            doc = _python_docstring(node) if d.kind != "constant" else ""
        else:
            doc = _leading_comment(span, comments, spec.doc_skip)
        definitions.append(
            Definition(
                name=d.name,
                qualname=d.qualname,
                kind=cast(NodeKind, d.kind),
                start_line=span.start_point[0] + 1,
                end_line=end_row + 1,
                start_byte=span.start_byte,
                end_byte=end_byte,
                signature=_signature(node, data),
                doc=doc,
                parent=d.prefix,
            )
        )
    return definitions


def _text(node: tree_sitter.Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "replace") if raw else ""


# -- Markdown --------------------------------------------------------------------

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*\Z")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*\Z")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)([^`\n]+?)\1")
_CODE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?")
# Code-like words in prose: CamelCase (and camelCase, HTTPServer), snake_case,
# SCREAMING_SNAKE, _private; not inside paths, URLs or dotted names.
_WORD = re.compile(
    r"(?<![\w.`/-])(?:[A-Za-z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z][A-Za-z0-9]*|"
    r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|_[A-Za-z0-9_]+)(?![\w`/-])"
)
SECTION_SEPARATOR = " > "


def _markdown(data: bytes, lines: int) -> FileFacts:
    raw_rows = data.split(b"\n")
    offsets = [0]  # byte offset of each row's start
    for raw in raw_rows:
        offsets.append(offsets[-1] + len(raw) + 1)
    rows = [raw.decode("utf-8", "replace").rstrip("\r") for raw in raw_rows]
    # (row, level, title) of each heading; rows inside fenced code (or front matter).
    headings: list[tuple[int, int, str]] = []
    code_rows: set[int] = set()
    fence = ""
    start = 0
    if rows and rows[0].strip() == "---":  # YAML front matter
        for i in range(1, len(rows)):
            if rows[i].strip() in ("---", "..."):
                code_rows.update(range(i + 1))
                start = i + 1
                break
    previous_text = False  # the row before is a paragraph row (a setext candidate)
    for i in range(start, len(rows)):
        row = rows[i]
        if fence:
            code_rows.add(i)
            stripped = row.strip()
            if stripped.startswith(fence) and set(stripped) <= {fence[0]}:
                fence = ""
            continue
        m = _FENCE.match(row)
        if m:
            fence = m.group(1)
            code_rows.add(i)
            previous_text = False
            continue
        m = _ATX.match(row)
        if m:
            title = (m.group(2) or "").strip()
            if title:
                headings.append((i, len(m.group(1)), title))
            previous_text = False
            continue
        if previous_text and _SETEXT.match(row):
            headings.append((i - 1, 1 if row.strip()[0] == "=" else 2, rows[i - 1].strip()))
            previous_text = False
            continue
        previous_text = bool(row.strip()) and not row.startswith(("    ", "\t"))
    definitions: list[Definition] = []
    mentions: list[Mention] = []
    path: list[tuple[int, str]] = []  # (level, qualname) of the open headings
    seen: dict[str, int] = {}
    total = len(rows)
    size = len(data)
    for n, (i, level, title) in enumerate(headings):
        # The section runs to the row before the next heading of its level or higher.
        end = total
        for j, later_level, _ in headings[n + 1 :]:
            if later_level <= level:
                end = j
                break
        while path and path[-1][0] >= level:
            path.pop()
        parent = path[-1][1] if path else ""
        qualname = f"{parent}{SECTION_SEPARATOR}{title}" if parent else title
        if qualname in seen:  # the same heading path again: number the repeats
            seen[qualname] += 1
            qualname = f"{qualname} ({seen[qualname]})"
        else:
            seen[qualname] = 1
        path.append((level, qualname))
        last = end
        while last > i + 1 and not rows[last - 1].strip():
            last -= 1
        definitions.append(
            Definition(
                name=title,
                qualname=qualname,
                kind="section",
                start_line=i + 1,
                end_line=last,
                start_byte=min(offsets[i], size),
                end_byte=min(offsets[last], size),
                signature=_collapse(rows[i].strip(), SIGNATURE_MAX),
                doc="",
                parent=parent,
            )
        )
        # Mentions: in the section's own text (up to its first subsection), not in code blocks.
        own_end = headings[n + 1][0] if n + 1 < len(headings) else total
        names: set[str] = set()
        for k in range(i, own_end):
            if k in code_rows:
                continue
            row = rows[k]
            if "`" in row:
                for m in _INLINE_CODE.finditer(row):
                    code = m.group(2).strip()
                    if _CODE_NAME.fullmatch(code):
                        code = code.removesuffix("()")
                        if code not in names:
                            names.add(code)
                            mentions.append(Mention(name=code, section=qualname, line=k + 1))
                row = _INLINE_CODE.sub(" ", row)
            for m in _WORD.finditer(row):
                word = m.group(0)
                if word not in names:
                    names.add(word)
                    mentions.append(Mention(name=word, section=qualname, line=k + 1))
    return FileFacts(language="markdown", lines=lines, definitions=definitions, mentions=mentions)


__all__ = ["SECTION_SEPARATOR", "extract"]
