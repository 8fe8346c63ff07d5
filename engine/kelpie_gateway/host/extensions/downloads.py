"""Downloads: where the files a page downloads go, how the action that started one reports it, and the
files the host keeps served as MCP resources (docs/host.md "Files"; ARCHITECTURE.md host rules 1.2).

* **Where.** Every download of every tab is saved into the downloads folder (``host/files.py``:
  ``--downloads-dir``, or a private temporary folder) under its suggested name made safe (``report.csv``,
  ``report (1).csv`` …), mode 0600, with its size and SHA-256 recorded. Ids are ``d1``, ``d2`` … (never
  reused while the host runs); the resource URI is ``kelpie://downloads/<id>``. Nothing is ever
  ``RENDERER_FAILED`` because a page downloaded.
* **Reported by its action.** A ``navigate`` or ``new-tab`` whose URL turns out to be a download, or whose
  page starts one while it loads, succeeds with ``download`` as soon as the download begins (the tab stays
  where it was, or on the page that started it; issue 27). A click (the ``tab.click`` script) or a key press that may
  activate (``press_key`` Enter/Space) that requested a main-frame navigation (CDP
  ``Page.frameRequestedNavigation``, which arrives before the click's answer) is watched until that
  navigation commits or turns into a download (at most :data:`NAVIGATION_SETTLE_S`); a click on a link that
  downloads (the script's ``downloadLink`` hint) until its download begins (at most
  :data:`LINK_SETTLE_S`); any other for ``--download-settle-ms`` (default 0: not at all, so an ordinary
  click costs nothing). A download that began in the tab by then is reported in the result, waited for
  until the call's deadline (less :data:`DEADLINE_MARGIN_S`); one still arriving then is reported
  ``state: "in-progress"`` and listed when done. One a page's script starts later is kept and listed.
* **Capped.** Past ``--max-download-mb`` (CDP ``Page.downloadProgress``, or the size the server announced)
  the download is cancelled and reported ``cancelled`` with the reason; a partial file is never kept.
* **The site policy** applies to the download's URL (``SitePolicy.refusal``, the policy's public decision):
  a refused one is cancelled at once and reported ``blocked``.
* ``downloads_list`` (read-only) lists every download and PDF of this host run; ``resources_list`` and
  ``resources_read`` serve the complete ones as MCP resources (the engine turns MCP ``resources/list`` and
  ``resources/read`` into these calls: docs/mcp.md "Resources").

The reported object (``download`` in results, entries of ``downloads_list``)::

    {id, name, state: "complete"|"in-progress"|"cancelled"|"blocked"|"failed", bytes?, sha256?,
     mimeType, resource, url, tabId, reason?}

``name`` is the file's name in the folder, ``bytes`` its size (received so far while in progress),
``sha256`` (complete only) the hex digest of the file on disk, ``url`` the download's URL with query values
redacted (a ``data:`` URL as the bare scheme), ``reason`` why it is not complete. File contents never
appear in a result: only ``resources_read`` (MCP ``resources/read``) returns them.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import mimetypes
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import CDPSession, Page
from playwright.async_api import Download as PlaywrightDownload

from kelpie_gateway import bundle_slot, redact_url
from kelpie_gateway.host.browser.chromium import endpoint
from kelpie_gateway.host.browser.common import Tab, quiet, short, state_of, timeout_ms
from kelpie_gateway.host.browser.world import World
from kelpie_gateway.host.files import Files
from kelpie_gateway.host.renderer import JsonObject, fail

from .base import Extension, schema

LINK_SETTLE_S = 2.0
"""How long a click on a link that downloads (the click script's ``downloadLink`` hint: a ``download``
attribute, a blob: or data: URL) waits for its download to begin. Chromium starts it in its browser
process after the click answered, in no order with the answer (measured here: 0–272 ms later on the loaded
machine); the wait ends as soon as it begins."""
NAVIGATION_SETTLE_S = 3.0
"""How long a click that requested a main-frame navigation waits for it to commit or become a download."""
DEADLINE_MARGIN_S = 0.5
"""How much of a call's deadline a download wait leaves, so the call answers (``in-progress``) in time."""
RESOURCE_PAGE = 100
"""``resources_list`` entries per page."""
LIST_LIMIT = 200
"""``downloads_list`` shows at most this many (the newest)."""
MAX_READ_BYTES = 16 * 1024 * 1024
"""``resources_read`` returns files up to this size (base64 stays under the 32 MiB result cap)."""
URI_PREFIX = "kelpie://downloads/"
ID_PATTERN = r"d[1-9][0-9]{0,8}"
_ID_RE = re.compile(ID_PATTERN)
KEY_ACTIVATES = re.compile(r"(?:^|\+)(?:Enter|Space| )$")
"""``press_key`` keys that activate a focused link or button (and so may download)."""
_TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "image/svg+xml")


def download_url(url: str) -> str:
    """``url`` as a result reports it: what :func:`kelpie_gateway.redact_url` leaves of an http(s) URL (no
    user info, credential-named parameters ``REDACTED``); ``blob:`` as its origin, ``data:`` and other
    schemes as the bare scheme (a ``data:`` URL is the file itself: never reported)."""
    scheme, colon, rest = url.partition(":")
    scheme = scheme.lower()
    if not colon or not scheme.isascii() or not scheme.replace("+", "").replace("-", "").isalnum():
        return "?"
    if scheme in ("http", "https"):
        return redact_url(url)
    if scheme == "blob":
        try:
            inner = urlsplit(rest)
        except ValueError:
            return "blob:"
        return f"blob:{inner.scheme}://{inner.netloc.rpartition('@')[2]}" if inner.netloc else "blob:"
    return f"{scheme}:"


def guess_mime(name: str) -> str:
    return mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"


@dataclass(eq=False)
class Download:
    """One download (or PDF) of this host run; see the module docstring for what it reports."""

    id: str
    tab_id: str | None
    url: str
    suggested: str
    state: str = "in-progress"
    name: str | None = None
    path: Path | None = None
    bytes: int | None = None
    total: int | None = None
    sha256: str | None = None
    mime: str = "application/octet-stream"
    reason: str | None = None
    guid: str | None = None
    playwright: PlaywrightDownload | None = field(default=None, repr=False)
    finished: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def resource(self) -> str:
        return URI_PREFIX + self.id

    def report(self) -> JsonObject:
        """The object results and ``downloads_list`` carry (never the file's contents)."""
        out: JsonObject = {
            "id": self.id,
            "name": self.name or self.suggested,
            "state": self.state,
            "mimeType": self.mime,
            "resource": self.resource,
            "url": download_url(self.url),
            "tabId": self.tab_id,
        }
        if self.bytes is not None:
            out["bytes"] = self.bytes
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        if self.reason is not None:
            out["reason"] = self.reason
        return out

    def listing(self) -> JsonObject:
        """The MCP ``Resource`` of a complete file."""
        return {
            "uri": self.resource,
            "name": self.name or self.id,
            "title": self.name or self.id,
            "description": f"downloaded in tab {self.tab_id}" if self.tab_id else "kept by the host",
            "mimeType": self.mime,
            "size": self.bytes or 0,
        }


@dataclass
class TabDownloads:
    """Per tab: counts of downloads begun, main-frame navigations requested and committed, and the future
    the next of them resolves (what a watched call waits on)."""

    begun: int = 0
    requested: int = 0
    committed: int = 0
    main_frame: str | None = None
    changed: asyncio.Future[None] | None = None
    pending: list[Download] = field(default_factory=list)
    """Playwright downloads of this tab not yet matched with their CDP guid (by url and name)."""
    guids: list[tuple[str, str, str]] = field(default_factory=list)
    """CDP ``downloadWillBegin`` (guid, url, name) not yet matched with a Playwright download."""

    def signal(self) -> None:
        if self.changed is not None and not self.changed.done():
            self.changed.set_result(None)
        self.changed = None

    def next_change(self) -> asyncio.Future[None]:
        if self.changed is None or self.changed.done():
            self.changed = asyncio.get_running_loop().create_future()
        return self.changed


class Downloads(Extension):
    """``downloads_list``, ``resources_list``, ``resources_read``, and every download of every tab."""

    def __init__(self, renderer: Any) -> None:
        super().__init__(renderer)
        self.items: dict[str, Download] = {}
        self._next = 1
        self._admitted = 0
        """Downloads begun and not refused: at most ``files.max_downloads`` (``--max-downloads``)."""
        self._click_slot = f'"{bundle_slot("click")}"'

    @property
    def files(self) -> Files | None:
        files: Files | None = self.renderer.files
        return files

    @staticmethod
    def of(tab: Tab) -> TabDownloads:
        return state_of(tab, TabDownloads)

    # ----------------------------------------------------------------- the browser's events
    def attached(self, tab: Tab) -> None:
        page = tab.page
        state = self.of(tab)
        state.pending.clear()
        state.guids.clear()
        page.on("download", lambda download: self._began(tab, download) if tab.page is page else None)
        session = World.of(tab).session
        if session is not None:
            self.renderer.spawn(quiet(self._listen(tab, page, session)))

    def navigated(self, tab: Tab) -> None:
        state = self.of(tab)
        state.committed += 1
        state.signal()

    def closed(self, tab: Tab) -> None:
        self.of(tab).signal()

    async def _listen(self, tab: Tab, page: Page, made: asyncio.Future[CDPSession]) -> None:
        session = await asyncio.shield(made)
        if tab.page is not page:
            return
        state = self.of(tab)
        session.on("Page.downloadWillBegin", lambda event: self._will_begin(tab, event))
        session.on("Page.downloadProgress", lambda event: self._progress(tab, event))
        session.on("Page.frameRequestedNavigation", lambda event: self._requested(tab, event))
        tree = await session.send("Page.getFrameTree")
        state.main_frame = str(tree["frameTree"]["frame"]["id"])

    def _requested(self, tab: Tab, event: Mapping[str, Any]) -> None:
        state = self.of(tab)
        main = state.main_frame is None or event.get("frameId") == state.main_frame
        if main and event.get("disposition", "currentTab") == "currentTab":
            state.requested += 1
            state.signal()

    def _began(self, tab: Tab, download: PlaywrightDownload) -> None:
        record = self._new(tab.tab_id, download.url, download.suggested_filename)
        record.playwright = download
        state = self.of(tab)
        state.begun += 1
        self._match(state, record=record)
        state.signal()
        policy = self.renderer.policy
        refusal = policy.refusal(download.url) if policy is not None else None
        if refusal is not None:
            self._stop(record, "blocked", f"the site policy refuses its URL: {refusal}")
            return
        files = self.files
        if files is not None and self._admitted >= files.max_downloads:
            self._stop(
                record,
                "cancelled",
                f"the host keeps at most {files.max_downloads} downloads while it runs (--max-downloads)",
            )
            return
        self._admitted += 1
        self.renderer.spawn(self._finish(record))

    def _new(self, tab_id: str | None, url: str, suggested: str) -> Download:
        record = Download(f"d{self._next}", tab_id, url, suggested or "download")
        self._next += 1
        record.mime = guess_mime(record.suggested)
        self.items[record.id] = record
        return record

    def _will_begin(self, tab: Tab, event: Mapping[str, Any]) -> None:
        guid, url, name = (str(event.get(k) or "") for k in ("guid", "url", "suggestedFilename"))
        if guid:
            self._match(self.of(tab), guid=(guid, url, name))

    @staticmethod
    def _match(
        state: TabDownloads, *, record: Download | None = None, guid: tuple[str, str, str] | None = None
    ) -> None:
        """Pair a Playwright download with the CDP guid of the same download (either may come first)."""
        if record is not None:
            for i, (g, url, name) in enumerate(state.guids):
                if url == record.url and name == record.suggested:
                    record.guid = g
                    del state.guids[i]
                    return
            state.pending.append(record)
        elif guid is not None:
            for i, pending in enumerate(state.pending):
                if pending.url == guid[1] and pending.suggested == guid[2]:
                    pending.guid = guid[0]
                    del state.pending[i]
                    return
            state.guids.append(guid)

    def _progress(self, tab: Tab, event: Mapping[str, Any]) -> None:
        guid = event.get("guid")
        record = next((r for r in self.items.values() if r.guid == guid), None) if guid else None
        files = self.files
        if record is None or record.state != "in-progress" or files is None:
            return
        received, total = event.get("receivedBytes"), event.get("totalBytes")
        if isinstance(received, int | float):
            record.bytes = int(received)
        if isinstance(total, int | float) and total > 0:
            record.total = int(total)
        size = max(record.bytes or 0, record.total or 0)
        if size > files.max_download_bytes:
            cap = files.max_download_bytes // (1024 * 1024)
            self._stop(
                record, "cancelled", f"over the host's download cap (--max-download-mb {cap}): {size} bytes"
            )

    def _stop(self, record: Download, state: str, reason: str) -> None:
        """Cancel a download that must not be kept: it is ``state`` with ``reason`` at once."""
        record.state, record.reason = state, reason
        self.renderer.log(f"download {record.id} {state}: {reason}")
        if record.playwright is not None:
            self.renderer.spawn(quiet(record.playwright.cancel()))
        record.finished.set()

    async def _finish(self, record: Download) -> None:
        """Wait for the browser to finish the download, then keep it in the folder (or say why not)."""
        download, files = record.playwright, self.files
        assert download is not None
        try:
            failure = await download.failure()
            if record.state != "in-progress":
                return
            if failure is not None:
                record.state, record.reason = _failed(record, failure)
                return
            if files is None:
                record.state, record.reason = "failed", "this host keeps no downloads folder"
                return
            target = files.claim(record.suggested)
            try:
                await download.save_as(target)
                size, digest = await asyncio.to_thread(_size_and_digest, target, files.max_download_bytes)
            except BaseException:
                files.release(target)
                raise
            if size > files.max_download_bytes:
                files.release(target)
                cap = files.max_download_bytes // (1024 * 1024)
                record.state = "cancelled"
                record.reason = f"over the host's download cap (--max-download-mb {cap}): {size} bytes"
                return
            os.chmod(target, 0o600)
            record.name, record.path, record.bytes, record.sha256 = target.name, target, size, digest
            record.mime = guess_mime(target.name)
            record.state = "complete"
            self.renderer.log(f"download {record.id} complete: {size} bytes in tab {record.tab_id}")
        except Exception as exc:
            if record.state == "in-progress":
                record.state, record.reason = "failed", short(exc)
        finally:
            record.finished.set()
            with contextlib.suppress(Exception):
                await download.delete()  # the browser's own copy: the folder holds the kept one

    def keep(self, tab_id: str | None, path: Path, size: int, digest: str, mime: str) -> Download:
        """Register a file another part wrote into the downloads folder (a PDF) as a complete download."""
        record = self._new(tab_id, "", path.name)
        record.name, record.path, record.bytes, record.sha256, record.mime = (
            path.name,
            path,
            size,
            digest,
            mime,
        )
        record.state = "complete"
        record.finished.set()
        return record

    # ----------------------------------------------------------------- actions that may download
    def _watched(self, method: str, params: Mapping[str, Any]) -> str | None:
        """How a call is watched: ``"navigation"`` (navigate, new-tab), ``"activation"`` (a click script, the
        native-input ``click``, an activating key press), or None."""
        if method in ("navigate", "new-tab"):
            return "navigation"
        if method == "native-click":  # the native-input click (extensions/pointer.py): a hand's press
            return "activation"
        if method == "press-key":
            key = params.get("key")
            return "activation" if isinstance(key, str) and KEY_ACTIVATES.search(key) else None
        if method == "browser-control-evaluate":
            script = params.get("script")  # the click bundle's script names its slot near its start
            return (
                "activation"
                if isinstance(script, str) and script.find(self._click_slot, 0, 2048) > 0
                else None
            )
        return None

    async def around(
        self, method: str, params: Mapping[str, Any], run: Callable[[], Awaitable[JsonObject]]
    ) -> JsonObject:
        watch = self._watched(method, params)
        if watch is None:
            return await run()
        loop = asyncio.get_running_loop()
        until = loop.time() + timeout_ms(params) / 1000 - DEADLINE_MARGIN_S
        tab = self.renderer.pages.get(params.get("tabId")) if isinstance(params.get("tabId"), str) else None
        first = self._next
        marks = (self.of(tab).begun, self.of(tab).requested, self.of(tab).committed) if tab else None
        result = await run()
        if watch == "navigation":
            return await self._navigation(method, params, result, first, until)
        if result.get("success") is not True or tab is None or marks is None:
            return result
        state = self.of(tab)
        if state.begun == marks[0]:
            navigating = state.requested > marks[1] and state.committed == marks[2]
            value = result.get("value")
            linked = isinstance(value, dict) and value.get("downloadLink") is True
            files = self.files
            settle = (
                NAVIGATION_SETTLE_S
                if navigating
                else LINK_SETTLE_S
                if linked
                else (files.download_settle_s if files is not None else 0.0)
            )
            if settle <= 0:
                return result
            await self._wait(
                tab,
                lambda: state.begun > marks[0] or (navigating and state.committed > marks[2]),
                min(loop.time() + settle, until),
            )
        record = self._since(first, tab.tab_id)
        if record is None:
            return result
        await self._until_done(record, until)
        return {**result, "download": record.report()}

    async def _navigation(
        self, method: str, params: Mapping[str, Any], result: JsonObject, first: int, until: float
    ) -> JsonObject:
        """``navigate``/``new-tab`` that ended in a download: the endpoint answers ``download`` (its
        placeholder, ``endpoints.DOWNLOAD_BEGUN``) when the tab's download began during its ``goto`` (the
        URL is one, or the page started one while it loaded: issue 27); a ``goto`` that failed "Download is
        starting" (or aborted) is made a success here. Either way the result's ``download`` is this
        download's object (:meth:`Download.report`, waited for until the deadline), the tab where it was."""
        if result.get("success") is True:
            if not isinstance(result.get("download"), dict):
                return result
            record = self._since(first, result.get("tabId"))
            if record is None:  # the page's download event is heard by this part first: not expected
                return result
            await self._until_done(record, until)
            return {**result, "download": record.report()}
        tab_id = params.get("tabId") if method == "navigate" else None
        record = self._since(first, tab_id)
        if record is None:
            message = str((result.get("error") or {}).get("message", ""))
            if "Download is starting" not in message and "ERR_ABORTED" not in message:
                return result
            deadline = min(asyncio.get_running_loop().time() + 1.0, until)
            while record is None and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.02)
                record = self._since(first, tab_id)
            if record is None:
                return result
        tab = self.renderer.pages.get(record.tab_id)
        if tab is None:
            return result
        await self._until_done(record, until)
        answer: JsonObject = {"success": True, "tabId": tab.tab_id, "generation": tab.generation}
        if method == "navigate":
            answer["url"] = tab.page.url
        answer["download"] = record.report()
        return answer

    def _since(self, first: int, tab_id: Any) -> Download | None:
        """The first download begun (in ``tab_id``, if given) since id number ``first`` was next."""
        for record in self.items.values():
            if int(record.id[1:]) >= first and (tab_id is None or record.tab_id == tab_id) and record.url:
                return record
        return None

    async def _wait(self, tab: Tab, done: Callable[[], bool], until: float) -> None:
        """Wait until ``done()`` (checked on every change of the tab), a dialog opens, or ``until``."""
        loop = asyncio.get_running_loop()
        dialog: asyncio.Future[None] = loop.create_future()
        tab.dialog_waiters.add(dialog)
        try:
            while not done() and tab.dialog is None and loop.time() < until:
                change = self.of(tab).next_change()
                await asyncio.wait(
                    {change, dialog}, timeout=until - loop.time(), return_when=asyncio.FIRST_COMPLETED
                )
                if dialog.done():
                    return
        finally:
            tab.dialog_waiters.discard(dialog)
            dialog.cancel()

    @staticmethod
    async def _until_done(record: Download, until: float) -> None:
        left = until - asyncio.get_running_loop().time()
        if left > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(record.finished.wait(), left)

    # ----------------------------------------------------------------- extensions
    @endpoint(
        {
            "name": "downloads_list",
            "method": "downloads-list",
            "description": "List the files downloaded (and PDFs made) while this host runs, oldest first: "
            "id, name, state (complete, in-progress, cancelled, blocked, failed), bytes, sha256, mimeType "
            "and the resource URI that MCP resources/read (or resources_read) returns the bytes of.",
            "inputSchema": schema({}, []),
            "mutates": False,
            "coordinator": "dedicated",
        }
    )
    async def downloads_list(self, params: Mapping[str, Any]) -> JsonObject:
        """``{}`` → ``{downloads: [...], truncated}`` (the newest :data:`LIST_LIMIT`)."""
        records = list(self.items.values())
        return {
            "success": True,
            "downloads": [r.report() for r in records[-LIST_LIMIT:]],
            "truncated": len(records) > LIST_LIMIT,
        }

    @endpoint(
        {
            "name": "resources_list",
            "method": "resources-list",
            "description": "List the complete files this host keeps (downloads, PDFs) as MCP resources "
            "{uri, name, mimeType, size}; what MCP resources/list answers.",
            "inputSchema": schema({"cursor": {"type": "string", "pattern": "^p[0-9]{1,9}$"}}, []),
            "mutates": False,
            "coordinator": "dedicated",
        }
    )
    async def resources_list(self, params: Mapping[str, Any]) -> JsonObject:
        """``{cursor?}`` → ``{resources, nextCursor?}`` (:data:`RESOURCE_PAGE` per page)."""
        complete = [r for r in self.items.values() if r.state == "complete"]
        cursor = params.get("cursor")
        start = int(cursor[1:]) if isinstance(cursor, str) else 0
        if start > len(complete):
            return fail("INVALID_PARAMS", f"unknown cursor {cursor!r}", mayHaveCompleted=False)
        page = complete[start : start + RESOURCE_PAGE]
        out: JsonObject = {"success": True, "resources": [r.listing() for r in page]}
        if start + RESOURCE_PAGE < len(complete):
            out["nextCursor"] = f"p{start + RESOURCE_PAGE}"
        return out

    @endpoint(
        {
            "name": "resources_read",
            "method": "resources-read",
            "description": "Read a complete download or PDF by its resource URI (kelpie://downloads/<id>): "
            f"text files as text, others as base64; at most {MAX_READ_BYTES // (1024 * 1024)} MiB. What MCP "
            "resources/read answers.",
            "inputSchema": schema(
                {"uri": {"type": "string", "pattern": f"^kelpie://downloads/{ID_PATTERN}$", "maxLength": 64}},
                ["uri"],
            ),
            "mutates": False,
            "coordinator": "dedicated",
        }
    )
    async def resources_read(self, params: Mapping[str, Any]) -> JsonObject:
        """``{uri}`` → ``{contents: [{uri, mimeType, text | blob}]}``; ``INVALID_PARAMS`` for a URI this
        host never issued or whose download is not complete; ``RESPONSE_TOO_LARGE`` over
        :data:`MAX_READ_BYTES`; ``RENDERER_FAILED`` when the file changed or went on disk."""
        uri = str(params.get("uri") or "")
        record = self.items.get(uri.removeprefix(URI_PREFIX)) if uri.startswith(URI_PREFIX) else None
        if record is None:
            return fail("INVALID_PARAMS", f"no resource {uri[:100]!r} on this host", mayHaveCompleted=False)
        if record.state != "complete" or record.path is None:
            return fail(
                "INVALID_PARAMS",
                f"{uri} is {record.state}: only complete files can be read",
                mayHaveCompleted=False,
            )
        size = record.bytes or 0
        if size > MAX_READ_BYTES:
            return fail(
                "RESPONSE_TOO_LARGE",
                f"{uri} is {size} bytes; reads return at most {MAX_READ_BYTES} bytes (the file is "
                f"{record.name!r} in the host's downloads folder)",
                mayHaveCompleted=False,
            )
        try:
            data = await asyncio.to_thread(record.path.read_bytes)
        except OSError as exc:
            return fail(
                "RENDERER_FAILED",
                f"{uri}: the file cannot be read: {exc.strerror or exc}",
                mayHaveCompleted=False,
            )
        if hashlib.sha256(data).hexdigest() != record.sha256:
            return fail(
                "RENDERER_FAILED",
                f"{uri}: the file changed on disk since it was saved",
                mayHaveCompleted=False,
            )
        content: JsonObject = {"uri": uri, "mimeType": record.mime}
        text = _as_text(data, record.mime)
        if text is not None:
            content["text"] = text
        else:
            content["blob"] = base64.b64encode(data).decode("ascii")
        return {"success": True, "contents": [content]}


def _failed(record: Download, failure: str) -> tuple[str, str]:
    """The state and reason of a download the browser ended without the host asking: CDP says
    ``canceled`` for a connection that broke off too (it has no "interrupted" state), so one that had
    received fewer bytes than the server announced is ``failed``, saying how far it got."""
    received, total = record.bytes or 0, record.total or 0
    if "cancel" not in failure:
        return "failed", failure
    if total and received < total:
        return "failed", f"the transfer broke off after {received} of {total} bytes"
    return "cancelled", f"cancelled by the browser ({failure})"


def _as_text(data: bytes, mime: str) -> str | None:
    if not (
        mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith("+json") or mime.endswith("+xml")
    ):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _size_and_digest(path: Path, cap: int) -> tuple[int, str]:
    """The file's size and SHA-256 (hex); a file over ``cap`` is not hashed (digest empty)."""
    size = path.stat().st_size
    if size > cap:
        return size, ""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return size, digest.hexdigest()
