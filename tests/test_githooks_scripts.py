"""The rendered hook scripts in hooks/git/ match what the installer writes, and are valid sh."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitmem.githooks.script import HOOKS, MARKER, OPTIONAL_HOOKS, is_ours, render

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("hook", [*HOOKS, *OPTIONAL_HOOKS])
def test_reference_copy_is_current(hook: str) -> None:
    expected = render(hook, "/path/to/python", "/path/to/site-packages")
    assert (ROOT / "hooks" / "git" / hook).read_text() == expected, (
        "regenerate with: python -m gitmem.githooks.script hooks/git"
    )


@pytest.mark.parametrize("hook", [*HOOKS, *OPTIONAL_HOOKS])
def test_script_is_valid_posix_sh_and_marked(hook: str, tmp_path: Path) -> None:
    script = render(hook, "/no/such/python", "/tmp/it's here")
    assert is_ours(script) and MARKER in script
    path = tmp_path / hook
    path.write_text(script)
    assert subprocess.run(["sh", "-n", str(path)]).returncode == 0
    # a missing interpreter is skipped and the hook succeeds
    path.chmod(0o755)
    assert subprocess.run([str(path), "a", "b", "1"], input=b"", cwd=tmp_path).returncode == 0


def test_foreign_scripts_are_not_ours() -> None:
    assert not is_ours("#!/bin/sh\necho hi\n")
    assert not is_ours("#!/bin/sh\n" + "\n" * 5 + MARKER + "\n")
