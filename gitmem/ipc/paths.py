"""Where a repository's daemon keeps its socket, lock and log.

Everything lives under ``<common dir>/edda/daemon/`` (mode 0700): ``lock``
(held by the running daemon), ``pid``, ``starting`` (a start in progress) and
``daemon.log``. The socket is ``sock`` there too, unless that path is longer
than a unix socket address allows (104 bytes on macOS, 108 on Linux; common
under deep temporary directories): then it is
``$XDG_RUNTIME_DIR/gitmem-<uid>/<digest of the common dir>.sock``, or the same
under the temporary directory, in a directory that must be ours and private.
"""

from __future__ import annotations

import os

from gitmem.storage.locate import RepoLocation

DAEMON_DIR = "daemon"
SOCKET_NAME = "sock"
MAX_SOCKET_PATH = 100  # below both systems' limits, with a margin


def daemon_dir(location: RepoLocation) -> str:
    """``<common dir>/edda/daemon``."""
    return os.path.join(location.state_path, DAEMON_DIR)


def private_dir(path: str) -> str:
    """``path``, created with mode 0700 if missing; an OSError when it exists
    but belongs to another user or others may enter it."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except FileExistsError:
        pass
    st = os.lstat(path)
    import stat

    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise PermissionError(f"{path} is not a directory of this user")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def socket_path(location: RepoLocation) -> str:
    """The daemon's socket for ``location``'s repository (it may not exist)."""
    own = os.path.join(daemon_dir(location), SOCKET_NAME)
    if len(os.fsencode(own)) <= MAX_SOCKET_PATH:
        return own
    import hashlib
    import tempfile

    digest = hashlib.sha256(os.fsencode(os.path.realpath(location.common_path))).hexdigest()
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return os.path.join(base, f"gitmem-{os.getuid()}", digest[:24] + ".sock")
