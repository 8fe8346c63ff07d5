"""Pictures and prints of a page: ``screenshot`` (an element, the full page or the viewport; PNG or JPEG;
scaled to fit a model) and ``pdf`` (Chromium's print to PDF, kept like a download) — docs/host.md "Files";
ARCHITECTURE.md host rules 1.2. Both are read-only and run over the tab's own CDP session (the direct CDP
path the host rules allow for screenshots); the canonical ``tab.screenshot`` stays the viewport PNG of
CONTRACT.md §3.

``screenshot {tabId, ref?, fullPage?, format?, quality?, maxDimension?}``:

* **What.** ``ref``: the captured element's border box (the reader's ``element_box_script``: page
  coordinates, same-origin frames' offsets added); ``fullPage: true``: the whole document
  (``Page.getLayoutMetrics`` content size); neither: the viewport as the user sees it. Taken with
  ``Page.captureScreenshot`` and a ``clip`` in page coordinates, ``captureBeyondViewport`` for an element
  or the full page (nothing is scrolled).
* **Size.** The picture is scaled (``clip.scale``) so that neither side exceeds ``maxDimension`` image
  pixels (default :data:`MAX_DIMENSION` 1568, the longest side vision models take without resizing
  themselves; 16..8000), never enlarged, aspect ratio kept; image pixels are CSS pixels × the device pixel
  ratio × ``scale``. If the encoded image is over :data:`MAX_IMAGE_BYTES` (5 MiB) it is taken again
  smaller (at most :data:`SHRINK_TRIES` times), else ``RESPONSE_TOO_LARGE``.
* **Format.** ``png`` (default) or ``jpeg`` with ``quality`` 1..100 (default 80; only with jpeg).
* **Result** ``{mimeType, data, width, height, scale, devicePixelRatio, clip: {x, y, width, height}}``
  (``width``/``height`` read from the image itself; ``clip`` in CSS pixels). Over MCP it is one ``image``
  block exactly as ``tab.screenshot``'s (docs/mcp.md "Results").

``pdf {tabId}``: ``Page.printToPDF`` (backgrounds printed, the page's own print CSS and paper size),
streamed into the downloads folder as ``<title>.pdf`` and reported like a download: ``{download:
{id, name, state: "complete", bytes, sha256, mimeType: "application/pdf", resource, …}}`` (an MCP
``resource_link``). Over the host's download cap it is refused ``RESPONSE_TOO_LARGE`` and nothing is kept.
Chromium prints only headless: a ``--headed`` host answers ``RENDERER_FAILED`` saying so.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import math
import os
import struct
from collections.abc import Mapping
from typing import Any

from kelpie_gateway import element_box_script
from kelpie_gateway.host.browser.chromium import endpoint
from kelpie_gateway.host.browser.common import Tab
from kelpie_gateway.host.browser.world import DocumentWorld, World
from kelpie_gateway.host.files import safe_name
from kelpie_gateway.host.renderer import JsonObject, Refused, fail

from .base import REF, STEP_TIMEOUT_MS, TAB, Extension, schema
from .downloads import Downloads

MAX_DIMENSION = 1568
MAX_IMAGE_BYTES = 5 * 1024 * 1024
SHRINK_TRIES = 4
DEFAULT_QUALITY = 80
PDF_CHUNK = 1 << 20


class Capture(Extension):
    """``screenshot`` and ``pdf``."""

    async def _document(self, tab: Tab) -> DocumentWorld:
        world = self.renderer.part(World)
        if world is None:
            raise Refused(fail("RENDERER_FAILED", "this host has no isolated world", mayHaveCompleted=False))
        return await world.world(tab)

    @endpoint(
        {
            "name": "screenshot",
            "method": "capture-screenshot",
            "description": "A picture of one element (ref), the full page (fullPage) or the viewport, as PNG "
            "or JPEG (quality 1-100), scaled so that no side exceeds maxDimension pixels (default 1568) and "
            "the image stays under 5 MB. tab.screenshot is the viewport as PNG only.",
            "inputSchema": schema(
                {
                    "tabId": TAB,
                    "ref": REF,
                    "fullPage": {"type": "boolean"},
                    "format": {"enum": ["png", "jpeg"]},
                    "quality": {"type": "integer", "minimum": 1, "maximum": 100},
                    "maxDimension": {"type": "integer", "minimum": 16, "maximum": 8000},
                },
                ["tabId"],
                dependentSchemas={
                    "ref": {"properties": {"fullPage": False}},
                    "quality": {"properties": {"format": {"const": "jpeg"}}, "required": ["format"]},
                },
            ),
            "mutates": False,
            "refArguments": ["ref"],
        }
    )
    async def screenshot(self, params: Mapping[str, Any]) -> JsonObject:
        """See the module docstring."""
        tab = self.tab(params)
        fmt = str(params.get("format", "png"))
        longest = int(params.get("maxDimension", MAX_DIMENSION))
        captured = self.captured(params)
        if params.get("ref") is not None and captured is None:
            return fail(
                "RENDERER_FAILED", "the gateway passed no captured node for ref", mayHaveCompleted=False
            )
        document = await self._document(tab)
        cdp = document.cdp
        if captured is not None:
            boxed = await self.run_script(tab.tab_id, element_box_script(*captured))
            if boxed.get("success") is not True:
                return boxed
            box = boxed.get("value") or {}
            clip = {k: float(box.get(k) or 0) for k in ("x", "y", "width", "height")}
            ratio = float(box.get("devicePixelRatio") or 1)
            if clip["width"] < 1 or clip["height"] < 1:
                return fail(
                    "INVALID_PARAMS",
                    "the element has no box to picture (hidden or of zero size)",
                    mayHaveCompleted=False,
                )
            beyond = True
        else:
            metrics = await cdp.send("Page.getLayoutMetrics")
            ratio = await self._ratio(document)
            if params.get("fullPage") is True:
                size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
                clip = {"x": 0.0, "y": 0.0, "width": float(size["width"]), "height": float(size["height"])}
                beyond = True
            else:
                view = metrics.get("cssVisualViewport") or metrics.get("visualViewport") or {}
                clip = {
                    "x": float(view.get("pageX", 0)),
                    "y": float(view.get("pageY", 0)),
                    "width": float(view["clientWidth"]),
                    "height": float(view["clientHeight"]),
                }
                beyond = False
        scale = min(1.0, longest / (max(clip["width"], clip["height"]) * ratio))
        shot: JsonObject = {"format": fmt, "captureBeyondViewport": beyond, "fromSurface": True}
        if fmt == "jpeg":
            shot["quality"] = int(params.get("quality", DEFAULT_QUALITY))
        data = b""
        for _ in range(SHRINK_TRIES + 1):
            reply = await asyncio.wait_for(
                cdp.send("Page.captureScreenshot", {**shot, "clip": {**clip, "scale": scale}}),
                STEP_TIMEOUT_MS / 1000,
            )
            data = base64.b64decode(reply["data"])
            if len(data) <= MAX_IMAGE_BYTES:
                break
            scale *= math.sqrt(MAX_IMAGE_BYTES / len(data)) * 0.9
        else:
            return fail(
                "RESPONSE_TOO_LARGE",
                f"the picture stays over {MAX_IMAGE_BYTES} bytes even scaled down; ask for a smaller "
                "maxDimension or JPEG",
                mayHaveCompleted=False,
            )
        width, height = image_size(data)
        return {
            "success": True,
            "mimeType": f"image/{fmt}",
            "data": base64.b64encode(data).decode("ascii"),
            "width": width,
            "height": height,
            "scale": round(scale, 6),
            "devicePixelRatio": ratio,
            "clip": {k: round(v, 2) for k, v in clip.items()},
        }

    @staticmethod
    async def _ratio(document: DocumentWorld) -> float:
        reply = await document.cdp.send(
            "Runtime.evaluate",
            {
                "expression": "window.devicePixelRatio",
                "contextId": document.context_id,
                "returnByValue": True,
            },
        )
        value = (reply.get("result") or {}).get("value")
        return float(value) if isinstance(value, int | float) and value > 0 else 1.0

    @endpoint(
        {
            "name": "pdf",
            "method": "print-pdf",
            "description": "Print the tab's page to PDF (Chromium's print, backgrounds included) into the host's "
            "downloads folder; answers it like a download: {download: {name, bytes, sha256, resource, …}}. "
            "Read the file with MCP resources/read (or resources_read).",
            "inputSchema": schema({"tabId": TAB}, ["tabId"]),
            "mutates": False,
        }
    )
    async def pdf(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId}`` → ``{download}`` (see the module docstring)."""
        tab = self.tab(params)
        files = self.renderer.files
        downloads = self.renderer.part(Downloads)
        if files is None or downloads is None:
            return fail("RENDERER_FAILED", "this host keeps no downloads folder", mayHaveCompleted=False)
        document = await self._document(tab)
        cdp = document.cdp
        try:
            printed = await asyncio.wait_for(
                cdp.send("Page.printToPDF", {"printBackground": True, "transferMode": "ReturnAsStream"}),
                STEP_TIMEOUT_MS / 1000,
            )
        except Exception as exc:
            text = str(exc)
            why = (
                "Chromium prints to PDF only when headless"
                if "not implemented" in text.lower()
                else text[:200]
            )
            return fail("RENDERER_FAILED", f"printing failed: {why}", mayHaveCompleted=False)
        title = ""
        try:
            title = await asyncio.wait_for(tab.page.title(), 2.0)
        except Exception:
            title = ""
        target = files.claim(safe_name((title.strip() or "page")[:150]) + ".pdf")
        digest = hashlib.sha256()
        size = 0
        handle = printed["stream"]
        try:
            with target.open("wb") as out:
                while True:
                    chunk = await cdp.send("IO.read", {"handle": handle, "size": PDF_CHUNK})
                    raw = chunk.get("data") or ""
                    data = base64.b64decode(raw) if chunk.get("base64Encoded") else raw.encode("latin-1")
                    size += len(data)
                    if size > files.max_download_bytes:
                        raise _TooLarge(size)
                    digest.update(data)
                    out.write(data)
                    if chunk.get("eof"):
                        break
        except _TooLarge:
            files.release(target)
            cap = files.max_download_bytes // (1024 * 1024)
            return fail(
                "RESPONSE_TOO_LARGE",
                f"the PDF is over the host's download cap (--max-download-mb {cap}); nothing was kept",
                mayHaveCompleted=False,
            )
        except BaseException:
            files.release(target)
            raise
        finally:
            asyncio.ensure_future(cdp.send("IO.close", {"handle": handle})).add_done_callback(
                lambda done: done.cancelled() or done.exception()
            )
        os.chmod(target, 0o600)
        record = downloads.keep(tab.tab_id, target, size, digest.hexdigest(), "application/pdf")
        self.renderer.log(f"pdf {record.id} kept: {size} bytes from tab {tab.tab_id}")
        return {"success": True, "download": record.report()}


class _TooLarge(Exception):
    pass


def image_size(data: bytes) -> tuple[int, int]:
    """``(width, height)`` of a PNG (IHDR) or baseline/progressive JPEG (first SOF marker); (0, 0) if
    neither."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                i += 2
                continue
            length = struct.unpack(">H", data[i + 2 : i + 4])[0]
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                height, width = struct.unpack(">HH", data[i + 5 : i + 9])
                return int(width), int(height)
            i += 2 + length
    return 0, 0
