#!/usr/bin/env bash
# Install the npm packages under tools/node (the official MCP TypeScript SDK for the host journey and zod for
# the generated Zod module). Idempotent: skips when node_modules matches the lock file.
set -euo pipefail
ROOT="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
DIR="$ROOT/tools/node"
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[40-node] installing nodejs and npm (Debian)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  else
    echo "[40-node] npm is missing: install Node.js >= 20 and npm" >&2
    exit 1
  fi
fi
stamp="$DIR/node_modules/.kelpie-lock.sha256"
want="$(sha256sum "$DIR/package-lock.json" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$DIR/node_modules/@modelcontextprotocol/sdk" ]; then
  exit 0
fi
echo "[40-node] npm ci in tools/node" >&2
(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
echo "$want" > "$stamp"
