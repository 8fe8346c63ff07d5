#!/usr/bin/env bash
# Builds the Kotlin binding and its tests with Debian's kotlinc against Debian's JNA:
#   build/kotlin/kelpie-gateway.jar        the binding (package kelpie.gateway)
#   build/kotlin/kelpie-gateway-tests.jar  the test runner and the vector replayer
# Idempotent: skips compiling when the jars are newer than every source. ROOT defaults to the repo.
# Progress on stderr: what it compiles, a "still compiling" line every $KELPIE_DEV_HEARTBEAT_S seconds
# (default 15; kotlinc itself prints nothing for minutes on a loaded machine), and how long each jar took.
# The path of the binding's jar is the only line on stdout.
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

HEARTBEAT="${KELPIE_DEV_HEARTBEAT_S:-15}"
log() { printf '[kotlin] %s\n' "$*" >&2; }

# compile LABEL JAR CLASSPATH SOURCE… : kotlinc the sources into JAR (through a temporary jar, renamed at the
# end, so an interrupted build never leaves a jar that looks up to date), with progress lines.
compile() {
  local label="$1" jar="$2" cp="$3"; shift 3
  local started=$SECONDS next=$HEARTBEAT status=0
  log "compiling $label: $# Kotlin files with $KOTLINC (about 10-20 s per jar, minutes on a loaded machine)"
  "$KOTLINC" "${FLAGS[@]}" -cp "$cp" -d "$jar.tmp.jar" "$@" \
    2> >(grep -v 'Options -Xverify:none and -noverify were deprecated' >&2) &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ $((SECONDS - started)) -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
      log "  still compiling $label ($((SECONDS - started)) s)"
      next=$((next + HEARTBEAT))
    fi
  done
  wait "$pid" || status=$?
  if [ "$status" -ne 0 ]; then
    rm -f "$jar.tmp.jar"
    log "FAILED: compiling $label (kotlinc exit $status) after $((SECONDS - started)) s"
    exit "$status"
  fi
  mv "$jar.tmp.jar" "$jar"
  log "  done: $label in $((SECONDS - started)) s -> $jar"
}

stale() { # stale JAR DIR: true when JAR is missing, or older than a source in DIR or than this script
  [ -e "$1" ] || return 0
  [ -n "$(find "$2" -name '*.kt' -newer "$1" -print -quit)" ] || [ "${BASH_SOURCE[0]}" -nt "$1" ]
}

if stale "$OUT/kelpie-gateway.jar" "$SRC/main"; then
  compile "the binding" "$OUT/kelpie-gateway.jar" "$JNA" $(find "$SRC/main" -name '*.kt' | sort)
else
  log "the binding is up to date: $OUT/kelpie-gateway.jar"
fi
if stale "$OUT/kelpie-gateway-tests.jar" "$SRC/test" || [ "$OUT/kelpie-gateway.jar" -nt "$OUT/kelpie-gateway-tests.jar" ]; then
  compile "the tests" "$OUT/kelpie-gateway-tests.jar" "$JNA:$OUT/kelpie-gateway.jar" $(find "$SRC/test" -name '*.kt' | sort)
else
  log "the tests are up to date: $OUT/kelpie-gateway-tests.jar"
fi
echo "$OUT/kelpie-gateway.jar"
