"""Mask secrets in captured text before anything is stored.

Every secret is replaced by ``[REDACTED:<detector>]``.  Key/value detectors
keep the key, separator and quotes and mask only the value; URL credentials
keep scheme, user and host and mask only the password.
:meth:`Scrubber.scrub_value` scrubs dict keys as well as values.  Configured
extra patterns report ``custom``.

The scrubber runs inside the short-lived capture hook on *every* agent tool
call, which shapes it:

* It imports only the standard library; anything heavier would add its import
  time to every tool call the agent makes.
* Nothing is compiled at import.  A regex is compiled on first use, then
  cached for the process, never per call; compiling them all would cost
  6-8 ms, while a typical call needs a handful.
* Scanning is cheap when nothing matches: a row whose needles are absent is
  skipped, and the patterns are written for ``re``'s fast literal search
  (see ``table.py``).  Measured with ``timeit`` (best of 7 x 200 runs,
  CPython 3.11.7, a loaded 2-vCPU container): 0.10-0.25 ms per ``scrub()`` of
  10 KB with nothing to mask (Python source 0.19 ms, prose 0.25 ms, JSON
  0.13 ms).
* No input makes it quadratic: pathological text (200 KB of "sk-sk-sk-..."
  or of PEM header lines) is scrubbed in tens of milliseconds.

The parts:

* ``table.py``: the built-in detectors, one row each, with what they catch;
* ``checks.py`` and ``assignments.py``: the checks rows use to judge a match
  (the decisions on debatable key/value cases are in ``assignments.py``);
* ``shapes.py``: the vocabulary, and what values look like;
* ``engine.py``: :class:`Scrubber`, which runs a table and merges what it
  finds;
* ``base.py``: what they share: the row type, lazily compiled regexes, and
  the results.
"""

from __future__ import annotations

from gitmem.capture.scrub.base import Finding, ScrubPatternError, ScrubResult
from gitmem.capture.scrub.engine import Scrubber, default_scrubber

__all__ = [
    "Finding",
    "ScrubPatternError",
    "ScrubResult",
    "Scrubber",
    "default_scrubber",
]
