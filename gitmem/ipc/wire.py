"""The daemon's wire format: length-prefixed JSON objects over a unix socket.

A frame is 4 bytes of big-endian length, then that many bytes of UTF-8 JSON
holding one object. A request carries ``op`` (``ping``, ``stop``, ``hook``,
``cli``) and ``build`` (:func:`build_id`); an answer carries ``ok`` and, when
false, ``error``. Bytes that are not text (a hook's stdin) travel in base64.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket

MAX_FRAME = 64 * 1024 * 1024  # a hook payload is at most a few MiB

PROTOCOL = 1


class WireError(Exception):
    """The other side closed early or sent something that is not a frame."""


def build_id() -> str:
    """What a daemon and its clients must share to talk: the protocol, the
    gitmem version and the package's location (a daemon started from another
    installation, or an upgraded one, runs other code)."""
    from gitmem import __version__

    package = os.path.dirname(os.path.abspath(__file__))
    return f"{PROTOCOL}:{__version__}:{os.path.dirname(package)}"


def send(sock: socket.socket, message: dict[str, object]) -> None:
    """Write ``message`` as one frame."""
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    sock.sendall(len(data).to_bytes(4, "big") + data)


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise WireError("the connection closed in the middle of a frame")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket) -> dict[str, object]:
    """Read one frame; WireError on a short, oversized or non-object frame."""
    size = int.from_bytes(_exactly(sock, 4), "big")
    if size > MAX_FRAME:
        raise WireError(f"a frame of {size} bytes is larger than {MAX_FRAME}")
    try:
        message = json.loads(_exactly(sock, size).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise WireError(f"a frame is not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise WireError("a frame is not a JSON object")
    return message
