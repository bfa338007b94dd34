"""gitmem's part of each git hook: fast, standard library only, never failing.

Called by the installed scripts as ``python -S -E -c … <hook> <args>``. What
each hook does (spec/sync.md, "Git hooks"):

``post-checkout <old> <new> <flag>``
    On a branch checkout (flag 1) to a branch without memory, record a
    *fork* intent naming the branch checked out before, and start the
    background worker to create the fork. Otherwise nothing: writes follow
    HEAD by themselves.
``post-merge <squash>``
    Record a *merge* intent (branch, new HEAD, ORIG_HEAD) and start the
    worker, which merges the memory of every branch whose code just became
    part of this one. Squash merges are invisible to git: ``git edda merge``.
``post-commit``
    Spool a ``commit_link`` event for the new commit with the active session
    and capsule (skipped while a rebase replays commits: post-rewrite maps them).
    For a merge commit (a conflicted merge finished with ``git commit``, for
    which git runs no post-merge), record a merge intent instead.
``post-rewrite <amend|rebase>``
    Spool one ``commit_rewrite`` event with the old -> new pairs from stdin.
``pre-push <remote> <url>`` (optional)
    Start a background ``git edda push <remote>`` so memory travels with code;
    not when a chained pre-push hook refused the push.

After a branch checkout and a merge, the worker also brings this worktree's
code graph up to date when it has one (``edda.code.onHooks``).

Nothing here raises: errors go to ``<common dir>/edda/log/hooks.log``.
"""

from __future__ import annotations

import os
import sys
import time

from gitmem.records import layout
from gitmem.storage.locate import (
    GIT_LOCAL_ENV_VARS,
    RepoLocation,
    head_branch,
    locate,
    memory_branch,
    operation_in_progress,
    read_git_output,
)

# The directory holding the gitmem package (what hooks put on sys.path).
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

LOG_NAME = "hooks.log"
# Seconds a hook waits for any of gitmem's locks (the clock, when it spools an
# event); git and the user wait for the hook, so after this it defers its work.
HOOK_LOCK_WAIT = 0.5
LOG_MAX_BYTES = 1 << 20
ZERO = "0" * 40


def log(location: RepoLocation | None, message: str) -> None:
    """Append one line to hooks.log (rotated at 1 MiB), secrets masked; never raises."""
    try:
        if location is None:
            return
        # Messages carry exception text (git's stderr with a remote's URL, a
        # token in a path): mask secrets as capture does.  The scrubber is
        # standard-library only, like this module; on failure, write nothing.
        from gitmem.capture.scrub import default_scrubber

        message = default_scrubber().scrub(message).text
        directory = os.path.join(location.state_path, "log")
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, LOG_NAME)
        try:
            if os.path.getsize(path) > LOG_MAX_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} pid={os.getpid()} {' '.join(message.split())}\n")
    except Exception:
        pass


def _read_tail(path: str, size: int = 8192) -> list[str]:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            end = handle.tell()
            handle.seek(max(0, end - size))
            return handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []


def _last_head_subject(location: RepoLocation) -> str:
    lines = _read_tail(os.path.join(location.git_path, "logs", "HEAD"))
    return lines[-1].partition("\t")[2] if lines else ""


def ref_exists(location: RepoLocation, ref: str) -> bool:
    """Whether ``ref`` exists, from the ref files (git CLI for reftable)."""
    if location.uses_reftable:
        return read_git_output(["show-ref", "--verify", "--quiet", ref], location.cwd) is not None
    if os.path.isfile(os.path.join(location.common_path, ref)):
        return True
    needle = f" {ref}\n".encode()
    try:
        with open(os.path.join(location.common_path, "packed-refs"), "rb") as handle:
            return needle in handle.read()
    except FileNotFoundError:
        return False


def has_memory(location: RepoLocation) -> bool:
    if location.uses_reftable:
        out = read_git_output(["for-each-ref", "--count=1", layout.BRANCH_PREFIX], location.cwd)
        return bool(out and out.strip())
    try:
        if os.listdir(os.path.join(location.common_path, layout.BRANCH_PREFIX)):
            return True
    except FileNotFoundError:
        pass
    try:
        with open(os.path.join(location.common_path, "packed-refs"), "rb") as handle:
            return f" {layout.BRANCH_PREFIX}".encode() in handle.read()
    except FileNotFoundError:
        return False


def spawn_worker(location: RepoLocation, job: str, *args: str, wait: bool = False) -> None:
    """Start ``python -m gitmem.githooks.worker`` (with site-packages, unlike this
    process), output to hooks.log. Detached in its own session unless ``wait``."""
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCAL_ENV_VARS}
    package_root = PACKAGE_PARENT
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["GIT_TERMINAL_PROMPT"] = "0"
    log_dir = os.path.join(location.state_path, "log")
    os.makedirs(log_dir, exist_ok=True)
    devnull = os.open(os.devnull, os.O_RDONLY)
    out = os.open(os.path.join(log_dir, LOG_NAME), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        pid = os.posix_spawn(
            sys.executable,
            [sys.executable, "-m", "gitmem.githooks.worker", job, location.cwd, *args],
            env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, devnull, 0),
                (os.POSIX_SPAWN_DUP2, out, 1),
                (os.POSIX_SPAWN_DUP2, out, 2),
            ],
            setsid=not wait,
        )
    finally:
        os.close(devnull)
        os.close(out)
    if wait:
        os.waitpid(pid, 0)


def _run_job(location: RepoLocation, job: str, *args: str) -> None:
    # GITMEM_HOOKS_FOREGROUND=1 (tests, CI): finish the work before git returns.
    spawn_worker(location, job, *args, wait=os.environ.get("GITMEM_HOOKS_FOREGROUND") == "1")


def _with_code(location: RepoLocation, job: str | None) -> str | None:
    """``job`` followed by a refresh of the code graph when this worktree has
    one (``apply+code``): HEAD moved, so the graph no longer describes it.
    A worktree whose graph was never built gets none (the first code query
    builds it); ``edda.code.onHooks=false`` is read by the worker."""
    from gitmem.graph.paths import has_graph

    if not has_graph(location):
        return job
    return f"{job}+code" if job else "code"


def _start(location: RepoLocation, job: str | None) -> None:
    if job:
        _run_job(location, job)


def post_checkout(location: RepoLocation, args: list[str]) -> None:
    if len(args) < 3 or args[2] != "1":
        return  # a file checkout
    branch = head_branch(location)
    if branch is None or ref_exists(location, layout.branch_ref(branch)):
        # memory may have moved since the last query
        _start(location, _with_code(location, "index" if has_memory(location) else None))
        return
    from gitmem.branches.intents import write_intent

    moved = _last_head_subject(location)
    previous = None
    prefix = "checkout: moving from "
    if moved.startswith(prefix) and moved.endswith(f" to {branch}"):
        previous = moved[len(prefix) : -len(f" to {branch}")]
    new = args[1] if args[1] != ZERO else None
    write_intent(
        location.state_path, {"kind": "fork", "branch": branch, "from": previous, "code": new}
    )
    _start(location, _with_code(location, "apply"))


def post_merge(location: RepoLocation, args: list[str]) -> None:
    if args and args[0] == "1":
        return  # squash: no merge happened as far as git knows (HEAD did not move)
    branch = head_branch(location)
    if branch is None or not has_memory(location):
        _start(location, _with_code(location, None))
        return
    head = (read_git_output(["rev-parse", "HEAD"], location.cwd) or b"").decode().strip()
    if not head:
        return
    orig = None
    try:
        with open(os.path.join(location.git_path, "ORIG_HEAD"), encoding="ascii") as handle:
            orig = handle.read().strip() or None
    except OSError:
        pass
    from gitmem.branches.intents import write_intent

    intent = {
        "kind": "merge",
        "branch": branch,
        "head": head,
        "orig": orig,
        "subject": _last_head_subject(location),
    }
    write_intent(location.state_path, intent)
    _start(location, _with_code(location, "apply"))


def _spool(
    location: RepoLocation,
    event_type: str,
    body: dict[str, object],
    active: dict[str, str] | None = None,
) -> None:
    from gitmem.capture.active import read_active
    from gitmem.capture.sealer import Draft, Sealer, agent_from_env
    from gitmem.errors import ConflictError
    from gitmem.storage import spool
    from gitmem.storage.gitconfig import get_bool, read_config

    config = read_config(location)
    if not get_bool(config, "edda.linkCommits", True):
        return
    if active is None:
        active = read_active(location)
    draft = Draft(
        event_type,
        body,
        session=active.get("session"),
        agent=active.get("agent"),
        capsule=active.get("capsule"),
    )
    try:
        sealed = Sealer(location, config).seal([draft])
    except ConflictError as exc:
        # The clock lock did not come in time (HOOK_LOCK_WAIT): git must not
        # wait for it. Leave the event as an intent; the next gitmem process
        # with the full library seals and commits it (Memory.apply_intents).
        from gitmem.branches.intents import write_intent

        intent = {
            "kind": "event",
            "type": event_type,
            "body": body,
            # as this process's sealer would have resolved them: the process
            # applying the intent has another environment
            "session": draft.session or os.environ.get("GITMEM_SESSION") or None,
            "agent": draft.agent or agent_from_env(),
            "capsule": draft.capsule,
            "branch": memory_branch(location),
        }
        write_intent(location.state_path, intent, fsync=get_bool(config, "edda.fsync", True))
        log(location, f"{event_type} deferred to the next gitmem command: {exc.message}")
        _run_job(location, "apply")
        return
    spool.write_spool(
        location.state_path,
        [{"envelope": env, "body": b} for env, b in sealed],
        fsync=get_bool(config, "edda.fsync", True),
    )


def post_commit(location: RepoLocation, args: list[str]) -> None:
    if operation_in_progress(location) == "rebase":
        return  # replayed commits: post-rewrite records the mapping
    out = read_git_output(["log", "-1", "--format=%H%x00%P%x00%s", "HEAD"], location.cwd)
    if not out:
        return
    sha, parents, subject = out.decode("utf-8", "replace").strip().split("\0", 2)
    branch = head_branch(location)
    if len(parents.split()) > 1:
        # A merge finished by `git commit` after a conflict: git runs no
        # post-merge for it, so this is where memory learns of the merge.
        if branch is not None and has_memory(location):
            from gitmem.branches.intents import write_intent

            intent = {"kind": "merge", "branch": branch, "head": sha, "orig": parents.split()[0]}
            write_intent(location.state_path, intent)
            _run_job(location, "apply")
        return
    from gitmem.capture.active import read_active

    body: dict[str, object] = {"sha": sha, "message": subject}
    if branch:
        body["branch"] = branch
    active = read_active(location)
    if active.get("session"):
        body["session"] = active["session"]
    _spool(location, "commit_link", body, active)


def post_rewrite(location: RepoLocation, args: list[str]) -> None:
    pairs = []
    for line in sys.stdin.read().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] != parts[1]:
            pairs.append([parts[0], parts[1]])
    if pairs:
        _spool(location, "commit_rewrite", {"kind": args[0] if args else "rewrite", "map": pairs})


def pre_push(location: RepoLocation, args: list[str]) -> None:
    lines = sys.stdin.read().splitlines()
    remote_refs = [line.split()[2] for line in lines if len(line.split()) >= 4]
    if remote_refs and all(ref.startswith(layout.REF_ROOT) for ref in remote_refs):
        return  # a memory push itself
    from gitmem.storage.gitconfig import get_bool, read_config

    if not args or not get_bool(read_config(location), "edda.pushWithCode", True):
        return
    _run_job(location, "push", args[0])


HANDLERS: dict[str, Callable[[RepoLocation, list[str]], None]] = {
    "post-checkout": post_checkout,
    "post-merge": post_merge,
    "post-commit": post_commit,
    "post-rewrite": post_rewrite,
    "pre-push": pre_push,
}


def main(argv: list[str]) -> None:
    """Run gitmem's part of hook ``argv[0]``; never raises, never exits non-zero."""
    location = None
    try:
        from gitmem.storage.lock import limit_waits

        limit_waits(HOOK_LOCK_WAIT)
        hook = argv[0]
        location = locate()
        handler = HANDLERS.get(hook)
        if handler is not None and os.path.isdir(location.state_path):
            handler(location, argv[1:])
    except BaseException as exc:  # a hook must never break git
        log(location, f"{argv[:1]} failed: {type(exc).__name__}: {exc}")
