"""Moving memory refs to and from a git remote with the git CLI.

Git's own transport is used for everything (ssh, https with credential
helpers, file://, git://), with these rules (spec/sync.md, "Sync protocol"):

* fetch into the private mirror ``refs/edda-remotes/<remote>/…`` only, with
  an explicit refspec: never into ``refs/edda/*`` (that would overwrite local
  memory) and never under ``refs/remotes/`` (a plain ``git fetch --prune``
  would delete it). The user's ``remote.*.fetch``/``push`` settings and
  ``FETCH_HEAD`` are never touched;
* push with explicit refspecs, without ``+``, ``--atomic`` where the server
  supports it, and ``--no-verify`` so the user's pre-push hook does not run
  again for memory. The payload store is a parentless snapshot that replaces
  itself, so it alone is pushed with ``--force-with-lease`` naming the exact
  value last fetched: a compare-and-swap, never a blind force.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field

from gitmem.errors import GitError, RemoteError, UsageError
from gitmem.records import layout
from gitmem.storage.gitconfig import Config, get_last
from gitmem.storage.locate import RepoLocation, clean_git_env, head_branch

# Refused because the remote moved: fetch, merge and try again.
RETRYABLE = ("non-fast-forward", "fetch first", "stale info")


@dataclass(frozen=True)
class Remote:
    """A remote to sync with: a configured name or a URL/path."""

    name: str  # what the user typed (or the default)
    key: str  # the mirror namespace component

    @property
    def mirror_prefix(self) -> str:
        return layout.mirror_prefix(self.key)


@dataclass
class PushOutcome:
    ok: bool
    retry: bool = False
    lines: list[str] = field(default_factory=list)
    message: str = ""


def _run(
    location: RepoLocation, args: list[str], *, prompt: bool = True
) -> subprocess.CompletedProcess[bytes]:
    env = clean_git_env()
    if not prompt:
        env["GIT_TERMINAL_PROMPT"] = "0"  # background runs must never wait for a password
        env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    try:
        return subprocess.run(
            ["git", *args], cwd=location.cwd, capture_output=True, env=env, check=False
        )
    except FileNotFoundError as exc:
        raise GitError("the git command is not installed", "install git and retry") from exc


def _last_error(proc: subprocess.CompletedProcess[bytes]) -> str:
    lines = [
        line.strip()
        for line in proc.stderr.decode("utf-8", "replace").splitlines()
        if line.strip() and not line.startswith("hint:")
    ]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (fatal or lines or ["git failed"])[-1]


def configured_remotes(location: RepoLocation) -> list[str]:
    proc = _run(location, ["remote"])
    return proc.stdout.decode().split() if proc.returncode == 0 else []


def resolve_remote(location: RepoLocation, config: Config, name: str | None) -> Remote:
    """The remote to use: ``name``, else ``edda.remote``, else the current
    branch's remote, else ``origin``, else the only remote."""
    remotes = configured_remotes(location)
    if name is None:
        branch = head_branch(location)
        for candidate in (
            get_last(config, "edda.remote"),
            get_last(config, f"branch.{branch}.remote") if branch else None,
            "origin" if "origin" in remotes else None,
            remotes[0] if len(remotes) == 1 else None,
        ):
            if candidate and candidate != ".":
                name = candidate
                break
    if not name:
        raise UsageError(
            "no remote to sync memory with",
            "add one with 'git remote add origin URL', or name it: git edda sync REMOTE",
        )
    if name in remotes:
        return Remote(name, name)
    if "://" in name or name.startswith(("/", ".", "~")) or ":" in name or os.path.exists(name):
        digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:16]
        return Remote(name, f"url-{digest}")
    raise UsageError(
        f"{name!r} is neither a configured remote nor a URL",
        f"configured remotes: {', '.join(remotes) or 'none'}",
    )


def fetch(location: RepoLocation, remote: Remote, *, prompt: bool = True, depth: int = 0) -> None:
    """Mirror the remote's ``refs/edda/*`` under ``refs/edda-remotes/<key>/``.

    ``--prune`` here prunes only the mirror (it matches our refspec alone);
    tags, submodules and FETCH_HEAD are left alone.
    """
    args = [
        "-c",
        "fetch.pruneTags=false",
        "-c",
        f"remote.{remote.name}.pruneTags=false",
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        "--prune",
    ]
    if depth:
        args.append(f"--depth={depth}")
    args += [remote.name, f"+{layout.REF_ROOT}*:{remote.mirror_prefix}*"]
    proc = _run(location, args, prompt=prompt)
    if proc.returncode != 0:
        raise RemoteError(
            f"could not fetch memory from {remote.name}: {_last_error(proc)}",
            f"check the remote and your access with: git ls-remote {remote.name}",
        )


def remote_has_memory(location: RepoLocation, remote: Remote, *, prompt: bool = True) -> bool:
    proc = _run(location, ["ls-remote", remote.name, f"{layout.REF_ROOT}*"], prompt=prompt)
    if proc.returncode != 0:
        raise RemoteError(
            f"could not list {remote.name}: {_last_error(proc)}",
            f"check the remote and your access with: git ls-remote {remote.name}",
        )
    return bool(proc.stdout.strip())


def push(
    location: RepoLocation,
    remote: Remote,
    refs: list[str],
    leases: dict[str, str | None],
    *,
    prompt: bool = True,
    atomic: bool = True,
    sources: Mapping[str, str] | None = None,
) -> PushOutcome:
    """Push ``refs`` (same name remotely, from the local ref of that name or
    the object ``sources`` gives); refs in ``leases`` are pushed with
    ``--force-with-lease=<ref>:<expected>`` (None: must not exist yet)."""
    args = ["push", "--porcelain", "--no-verify", "--quiet"]
    if atomic:
        args.append("--atomic")
    for ref, expected in leases.items():
        args.append(f"--force-with-lease={ref}:{expected or ''}")
    given = sources or {}
    args += [remote.name, *(f"{given.get(ref, ref)}:{ref}" for ref in refs)]
    proc = _run(location, args, prompt=prompt)
    lines = [line for line in proc.stdout.decode("utf-8", "replace").splitlines() if "\t" in line]
    if proc.returncode == 0:
        return PushOutcome(True, lines=lines)
    error = _last_error(proc)
    if atomic and "atomic" in error and "support" in error:
        return PushOutcome(False, message="atomic-unsupported")
    rejected = [line for line in lines if line.startswith("!")]
    text = " ".join(rejected) + " " + error
    if any(reason in text for reason in RETRYABLE):
        return PushOutcome(False, retry=True, lines=lines, message=error)
    raise RemoteError(
        f"could not push memory to {remote.name}: {error}",
        f"check that you may push to {remote.name}; nothing was lost locally",
    )
