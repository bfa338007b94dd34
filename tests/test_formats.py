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


def test_the_graph_formats_describe_every_column_and_no_other():
    """Each column of the code graph's tables has its meaning written down
    (the generator fails on a new column without one); none is described
    that the tables no longer have."""
    from gitmem.graph import schema as graph_schema

    tables = {
        "files": graph_schema.files_schema(),
        "nodes": graph_schema.nodes_schema(),
        "edges": graph_schema.edges_schema(),
    }
    assert set(schema.GRAPH_COLUMNS) == set(tables) == set(schema.GRAPH_SORT)
    doc = json.loads((FORMATS / "graph-tables.v1.json").read_text())
    for name, table in tables.items():
        assert set(schema.GRAPH_COLUMNS[name]) == set(table.names), name
        assert set(schema.GRAPH_SORT[name]) <= set(table.names), name
        described = doc["tables"][schema.GRAPH_TABLE_FILES[name]]["columns"]
        assert [c["name"] for c in described] == table.names
