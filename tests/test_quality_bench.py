"""``bench/quality.py`` on the development sets of ``../shared/evals``.

A regression guard, not the target: on a 10% slice of each set (its queries,
their gold items and 10% of the other items), hybrid search must rank at
least as well as full text alone. The slice is smaller and easier than the
whole set, so the figures are compared within one run only. The baseline the
bench computes must be the published one (``evals/README.md``) on the whole
sets, so that the README's table compares with the same BM25.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import ROOT

# The sets sit beside the checkout; $GITMEM_EVALS points elsewhere (a clone in /tmp).
EVALS = Path(os.environ.get("GITMEM_EVALS") or ROOT.parent / "shared" / "evals")
SETS = {"locomo-dev": "recall@10", "githist-datasette": "mrr@10"}
PUBLISHED = {"locomo-dev": 0.575, "githist-datasette": 0.687}  # evals/README.md, FTS5 BM25


@pytest.fixture(scope="module")
def quality() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quality", ROOT / "bench" / "quality.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["quality"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _folder(name: str) -> Path:
    folder = EVALS / name
    if not folder.is_dir():
        pytest.skip(f"no development set at {folder}")
    return folder


@pytest.mark.parametrize("name", sorted(SETS))
def test_hybrid_is_not_below_lexical_on_a_slice(
    quality: ModuleType, name: str, tmp_path: Path
) -> None:
    report: dict[str, Any] = quality.evaluate(_folder(name), fraction=0.1, workdir=tmp_path)
    metric = SETS[name]
    overall = report["overall"]
    assert report["slice"] == 0.1 and 20 <= report["queries"] <= 100, report["queries"]
    assert report["model"] != "none"  # the vectors were built: hybrid is really hybrid
    assert overall["hybrid"][metric] >= overall["lexical"][metric], json.dumps(overall)
    for system in ("bm25", "lexical", "vector", "hybrid"):
        assert set(overall[system]) == {"recall@5", "recall@10", "hit@10", "mrr@10"}
        assert 0.0 < overall[system][metric] <= 1.0, (system, overall)


def test_slices_are_deterministic_and_nested(quality: ModuleType) -> None:
    folder = _folder("githist-datasette")
    tenth, again, fifth = (quality.load(folder, f) for f in (0.1, 0.1, 0.2))
    ids = [[q.id for c in d.corpora for q in c.queries] for d in (tenth, again, fifth)]
    assert ids[0] == ids[1] and set(ids[0]) < set(ids[2])
    items = {i.key for c in tenth.corpora for i in c.items}
    assert all(g in items for c in tenth.corpora for q in c.queries for g in q.gold)
    whole = quality.load(folder)
    assert 0.05 < len(ids[0]) / whole.queries < 0.15


@pytest.mark.parametrize("name", sorted(SETS))
def test_the_baseline_is_the_published_one(quality: ModuleType, name: str) -> None:
    scores = quality.baseline(quality.load(_folder(name)))
    assert scores.mean()[SETS[name]] == pytest.approx(PUBLISHED[name], abs=0.0005)


def test_the_command_line(quality: ModuleType, tmp_path: Path, capsys: Any) -> None:
    folder = _folder("locomo-dev")
    assert quality.main([str(folder), "--slice", "0.05", "--json", "--now", "2024-01-01"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["now"] == 1_704_067_200_000_000 and report["kind"] == "conversations"
    assert set(report["categories"]) <= {
        "1 multi-hop",
        "2 temporal",
        "3 open-domain",
        "4 single-hop",
    }
    table = quality.markdown(report)
    assert "| FTS5 BM25 (baseline) |" in table and "| hybrid |" in table
