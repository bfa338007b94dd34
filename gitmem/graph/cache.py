"""Every blob's facts, cached by blob id: a blob parsed once is never parsed
again, on another branch, in another worktree, after a rename.

Facts depend on a blob's bytes, its language and the extractor's version
(:data:`~gitmem.graph.facts.EXTRACTOR_VERSION`), so an entry is named by
the blob id and the language its path gives (``-`` when only the contents
can tell), in a directory per extractor version, fanned out like git's
loose objects::

    <common dir>/edda/graph/cache/v<N>/<blob[:2]>/<blob[2:]>.<language>

An entry is one msgpack record (:class:`Cached`): the facts, or why the
contents are not indexed (binary, generated), so that a warm build reads
neither the blob nor the facts of a file it skips; and the blob's size. It
is stored zstd-compressed (``\x01``, the record's length as 8 bytes
little-endian, the zstd frame): facts repeat their field names, and
compressed they take an eighth of the space (the standard library's facts:
82 MB as msgpack, 10 MB compressed), which also makes them faster to read
back than to read raw. Entries are written
atomically (a temporary file renamed), so builds in two worktrees may write
the same entry at once. An entry that does not decode is parsed again.

Old entries go in a sweep at most once a day: those not used by the build
that sweeps and written more than :data:`MAX_AGE_DAYS` ago (a blob still
used by another worktree is then parsed again there, once).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from gitmem.graph.facts import EXTRACTOR_VERSION, FileFacts
from gitmem.storage.files import write_atomic

MAX_AGE_DAYS = 30
SWEEP_EVERY = 86400.0  # seconds between two sweeps
SWEEP_STAMP = "swept"
VERSION_PREFIX = "v"
_UNSAFE = re.compile(r"[^a-z0-9_+#-]")
CHUNKS_SUFFIX = ".chunks2"
"""Entries of a blob's search chunks (:func:`gitmem.graph.chunks.encode_chunks`),
named by the facts' key and this, beside them. (2: packed like the facts;
``.chunks`` entries were zlib-compressed, slower both ways.)"""


class Cached(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """One cache entry: a blob's facts, or why its contents are not indexed."""

    skip: str = ""  # "binary", "generated": the file is not indexed
    facts: FileFacts | None = None
    size: int = 0  # the blob's size in bytes


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Cached)
FORMAT = b"\x01"  # zstd-compressed msgpack
CODEC_LEVEL = 1


_CODEC: Any = None


def _codec() -> Any:
    global _CODEC
    if _CODEC is None:
        import pyarrow as pa

        _CODEC = pa.Codec("zstd", CODEC_LEVEL)
    return _CODEC


def pack(raw: bytes) -> bytes:
    """``raw`` (msgpack) as entries store it: :data:`FORMAT`, its length as
    8 bytes little-endian, its zstd frame."""
    packed: bytes = _codec().compress(raw, asbytes=True)
    return FORMAT + len(raw).to_bytes(8, "little") + packed


def unpack(data: bytes) -> bytes | None:
    """What :func:`pack` packed, or None when ``data`` is damaged."""
    if len(data) < 9 or data[:1] != FORMAT:
        return None
    size = int.from_bytes(data[1:9], "little")
    if size > 1 << 34:
        return None  # a damaged length: do not allocate it
    import pyarrow as pa

    try:
        raw: bytes = _codec().decompress(data[9:], size, asbytes=True)
    except (ValueError, pa.ArrowException):
        return None
    return raw


def encode(entry: Cached) -> bytes:
    """The bytes an entry is stored as."""
    return pack(_ENCODER.encode(entry))


def decode(data: bytes) -> Cached | None:
    """The entry ``data`` holds, or None when it is damaged or of another version."""
    raw = unpack(data)
    if raw is None:
        return None
    try:
        entry = _DECODER.decode(raw)
    except (msgspec.DecodeError, ValueError):
        return None
    if entry.facts is not None and entry.facts.version != EXTRACTOR_VERSION:
        return None
    if not entry.skip and entry.facts is None:
        return None
    return entry


def cache_key(blob: str, language: str | None) -> str:
    """The entry name of ``blob`` read as ``language`` (None: from its contents)."""
    return f"{blob}.{_UNSAFE.sub('_', language.lower()) if language else '-'}"


_DECODED: dict[str, Cached] = {}  # entry path -> its decoded entry, per process
# entry path -> the mtime (ns) its directory had when the entry was last seen
# there, per process: while the directory keeps that mtime, no entry left it.
_SEEN: dict[str, int] = {}


class FactsCache:
    """The cache directory of the current extractor version."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.directory = self.root / f"{VERSION_PREFIX}{EXTRACTOR_VERSION}"
        self._prefix = str(self.directory) + os.sep
        self._fans: dict[str, int | None] = {}  # fan directory -> its mtime, stat once per build

    def path(self, key: str) -> str:
        """Where the entry for ``key`` is (strings, not pathlib: a warm build
        looks up every file, and pathlib's parsing cost as much as the reads)."""
        return f"{self._prefix}{key[:2]}{os.sep}{key[2:]}"

    def get(self, key: str) -> Cached | None:
        """The entry for ``key``, or None when there is none (or it is damaged).

        Entries are content-addressed (blob id, language, extractor version),
        so a decoded one stays valid: a long-lived process (the daemon, a
        benchmark, a library user) decodes each once, and a build after a
        small change decodes only the new blobs."""
        path = self.path(key)
        known = _DECODED.get(path)
        if known is not None:
            if self.present(path):  # removed (a swept or deleted cache): parse again
                return known
            del _DECODED[path]
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        entry = decode(data)
        if entry is not None:
            _DECODED[path] = entry
        return entry

    def present(self, path: str) -> bool:
        """Whether the entry file at ``path`` is (still) there, for a stat of
        its fan-out directory per build (a :class:`FactsCache` lives for
        one build) rather than one per entry: removing a file changes its
        directory's mtime, so an entry seen there while the directory had
        its present mtime is there still; otherwise the file is looked at.
        (A warm build looks up every file's facts and chunks: 4,600 stats
        on the standard library, 256 directories.)"""
        fan = path[: path.rfind(os.sep)]
        mtime = self._fans.get(fan, -1)
        if mtime == -1:
            try:
                mtime = os.stat(fan).st_mtime_ns
            except OSError:
                mtime = None
            self._fans[fan] = mtime
        if mtime is not None and _SEEN.get(path) == mtime:
            return True
        if not os.path.exists(path):
            _SEEN.pop(path, None)
            return False
        if mtime is not None:
            _SEEN[path] = mtime  # the mtime from before the look: never too late
        return True

    @staticmethod
    def keep_only(paths: set[str]) -> None:
        """Forget every decoded entry of this process but those at ``paths``
        (what the latest builds use): a long-lived process (the daemon, the
        MCP server) would otherwise keep every version of every file it ever
        saw. A forgotten entry is read from disk again if it comes back."""
        for memo in (_DECODED, _SEEN):
            for path in [p for p in memo if p not in paths]:
                del memo[path]

    def remember(self, key: str, entry: Cached) -> None:
        """Keep ``entry`` (just decoded from what was put for ``key``) as the
        process's decoded entry: the next build then sees the very same facts
        object, and its resolver knows the file did not change."""
        _DECODED[self.path(key)] = entry

    def put(self, key: str, data: bytes) -> None:
        """Store an encoded entry (best effort: a cache that cannot be written
        only costs parsing again)."""
        path = self.path(key)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_atomic(path, data, fsync=False)
        except OSError:
            pass

    def sweep(self, used: Iterable[str], *, now: float | None = None) -> int:
        """At most once a day: remove other extractor versions' directories
        and entries not in ``used`` written more than MAX_AGE_DAYS ago.
        Returns how many entries went."""
        now = time.time() if now is None else now
        stamp = self.root / SWEEP_STAMP
        try:
            if now - stamp.stat().st_mtime < SWEEP_EVERY:
                return 0
        except OSError:
            pass
        self.root.mkdir(parents=True, exist_ok=True)
        stamp.touch()
        os.utime(stamp, (now, now))
        for entry in self.root.iterdir():
            if entry.is_dir() and entry.name.startswith(VERSION_PREFIX) and entry != self.directory:
                shutil.rmtree(entry, ignore_errors=True)
        keep = set(used)
        limit = now - MAX_AGE_DAYS * 86400
        removed = 0
        if not self.directory.is_dir():
            return 0
        for fan in self.directory.iterdir():
            if not fan.is_dir():
                continue
            for item in fan.iterdir():
                key = fan.name + item.name
                # a temporary file a killed build left: gone after a day
                before = now - SWEEP_EVERY if item.name.endswith(".tmp") else limit
                try:
                    old = item.stat().st_mtime < before
                except OSError:
                    continue
                if old and key not in keep:
                    item.unlink(missing_ok=True)
                    removed += 1
        return removed
