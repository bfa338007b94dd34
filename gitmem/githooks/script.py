"""The git hook scripts gitmem installs, as POSIX shell.

Each script:

* is recognised as gitmem's by the marker line, so reinstalling rewrites it
  and uninstalling removes it, and a foreign hook is never mistaken for it;
* first runs the hook that was there before (kept as ``<hook>.pre-gitmem``)
  with the same arguments and standard input, and exits with *its* status:
  a failing pre-push or pre-existing check still stops git (and for pre-push,
  gitmem's part then does not run: a refused push sends no memory either);
* then runs gitmem's part (:mod:`gitmem.githooks.run`) with ``python -S``
  (no site import: a few ms) from the interpreter that installed it. That
  part never fails the git command: its output is discarded, errors are
  logged under ``<common dir>/edda/log/hooks.log``, and a missing
  interpreter (the virtualenv was deleted) is skipped silently.

``python -m gitmem.githooks.script DIR`` writes the rendered templates to
DIR (``hooks/git/`` in the source tree, for reading; a test keeps them in step).
"""

from __future__ import annotations

import sys

MARKER = "# gitmem-managed-hook v1"
CHAINED_SUFFIX = ".pre-gitmem"
HOOKS = ("post-checkout", "post-merge", "post-commit", "post-rewrite")
OPTIONAL_HOOKS = ("pre-push",)
STDIN_HOOKS = ("post-rewrite", "pre-push")

_TEMPLATE = """#!/bin/sh
{marker}
# Installed by `git edda init`; `git edda init --uninstall` removes it and
# puts back the hook that was here before ({hook}{suffix}), which runs first.
# gitmem's part never fails the git command. Set GITMEM_NO_HOOKS=1 to skip it.
hook={hook}
python={python}
pkgpath={pkgpath}
here=${{0%/*}}
status=0
{body}
exit $status
"""

_PLAIN = """if [ -x "$here/$hook{suffix}" ]; then
  "$here/$hook{suffix}" "$@" || status=$?
fi
if [ -z "$GITMEM_NO_HOOKS" ] && [ -x "$python" ]; then
  "$python" -S -E -c {runner} "$pkgpath" "$hook" "$@" </dev/null >/dev/null 2>&1
fi"""

_STDIN = """input=$(cat)
if [ -x "$here/$hook{suffix}" ]; then
  if [ -n "$input" ]; then printf '%s\\n' "$input"; fi | "$here/$hook{suffix}" "$@" || status=$?
fi
if [ -z "$GITMEM_NO_HOOKS" ] && [ -x "$python" ]{guard}; then
  if [ -n "$input" ]; then printf '%s\\n' "$input"; fi |
    "$python" -S -E -c {runner} "$pkgpath" "$hook" "$@" >/dev/null 2>&1
fi"""

RUNNER = "import sys; sys.path.insert(0, sys.argv[1]); from gitmem.githooks.run import main; main(sys.argv[2:])"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def render(hook: str, python: str, pkgpath: str) -> str:
    """The script for ``hook``, running gitmem with ``python`` from ``pkgpath``."""
    # A refused push must not send memory either: pre-push's part runs only
    # when the chained hook agreed. After the fact (post-*), it always runs.
    guard = ' && [ "$status" -eq 0 ]' if hook == "pre-push" else ""
    body = (_STDIN if hook in STDIN_HOOKS else _PLAIN).format(
        suffix=CHAINED_SUFFIX, runner=_quote(RUNNER), guard=guard
    )
    return _TEMPLATE.format(
        marker=MARKER,
        hook=hook,
        suffix=CHAINED_SUFFIX,
        python=_quote(python),
        pkgpath=_quote(pkgpath),
        body=body,
    )


def is_ours(text: str) -> bool:
    return MARKER in text.splitlines()[:3]


def main(argv: list[str]) -> int:
    import os

    target = argv[0] if argv else "hooks/git"
    os.makedirs(target, exist_ok=True)
    for hook in (*HOOKS, *OPTIONAL_HOOKS):
        with open(os.path.join(target, hook), "w", encoding="utf-8") as handle:
            handle.write(render(hook, "/path/to/python", "/path/to/site-packages"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
