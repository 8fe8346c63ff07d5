#!/usr/bin/env bash
# Build step: every generated artefact (JSON Schemas, method and state-machine docs, Zod module, parity
# fixtures, fixed-reader bundles) into build/generated/ -- never committed. Idempotent: tools/generate.py
# keeps a SHA-256 of its sources (engine/kelpie_gateway/*.py, js/, the generators) in
# build/generated/.sources.sha256 and does nothing while it matches.
set -euo pipefail
ROOT="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY="${PY:-$ROOT/.venv/bin/python}"
"$PY" "$ROOT/tools/generate.py" --out "$ROOT/build/generated" >&2
