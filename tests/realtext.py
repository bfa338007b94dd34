"""Real text of many shapes for tokenizer tests: this repository's own lines."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = ("gitmem/**/*.py", "tests/*.py", "*.md", "spec/*.md")


def repository_lines(limit: int = 12_000) -> list[str]:
    """Distinct lines of the repository's source, tests, docs and specs, at
    most ``limit`` of them spread evenly over the sorted set (the repository
    grows; a tokenizer comparison over all of its 70,000 lines, a third of
    them repeats, cost ~10 s a test and found nothing the sample does not)."""
    lines: set[str] = set()
    for pattern in PATTERNS:
        for path in sorted(ROOT.glob(pattern)):
            lines.update(path.read_text(encoding="utf-8").splitlines())
    distinct = sorted(lines)
    if len(distinct) <= limit:
        return distinct
    # exactly ``limit``, evenly spread (a whole-number step halved the
    # sample when the repository grew past ``limit`` lines)
    return [distinct[i * len(distinct) // limit] for i in range(limit)]


def repository_heads(chars: int = 3000) -> list[str]:
    """The first ``chars`` characters of each file (lines together)."""
    return [
        path.read_text(encoding="utf-8")[:chars]
        for pattern in PATTERNS
        for path in sorted(ROOT.glob(pattern))
    ]
