"""Find a repository's git dir, common dir, work tree and current branch.

Pure standard library so that the capture hot path can find where to spool an
event without importing pygit2 (about 90 ms) or spawning git (a few ms each).
Anything unusual (reftable refs, GIT_DIR pointing elsewhere) falls back to the
git CLI, which is always right.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gitmem.errors import GitError, NotARepositoryError

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


@dataclass(frozen=True)
class RepoLocation:
    """Where a repository lives on disk."""

    git_dir: Path  # the per-worktree git dir (== common_dir outside linked worktrees)
    common_dir: Path  # shared by all worktrees: refs, objects, config, our state
    workdir: Path | None  # None for a bare repository

    @property
    def state_dir(self) -> Path:
        """gitmem's own state (spool, clock, logs, sidecars) under the common dir."""
        return self.common_dir / STATE_DIR_NAME

    @property
    def is_bare(self) -> bool:
        return self.workdir is None

    @property
    def uses_reftable(self) -> bool:
        """True when refs are stored in reftable format (pygit2 cannot open these)."""
        return (self.common_dir / "reftable").is_dir()


def clean_git_env() -> dict[str, str]:
    """The current environment without the repository-local GIT_* variables."""
    env = dict(os.environ)
    for name in GIT_LOCAL_ENV_VARS:
        env.pop(name, None)
    return env


def run_git(args: list[str], cwd: Path | str, input_bytes: bytes | None = None) -> bytes:
    """Run git with a clean environment; raise GitError with git's message on failure."""
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


def _looks_like_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir()


def _read_gitfile(path: Path) -> Path | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:") :].strip())
    return target if target.is_absolute() else (path.parent / target)


def _common_dir_of(git_dir: Path) -> Path:
    try:
        text = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    common = Path(text)
    return (common if common.is_absolute() else git_dir / common).resolve()


def locate(path: str | os.PathLike[str] | None = None) -> RepoLocation:
    """Locate the repository containing ``path`` (default: the current directory).

    Honours ``GIT_DIR`` when no explicit path is given, as git does.
    Raises :class:`NotARepositoryError` when there is none.
    """
    if path is None and os.environ.get("GIT_DIR"):
        git_dir = Path(os.environ["GIT_DIR"]).resolve()
        work = os.environ.get("GIT_WORK_TREE")
        common_env = os.environ.get("GIT_COMMON_DIR")
        common = Path(common_env).resolve() if common_env else _common_dir_of(git_dir)
        if work:
            workdir: Path | None = Path(work).resolve()
        elif common == git_dir and git_dir.name == ".git":
            workdir = git_dir.parent
        else:
            workdir = _workdir_of(git_dir, common)
        return RepoLocation(git_dir, common, workdir)
    start = Path(path if path is not None else os.getcwd()).resolve()
    for candidate in (start, *start.parents):
        dot_git = candidate / ".git"
        if dot_git.is_dir() and _looks_like_git_dir(dot_git):
            return RepoLocation(dot_git, _common_dir_of(dot_git), candidate)
        if dot_git.is_file():
            git_dir = _read_gitfile(dot_git)
            if git_dir is not None and git_dir.is_dir():
                git_dir = git_dir.resolve()
                return RepoLocation(git_dir, _common_dir_of(git_dir), candidate)
        if _looks_like_git_dir(candidate):
            common = _common_dir_of(candidate)
            return RepoLocation(candidate, common, _workdir_of(candidate, common))
    raise NotARepositoryError(
        f"not a git repository: {start}",
        "run inside a git repository, pass --repo PATH, or create one with 'git init'",
    )


def _workdir_of(git_dir: Path, common: Path) -> Path | None:
    """Work tree of a git dir we were pointed at directly (None when bare)."""
    if git_dir != common:  # a linked worktree's private dir names its work tree
        gitfile = _read_text(git_dir / "gitdir")
        return Path(gitfile).parent if gitfile else None
    if git_dir.name == ".git":
        return git_dir.parent
    config = _read_text(git_dir / "config") or ""
    for line in config.splitlines():
        if line.strip().replace(" ", "").lower() == "bare=false":
            return git_dir.parent
    return None


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def head_ref(location: RepoLocation) -> str | None:
    """The full ref name HEAD points at (``refs/heads/main``), or None if detached.

    The branch may be unborn (no commits yet). Reads the HEAD file directly and
    asks git only when the file does not say (reftable keeps a placeholder).
    """
    text = _read_text(location.git_dir / "HEAD")
    if text is not None and text.startswith("ref: "):
        target = text[5:].strip()
        if target != "refs/heads/.invalid":
            return target
    elif text is not None and len(text) in (40, 64):
        return None
    try:
        out = run_git(["symbolic-ref", "-q", "HEAD"], location.workdir or location.git_dir)
    except GitError:
        return None
    return out.decode("utf-8").strip() or None


def head_branch(location: RepoLocation) -> str | None:
    """The short name of the checked-out branch, or None when HEAD is detached."""
    ref = head_ref(location)
    if ref is None:
        return None
    return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref
