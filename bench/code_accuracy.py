"""The code graph's edge accuracy, and the query and map latencies, printed.

    python bench/code_accuracy.py [--extractor tree-sitter|ast] [--sample] [--no-queries]

* **Python call edges against ``ast``** over the whole standard library
  (site-packages left out): precision and recall as defined in
  ``tests/graph_oracle.py`` ("ast-resolved"), with the edges at call sites
  ``ast`` cannot settle counted apart, by reason. ``--sample`` scores the
  test suite's sample instead (a few packages, seconds).
* **Every language's fixture project** (``tests/data/graph/<language>/``):
  precision and recall of its imports, calls, extends and implements edges
  against the hand-checked list, as the README's table.
* **Updates**: resolving everything, and ``Resolver.update`` after one
  file changed (a call added; a function added);
* **Queries** on the standard library's graph, hot (lookups built): p50 of
  find, callers and impact at depth 3, neighbors, and the map at 2,000 tokens
  (with a new focus each time, so that PageRank runs).

The tree-sitter extractor is used when installed, else ``ast`` (Python only:
the fixture table is skipped).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import graph_oracle as oracle  # noqa: E402

from gitmem.graph.resolve import resolve  # noqa: E402

SAMPLE_PACKAGES = ("json", "email", "http", "logging", "concurrent", "importlib")
SAMPLE_MODULES = ("argparse", "dataclasses", "functools", "typing", "enum", "pathlib")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extractor", choices=("tree-sitter", "ast"), default=None)
    parser.add_argument("--sample", action="store_true", help="the test suite's sample only")
    parser.add_argument("--no-queries", action="store_true")
    args = parser.parse_args()
    extract, name = _extractor(args.extractor)
    print(f"extractor: {name}")
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    select = oracle.sample_rule(SAMPLE_PACKAGES, SAMPLE_MODULES) if args.sample else None
    sources = oracle.stdlib_sources(stdlib, select)
    started = time.perf_counter()
    facts = oracle.facts_of(sources, extract)
    extracted = time.perf_counter()
    nodes, edges = resolve(facts)
    resolved = time.perf_counter()
    result = oracle.score(sources, nodes, edges)
    print(
        f"standard library: {len(sources):,} files, {nodes.num_rows:,} nodes, {edges.num_rows:,} edges"
        f" (extract {extracted - started:.1f} s, resolve {resolved - extracted:.1f} s)"
    )
    print(f"python call edges against ast: {result.report()}")
    print(f"  judged, by reason: {dict(sorted(result.judged_by_reason.items()))}")
    print(f"  wrong, by reason:  {dict(sorted(result.wrong_by_reason.items()))}")
    print(
        f"  not judged (ast cannot settle the site): {dict(sorted(result.unjudged_by_reason.items()))}"
    )
    for example in result.examples[:10]:
        print(f"  wrong: {example}")
    if name == "tree-sitter":
        print()
        print(fixture_table(extract))
    if not args.no_queries:
        print()
        updates(facts)
        print()
        queries(nodes, edges, facts)
    return 0


def updates(facts: dict[str, object]) -> None:
    """Resolver.update after one file changed: a call added (a body edit) and
    a function added (a definition that comes), p50 over a few files."""
    import msgspec

    from gitmem.graph.facts import Call, Definition
    from gitmem.graph.resolve import Resolver

    resolver = Resolver()
    started = time.perf_counter()
    resolver.resolve(facts)  # type: ignore[arg-type]
    print(f"resolve everything: {time.perf_counter() - started:.2f} s")
    resolver.update(facts, [sorted(facts)[0]])  # type: ignore[arg-type]  # builds the token index once
    paths = sorted(p for p in facts if p.endswith(".py"))
    current = dict(facts)
    for label in ("a call added", "a function added"):
        times, redone = [], []
        for i in range(9):
            path = paths[(i * 37) % len(paths)]
            old = current[path]
            if label == "a call added":
                new = msgspec.structs.replace(
                    old, calls=[*old.calls, Call("loads", "json", line=old.lines + 1)]
                )  # type: ignore[type-var]
            else:
                made = Definition(
                    f"_added_{i}", f"_added_{i}", "function", old.lines + 2, old.lines + 3, 0, 0
                )  # type: ignore[attr-defined]
                new = msgspec.structs.replace(
                    old, definitions=[*old.definitions, made], lines=old.lines + 3
                )  # type: ignore[type-var, attr-defined]
            current[path] = new
            t = time.perf_counter()
            resolver.update(current, [path])  # type: ignore[arg-type]
            times.append(time.perf_counter() - t)
            redone.append(len(resolver.redone))
        print(
            f"  update after {label}: p50 {1000 * statistics.median(times):.0f} ms,"
            f" files redone {statistics.median(redone):.0f} (max {max(redone)})"
        )


def _extractor(choice: str | None) -> tuple[oracle.Extractor, str]:
    if choice != "ast":
        try:
            from gitmem.graph.extract import extract  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            if choice == "tree-sitter":
                raise
        else:
            return extract, "tree-sitter"
    return oracle.ast_facts, "ast (tests/graph_oracle.py)"


def fixture_table(extract: oracle.Extractor) -> str:
    """The README's table: per language, precision and recall of each edge kind."""
    kinds = oracle.SCORED_KINDS
    head = "| language | " + " | ".join(kinds) + " | precision | recall |"
    rows = [head, "|" + "---|" * (len(kinds) + 3)]
    for language in oracle.fixture_languages():
        s = oracle.score_fixture(language, extract)
        cells = []
        for kind in kinds:
            right, found, expected = s.by_kind(kind)
            cells.append(
                f"{right}/{expected}" + (f" (+{found - right})" if found > right else "")
                if expected or found
                else "-"
            )
        rows.append(
            f"| {language} | " + " | ".join(cells) + f" | {s.precision:.2f} | {s.recall:.2f} |"
        )
    return "\n".join(rows)


def queries(nodes: object, edges: object, facts: dict[str, object]) -> None:
    import pyarrow as pa

    from gitmem.graph import query, rank
    from gitmem.graph.schema import files_schema
    from gitmem.graph.view import GraphView

    files = pa.Table.from_pylist(
        [
            {
                "path": p,
                "blob": "",
                "language": f.language,
                "size": 0,
                "lines": f.lines,  # type: ignore[attr-defined]
                "source": "commit",
                "error": "",
            }
            for p, f in sorted(facts.items())
        ],
        schema=files_schema(),
    )
    view = GraphView.from_tables(files, nodes, edges)  # type: ignore[arg-type]
    started = time.perf_counter()
    ix = query.graph_index(view)
    print(f"query lookups built in {1000 * (time.perf_counter() - started):.0f} ms")
    rng = random.Random(13)
    functions = [i for i, k in enumerate(ix.kind) if k in ("function", "method")]
    picks = [ix.symbol(i) for i in rng.sample(functions, 50)]
    calls = ix.edge_kinds.index("calls")
    fan_in = Counter(int(d) for d, k in zip(ix.dst, ix.ekind, strict=True) if k == calls)
    popular = [ix.symbol(i) for i, _ in fan_in.most_common(50)]
    files_list = sorted(ix.by_path)

    def p50(label: str, run: Callable[[int], object], n: int = 50) -> None:
        run(0)
        times = []
        for i in range(n):
            t = time.perf_counter()
            run(i)
            times.append(time.perf_counter() - t)
        print(
            f"  {label}: p50 {1000 * statistics.median(times):.2f} ms, max {1000 * max(times):.1f} ms"
        )

    p50("find (exact, prefix, substring)", lambda i: query.find(view, picks[i].name[:6]))
    p50("callers, depth 3", lambda i: query.callers(view, picks[i], 3))
    p50("callees, depth 3", lambda i: query.callees(view, picks[i], 3))
    p50("impact, depth 3", lambda i: query.impact(view, picks[i], 3))
    p50("callers, depth 3, of the 50 most called", lambda i: query.callers(view, popular[i], 3))
    p50("impact, depth 3, of the 50 most called", lambda i: query.impact(view, popular[i], 3))
    p50("neighbors", lambda i: query.neighbors(view, picks[i]))
    p50("map, 2,000 tokens, no focus", lambda i: rank.repo_map(view, budget_tokens=2000), 20)
    p50(
        "map, 2,000 tokens, a new focus file each time (PageRank runs)",
        lambda i: rank.repo_map(view, [files_list[(i * 37) % len(files_list)]], budget_tokens=2000),
        15,
    )


if __name__ == "__main__":
    sys.exit(main())
