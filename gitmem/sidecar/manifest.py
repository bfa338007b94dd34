"""A sidecar's manifest: what its files reflect, written last and atomically.

The manifest is one JSON object in the sidecar's root (``manifest.json``),
described by a dataclass of the sidecar's own (see :class:`SidecarManifest`)
that holds at least:

* ``version``: the sidecar's format; a manifest of any other version is no
  manifest, and the sidecar is built anew;
* ``generation``: the directory (in the root) holding this version's files;
* ``files``: ``"<size>:<crc32>"`` of every file of the generation, by path
  inside it (:mod:`gitmem.sidecar.integrity`);
* ``checksum``: the CRC-32 of the other fields as canonical JSON (sorted keys,
  no spaces, ASCII): a flipped bit in a recorded tip or count is caught like
  one in a data file;

and whatever else the sidecar records (the index: memory tips and counts;
the code graph: the code commit it reflects).

:func:`read` returns None for a manifest that is missing, unreadable, of
another version, damaged, or that names a path out of the root: each means
"build anew". Only reading and parsing may fail that way: an error in
gitmem's own code must not pass for a missing manifest (that would rebuild
the sidecar on every query).
"""

from __future__ import annotations

import json
import shutil
import zlib
from collections.abc import Mapping
from dataclasses import MISSING, asdict, fields
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

from gitmem.storage.files import write_atomic

MANIFEST = "manifest.json"


class SidecarManifest(Protocol):
    """What a sidecar's manifest dataclass holds, whatever else it records."""

    __dataclass_fields__: ClassVar[dict[str, Any]]  # a dataclass
    version: int
    generation: str  # the directory (in the sidecar's root) holding this version's files
    files: dict[str, str]  # "<size>:<crc32>" of every file of the generation, by path inside it
    checksum: str  # CRC-32 of the other fields (see checksum())


M = TypeVar("M", bound=SidecarManifest)


def checksum(record: Mapping[str, object]) -> str:
    """CRC-32 (8 hex digits) of ``record``'s fields other than ``checksum``,
    as canonical JSON. Also vouches for ``written.json``."""
    rest = {k: v for k, v in record.items() if k != "checksum"}
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return f"{zlib.crc32(text.encode()):08x}"


def plain_name(name: object) -> bool:
    """A file or directory name inside a sidecar, never a path out of it."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name


def plain_path(path: object) -> bool:
    """A file of a generation, or a file in one of its directories: one or
    two plain names."""
    return isinstance(path, str) and all(plain_name(part) for part in path.split("/", 1))


def encode(manifest: SidecarManifest) -> bytes:
    """The manifest's bytes, its ``checksum`` set first."""
    manifest.checksum = checksum(asdict(manifest))
    return json.dumps(asdict(manifest), sort_keys=True, indent=1).encode()


def decode(cls: type[M], data: bytes, version: int) -> M | None:
    """The manifest ``data`` holds, or None when it is not JSON, of another
    version, damaged (its checksum differs), has fields ``cls`` lacks or
    lacks required ones, or names anything but plain names."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except ValueError:  # not UTF-8, not JSON
        return None
    if not isinstance(raw, dict) or raw.get("version") != version:
        return None
    if raw.get("checksum") != checksum(raw):
        return None
    known = fields(cls)
    required = {f.name for f in known if f.default is MISSING and f.default_factory is MISSING}
    if not required <= raw.keys() <= {f.name for f in known}:
        return None
    manifest = cls(**raw)
    if not isinstance(manifest.files, dict) or not all(
        isinstance(v, str) for v in manifest.files.values()
    ):
        return None
    if not plain_name(manifest.generation) or not all(plain_path(p) for p in manifest.files):
        return None
    return manifest


def read(root: Path, cls: type[M], version: int, *, name: str = MANIFEST) -> M | None:
    """The manifest in ``root`` (see :func:`decode`), or None also when it is
    missing or unreadable or its generation directory is not there."""
    try:
        data = (root / name).read_bytes()
    except OSError:  # missing, unreadable, a directory
        return None
    manifest = decode(cls, data, version)
    if manifest is None or not (root / manifest.generation).is_dir():
        return None
    return manifest


def write(root: Path, manifest: SidecarManifest, *, name: str = MANIFEST) -> None:
    """Replace the manifest in ``root`` at once (a temporary file renamed):
    readers see the old one or the new one, whole."""
    data = encode(manifest)
    path = root / name
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)  # damage: a rename cannot replace a directory
    write_atomic(str(path), data, fsync=False)
