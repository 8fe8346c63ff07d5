#!/usr/bin/env bash
# Per-transaction cost through the Swift binding vs the C ABI, side by side in one process:
#   tools/bench_swift.sh [--transactions N]
# Builds the C library (tools/build.d/30-abi.sh) and the bench in release mode inside the Swift
# environment (tools/swiftenv; `tools/dev setup` prepares it), then runs bindings/swift's kelpie-swift-bench.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="$ROOT" PY="${PY:-$ROOT/.venv/bin/python}" bash "$ROOT/tools/build.d/30-abi.sh" >/dev/null
exec "$ROOT/tools/swiftenv" run run -c release --package-path "$ROOT/bindings/swift" kelpie-swift-bench "$@"
