"""Entry point of ``git edda`` / ``gitmem``: run a command, print, map errors to exit codes.

Commands (in :mod:`gitmem.cli.commands`) return an :class:`Output`; this
module is the only place that prints results or errors and decides the exit
code (through :func:`gitmem.errors.exit_code_for`).
"""

from __future__ import annotations

import os
import sys

# Agent hooks (``git edda hook claude``) run on every tool call and must start
# in milliseconds: this module imports only what they share with it, and the
# rest lazily (the terminal's settings alone cost ~14 ms).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from gitmem.cli.terminal import Terminal

    Show = Callable[..., None]

_WITHHELD = "[gitmem: text withheld: the secret scrubber failed]"


def _masked(text: str) -> str:
    """``text`` with secrets masked by the default scrubber.

    Command lines and exception messages carry what the user typed (``git
    edda note "<a token>"``) and what git said (a remote URL with
    credentials); they are written to disk and the terminal like captured
    text, so they are scrubbed like it.  Should the scrubber fail, nothing of
    the text is written.
    """
    try:
        from gitmem.capture.scrub import default_scrubber

        return default_scrubber().scrub(text).text
    except Exception:
        return _WITHHELD


def _repo_option(argv: Sequence[str]) -> str | None:
    """The repository given with ``-C/--repo`` on the command line (the last one wins)."""
    repo = None
    for i, arg in enumerate(argv):
        if arg in ("-C", "--repo") and i + 1 < len(argv):
            repo = argv[i + 1]
        elif arg.startswith("--repo="):
            repo = arg[len("--repo=") :]
    return repo


def log_internal_error(exc: BaseException, argv: Sequence[str]) -> str | None:
    """Append the command line and traceback, secrets masked, to the cli.log of
    the repository the command ran on; return its path (None if it cannot)."""
    try:
        import shlex
        import traceback
        from datetime import UTC, datetime

        from gitmem.storage.locate import locate

        command = _masked(shlex.join(["git", "edda", *argv]))
        trace = _masked("".join(traceback.format_exception(exc)))
        # The repository named by -C, not the current directory's: an
        # in-process caller's cwd may be another repository altogether.
        log_dir = locate(_repo_option(argv)).state_dir / "log"
        log_dir.mkdir(parents=True, exist_ok=True)
        path = log_dir / "cli.log"
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"--- {datetime.now(UTC).isoformat()} {command}\n")
            handle.write(trace)
        return str(path)
    except Exception:
        return None


# Options every command takes, which git users put before the command too
# (``git edda -C ../other status``, like ``git -C ../other status``).
_GLOBAL_WITH_VALUE = ("-C", "--repo")
_GLOBAL_FLAGS = ("--json", "--no-pager", "-P")


def hoist_global_options(argv: Sequence[str]) -> list[str]:
    """Move global options given before the command to after it, where every
    command declares them: ``-C PATH --json status`` -> ``status -C PATH --json``."""
    args = list(argv)
    moved: list[str] = []
    while args:
        first = args[0]
        if first in _GLOBAL_WITH_VALUE and len(args) > 1:
            moved += args[:2]
            del args[:2]
        elif first in _GLOBAL_FLAGS or first.startswith("--repo="):
            moved.append(args.pop(0))
        else:
            break
    return args + moved


def _usage_message(exc: Exception) -> str:
    """A cyclopts error in git's words where it has a common one."""
    from cyclopts import MissingArgumentError, UnusedCliTokensError

    if isinstance(exc, UnusedCliTokensError):
        extra = " ".join(str(t) for t in getattr(exc, "unused_tokens", []) or [])
        if extra:
            count = len(getattr(exc, "unused_tokens", []) or [])
            what = "argument" if count == 1 else "arguments"
            return f"unexpected {what}: {extra} (quote text that has spaces)"
    if isinstance(exc, MissingArgumentError):
        return " ".join(str(exc).split()).replace("requires an argument", "needs a value")
    return " ".join(str(exc).split())


def _terminal(argv: Sequence[str], want_json: bool, tty: bool | None) -> Terminal:
    """This run's colour and pager (none for --json), made the settings
    rendering consults: colour must be known before the command renders."""
    from gitmem.cli.terminal import PLAIN, read_settings, use

    terminal = (
        PLAIN
        if want_json
        else read_settings(
            _repo_option(argv),
            paging=not ("--no-pager" in argv or "-P" in argv),
            stdout=sys.stdout,
            tty=tty,
        )
    )
    use(terminal)
    return terminal


def run(argv: Sequence[str], *, tty: bool | None = None, show: Show | None = None) -> int:
    """Run ``git edda`` with ``argv``; return the exit code.

    ``tty`` says whether standard output is a terminal (None: look at
    ``sys.stdout``) and ``show`` replaces how human output is written
    (:func:`gitmem.cli.terminal.write`): the daemon runs commands for a
    client whose terminal is elsewhere.
    """
    hook = hook_route(argv)
    if hook is not None:
        # Before cyclopts and the rest of the CLI: Claude Code waits for this
        # process on every tool call (gitmem.agents.claude.hooks).
        from gitmem.agents.hooks import run_hook

        return run_hook(*hook)
    import json

    from cyclopts import CycloptsError

    from gitmem.cli.commands import Output, app
    from gitmem.cli.introspect import command_words, help_request
    from gitmem.cli.terminal import write
    from gitmem.errors import ExitCode, GitmemError, exit_code_for

    argv = hoist_global_options(argv)
    want_json = "--json" in argv
    terminal = _terminal(argv, want_json, tty)
    try:
        # -h/--help: the help command's text, which is also what the manual
        # pages say, not cyclopts' own rendering of the same definitions.
        asked = help_request(argv)
        result = app(
            asked or list(argv),
            exit_on_error=False,
            print_error=False,
            result_action="return_value",
        )
    except CycloptsError as exc:
        message = _usage_message(exc)
        see = " ".join(["git edda help", *command_words(argv)])
        print(f"git edda: usage error: {message} (see '{see}')", file=sys.stderr)
        return int(ExitCode.USAGE)
    except GitmemError as exc:
        if want_json:
            error = {"code": int(exc.exit_code), "message": exc.message, "hint": exc.hint}
            print(json.dumps({"error": error}, sort_keys=True))
        print(f"git edda: error: {exc}", file=sys.stderr)
        return int(exit_code_for(exc))
    except KeyboardInterrupt:
        print("git edda: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        where = log_internal_error(exc, argv)
        detail = f" (details in {where})" if where else ""
        message = _masked(str(exc))
        print(f"git edda: internal error: {type(exc).__name__}: {message}{detail}", file=sys.stderr)
        return int(ExitCode.ERROR)
    if not isinstance(result, Output):
        return int(ExitCode.OK)
    try:
        if want_json:
            if result.data is not None:  # None: the command wrote its JSON itself (export)
                sys.stdout.write(
                    json.dumps(result.data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
                )
                sys.stdout.flush()
        elif result.text:
            text = result.text if result.text.endswith("\n") else result.text + "\n"
            (show or write)(text, terminal, page=result.page)
            sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (| head): stop quietly, not with a traceback, and
        # not with success either, as git does.
        return int(ExitCode.ERROR)
    return int(result.code)


_HOOK_AGENTS = ("claude", "generic")


def hook_route(argv: Sequence[str]) -> tuple[str, str | None, list[str]] | None:
    """``(agent, repo, rest)`` when ``argv`` is ``[-C PATH] hook claude|generic …``
    (the fast path that bypasses the command parser), else None."""
    args = list(argv)
    repo = None
    while len(args) > 1 and args[0] in _GLOBAL_WITH_VALUE:
        repo = args[1]
        del args[:2]
    if len(args) < 2 or args[0] != "hook" or args[1] not in _HOOK_AGENTS:
        return None
    rest: list[str] = []
    words = iter(args[2:])
    for word in words:
        if word in _GLOBAL_WITH_VALUE:
            repo = next(words, repo)
        elif word.startswith("--repo="):
            repo = word.removeprefix("--repo=")
        else:
            rest.append(word)
    return args[1], repo, rest


def _forwarded(argv: list[str]) -> int | None:
    """The exit code of ``argv`` run by the repository's warm daemon (hook
    calls, search, context, ask: :mod:`gitmem.cli.forward`), or None when it
    runs here. Only for a process of its own: in-process callers of
    :func:`run` (tests, the daemon itself) never forward."""
    hook = hook_route(argv)
    if hook is not None:
        from gitmem.cli.forward import hook as forward_hook

        return forward_hook(*hook)
    from gitmem.cli.forward import command

    args = hoist_global_options(argv)
    return command(args, _repo_option(args))


def main() -> None:
    """Console-script entry point."""
    # numpy's OpenBLAS keeps a thread per core spinning after each call; on a
    # 2-core machine that took ~150 ms of CPU from a context pack, whose
    # matrix products are tiny. Set before numpy loads; the user's value wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    code = _forwarded(sys.argv[1:])
    if code is None:
        code = run(sys.argv[1:])
    # Every command is done and its files are closed; what is left is the
    # interpreter's teardown of ~400 modules and the Arrow, Tantivy and
    # usearch objects, 30-45 ms of every cold query after its output is
    # written. Flush and leave without it (no atexit handler of ours is lost:
    # gitmem registers none and leaves no thread running).
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: what was left is lost
        code = code or 1  # ExitCode.ERROR (gitmem.errors is not loaded on the hook path)
    os._exit(code)


if __name__ == "__main__":
    main()
