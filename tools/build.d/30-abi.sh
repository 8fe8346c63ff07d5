#!/usr/bin/env bash
# Build the C ABI (CONTRACT.md §10) into build/abi/, the same relocatable tree `abi/build_abi.py --prefix P`
# installs anywhere: lib/libkelpie_browser_gateway.so.X.Y.Z (+ .so.0 and .so links), the bundled engine in
# lib/kelpie-browser-gateway/python, include/kelpie/browser_gateway_c_api.h, lib/pkgconfig/
# kelpie-browser-gateway.pc; then the C programs under build/abi/bin (contract_test, hammer, example_host,
# bench_abi). Idempotent: abi/build_abi.py skips the library when its input stamp (build/.stamps/) is
# unchanged and make skips up-to-date programs.
# Run by `tools/dev setup` with $PY (the virtualenv python) and $ROOT (the repository root).
set -euo pipefail
ROOT="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY="${PY:-$ROOT/.venv/bin/python}"
"$PY" "$ROOT/abi/build_abi.py" --prefix "$ROOT/build/abi"
make -s -C "$ROOT/bindings/c" PREFIX="$ROOT/build/abi" OUT="$ROOT/build/abi/bin"
