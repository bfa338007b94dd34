"""The package's shape: layers import only downwards, no private name crosses a module."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gitmem"


def test_layers_contract_holds(monkeypatch):
    """lint-imports (import-linter) with the contract in pyproject.toml: a
    wrong-way import anywhere in gitmem/ fails this test."""
    from importlinter.cli import lint_imports

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def test_the_contract_fails_on_a_wrong_way_import(tmp_path, monkeypatch):
    """The check can fail: a copy of the package where storage imports the
    application layer breaks the contract."""
    import shutil

    from importlinter.cli import lint_imports

    shutil.copytree(PACKAGE, tmp_path / "gitmem", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bad = tmp_path / "gitmem" / "storage" / "files.py"
    bad.write_text(bad.read_text() + "\n\ndef _wrong() -> None:\n    import gitmem.app.record\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [
        m for m in list(__import__("sys").modules) if m == "gitmem" or m.startswith("gitmem.")
    ]:
        monkeypatch.delitem(__import__("sys").modules, name)
    assert lint_imports(config_filename=str(tmp_path / "pyproject.toml"), no_cache=True) == 1


def _private_imports() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gitmem"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}")
    return found


def test_no_private_name_is_imported_across_modules():
    assert _private_imports() == []


@pytest.mark.parametrize("folder", ["branches", "sync", "githooks", "app"])
def test_every_layer_folder_is_a_package(folder):
    assert (PACKAGE / folder / "__init__.py").is_file()


def test_no_grab_bag_modules():
    names = {p.stem for p in PACKAGE.rglob("*.py")}
    assert not names & {"utils", "util", "helpers", "misc", "common"}, os.linesep.join(
        sorted(names)
    )
