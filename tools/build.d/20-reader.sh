#!/usr/bin/env bash
# Build step: assemble the fixed-reader JavaScript bundles into build/generated/js/ (idempotent).
# dev-demo: yes  (tools/dev demo runs this step: the host loads these bundles)
set -euo pipefail
ROOT="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY="${PY:-$ROOT/.venv/bin/python}"
"$PY" "$ROOT/tools/gen_reader.py" >/dev/null
