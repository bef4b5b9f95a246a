#!/usr/bin/env bash
# The first request's size with five real MCP servers connected (issue 32:
# about 149 KB with every schema sent; target <= 12 KB deferred). Installs
# the servers into target/bench-servers once (npm and a Python venv; the
# registries must be reachable), builds mecha and the mock in release, and
# measures the first request's body with schemas deferred (the default
# threshold) and not ("never"), for both APIs:
#   bash bench/mcp_surface.sh
# A server that cannot be installed or does not start is named, and the
# rest are measured.
set -euo pipefail
cd "$(dirname "$0")/.."
servers="${BENCH_SERVERS:-$PWD/target/bench-servers}"
mkdir -p "$servers"
if [ ! -x "$servers/npm/node_modules/.bin/mcp-server-everything" ]; then
    # The browsers are not needed to list the tools.
    PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
        npm install --silent --prefix "$servers/npm" \
        @modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem \
        @wonderwhy-er/desktop-commander @playwright/mcp ||
        echo "mcp_surface: npm install failed; measuring what is there" >&2
fi
if [ ! -x "$servers/venv/bin/excel-mcp-server" ]; then
    { python3 -m venv "$servers/venv" && "$servers/venv/bin/pip" install -q excel-mcp-server; } ||
        echo "mcp_surface: excel-mcp-server could not be installed; measuring the rest" >&2
fi
cargo build --release -q -p mecha-cli
cargo build --release -q -p mecha-testkit
exec python3 bench/bench_mcp_surface.py \
    --mecha "$PWD/target/release/mecha" \
    --mock "$PWD/target/release/mecha-mock-model" \
    --servers "$servers"
