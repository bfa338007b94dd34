"""Run the real Claude Code CLI offline, against a scripted model.

``Claude`` owns a project directory and a fresh ``HOME`` (in which the project
is marked trusted, so project settings and hooks apply); ``Claude.run(prompt,
script)`` starts a :class:`~scripted_model.ScriptedModel`, runs ``claude -p
PROMPT --output-format json`` in the project against it, and returns the
parsed result together with every request the model received. Given a list
of prompts, ``run`` keeps one session going through all of them (``claude -p
--input-format stream-json``), sending each after the previous one's result:
that is how a test types ``/compact`` between two prompts of one session.

Hooks run with ``PYTHONPATH`` set to this checkout, so a hook command that
starts Python (``git-edda hook claude``) runs the code under test, not
whatever copy of gitmem the interpreter has installed, and with
``GITMEM_DAEMON=0`` (no warm daemon) unless a test changes ``Claude.environ``.

``find_claude()`` locates the CLI: ``GITMEM_CLAUDE_BIN``, else the cache that
``install_claude.sh`` fills (installing it there when npm is available).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.scripted_model import Request, ScriptedModel, Turn

HERE = Path(__file__).resolve().parent
INSTALL = HERE / "install_claude.sh"
ROOT = HERE.parents[1]  # the checkout whose gitmem the hooks run

# Read once, at import: the suite's autouse fixture later points HOME at a
# temporary directory and drops GITMEM_* variables, which would hide the cache.
_ENV = dict(os.environ)

# What Claude Code needs from the surrounding environment; everything else
# (the developer's ANTHROPIC_*/CLAUDE_* variables, a CLAUDECODE marker when the
# suite itself runs inside Claude Code, proxies) stays out.
_PASS = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "SYSTEMROOT")


def find_claude() -> tuple[Path | None, str]:
    """The ``claude`` binary and its version, or None and the reason it is missing.

    Installs it into the cache on first use when npm is available (the install
    script is idempotent and prints the binary's path, or nothing)."""
    explicit = _ENV.get("GITMEM_CLAUDE_BIN")
    if explicit:
        candidate: Path | None = Path(explicit)
    else:
        try:
            out = subprocess.run(
                ["bash", str(INSTALL)], env=_ENV, capture_output=True, text=True, timeout=600
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"install_claude.sh could not run: {exc}"
        path = out.stdout.strip().splitlines()[-1:] if out.stdout.strip() else []
        if not path:
            why = out.stderr.strip().splitlines()[-1:] or ["no binary"]
            return None, why[0]
        candidate = Path(path[0])
    try:
        version = subprocess.run(
            [str(candidate), "--version"], capture_output=True, text=True, timeout=60, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{candidate} --version failed: {exc}"
    return candidate, version


@dataclass
class ClaudeRun:
    """One ``claude -p`` run: its JSON result, what the model saw, how it went."""

    result: dict[str, Any]
    requests: list[Request]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    unused: list[Turn]
    results: list[dict[str, Any]]
    "One result per prompt (``result`` is the last)."

    @property
    def turns(self) -> list[Request]:
        """The agent's requests to the model (side requests and compaction's
        requests for a summary left out)."""
        return [r for r in self.requests if r.is_agent_turn]

    @property
    def compactions(self) -> list[Request]:
        """Compaction's requests for a summary of the conversation."""
        return [r for r in self.requests if r.is_compaction]


class Claude:
    """A project and a home for Claude Code; ``run`` it with a script."""

    def __init__(self, binary: Path, version: str, root: Path) -> None:
        self.binary = binary
        self.version = version
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir(parents=True, exist_ok=True)
        self.project.mkdir(parents=True, exist_ok=True)
        self.trust(self.project)
        # Added to the CLI's environment, so to its hooks'. gitmem's warm daemon
        # is off unless a test turns it on: hooks would start one on demand,
        # which outlives the test (tests/conftest.py does the same in-process).
        self.environ: dict[str, str] = {"GITMEM_DAEMON": "0"}

    def trust(self, directory: Path) -> None:
        """Mark ``directory`` trusted in ``~/.claude.json`` (project settings,
        hooks and permissions apply only to trusted workspaces)."""
        config_path = self.home / ".claude.json"
        config = json.loads(config_path.read_text()) if config_path.exists() else {}
        projects = config.setdefault("projects", {})
        projects.setdefault(str(directory.resolve()), {})["hasTrustDialogAccepted"] = True
        config_path.write_text(json.dumps(config, indent=2))

    def settings(self, settings: Mapping[str, Any]) -> Path:
        """Write the project's shared ``.claude/settings.json``."""
        path = self.project / ".claude" / "settings.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(settings, indent=2))
        return path

    def hooks(self, events: Iterable[str], command: Sequence[str]) -> Path:
        """Register one command hook for each event (every tool matched)."""
        line = shlex.join(command)
        entry = {"hooks": [{"type": "command", "command": line}]}
        return self.settings(
            {"hooks": {e: [{"matcher": "*", **entry} if "Tool" in e else entry] for e in events}}
        )

    def env(self, base_url: str) -> dict[str, str]:
        """The environment Claude Code runs in: offline, a fresh home."""
        env = {k: _ENV[k] for k in _PASS if k in _ENV}
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            ANTHROPIC_BASE_URL=base_url,
            ANTHROPIC_API_KEY="test",
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_ERROR_REPORTING="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            PYTHONPATH=str(ROOT),
        )
        env.update(self.environ)
        return env

    def run(
        self,
        prompt: str | Sequence[str],
        script: Sequence[Turn],
        *,
        allowed_tools: Sequence[str] = ("Bash",),
        args: Sequence[str] = (),
        cwd: Path | None = None,
        timeout: float = 60,
        check: bool = True,
    ) -> ClaudeRun:
        """Run ``claude -p prompt`` with the model answering from ``script``;
        given several prompts, one session that answers each in turn."""
        command = [str(self.binary), "-p"]
        if isinstance(prompt, str):
            command += [prompt, "--output-format", "json"]
        else:
            command += ["--input-format", "stream-json", "--output-format", "stream-json"]
            command += ["--verbose"]  # stream-json output requires it
        if allowed_tools:
            command += ["--allowedTools", ",".join(allowed_tools)]
        command += args
        with ScriptedModel(list(script)) as model:
            start = time.monotonic()
            env = self.env(model.url)
            if isinstance(prompt, str):
                proc = subprocess.run(
                    command,
                    cwd=cwd or self.project,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
                returncode, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
            else:
                returncode, stdout, stderr = _converse(
                    command, cwd or self.project, env, list(prompt), timeout
                )
            seconds = time.monotonic() - start
            requests, unused = list(model.requests), model.unused
        if isinstance(prompt, str):
            try:
                results = [json.loads(stdout)]
            except ValueError:
                results = []
        else:
            results = [m for m in _json_lines(stdout) if m.get("type") == "result"]
        result = results[-1] if results else {}
        run = ClaudeRun(result, requests, returncode, stdout, stderr, seconds, unused, results)
        expected = 1 if isinstance(prompt, str) else len(prompt)
        if check and (
            returncode != 0
            or len(results) != expected
            or any(r.get("is_error") is not False for r in results)
        ):
            raise AssertionError(
                f"claude exited {returncode}\nstdout: {stdout[-2000:]}\nstderr: {stderr[-2000:]}"
            )
        return run


def _converse(
    command: list[str], cwd: Path, env: dict[str, str], prompts: list[str], timeout: float
) -> tuple[int, str, str]:
    """Run ``command`` (stream-json in and out), sending each prompt as a user
    message once the previous one has its result, then closing its input.

    Sent one at a time so that each prompt meets the session as the previous
    one left it (``/compact`` after the work it compacts, not queued beside
    it). Returns the exit code, stdout and stderr; kills the process and
    raises AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    lines: queue.Queue[str | None] = queue.Queue()
    out: list[str] = []
    with tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,  # a file: a full stderr pipe could stall the CLI
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        stdout = proc.stdout

        def pump() -> None:
            for line in stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        ended = False  # the CLI closed its output (early, when a prompt is left)

        def wait_line() -> str | None:
            return lines.get(timeout=max(0.1, deadline - time.monotonic()))

        try:
            for prompt in prompts:
                message = {"type": "user", "message": {"role": "user", "content": prompt}}
                try:
                    proc.stdin.write(json.dumps(message) + "\n")
                    proc.stdin.flush()
                except BrokenPipeError:
                    break  # the CLI ended early: the caller sees what it said
                while (line := wait_line()) is not None:
                    out.append(line)
                    if any(m.get("type") == "result" for m in _json_lines(line)):
                        break
                else:
                    ended = True
                    break
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
            while not ended and (line := wait_line()) is not None:
                out.append(line)
            returncode = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except (queue.Empty, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
            err.seek(0)
            raise AssertionError(
                f"claude did not finish within {timeout} s\nstdout: {''.join(out)[-2000:]}\n"
                f"stderr: {err.read()[-2000:]}"
            ) from None
        err.seek(0)
        return returncode, "".join(out), err.read()


def _json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects among ``text``'s lines (others skipped)."""
    found = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def recorder(path: Path) -> list[str]:
    """A hook command that appends its stdin (one JSON payload) to ``path``
    as a line, and prints nothing."""
    code = (
        "import sys\n"
        "data = sys.stdin.buffer.read().strip()\n"
        f"with open({str(path)!r}, 'ab') as f: f.write(data + b'\\n')\n"
    )
    return [sys.executable, "-I", "-S", "-c", code]
