"""The shared sidecar machinery (gitmem.sidecar) serves a sidecar that is not
the search index: a toy one here, shaped like the coming code graph (it
records the code commit it reflects, in a format version of its own)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.errors import ConflictError, IndexDamagedError
from gitmem.index.manifest import INDEX_VERSION, Manifest, read_manifest, write_manifest
from gitmem.sidecar import generations, integrity
from gitmem.sidecar import manifest as sidecar_manifest
from gitmem.sidecar.lock import builder_lock, building, unless_busy

TOY_VERSION = 3


@dataclass
class ToyManifest:
    """A manifest with the fields every sidecar has and two of its own."""

    version: int
    generation: str
    commit: str  # the code commit the toy reflects
    nodes: int
    files: dict[str, str] = field(default_factory=dict)
    checksum: str = ""


def build(root: Path, commit: str, content: bytes) -> ToyManifest:
    """A full build of the toy sidecar: a new generation holding a file at
    its top and one in a directory, switched to by the manifest."""
    generations.prepare_root(root)
    with generations.new_generation(root) as directory:
        (directory / "graph.bin").write_bytes(content)
        (directory / "parts").mkdir()
        (directory / "parts" / "a").write_bytes(content[::-1])
        files = generations.write_written(directory, ["graph.bin", "parts/a"])
        manifest = ToyManifest(TOY_VERSION, directory.name, commit, len(content), files)
        sidecar_manifest.write(root, manifest)
    return manifest


def read(root: Path) -> ToyManifest | None:
    return sidecar_manifest.read(root, ToyManifest, TOY_VERSION)


def test_a_toy_sidecar_round_trips_its_manifest(tmp_path: Path) -> None:
    root = tmp_path / "graph"
    manifest = build(root, "c" * 40, b"nodes and edges")
    assert manifest.checksum
    assert read(root) == manifest
    raw = json.loads((root / sidecar_manifest.MANIFEST).read_text())
    assert set(raw) == {"version", "generation", "commit", "nodes", "files", "checksum"}
    assert raw["version"] == TOY_VERSION and raw["commit"] == "c" * 40
    assert sorted(raw["files"]) == ["graph.bin", "parts/a"]
    assert raw["files"]["graph.bin"].startswith("15:")  # "<size>:<crc32>"
    # the generation's files match what the manifest vouches for
    integrity.verify(root / manifest.generation, manifest.files, deep=True)


def test_each_sidecar_reads_only_its_own_manifest(tmp_path: Path) -> None:
    """Another version, or another sidecar's fields, is no manifest: build anew."""
    root = tmp_path / "graph"
    build(root, "c" * 40, b"x")
    assert sidecar_manifest.read(root, ToyManifest, TOY_VERSION + 1) is None
    assert read_manifest(root) is None  # the index's reader: another version
    assert sidecar_manifest.read(root, Manifest, TOY_VERSION) is None  # other fields


def test_damage_to_the_manifest_is_caught_by_its_checksum(tmp_path: Path) -> None:
    root = tmp_path / "graph"
    build(root, "c" * 40, b"x")
    path = root / sidecar_manifest.MANIFEST
    text = path.read_text()
    path.write_text(text.replace("c" * 40, "c" * 39 + "d"))  # a flipped tip, still valid JSON
    assert read(root) is None
    path.write_text(text)
    assert read(root) is not None
    path.unlink()
    path.mkdir()  # a directory where the manifest belongs
    assert read(root) is None
    manifest = build(root, "e" * 40, b"y")  # the next build replaces it
    assert read(root) == manifest


@pytest.mark.parametrize(
    ("generation", "files"),
    [
        ("..", {}),
        ("../elsewhere", {}),
        ("", {}),
        ("g-1", {"../graph.bin": "1:00000000"}),
        ("g-1", {"parts/a/b": "1:00000000"}),
        ("g-1", {"/etc/passwd": "1:00000000"}),
        ("g-1", {"graph.bin": 7}),
    ],
)
def test_a_manifest_naming_a_path_out_of_the_sidecar_is_none(
    tmp_path: Path, generation: str, files: dict[str, object]
) -> None:
    """Names come from a file anyone can write: only plain names inside the
    root are followed (the checksum is right: this is no accident)."""
    root = tmp_path / "graph"
    (root / "g-1").mkdir(parents=True)
    fields: dict[str, object] = {
        "version": TOY_VERSION,
        "generation": generation,
        "commit": "c",
        "nodes": 0,
        "files": files,
    }
    fields["checksum"] = sidecar_manifest.checksum(fields)
    (root / sidecar_manifest.MANIFEST).write_text(json.dumps(fields))
    assert read(root) is None
    fields.update(generation="g-1", files={"graph.bin": "1:00000000"})
    fields["checksum"] = sidecar_manifest.checksum(fields)
    (root / sidecar_manifest.MANIFEST).write_text(json.dumps(fields))
    assert read(root) is not None  # the same manifest with plain names is read


def test_damage_to_a_file_and_what_a_dead_build_wrote(tmp_path: Path) -> None:
    """A file that differs from the manifest is damage, unless ``written.json``
    (what a build that died before its manifest wrote) vouches for it."""
    root = tmp_path / "graph"
    manifest = build(root, "c" * 40, b"0123456789")
    directory = root / manifest.generation
    written = generations.read_written(directory)
    assert written == manifest.files
    # a build rewrites parts/a, records it, and dies before its manifest
    (directory / "parts" / "a").write_bytes(b"newer")
    with pytest.raises(IndexDamagedError, match="parts/a"):
        integrity.verify(directory, manifest.files)
    generations.write_written(directory, ["graph.bin", "parts/a"])
    written = generations.read_written(directory)
    assert not generations.verify_part(directory, manifest.files, "graph.bin", written, False)
    assert generations.verify_part(directory, manifest.files, "parts", written, False)
    # a flipped byte nothing vouches for, though its size is right
    (directory / "graph.bin").write_bytes(b"0123456788")
    with pytest.raises(IndexDamagedError, match=r"graph\.bin"):
        generations.verify_part(directory, manifest.files, "graph.bin", written, False)
    # a damaged written.json vouches for nothing
    record = json.loads((directory / generations.WRITTEN).read_text())
    record["files"]["parts/a"] = "5:00000000"
    (directory / generations.WRITTEN).write_text(json.dumps(record))
    assert generations.read_written(directory) == {}


def test_a_linked_file_keeps_its_checksum_and_its_stamp_follows(tmp_path: Path) -> None:
    """A build that links a file of the previous generation gives its
    checksum (it is not read again), and once the previous generation is
    gone re-stamps it: the link and the removal changed its ctime alone. A
    file whose bytes changed is not re-stamped, and ``intact`` leaves it out."""
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    for name in ("a", "b"):
        (old / name).write_bytes(name.encode() * 100)
    files = integrity.describe(old, ["a", "b"])
    assert integrity.intact(old, files) == files
    for name in ("a", "b"):
        (new / name).hardlink_to(old / name)
    described = integrity.describe(new, ["a", "b"], known=files)
    assert described == files
    (old / "a").unlink()  # the previous generation goes: a new ctime for a
    (old / "b").unlink()
    (new / "b").write_bytes(b"b" * 99 + b"!")  # and b was written to meanwhile
    integrity.restamp(new, ["a", "b"])
    stamps = integrity.read_stamps(new)
    st = (new / "a").stat()
    assert stamps["a"] == [
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        files["a"],
    ]
    assert integrity.verify(new, {"a": files["a"]})  # trusted by its stamp
    with pytest.raises(IndexDamagedError, match="b does not match"):
        integrity.verify(new, {"b": files["b"]})  # read again: its stamp is not renewed
    assert integrity.intact(new, files) == {"a": files["a"]}


def test_a_full_build_switches_generations(tmp_path: Path) -> None:
    root = tmp_path / "graph"
    first = build(root, "a" * 40, b"first")
    second = build(root, "b" * 40, b"second")
    assert second.generation != first.generation
    assert [p.name for p in root.iterdir() if p.is_dir()] == [second.generation]
    assert read(root) == second
    # a build that fails leaves nothing behind, and the manifest as it was
    with pytest.raises(RuntimeError), generations.new_generation(root) as directory:
        (directory / "graph.bin").write_bytes(b"half")
        raise RuntimeError("the build failed")
    assert not directory.exists()
    assert [p.name for p in root.iterdir() if p.is_dir()] == [second.generation]
    assert read(root) == second


def test_whatever_sits_where_the_root_belongs_is_removed(tmp_path: Path) -> None:
    root = tmp_path / "graph"
    root.write_bytes(b"not a directory")
    assert generations.exists(root)
    with building(root, 5, what="graph builder lock"):
        assert root.is_dir()
    assert not generations.exists(tmp_path / "never built")


HOLDER = """
import sys
from pathlib import Path
from gitmem.sidecar.lock import builder_lock
with builder_lock(Path(sys.argv[1]), 10, what="graph builder lock"):
    print("locked", flush=True)
    sys.stdin.read()
"""


def test_one_builder_at_a_time_across_processes(tmp_path: Path) -> None:
    root = tmp_path / "graph"
    generations.prepare_root(root)

    def attempt() -> str:
        with building(root, 0.2, what="graph builder lock"):
            return "built"

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with (
            pytest.raises(ConflictError, match="graph builder lock"),
            builder_lock(root, 0.2, what="graph builder lock"),
        ):
            pytest.fail("two builders at once")
        assert unless_busy(attempt) is None  # the caller reads the previous version
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=20)
    assert holder.returncode == 0
    assert unless_busy(attempt) == "built"  # the holder is gone: the lock is free


def test_the_index_manifest_keeps_its_bytes() -> None:
    """The index's manifest is written through the shared code: format 5,
    byte for byte as before (sorted keys, one-space indent, ASCII), its
    checksum the CRC-32 of the other fields as canonical JSON."""
    manifest = Manifest(
        6,
        "g-1-abc",
        "fulltext-0a0b0c",
        {"refs/edda/branches/main": "a" * 40, "refs/edda/branches/\u00e9": "b" * 40},
        "c" * 40,
        12,
        "main",
        "static-x",
        256,
        2,
        "boom \u00fc",
        {"events-0a0b0c0d.arrow": "10:0000abcd", "fulltext-0a0b0c/meta.json": "3:12345678"},
        ["events-0a0b0c0d.arrow"],
    )
    expected = (
        '{\n "checksum": "dbeff789",\n "dim": 256,\n "embed_error": "boom \\u00fc",\n'
        ' "events": 12,\n "files": {\n  "events-0a0b0c0d.arrow": "10:0000abcd",\n'
        '  "fulltext-0a0b0c/meta.json": "3:12345678"\n },\n'
        ' "fulltext": "fulltext-0a0b0c",\n "generation": "g-1-abc",\n "model": "static-x",\n'
        f' "payloads": "{"c" * 40}",\n "segments": [\n  "events-0a0b0c0d.arrow"\n ],\n'
        f' "tips": {{\n'
        f'  "refs/edda/branches/main": "{"a" * 40}",\n'
        f'  "refs/edda/branches/\\u00e9": "{"b" * 40}"\n }},\n'
        ' "trunk": "main",\n "unembedded": 2,\n "version": 6\n}'
    )
    assert sidecar_manifest.encode(manifest).decode() == expected
    assert manifest.checksum == "dbeff789"


def test_the_index_manifest_is_read_through_the_shared_code(tmp_path: Path) -> None:
    manifest = Manifest(
        INDEX_VERSION, "g-1", "fulltext", {"refs/edda/branches/main": "a" * 40}, None, 1, None
    )
    (tmp_path / "g-1").mkdir()
    write_manifest(tmp_path, manifest)
    assert read_manifest(tmp_path) == manifest
    manifest.segments = ["../events-0a0b0c0d.arrow"]  # and the segments' names
    write_manifest(tmp_path, manifest)
    assert read_manifest(tmp_path) is None
    manifest.segments = ["vectors.usearch"]
    write_manifest(tmp_path, manifest)
    assert read_manifest(tmp_path) is None
    manifest.segments = []
    manifest.fulltext = "../outside"  # the index's own name is checked too
    write_manifest(tmp_path, manifest)
    assert read_manifest(tmp_path) is None


# encode/decode: a round trip, and no flipped bit passes for another manifest -------------
plain_names = st.text(st.characters(exclude_characters="/"), min_size=1, max_size=12).filter(
    lambda s: s not in (".", "..")
)
plain_paths = st.one_of(plain_names, st.builds(lambda a, b: f"{a}/{b}", plain_names, plain_names))
toy_manifests = st.builds(
    ToyManifest,
    version=st.just(TOY_VERSION),
    generation=plain_names,
    commit=st.text(max_size=64),
    nodes=st.integers(min_value=-(2**70), max_value=2**70),
    files=st.dictionaries(plain_paths, st.text(max_size=20), max_size=5),
    checksum=st.text(max_size=8),  # whatever it held: encoding sets it
)


@settings(max_examples=200, deadline=None)
@given(manifest=toy_manifests)
def test_manifest_encode_decode_round_trip(manifest: ToyManifest) -> None:
    data = sidecar_manifest.encode(manifest)
    assert manifest.checksum == sidecar_manifest.checksum(json.loads(data))
    assert sidecar_manifest.decode(ToyManifest, data, TOY_VERSION) == manifest
    assert sidecar_manifest.decode(ToyManifest, data, TOY_VERSION + 1) is None


@settings(max_examples=200, deadline=None)
@given(manifest=toy_manifests, where=st.integers(min_value=0), bit=st.integers(0, 7))
def test_a_flipped_bit_never_passes_for_another_manifest(
    manifest: ToyManifest, where: int, bit: int
) -> None:
    """Either the damage is caught (None), or the bytes still say the same
    thing (a hex digit of a ``\\u`` escape changing case)."""
    data = bytearray(sidecar_manifest.encode(manifest))
    data[where % len(data)] ^= 1 << bit
    decoded = sidecar_manifest.decode(ToyManifest, bytes(data), TOY_VERSION)
    assert decoded is None or decoded == manifest
