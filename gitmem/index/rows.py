"""Index-side text processing: CJK bigrams for the full-text index.

What text each event type is found by is in :mod:`gitmem.memory.describe`.
"""

from __future__ import annotations

import re

# Hiragana, Katakana, CJK ideographs (incl. extension A and compatibility), Hangul.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")


def cjk_grams(text: str) -> list[str]:
    """Overlapping character bigrams of every CJK run (a lone character stays a
    unigram): CJK text has no spaces, so words are matched by their bigrams."""
    if text.isascii():  # most text, and str knows it without a scan
        return []
    grams: list[str] = []
    for run in _CJK.findall(text):
        if len(run) == 1:
            grams.append(run)
        else:
            grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams
