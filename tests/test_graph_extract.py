"""Extraction of a file's facts (gitmem.graph.extract): Python checked against
Python's own ``ast`` on the standard library, every other language against a
hand-checked fixture project (tests/data/code/<language>/expected.json), and
extraction never raising whatever the bytes.

The whole standard library is compared by ``bench/code_extract.py``; here a
deterministic sample keeps the suite fast.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest
from graph_accuracy import (
    FIXTURES,
    accuracy_table,
    compare_python,
    fixture_differences,
    fixture_languages,
    fixture_scores,
    python_accuracy,
    sample,
    stdlib_files,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.graph.extract import SECTION_SEPARATOR, extract
from gitmem.graph.facts import FileFacts
from gitmem.graph.languages import LANGUAGES, language_for, parser

ROOT = Path(__file__).resolve().parent.parent

# -- Python against ast ------------------------------------------------------------

SAMPLE = 150


@pytest.fixture(scope="module")
def stdlib_sample() -> list[Path]:
    return sample(stdlib_files(), SAMPLE)


def _tree_sitter_errs(path: Path) -> bool:
    return parser("python").parse(path.read_bytes()).root_node.has_error


def test_python_definitions_match_ast_exactly(stdlib_sample: list[Path]) -> None:
    """Every class and function (name, qualified name, kind, first and last
    line) of a sample of the standard library, as ``ast`` sees them. A file
    tree-sitter cannot parse cleanly (a grammar gap; one file in the whole
    library, see bench/code_extract.py) is left out, and counted."""
    compared = 0
    for path in stdlib_sample:
        if _tree_sitter_errs(path):
            continue
        result = compare_python(path)
        if result is None:  # not Python 3 (test data written on purpose)
            continue
        want, got, _, _ = result
        assert got == want, (
            path,
            sorted((want - got).elements())[:5],
            sorted((got - want).elements())[:5],
        )
        compared += 1
    assert compared >= SAMPLE * 0.95


def test_python_calls_match_ast(stdlib_sample: list[Path]) -> None:
    """Calls of a name or an attribute, by (name, line), against ``ast``."""
    acc = python_accuracy(stdlib_sample)
    assert acc.calls > 10_000
    assert acc.call_recall >= 0.99, acc
    assert acc.call_precision >= 0.99, acc


def test_ast_comparison_can_fail(tmp_path: Path) -> None:
    """The comparison sees a wrong line, a wrong kind and a missing call."""
    path = tmp_path / "m.py"
    path.write_text("class A:\n    def f(self):\n        g()\n")
    result = compare_python(path)
    assert result is not None
    want, got, want_calls, got_calls = result
    assert want == got and want_calls == got_calls
    facts = extract("m.py", path.read_bytes())
    facts.definitions[1] = msgspec.structs.replace(facts.definitions[1], kind="function")
    facts.calls.clear()
    result = compare_python(path, facts)
    assert result is not None
    want, got, want_calls, got_calls = result
    assert want != got and want_calls != got_calls


def test_decorated_definition_starts_at_its_first_decorator() -> None:
    src = b"import functools\n\n@functools.cache\n@other(1)\ndef f():\n    return 1\n"
    (d,) = extract("m.py", src).definitions
    assert (d.start_line, d.end_line) == (3, 6)
    assert d.signature == "def f()"
    assert src[d.start_byte : d.end_byte].startswith(b"@functools.cache")


def test_trailing_comments_do_not_extend_a_definition() -> None:
    src = b"def f():\n    if x:\n        y()\n        # done\n    # really\n\nz = 1\n"
    (d,) = extract("m.py", src).definitions
    assert (d.start_line, d.end_line) == (1, 3)
    assert src[d.start_byte : d.end_byte].endswith(b"y()")


# -- what each fact says ---------------------------------------------------------------


def _facts(path: str, src: str) -> FileFacts:
    facts = extract(path, src.encode())
    assert facts.error == "", facts.error
    return facts


def test_python_facts() -> None:
    facts = _facts(
        "pkg/m.py",
        '''"""Module."""
import os.path as p, sys
from ..a import (b as c, d)
from . import x
from m import *

LIMIT = 10
lower = 3


@decorate(LIMIT)
def top(a: Base, b=Default) -> Result:
    """Does things.

    In detail.
    """
    helper(a, Other, lower)
    return p.join(a.b.c(), sys.argv)


class Child(Base, mod.Mixin, Generic[T], metaclass=Meta):
    KIND = "child"

    def method(self):
        super().method()
        self.other()

    class Inner(typing.Protocol):
        def probe(self) -> int: ...
''',
    )
    defs = {d.qualname: d for d in facts.definitions}
    assert list(defs) == [
        "LIMIT",
        "top",
        "Child",
        "Child.KIND",
        "Child.method",
        "Child.Inner",
        "Child.Inner.probe",
    ]
    assert [defs[q].kind for q in defs] == [
        "constant",
        "function",
        "class",
        "constant",
        "method",
        "interface",
        "method",
    ]
    assert defs["top"].doc == "Does things.\n\nIn detail."
    assert defs["top"].signature == "def top(a: Base, b=Default) -> Result"
    assert defs["Child"].signature == "class Child(Base, mod.Mixin, Generic[T], metaclass=Meta)"
    assert defs["Child.Inner.probe"].parent == "Child.Inner"
    assert [(i.module, i.names, i.alias) for i in facts.imports] == [
        ("os.path", (), "p"),
        ("sys", (), ""),
        ("..a", ("d",), ""),
        ("..a", ("b",), "c"),
        (".", ("x",), ""),
        ("m", ("*",), ""),
    ]
    assert [(c.name, c.receiver, c.line, c.scope) for c in facts.calls] == [
        ("decorate", "", 11, ""),  # a decorator runs in the enclosing scope
        ("helper", "", 17, "top"),
        ("join", "p", 18, "top"),
        ("c", "a.b", 18, "top"),
        ("super", "", 25, "Child.method"),
        ("method", "super", 25, "Child.method"),
        ("other", "self", 26, "Child.method"),
    ]
    refs = {(r.name, r.scope) for r in facts.references}
    # Type positions always; values only when capitalised; bases are inherits.
    assert {("Base", "top"), ("Result", "top"), ("Default", "top"), ("Other", "top")} <= refs
    assert ("LIMIT", "") in refs and ("Meta", "Child") in refs
    assert not {r for r in refs if r[0] in ("lower", "a", "Base") and r[1] != "top"}
    assert ("lower", "top") not in refs and ("int", "Child.Inner.probe") not in refs
    assert [(h.child, h.base, h.kind) for h in facts.inherits] == [
        ("Child", "Base", "extends"),
        ("Child", "mod.Mixin", "extends"),
        ("Child", "Generic", "extends"),
        ("Child.Inner", "typing.Protocol", "extends"),
    ]


def test_python_type_aliases_and_constants() -> None:
    facts = _facts(
        "a.py",
        "import typing\nVector: TypeAlias = list[float]\nPair: typing.TypeAlias = tuple\n"
        "MAX: int = 3\nMAX = 4\nlower = 5\n_PRIVATE = 6\n__all__ = []\n",
    )
    assert [(d.qualname, d.kind, d.start_line) for d in facts.definitions] == [
        ("Vector", "type", 2),
        ("Pair", "type", 3),
        ("MAX", "constant", 4),  # the first assignment defines it
        ("_PRIVATE", "constant", 7),
    ]


def test_leading_comments_are_docs() -> None:
    rust = _facts(
        "lib.rs",
        "/// A point.\n/// Two numbers.\n#[derive(Debug)]\npub struct Point { x: f64 }\n\n// not mine\n\nfn f() {}\n",
    )
    point, f = rust.definitions
    assert (point.doc, point.start_line, point.end_line) == ("A point.\nTwo numbers.", 3, 4)
    assert f.doc == ""  # a blank line separates the comment from it
    java = _facts("A.java", "/**\n * A thing.\n * @since 1\n */\n@Deprecated\npublic class A {}\n")
    assert java.definitions[0].doc == "A thing.\n@since 1"
    go = _facts("a.go", "package a\n\n// New makes one.\nfunc New() {}\n")
    assert go.definitions[0].doc == "New makes one."
    js = _facts("a.js", "/** Adds. */\nexport function add(a, b) { return a + b; }\n")
    assert (js.definitions[0].doc, js.definitions[0].start_line) == ("Adds.", 2)


def test_signature_and_doc_are_bounded() -> None:
    params = ", ".join(f"p{i}" for i in range(100))
    doc = "word " * 300
    facts = _facts("m.py", f'def f({params}):\n    """{doc}"""\n')
    (d,) = facts.definitions
    assert len(d.signature) <= 200 and d.signature.startswith("def f(p0, p1")
    assert len(d.doc) <= 500 and d.doc.startswith("word word")


def test_methods_by_their_container() -> None:
    go = _facts("a.go", "package a\ntype T struct{}\nfunc (t *T) M() {}\nfunc F() {}\n")
    assert [(d.qualname, d.kind, d.parent) for d in go.definitions] == [
        ("T", "class", ""),
        ("T.M", "method", "T"),
        ("F", "function", ""),
    ]
    rust = _facts(
        "a.rs", "trait Tr { fn a(&self); }\nimpl Tr for S { fn a(&self) {} }\nfn g() {}\n"
    )
    assert [(d.qualname, d.kind) for d in rust.definitions] == [
        ("Tr", "interface"),
        ("Tr.a", "method"),
        ("S.a", "method"),
        ("g", "function"),
    ]
    assert [(h.child, h.base, h.kind) for h in rust.inherits] == [("S", "Tr", "implements")]
    cpp = _facts("a.cpp", "namespace n {\nclass C { void f(); };\nvoid C::f() {}\nvoid g() {}\n}\n")
    assert [(d.qualname, d.kind, d.start_line) for d in cpp.definitions] == [
        ("n", "module", 1),
        ("n.C", "class", 2),
        ("n.C.f", "method", 3),  # the definition, not the declaration
        ("n.g", "function", 4),
    ]
    c = _facts("a.c", "typedef struct s { int a; } s_t;\n")
    assert [(d.qualname, d.kind) for d in c.definitions] == [("s_t", "type"), ("s", "class")]


def test_inherits_follow_each_languages_syntax() -> None:
    java = _facts("A.java", "class A extends B implements C, D<E> {}\ninterface I extends J {}\n")
    assert [(h.child, h.base, h.kind) for h in java.inherits] == [
        ("A", "B", "extends"),
        ("A", "C", "implements"),
        ("A", "D", "implements"),
        ("I", "J", "extends"),
    ]
    kotlin = _facts("a.kt", "class A : B(), C\ninterface I : J\n")
    assert [(h.child, h.base, h.kind) for h in kotlin.inherits] == [
        ("A", "B", "extends"),
        ("A", "C", "implements"),
        ("I", "J", "extends"),
    ]
    csharp = _facts("a.cs", "class A : B, IC {}\nstruct S : IEquatable<S> {}\n")
    assert [(h.child, h.base, h.kind) for h in csharp.inherits] == [
        ("A", "B", "extends"),
        ("A", "IC", "implements"),
        ("S", "IEquatable", "implements"),
    ]
    php = _facts("a.php", "<?php\nclass A extends B implements C { use T; }\n")
    assert [(h.base, h.kind) for h in php.inherits] == [
        ("B", "extends"),
        ("C", "implements"),
        ("T", "implements"),
    ]
    ts = _facts("a.ts", "class A extends B<number> implements C {}\ninterface I extends J, K {}\n")
    assert [(h.child, h.base, h.kind) for h in ts.inherits] == [
        ("A", "B", "extends"),
        ("A", "C", "implements"),
        ("I", "J", "extends"),
        ("I", "K", "extends"),
    ]


def test_markdown_sections_and_mentions() -> None:
    facts = _facts(
        "docs/guide.md",
        """---
title: Not a heading
---
# Guide

Intro naming `GraphView.open` and graph_view.

Setup
-----

Run `git edda code index` with FileFacts.

```python
# not a heading
class NotMentioned: ...
```

### Details ###

## Setup
""",
    )
    assert [(d.qualname, d.kind, d.start_line, d.end_line) for d in facts.definitions] == [
        ("Guide", "section", 4, 20),
        (f"Guide{SECTION_SEPARATOR}Setup", "section", 8, 18),
        (f"Guide{SECTION_SEPARATOR}Setup{SECTION_SEPARATOR}Details", "section", 18, 18),
        (f"Guide{SECTION_SEPARATOR}Setup (2)", "section", 20, 20),
    ]
    mentions = [
        (m.name, m.section.rsplit(SECTION_SEPARATOR, 1)[-1], m.line) for m in facts.mentions
    ]
    assert mentions == [
        ("GraphView.open", "Guide", 6),
        ("graph_view", "Guide", 6),
        ("FileFacts", "Setup", 11),
    ]


# -- languages -----------------------------------------------------------------------


def test_language_for() -> None:
    assert language_for("src/a.py") == "python"
    assert language_for("a.MJS") == "javascript"
    assert language_for("a.tsx") == "tsx" and language_for("a.cts") == "typescript"
    assert language_for("a.kts") == "kotlin" and language_for("x.bash") == "bash"
    assert language_for("include/a.h", b"#include <stdio.h>\nint f(void);\n") == "c"
    assert language_for("include/a.h", b"#pragma once\n#include <vector>\n") == "cpp"
    assert language_for("include/a.h", b"namespace geo {\n") == "cpp"
    assert language_for("README.markdown") == "markdown"
    assert language_for("Rakefile") == "ruby"
    assert language_for("bin/tool", b"#!/usr/bin/env python3\nprint(1)\n") == "python"
    assert language_for("bin/tool", b"#!/bin/sh -e\n") == "bash"
    assert language_for("bin/tool", b"#!/usr/bin/env -S node --harmony\n") == "javascript"
    assert language_for("bin/tool", b"#!/usr/bin/perl\n") is None
    assert language_for("notes.txt") is None and language_for("Makefile") is None


def test_every_language_has_an_entry_and_loads() -> None:
    expected = {
        "python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp",
        "ruby", "csharp", "php", "kotlin", "swift", "bash",
    }  # fmt: skip
    assert set(LANGUAGES) == expected
    for name in LANGUAGES:
        assert parser(name) is parser(name)  # loaded once, cached


def test_a_file_we_do_not_parse_is_text() -> None:
    assert extract("LICENSE", b"MIT\n\nyes") == FileFacts(language="text", lines=3)
    assert extract("empty.py", b"") == FileFacts(language="python", lines=0)


def test_an_extraction_that_fails_is_a_file_with_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A language whose grammar cannot be loaded: the file keeps its language
    and line count, and says why it has no facts."""
    import dataclasses

    from gitmem.graph import languages

    broken = dataclasses.replace(
        languages.PYTHON, name="broken", extensions=(".broken",), grammar=("gitmem_no_grammar", "f")
    )
    monkeypatch.setitem(languages.LANGUAGES, "broken", broken)
    monkeypatch.setitem(languages._BY_EXTENSION, ".broken", "broken")
    facts = extract("a.broken", b"def f():\n    pass\n")
    assert facts.language == "broken" and facts.lines == 2
    assert facts.definitions == [] and "ModuleNotFoundError" in facts.error


# -- fixture projects ------------------------------------------------------------------

# Thresholds per fact kind (precision, recall). Definitions and imports are
# exact; calls and inheritance leave room for what the syntax cannot say (a
# Ruby method called without arguments looks like a variable; a Swift raw
# enum type sits among the protocols).
THRESHOLDS = {
    "definitions": (1.0, 1.0),
    "imports": (1.0, 1.0),
    "calls": (0.95, 0.85),
    "inherits": (0.8, 0.95),
}


def test_every_language_has_a_fixture_project() -> None:
    assert set(fixture_languages()) == set(LANGUAGES)


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_fixture_project(language: str) -> None:
    scores = fixture_scores(language)
    differences = fixture_differences(language)
    for kind, (precision, recall) in THRESHOLDS.items():
        score = scores[kind]
        assert score.precision >= precision, (kind, differences)
        assert score.recall >= recall, (kind, differences)
    assert scores["definitions"].expected >= 4 and scores["calls"].expected >= 4


def test_fixture_expectations_are_checked() -> None:
    """A fixture's expected facts that the code does not have lower the score."""
    import json

    expected = json.loads((FIXTURES / "go" / "expected.json").read_text())
    assert ["NewCircle", "function", 30, 32] in expected["shapes/shape.go"]["definitions"]
    facts = extract("shapes/shape.go", (FIXTURES / "go" / "shapes" / "shape.go").read_bytes())
    assert ("NewCircle", 30, 32) in {
        (d.qualname, d.start_line, d.end_line) for d in facts.definitions
    }


def test_readme_shows_the_current_accuracy_table() -> None:
    readme = (ROOT / "README.md").read_text()
    assert accuracy_table() in readme


# -- never raises ------------------------------------------------------------------------

PATHS = [f"x{spec.extensions[0]}" for spec in LANGUAGES.values()] + ["x.md", "x.txt"]
CODE_ALPHABET = st.sampled_from(
    [*"abcXYZ_019 \t\n(){}[]<>;:,.=+-*/\\\"'`#@$%&|!?~^",
     "def ", "class ", "fn ", "func ", "impl ", "struct ", "import ", "from ", "return ",
     "#include ", "namespace ", "interface ", "extends ", "\n    ", "```", "# ", "===\n"]
)  # fmt: skip


@settings(max_examples=300)
@given(path=st.sampled_from(PATHS), data=st.binary(max_size=400))
def test_extract_never_raises_on_bytes(path: str, data: bytes) -> None:
    facts = extract(path, data)
    assert facts.error == ""
    assert facts.lines == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


@settings(max_examples=300)
@given(path=st.sampled_from(PATHS), parts=st.lists(CODE_ALPHABET, max_size=120))
def test_extract_never_raises_on_code_like_text(path: str, parts: list[str]) -> None:
    data = "".join(parts).encode()
    facts = extract(path, data)
    assert facts.error == ""
    for d in facts.definitions:
        assert 1 <= d.start_line <= d.end_line <= max(facts.lines, 1)
        assert 0 <= d.start_byte <= d.end_byte <= len(data)
        assert len(d.signature) <= 200 and len(d.doc) <= 500


def test_extract_survives_deep_nesting() -> None:
    for path, src in [
        ("a.py", "x = " + "(" * 5000 + ")" * 5000),
        ("a.js", "f(" * 5000 + ")" * 5000),
        ("a.rs", "fn f() {" + "{" * 5000 + "}" * 5000 + "}"),
    ]:
        facts = extract(path, src.encode())
        assert facts.error == "" and facts.lines == 1


# -- Markdown round trip ---------------------------------------------------------------------

_TITLE = (
    st.text(
        alphabet=st.characters(whitelist_categories=("L", "N"), whitelist_characters=" -_'"),
        min_size=1,
        max_size=20,
    )
    .map(str.strip)
    .filter(lambda t: t and not t.startswith(("-", "=", "_")) and not re.search(r" #+$", t))
)


@st.composite
def _documents(draw: st.DrawFn) -> tuple[str, list[tuple[int, str]]]:
    """A Markdown document and the (level, title) of the headings written in it,
    with fenced code holding heading-like lines between them."""
    headings = draw(st.lists(st.tuples(st.integers(1, 6), _TITLE), max_size=8))
    out: list[str] = []
    for level, title in headings:
        if level <= 2 and draw(st.booleans()):
            out += [title, ("=" if level == 1 else "-") * draw(st.integers(1, 5)), ""]
        else:
            out += [
                f"{'#' * level} {title}" + (" " + "#" * level if draw(st.booleans()) else ""),
                "",
            ]
        body = draw(
            st.sampled_from(["", "Some text.", "```\n# not a heading\n```", "~~~~\n## no\n~~~~"])
        )
        out += [body, ""]
    return "\n".join(out), headings


@settings(max_examples=200)
@given(document=_documents())
def test_markdown_headings_round_trip(document: tuple[str, list[tuple[int, str]]]) -> None:
    text, headings = document
    facts = extract("doc.md", text.encode())
    assert [d.name for d in facts.definitions] == [title for _, title in headings]
    assert all(d.kind == "section" for d in facts.definitions)
    # Each section's parent is the closest earlier heading of a smaller level.
    for n, (d, (level, _)) in enumerate(zip(facts.definitions, headings, strict=True)):
        parents = [i for i in range(n) if headings[i][0] < level]
        closest = [i for i in parents if all(headings[j][0] >= level for j in range(i + 1, n))]
        expected_parent = facts.definitions[closest[-1]].qualname if closest else ""
        assert d.parent == expected_parent
