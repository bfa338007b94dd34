"""Benchmark the code graph's extraction (one blob's bytes -> its facts) and
measure its accuracy, and print the figures.

    python bench/code_extract.py [--no-tests] [--skip-accuracy]

On the running interpreter's standard library (every ``.py`` under
``sysconfig.get_paths()["stdlib"]``, site-packages left out; ``--no-tests``
leaves out the test directories too), in this process, on one core:

* files/s and MB/s of :func:`gitmem.graph.extract.extract`, files read into
  memory first; beside it the time tree-sitter alone takes to parse the same
  bytes, and to run the queries, the floor under any extraction;
* Python against ``ast`` over the whole corpus: definitions (qualified name,
  kind, first and last line) matched exactly, and calls (name, line) with
  their precision and recall; files tree-sitter cannot parse cleanly are
  listed;
* the per-language table of precision / recall on the fixture projects
  (tests/data/code/), as the README shows it.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from graph_accuracy import (  # noqa: E402 - after the path set-up
    accuracy_table,
    compare_python,
    stdlib_files,
)

from gitmem.graph.extract import extract  # noqa: E402
from gitmem.graph.languages import compiled, parser  # noqa: E402


def speed(files: list[Path]) -> None:
    import tree_sitter

    datas = [(str(p), p.read_bytes()) for p in files]
    total = sum(len(d) for _, d in datas)
    extract("warm.py", b"def f():\n    return g()\n")  # grammar and query loaded
    python = parser("python")
    query = compiled("python").query

    def timed(run: object) -> float:
        best = float("inf")
        for _ in range(2):
            gc.collect()
            start = time.perf_counter()
            run()  # type: ignore[operator]
            best = min(best, time.perf_counter() - start)
        return best

    def parse_only() -> None:
        for _, data in datas:
            python.parse(data)

    def parse_and_query() -> None:
        for _, data in datas:
            tree_sitter.QueryCursor(query).matches(python.parse(data).root_node)

    def extraction() -> None:
        for path, data in datas:
            extract(path, data)

    parse_s = timed(parse_only)
    query_s = timed(parse_and_query)
    extract_s = timed(extraction)
    print(f"corpus: {len(datas)} files, {total / 1e6:.1f} MB")
    print("| step (one core, best of 2) | time | files/s | MB/s |")
    print("|---|---|---|---|")
    for label, seconds in (
        ("tree-sitter parse only", parse_s),
        ("parse + the language's query", query_s),
        ("**extract** (facts out)", extract_s),
    ):
        print(
            f"| {label} | {seconds:.2f} s | {len(datas) / seconds:.0f} | {total / 1e6 / seconds:.2f} |"
        )


def accuracy(files: list[Path]) -> None:
    defs = defs_matched = defs_extracted = 0
    calls = calls_matched = calls_extracted = 0
    compared = skipped = 0
    grammar_gaps: list[str] = []
    python = parser("python")
    for path in files:
        result = compare_python(path)
        if result is None:
            skipped += 1
            continue
        compared += 1
        want_defs, got_defs, want_calls, got_calls = result
        defs += sum(want_defs.values())
        defs_extracted += sum(got_defs.values())
        defs_matched += sum((want_defs & got_defs).values())
        calls += sum(want_calls.values())
        calls_extracted += sum(got_calls.values())
        calls_matched += sum((want_calls & got_calls).values())
        if want_defs != got_defs:
            clean = not python.parse(path.read_bytes()).root_node.has_error
            grammar_gaps.append(f"{path}{'' if not clean else ' (parsed cleanly!)'}")
    print(
        f"\nPython against ast: {compared} files compared "
        f"({skipped} that ast cannot parse left out: Python 2 or bad syntax on purpose)"
    )
    print(
        f"definitions: {defs_matched:,} of {defs:,} match exactly "
        f"(recall {defs_matched / defs:.4f}, precision {defs_matched / defs_extracted:.4f})"
    )
    print(
        f"calls (name, line): recall {calls_matched / calls:.4f}, "
        f"precision {calls_matched / calls_extracted:.4f} ({calls:,} calls)"
    )
    if grammar_gaps:
        print("files whose definitions differ (tree-sitter parse errors unless marked):")
        for line in grammar_gaps:
            print("  ", line)


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--no-tests", action="store_true", help="leave out the test directories")
    args.add_argument("--skip-accuracy", action="store_true")
    opts = args.parse_args()
    files = stdlib_files(tests=not opts.no_tests)
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}"
    )
    speed(files)
    if not opts.skip_accuracy:
        accuracy(files)
        print("\nfixture projects, precision / recall (expected facts):")
        print(accuracy_table())


if __name__ == "__main__":
    main()
