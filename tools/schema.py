"""Generate ``formats/``: machine-readable schemas of every stored record.

    python tools/schema.py formats/        # rewrite the files
    python tools/schema.py --check formats/ # exit 1 when they differ

JSON Schemas come from the msgspec Structs in :mod:`gitmem.records.types`;
the spool file, bundle and ref layout schemas are defined here around them;
the Parquet export's columns come from :data:`gitmem.memory.parquet.PARQUET_COLUMNS`.
``tests/test_formats.py`` fails when code and ``formats/`` disagree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from gitmem.records import layout
from gitmem.records.types import BODY_TYPES, Envelope

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _dump(doc: Any) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _schema(cls: type, title: str, description: str) -> dict[str, Any]:
    doc: dict[str, Any] = dict(msgspec.json.schema(cls))
    doc["$schema"] = SCHEMA_DIALECT
    doc["title"] = title
    doc["description"] = description
    return doc


def generate() -> dict[str, bytes]:
    """File name -> content of every schema in ``formats/``."""
    files: dict[str, bytes] = {}
    files["envelope.v1.schema.json"] = _dump(
        _schema(
            Envelope,
            "gitmem event envelope (format v1)",
            "Canonical JSON blob at events/NNNNNN in a memory commit. Kept forever; unknown fields are preserved.",
        )
    )
    for name, cls in BODY_TYPES.items():
        files[f"body.{name}.v1.schema.json"] = _dump(
            _schema(
                cls,
                f"gitmem '{name}' event body (format v1)",
                f"Canonical JSON blob at p/<id[:2]>/<id> in the payload store for events of type '{name}'. "
                "Fields at their default are omitted; unknown fields are preserved; strings of at least "
                f"{layout.ATTACHMENT_MIN_BYTES} UTF-8 bytes are stored as attachment references.",
            )
        )
    envelope_ref = {"$ref": "envelope.v1.schema.json"}
    files["attachment-ref.v1.schema.json"] = _dump(
        {
            "$schema": SCHEMA_DIALECT,
            "title": "attachment reference inside a stored body",
            "type": "object",
            "properties": {
                layout.ATTACHMENT_KEY: {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
                "size": {"type": "integer", "minimum": 0},
            },
            "required": [layout.ATTACHMENT_KEY, "size"],
            "additionalProperties": False,
        }
    )
    files["spool-file.v1.schema.json"] = _dump(
        {
            "$schema": SCHEMA_DIALECT,
            "title": "capture spool file (<common dir>/edda/spool/<time>-<pid>-<rand>.json)",
            "type": "object",
            "properties": {
                "v": {"const": 1},
                "events": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {"envelope": envelope_ref, "body": {"type": "object"}},
                        "required": ["envelope", "body"],
                    },
                },
            },
            "required": ["v", "events"],
        }
    )
    files["bundle.v1.schema.json"] = _dump(
        {
            "$schema": SCHEMA_DIALECT,
            "title": "gitmem export bundle",
            "type": "object",
            "properties": {
                "format": {"const": "gitmem-bundle"},
                "version": {"const": 1},
                "events": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "envelope": envelope_ref,
                            "body": {"type": ["object", "null"]},
                            "redacted": {"type": "boolean"},
                        },
                        "required": ["envelope", "body", "redacted"],
                    },
                },
            },
            "required": ["format", "version", "events"],
        }
    )
    files["layout.v1.json"] = _dump(
        {
            "format": layout.FORMAT_VERSION,
            "refs": {
                "branch_chain": layout.BRANCH_PREFIX + "<branch, '%' -> '%25', '/' -> '%2F'>",
                "detached_chain": layout.DETACHED_REF,
                "payload_store": layout.PAYLOAD_REF,
                "payload_partition": layout.PARTITION_PREFIX
                + "<yyyy>-W<ww> (ISO week of event time, UTC) or "
                + layout.LEGACY_PARTITION,
                "partition_base": layout.PARTITION_BASE_PREFIX
                + "<partition> (on remotes only: spec/sync.md)",
            },
            "event_commit": {
                "tree": {
                    layout.EVENTS_DIR
                    + "/NNNNNN": "envelope blob, NNNNNN = 6-digit position from 000000"
                },
                "trailers": [layout.FORMAT_TRAILER, layout.COUNT_TRAILER],
                "identity": f"{layout.IDENTITY_NAME} <{layout.IDENTITY_EMAIL}>",
                "time": "max event time in the commit, seconds, +0000",
            },
            "chain_format": layout.CHAIN_FORMAT,
            "payload_commit": {
                "parents": [],
                "tree": {
                    "<partition>": "gitlink (mode 160000) to the partition's commit, "
                    "kept reachable by its partition ref",
                },
                "trailers": [layout.FORMAT_TRAILER],
                "format": layout.STORE_FORMAT,
                "time": 0,
            },
            "partition_commit": {
                "parents": [],
                "tree": {
                    "p/<id[:2]>/<id>": "stored body blob",
                    "b/<sha[:2]>/<sha256>": "attachment blob",
                },
                "trailers": [layout.FORMAT_TRAILER],
                "format": f"{layout.STORE_FORMAT} ({layout.LEGACY_PARTITION}: 1, "
                "the format-1 store kept as it was)",
                "time": 0,
            },
            "attachment_min_bytes": layout.ATTACHMENT_MIN_BYTES,
            "state_dir": "<git common dir>/edda: spool/, clock, lock, purge-list, pruned, active/, intents/, log/, index/, verify/, redactions.json, forks.json, code-merges.json",
        }
    )
    files.update(_index_formats())
    files.update(_graph_formats())
    files["export-parquet.v1.json"] = _dump(_parquet_format())
    return files


def _parquet_format() -> dict[str, Any]:
    """The Parquet export's columns, from the definition the exporter writes with."""
    from gitmem.memory.parquet import PARQUET_COLUMNS, PARQUET_VERSION, parquet_schema

    schema = parquet_schema()
    meta = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
    return {
        "title": "gitmem Parquet export (git edda export --format parquet)",
        "description": "One row per event, sorted by (time_us, id). The schema is fixed: "
        "it does not depend on which events are exported (a column no event fills is "
        "all null, with its type). For analysis with Arrow tools; 'git edda import' "
        "reads the JSON bundle, not this.",
        "version": PARQUET_VERSION,
        "metadata": meta,
        "columns": [
            {
                "name": f.name,
                "type": str(f.type),
                "nullable": f.nullable,
                "description": column.description,
            }
            for f, column in zip(schema, PARQUET_COLUMNS, strict=True)
        ],
    }


def _index_formats() -> dict[str, bytes]:
    """The derived sidecar indexes (never the source of truth, but still read back)."""
    from gitmem.index import fulltext, segments, table, vectors, vectorshards
    from gitmem.index.manifest import INDEX_DIR, INDEX_VERSION, MANIFEST, Manifest
    from gitmem.sidecar import integrity
    from gitmem.sidecar.generations import WRITTEN

    manifest = _schema(
        Manifest,
        "gitmem index manifest",
        f"<git common dir>/edda/{INDEX_DIR}/{MANIFEST}: the memory tips the sidecar "
        "indexes reflect; written last and atomically. Any other version is rebuilt. "
        "files: '<size>:<crc32, 8 hex digits>' of every file of the generation, by path "
        "inside it; checksum: CRC-32 (8 hex digits) of the other fields as canonical JSON "
        "(sorted keys, no spaces, ASCII). A manifest or a file that does not match is rebuilt.",
    )

    def arrow(schema: object) -> list[dict[str, object]]:
        return [
            {"name": f.name, "type": str(f.type), "nullable": f.nullable}
            for f in schema  # type: ignore[attr-defined]
        ]

    layout_doc = {
        "version": INDEX_VERSION,
        "root": f"<git common dir>/edda/{INDEX_DIR}/",
        "files": {
            MANIFEST: "index-manifest.v1.schema.json",
            "lock": "flock held by the one process building",
            "g-<time>-<hex>/": "one generation; the manifest names the current one",
            f"g-*/{segments.SEGMENT_PREFIX}<hex>.arrow": f"the events table's segments, in the manifest's order: Arrow IPC files of at most {segments.SEGMENT_ROWS} rows, together one row per event sorted by (time, id)",
            f"g-*/{table.MEMBERS_FILE}": "Arrow IPC file, (ref, commit): which chain reaches which memory commit",
            f"g-*/{fulltext.FULLTEXT_DIR}-<hex>/": "Tantivy index directory",
            f"g-*/{vectors.VECTORS_FILE}": "usearch index: metric cos, dtype i8, key = int(id[:16], 16); the vector index's first shard",
            "g-*/vectors.<n>.usearch": f"the vector index's further shards (n = 1, 2, ...), at most {vectorshards.SHARD_VECTORS} vectors each",
            f"g-*/{integrity.STAMP_FILE}": "{path: [dev, inode, size, mtime_ns, ctime_ns, checksum]}: files whose checksum was verified as they are now",
            f"g-*/{WRITTEN}": "{files, order, checksum}: the checksums of the files as the last refresh wrote them, and its segments in order",
            "g-*/.run-*.tmp": "temporary sorted runs of rows while a refresh merges them into the table",
            "embeddings/<model slug>/": "embedding cache: meta.json, digests.<g>.bin (32-byte sha256 of the text), vectors.<g>.f16",
        },
        "events_table": arrow(table.event_schema()),
        "members_table": arrow(table.member_schema()),
        "fulltext_fields": {
            "id": "raw, stored",
            "text": "simple tokenizer, remove_long(40), lowercase, ascii_fold, English stop words, English stemmer",
            "words": "simple tokenizer, remove_long(40), lowercase, ascii_fold (typo matching)",
            "cjk": "character bigrams of CJK runs, whitespace tokenizer",
            "head": "the text's first line, analysed as text (a query word found there counts once more)",
        },
    }
    return {
        "index-manifest.v1.schema.json": _dump(manifest),
        "index-layout.v1.json": _dump(layout_doc),
    }


# What each column of the code graph's tables means (gitmem.graph.schema
# defines their names and types; a column missing here fails the generator).
GRAPH_COLUMNS = {
    "files": {
        "path": "path relative to the work tree, '/'-separated",
        "blob": "git blob id (hex, sha1 or sha256 as the repository) of the content indexed; "
        "for an uncommitted file, the id git would give its bytes (no clean filters)",
        "language": "python, javascript, typescript, tsx, go, rust, java, c, cpp, ruby, csharp, "
        "php, kotlin, swift, bash, markdown, or text (a file node only)",
        "size": "bytes",
        "lines": "lines in the file",
        "source": "commit (from the commit's tree) or worktree (an uncommitted change read from disk)",
        "error": "why the file could not be parsed ('' when it was); it is still a file node",
    },
    "nodes": {
        "id": "stable id: the first 16 hex digits of SHA-256 over path NUL qualname NUL kind",
        "kind": "file, module, class, interface, type, function, method, constant or section",
        "name": "the name as written (a file: its base name)",
        "qualname": "dotted path within its file (Parser.parse); '' for a file; "
        "the module's name for an external module",
        "path": "the file that defines it ('' for an external module)",
        "language": "the file's language",
        "start_line": "first line, 1-based",
        "end_line": "last line, inclusive",
        "signature": "the header up to the body, whitespace collapsed, at most 200 characters",
        "doc": "docstring or leading comment, at most 500 characters",
    },
    "edges": {
        "src": "node id of the source",
        "dst": "node id of the target",
        "kind": "contains, imports, calls, extends, implements, references or documents",
        "confidence": "1.0 certain ... 0.0; contains is 1.0",
        "reason": "how it was resolved: syntax, local, same-file, self, import, module-path, "
        "same-package, unique-name, external, mention (ambiguous-name is reserved: several "
        "candidates give no edge)",
        "line": "where in the source's file (0 for contains)",
        "path": "the source's file",
    },
}
GRAPH_SORT = {
    "files": ["path"],
    "nodes": ["id"],
    "edges": ["src", "kind", "dst", "line"],
}
# Where each table is in a generation: files whole, nodes and edges in shards.
GRAPH_TABLE_FILES = {
    "files": "files.parquet",
    "nodes": "nodes/NN.parquet",
    "edges": "edges/NN.parquet",
}


def _graph_formats() -> dict[str, bytes]:
    """The code graph's sidecar: its three Parquet tables and its manifest."""
    from typing import get_args

    from gitmem.graph import build, cache, facts, paths, schema, shards
    from gitmem.graph.manifest import GRAPH_VERSION, MODES, GraphManifest
    from gitmem.graph.scan import REASONS
    from gitmem.sidecar import integrity
    from gitmem.sidecar.generations import WRITTEN
    from gitmem.sidecar.manifest import MANIFEST

    root = f"<git common dir>/edda/{paths.GRAPH_DIR}/"
    manifest = _schema(
        GraphManifest,
        "gitmem code graph manifest",
        f"{root}<worktree>/{MANIFEST}: what a generation of the code graph reflects "
        f"(mode: one of {', '.join(MODES)}; the commit; whether uncommitted changes are in "
        "and a fingerprint of them; the extractor and table schema versions; a fingerprint "
        "of the edda.code settings; a digest of the files indexed; counts; files skipped by "
        f"reason, among {', '.join(REASONS)}; shards: how many shards the nodes and edges "
        "tables have); written last and atomically. Any other version is rebuilt. files: "
        "'<size>:<crc32, 8 hex digits>' of files.parquet and of every shard (nodes/00.parquet "
        "…); checksum: CRC-32 (8 hex digits) of the other fields as canonical JSON (sorted "
        "keys, no spaces, ASCII). A manifest or a table file that does not match is rebuilt.",
    )
    tables = {
        "files": schema.files_schema(),
        "nodes": schema.nodes_schema(),
        "edges": schema.edges_schema(),
    }
    tables_doc = {
        "title": "gitmem code graph tables",
        "description": "Three Parquet tables in a generation of the code graph sidecar, "
        "readable by pyarrow, DuckDB and Polars: files.parquet, and the nodes and edges "
        "tables in shards by file (see shards), each shard's rows sorted (see sort), so the "
        "same files give byte-identical files. A table is its shards read in order "
        "(DuckDB: FROM '<generation>/nodes/*.parquet'; pyarrow: read_table('<generation>/nodes')).",
        "version": schema.SCHEMA_VERSION,
        "graph_version": GRAPH_VERSION,
        "root": root,
        "files": {
            f"{paths.MAIN_WORKTREE}/": "the main worktree's graph (a sidecar root)",
            f"{paths.WORKTREE_PREFIX}<name>/": "the graph of the linked worktree "
            "whose git dir is <git common dir>/worktrees/<name>",
            f"<worktree>/{MANIFEST}": "graph-manifest.v1.schema.json",
            "<worktree>/lock": "flock held by the one process building",
            "<worktree>/g-<time>-<hex>/": "one generation; the manifest names the current one",
            **{
                f"<worktree>/g-*/{file}": f"the {name} table"
                + ("" if name == "files" else ", one shard (NN: 00, 01, …)")
                for name, file in GRAPH_TABLE_FILES.items()
            },
            f"<worktree>/g-*/{integrity.STAMP_FILE}": "files whose checksum was verified as they are now",
            f"<worktree>/g-*/{WRITTEN}": "the checksums of the tables as the build wrote them",
            f"{paths.CACHE_DIR}/{cache.VERSION_PREFIX}<extractor version>/<blob[:2]>/<blob[2:]>.<language>": (
                "one blob's facts: 0x01, the length of the msgpack record as 8 bytes "
                "little-endian, then the record zstd-compressed; the record is an array "
                "[skip, facts, size]: skip '' or why the contents are not indexed (binary, "
                "generated), facts gitmem.graph.facts.FileFacts as a msgpack map (nil when "
                "skipped), size the blob's bytes; language '-' when only the contents tell it"
            ),
            f"{paths.CACHE_DIR}/{cache.VERSION_PREFIX}<extractor version>/<blob[:2]>/<blob[2:]>"
            f".<language>{cache.CHUNKS_SUFFIX}": (
                "one blob's search chunks (gitmem.graph.chunks), packed as its facts are "
                "(0x01, length, zstd); the record is an array of [start_line, end_line, "
                "symbol, kind, body, [context...], language, [words...]], one per chunk, "
                "without the path (copies of a file share the entry); words: the mixed-case "
                "names of the context and body split into words, as the full-text index adds them"
            ),
            f"{paths.CACHE_DIR}/{cache.SWEEP_STAMP}": "when entries unused for "
            f"{cache.MAX_AGE_DAYS} days were last removed",
        },
        "id_rule": "node id = sha256(path + NUL + qualname + NUL + kind) as hex, first 16 "
        "digits, path and qualname UTF-8; a file is (path, '', 'file'); an external "
        "module is ('', module name, 'module')",
        "node_kinds": list(get_args(facts.NodeKind)),
        "edge_kinds": list(get_args(facts.EdgeKind)),
        "extractor_version": facts.EXTRACTOR_VERSION,
        "parquet_options": build.PARQUET_OPTIONS,
        "shards": {
            "count": "the smallest power of two at least the files indexed / "
            f"{shards.FILES_PER_SHARD}, at most {shards.MAX_SHARDS} (the manifest's shards)",
            "rule": "a row is in shard crc32(utf-8 of its path column) mod count: a node by "
            "its file ('' for an external module: shard 0), an edge by its source's file",
        },
        "tables": {
            GRAPH_TABLE_FILES[name]: {
                "sort": GRAPH_SORT[name],
                "columns": [
                    {
                        "name": f.name,
                        "type": str(f.type),
                        "nullable": f.nullable,
                        "description": GRAPH_COLUMNS[name][f.name],
                    }
                    for f in table
                ],
            }
            for name, table in tables.items()
        },
    }
    return {
        "graph-manifest.v1.schema.json": _dump(manifest),
        "graph-tables.v1.json": _dump(tables_doc),
    }


def diff(directory: Path) -> list[str]:
    """Names of files in ``directory`` that differ from what the code generates."""
    expected = generate()
    stale = [
        n
        for n, data in expected.items()
        if not (directory / n).exists() or (directory / n).read_bytes() != data
    ]
    extra = [p.name for p in directory.glob("*.json") if p.name not in expected]
    return sorted(stale + extra)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    directory = Path(args[0] if args else "formats")
    if check:
        differing = diff(directory)
        for name in differing:
            print(f"out of date: {directory / name}", file=sys.stderr)
        return 1 if differing else 0
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in generate().items():
        (directory / name).write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
