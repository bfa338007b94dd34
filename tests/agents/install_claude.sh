#!/usr/bin/env bash
# Install the real Claude Code CLI for the end-to-end tier (tests/agents/) into
# a cache outside the checkout, once; later runs reuse it. Prints the path of
# the `claude` binary on stdout. Exits 0 and prints nothing when npm is missing
# or the install fails: the tier then skips and says why (never passes silently).
#   GITMEM_CLAUDE_CACHE   the cache directory (default below)
#   GITMEM_CLAUDE_VERSION the version to install (default: the one the tier,
#                         and its golden payloads, were last checked with)
# Each version has its own directory under the cache, so changing the pin
# installs beside the old one instead of over it.
set -uo pipefail
version="${GITMEM_CLAUDE_VERSION:-2.1.330}"
cache="${GITMEM_CLAUDE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitmem-tests/claude-code}/$version"
bin="$cache/node_modules/.bin/claude"
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
    echo "$bin"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "install_claude: npm not found; the Claude Code tier will skip" >&2
    exit 0
fi
mkdir -p "$cache"
# Its own package.json keeps npm from walking up into another project.
[ -f "$cache/package.json" ] || echo '{"name": "gitmem-tests-claude-code", "private": true}' >"$cache/package.json"
spec="@anthropic-ai/claude-code@$version"
if npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "$spec" >&2 \
    && "$bin" --version >/dev/null 2>&1; then
    echo "$bin"
else
    echo "install_claude: npm install $spec failed; the Claude Code tier will skip" >&2
fi
exit 0
