"""How deep the property-based suites run (issue 19).

CI runs the quick profile: each suite's own example count (a few hundred; 120 state-machine runs of 40
steps). ``KELPIE_HYPOTHESIS_PROFILE=deep`` — what ``tools/dev deep-properties`` sets — runs every suite at
``KELPIE_DEEP_EXAMPLES`` examples (default 10,000; at least 10,000 is the deep profile's promise, a smaller
value is for trying the machinery out). The Hypothesis profiles themselves are registered in
``tests/conftest.py``; suites call :func:`examples` for their ``max_examples`` so that one switch moves them all.
"""

from __future__ import annotations

import os

PROFILE = os.environ.get("KELPIE_HYPOTHESIS_PROFILE", "quick")
if PROFILE not in ("quick", "deep"):
    raise RuntimeError(f"KELPIE_HYPOTHESIS_PROFILE must be 'quick' or 'deep', not {PROFILE!r}")
DEEP_EXAMPLES = int(os.environ.get("KELPIE_DEEP_EXAMPLES", "10000"))


def examples(quick: int) -> int:
    """``max_examples`` for a suite whose CI count is ``quick``: ``quick`` in the quick profile, the deep
    count (never fewer than ``quick``) in the deep one."""
    return max(quick, DEEP_EXAMPLES) if PROFILE == "deep" else quick
