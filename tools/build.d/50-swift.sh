#!/usr/bin/env bash
# The Swift binding (bindings/swift): prepare the Debian 13 root filesystem with Debian's Swift toolchain
# when it is missing (tools/swiftenv prepare: idempotent, progress lines, outside the checkout), then
# build the package and its tests inside it (SwiftPM is incremental; its scratch dir is in the root fs).
# Needs the C ABI (30-abi.sh runs first). Run by `tools/dev setup` with $PY and $ROOT.
# KELPIE_SKIP_SWIFT=1 skips this step (for a machine that cannot run debootstrap or chroot).
set -euo pipefail
ROOT="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
if [ "${KELPIE_SKIP_SWIFT:-0}" = 1 ]; then
  echo "[swift] skipped (KELPIE_SKIP_SWIFT=1): tests/swift will fail" >&2
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "[swift] skipped: not root (the Swift environment is a chroot with bind mounts, which need root);" \
    "tests/swift will fail: run tools/dev setup as root once for them" >&2
  exit 0
fi
"$ROOT/tools/swiftenv" prepare
t0=$SECONDS
"$ROOT/tools/swiftenv" run build --package-path "$ROOT/bindings/swift" --build-tests >&2 || {
  echo "[swift] swift build failed" >&2; exit 1; }
echo "[swift] bindings/swift built in $((SECONDS - t0)) s" >&2
