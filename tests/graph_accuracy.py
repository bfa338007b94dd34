"""How accurately the code graph's extraction reads code, measured two ways
(shared by tests/test_graph_extract.py and bench/code_extract.py):

* Python against Python's own ``ast`` over a real corpus (the running
  interpreter's standard library): definitions must match exactly; calls
  are compared by (name, line);
* every other language against a small hand-checked fixture project under
  ``tests/data/code/<language>/`` (``expected.json`` beside the sources).

Definitions are compared as (qualname, kind, start line, end line). A
decorated definition starts at its first decorator (``ast`` puts ``lineno``
on the ``def``/``class`` line, so the expected start is the smallest of the
decorators' lines and ``lineno``).
"""

from __future__ import annotations

import ast
import json
import os
import sysconfig
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gitmem.graph.extract import extract
from gitmem.graph.facts import FileFacts

FIXTURES = Path(__file__).resolve().parent / "data" / "code"


def stdlib_files(*, tests: bool = True) -> list[Path]:
    """Every ``.py`` file of the running interpreter's standard library, sorted
    (site-packages left out; test directories too unless ``tests``)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in ("site-packages", "__pycache__")
            and (tests or d not in ("test", "tests", "idle_test"))
        )
        found.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py"))
    return found


def sample(files: list[Path], count: int) -> list[Path]:
    """A deterministic spread of ``count`` files (every k-th one)."""
    if len(files) <= count:
        return files
    step = len(files) / count
    return [files[int(i * step)] for i in range(count)]


# -- Python against ast ------------------------------------------------------------


def _is_protocol(node: ast.ClassDef) -> bool:
    for base in node.bases:
        if isinstance(base, ast.Subscript):
            base = base.value
        if isinstance(base, ast.Name) and base.id == "Protocol":
            return True
        if isinstance(base, ast.Attribute) and base.attr == "Protocol":
            return True
    return False


def ast_definitions(tree: ast.AST) -> Counter[tuple[str, str, int, int]]:
    """(qualname, kind, start, end) of every class and function, as extraction
    should report them."""
    out: Counter[tuple[str, str, int, int]] = Counter()

    def visit(node: ast.AST, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualname = f"{prefix}.{child.name}" if prefix else child.name
                if isinstance(child, ast.ClassDef):
                    kind = "interface" if _is_protocol(child) else "class"
                else:
                    kind = "method" if in_class else "function"
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                out[(qualname, kind, start, child.end_lineno or child.lineno)] += 1
                visit(child, qualname, isinstance(child, ast.ClassDef))
            else:
                visit(child, prefix, in_class)

    visit(tree, "", False)
    return out


def ast_calls(tree: ast.AST) -> Counter[tuple[str, int]]:
    """(name, line) of every call of a name or an attribute."""
    out: Counter[tuple[str, int]] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                out[(node.func.id, node.lineno)] += 1
            elif isinstance(node.func, ast.Attribute):
                out[(node.func.attr, node.lineno)] += 1
    return out


@dataclass
class PythonAccuracy:
    """Extraction against ``ast`` over a set of files."""

    files: int = 0
    skipped: int = 0  # files ast cannot parse (Python 2 test data, bad syntax on purpose)
    definitions: int = 0  # expected by ast
    definitions_matched: int = 0
    definitions_extracted: int = 0
    calls: int = 0
    calls_matched: int = 0
    calls_extracted: int = 0
    mismatched_files: list[str] | None = None

    @property
    def definition_recall(self) -> float:
        return self.definitions_matched / self.definitions if self.definitions else 1.0

    @property
    def definition_precision(self) -> float:
        extracted = self.definitions_extracted
        return self.definitions_matched / extracted if extracted else 1.0

    @property
    def call_recall(self) -> float:
        return self.calls_matched / self.calls if self.calls else 1.0

    @property
    def call_precision(self) -> float:
        return self.calls_matched / self.calls_extracted if self.calls_extracted else 1.0


def compare_python(
    path: Path, facts: FileFacts | None = None
) -> (
    tuple[
        Counter[tuple[str, str, int, int]],
        Counter[tuple[str, str, int, int]],
        Counter[tuple[str, int]],
        Counter[tuple[str, int]],
    ]
    | None
):
    """(expected defs, extracted defs, expected calls, extracted calls) for one
    file, or None when ``ast`` cannot parse it."""
    data = path.read_bytes()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return None
    if facts is None:
        facts = extract(str(path), data)
    got_defs: Counter[tuple[str, str, int, int]] = Counter(
        (d.qualname, d.kind, d.start_line, d.end_line)
        for d in facts.definitions
        if d.kind in ("class", "interface", "function", "method")
    )
    got_calls: Counter[tuple[str, int]] = Counter((c.name, c.line) for c in facts.calls)
    return ast_definitions(tree), got_defs, ast_calls(tree), got_calls


def python_accuracy(files: Iterable[Path]) -> PythonAccuracy:
    """Extraction against ``ast`` over ``files``."""
    acc = PythonAccuracy(mismatched_files=[])
    for path in files:
        result = compare_python(path)
        if result is None:
            acc.skipped += 1
            continue
        want_defs, got_defs, want_calls, got_calls = result
        acc.files += 1
        acc.definitions += sum(want_defs.values())
        acc.definitions_extracted += sum(got_defs.values())
        acc.definitions_matched += sum((want_defs & got_defs).values())
        acc.calls += sum(want_calls.values())
        acc.calls_extracted += sum(got_calls.values())
        acc.calls_matched += sum((want_calls & got_calls).values())
        if want_defs != got_defs and acc.mismatched_files is not None:
            acc.mismatched_files.append(str(path))
    return acc


# -- fixture projects ------------------------------------------------------------


@dataclass
class Score:
    """Precision and recall of one kind of fact."""

    expected: int
    extracted: int
    matched: int

    @property
    def precision(self) -> float:
        return self.matched / self.extracted if self.extracted else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.expected if self.expected else 1.0


FACT_KINDS = ("definitions", "imports", "calls", "inherits")


def fixture_languages() -> list[str]:
    """The languages with a fixture project."""
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").is_file())


def _rows(facts: FileFacts, kind: str) -> Iterator[tuple[object, ...]]:
    if kind == "definitions":
        for d in facts.definitions:
            yield (d.qualname, d.kind, d.start_line, d.end_line)
    elif kind == "imports":
        for i in facts.imports:
            yield (i.module, sorted(i.names), i.alias, i.line)
    elif kind == "calls":
        for c in facts.calls:
            yield (c.name, c.receiver, c.line)
    elif kind == "inherits":
        for h in facts.inherits:
            yield (h.child, h.base, h.kind)


def _key(row: Iterable[object]) -> str:
    return json.dumps(list(row))


def fixture_scores(language: str) -> dict[str, Score]:
    """Per fact kind, the extraction's score on ``language``'s fixture project.

    ``expected.json`` maps each file to its expected facts, rows in the same
    shape as :func:`_rows` (definitions ``[qualname, kind, start, end]``,
    imports ``[module, [names], alias, line]``, calls ``[name, receiver,
    line]``, inherits ``[child, base, kind]``)."""
    root = FIXTURES / language
    expected = json.loads((root / "expected.json").read_text())
    scores = {kind: Score(0, 0, 0) for kind in FACT_KINDS}
    for name, want in expected.items():
        path = root / name
        facts = extract(name, path.read_bytes())
        for kind in FACT_KINDS:
            got = Counter(_key(r) for r in _rows(facts, kind))
            exp = Counter(_key(r) for r in want.get(kind, []))
            score = scores[kind]
            score.expected += sum(exp.values())
            score.extracted += sum(got.values())
            score.matched += sum((exp & got).values())
    return scores


def fixture_differences(language: str) -> dict[str, dict[str, tuple[list[str], list[str]]]]:
    """Per file and fact kind: (missing, unexpected) rows, for a failing test's message."""
    root = FIXTURES / language
    expected = json.loads((root / "expected.json").read_text())
    out: dict[str, dict[str, tuple[list[str], list[str]]]] = {}
    for name, want in expected.items():
        facts = extract(name, (root / name).read_bytes())
        for kind in FACT_KINDS:
            got = Counter(_key(r) for r in _rows(facts, kind))
            exp = Counter(_key(r) for r in want.get(kind, []))
            missing = sorted((exp - got).elements())
            extra = sorted((got - exp).elements())
            if missing or extra:
                out.setdefault(name, {})[kind] = (missing, extra)
    return out


def accuracy_table() -> str:
    """The per-language table (Markdown) of precision/recall on the fixtures."""
    header = "| language | " + " | ".join(FACT_KINDS) + " |"
    lines = [header, "|---|" + "---|" * len(FACT_KINDS)]
    for language in fixture_languages():
        scores = fixture_scores(language)
        cells = []
        for kind in FACT_KINDS:
            s = scores[kind]
            if s.expected == 0 and s.extracted == 0:
                cells.append("-")
            else:
                cells.append(f"{s.precision:.2f} / {s.recall:.2f} ({s.expected})")
        lines.append(f"| {language} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
