"""The full-text index: Tantivy (the engine Edda used) through ``tantivy``.

Ranking is Tantivy's BM25; gitmem only decides what to index and builds
queries. Three fields hold each event's text:

* ``text``: lowercased, ASCII-folded, English-stemmed words without English
  stop words (the main match);
* ``words``: the same words unstemmed, for typo-tolerant fuzzy matching of
  query words the index has never seen;
* ``cjk``: character bigrams of Chinese, Japanese and Korean runs, which have
  no spaces between words;
* ``head``: the text's first line, analysed as ``text``: the event's most
  telling field comes first (a commit's subject, a decision's key, a
  checkpoint's summary, a learning's topic; see
  :mod:`gitmem.memory.describe`), so a query word found there counts once
  more (BM25 of ``text`` plus BM25 of ``head``, weight :data:`HEAD_WEIGHT`).
  On the commits development set this took full text from MRR@10 0.717 to
  0.741 (0.744 at weight 0.5); on conversation turns, one line each, it
  changes nothing but the relative weight of typo matches (recall@10 0.580
  and 0.578). Weighting repeated query words by their count was tried too:
  +1.3 MRR for full text alone, -0.5 for hybrid search; not kept.

User text never reaches Tantivy's query parser: it is run through the same
analyzers the index used and turned into term and fuzzy-term queries, so no
query string can raise a syntax error. ``advanced=True`` opts into the parser's
syntax (``field:value``, ``AND``, phrases), leniently: errors are skipped,
never raised.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.errors import IndexDamagedError
from gitmem.index.rows import cjk_grams
from gitmem.sidecar.cpus import usable_cpus

if TYPE_CHECKING:
    import tantivy

FULLTEXT_DIR = "fulltext"
MAX_WORD = 40  # longer "words" are hashes, base64 or minified code: noise
FUZZY_WEIGHT = 0.2  # a fuzzy match (flat score) counts for less than the exact word
CLOSE_WEIGHT = 0.8  # a vocabulary word within the typo distance, scored by BM25
CLOSE_TERMS = 3  # at most this many close words per unknown query word
_HEAP = 64_000_000  # split between the writer's threads (Tantivy wants 15 MB each)
PARALLEL_DOCS = 2_000  # documents from which one update indexes on several threads
MAX_THREADS = 4
HEAD_WEIGHT = 1.0  # a query word in the first line counts once more (see the module docstring)


@dataclass(frozen=True)
class TextDoc:
    """What the full-text index holds of one event."""

    id: str
    key: int  # key64 of the id
    text: str


def _analyzers() -> dict[str, tantivy.TextAnalyzer]:
    import tantivy as t

    def base() -> tantivy.TextAnalyzerBuilder:
        return (
            t.TextAnalyzerBuilder(t.Tokenizer.simple())
            .filter(t.Filter.remove_long(MAX_WORD))
            .filter(t.Filter.lowercase())
            .filter(t.Filter.ascii_fold())
        )

    return {
        "gm_stem": base()
        .filter(t.Filter.stopword("english"))
        .filter(t.Filter.stemmer("english"))
        .build(),
        "gm_word": base().build(),
        "gm_cjk": t.TextAnalyzerBuilder(t.Tokenizer.whitespace()).build(),
    }


def _schema() -> tantivy.Schema:
    import tantivy as t

    builder = t.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    # The event's key64, a fast field: hits map to table rows without reading
    # the document store (a cold read of it costs ~0.25 ms per hit).
    builder.add_unsigned_field("key", stored=True, fast=True)
    builder.add_text_field("text", tokenizer_name="gm_stem")
    builder.add_text_field("words", tokenizer_name="gm_word", index_option="basic")
    builder.add_text_field("cjk", tokenizer_name="gm_cjk")
    builder.add_text_field("head", tokenizer_name="gm_stem")
    return builder.build()


class FullText:
    """One Tantivy index directory."""

    def __init__(self, directory: Path, *, create: bool = False) -> None:
        """Open the index in ``directory`` (IndexDamagedError when there is
        none or Tantivy cannot open it), or with ``create`` make a new one."""
        import tantivy as t

        self.directory = directory
        if create:
            directory.mkdir(parents=True, exist_ok=True)
            index = t.Index(_schema(), path=str(directory), reuse=True)
        else:
            try:
                if not t.Index.exists(str(directory)):
                    raise IndexDamagedError(f"no full-text index in {directory.name}")
                index = t.Index(_schema(), path=str(directory), reuse=True)
            except (ValueError, OSError) as exc:  # Tantivy's errors are ValueErrors
                raise IndexDamagedError(f"full-text index: {exc}") from None
        self.analyzers = _analyzers()
        for name, analyzer in self.analyzers.items():
            index.register_tokenizer(name, analyzer)
        # Reload only when told to (after our own commits): the default policy
        # starts a thread that watches meta.json and touches the directory for
        # as long as the index lives, which outlives close() and races with
        # whoever replaces the files.
        index.config_reader(reload_policy="Manual")
        self.index: tantivy.Index | None = index  # None once closed
        # The last query built (hybrid search builds the same one twice: for the
        # best matches, then to score the vector side's candidates); reset by update.
        self._built: tuple[str, bool, tantivy.Query | None] | None = None

    def close(self) -> None:
        """Drop the Tantivy index: its reader, searchers and memory-mapped
        segments go with the last reference (tantivy has no explicit close)."""
        self.index = None

    @property
    def _index(self) -> tantivy.Index:
        if self.index is None:
            raise ValueError("the full-text index was closed")  # a bug in the caller
        return self.index

    def update(
        self, add: Iterable[TextDoc], delete: Iterable[str] = (), *, fresh: bool = False
    ) -> int:
        """Add (or replace) and delete documents in one commit; returns the
        number added. ``fresh``: the index is new and ``add`` holds each id
        once, so nothing needs replacing."""
        import tantivy as t

        index = self._index
        # Many documents (a first build) are indexed by a thread per core:
        # Tantivy's indexing runs outside the GIL, and the commit then writes
        # a segment per thread (on the standard library's 68,000 code chunks,
        # 2.0 s instead of 3.8 s on two cores). Few stay on one thread.
        many = isinstance(add, Sequence) and len(add) >= PARALLEL_DOCS
        threads = min(usable_cpus(), MAX_THREADS) if many else 1
        writer = index.writer(heap_size=_HEAP, num_threads=threads)
        # An index without documents has nothing to replace: only a document
        # added twice in this call must not be there twice.
        empty = index.searcher().num_docs == 0
        added_ids: set[str] = set()
        added = 0
        try:
            for event_id in delete:
                writer.delete_documents_by_term("id", event_id)
            for doc in add:
                # Replace, never duplicate: a refresh interrupted after this
                # commit re-adds the same events next time.
                if fresh:  # each id comes once: a million of them need no set
                    pass
                elif not empty or doc.id in added_ids:
                    writer.delete_documents_by_term("id", doc.id)
                else:
                    added_ids.add(doc.id)
                document = t.Document()
                document.add_text("id", doc.id)
                document.add_unsigned("key", doc.key)
                document.add_text("text", doc.text)
                document.add_text("words", doc.text)
                document.add_text("head", head_line(doc.text))
                grams = cjk_grams(doc.text)
                if grams:
                    document.add_text("cjk", " ".join(grams))
                writer.add_document(document)
                added += 1
            writer.commit()
            writer.wait_merging_threads()
        except BaseException:
            writer.rollback()
            raise
        index.reload()
        self._built = None  # typo matches depend on the words indexed
        return added

    def count(self) -> int:
        """Documents in the index."""
        return int(self._index.searcher().num_docs)

    def _query(self, text: str, advanced: bool) -> tantivy.Query | None:
        built = self._built
        if built is not None and built[0] == text and built[1] == advanced:
            return built[2]
        query = self._build(text, advanced)
        self._built = (text, advanced, query)
        return query

    def _build(self, text: str, advanced: bool) -> tantivy.Query | None:
        import tantivy as t

        index = self._index
        schema = index.schema
        if advanced:
            query, _errors = index.parse_query_lenient(
                text, ["text", "head", "cjk"], fuzzy_fields={"words": (False, 1, True)}
            )
            return query
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for term in sorted(set(self.analyzers["gm_stem"].analyze(text))):
            clauses.append((t.Occur.Should, t.Query.term_query(schema, "text", term)))
            head = t.Query.term_query(schema, "head", term)
            clauses.append((t.Occur.Should, t.Query.boost_query(head, HEAD_WEIGHT)))
        searcher = index.searcher()
        for word in sorted(set(self.analyzers["gm_word"].analyze(text))):
            # Only words the index has never seen may be typos: fuzzy matches
            # score flat, and for a known word they would add noise, not recall.
            if len(word) < 4 or word.isdigit() or searcher.doc_freq("words", word):
                continue
            distance = 2 if len(word) >= 8 else 1
            # Close words sharing the first two letters are scored by BM25 like
            # any term; the fuzzy query (flat score) also catches typos there.
            for term in _close_terms(searcher, word, distance):
                close = t.Query.term_query(schema, "words", term)
                clauses.append((t.Occur.Should, t.Query.boost_query(close, CLOSE_WEIGHT)))
            fuzzy = t.Query.fuzzy_term_query(schema, "words", word, distance, True)
            clauses.append((t.Occur.Should, t.Query.boost_query(fuzzy, FUZZY_WEIGHT)))
        for gram in sorted(set(cjk_grams(text))):
            clauses.append((t.Occur.Should, t.Query.term_query(schema, "cjk", gram)))
        if not clauses:
            return None
        return t.Query.boolean_query(clauses)

    def search(self, text: str, limit: int, *, advanced: bool = False) -> list[tuple[str, float]]:
        """(event id, BM25 score) best first, ties by id; [] when nothing is searchable."""
        searcher = self._index.searcher()
        found = []
        for _key, score, addr in self._hits(searcher, text, limit, advanced):
            found.append((str(searcher.doc(addr)["id"][0]), score))
        found.sort(key=lambda hit: (-hit[1], hit[0]))
        return found

    def search_keys(
        self, text: str, limit: int, *, advanced: bool = False
    ) -> list[tuple[int, float]]:
        """(key64, BM25 score) best first, ties by key (the leading digits of the id)."""
        searcher = self._index.searcher()
        found = [(key, score) for key, score, _addr in self._hits(searcher, text, limit, advanced)]
        found.sort(key=lambda hit: (-hit[1], hit[0]))
        return found

    def scores_of(
        self, text: str, ids: Sequence[str], *, advanced: bool = False
    ) -> dict[int, float]:
        """key64 -> BM25 score of the documents ``ids`` for ``text``, exactly as
        :meth:`search_keys` would score them; documents the query does not
        match are absent. (Hybrid search scores the vector side's candidates
        with it, wherever they rank in full text.)"""
        import tantivy as t

        if not ids:
            return {}
        index = self._index
        # (A union of one-document term queries: a term-set query walks a
        # bitset of the whole index, ~5x slower here.)
        only = t.Query.boolean_query(
            [(t.Occur.Should, t.Query.term_query(index.schema, "id", i)) for i in ids]
        )
        # A must-match clause scored 0 restricts the query without changing its scores.
        restrict = t.Query.const_score_query(only, 0.0)
        hits = self._hits(index.searcher(), text, len(ids), advanced, restrict)
        return {key: score for key, score, _addr in hits}

    def _hits(
        self,
        searcher: tantivy.Searcher,
        text: str,
        limit: int,
        advanced: bool,
        restrict: tantivy.Query | None = None,
    ) -> list[tuple[int, float, tantivy.DocAddress]]:
        import tantivy as t

        query = self._query(text, advanced)
        if query is not None and restrict is not None:
            query = t.Query.boolean_query([(t.Occur.Must, query), (t.Occur.Must, restrict)])
        # Tantivy sizes its top-k heap by the limit and aborts the process
        # (SIGABRT) on absurd ones: never ask for more than there are documents.
        limit = min(limit, searcher.num_docs)
        if query is None or limit <= 0:
            return []
        try:
            hits = searcher.search(query, limit, count=False).hits
        except ValueError:
            if not advanced:
                raise
            # The lenient parser accepts some queries the engine then refuses
            # (``text:*`` asks for a fast field): like a syntax error, no match.
            return []
        if not hits:
            return []
        keys = searcher.fast_field_values("key", [addr for _score, addr in hits])
        return [
            (int(key), float(score), addr)
            for key, (score, addr) in zip(keys, hits, strict=True)
            if key is not None
        ]


def head_line(text: str) -> str:
    """The first line of an event's text (its ``head`` field)."""
    return text.split("\n", 1)[0]


def _close_terms(searcher: tantivy.Searcher, word: str, distance: int) -> list[str]:
    """Indexed words within ``distance`` edits of ``word`` that share its first
    two letters: closest first, then the most frequent, then alphabetical."""
    found = []
    for term, freq in searcher.terms_with_prefix("words", word[:2]):
        if abs(len(term) - len(word)) > distance:
            continue
        d = edit_distance(word, term, distance)
        if d <= distance:
            found.append((d, -freq, term))
    return [term for _d, _f, term in sorted(found)[:CLOSE_TERMS]]


def edit_distance(a: str, b: str, bound: int) -> int:
    """Optimal-string-alignment distance (a transposition is one edit), or
    ``bound + 1`` as soon as it must exceed ``bound``."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                value = min(value, previous2[j - 2] + 1)
            current[j] = value
        if min(current) > bound:
            return bound + 1
        previous2, previous = previous, current
    return previous[-1]


def analyze(text: str) -> Sequence[str]:
    """The stemmed terms of ``text`` as the index sees them (for --explain)."""
    return list(_analyzers()["gm_stem"].analyze(text))
