"""Generate the fixed-reader bundles (contract §9) into build/generated/js/ (never committed).

Usage: python tools/gen_reader.py [OUT_DIR]. Uses kelpie_gateway.reader.write_bundles, the same
assembly the engine falls back to at run time, so built and in-memory bundles are identical.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "engine"))

from kelpie_gateway import reader  # noqa: E402


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else None
    for path in reader.write_bundles(out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
