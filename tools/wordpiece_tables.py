"""Generate ``gitmem/embed/wordpiece_tables.py``: which characters BERT's
tokenizer drops and which it splits off as punctuation, as the ``tokenizers``
library (the reference) decides them.

    python tools/wordpiece_tables.py            # rewrite the file
    python tools/wordpiece_tables.py --check    # exit 1 when it differs

The reference classifies characters with tables of an old Unicode version
(a character assigned since is, to it, an ordinary letter), while Python's
``unicodedata`` follows the interpreter's version. Asking the reference
itself, character by character, gives tables that do not depend on either.
Needs the ``tokenizers`` wheel (a dev dependency); gitmem never imports it.

For every code point ``c`` the reference tokenizes ``a{c}b``:

* ``ab``: ``c`` is dropped (a control, format or private-use character, or a
  non-spacing mark);
* ``a``, ``{c}``, ``b``: ``c`` is punctuation (or a CJK ideograph, whose
  ranges gitmem knows);
* ``a``, ``b``: whitespace (checked against gitmem's set, never tabled).

Only characters that normalise to themselves are tabled for punctuation: the
tokenizer looks punctuation up after normalising, so no other is ever asked.
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET = ROOT / "gitmem" / "embed" / "wordpiece_tables.py"
CHUNK = 256  # probes per text (one text per code point makes 1.1 M calls)


def reference_tokenizer(vocab: Path, max_tokens: int | None = 128) -> Any:
    """The ``tokenizers`` pipeline all-MiniLM-L6-v2's tokenizer.json describes,
    built from its parts around a ``vocab.txt`` (``max_tokens`` None: uncut)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    words = models.WordPiece.read_file(str(vocab))
    tokenizer = Tokenizer(
        models.WordPiece(
            words, unk_token="[UNK]", max_input_chars_per_word=100, continuing_subword_prefix="##"
        )
    )
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", words["[CLS]"]), ("[SEP]", words["[SEP]"])],
    )
    if max_tokens is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.no_padding()
    return tokenizer


def code_points() -> Iterable[int]:
    """Every code point a str may hold in UTF-8 (no surrogates)."""
    return (cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


def probe(reference: Any, cps: list[int]) -> dict[int, str]:
    """What the reference does with each code point: ``drop``, ``split``,
    ``space`` or ``word``."""
    out: dict[int, str] = {}
    # Probes are separated by a special token, which the reference matches in
    # the raw text before anything else, so each probe is tokenized on its own.
    texts = [
        "[MASK]".join(f"a{chr(cp)}b" for cp in cps[i : i + CHUNK])
        for i in range(0, len(cps), CHUNK)
    ]
    for n, enc in enumerate(reference.encode_batch(texts, add_special_tokens=False)):
        chunk = cps[n * CHUNK : (n + 1) * CHUNK]
        groups: list[list[str]] = [[]]
        for token in enc.tokens:
            if token == "[MASK]":
                groups.append([])
            else:
                groups[-1].append(token)
        if len(groups) != len(chunk):
            raise SystemExit(f"probes from U+{chunk[0]:04X} did not come back one by one")
        for cp, tokens in zip(chunk, groups, strict=True):
            if tokens == ["ab"]:
                out[cp] = "drop"
            elif tokens == ["a", "b"]:
                out[cp] = "space"
            elif len(tokens) == 3 and tokens[0] == "a" and tokens[2] == "b":
                out[cp] = "split"
            else:
                out[cp] = "word"
    return out


def _ranges(cps: Iterable[int]) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for cp in sorted(cps):
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return ranges


def _normalises_to_itself(ch: str) -> bool:
    return unicodedata.normalize("NFD", ch) == ch and ch.lower() == ch


def generate(vocab: Path) -> str:
    """The module's source."""
    import tokenizers

    from gitmem.embed.wordpiece import _WHITESPACE, _is_cjk

    reference = reference_tokenizer(vocab, max_tokens=None)
    found = probe(reference, list(code_points()))
    spaces = {cp for cp, what in found.items() if what == "space"}
    expected_spaces = {ord(c) for c in _WHITESPACE} - {
        cp for cp, what in found.items() if what == "drop"
    }
    if spaces != expected_spaces:
        raise SystemExit(f"whitespace differs: {sorted(spaces ^ expected_spaces)}")
    drop = [cp for cp, what in found.items() if what == "drop" and chr(cp) not in "\t\n\r"]
    punct = [
        cp
        for cp, what in found.items()
        if what == "split" and cp >= 0x80 and not _is_cjk(cp) and _normalises_to_itself(chr(cp))
    ]

    def table(name: str, ranges: list[tuple[int, int]], doc: str) -> str:
        lines = [f"# {doc}", f"{name}: tuple[tuple[int, int], ...] = ("]
        row: list[str] = []
        for lo, hi in ranges:
            row.append(f"(0x{lo:X}, 0x{hi:X})")
            if len(row) == 4:
                lines.append("    " + ", ".join(row) + ",")
                row = []
        if row:
            lines.append("    " + ", ".join(row) + ",")
        lines.append(")")
        return "\n".join(lines)

    return (
        '"""Which characters BERT\'s uncased tokenizer drops, and which non-ASCII\n'
        "ones it splits off as punctuation (inclusive code point ranges).\n\n"
        "Generated by tools/wordpiece_tables.py from the ``tokenizers`` library\n"
        f"{tokenizers.__version__} (do not edit); tests/test_embed_wordpiece.py checks\n"
        'every code point against it.\n"""\n\n'
        + "# fmt: off\n"
        + table(
            "DROP",
            _ranges(drop),
            "control, format and private-use characters, non-spacing marks, NUL, U+FFFD",
        )
        + "\n\n"
        + table("PUNCTUATION", _ranges(punct), "non-ASCII punctuation (ASCII's is fixed)")
        + "\n# fmt: on\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs")
    parser.add_argument(
        "--vocab",
        type=Path,
        default=ROOT / "gitmem" / "embed" / "data" / "minilm_l6_v2_vocab.txt",
    )
    args = parser.parse_args()
    source = generate(args.vocab)
    if args.check:
        if TARGET.read_text(encoding="utf-8") != source:
            print(f"{TARGET} is out of date: run python tools/wordpiece_tables.py", file=sys.stderr)
            raise SystemExit(1)
        return
    TARGET.write_text(source, encoding="utf-8")


if __name__ == "__main__":
    main()
