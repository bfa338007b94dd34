"""The MiniLM embedder's tokenizer: BERT's uncased WordPiece, in pure Python.

all-MiniLM-L6-v2 reads text the way ``bert-base-uncased`` does. Doing it here
(instead of through the ``tokenizers`` wheel) keeps that wheel and what it
requires (``huggingface_hub``, ``hf-xet``, an HTTP client, ...) out of
gitmem's dependencies; tests/test_embed_wordpiece.py checks, id for id, that
both give the same ids, over real text, every code point and generated text.

What :meth:`WordPieceTokenizer.encode` does, in the reference's order:

1. a special token written literally in the text (``[CLS]``, ``[SEP]``,
   ``[UNK]``, ``[PAD]``, ``[MASK]``, case-sensitive) is matched first and
   becomes its own id;
2. every stretch between them is normalised: NUL, U+FFFD and control and
   format characters are dropped, whitespace becomes a space, CJK
   ideographs get a space on either side, then canonical decomposition (NFD)
   with the non-spacing marks removed (accents go: "façade" -> "facade"),
   then lower case, character by character;
3. the result is split at whitespace, and every punctuation character is a
   word of its own;
4. each word becomes the longest vocabulary prefix, then the longest
   ``##``-prefixed continuation, and so on; a word with a piece that is not
   in the vocabulary, or longer than 100 characters, is one ``[UNK]``;
5. ``[CLS]`` + the ids + ``[SEP]``, cut to ``max_tokens`` in all.

Which characters are dropped (step 2) or are punctuation (step 3) comes from
:mod:`gitmem.embed.wordpiece_tables`, generated from the reference itself
(tools/wordpiece_tables.py): its character tables are of an older Unicode
version than Python's ``unicodedata`` (a character assigned since, many emoji
among them, is an ordinary letter to it), and tables of its own answers do
not depend on either version.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from pathlib import Path

from gitmem.embed import wordpiece_tables as tables

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MAX_WORD_CHARS = 100  # longer words are one [UNK] (the reference's max_input_chars_per_word)
CONTINUATION = "##"

# White_Space (what Rust's char::is_whitespace tests), not Python's str.isspace,
# which also counts the information separators U+001C..U+001F.
_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

# The ranges BERT treats as CJK ideographs (the "Chinese character" blocks:
# URO, extensions A to F, the compatibility ideographs and their supplement).
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)

# An ASCII text needs none of the Unicode machinery: tab, newline and carriage
# return become spaces, every other control character goes (vertical tab and
# form feed too: the reference drops controls before it looks for whitespace),
# and every printable non-alphanumeric character is punctuation.
_ASCII_CLEAN = {c: (" " if chr(c) in "\t\n\r" else None) for c in [*range(0x20), 0x7F]}
_ASCII_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9 ]")


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _dropped(cp: int) -> bool:
    i = bisect.bisect_right(_DROP_STARTS, cp) - 1
    return i >= 0 and cp <= tables.DROP[i][1]


_DROP_STARTS = [lo for lo, _hi in tables.DROP]


class _CleanMap(dict[int, str]):
    """``str.translate``'s table for the clean-up step, filled as characters
    are met: the decision for one character is a bisection, then a dict hit."""

    def __missing__(self, cp: int) -> str:
        ch = chr(cp)
        if ch in "\t\n\r":
            out = " "
        elif _dropped(cp):  # before whitespace: the reference drops U+000B, U+0085...
            out = ""
        elif ch in _WHITESPACE:
            out = " "
        elif _is_cjk(cp):
            out = f" {ch} "
        else:
            out = ch
        self[cp] = out
        return out


def _class_of(ranges: list[tuple[int, int]]) -> str:
    return "".join(
        re.escape(chr(lo)) + ("-" + re.escape(chr(hi)) if hi > lo else "") for lo, hi in ranges
    )


# After normalisation the only whitespace left is " ": a word is a run of
# anything else that is not punctuation, and a punctuation character is a word.
_PUNCT_CLASS = _class_of(
    [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E), *tables.PUNCTUATION]
)
_WORDS = re.compile(f"[^ {_PUNCT_CLASS}]+|[{_PUNCT_CLASS}]")


class WordPieceTokenizer:
    """Encode text to BERT uncased WordPiece ids (see the module docstring).

    Build it with :meth:`from_file` on a ``vocab.txt`` (one token a line, the
    line number is the id). Not thread-safe for concurrent first use of a
    word (the caches are plain dicts), which is harmless: two threads at
    worst compute the same word twice.
    """

    def __init__(self, vocab: dict[str, int], *, max_tokens: int = 128) -> None:
        missing = [t for t in SPECIAL_TOKENS if t not in vocab]
        if missing:
            raise ValueError(f"the vocabulary lacks {', '.join(missing)}")
        if max_tokens < 2:
            raise ValueError(f"max_tokens is {max_tokens}: it must leave room for [CLS] and [SEP]")
        self._vocab = vocab
        self.max_tokens = max_tokens
        self.cls_id = vocab["[CLS]"]
        self.sep_id = vocab["[SEP]"]
        self.unk_id = vocab["[UNK]"]
        self.pad_id = vocab["[PAD]"]
        self._special = {t: vocab[t] for t in SPECIAL_TOKENS}
        self._split = re.compile("(" + "|".join(map(re.escape, SPECIAL_TOKENS)) + ")")
        self._words: dict[str, tuple[int, ...]] = {}
        self._clean = _CleanMap()

    @classmethod
    def from_file(cls, path: Path, *, max_tokens: int = 128) -> WordPieceTokenizer:
        """Read a ``vocab.txt``; :class:`ValueError` when it is not one (a
        duplicate token, or no special tokens)."""
        vocab: dict[str, int] = {}
        lines = Path(path).read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline that ends the last line
        for i, line in enumerate(lines):
            token = line.rstrip()
            if token in vocab:
                raise ValueError(
                    f"token {token!r} appears twice (lines {vocab[token] + 1}, {i + 1})"
                )
            vocab[token] = i
        return cls(vocab, max_tokens=max_tokens)

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    # -- encoding ----------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """``[CLS]``, the text's word pieces, ``[SEP]``: at most ``max_tokens`` ids."""
        room = self.max_tokens - 2
        ids = self.pieces(text, limit=room)
        return [self.cls_id, *ids[:room], self.sep_id]

    def pieces(self, text: str, *, limit: int | None = None) -> list[int]:
        """The text's word-piece ids, without ``[CLS]``/``[SEP]`` and uncut;
        with ``limit``, work stops once that many ids are found (the result
        then starts with the same ids, and may be longer)."""
        ids: list[int] = []
        parts = self._split.split(text) if "[" in text else [text]
        for n, part in enumerate(parts):
            if n % 2:  # a special token, matched literally
                ids.append(self._special[part])
            elif part:
                for word in self.words(part):
                    ids.extend(self._word_ids(word))
                    if limit is not None and len(ids) >= limit:
                        return ids
        return ids

    def words(self, text: str) -> list[str]:
        """Normalise ``text`` and split it into words (steps 2 and 3)."""
        if text.isascii():
            return _ASCII_WORDS.findall(text.translate(_ASCII_CLEAN).lower())
        clean = text.translate(self._clean)
        decomposed = unicodedata.normalize("NFD", clean)
        if decomposed != clean:
            # Decomposition brings out the marks that accents were made of;
            # they go as the reference's non-spacing marks do (the same table).
            clean = decomposed.translate(self._clean)
        # Lower case character by character, as the reference does: Python's
        # str.lower gives a final capital sigma a final small sigma (U+03C2).
        return _WORDS.findall(clean.replace("\u03a3", "\u03c3").lower())

    def _word_ids(self, word: str) -> tuple[int, ...]:
        cached = self._words.get(word)
        if cached is not None:
            return cached
        ids = self._wordpiece(word)
        if len(self._words) >= 200_000:
            self._words.clear()  # a bound on memory, not a tuning knob
        self._words[word] = ids
        return ids

    def _wordpiece(self, word: str) -> tuple[int, ...]:
        if len(word) > MAX_WORD_CHARS:
            return (self.unk_id,)
        vocab = self._vocab
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while end > start:
                piece = word[start:end] if start == 0 else CONTINUATION + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return (self.unk_id,)
            ids.append(found)
            start = end
        return tuple(ids)
