"""Code split into search chunks at symbol boundaries.

:func:`chunk_file` turns one file (its bytes and its
:class:`~gitmem.graph.facts.FileFacts`) into :class:`Chunk` s, which the code
search index (:mod:`gitmem.graph.codeindex`) embeds and indexes:

* every top-level function, class, interface, type and Markdown section is
  a chunk of its own;
* a class (interface, namespace, section) with definitions inside is split:
  its own lines (the header, its docstring, attributes between methods) form
  chunks of the class, and each method (nested class, subsection) is a chunk
  of its own whose :attr:`Chunk.context` holds the enclosing headers
  (``class Parser(Base):``), so that a method's text still names its class
  (also when it is defined outside the class's lines, as Go methods are:
  the definition's ``parent`` says whose it is);
* code outside definitions (imports, constants, top-level statements) forms
  chunks of kind ``"file"``, one per run of lines between definitions;
* comments, decorators and attributes directly above a definition (no blank
  line between, at most :data:`LEAD_LINES`; not in Markdown) belong to it,
  and so do comments alone between it and the definition before it (a
  banner over a group of methods), except at the top of the file;
* a closing line that holds only punctuation (``}``, ``});``, ``end``) is
  added to the chunk before it rather than being a chunk of its own;
* a file without definitions (plain text, a parse error) is split like one
  long run of top-level lines.

**Size.** A chunk's body holds at most :data:`MAX_LINES` lines and
:data:`MAX_CHARS` characters (a single longer line, minified code, is cut
there). Sixty lines is a screenful, about 400 tokens of typical code, small
enough that an embedding still says what the chunk is about and that a
context pack can show a few. A longer piece is split at statement
boundaries: the next chunk starts at the line in the second half of what
fits that is least nested (bracket depth at its start, then indentation,
then whether a blank line precedes it), the latest such line winning, so a
function body splits between top-level statements, not inside a loop or a
call's arguments. Brackets are counted outside strings and comments with a
small scanner that knows each language's comment syntax: no grammar is
needed, and text files split at paragraph breaks the same way. Each
continuation chunk repeats the last :data:`OVERLAP` non-blank lines of the
one before it and carries the definition's header in its context.

**Guarantees** (checked by property tests): every non-blank line of the
file is in at least one chunk; no body exceeds the size limits; chunks come
in order of their first line; the same input gives the same chunks.

Lines are 1-based and inclusive, as in the facts; the bytes are decoded as
UTF-8, undecodable bytes replaced.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate

from gitmem.graph.facts import Definition, FileFacts

MAX_LINES = 60
MAX_CHARS = 4000
OVERLAP = 2
MIN_SPLIT = 10  # a split chunk holds at least this many lines when the limits allow
LEAD_LINES = 20  # comment, decorator and attribute lines a definition takes along
MAX_CONTEXT = 200  # characters of one enclosing header in a chunk's context

OWN_KINDS = frozenset({"function", "method", "class", "interface", "type", "section", "module"})
"""Definitions that get chunks of their own (constants stay with the lines around them)."""
CONTAINER_KINDS = frozenset({"class", "interface", "section", "module"})
"""Definitions whose inner definitions get chunks of their own."""
FILE_KIND = "file"
"""The kind of a chunk of lines outside any definition."""

_HASH_COMMENTS = frozenset({"python", "ruby", "bash", "shell", "yaml", "toml", "perl", "r"})
_SLASH_COMMENTS = frozenset(
    {
        "javascript",
        "typescript",
        "tsx",
        "go",
        "rust",
        "java",
        "c",
        "cpp",
        "c_sharp",
        "csharp",
        "php",
        "kotlin",
        "swift",
        "scala",
        "dart",
    }
)
# Lines directly above a definition that belong to it: comments, decorators, attributes.
_LEAD = re.compile(r"^\s*(?:@|#|//|/\*|\*|--|\[)")
_COMMENT = re.compile(r"^\s*(?:#(?!\[)|//|/\*|\*|--)")
# A line that only closes something: punctuation, or a keyword that ends a block.
_CLOSING = re.compile(r"^\s*(?:[^\w\s]*|(?:end|fi|done|esac)[^\w\s]*)\s*$")


_PROSE = frozenset({"markdown", "text", ""})
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
_BLOCKS = {'"""': '"""', "'''": "'''", "/*": "*/", "`": "`"}


def _tokens(language: str) -> re.Pattern[str]:
    """What the bracket counter looks for in a line of ``language``: brackets,
    one-line strings (skipped whole), comment starts and the openings of
    multi-line strings and comments (see ``_BLOCKS``)."""
    parts = []
    if language == "python":
        parts += ['"""', "'''"]
    if language in _SLASH_COMMENTS:
        parts += ["//", r"/\*"]
    if language in _HASH_COMMENTS or language == "php":
        parts.append("#")
    if language in ("javascript", "typescript", "tsx", "go"):
        parts.append("`")
    if language not in _PROSE:  # an apostrophe in prose opens no string
        parts += [r'"(?:[^"\\]|\\.)*"?', r"'(?:[^'\\]|\\.)*'?"]
    parts.append(r"[()\[\]{}]")
    return re.compile("|".join(parts))


# A name worth splitting: a lower-case letter then a capital (parseHeader), or
# two capitals then a lower-case letter (HTTPServer); and how it splits.
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z]\w*")
_NAME_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# Bytes -> a for a-z, A for A-Z, 0 for what may be part of a word (digits, _,
# any byte of a non-ASCII character), a space for what cannot.
_CLASSES = bytes(
    ord("a")
    if 97 <= b <= 122
    else ord("A")
    if 65 <= b <= 90
    else ord("0")
    if b >= 128 or b == 95 or 48 <= b <= 57
    else ord(" ")
    for b in range(256)
)
_SEGMENT_WORDS: dict[bytes, tuple[str, ...]] = {}  # a segment -> its names' words (a memo)
_MEMO_LIMIT = 1 << 18


def name_words(text: str) -> list[str]:
    """The words of ``text``'s mixed-case names (see :func:`gitmem.graph.codeindex.searchable`),
    each once, in order of first appearance.

    What :data:`_NAME` finds in the whole text, found faster: a name never
    spans a character that cannot be in a word, so the text is cut at those
    (in bytes, with a translation table: C speed), only the segments with a
    lower-case-then-capital or capital-capital-lower-case pair are looked at,
    and identifiers repeat, so a segment's words are remembered. (The plain
    scan cost 3.5 s over the standard library's 68,000 chunks, this 0.7 s.)"""
    raw = text.encode("utf-8", "surrogatepass")
    classes = raw.translate(_CLASSES)
    find, rfind = classes.find, classes.rfind
    spans: list[tuple[int, int]] = []
    for pair in (b"aA", b"AAa"):
        at = find(pair)
        while at >= 0:
            end = find(b" ", at)
            if end < 0:
                end = len(classes)
            spans.append((rfind(b" ", 0, at) + 1, end))
            at = find(pair, end)
    if not spans:
        return []
    spans.sort()
    memo = _SEGMENT_WORDS
    if len(memo) > _MEMO_LIMIT:
        memo.clear()
    words: dict[str, None] = {}
    last = -1
    for start, end in spans:
        if start == last:
            continue  # both pairs in one segment
        last = start
        segment = raw[start:end]
        found = memo.get(segment)
        if found is None:
            found = memo[segment] = tuple(
                " ".join(_NAME_PARTS.findall(name)).lower()
                for name in _NAME.findall(segment.decode("utf-8", "surrogatepass"))
            )
        words.update(dict.fromkeys(found))
    return list(words)


@dataclass(frozen=True)
class Chunk:
    """A piece of a file to search: lines ``start_line``..``end_line``."""

    path: str
    start_line: int
    end_line: int
    symbol: str  # the definition's qualname; "" for lines outside definitions
    kind: str  # the definition's kind, or "file"
    body: str  # the lines, as in the file (lines joined by "\n", a longer line cut)
    context: tuple[str, ...] = field(default=())  # enclosing headers, outermost first
    language: str = ""
    # The words of the mixed-case names in the context and the body
    # (name_words), found where the chunk was made (a parse worker); None: not yet.
    words: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def header(self) -> str:
        """``path:qualname`` (``path`` alone outside definitions)."""
        return f"{self.path}:{self.symbol}" if self.symbol else self.path

    @property
    def text(self) -> str:
        """What is indexed and embedded: the header line, the context, the body."""
        return "\n".join((self.header, *self.context, self.body))

    # The code index's id and full text of the chunk, computed once per chunk
    # object (a cold build computes them as the parsers' results come in,
    # while the builder waits anyway, and the code index then only looks
    # them up). Not fields: they derive from the fields.
    @cached_property
    def id(self) -> str:
        """SHA-256 of the path, lines, symbol, kind and text (the code index's chunk id)."""
        data = "\0".join(
            (self.path, str(self.start_line), str(self.end_line), self.symbol, self.kind, self.text)
        )
        return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()

    @cached_property
    def searchable(self) -> str:
        """The text as the full-text index holds it: the text, then its
        identifiers split into words (``parseHeader``, ``HTTPServer`` ->
        ``parse header``, ``http server``; the analyzer already splits at
        ``_`` and ``.``), so that a word of a name finds it."""
        text = self.text
        if self.words is None:
            words = name_words(text)
        else:  # those of the context and body found where the chunk was made
            words = list(dict.fromkeys([*name_words(self.header), *self.words]))
        return text + ("\n" + "\n".join(words) if words else "")


@dataclass
class _Node:
    """A definition with a chunk of its own, and those nested in it."""

    definition: Definition
    start: int  # may be above the definition's own start (leading comments, decorators)
    end: int
    children: list[_Node] = field(default_factory=list)


def chunk_file(path: str, data: bytes, facts: FileFacts) -> list[Chunk]:
    """The search chunks of one file (see the module docstring)."""
    return _Chunker(path, data, facts).run()


def encode_chunks(chunks: list[Chunk]) -> bytes:
    """A blob's chunks as its cache entry stores them (their path left out:
    copies of a file share the entry): msgpack rows, packed as the facts are
    (:func:`gitmem.graph.cache.pack`)."""
    import msgspec

    from gitmem.graph.cache import pack

    rows = [
        (
            c.start_line,
            c.end_line,
            c.symbol,
            c.kind,
            c.body,
            list(c.context),
            c.language,
            None if c.words is None else list(c.words),
        )
        for c in chunks
    ]
    return pack(msgspec.msgpack.encode(rows))


def decode_chunks(data: bytes, path: str = "") -> list[Chunk]:
    """The chunks :func:`encode_chunks` stored, at ``path`` (ValueError when
    ``data`` is damaged)."""
    import msgspec

    from gitmem.graph.cache import unpack

    raw = unpack(data)
    if raw is None:
        raise ValueError("damaged chunks")
    try:
        rows = msgspec.msgpack.decode(raw)
        return [
            Chunk(
                path,
                int(a),
                int(b),
                str(sym),
                str(kind),
                str(body),
                tuple(ctx),
                str(lang),
                None if words is None else tuple(words),
            )
            for a, b, sym, kind, body, ctx, lang, words in rows
        ]
    except (msgspec.DecodeError, TypeError) as exc:
        raise ValueError(f"damaged chunks: {exc}") from None


def placed_at(chunks: list[Chunk], path: str) -> list[Chunk]:
    """``chunks`` (a blob's, all at one path) at ``path``: themselves when
    they are there already, else copies."""
    if not chunks or chunks[0].path == path:
        return chunks
    return [
        Chunk(
            path, c.start_line, c.end_line, c.symbol, c.kind, c.body, c.context, c.language, c.words
        )
        for c in chunks
    ]


def split_lines(data: bytes) -> list[str]:
    """The file's lines as chunks number them: split at ``\\n``, a trailing
    ``\\r`` dropped, no empty last line for a final newline."""
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if "\r" not in text:
        return lines
    return [line[:-1] if line.endswith("\r") else line for line in lines]


class _Chunker:
    def __init__(self, path: str, data: bytes, facts: FileFacts) -> None:
        self.path = path
        self.facts = facts
        self.lines = split_lines(data)
        self.blank = [not line or line.isspace() for line in self.lines]
        # characters before each line (1-based: ends[b] - ends[a - 1] counts lines a..b)
        self.ends = [0, *accumulate(map(len, self.lines))]
        self.chunks: list[Chunk] = []
        language = facts.language
        self.tokens = _tokens(language)
        self.by_qualname: dict[str, Definition] = {}
        for d in facts.definitions:
            self.by_qualname.setdefault(d.qualname, d)
        # Markdown headings start with '#': there no line above one belongs to it.
        self.leading = language != "markdown"

    def run(self) -> list[Chunk]:
        n = len(self.lines)
        if n == 0:
            return []
        roots = self._tree(n)
        self._level(roots, 1, n, 1, "", FILE_KIND, (), ())
        self.chunks.sort(key=lambda c: (c.start_line, c.end_line))
        return self.chunks

    # -- the definitions' tree ---------------------------------------------------
    def _tree(self, n: int) -> list[_Node]:
        """Definitions with chunks of their own, nested by their line spans
        (spans that overlap without nesting are cut to nest: extractors'
        spans are trusted only as far as they make a tree)."""
        defs = [d for d in self.facts.definitions if d.kind in OWN_KINDS and 1 <= d.start_line <= n]
        defs.sort(key=lambda d: (d.start_line, -d.end_line, d.qualname))
        roots: list[_Node] = []
        stack: list[_Node] = []
        for d in defs:
            end = min(max(d.end_line, d.start_line), n)
            while stack and stack[-1].end < d.start_line:
                stack.pop()
            if stack:
                parent = stack[-1]
                if parent.definition.start_line == d.start_line and parent.end == end:
                    continue  # the same span twice (a decorated definition's wrapper)
                end = min(end, parent.end)
                siblings = parent.children
            else:
                siblings = roots
            node = _Node(d, d.start_line, end)
            siblings.append(node)
            stack.append(node)
        return roots

    # -- one level: definitions and the lines between them ------------------------
    def _level(
        self,
        nodes: list[_Node],
        lo: int,
        hi: int,
        floor: int,
        symbol: str,
        kind: str,
        context: tuple[str, ...],
        inner: tuple[str, ...],
    ) -> None:
        """Chunks of lines ``lo``..``hi``: each of ``nodes`` (in line order,
        inside the range) on its own with ``inner`` as context, the lines
        between them as chunks of ``symbol``/``kind`` with ``context``. The
        first node takes the comments above it from ``floor`` on."""
        if self.leading:
            for node in nodes:
                self._take_leading(node, floor)
                floor = node.end + 1
        position = lo
        for node in nodes:
            if node.start > position:
                self._gap(position, node.start - 1, symbol, kind, context)
            self._node(node, inner, symbol)
            position = node.end + 1
        if position <= hi:
            self._gap(position, hi, symbol, kind, context)

    def _take_leading(self, node: _Node, floor: int) -> None:
        """Extend ``node`` upward over the comments and decorators directly
        above it, and over comments alone between it and ``floor`` (a banner
        before a group of methods says what follows; not at the top of the
        file, where a licence or a file's description stands)."""
        start = node.start
        while (
            start - 1 >= floor
            and node.start - (start - 1) <= LEAD_LINES
            and not self.blank[start - 2]
            and _LEAD.match(self.lines[start - 2])
        ):
            start -= 1
        node.start = start
        if floor <= 1 or start - floor > LEAD_LINES:
            return
        gap = range(floor, start)
        if any(not self.blank[i - 1] for i in gap) and all(
            self.blank[i - 1] or _COMMENT.match(self.lines[i - 1]) for i in gap
        ):
            node.start = next(i for i in gap if not self.blank[i - 1])

    def _node(self, node: _Node, context: tuple[str, ...], owner: str) -> None:
        d = node.definition
        if d.parent and d.parent != owner:
            # Defined outside its parent's span (a Go method, a Rust impl's
            # function): the parent's header is context all the same.
            parent = self.by_qualname.get(d.parent)
            if parent is not None and 1 <= parent.start_line <= len(self.lines):
                context = (*context, self._headline(parent))
        if d.kind in CONTAINER_KINDS and node.children:
            inner = (*context, self._headline(d))
            # The header line stays the container's: its children's comments start below it.
            floor = d.start_line + 1
            self._level(
                node.children, node.start, node.end, floor, d.qualname, d.kind, context, inner
            )
        else:
            self._split(node.start, node.end, d.qualname, d.kind, context, self._headline(d))

    def _headline(self, d: Definition) -> str:
        line = d.signature or self.lines[d.start_line - 1].strip()
        return line[:MAX_CONTEXT]

    def _gap(self, a: int, b: int, symbol: str, kind: str, context: tuple[str, ...]) -> None:
        """Lines between definitions; only closing lines go to the chunk before."""
        a, b = self._trim(a, b)
        if a > b:
            return
        if self.chunks and all(
            self.blank[i - 1] or _CLOSING.match(self.lines[i - 1]) for i in range(a, b + 1)
        ):
            last = self.chunks[-1]
            if last.end_line < a and self._fits(last.start_line, b):
                self.chunks[-1] = self._chunk(
                    last.start_line, b, last.symbol, last.kind, last.context
                )
                return
        self._split(a, b, symbol, kind, context, "")

    # -- splitting a piece within the size limits ---------------------------------
    def _trim(self, a: int, b: int) -> tuple[int, int]:
        while a <= b and self.blank[a - 1]:
            a += 1
        while b >= a and self.blank[b - 1]:
            b -= 1
        return a, b

    def _fits(self, a: int, b: int) -> bool:
        if b - a + 1 > MAX_LINES:
            return False
        return self.ends[b] - self.ends[a - 1] + (b - a) <= MAX_CHARS

    def _window_end(self, start: int, b: int) -> int:
        """The last line of the longest run from ``start`` within the limits
        (``start`` itself when that one line is already too long)."""
        end, chars = start, len(self.lines[start - 1])
        while end < b and end - start + 1 < MAX_LINES:
            grown = chars + 1 + len(self.lines[end])
            if grown > MAX_CHARS:
                break
            end, chars = end + 1, grown
        return end

    def _split(
        self, a: int, b: int, symbol: str, kind: str, context: tuple[str, ...], headline: str
    ) -> None:
        a, b = self._trim(a, b)
        if a > b:
            return
        if self._fits(a, b):
            self.chunks.append(self._chunk(a, b, symbol, kind, context))
            return
        levels = self._levels(a, b)
        more = (*context, headline) if headline else context
        start = a
        first = True
        while True:
            end = self._window_end(start, b)
            if end >= b:
                self._emit(start, b, symbol, kind, context if first else more)
                return
            best, best_key = end + 1, None
            # Candidates in the window's second half: chunks of 30 to 60 lines.
            lowest = start + max(MIN_SPLIT, (end - start + 1) // 2)
            for line in range(max(start + 1, min(lowest, end + 1)), end + 2):
                if self.blank[line - 1] or _CLOSING.match(self.lines[line - 1]):
                    continue
                key = levels[line - a]
                if best_key is None or key <= best_key:  # the latest of the least nested
                    best, best_key = line, key
            self._emit(start, best - 1, symbol, kind, context if first else more)
            first = False
            start = self._overlap(start, best)

    def _overlap(self, start: int, best: int) -> int:
        """Where the chunk after one split before ``best`` starts: OVERLAP
        non-blank lines earlier, when that leaves progress and room."""
        following, kept, chars = best, 0, 0
        while kept < OVERLAP and following - 1 > start:
            following -= 1
            if not self.blank[following - 1]:
                kept += 1
                chars += len(self.lines[following - 1])
        if kept < OVERLAP or chars > MAX_CHARS // 4 or best - following > 3 * OVERLAP:
            return best
        return following

    def _emit(self, a: int, b: int, symbol: str, kind: str, context: tuple[str, ...]) -> None:
        a, b = self._trim(a, b)
        if a <= b:
            self.chunks.append(self._chunk(a, b, symbol, kind, context))

    def _chunk(self, a: int, b: int, symbol: str, kind: str, context: tuple[str, ...]) -> Chunk:
        body = "\n".join(self.lines[a - 1 : b])[:MAX_CHARS]
        words = tuple(name_words("\n".join((*context, body)) if context else body))
        return Chunk(self.path, a, b, symbol, kind, body, context, self.facts.language, words)

    def _levels(self, a: int, b: int) -> list[tuple[int, int, int]]:
        """How nested each line of ``a``..``b`` starts: (bracket depth,
        indentation, 0 after a blank line else 1); smaller splits better."""
        depths = self._depths(a, b)
        levels = []
        for i in range(a, b + 1):
            line = self.lines[i - 1]
            if "\t" in line:
                line = line.expandtabs(4)
            indent = len(line) - len(line.lstrip())
            after_blank = 0 if i > a and self.blank[i - 2] else 1
            levels.append((depths[i - a], indent, after_blank))
        return levels

    def _depths(self, a: int, b: int) -> list[int]:
        """Bracket depth at the start of each line of ``a``..``b`` (0 at ``a``),
        not counting brackets in strings and comments."""
        depths = []
        depth = 0
        block: str | None = None  # what closes the multi-line string or comment we are in
        tokens = self.tokens
        for i in range(a, b + 1):
            depths.append(depth)
            line = self.lines[i - 1]
            j = 0
            while True:
                if block is not None:
                    found = line.find(block, j)
                    if found < 0:
                        break
                    j, block = found + len(block), None
                match = tokens.search(line, j)
                if match is None:
                    break
                token = match.group()
                j = match.end()
                if token in _OPEN:
                    depth += 1
                elif token in _CLOSE:
                    depth = max(depth - 1, 0)
                elif token in ("//", "#"):
                    break
                elif token in _BLOCKS:
                    block = _BLOCKS[token]
                # else a one-line string, skipped whole (to the end of the line if unclosed)
        return depths
