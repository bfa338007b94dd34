"""The static embedder's tokenizer: byte-fallback BPE over the LLaMA 2 vocabulary.

The vocabulary and merges come from the pinned tokenizer file (a Hugging Face
``tokenizers`` JSON). Reading it here, instead of through the ``tokenizers``
wheel, keeps that wheel and what it requires (``huggingface_hub``, ``hf-xet``,
an HTTP client, YAML, ...) out of gitmem's dependencies; tests/test_embed.py
checks that both give the same ids.

What the file asks for, and so what :meth:`BPETokenizer.encode` does:

1. a special token written literally in the text (``<unk>``, ``<s>``,
   ``</s>``) is matched first and becomes its own id;
2. every stretch of text between them is normalised: ``▁`` is prepended and
   each space becomes ``▁``;
3. BPE: start from characters (a character outside the vocabulary falls back
   to its UTF-8 bytes, the ``<0xNN>`` tokens) and merge adjacent pairs, the
   lowest merge rank first and the leftmost first among equal ranks.

The normalised text is cut into words before each run of ``▁`` and every word
is merged on its own. That is exact, not an approximation: no token of this
vocabulary has a ``▁`` after another character, so no merge can cross such a
cut (tests/test_embed.py checks the vocabulary). It is what makes a per-word
cache possible, which is where the speed comes from.
"""

from __future__ import annotations

import heapq
import re
from itertools import repeat
from pathlib import Path
from typing import Any

SPACE = "\u2581"  # "▁", SentencePiece's visible space

# Words cached before the cache is cleared (a bound on memory, not a tuning knob:
# English text reuses a few thousand words).
_CACHE_MAX = 200_000

_WORD = re.compile(f"{SPACE}*[^{SPACE}]*")


class BPETokenizer:
    """Encode text to token ids exactly as the pinned tokenizer file specifies.

    Build it with :meth:`from_file`; :meth:`encode` is the only operation.
    Not thread-safe for concurrent first use of a word (the cache is a plain
    dict), which is harmless: two threads at worst compute the same word twice.
    """

    def __init__(self, vocab: dict[str, int], merges: list[str], special: dict[str, int]) -> None:
        self._vocab = vocab
        # "left right" -> rank, exactly as the file spells a merge.
        self._ranks: dict[str, int] = dict(zip(merges, range(len(merges)), strict=True))
        self._special = special
        self._split = (
            re.compile("(" + "|".join(map(re.escape, sorted(special, key=len, reverse=True))) + ")")
            if special
            else None
        )
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_file(cls, path: Path) -> BPETokenizer:
        """Read a tokenizer JSON of the shape described in the module docstring.

        Raises :class:`ValueError` (naming what differs) for any other shape:
        a BPE variant this class does not implement must not yield ids that
        merely look plausible.
        """
        import msgspec

        # (msgspec: twice as fast as json on this 2 MB file, the same values)
        config: Any = msgspec.json.decode(Path(path).read_bytes())
        model = config["model"]

        def expect(what: str, actual: object, wanted: object) -> None:
            if actual != wanted:
                raise ValueError(f"{what} is {actual!r}, expected {wanted!r}")

        expect("model.type", model.get("type"), "BPE")
        expect("model.byte_fallback", model.get("byte_fallback"), True)
        for key in ("dropout", "continuing_subword_prefix", "end_of_word_suffix"):
            expect(f"model.{key}", model.get(key), None)
        expect("model.ignore_merges", model.get("ignore_merges", False), False)
        expect("pre_tokenizer", config.get("pre_tokenizer"), None)
        expect(
            "normalizer",
            config.get("normalizer"),
            {
                "type": "Sequence",
                "normalizers": [
                    {"type": "Prepend", "prepend": SPACE},
                    {"type": "Replace", "pattern": {"String": " "}, "content": SPACE},
                ],
            },
        )
        vocab: dict[str, int] = model["vocab"]
        merges: list[str] = model["merges"]
        try:  # every merge a string with one space, checked in C (60,000 of them)
            spaces = set(map(str.count, merges, repeat(" ")))
        except TypeError:
            spaces = set()
        if merges and spaces != {1}:
            raise ValueError("model.merges must be strings 'left right'")
        missing = [f"<0x{b:02X}>" for b in range(256) if f"<0x{b:02X}>" not in vocab]
        if missing:
            raise ValueError(f"byte fallback tokens missing from the vocabulary: {missing[:4]}")
        special: dict[str, int] = {}
        for token in config.get("added_tokens") or []:
            for flag in ("normalized", "lstrip", "rstrip", "single_word"):
                expect(f"added token {token['content']!r} {flag}", token.get(flag), False)
            special[token["content"]] = token["id"]
        return cls(vocab, merges, special)

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text`` (no ``<s>`` is added).

        Raises :class:`UnicodeEncodeError` for a text that is not valid
        Unicode (a lone surrogate), which has no UTF-8 bytes to fall back to.
        """
        ids: list[int] = []
        parts = self._split.split(text) if self._split is not None else [text]
        # re.split with one group: text, special, text, special, ..., text.
        for i, part in enumerate(parts):
            if i % 2:
                ids.append(self._special[part])
            elif part:
                self._encode_normalized(SPACE + part.replace(" ", SPACE), ids)
        return ids

    def _encode_normalized(self, text: str, ids: list[int]) -> None:
        cache = self._cache
        for word in _WORD.findall(text):
            if not word:
                continue  # findall's empty match at the end
            word_ids = cache.get(word)
            if word_ids is None:
                word_ids = self._merge(word)
                if len(cache) >= _CACHE_MAX:
                    cache.clear()
                cache[word] = word_ids
            ids.extend(word_ids)

    def _merge(self, word: str) -> tuple[int, ...]:
        vocab, ranks = self._vocab, self._ranks
        symbols: list[str | None] = []
        for char in word:
            if char in vocab:
                symbols.append(char)
            else:
                symbols.extend(f"<0x{b:02X}>" for b in char.encode("utf-8"))
        n = len(symbols)
        if n > 1:
            # A doubly linked list over the symbols (a merged-away symbol
            # becomes None) and a heap of candidate merges (rank, left
            # position, merged text). A heap entry can go stale when a
            # neighbour merged first: it is skipped unless its two symbols
            # still spell the merged text. Linear-ish even for a word of
            # thousands of characters without a space (minified code, base64).
            after = [*range(1, n), -1]
            before = list(range(-1, n - 1))
            heap: list[tuple[int, int, str]] = []
            for pos in range(n - 1):
                left, right = symbols[pos], symbols[pos + 1]
                assert left is not None and right is not None
                rank = ranks.get(f"{left} {right}")
                if rank is not None:
                    heap.append((rank, pos, left + right))
            heapq.heapify(heap)
            while heap:
                _, pos, merged = heapq.heappop(heap)
                nxt = after[pos]
                left = symbols[pos]
                if left is None or nxt < 0:
                    continue
                right = symbols[nxt]
                assert right is not None
                if left + right != merged:
                    continue
                symbols[pos], symbols[nxt] = merged, None
                nxt = after[pos] = after[nxt]
                if nxt >= 0:
                    before[nxt] = pos
                    right = symbols[nxt]
                    assert right is not None
                    rank = ranks.get(f"{merged} {right}")
                    if rank is not None:
                        heapq.heappush(heap, (rank, pos, merged + right))
                prev = before[pos]
                if prev >= 0:
                    left = symbols[prev]
                    assert left is not None
                    rank = ranks.get(f"{left} {merged}")
                    if rank is not None:
                        heapq.heappush(heap, (rank, prev, left + merged))
        return tuple(vocab[s] for s in symbols if s is not None)
