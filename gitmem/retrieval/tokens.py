"""Token estimates for budgets.

gitmem does not ship a tokenizer. A budget is counted in *estimated* tokens:
``ceil(characters / 4)`` of the text, where characters are Unicode code
points (``len(str)``). Four characters per token is the usual rule of thumb
for English prose and code with BPE tokenizers; it is deliberately simple so
that every caller (CLI, hooks, MCP) computes the same number.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ``ceil(len(text) / 4)``."""
    return -(-len(text) // CHARS_PER_TOKEN)


def chars_for(tokens: int) -> int:
    """The most characters a text may have to stay within ``tokens``."""
    return max(tokens, 0) * CHARS_PER_TOKEN
