"""Code search (issue 13, item 5): chunks at symbol boundaries
(gitmem.graph.chunks), the code index (gitmem.graph.codeindex), ``git edda
search --code`` / ``--all`` and the context pack's code tier.

The facts a chunker reads come from Python's own ``ast`` here (and by hand
for Markdown and brace languages), so these tests do not depend on the
tree-sitter extractors; the embeddings come from the default offline
("static") embedder.
"""

from __future__ import annotations

import ast
import itertools
import json
import shutil
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, scratch_repo
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem import Memory
from gitmem.capture.sealer import Draft
from gitmem.errors import NotFoundError
from gitmem.graph.chunks import (
    FILE_KIND,
    MAX_CHARS,
    MAX_LINES,
    Chunk,
    chunk_file,
    name_words,
    split_lines,
)
from gitmem.graph.codeindex import (
    CHUNKS_DIR,
    CodeIndex,
    build_code_index,
    code_index_files,
    read_meta,
    searchable,
)
from gitmem.graph.facts import Definition, FileFacts

T0 = 1_748_464_000_000_000  # 2025-05-28, in microseconds
NOW = T0 + 86_400_000_000


# facts without the extractors ------------------------------------------------------------
def python_facts(source: str) -> FileFacts:
    """Definitions as Python's ast sees them (decorators not in the span)."""
    definitions: list[Definition] = []

    def walk(node: ast.AST, prefix: str, parent_kind: str, parent: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if isinstance(child, ast.ClassDef):
                    kind = "class"
                else:
                    kind = "method" if parent_kind == "class" else "function"
                qualname = prefix + child.name
                definitions.append(
                    Definition(
                        child.name,
                        qualname,
                        kind,  # type: ignore[arg-type]
                        child.lineno,
                        child.end_lineno or child.lineno,
                        0,
                        0,
                        parent=parent,
                    )
                )
                walk(child, qualname + ".", kind, qualname)
            else:
                walk(child, prefix, parent_kind, parent)

    walk(ast.parse(source), "", "", "")
    return FileFacts("python", source.count("\n") + 1, definitions=definitions)


def markdown_facts(source: str) -> FileFacts:
    """Heading sections, nested by level, each to the line before the next
    heading of its level or above."""
    lines = source.split("\n")
    heads = [
        (i + 1, len(line) - len(line.lstrip("#")), line.lstrip("#").strip())
        for i, line in enumerate(lines)
        if line.startswith("#")
    ]
    definitions = []
    for k, (line, level, title) in enumerate(heads):
        end = len(lines)
        for later, later_level, _ in heads[k + 1 :]:
            if later_level <= level:
                end = later - 1
                break
        parents = [t for ln, lv, t in heads[:k] if lv < level]
        qualname = ".".join([*parents[-1:], title]) if parents else title
        definitions.append(Definition(title, qualname, "section", line, end, 0, 0))
    return FileFacts("markdown", len(lines), definitions=definitions)


def chunks_of(path: str, source: str, facts: FileFacts | None = None) -> list[Chunk]:
    if facts is None:
        facts = python_facts(source)
    return chunk_file(path, source.encode(), facts)


def check_chunks(data: bytes, chunks: list[Chunk]) -> None:
    """Every non-blank line covered, no body over the limits, in order."""
    lines = split_lines(data)
    covered: set[int] = set()
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        assert c.end_line - c.start_line + 1 <= MAX_LINES
        assert len(c.body) <= MAX_CHARS
        assert c.body == "\n".join(lines[c.start_line - 1 : c.end_line])[:MAX_CHARS]
        covered.update(range(c.start_line, c.end_line + 1))
    missing = [i for i, line in enumerate(lines, 1) if line.strip() and i not in covered]
    assert not missing
    starts = [(c.start_line, c.end_line) for c in chunks]
    assert starts == sorted(starts)


# chunking ----------------------------------------------------------------------------------
PARSER = '''\
"""Parsing."""

import re

LIMIT = 10


class Parser(Base):
    """Reads tokens."""

    depth = 0

    def __init__(self, text):
        self.text = text

    # -- reading ------------------------------------------------------------

    @property
    def done(self):
        return not self.text

    def parse(self):
        return [t for t in re.split(" ", self.text)][:LIMIT]


def main():
    print(Parser("a b").parse())
'''


def test_a_class_is_its_header_and_methods_each_with_the_class_as_context() -> None:
    chunks = chunks_of("src/parse.py", PARSER)
    check_chunks(PARSER.encode(), chunks)
    by_symbol = {c.symbol: c for c in chunks}
    assert [(c.symbol, c.kind) for c in chunks] == [
        ("", FILE_KIND),
        ("Parser", "class"),
        ("Parser.__init__", "method"),
        ("Parser.done", "method"),
        ("Parser.parse", "method"),
        ("main", "function"),
    ]
    header = by_symbol["Parser"]
    assert header.body.startswith("class Parser(Base):") and "depth = 0" in header.body
    assert by_symbol[""].body == '"""Parsing."""\n\nimport re\n\nLIMIT = 10'
    parse = by_symbol["Parser.parse"]
    assert parse.context == ("class Parser(Base):",)
    assert parse.text.split("\n")[:3] == [
        "src/parse.py:Parser.parse",
        "class Parser(Base):",
        "    def parse(self):",
    ]
    assert by_symbol["main"].context == () and by_symbol["main"].header == "src/parse.py:main"


def test_decorators_and_comments_above_a_definition_belong_to_it() -> None:
    chunks = {c.symbol: c for c in chunks_of("src/parse.py", PARSER)}
    done = chunks["Parser.done"]
    # The banner (a comment alone, blank lines around it) and the decorator.
    assert done.body.split("\n")[0].strip().startswith("# -- reading")
    assert "    @property" in done.body.split("\n")
    assert chunks["Parser.__init__"].end_line < done.start_line


def test_a_long_function_splits_between_statements_with_overlap() -> None:
    body = []
    for i in range(40):
        body += [
            f"    if value > {i}:",
            f"        total = combine(total, {i},",
            "                        value)",
            "",
        ]
    source = "def accumulate(value):\n    total = 0\n" + "\n".join(body) + "\n    return total\n"
    chunks = chunks_of("acc.py", source)
    check_chunks(source.encode(), chunks)
    assert len(chunks) > 2 and {c.symbol for c in chunks} == {"accumulate"}
    lines = source.split("\n")
    for before, after in itertools.pairwise(chunks):
        assert after.start_line <= before.end_line  # overlap
        new = next(i for i in range(before.end_line, len(lines)) if lines[i])  # 0-based
        assert lines[new].startswith("    if value"), lines[new]
        assert after.context == ("def accumulate(value):",)
    assert chunks[0].context == ()


def test_brace_languages_split_outside_nested_blocks_and_keep_their_closing_brace() -> None:
    inner = "\n".join(
        f"    if (x > {i}) {{\n      y = f(y, [{i}, 'a)']);\n      z += 1;\n    }}"
        for i in range(30)
    )
    source = (
        "class Runner {\n  // A helper.\n  run(x) {\n    let y = 0, z = 0;\n"
        f"{inner}\n    return y;\n  }}\n}}\n"
    )
    n = source.count("\n")
    facts = FileFacts(
        "javascript",
        n,
        definitions=[
            Definition("Runner", "Runner", "class", 1, n, 0, 0),
            Definition("run", "Runner.run", "method", 3, n - 1, 0, 0, parent="Runner"),
        ],
    )
    chunks = chunks_of("run.js", source, facts)
    check_chunks(source.encode(), chunks)
    lines = source.split("\n")
    assert (chunks[0].symbol, chunks[0].start_line, chunks[0].end_line) == ("Runner", 1, 1)
    assert chunks[1].start_line == 2  # the comment above belongs to the method
    # the class's closing brace is not a chunk of its own: it ends the method's last one
    assert (chunks[-1].symbol, chunks[-1].end_line) == ("Runner.run", n)
    for before in chunks[1:-1]:
        new = next(i for i in range(before.end_line, len(lines)) if lines[i])  # 0-based
        assert lines[new].startswith("    if (x"), lines[new]


def test_a_method_outside_its_types_lines_has_the_type_as_context() -> None:
    source = "type Server struct {\n\taddr string\n}\n\nfunc (s *Server) Start() error {\n\treturn nil\n}\n"
    facts = FileFacts(
        "go",
        7,
        definitions=[
            Definition("Server", "Server", "class", 1, 3, 0, 0),
            Definition("Start", "Server.Start", "method", 5, 7, 0, 0, parent="Server"),
        ],
    )
    chunks = chunks_of("server.go", source, facts)
    check_chunks(source.encode(), chunks)
    assert [(c.symbol, c.context) for c in chunks] == [
        ("Server", ()),
        ("Server.Start", ("type Server struct {",)),
    ]


def test_markdown_is_split_by_sections_with_the_parent_heading_as_context() -> None:
    source = textwrap.dedent(
        """\
        Intro before any heading.

        # Guide
        How to use it.
        ## Install
        pip install it
        ## Search
        Search finds things.
        # Reference
        All the options.
        """
    )
    chunks = chunks_of("docs/guide.md", source, markdown_facts(source))
    check_chunks(source.encode(), chunks)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("", FILE_KIND, 1, 1),
        ("Guide", "section", 3, 4),
        ("Guide.Install", "section", 5, 6),
        ("Guide.Search", "section", 7, 8),
        ("Reference", "section", 9, 10),
    ]
    assert chunks[2].context == ("# Guide",)


def test_text_without_definitions_is_windows_split_at_paragraphs() -> None:
    paragraphs = ["\n".join(f"line {p}.{i} of the notes" for i in range(7)) for p in range(20)]
    source = "\n\n".join(paragraphs) + "\n"
    chunks = chunks_of("NOTES.txt", source, FileFacts("text", source.count("\n")))
    check_chunks(source.encode(), chunks)
    assert len(chunks) >= 3 and {c.kind for c in chunks} == {FILE_KIND}
    lines = source.split("\n")
    for before in chunks[:-1]:
        assert lines[before.end_line] == ""  # each window ends at a paragraph's end


def test_a_minified_line_is_cut_to_the_limit() -> None:
    source = "var a=" + "1+" * 5000 + "1;\n"
    chunks = chunks_of("min.js", source, FileFacts("javascript", 1))
    check_chunks(source.encode(), chunks)
    assert len(chunks) == 1 and len(chunks[0].body) == MAX_CHARS


def test_the_standard_library_chunks_within_the_limits() -> None:
    """A real corpus present on every machine: the properties hold on it."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in ("argparse.py", "textwrap.py", "json/decoder.py", "ast.py", "difflib.py"):
        data = (stdlib / name).read_bytes()
        chunks = chunk_file(name, data, python_facts(data.decode()))
        check_chunks(data, chunks)
        assert chunk_file(name, data, python_facts(data.decode())) == chunks


KINDS = ["function", "method", "class", "interface", "type", "constant", "section", "module"]
LANGUAGES = ["python", "javascript", "rust", "c", "markdown", "text", "bash", "go"]


@st.composite
def files(draw: st.DrawFn) -> tuple[bytes, FileFacts]:
    """Any text, and definitions with any spans, even ones that make no sense."""
    pieces = st.sampled_from(
        [
            *("", " ", "  ", "\t", "x", "def f():", "{", "}", "(", ")", "[", "'", '"', '"""', "`"),
            *("#", "// c", "/*", "*/", "@deco", "end", "};", "a = 1", "é", "\r", "y" * 300),
        ]
    )
    line = st.lists(pieces, max_size=8).map("".join)
    lines = draw(st.lists(line, max_size=150))
    if draw(st.booleans()):
        lines.append("z" * draw(st.integers(3000, 9000)))
    data = ("\n".join(lines) + draw(st.sampled_from(["", "\n"]))).encode()
    n = max(len(lines), 1)
    definitions = []
    for i in range(draw(st.integers(0, 25))):
        start = draw(st.integers(-2, n + 2))
        end = start + draw(st.integers(-3, n))
        kind = draw(st.sampled_from(KINDS))
        definitions.append(Definition(f"d{i}", f"q{i}", kind, start, end, 0, 0))  # type: ignore[arg-type]
    return data, FileFacts(draw(st.sampled_from(LANGUAGES)), n, definitions=definitions)


@settings(max_examples=300)
@given(files())
def test_chunks_cover_every_line_within_the_limits_in_order(case: tuple[bytes, FileFacts]) -> None:
    data, facts = case
    chunks = chunk_file("f.x", data, facts)
    check_chunks(data, chunks)
    assert chunk_file("f.x", data, facts) == chunks  # deterministic


# the code index ----------------------------------------------------------------------------
PROJECT = {
    "src/billing.py": '''\
"""Invoices for the shop."""

TAX_RATE = 0.2


def invoice_total(lines):
    """Sum the price of every line and add the sales tax."""
    subtotal = sum(line.price * line.quantity for line in lines)
    return round(subtotal * (1 + TAX_RATE), 2)


class Mailer:
    """Sends messages to customers."""

    def __init__(self, smtp):
        self.smtp = smtp

    def send_welcome(self, user):
        body = f"Hello {user.name}, welcome aboard"
        self.smtp.sendmail("noreply@example.com", user.email, body)

    def send_receipt(self, user, lines):
        total = invoice_total(lines)
        self.smtp.sendmail("noreply@example.com", user.email, f"You paid {total}")
''',
    "src/geometry.py": """\
import math


def circle_area(radius):
    return math.pi * radius**2


def distance(a, b):
    # the pelican crossing: straight-line distance between two points
    return math.hypot(a.x - b.x, a.y - b.y)
""",
    "src/storage.py": """\
import json
import os


def save_snapshot(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def load_snapshot(path):
    with open(path) as f:
        return json.load(f)
""",
    "docs/guide.md": """\
# Guide

## Backups

Snapshots are written to a temporary file first, then renamed.

## Invoices

The invoice total includes the sales tax.
""",
}


def project_chunks(files: dict[str, str] | None = None) -> list[Chunk]:
    chunks: list[Chunk] = []
    for path, source in sorted((files or PROJECT).items()):
        facts = markdown_facts(source) if path.endswith(".md") else python_facts(source)
        chunks += chunk_file(path, source.encode(), facts)
    return chunks


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's code index, built once (tests copy it before changing it)."""
    root = tmp_path_factory.mktemp("code")
    report = build_code_index(root / "g1" / "code", project_chunks(), config={}, stamp_dir=root)
    assert report.chunks == report.added == report.vectors == len(project_chunks())
    assert report.embedded == report.chunks and not report.warnings
    return root / "g1" / "code"


def found(index: CodeIndex, query: str, mode: str = "hybrid", **kwargs: Any) -> list[str]:
    return [f"{h.path}:{h.symbol}" for h in index.search(query, 5, mode, **kwargs)]  # type: ignore[arg-type]


def test_search_finds_a_function_by_a_word_in_its_body(built: Path) -> None:
    with CodeIndex.open(built) as index:
        for mode in ("hybrid", "lexical"):
            assert found(index, "pelican", mode)[0] == "src/geometry.py:distance"
        hit = index.search("pelican crossing", 1)[0]
        assert (hit.start_line, hit.end_line, hit.kind) == (8, 10, "function")
        assert hit.lexical_rank == 1 and "math.hypot" in hit.snippet()
        # a word of a name
        assert set(found(index, "snapshot", "lexical")[:2]) == {
            "src/storage.py:load_snapshot",
            "src/storage.py:save_snapshot",
        }


def test_searchable_text_splits_camel_case_names() -> None:
    chunk = Chunk("a.py", 1, 1, "", FILE_KIND, "x = parseHTTPHeader(HTTPServer)")
    assert searchable(chunk).split("\n")[-2:] == ["parse http header", "http server"]


def _name_words_plainly(text: str) -> list[str]:
    """What name_words finds, by the plain scan of the whole text it speeds up."""
    import re

    words: dict[str, None] = {}
    for name in re.findall(r"[A-Za-z][A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z]\w*", text):
        parts = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", name)
        words.setdefault(" ".join(parts).lower(), None)
    return list(words)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("aAbBzZ09_ .\n(é—ßİ\U0001f600"), max_size=60))
def test_name_words_agrees_with_the_plain_scan(text: str) -> None:
    assert name_words(text) == _name_words_plainly(text)


_NAMEY = st.lists(
    st.sampled_from(
        ["parseHeader", "HTTPServer", "readLine", "xY", "ab", "Cd", "_", " ", ".", "\n"]
    ),
    max_size=8,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(_NAMEY, _NAMEY, st.lists(_NAMEY, max_size=3), _NAMEY)
def test_searchable_text_is_the_same_with_the_words_found_beforehand(
    path: str, symbol: str, context: list[str], body: str
) -> None:
    """A parse worker finds a chunk's context and body words ahead; the
    builder adds its header's: the text indexed is the one found at once."""
    from dataclasses import replace

    plain = Chunk(path, 1, 2, symbol, "function", body, tuple(context))
    ahead = replace(plain, words=tuple(name_words("\n".join((*context, body)))))
    assert searchable(ahead) == searchable(plain)


def test_chunks_carry_their_words_through_the_cache() -> None:
    from gitmem.graph.chunks import decode_chunks, encode_chunks

    source = "class HTTPServer:\n    def parseHeader(self):\n        return readLine()\n"
    chunks = chunk_file("web/server.py", source.encode(), python_facts(source))
    assert chunks and all(c.words is not None for c in chunks)
    for c in chunks:
        assert c.words == tuple(name_words("\n".join((*c.context, c.body))))
    again = decode_chunks(encode_chunks(chunks), "web/server.py")
    assert [(c, c.words) for c in again] == [(c, c.words) for c in chunks]
    assert [searchable(c) for c in again] == [searchable(replace_words(c, None)) for c in chunks]


def replace_words(chunk: Chunk, words: tuple[str, ...] | None) -> Chunk:
    from dataclasses import replace

    return replace(chunk, words=words)


def test_name_words_mid_word_and_repeated_names() -> None:
    text = "x_fooBar xHTTPServer 3dPoint fooBar_bazQux\nfooBar éHTTPServer"
    assert name_words(text) == _name_words_plainly(text)
    assert name_words(text) == ["foo bar", "http server", "baz qux"]


def test_vector_search_finds_a_function_by_meaning(built: Path) -> None:
    with CodeIndex.open(built) as index:
        query = "persist state to disk"  # no word of it is in the code
        assert found(index, query, "lexical") == []
        vector = index.search(query, 3, "vector")
        assert vector[0].symbol == "save_snapshot" and vector[0].vector_rank == 1
        assert found(index, query)[0] == "src/storage.py:save_snapshot"


def test_search_is_deterministic_and_a_rebuild_is_byte_identical(
    built: Path, tmp_path: Path
) -> None:
    with CodeIndex.open(built) as index:
        first = [h.to_json() for h in index.search("invoice tax", 10)]
    with CodeIndex.open(built) as index:
        assert [h.to_json() for h in index.search("invoice tax", 10)] == first
    assert first and [h["score"] for h in first] == sorted(
        (h["score"] for h in first), reverse=True
    )
    again = tmp_path / "code"
    build_code_index(again, list(reversed(project_chunks())), config={}, stamp_dir=tmp_path)
    shard = f"{CHUNKS_DIR}/00.parquet"
    assert (again / shard).read_bytes() == (built / shard).read_bytes()
    assert read_meta(again) == read_meta(built)


def test_an_incremental_build_indexes_only_what_changed(built: Path, tmp_path: Path) -> None:
    changed = dict(PROJECT)
    changed["src/geometry.py"] = PROJECT["src/geometry.py"].replace("pelican", "albatross")
    chunks = project_chunks(changed)
    stamp = tmp_path / "stamp"
    shutil.copytree(built.parent.parent / "embeddings", stamp / "embeddings")
    report = build_code_index(
        tmp_path / "g2" / "code", chunks, config={}, stamp_dir=stamp, reuse=built
    )
    assert report.reused and (report.added, report.removed) == (1, 1)
    assert (report.vectors, report.embedded) == (1, 1)
    fresh = build_code_index(tmp_path / "fresh", chunks, config={}, stamp_dir=stamp)
    assert fresh.embedded == 0  # every text was in the embedding cache
    with CodeIndex.open(tmp_path / "g2" / "code") as a, CodeIndex.open(tmp_path / "fresh") as b:
        for query in ("albatross", "pelican", "persist state to disk", "sales tax"):
            # The same chunks in the same order (BM25 statistics still count a
            # deleted document until Tantivy merges its segment: scores may differ).
            assert [h.id for h in a.search(query, 10)] == [h.id for h in b.search(query, 10)]
        assert found(a, "albatross")[0] == "src/geometry.py:distance"
        assert found(a, "pelican", "lexical") == []
    # In place, the second time with nothing changed.
    again = build_code_index(
        tmp_path / "g2" / "code", chunks, config={}, stamp_dir=stamp, reuse=tmp_path / "g2" / "code"
    )
    assert again.reused and (again.added, again.removed, again.vectors) == (0, 0, 0)
    assert "chunks/00.parquet" in again.files and "fulltext/meta.json" in again.files
    assert again.files == code_index_files(tmp_path / "g2" / "code")


def test_paths_narrow_the_search_before_ranking(built: Path) -> None:
    with CodeIndex.open(built) as index:
        assert {h.path for h in index.search("invoice", 10, paths=["docs/"])} == {"docs/guide.md"}
        assert found(index, "pelican", paths=["src/billing.py"]) == []
        assert found(index, "tax", "vector", paths=["*.md"])[0].startswith("docs/guide.md")


def test_without_embeddings_code_search_is_lexical_and_says_so(tmp_path: Path) -> None:
    config = {"edda.embed.provider": ["none"]}
    report = build_code_index(tmp_path / "code", project_chunks(), config=config, stamp_dir=None)
    assert report.vectors == 0 and "vectors.usearch" not in report.files
    with CodeIndex.open(tmp_path / "code", config=config) as index:
        result = index.query("pelican", 5)
        assert result.hits[0].symbol == "distance"
        assert any("no code vector index" in w for w in result.warnings)
        assert index.query("persist state to disk", 5, "vector").hits == []


def test_a_directory_without_an_index_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        CodeIndex.open(tmp_path)


# the search front --------------------------------------------------------------------------
def cli_json(repo: Path, *args: str) -> dict[str, Any]:
    code, out, err = cli(repo, *args, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.fixture
def repo_with_memory(tmp_path: Path) -> Path:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        mem.append_many(
            [
                Draft("note", {"text": "the pelican crossing bug: distance was squared"}, time=T0),
                Draft("note", {"text": "deploy on fridays is forbidden"}, time=T0 + 1),
            ]
        )
    return repo


def test_search_code_through_the_cli(repo_with_memory: Path, built: Path) -> None:
    repo = repo_with_memory
    data = cli_json(repo, "search", "pelican", "--code", "--code-index", str(built))
    hit = data["hits"][0]
    assert (hit["source"], hit["path"], hit["symbol"], hit["kind"]) == (
        "code",
        "src/geometry.py",
        "distance",
        "function",
    )
    assert (hit["start_line"], hit["end_line"]) == (8, 10) and "pelican" in hit["snippet"]
    assert set(hit["components"]) == {
        "lexical_rank",
        "lexical_bm25",
        "vector_rank",
        "vector_cosine",
        "lexical",
        "vector",
        "relevance",
    }
    code, out, err = cli(
        repo, "search", "pelican", "--code", "--code-index", str(built), "--explain"
    )
    assert code == 0, err
    first = out.split("\n")
    assert first[0] == " 1. code src/geometry.py:8-10 function distance"
    assert first[1].strip() == "def distance(a, b):" and "lexical #1" in first[2]
    # only --path narrows code; the memory filters are refused
    data = cli_json(
        repo, "search", "invoice", "--code", "--path", "docs/", "--code-index", str(built)
    )
    assert {h["path"] for h in data["hits"]} == {"docs/guide.md"}
    for extra in (["--type", "note"], ["--all-branches"], ["--all"]):
        code, _out, err = cli(repo, "search", "x", "--code", *extra, "--code-index", str(built))
        assert code == 2, err


def test_search_code_without_a_code_index_says_how_to_build_one(repo_with_memory: Path) -> None:
    code, _out, err = cli(repo_with_memory, "search", "pelican", "--code")
    assert code == 3 and "git edda code index" in err


def test_search_all_puts_memory_and_code_in_one_ranking(
    repo_with_memory: Path, built: Path
) -> None:
    repo = repo_with_memory
    plain = cli_json(repo, "search", "pelican", "--now", str(NOW))
    mixed = cli_json(
        repo, "search", "pelican", "--all", "--now", str(NOW), "--code-index", str(built)
    )
    sources = [h["source"] for h in mixed["hits"]]
    assert sources[:2] == ["memory", "code"]  # each first in its own corpus: memory wins the tie
    assert mixed["hits"][1]["symbol"] == "distance"
    # a memory hit is the plain search's hit, marked
    assert {k: v for k, v in mixed["hits"][0].items() if k != "source"} == plain["hits"][0]
    assert "source" not in plain["hits"][0]  # plain search's JSON is unchanged
    assert set(mixed["candidates"]) == {"lexical", "vector", "code_lexical", "code_vector"}
    code, out, err = cli(
        repo, "search", "pelican", "--all", "--now", str(NOW), "--code-index", str(built)
    )
    assert code == 0, err
    assert "note" in out.split("\n")[0] and out.split("\n")[1].startswith(" 2. code ")
    # the same twice
    again = cli_json(
        repo, "search", "pelican", "--all", "--now", str(NOW), "--code-index", str(built)
    )
    assert again == mixed
    # without a code index: memory alone, and a warning
    alone = cli_json(repo, "search", "pelican", "--all", "--now", str(NOW))
    assert [h["source"] for h in alone["hits"]] == ["memory"] * len(alone["hits"])
    assert any("code index" in w for w in alone["warnings"])


# the context pack's code tier ----------------------------------------------------------------
def test_the_context_pack_gains_a_code_tier_that_fits_the_budget(
    repo_with_memory: Path, built: Path
) -> None:
    repo = repo_with_memory
    args = ("context", "pelican distance", "--now", str(NOW), "--path", "none")
    without = cli_json(repo, *args)
    assert "code" not in [t["name"] for t in without["tiers"]]
    pack = cli_json(repo, *args, "--code-index", str(built))
    names = [t["name"] for t in pack["tiers"]]
    assert names[names.index("hits") + 1 : names.index("hits") + 3] == ["code", "history"]
    code_tier = pack["tiers"][names.index("code")]
    first = code_tier["items"][0]
    assert first["type"] == "code" and first["id"] is None
    assert first["text"].split("\n")[:2] == [
        "- src/geometry.py:8-10 function distance",
        "    def distance(a, b):",
    ]
    # the tiers before it are as they were
    assert pack["tiers"][: names.index("code")] == without["tiers"][: names.index("code")]
    code, out, err = cli(repo, *args, "--code-index", str(built), "-P")
    assert code == 0 and "## Code related to the query" in out, err
    for budget in (40, 80, 150, 300, 2000):
        small = cli_json(repo, *args, "--budget", str(budget), "--code-index", str(built))
        assert small["used"] <= budget
        tier = next(t for t in small["tiers"] if t["name"] == "code")
        assert (
            len(tier["items"]) + tier["dropped"] == len(code_tier["items"]) + code_tier["dropped"]
        )


def test_code_hits_pull_in_their_callers_and_callees(built: Path, store: Path) -> None:
    """One hop over 'calls' edges of the code graph, within the budget."""
    import pyarrow as pa

    from gitmem.graph.resolve import resolve
    from gitmem.graph.schema import edges_schema, files_schema, node_id
    from gitmem.graph.view import GraphView
    from gitmem.retrieval.context import build_context

    facts = {
        path: markdown_facts(src) if path.endswith(".md") else python_facts(src)
        for path, src in PROJECT.items()
    }
    nodes, contains = resolve(facts)
    total = node_id("src/billing.py", "invoice_total", "function")
    receipt = node_id("src/billing.py", "Mailer.send_receipt", "method")
    area = node_id("src/geometry.py", "circle_area", "function")
    calls = [
        {"src": receipt, "dst": total, "kind": "calls", "confidence": 1.0, "reason": "same-file",
         "line": 23, "path": "src/billing.py"},
        {"src": total, "dst": area, "kind": "calls", "confidence": 0.5, "reason": "unique-name",
         "line": 8, "path": "src/billing.py"},
    ]  # fmt: skip
    edges = pa.concat_tables([contains, pa.Table.from_pylist(calls, schema=edges_schema())])
    graph = GraphView.from_tables(files_schema().empty_table(), nodes, edges)
    with Memory.open(store) as mem, CodeIndex.open(built) as index:
        mem.note("billing notes")

        def code(query: str, limit: int) -> list[Any]:
            return index.search(query, limit, "lexical")

        def pack(budget: int, query: str = "sales tax") -> Any:
            return build_context(mem, query=query, now=NOW, budget=budget, code=code, graph=graph)

        full = pack(5000)
        texts = [item.text for item in full.tier("code").items]
        at = next(i for i, t in enumerate(texts) if t.startswith("- src/billing.py:6-9 function"))
        assert texts[at + 1 : at + 3] == [
            "  - called by src/billing.py:22-24 method Mailer.send_receipt",
            "  - calls src/geometry.py:4-5 function circle_area",
        ]
        assert full.used <= 5000
        # A neighbour that is a hit itself is shown as a hit, not again as a neighbour.
        named = [i.text for i in pack(5000, "invoice_total").tier("code").items]
        assert any(t.startswith("- src/billing.py:22-24 method Mailer.send_receipt") for t in named)
        assert not any("called by src/billing.py:22-24" in t for t in named)
        # Within any budget: a neighbour only with its hit, right below it.
        owner: dict[str, str] = {}
        hit = ""
        for t in texts:
            hit = t if t.startswith("- ") else hit
            owner[t] = hit
        for budget in range(40, 400, 10):
            tight = pack(budget)
            kept = [i.text for i in tight.tier("code").items]
            assert tight.used <= budget
            assert kept == [t for t in texts if t in kept]
            for i, t in enumerate(kept):
                if t.startswith("  - "):
                    assert [h for h in kept[:i] if h.startswith("- ")][-1] == owner[t]


def test_a_damaged_previous_index_is_rebuilt_not_reused(built: Path, tmp_path: Path) -> None:
    previous = tmp_path / "old"
    shutil.copytree(built, previous)
    (previous / "fulltext" / "meta.json").write_text("{not json")
    report = build_code_index(
        tmp_path / "new", project_chunks(), config={}, stamp_dir=tmp_path, reuse=previous
    )
    assert not report.reused and report.added == report.chunks == len(project_chunks())
    with CodeIndex.open(tmp_path / "new") as index:
        assert found(index, "pelican")[0] == "src/geometry.py:distance"


def test_code_index_then_search_code_end_to_end(tmp_path: Path) -> None:
    """Through the graph build, not a directory override: `code index` writes
    the code search index into the graph's generation, `search --code` finds
    it, and a change to one file is searchable after the next build."""
    from tests.conftest import git, init_repo

    repo = init_repo(tmp_path / "repo")
    (repo / "backoff.py").write_text(
        "def retry_with_backoff(call, attempts=5):\n"
        "    '''Call again after a growing pause.'''\n"
        "    for attempt in range(attempts):\n"
        "        pass\n"
    )
    (repo / "README.md").write_text("# Upload\n\nUploads retry with exponential backoff.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "code")
    code, out, err = cli(repo, "code", "index")
    assert code == 0, err
    code, out, err = cli(repo, "search", "--code", "growing pause", "--json")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    assert hits and hits[0]["path"] == "backoff.py"
    (repo / "backoff.py").write_text("def jittered_sleep():\n    '''Sleep a random while.'''\n")
    git(repo, "commit", "-q", "-am", "change")
    code, out, err = cli(repo, "search", "--code", "random while", "--json")
    assert code == 0, err  # the graph (and its code index) is brought up to date first
    assert [h["path"] for h in json.loads(out)["hits"]][:1] == ["backoff.py"]
    code, out, err = cli(repo, "search", "--code", "growing pause", "--json")
    assert not any("growing pause" in json.dumps(h) for h in json.loads(out)["hits"])
