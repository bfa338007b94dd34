"""formats/ must match the code, and the hot path's type table must match the Structs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec

from gitmem.records.names import EVENT_TYPES, REQUIRED_FIELDS
from gitmem.records.types import BODY_TYPES

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ROOT / "formats"
sys.path.insert(0, str(ROOT / "tools"))  # the generator is a tool, not part of the package

import schema  # noqa: E402


def test_formats_directory_matches_the_code():
    differing = schema.diff(FORMATS)
    assert differing == [], (
        f"formats/ is out of date for {differing}; regenerate with "
        "'python tools/schema.py formats/' and review the change"
    )


def test_diff_notices_a_changed_schema(tmp_path):
    schema.main([str(tmp_path)])
    assert schema.diff(tmp_path) == []
    target = tmp_path / "body.note.v1.schema.json"
    doc = json.loads(target.read_text())
    doc["required"] = []
    target.write_text(json.dumps(doc))
    (tmp_path / "stray.json").write_text("{}")
    assert schema.diff(tmp_path) == ["body.note.v1.schema.json", "stray.json"]


def test_every_type_has_a_schema_file():
    for name in BODY_TYPES:
        doc = json.loads((FORMATS / f"body.{name}.v1.schema.json").read_text())
        assert doc["title"].startswith(f"gitmem '{name}'")


def test_hot_path_type_table_agrees_with_structs():
    assert set(EVENT_TYPES) == set(BODY_TYPES)
    for name, cls in BODY_TYPES.items():
        info = msgspec.inspect.type_info(cls)
        required = {f.name for f in info.fields if f.required}
        assert set(REQUIRED_FIELDS[name]) == required, name
