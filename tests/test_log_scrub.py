"""gitmem's own logs never keep a secret: cli.log and hooks.log are scrubbed.

Fake secrets are assembled at runtime so that this file holds no literal
token-shaped string for secret scanners to flag.
"""

from __future__ import annotations

from pathlib import Path

from conftest import init_repo, run_cli

from gitmem.cli.main import log_internal_error
from gitmem.githooks.run import log
from gitmem.storage.locate import locate

GH_PAT = "gh" + "p_" + "FAKE" * 9
AWS_KEY_ID = "AK" + "IA" + "FAKE" * 4
DB_PASSWORD = "hunter" + "2"


def _state(repo: Path) -> Path:
    return repo / ".git" / "edda"


def test_internal_error_leaves_no_token_in_cli_log(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    assert run_cli(repo, "init", "--no-hooks", "--no-fetch")[0] == 0
    # A real internal error: the clock file gitmem takes time from is a directory.
    (_state(repo) / "clock").mkdir()
    code, out, err = run_cli(repo, "note", f"deploy with {GH_PAT}", "--tag", f"id-{AWS_KEY_ID}")
    assert code == 1 and out == ""
    log_path = _state(repo) / "log" / "cli.log"
    # The log of the repository named by -C, not of the current directory's.
    assert "internal error: IsADirectoryError" in err and f"details in {log_path}" in err
    text = log_path.read_text()
    assert text.startswith("--- ") and "git edda note" in text
    assert "Traceback" in text and "IsADirectoryError" in text
    for secret in (GH_PAT, AWS_KEY_ID):
        assert secret not in text and secret not in err
    assert "[REDACTED:github-token]" in text and "[REDACTED:aws-access-key]" in text


def test_exception_text_and_traceback_are_scrubbed(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    url = f"https://deploy:{DB_PASSWORD}@git.example.com/o/r.git"

    def push() -> None:
        raise RuntimeError(f"git push {url} failed: token {GH_PAT} rejected")

    try:
        push()
    except RuntimeError as exc:
        where = log_internal_error(exc, ["push", "--token", GH_PAT, "-C", str(repo)])
    assert where == str(_state(repo) / "log" / "cli.log")
    text = Path(where).read_text()
    assert (
        "RuntimeError: git push https://deploy:[REDACTED:url-credentials]@git.example.com" in text
    )
    assert "in push" in text  # the traceback is kept, only secrets go
    for secret in (GH_PAT, DB_PASSWORD):
        assert secret not in text


def test_hooks_log_is_scrubbed(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    location = locate(repo)
    log(location, f"worker ['push'] failed: GitError: fatal: https://x:{GH_PAT}@github.com/o/r")
    log(location, f"post-commit failed: password={DB_PASSWORD}")
    text = (_state(repo) / "log" / "hooks.log").read_text()
    lines = text.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith(
        "worker ['push'] failed: GitError: fatal: https://x:[REDACTED:github-token]@github.com/o/r"
    )
    assert lines[1].endswith("post-commit failed: password=[REDACTED:password-assignment]")
    assert GH_PAT not in text and DB_PASSWORD not in text
