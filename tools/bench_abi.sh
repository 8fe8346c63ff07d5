#!/usr/bin/env bash
# Build (if needed) and run the C ABI benchmark: tools/bench_abi.sh [--transactions N] [--crossings N]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="$ROOT" PY="${PY:-$ROOT/.venv/bin/python}" bash "$ROOT/tools/build.d/30-abi.sh"
exec "$ROOT/build/abi/bin/bench_abi" "$@"
