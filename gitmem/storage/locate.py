"""Find a repository's git dir, common dir, work tree and current branch.

Pure standard library so that the capture hot path can find where to spool an
event without importing pygit2 (about 90 ms) or spawning git (a few ms each).
Anything unusual (reftable refs, GIT_DIR pointing elsewhere) falls back to the
git CLI, which is always right.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

STATE_DIR_NAME = "edda"

# Variables git sets for hooks; a nested git call must not inherit them or it
# would operate on the wrong repository or index.
GIT_LOCAL_ENV_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_QUARANTINE_PATH",
)


def _path(text: str) -> Path:
    from pathlib import Path  # not at import time: pathlib costs ~5 ms on the hook path

    return Path(text)


class RepoLocation:
    """Where a repository lives on disk.

    Stored as strings (``*_path``) so the capture hot path never needs
    pathlib; the ``Path`` properties are for everyone else.
    """

    __slots__ = ("common_path", "git_path", "work_path")

    def __init__(self, git_path: str, common_path: str, work_path: str | None) -> None:
        self.git_path = (
            git_path  # the per-worktree git dir (== common dir outside linked worktrees)
        )
        self.common_path = common_path  # shared by all worktrees: refs, objects, config, our state
        self.work_path = work_path  # None for a bare repository

    def __repr__(self) -> str:
        return f"RepoLocation({self.git_path!r}, {self.common_path!r}, {self.work_path!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RepoLocation) and (
            (self.git_path, self.common_path, self.work_path)
            == (other.git_path, other.common_path, other.work_path)
        )

    def __hash__(self) -> int:
        return hash((self.git_path, self.common_path, self.work_path))

    @property
    def git_dir(self) -> Path:
        return _path(self.git_path)

    @property
    def common_dir(self) -> Path:
        return _path(self.common_path)

    @property
    def workdir(self) -> Path | None:
        return None if self.work_path is None else _path(self.work_path)

    @property
    def state_path(self) -> str:
        """gitmem's own state (spool, clock, logs, sidecars) under the common dir."""
        return os.path.join(self.common_path, STATE_DIR_NAME)

    @property
    def state_dir(self) -> Path:
        return _path(self.state_path)

    @property
    def cwd(self) -> str:
        """Where to run git for this repository."""
        return self.work_path or self.git_path

    @property
    def is_bare(self) -> bool:
        return self.work_path is None

    @property
    def uses_reftable(self) -> bool:
        """True when refs are stored in reftable format (pygit2 cannot open these)."""
        return os.path.isdir(os.path.join(self.common_path, "reftable"))


def clean_git_env() -> dict[str, str]:
    """The current environment without the repository-local GIT_* variables."""
    env = dict(os.environ)
    for name in GIT_LOCAL_ENV_VARS:
        env.pop(name, None)
    return env


def run_git(
    args: list[str], cwd: str | os.PathLike[str], input_bytes: bytes | None = None
) -> bytes:
    """Run git with a clean environment; raise GitError with git's message on failure."""
    import subprocess  # lazily: the hook path uses read_git_output instead

    from gitmem.errors import GitError  # lazily: enum costs ~4 ms on the hook path

    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=str(cwd),
            input=input_bytes,
            capture_output=True,
            env=clean_git_env(),
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitError("the git command is not installed", "install git and retry") from exc
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed"
        raise GitError(f"git {' '.join(args[:2])}: {message.splitlines()[-1]}")
    return proc.stdout


def read_git_output(args: list[str], cwd: str) -> bytes | None:
    """stdout of a git command, or None when it fails; stderr is discarded.

    Uses posix_spawn and a pipe instead of the subprocess module, whose
    import costs more than the call on the capture hot path.
    """
    read_fd, write_fd = os.pipe()
    devnull = os.open(os.devnull, os.O_RDWR)
    actions = [
        (os.POSIX_SPAWN_DUP2, devnull, 0),
        (os.POSIX_SPAWN_DUP2, write_fd, 1),
        (os.POSIX_SPAWN_DUP2, devnull, 2),
        (os.POSIX_SPAWN_CLOSE, read_fd),
    ]
    env = clean_git_env()
    try:
        pid = os.posix_spawnp("git", ["git", "-C", cwd, *args], env, file_actions=actions)
    except OSError:
        os.close(read_fd)
        return None
    finally:
        os.close(write_fd)
        os.close(devnull)
    chunks = []
    with os.fdopen(read_fd, "rb") as pipe:
        while chunk := pipe.read(65536):
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    return b"".join(chunks) if os.waitstatus_to_exitcode(status) == 0 else None


def _looks_like_git_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(
        os.path.join(path, "objects")
    )


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _read_gitfile(path: str) -> str | None:
    text = _read_text(path)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:") :].strip()
    return target if os.path.isabs(target) else os.path.join(os.path.dirname(path), target)


def _common_dir_of(git_dir: str) -> str:
    text = _read_text(os.path.join(git_dir, "commondir"))
    if text is None:
        return git_dir
    return os.path.realpath(text if os.path.isabs(text) else os.path.join(git_dir, text))


def locate(path: str | os.PathLike[str] | None = None, *, any_format: bool = False) -> RepoLocation:
    """Locate the repository containing ``path`` (default: the current directory).

    Honours ``GIT_DIR`` when no explicit path is given, as git does.
    Raises :class:`NotARepositoryError` when there is none, and UsageError for
    a SHA-256 repository unless ``any_format`` (the code graph reads code in
    any repository: it writes no git objects).
    """
    location = _locate(path)
    return location if any_format else _supported(location)


def _locate(path: str | os.PathLike[str] | None) -> RepoLocation:
    if path is None and os.environ.get("GIT_DIR"):
        git_dir = os.path.realpath(os.environ["GIT_DIR"])
        work = os.environ.get("GIT_WORK_TREE")
        common_env = os.environ.get("GIT_COMMON_DIR")
        common = os.path.realpath(common_env) if common_env else _common_dir_of(git_dir)
        if work:
            workdir: str | None = os.path.realpath(work)
        elif common == git_dir and os.path.basename(git_dir) == ".git":
            workdir = os.path.dirname(git_dir)
        else:
            workdir = _workdir_of(git_dir, common)
        return RepoLocation(git_dir, common, workdir)
    start = os.path.realpath(os.fspath(path) if path is not None else os.getcwd())
    candidate = start
    while True:
        dot_git = os.path.join(candidate, ".git")
        if os.path.isdir(dot_git) and _looks_like_git_dir(dot_git):
            return RepoLocation(dot_git, _common_dir_of(dot_git), candidate)
        if os.path.isfile(dot_git):
            pointed = _read_gitfile(dot_git)
            if pointed is not None and os.path.isdir(pointed):
                pointed = os.path.realpath(pointed)
                return RepoLocation(pointed, _common_dir_of(pointed), candidate)
        if _looks_like_git_dir(candidate):
            common = _common_dir_of(candidate)
            return RepoLocation(candidate, common, _workdir_of(candidate, common))
        parent = os.path.dirname(candidate)
        if parent == candidate:
            break
        candidate = parent
    from gitmem.errors import NotARepositoryError

    raise NotARepositoryError(
        f"not a git repository: {start}",
        "run inside a git repository, pass --repo PATH, or create one with 'git init'",
    )


def object_format(common_path: str) -> str:
    """The repository's object format, ``sha1`` or ``sha256``.

    Read from ``extensions.objectFormat`` in the repository's own config file,
    which is where git itself reads it (no includes, no global config), by
    hand: spawning ``git`` would cost the capture hot path a few ms.
    """
    text = _read_text(os.path.join(common_path, "config")) or ""
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line[1 : line.find("]")].strip().lower() if "]" in line else ""
            line = line[line.find("]") + 1 :].strip() if "]" in line else ""
        if section != "extensions" or "=" not in line:
            continue
        key, _, value = line.partition("=")
        if key.strip().lower() == "objectformat":
            return value.split("#")[0].split(";")[0].strip().strip('"').lower() or "sha1"
    return "sha1"


def _supported(location: RepoLocation) -> RepoLocation:
    """``location``, unless gitmem cannot store memory there (UsageError).

    gitmem writes its git objects itself, named by SHA-1 (storage §13), and
    libgit2 cannot open SHA-256 repositories: refuse them here, where every
    command, hook and ``gitmem-capture`` passes, before anything is written.
    """
    fmt = object_format(location.common_path)
    if fmt != "sha1":
        from gitmem.errors import UsageError

        raise UsageError(
            f"{location.work_path or location.common_path} uses {fmt} object names"
            f" (extensions.objectFormat = {fmt}); gitmem supports only SHA-1 repositories",
            "gitmem needs a SHA-1 repository, which a plain 'git init' creates",
        )
    return location


def _workdir_of(git_dir: str, common: str) -> str | None:
    """Work tree of a git dir we were pointed at directly (None when bare)."""
    if git_dir != common:  # a linked worktree's private dir names its work tree
        gitfile = _read_text(os.path.join(git_dir, "gitdir"))
        return os.path.dirname(gitfile) if gitfile else None
    if os.path.basename(git_dir) == ".git":
        return os.path.dirname(git_dir)
    config = _read_text(os.path.join(git_dir, "config")) or ""
    for line in config.splitlines():
        if line.strip().replace(" ", "").lower() == "bare=false":
            return os.path.dirname(git_dir)
    return None


def head_ref(location: RepoLocation) -> str | None:
    """The full ref name HEAD points at (``refs/heads/main``), or None if detached.

    The branch may be unborn (no commits yet). Reads the HEAD file directly and
    asks git only when the file does not say (reftable keeps a placeholder).
    """
    text = _read_text(os.path.join(location.git_path, "HEAD"))
    if text is not None and text.startswith("ref: "):
        target = text[5:].strip()
        if target != "refs/heads/.invalid":
            return target
    elif text is not None and len(text) in (40, 64):
        return None
    out = read_git_output(["symbolic-ref", "-q", "HEAD"], location.cwd)
    return (out or b"").decode("utf-8").strip() or None


def head_branch(location: RepoLocation) -> str | None:
    """The short name of the checked-out branch, or None when HEAD is detached."""
    ref = head_ref(location)
    if ref is None:
        return None
    return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref


def operation_in_progress(location: RepoLocation) -> str | None:
    """``rebase`` or ``bisect`` when one is under way in this worktree, else None."""
    for name in ("rebase-merge", "rebase-apply"):
        if os.path.isdir(os.path.join(location.git_path, name)):
            return "rebase"
    if os.path.isfile(os.path.join(location.git_path, "BISECT_START")):
        return "bisect"
    return None


def memory_branch(location: RepoLocation) -> str | None:
    """The branch whose memory a write goes to: the checked-out branch, or while
    a rebase or bisect has detached HEAD, the branch being rebased or bisected.
    None means detached HEAD (spec/sync.md, "Branches")."""
    branch = head_branch(location)
    if branch is not None:
        return branch
    for name in ("rebase-merge/head-name", "rebase-apply/head-name"):
        text = _read_text(os.path.join(location.git_path, name))
        if text and text.startswith("refs/heads/"):
            return text[len("refs/heads/") :]
    text = _read_text(os.path.join(location.git_path, "BISECT_START"))
    if text and len(text) not in (40, 64):
        return text.removeprefix("refs/heads/")
    return None
