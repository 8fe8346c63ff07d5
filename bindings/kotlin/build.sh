#!/usr/bin/env bash
# Builds the Kotlin binding and its tests with Debian's kotlinc against Debian's JNA:
#   build/kotlin/kelpie-gateway.jar        the binding (package kelpie.gateway)
#   build/kotlin/kelpie-gateway-tests.jar  the test runner and the vector replayer
# Idempotent: skips compiling when the jars are newer than every source. ROOT defaults to the repo.
set -euo pipefail
ROOT="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
SRC="$ROOT/bindings/kotlin/src"
OUT="$ROOT/build/kotlin"
JNA="${JNA_JAR:-/usr/share/java/jna.jar}"
KOTLINC="${KOTLINC:-kotlinc}"
mkdir -p "$OUT"
command -v "$KOTLINC" >/dev/null || { echo "kotlinc not found (apt-get install kotlin)" >&2; exit 1; }
[ -e "$JNA" ] || { echo "$JNA not found (apt-get install libjna-java)" >&2; exit 1; }

# kotlinc 1.3 on JDK 17: its launcher passes -noverify (a harmless deprecation warning), and -jvm-target 1.8
# is needed for lambdas as Java functional interfaces; -no-reflect keeps kotlin-reflect off the classpath.
FLAGS=(-jvm-target 1.8 -no-reflect -Werror)

stale() { # stale JAR DIR: true when JAR is missing, or older than a source in DIR or than this script
  [ -e "$1" ] || return 0
  [ -n "$(find "$2" -name '*.kt' -newer "$1" -print -quit)" ] || [ "${BASH_SOURCE[0]}" -nt "$1" ]
}

if stale "$OUT/kelpie-gateway.jar" "$SRC/main"; then
  echo "[kotlin] compiling the binding" >&2
  "$KOTLINC" "${FLAGS[@]}" -cp "$JNA" -d "$OUT/kelpie-gateway.jar.tmp.jar" $(find "$SRC/main" -name '*.kt' | sort) \
    2> >(grep -v 'Options -Xverify:none and -noverify were deprecated' >&2)
  mv "$OUT/kelpie-gateway.jar.tmp.jar" "$OUT/kelpie-gateway.jar"
fi
if stale "$OUT/kelpie-gateway-tests.jar" "$SRC/test" || [ "$OUT/kelpie-gateway.jar" -nt "$OUT/kelpie-gateway-tests.jar" ]; then
  echo "[kotlin] compiling the tests" >&2
  "$KOTLINC" "${FLAGS[@]}" -cp "$JNA:$OUT/kelpie-gateway.jar" -d "$OUT/kelpie-gateway-tests.jar.tmp.jar" \
    $(find "$SRC/test" -name '*.kt' | sort) \
    2> >(grep -v 'Options -Xverify:none and -noverify were deprecated' >&2)
  mv "$OUT/kelpie-gateway-tests.jar.tmp.jar" "$OUT/kelpie-gateway-tests.jar"
fi
echo "$OUT/kelpie-gateway.jar"
