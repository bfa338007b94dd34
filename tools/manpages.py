"""Write the manual pages (``git-edda.1`` and one page per command) into DIR.

    python tools/manpages.py man/man1

They are generated from the command definitions (:mod:`gitmem.cli.manual`);
``tests/test_help.py`` fails when the shipped copies drift.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tools/manpages.py DIR", file=sys.stderr)
        return 2
    from gitmem.cli import commands  # noqa: F401  (registers every command on the app)
    from gitmem.cli.roff import write_man_pages

    for path in write_man_pages(Path(argv[0])):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
