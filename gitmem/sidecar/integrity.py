"""Proving that a generation's files are the ones its manifest describes.

A sidecar's manifest records, for every file of a generation (the search
index: the two tables, each file of the full-text directory, the vector
index), its size and the CRC-32 of its bytes: ``"<size>:<crc32 as 8 hex
digits>"``. A file that differs is damage (a flipped bit, a truncation, an
older table copied over a newer one, a directory where the file should be)
and is never read: Arrow and usearch map their files without checking them,
and a flipped offset in an Arrow file can crash the process or silently drop
rows.

Why CRC-32, checked once per version of a file. At 100,000 events the search
index holds ~135 MB (events table 82 MB, vectors 39 MB, full text 12 MB).
On the 2-core benchmark machine ``zlib.crc32`` reads ~2.8 GB/s, SHA-256
~1.5 GB/s and BLAKE2b ~0.55 GB/s; reading every byte on each query would add
50 ms (CRC-32) to 250 ms (BLAKE2b) to a cold search of ~400 ms. So every byte
is checked when a file is written (by the builder) and again only when the
file's identity (device, inode, size, mtime, ctime) is not the one recorded
next to its checksum in the generation's ``verified.json``. Any change made
through the file system, copying an older file over it included, gives the
file a new ctime (and a rename a new inode), so it is checked in full again.
A query then costs one ``stat`` per file, well under a millisecond.
Corruption the file system does not see (a failing disk) is caught by
``git edda index``, which checks every byte regardless of the stamps.

CRC-32 catches every burst of up to 32 flipped bits and any other accident
with probability 1 - 2**-32; it is not meant to resist tampering (whoever can
write ``.git`` can write anything).
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from pathlib import Path

from gitmem.errors import IndexDamagedError

STAMP_FILE = "verified.json"
_CHUNK = 1 << 20

Identity = list[int]  # device, inode, size, mtime (ns), ctime (ns)


def _identity(st: os.stat_result) -> Identity:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def checksum(path: Path) -> tuple[str, Identity]:
    """``"<size>:<crc32>"`` of a file's bytes and the identity of the file read.

    The identity is taken before reading: should the file change while it is
    read, its new ctime no longer matches the stamp and it is checked again."""
    crc = 0
    size = 0
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise IndexDamagedError(f"{path.name} is not a regular file")
            while count := handle.readinto(buffer):
                crc = zlib.crc32(view[:count], crc)
                size += count
    except OSError as exc:
        raise IndexDamagedError(f"{path.name}: {exc.strerror or exc}") from None
    return f"{size}:{crc:08x}", _identity(st)


def _stat(directory: Path, name: str) -> Identity:
    try:
        st = os.stat(directory / name)
    except OSError as exc:
        raise IndexDamagedError(f"{name}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise IndexDamagedError(f"{name} is not a regular file")
    return _identity(st)


def read_stamps(directory: Path) -> dict[str, list[int | str]]:
    """The identities of the files whose checksum was verified ({} when unreadable)."""
    try:
        raw = json.loads((directory / STAMP_FILE).read_bytes())
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}


def _write_stamps(directory: Path, stamps: dict[str, list[int | str]]) -> None:
    """Best effort: a stamp only saves work, so a read-only directory is fine."""
    from gitmem.storage.files import write_atomic

    data = json.dumps(stamps, sort_keys=True).encode()
    try:
        write_atomic(str(directory / STAMP_FILE), data, fsync=False)
    except OSError:
        pass


def describe(
    directory: Path, names: list[str], known: dict[str, str] | None = None
) -> dict[str, str]:
    """The checksums of ``names`` (paths relative to ``directory``), for a new
    manifest. Files whose stamp still matches are not read again, nor those
    whose checksum the caller ``known`` (links to files it verified); the
    stamps are rewritten to cover exactly these files."""
    stamps = read_stamps(directory)
    known = known or {}
    files: dict[str, str] = {}
    fresh: dict[str, list[int | str]] = {}
    for name in names:
        identity = _stat(directory, name)
        stamp = stamps.get(name)
        if name in known:
            files[name] = known[name]
        elif isinstance(stamp, list) and len(stamp) == 6 and stamp[:5] == identity:
            files[name] = str(stamp[5])
        else:
            files[name], identity = checksum(directory / name)
        fresh[name] = [*identity, files[name]]
    _write_stamps(directory, fresh)
    return files


def restamp(directory: Path, names: list[str]) -> None:
    """Bring the stamps of ``names`` up to date with a new ctime alone: a
    hard link to a file, or the removal of one, changes its ctime and
    nothing else (same device, inode, size and mtime). What the builder
    that made the links calls once the previous generation is gone, so
    that readers do not read those files again."""
    stamps = read_stamps(directory)
    changed = False
    for name in names:
        stamp = stamps.get(name)
        try:
            identity = _stat(directory, name)
        except IndexDamagedError:
            continue
        if not isinstance(stamp, list) or len(stamp) != 6 or stamp[:4] != identity[:4]:
            continue  # not stamped, or more than the ctime changed: read at the next check
        if stamp[4] != identity[4]:
            stamps[name] = [*identity, stamp[5]]
            changed = True
    if changed:
        _write_stamps(directory, stamps)


def verify(directory: Path, files: dict[str, str], *, deep: bool = False) -> dict[str, Identity]:
    """Check every file against its manifest checksum (IndexDamagedError on
    the first that differs); returns the identities checked.

    A file whose identity matches its stamp for the same checksum is trusted
    without reading it, unless ``deep``."""
    stamps = {} if deep else read_stamps(directory)
    checked: dict[str, Identity] = {}
    fresh: dict[str, list[int | str]] = {}
    for name, want in sorted(files.items()):
        checked[name] = _check(directory, name, want, stamps, fresh)
    if fresh:
        _write_stamps(directory, {**stamps, **fresh})
    return checked


def intact(directory: Path, files: dict[str, str]) -> dict[str, str]:
    """Those of ``files`` that match their checksums (as :func:`verify`
    checks them, without failing at the first that does not)."""
    stamps = read_stamps(directory)
    good: dict[str, str] = {}
    fresh: dict[str, list[int | str]] = {}
    for name, want in sorted(files.items()):
        try:
            _check(directory, name, want, stamps, fresh)
        except IndexDamagedError:
            continue
        good[name] = want
    if fresh:
        _write_stamps(directory, {**stamps, **fresh})
    return good


def _check(
    directory: Path,
    name: str,
    want: str,
    stamps: dict[str, list[int | str]],
    fresh: dict[str, list[int | str]],
) -> Identity:
    """One file against its checksum (IndexDamagedError when it differs),
    read unless its stamp vouches for it; a file read gets a ``fresh`` stamp."""
    identity = _stat(directory, name)
    size = want.partition(":")[0]
    if str(identity[2]) != size:
        raise IndexDamagedError(f"{name} holds {identity[2]} bytes, the manifest says {size}")
    if stamps.get(name) == [*identity, want]:
        return identity
    got, identity = checksum(directory / name)
    if got != want:
        raise IndexDamagedError(f"{name} does not match its checksum in the manifest")
    fresh[name] = [*identity, want]
    return identity


def unchanged(directory: Path, checked: dict[str, Identity]) -> None:
    """IndexDamagedError when a file checked by :func:`verify` has since been
    replaced (a refresh was rewriting it while a reader opened it)."""
    for name, identity in checked.items():
        if _stat(directory, name) != identity:
            raise IndexDamagedError(f"{name} changed while it was being opened")
