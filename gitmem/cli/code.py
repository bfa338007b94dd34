"""``git edda code``: the code graph (:mod:`gitmem.graph`).

``code index`` builds it ahead of time, with a progress bar; queries bring
it up to date themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from cyclopts import App, Parameter

from gitmem.cli.render import progress_bars
from gitmem.cli.root import DEFAULT_COMMON, Common, Output, app, in_range
from gitmem.memory.describe import SHORT_ID, plural

if TYPE_CHECKING:
    from gitmem.graph.build import BuildReport

code_app = App(
    name="code",
    help="The code graph: the repository's code parsed into files, symbols and their relations.",
)
app.command(code_app)


def describe_build(report: BuildReport) -> str:
    """A build report for people: what is in the graph, what the build did."""
    where = f"at {report.commit[:SHORT_ID]}" if report.commit else "on an unborn branch"
    if report.worktree:
        where += " with uncommitted changes"
    sizes = (
        f"{plural(report.files, 'file')}, {plural(report.nodes, 'node')},"
        f" {plural(report.edges, 'edge')}"
    )
    if report.built:
        text = (
            f"built the code graph {where}: {sizes}"
            f" ({report.parsed} parsed, {report.reused} reused; {report.reason})"
        )
    else:
        text = f"code graph up to date {where}: {sizes}"
    lines = [f"{text} in {report.seconds:.2f} s"]
    if report.skipped:
        parts = ", ".join(f"{n} {reason}" for reason, n in sorted(report.skipped.items()))
        lines.append(f"skipped {plural(sum(report.skipped.values()), 'file')}: {parts}")
    if report.errors:
        lines.append(f"{plural(report.errors, 'file')} could not be parsed (file nodes only)")
    lines.extend(f"warning: {w}" for w in report.warnings)
    return "\n".join(lines)


@code_app.command(name="index")
def index(
    *,
    rebuild: bool = False,
    worktree: bool = False,
    commit: str | None = None,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Build or bring up to date the code graph of this worktree.

    Files come from a commit's tree (default HEAD), honouring .gitignore and
    git config edda.code.include/exclude; binary, vendored, generated and
    oversized files (edda.code.maxFileBytes) are skipped, each counted under
    its reason. Facts are cached per git blob, so only files never parsed
    before are parsed (on any branch, in any worktree). Queries bring the
    graph up to date themselves; this builds ahead of time, with a progress
    bar, and checks every byte of the graph against its checksums.

    Parameters
    ----------
    rebuild
        Build from scratch: parse every file again.
    worktree
        Include uncommitted changes (staged, unstaged and untracked files);
        later queries keep including them.
    commit
        Index this commit (a branch, tag or commit id) instead of HEAD;
        later queries read that commit's graph until the next index without --commit.
    """
    from gitmem.app import code

    with progress_bars(lambda stage: "file" if "files" in stage else "step") as progress:
        report = code.index(
            common.repo, rebuild=rebuild, worktree=worktree, commit=commit, progress=progress
        )
    return Output(report.to_json(), describe_build(report))


# -- queries: find, callers, callees, impact, neighbors, map ------------------------------------
Format = Literal["text", "mermaid", "dot"]
MAX_DEPTH = 20


def _picture(data: dict[str, object], text: str, result: object, format: Format) -> Output:
    """The result as text, or as a picture (which --json carries too)."""
    from gitmem.graph import picture
    from gitmem.graph.query import Neighborhood, Traversal

    if format == "text":
        return Output(data, text, page=True)
    assert isinstance(result, Traversal | Neighborhood)
    drawn = picture.render(result, format)
    return Output(data | {format: drawn}, drawn.rstrip("\n"))


def _warned(text: str, warnings: tuple[str, ...]) -> str:
    return "\n".join([text, *(f"warning: {w}" for w in warnings)])


@code_app.command
def find(
    name: str,
    *,
    kind: list[str] | None = None,
    limit: Annotated[int, Parameter(name=["--limit", "-n"])] = 20,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Find symbols by name: exact matches, then names starting with it, then names containing it.

    Case-insensitive, a match of the same case first; then classes and
    functions before other kinds, code before tests. A NAME with a dot also
    matches qualified names (Parser.parse), one with a slash file paths.

    Parameters
    ----------
    name
        The name (or part of it) to look for.
    kind
        Only symbols of this kind (repeatable): file, module, class, interface,
        type, function, method, constant, section.
    limit
        Show at most N matches.
    """
    from gitmem.app import code

    found = code.find(
        common.repo, name, kinds=kind or (), limit=in_range("--limit", limit, 1, 1000)
    )
    return Output(found.to_json(), _warned(found.to_text(), found.warnings), page=True)


@code_app.command
def callers(
    symbol: str,
    *,
    depth: int = 3,
    format: Format = "text",
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Who calls SYMBOL, and who calls them: each caller once, at its nearest, with the route to it.

    Parameters
    ----------
    symbol
        A file path, PATH:QUALNAME, a qualified name (Parser.parse), a Python
        module path (pkg.mod.func) or a bare name; a name several symbols share
        is refused with the list of them.
    depth
        Follow calls up to N steps away.
    format
        text, or a picture: mermaid or dot (Graphviz).
    """
    from gitmem.app import code

    walked = code.callers(common.repo, symbol, depth=in_range("--depth", depth, 1, MAX_DEPTH))
    text = _warned(walked.traversal.to_text(), walked.warnings)
    return _picture(walked.to_json(), text, walked.traversal, format)


@code_app.command
def callees(
    symbol: str,
    *,
    depth: int = 3,
    format: Format = "text",
    common: Common = DEFAULT_COMMON,
) -> Output:
    """What SYMBOL calls, and what they call: each callee once, at its nearest, with the route to it.

    Parameters
    ----------
    symbol
        A file path (the calls of all of its code), PATH:QUALNAME, a qualified
        name, a Python module path or a bare name.
    depth
        Follow calls up to N steps away.
    format
        text, or a picture: mermaid or dot (Graphviz).
    """
    from gitmem.app import code

    walked = code.callees(common.repo, symbol, depth=in_range("--depth", depth, 1, MAX_DEPTH))
    text = _warned(walked.traversal.to_text(), walked.warnings)
    return _picture(walked.to_json(), text, walked.traversal, format)


@code_app.command
def impact(
    target: str,
    *,
    depth: int = 3,
    format: Format = "text",
    common: Common = DEFAULT_COMMON,
) -> Output:
    """What a change to TARGET can break: everything that imports, calls, extends or implements it.

    Transitively, up to --depth edges away; the tests among them are listed
    apart (files under test/, tests/, test_*.py, *_test.go, *.test.ts,
    *Test.java, ...).

    Parameters
    ----------
    target
        A file (any of its definitions) or a symbol: PATH:QUALNAME, a qualified
        name, a Python module path or a bare name.
    depth
        Follow dependents up to N edges away.
    format
        text, or a picture: mermaid or dot (Graphviz).
    """
    from gitmem.app import code

    walked = code.impact(common.repo, target, depth=in_range("--depth", depth, 1, MAX_DEPTH))
    text = _warned(walked.traversal.to_text(), walked.warnings)
    return _picture(walked.to_json(), text, walked.traversal, format)


@code_app.command
def neighbors(
    symbol: str,
    *,
    format: Format = "text",
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Every edge at SYMBOL, in and out, one hop (contains, imports, calls, extends, references, documents).

    Parameters
    ----------
    symbol
        A file path, PATH:QUALNAME, a qualified name, a Python module path or a
        bare name.
    format
        text, or a picture: mermaid or dot (Graphviz).
    """
    from gitmem.app import code

    around = code.neighbors(common.repo, symbol)
    text = _warned(around.neighborhood.to_text(), around.warnings)
    return _picture(around.to_json(), text, around.neighborhood, format)


@code_app.command(name="map")
def map_(
    *,
    focus: list[str] | None = None,
    budget: int = 2000,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """A map of the repository: its most important symbols as elided signatures, grouped by file, within a token budget.

    Importance is PageRank over the code graph (calls, inheritance, imports,
    references), personalised on the --focus files when given: the map then
    shows what surrounds them. Tokens are counted as characters / 4.

    Parameters
    ----------
    focus
        A file the work is about, from the repository root (repeatable).
    budget
        The map's size in tokens.
    """
    from gitmem.app import code

    mapped = code.repo_map(
        common.repo, focus=focus or (), budget=in_range("--budget", budget, 50, 1_000_000)
    )
    text = mapped.map.text.rstrip("\n") or "the code graph has no symbols"
    return Output(mapped.to_json(), _warned(text, mapped.warnings), page=True)
