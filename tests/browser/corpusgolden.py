"""The reader's recorded answers on the third-party corpus: reading, normalising and digesting them.

`tests/browser/test_corpus_golden.py` compares the working reader with `corpus_golden.json`;
`tools/bench_reader.py golden` regenerates that file (`--write`) or shows the actual differences
against another commit's reader (`--base REV`). Both use the functions here, so what is recorded and
what is checked are read the same way.

Per corpus entry page (loaded as `test_corpus.py` does: its group folder is the document root, only
loopback is reachable, read after `load`), the *outputs* are:
- ``pages@12000/200``: a snapshot with the default bounds and every continuation page (`rest` fed back
  as `cursor` until none is left);
- ``pages@1500/25``: the same with small bounds, so the priority order, the element and text cuts and
  the text continuation are exercised on most pages;
- ``selector``: the selector snapshot (default bounds).

Pages are made repeatable (`load_steady`): some real-world pages pick what they show with
`Math.random` (a blog's footer chooses one of several job adverts), print today's date, or reveal
themselves from a timer (an anti-flicker script hides heise.de for up to a second). So, in the page's own
world (never the reader's), `Math.random` is a seeded generator, and Playwright's clock is installed at a
fixed instant (2026-01-15 12:00 UTC); after `load`, the page's timers of the next 5 s are run at once.

Normalised: the per-read random parts are replaced by stable names — a handle becomes ``h<i>`` (its
rank of first appearance), a read's token ``s<i>``, and the port of a loopback URL ``PORT`` — and the
whole is serialised as sorted, compact JSON; its SHA-256 is the page's digest.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page

GOLDEN = Path(__file__).resolve().parent / "corpus_golden.json"
BOUNDS = ((12000, 200), (1500, 25))
PAGE_LIMIT = 2000  # continuation pages per read: far above any corpus page, a guard against a loop

#: (key, max_chars, max_elements, cursor or None) -> a snapshot script
SnapshotScript = Callable[[str, int, int, "dict[str, Any] | None"], str]
Evaluate = Callable[[str], Any]

SEEDED_RANDOM = """(() => {
  let seed = 0x2545f491;
  Math.random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
})();"""
SETTLE_MS = 5000


def load_steady(page: Page, url: str) -> None:
    """Load `url` into `page` repeatably (module docstring): seeded random, fixed clock, timers run."""
    page.add_init_script(SEEDED_RANDOM)
    page.clock.install(time="2026-01-15T12:00:00Z")
    page.goto(url, wait_until="load", timeout=30000)
    page.clock.run_for(SETTLE_MS)


_LOOPBACK_PORT = re.compile(r"(127\.0\.0\.1|localhost):\d+")


def read_outputs(evaluate: Evaluate, snapshot: SnapshotScript, selector: str) -> dict[str, Any]:
    """Every output of one loaded page (module docstring), raw (not normalised)."""
    out: dict[str, Any] = {}
    for max_chars, max_elements in BOUNDS:
        key = secrets.token_hex(16)
        pages = [evaluate(snapshot(key, max_chars, max_elements, None))]
        while isinstance(pages[-1], dict) and "rest" in pages[-1] and len(pages) < PAGE_LIMIT:
            pages.append(evaluate(snapshot(key, max_chars, max_elements, pages[-1]["rest"])))
        out[f"pages@{max_chars}/{max_elements}"] = pages
    out["selector"] = evaluate(selector)
    return out


def normalise(outputs: dict[str, Any]) -> str:
    """`outputs` with handles, read tokens and loopback ports replaced by stable names; sorted JSON text."""
    names: dict[str, str] = {}
    counts: dict[str, int] = {}

    def rename(value: str, prefix: str) -> str:
        if value not in names:
            counts[prefix] = counts.get(prefix, 0) + 1
            names[value] = f"{prefix}{counts[prefix]}"
        return names[value]

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if k == "handle" and isinstance(v, str):
                    out[k] = rename(v, "h")
                elif k == "token" and isinstance(v, str):  # a read's name (v1.2), as in `rest`
                    out[k] = rename(v, "s")
                elif k == "rest" and isinstance(v, dict):
                    out[k] = {**walk(v), "snapshot": rename(str(v.get("snapshot")), "s")}
                else:
                    out[k] = walk(v)
            return out
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            return _LOOPBACK_PORT.sub(r"\1:PORT", value)
        return value

    return json.dumps(walk(outputs), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def summary(outputs: dict[str, Any]) -> dict[str, Any]:
    """Digest and a few counts (pages, elements, text units per bound) that make a difference legible."""
    text = normalise(outputs)
    out: dict[str, Any] = {"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
    for name, pages in outputs.items():
        if name.startswith("pages@") and all(isinstance(p, dict) and "elements" in p for p in pages):
            out[name] = {
                "pages": len(pages),
                "elements": sum(len(p["elements"]) for p in pages),
                "chars": sum(len(p["text"]) for p in pages),
            }
    return out


def load_golden() -> dict[str, Any]:
    """The committed record: {"reader": note, "pages": {entry: summary}}."""
    data: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return data


def write_golden(pages: dict[str, dict[str, Any]]) -> None:
    data = {
        "about": "Digests of the fixed reader's normalised outputs on ../shared/corpus (tests/browser/corpusgolden.py). "
        "Regenerate only for an intended, reviewed reader change: tools/bench_reader.py golden --write "
        "(docs/reader.md, 'Corpus identity').",
        "pages": dict(sorted(pages.items())),
    }
    GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
