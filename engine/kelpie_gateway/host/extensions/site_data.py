"""What a site keeps in the browser, never its values (docs/host.md "The read-only lane"): ``cookies`` and
``storage``, read-only.

* ``cookies {tabId}``: the cookies the tab's documents (its main frame and every frame, http(s) only) would
  send, from the browser context (Playwright ``context.cookies(urls)``, so ``HttpOnly`` ones too): name,
  domain, path, flags, expiry and size (name plus value, in characters, as DevTools counts it) — never the
  value. At most :data:`COOKIES_MAX`.
* ``storage {tabId}``: the main document origin's ``localStorage`` and ``sessionStorage`` keys with the size
  of each value, and its IndexedDB database names and versions, read by a generated reader script in the
  tab's isolated world (``kelpie_gateway.storage_script``) — never a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kelpie_gateway import storage_script
from kelpie_gateway.host.browser.chromium import endpoint
from kelpie_gateway.host.renderer import JsonObject, fail

from .base import TAB, Extension, schema

COOKIES_MAX = 500
FRAMES_MAX = 64


class SiteData(Extension):
    """``cookies`` and ``storage``; see the module docstring."""

    @endpoint(
        {
            "name": "cookies",
            "method": "cookies",
            "description": "List the cookies the tab's pages would send (read-only): name, domain, path, secure, "
            "httpOnly, sameSite, expires (seconds since the epoch; null for a session cookie) and size — "
            "never a cookie's value.",
            "inputSchema": schema({"tabId": TAB}, ["tabId"]),
            "mutates": False,
        }
    )
    async def cookies(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId}`` → ``{tabId, cookies: [{name, domain, path, secure, httpOnly, sameSite, expires, size,
        partitioned?}], truncated}``."""
        tab = self.tab(params)
        context = self.renderer.context
        if context is None:
            return fail("BROWSER_UNAVAILABLE", "the browser is not running", mayHaveCompleted=False)
        urls = list(dict.fromkeys(f.url for f in tab.page.frames if f.url.startswith(("http:", "https:"))))
        found = await context.cookies(urls[:FRAMES_MAX]) if urls else []
        listed = []
        for c in found[:COOKIES_MAX]:
            expires = c.get("expires")
            item: JsonObject = {
                "name": str(c.get("name", ""))[:200],
                "domain": str(c.get("domain", "")),
                "path": str(c.get("path", "")),
                "secure": bool(c.get("secure")),
                "httpOnly": bool(c.get("httpOnly")),
                "sameSite": str(c.get("sameSite") or "None"),
                "expires": expires if isinstance(expires, int | float) and expires >= 0 else None,
                "size": len(str(c.get("name", ""))) + len(str(c.get("value", ""))),
            }
            if c.get("partitionKey"):
                item["partitioned"] = True
            listed.append(item)
        return {
            "success": True,
            "tabId": tab.tab_id,
            "cookies": listed,
            "truncated": len(found) > COOKIES_MAX,
        }

    @endpoint(
        {
            "name": "storage",
            "method": "storage",
            "description": "List what the tab's origin keeps in the browser (read-only): localStorage and "
            "sessionStorage keys with each value's size, and IndexedDB database names — never a value.",
            "inputSchema": schema({"tabId": TAB}, ["tabId"]),
            "mutates": False,
        }
    )
    async def storage(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId}`` → ``{tabId, origin, localStorage, sessionStorage, indexedDB}`` (``js/storage.js``)."""
        tab_id = self.tab(params).tab_id
        result = await self.run_script(tab_id, storage_script())
        if result.get("success") is not True:
            return result
        value = result.get("value")
        if not isinstance(value, dict):
            return fail("RENDERER_FAILED", "the storage script answered no object", mayHaveCompleted=False)
        return {"success": True, "tabId": tab_id, **value}
