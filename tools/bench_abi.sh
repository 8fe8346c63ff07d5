#!/usr/bin/env bash
# Build (if needed) and run the C ABI benchmark (issue 16 targets: median full transaction <= 40 us, no-op
# crossing <= 1 us, cold start <= 150 ms):
#   tools/bench_abi.sh [--transactions N] [--crossings N] [--rounds R] [--cold-runs K]
#   tools/bench_abi.sh --base REV …   the same, side by side with the library of commit REV (interleaved)
# The driver is tools/bench_abi_side.py (medians over processes; its docstring says how it measures).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PY:-$ROOT/.venv/bin/python}"
ROOT="$ROOT" PY="$PY" bash "$ROOT/tools/build.d/30-abi.sh"
PY="$PY" exec "$PY" "$ROOT/tools/bench_abi_side.py" "$@"
