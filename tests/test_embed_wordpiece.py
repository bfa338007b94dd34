"""The MiniLM embedder's tokenizer (gitmem.embed.wordpiece): BERT uncased
WordPiece, id for id what the ``tokenizers`` library (a dev dependency)
gives for all-MiniLM-L6-v2's tokenizer, on real text of many shapes, on
every code point and on generated text.
"""

# Look-alike characters (fullwidth, Greek, dotless i) are what these tests are about.
# ruff: noqa: RUF001

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from realtext import repository_heads, repository_lines

from gitmem.embed.minilm import MAX_TOKENS, VOCAB
from gitmem.embed.pinned import DATA_DIR
from gitmem.embed.wordpiece import WordPieceTokenizer

ROOT = Path(__file__).resolve().parent.parent
VOCAB_PATH = DATA_DIR / VOCAB.relpath


def tool(name: str) -> ModuleType:
    """A script of tools/, imported as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def wordpiece() -> WordPieceTokenizer:
    return WordPieceTokenizer.from_file(VOCAB_PATH, max_tokens=MAX_TOKENS)


@pytest.fixture(scope="module")
def tables_tool() -> ModuleType:
    pytest.importorskip("tokenizers")
    return tool("wordpiece_tables")


@pytest.fixture(scope="module")
def reference(tables_tool: ModuleType) -> Any:
    """``tokenizers`` with the pipeline of all-MiniLM-L6-v2's tokenizer.json
    (the file itself is not shipped: it is built from its parts and vocab.txt)."""
    return tables_tool.reference_tokenizer(VOCAB_PATH, MAX_TOKENS)


def test_known_ids(wordpiece: WordPieceTokenizer) -> None:
    # Ids from the tokenizers wheel; the stored vectors depend on them.
    assert wordpiece.encode("the build fails on CI") == [101, 1996, 3857, 11896, 2006, 25022, 102]
    # accents go, case goes, punctuation is a word of its own
    assert wordpiece.encode("naïve Café, façade!") == [101, 15743, 7668, 1010, 8508, 999, 102]
    # a special token written in the text is that token; sub-words get ##
    assert wordpiece.encode("parseHeader() [SEP] x") == [
        *[101, 11968, 3366, 4974, 2121, 1006, 1007, 102, 1060, 102]
    ]
    assert wordpiece.encode("日本語") == [101, 1864, 1876, 1950, 102]  # one word per ideograph
    assert wordpiece.encode("🎉 done") == [101, 100, 2589, 102]  # [UNK]
    assert wordpiece.encode("") == [101, 102]
    # lower case character by character: no final sigma
    assert wordpiece.encode("ΟΔΟΣ") == [101, 1169, 29722, 29730, 29733, 102]
    # vertical tab and form feed are control characters, dropped (not spaces)
    assert wordpiece.encode("\x0bx\x0cy") == [101, 1060, 2100, 102]
    assert wordpiece.vocab_size == 30_522


def test_long_texts_are_cut_to_max_tokens(wordpiece: WordPieceTokenizer) -> None:
    ids = wordpiece.encode("word " * 1000)
    assert len(ids) == MAX_TOKENS and ids[0] == wordpiece.cls_id and ids[-1] == wordpiece.sep_id
    assert wordpiece.pieces("word " * 10) == [2773] * 10
    assert len(wordpiece.pieces("word " * 1000, limit=5)) >= 5  # stops early, uncut
    # a word longer than 100 characters is one [UNK]
    assert wordpiece.encode("a" * 101) == [101, 100, 102]
    assert wordpiece.encode("a" * 100) != [101, 100, 102]


def test_odd_input_never_crashes(wordpiece: WordPieceTokenizer) -> None:
    # A lone surrogate (an undecodable file name) cannot reach the reference
    # (it takes UTF-8): here it is an unknown word.
    assert wordpiece.encode("a\ud800b") == [101, 100, 102]
    assert wordpiece.encode("\x00\ufffd\u200b") == [101, 102]
    assert wordpiece.encode("[CLS][SEP][PAD]") == [101, 101, 102, 0, 102]


def test_the_vocabulary_file_is_checked(tmp_path: Path) -> None:
    twice = tmp_path / "twice.txt"
    twice.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\na\n", encoding="utf-8")
    with pytest.raises(ValueError, match="appears twice"):
        WordPieceTokenizer.from_file(twice)
    bare = tmp_path / "bare.txt"
    bare.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"lacks \[PAD\], \[UNK\]"):
        WordPieceTokenizer.from_file(bare)
    small = tmp_path / "small.txt"
    small.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n##s\n", encoding="utf-8")
    assert WordPieceTokenizer.from_file(small).encode("Hellos hello x") == [2, 5, 6, 5, 1, 3]
    with pytest.raises(ValueError, match="max_tokens"):
        WordPieceTokenizer.from_file(small, max_tokens=1)


def corpus() -> list[str]:
    """Real text of many shapes: this repository's source, docs and specs, line
    by line and whole, and prose in other scripts."""
    lines = repository_lines() + repository_heads()
    lines += [
        "Melanie: I went to the beach with my kids last weekend! [a photo of a sandy beach]",
        "Überprüfung der Größe: Straße, Maß, Fuß — «Anführungszeichen» und „so“",
        "Ça coûte 12,50 € ; l’été dernier, à Noël…",
        "ошибка сборки: не удалось найти модуль «parser»",
        "Η ΟΔΟΣ ΣΟΦΟΚΛΕΟΥΣ· ερώτηση;",
        "构建失败：找不到模块。请检查配置（config.yaml）",
        "ビルドが失敗しました。キャッシュを消してください！",
        "빌드가 실패했습니다 — 캐시를 지우세요",
        "عربي: فشل البناء، يرجى المحاولة لاحقاً؟",
        "עברית: הבנייה נכשלה!",
        "हिन्दी में त्रुटि संदेश।",
        "ไทย: การสร้างล้มเหลว",
        "emoji 🎉🚀👍🏽 👨‍👩‍👧 ☕️ and flags 🇫🇷",
        "math ∑ x² ≤ ∞, ℕ ⊂ ℝ, ½ ¼, Ⅻ, ﬁ ligature, ＦＵＬＬ ｗｉｄｔｈ",
        "zero\u200bwidth\u200djoiner\u2060and\ufeffBOM\u00adsoft",
        "tabs\tand\nnew\r\nlines\x0band\x0cfeeds\x85NEL\u2028LS\u2029PS",
        "İstanbul ıi ǅ ǈ ß ẞ ﬀ Å Ω K",
        "[CLS] literal [SEP] tokens [UNK] [MASK] [PAD] [cls] [ SEP ]",
        "x" * 200 + " " + "ab" * 60,
        "word " * 400,
    ]
    return lines


def test_matches_the_reference_on_real_text(wordpiece: WordPieceTokenizer, reference: Any) -> None:
    texts = corpus()
    assert len(texts) > 10_000
    theirs = [e.ids for e in reference.encode_batch(texts)]
    for text, ids in zip(texts, theirs, strict=True):
        assert wordpiece.encode(text) == ids, text


def test_the_character_tables_are_the_references(tables_tool: ModuleType) -> None:
    """Every code point: what the reference drops, splits off, or treats as
    whitespace is what gitmem's tables and whitespace set say (the table
    module is regenerated in memory and compared with the shipped one)."""
    generated = tables_tool.generate(VOCAB_PATH)
    shipped = (ROOT / "gitmem" / "embed" / "wordpiece_tables.py").read_text(encoding="utf-8")
    assert generated == shipped, "run python tools/wordpiece_tables.py"


ALPHABET = st.sampled_from(
    [
        " ",
        "  ",
        "a",
        "e",
        "ing",
        "the",
        "un",
        "##",
        "[",
        "]",
        "SEP",
        "[SEP]",
        "[CLS]",
        "[UNK]",
        "[MASK]",
        "[PAD]",
        "\n",
        "\t",
        "\x0b",
        "\x85",
        "\u3000",
        "\u2028",
        "é",
        "É",
        "e\u0301",
        "ﬁ",
        "İ",
        "Σ",
        "日",
        "本",
        "가",
        "ア",
        "🎉",
        "👍🏽",
        "\u200d",
        "\x00",
        "\ufffd",
        "-",
        "_",
        ".",
        "()",
        "«",
        "—",
        "2",
        "٣",
        "x" * 60,
    ]
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(ALPHABET, max_size=60).map("".join)
    | st.text(max_size=80)
    | st.text(st.characters(codec="utf-8"), min_size=100, max_size=600)
)
def test_matches_the_reference_on_any_text(
    wordpiece: WordPieceTokenizer, reference: Any, text: str
) -> None:
    assert wordpiece.encode(text) == reference.encode(text).ids
