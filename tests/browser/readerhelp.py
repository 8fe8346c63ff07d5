"""Drive the generated reader scripts like a host and check their answers against contract §8-§9."""

from __future__ import annotations

import functools
import json
import secrets
from pathlib import Path
from typing import Any

from conftest import Site
from hostworld import HostWorld
from kelpie_gateway import reader
from playwright.sync_api import Page

ELEMENT_FIELDS = {"handle", "tag", "role", "label"}
OPTIONAL_FIELDS = {"type", "level", "states", "url", "unreadable", "frame", "shadow", "text", "value"}
STATES = {"checked", "mixed", "selected", "expanded", "collapsed", "pressed", "disabled", "readonly", "required",
          "invalid", "offscreen"}


TEST_JS = Path(__file__).resolve().parent / "js"


@functools.cache
def _names_bundle() -> str:
    text = (TEST_JS / "accessible_names.js").read_text(encoding="utf-8")
    return reader.assemble_entry("names", "names.js", text)


def accessible_names_script(selectors: list[str]) -> str:
    """An expression whose value lists the reader's `label` naming (``accessibleName``, flattened, not yet
    bounded) of the element each CSS selector matches, null where none does: the tests' own entry
    ``js/accessible_names.js`` on the package's prelude and core (it never ships)."""
    return f"{_names_bundle()}({reader.js_literal({'selectors': list(selectors)})})"


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def well_formed(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Reader:
    """One gateway's view of one tab: its key, the host's isolated world, the scripts."""

    def __init__(self, page: Page, key: str | None = None) -> None:
        self.page = page
        self.key = key or secrets.token_hex(16)
        self.world = HostWorld(page)

    def snapshot(
        self,
        max_chars: int = 12000,
        max_elements: int = 200,
        *,
        scope: str | None = None,
        cursor: dict[str, Any] | None = None,
        **more: Any,
    ) -> dict[str, Any]:
        snap = self.world.evaluate(
            reader.snapshot_script(
                self.key, max_chars=max_chars, max_elements=max_elements, scope=scope, cursor=cursor, **more
            )
        )
        check_snapshot(snap, max_chars, max_elements)
        return snap

    def pages(self, max_chars: int = 12000, max_elements: int = 200) -> list[dict[str, Any]]:
        """A snapshot and every continuation page of it (the renderer side of `next`/`cursor`)."""
        out = [self.snapshot(max_chars, max_elements)]
        while "rest" in out[-1]:
            out.append(self.snapshot(max_chars, max_elements, cursor=out[-1]["rest"]))
            assert len(out) < 10_000
        return out

    def selector_snapshot(self, **options: int) -> dict[str, Any]:
        snap = self.world.evaluate(reader.collect_browser_selector_snapshot_expression(options))
        check_snapshot(
            snap,
            options.get("maxChars", 12000),
            options.get("maxElements", 200),
            fields={"selector", "tag", "role", "label"},
        )
        return snap

    def click(self, handle: str) -> dict[str, Any]:
        result: dict[str, Any] = self.world.evaluate(reader.click_script(self.key, handle))
        return result

    def type(self, handle: str, text: str) -> dict[str, Any]:
        result: dict[str, Any] = self.world.evaluate(reader.type_script(self.key, handle, text))
        return result


def open_page(page: Page, site: Site, name: str, host: str = "127.0.0.1") -> Reader:
    """Load fixtures/pages/reader/`name` (served as `host`) and return a fresh gateway's Reader of it."""
    page.goto(site.url(f"reader/{name}", host), wait_until="load")
    return Reader(page)


def refused(result: dict[str, Any], code: str, may_have_completed: bool) -> None:
    """Assert a script's refusal value: exactly `{error: {code, message}, mayHaveCompleted}`."""
    assert set(result) == {"error", "mayHaveCompleted"}, result
    assert result["error"]["code"] == code, result
    assert isinstance(result["error"]["message"], str) and result["error"]["message"]
    assert result["mayHaveCompleted"] is may_have_completed, result


def check_snapshot(snap: Any, max_chars: int, max_elements: int, fields: set[str] = ELEMENT_FIELDS) -> None:
    """Assert the value is a bounded, well-formed snapshot (contract §8)."""
    assert isinstance(snap, dict), snap
    assert "error" not in snap, snap
    keys = {"url", "title", "text", "truncated", "elements"}
    if "selector" not in fields:  # a snapshot names its read; a continuation page may count removed elements
        assert isinstance(snap.get("token"), str), snap
        keys |= {"token"}
    assert keys <= set(snap) <= keys | {"rest", "removed", "since"}, set(snap)
    if "rest" in snap:  # the private continuation position comes exactly when something is left
        assert snap["truncated"] is True
        assert set(snap["rest"]) == {"snapshot", "textAt", "elementAt"}
    assert isinstance(snap["truncated"], bool)
    for key in ("url", "title", "text"):
        assert isinstance(snap[key], str)
        assert well_formed(snap[key]), f"{key} carries a lone surrogate"
    assert utf16_len(snap["text"]) <= max_chars
    assert isinstance(snap["elements"], list)
    assert len(snap["elements"]) <= max_elements
    for el in snap["elements"]:
        assert fields <= set(el), el
        extra = set(el) - fields
        if "handle" in fields:
            assert extra <= OPTIONAL_FIELDS, extra
        else:
            assert not extra, extra
        for key in ("tag", "role", "label"):
            assert isinstance(el[key], str) and well_formed(el[key])
        if "states" in el:  # sorted, distinct, from the closed set, never empty
            assert el["states"] and el["states"] == sorted(set(el["states"])), el
            assert set(el["states"]) <= STATES, el
        if "url" in el:
            assert isinstance(el["url"], str) and utf16_len(el["url"]) <= 500, el
    # The whole answer must be valid UTF-8 JSON (what the engine forwards).
    json.dumps(snap, ensure_ascii=False).encode("utf-8")


def by_label(snap: dict[str, Any], label: str) -> dict[str, Any]:
    found = [e for e in snap["elements"] if e["label"] == label]
    assert len(found) == 1, (label, [e["label"] for e in snap["elements"]])
    return found[0]


def dumps(snap: Any) -> str:
    return json.dumps(snap, ensure_ascii=False)
