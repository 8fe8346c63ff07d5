#!/usr/bin/env bash
# Time a non-root user's install of the host on a clean clone (issue 34; docs/host.md "Installing without
# root"), twice: with Debian's Chromium visible, and with it hidden (KELPIE_GATEWAY_BROWSER_ROOT pointed at
# a folder holding only /etc/os-release, PATH without any chromium). Steps, each timed: git clone, python3 -m venv, pip install
# '.[host]', kelpie-gateway doctor, kelpie-gateway install-browser, the first MCP call over stdio
# (tabs.list, which waits for the browser). Run as root: the steps run as USER (default nobody) with a
# HOME of their own under a temporary folder, removed at the end.
#   tools/time_nonroot_install.sh [USER]
# Prints one line per step: "MODE STEP SECONDS exit=STATUS", then the last line each step printed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
USER_NAME="${1:-nobody}"
[ "$(id -u)" = 0 ] || { echo "run as root (the steps run as $USER_NAME)" >&2; exit 2; }
GROUP="$(id -gn "$USER_NAME")"
WORK="$(mktemp -d -t kelpie-nonroot.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
# A PATH with every tool of /usr/bin except a browser (for the hidden run).
mkdir -p "$WORK/nobrowser-bin" "$WORK/empty-root/etc"
cp /etc/os-release "$WORK/empty-root/etc/"  # still this Debian, only without its Chromium
for tool in /usr/bin/*; do
  case "${tool##*/}" in chromium*|google-chrome*) continue ;; esac
  ln -s "$tool" "$WORK/nobrowser-bin/${tool##*/}"
done

as_user() {  # as_user HOME PATH COMMAND… (keeps the machine's pip settings)
  local home="$1" path="$2"; shift 2
  setpriv --reuid="$USER_NAME" --regid="$GROUP" --clear-groups \
    env -i HOME="$home" PATH="$path" LANG=C.UTF-8 \
    ${PIP_FIND_LINKS:+PIP_FIND_LINKS="$PIP_FIND_LINKS"} ${PIP_CERT:+PIP_CERT="$PIP_CERT"} \
    ${PIP_DEFAULT_TIMEOUT:+PIP_DEFAULT_TIMEOUT="$PIP_DEFAULT_TIMEOUT"} PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ${HIDE:+KELPIE_GATEWAY_BROWSER_ROOT="$WORK/empty-root"} "$@"
}

step() {  # step MODE NAME HOME PATH COMMAND…
  local mode="$1" name="$2" home="$3" path="$4"; shift 4
  local t0 status=0 out="$WORK/$mode-$name.log"
  t0=$(date +%s%N)
  as_user "$home" "$path" "$@" >"$out" 2>&1 || status=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%-8s %-16s %4d.%d s  exit=%s  | %s\n' "$mode" "$name" $((ms / 1000)) $((ms % 1000 / 100)) "$status" \
    "$(grep -v '^\s*$' "$out" | tail -n 1 | cut -c1-160)"
}

FIRST_CALL='
import json, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
t0 = time.monotonic()
for m in ({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}},
          {"jsonrpc":"2.0","method":"notifications/initialized"},
          {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"kelpie_browser_control","arguments":{"method":"tabs.list","params":{}}}}):
    p.stdin.write(json.dumps(m) + "\n"); p.stdin.flush()
answer = None
for line in p.stdout:
    msg = json.loads(line)
    if msg.get("id") == 2:
        answer = msg["result"]["structuredContent"]; break
p.stdin.close(); p.wait(60)
print(f"first tabs.list after {time.monotonic() - t0:.1f} s:", json.dumps(answer)[:140])
sys.exit(0 if answer and answer.get("success") else 1)
'

for mode in visible hidden; do
  HIDE=""; path="/usr/local/bin:/usr/bin:/bin"
  if [ "$mode" = hidden ]; then HIDE=1; path="$WORK/nobrowser-bin"; fi
  home="$WORK/$mode-home"; mkdir -p "$home"; chown "$USER_NAME:$GROUP" "$home"
  clone="$home/kelpie"
  # The clone is made as root and handed over (git refuses to read a repository another user owns).
  t0=$(date +%s%N)
  git clone -q --no-local "$ROOT" "$clone" && chown -R "$USER_NAME:$GROUP" "$clone"
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%-8s %-16s %4d.%d s  (as root, then chown)\n' "$mode" clone $((ms / 1000)) $((ms % 1000 / 100))
  step "$mode" venv "$home" "$path" python3 -m venv "$clone/.venv"
  step "$mode" "pip [host]" "$home" "$path" "$clone/.venv/bin/pip" install -q --progress-bar off "$clone[host]"
  step "$mode" doctor "$home" "$path" "$clone/.venv/bin/kelpie-gateway" doctor
  step "$mode" install-browser "$home" "$path" "$clone/.venv/bin/kelpie-gateway" install-browser
  step "$mode" "first call" "$home" "$path" "$clone/.venv/bin/python" -c "$FIRST_CALL" "$clone/.venv/bin/kelpie-gateway"
done
