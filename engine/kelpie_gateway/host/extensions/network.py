"""The network, captured per tab from the moment it opens (docs/host.md "The read-only lane"):
``network_requests``, read-only, bounded and value-free.

Capture: the context's Playwright ``request`` and ``requestfailed`` events (listened to when the context is made, so a popup's first requests are caught, and the requests of
its frames, out-of-process ones included, and of its dedicated workers) and each page's ``websocket``
event, routed to the tab of their page; per tab a ring of the newest :data:`RING` exchanges. An event
handler only notes facts Playwright already delivered (nothing is asked of the browser on the hot path).
The response, the end and the sizes of an exchange (and, when the operator allows them, its body) are
asked of Playwright when a read answers it: listening to ``response`` and ``requestfinished`` too made
Playwright build a response object per request during every page load, about 8 % more CPU on a navigation
of 22 requests (docs/performance.md "The read-only lane's capture"); asked at read time they cost the
read, not the load. So an exchange's end is not timed (``timing`` has its request and response starts).

What a read shows of an exchange: method, URL (``redaction.network_url``: userinfo never, query values and
the fragment redacted unless the operator passed ``--network-urls full``, and then still every
credential-named parameter), resource type, status, media type, sizes, timing, failure text, initiator
and, for a WebSocket, its frame counts — never a request body, never the value of ``Authorization``,
``Proxy-Authorization``, ``Cookie``, ``Set-Cookie`` or of any header whose name says token, key, secret,
password, auth, session or signature (``headers: true`` shows the others). Response bodies only on a host
started with ``--network-bodies`` and only when a call asks (``bodies: true``): text types, at most
:data:`BODY_MAX` bytes each, at most :data:`BODIES_MAX` exchanges per answer.

``initiator`` (Playwright does not say which script made a request): ``{"type": "navigation"}`` for a
document a frame navigates to, ``{"type": "redirect", "from": <seq>}`` for the next hop of a redirect,
``{"type": "document", "url": <the frame's URL, redacted>}`` for what a document fetched (its frame
``"main"`` or ``"subframe"``), ``{"type": "service-worker"}`` for a service worker's own fetch.
"""

from __future__ import annotations

import asyncio
import codecs
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import BrowserContext, Page, Request, Response, WebSocket

from kelpie_gateway.host.browser.chromium import endpoint
from kelpie_gateway.host.browser.common import Tab, state_of
from kelpie_gateway.host.renderer import JsonObject, Refused, fail

from .base import TAB, Extension, schema
from .journal import SINCE, Early, Ring, adopt, limit_schema, tab_state
from .redaction import header_value, network_url

RING = 1_000
READ_DEFAULT = 100
READ_MAX = 1_000
BODY_MAX = 64 * 1024
BODIES_MAX = 20
ORPHANS = 64
"""How many requests without a known frame yet (a popup's first document) wait to be entered."""
RECENT = 4_096
"""How many of the newest exchanges (of every tab) the capture can find by their request, to note a
response, an end or a redirect's next hop."""
LEARN_PATIENCE_S = 2.0
"""How long a read waits, the first time, for an exchange's response or sizes (Playwright answers at once
for an exchange that has them)."""
LEARN_AGAIN_S = 0.1
"""How long later reads wait for an exchange that did not answer in time once (a long poll, a stream, a
response whose body the page never read): such an exchange costs one read at most
:data:`LEARN_PATIENCE_S`, never every read."""
BODY_PATIENCE_S = 3.0
TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/javascript",
        "application/ecmascript",
        "application/xml",
        "application/xhtml+xml",
        "application/x-www-form-urlencoded",
        "application/ld+json",
        "image/svg+xml",
    }
)


@dataclass(slots=True, eq=False)
class Exchange:
    """One request (or WebSocket) as captured; ``request``/``response`` are kept for the read's sizes and
    bodies (and dropped with the exchange when the ring forgets it)."""

    seq: int
    method: str
    url: str
    resource_type: str
    start: float
    initiator: JsonObject
    request: Request | None = None
    response: Response | None = None
    status: int | None = None
    mime: str | None = None
    failure: str | None = None
    pending: bool = True
    timing: JsonObject | None = None
    sizes: JsonObject | None = None
    from_service_worker: bool = False
    frames_sent: int = 0
    frames_received: int = 0
    late: bool = False
    """A read already waited for this exchange in vain (:data:`LEARN_AGAIN_S`)."""


@dataclass
class NetworkState:
    """A tab's captured exchanges."""

    exchanges: Ring[Exchange] = field(default_factory=lambda: Ring(RING))


def _media(headers: Mapping[str, str]) -> str | None:
    value = headers.get("content-type")
    return value.split(";", 1)[0].strip().lower()[:200] if value else None


def is_text(mime: str | None) -> bool:
    """A media type whose body a read may show (``text/*``, JSON, XML, JavaScript, forms, SVG)."""
    if not mime:
        return False
    return mime.startswith("text/") or mime in TEXT_TYPES or mime.endswith(("+json", "+xml"))


class Network(Extension):
    """``network_requests``; see the module docstring."""

    def __init__(self, renderer: Any) -> None:
        super().__init__(renderer)
        self._early: Early[NetworkState] = Early(NetworkState)
        self._recent: OrderedDict[int, Exchange] = OrderedDict()
        self._orphans: dict[int, Exchange] = {}

    def _find(self, request: Request) -> Exchange | None:
        found = self._recent.get(id(request))
        return found if found is not None and found.request is request else None

    # ----------------------------------------------------------------- capture
    async def launched(self, context: BrowserContext) -> None:
        # Only the start and the failure of a request are listened to: a response or an end would make
        # Playwright send (and this process build) a response object per request on the hot path; a read
        # asks for what it answers instead (_learn).
        context.on("request", self._on_request)
        context.on("requestfailed", self._on_failed)

    def attached(self, tab: Tab) -> None:
        adopt(tab, self._early, NetworkState)
        self._settle()
        page = tab.page
        page.on("websocket", lambda ws: self._on_websocket(page, ws))

    def _state(self, page: Page | None) -> NetworkState | None:
        return tab_state(self.renderer.pages, self._early, page, NetworkState)

    @staticmethod
    def _page_of(request: Request) -> tuple[Page | None, JsonObject]:
        """The page that made ``request`` and what initiated it (without the redirect case)."""
        if request.service_worker is not None:
            return None, {"type": "service-worker"}
        try:
            frame = request.frame
        except Exception:  # a request Playwright knows no frame for
            return None, {"type": "other"}
        where = "main" if frame.parent_frame is None else "subframe"
        if request.is_navigation_request():
            return frame.page, {"type": "navigation", "frame": where}
        return frame.page, {"type": "document", "url": frame.url, "frame": where}

    def _on_request(self, request: Request) -> None:
        page, initiator = self._page_of(request)
        state = self._state(page)
        orphan = state is None and initiator["type"] == "other" and request.is_navigation_request()
        if state is None and not orphan:
            return
        before = request.redirected_from
        if before is not None:
            earlier = self._find(before)
            if earlier is not None and earlier.seq:
                initiator = {"type": "redirect", "from": earlier.seq, "frame": initiator.get("frame", "main")}
        exchange = Exchange(
            0, request.method, request.url, request.resource_type, time.time() * 1000, initiator, request
        )
        if state is not None:
            exchange.seq = state.exchanges.add(exchange)
        else:  # a popup's first document, requested before Playwright knows its frame (_settle)
            self._orphans[id(request)] = exchange
            while len(self._orphans) > ORPHANS:
                del self._orphans[next(iter(self._orphans))]
        recent = self._recent
        recent[id(request)] = exchange
        if len(recent) > RECENT:
            recent.popitem(last=False)

    def _settle(self) -> None:
        """Enter into their tabs' rings the exchanges that waited for their frame (a popup's first document:
        Playwright names its frame once the page exists), when it is known now."""
        for key, exchange in list(self._orphans.items()):
            request = exchange.request
            assert request is not None
            page, initiator = self._page_of(request)
            state = self._state(page) if page is not None and self.renderer.pages.of_page(page) else None
            if state is not None:
                exchange.initiator = initiator
                exchange.seq = state.exchanges.add(exchange)
                del self._orphans[key]

    def _on_failed(self, request: Request) -> None:
        exchange = self._find(request)
        if exchange is not None:
            exchange.pending = False
            exchange.failure = str(request.failure or "failed")[:500]
            exchange.timing = dict(request.timing)

    def _on_websocket(self, page: Page, ws: WebSocket) -> None:
        state = self._state(page)
        if state is None:
            return
        initiator: JsonObject = {"type": "document", "url": page.url, "frame": "main"}
        exchange = Exchange(0, "GET", ws.url, "websocket", time.time() * 1000, initiator)
        exchange.seq = state.exchanges.add(exchange)

        def sent(_payload: Any) -> None:
            exchange.frames_sent += 1

        def received(_payload: Any) -> None:
            exchange.frames_received += 1

        def closed(_ws: Any) -> None:
            exchange.pending = False

        def failed(error: Any) -> None:
            exchange.failure = str(error)[:500]

        ws.on("framesent", sent)
        ws.on("framereceived", received)
        ws.on("close", closed)
        ws.on("socketerror", failed)

    # ----------------------------------------------------------------- the read
    @endpoint(
        {
            "name": "network_requests",
            "method": "network-requests",
            "description": "Read the tab's network requests since it opened (read-only): method, url (query "
            "values and fragments redacted unless the operator allows full URLs), resource type, status, "
            "media type, sizes, timing, failure text and initiator; WebSockets with their frame counts. Never "
            "request bodies or credential headers. filter narrows by url text, resource types, methods or "
            "failed:true (failed or status >= 400); headers:true adds the headers (credentials redacted); "
            "bodies:true adds text response bodies (at most 64 KiB each, 20 requests) on a host started "
            "with --network-bodies. The tab keeps its newest 1000; pass next as since to read newer ones.",
            "inputSchema": schema(
                {
                    "tabId": TAB,
                    "since": SINCE,
                    "limit": limit_schema(READ_DEFAULT, READ_MAX),
                    "filter": schema(
                        {
                            "url": {"type": "string", "minLength": 1, "maxLength": 500},
                            "resourceTypes": {
                                "type": "array",
                                "items": {"type": "string", "minLength": 1, "maxLength": 32},
                                "minItems": 1,
                                "maxItems": 20,
                            },
                            "methods": {
                                "type": "array",
                                "items": {"type": "string", "minLength": 1, "maxLength": 32},
                                "minItems": 1,
                                "maxItems": 20,
                            },
                            "failed": {"type": "boolean"},
                        },
                        [],
                    ),
                    "headers": {"type": "boolean"},
                    "bodies": {"type": "boolean"},
                },
                ["tabId"],
            ),
            "mutates": False,
        }
    )
    async def network_requests(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, since?, limit?, filter?, headers?, bodies?}`` → ``{tabId, requests, next, more,
        dropped}``; ``bodies`` on a host without ``--network-bodies`` is refused ``NOT_AUTHORIZED``."""
        tab = self.renderer.pages.tab(params.get("tabId"))  # a crashed tab is read too
        self._settle()
        options = self.renderer.lane
        bodies = params.get("bodies") is True
        if bodies and not options.bodies:
            raise Refused(
                fail(
                    "NOT_AUTHORIZED",
                    "response bodies are off on this host (the operator starts it with --network-bodies)",
                    mayHaveCompleted=False,
                )
            )
        limit = int(params.get("limit") or READ_DEFAULT)
        if bodies:
            limit = min(limit, BODIES_MAX)
        accept = _matcher(params.get("filter") or {}, options.full_urls)
        page = state_of(tab, NetworkState).exchanges.read(int(params.get("since") or 0), limit, accept)
        exchanges = [e for _seq, e in page.entries]
        await self._learn(exchanges)
        out = [_shown(e, options.full_urls, params.get("headers") is True) for e in exchanges]
        if bodies:
            await asyncio.gather(*(self._body(e, item) for e, item in zip(exchanges, out, strict=True)))
        return {"success": True, "tabId": tab.tab_id, "requests": out, **page.cursor()}

    @staticmethod
    async def _learn(exchanges: list[Exchange]) -> None:
        """Ask Playwright, for each answered exchange still open, what the capture did not listen to: its
        response (status, media type, timing) and, once it ended, its sizes — all at once, each at most
        :data:`LEARN_PATIENCE_S`, or :data:`LEARN_AGAIN_S` for an exchange that kept a read waiting before
        (an exchange not ended by then is answered ``pending``)."""

        async def one(exchange: Exchange) -> None:
            request = exchange.request
            if request is None or not exchange.pending or exchange.failure is not None:
                return
            patience = LEARN_AGAIN_S if exchange.late else LEARN_PATIENCE_S
            if exchange.response is None:
                try:
                    response = await asyncio.wait_for(request.response(), patience)
                except TimeoutError:
                    exchange.late = True
                    return
                except Exception:  # none will come (a failure is noted by its event)
                    return
                if response is None:
                    return
                exchange.response = response
                exchange.status = response.status
                exchange.mime = _media(response.headers)
                exchange.from_service_worker = response.from_service_worker
            try:
                sizes = await asyncio.wait_for(request.sizes(), patience)
            except TimeoutError:
                exchange.late = True  # not ended yet: still pending
                return
            except Exception:
                return  # Playwright no longer knows it: still pending
            exchange.sizes = {k: v for k, v in sizes.items() if isinstance(v, int) and v >= 0}
            exchange.pending = False
            exchange.timing = dict(request.timing)

        jobs = [asyncio.ensure_future(one(e)) for e in exchanges]
        if jobs:
            await asyncio.wait(jobs, timeout=2 * LEARN_PATIENCE_S + 1)
            for job in jobs:
                job.cancel()

    @staticmethod
    async def _body(exchange: Exchange, item: JsonObject) -> None:
        response = exchange.response
        if response is None or exchange.pending or exchange.failure is not None:
            item["bodyOmitted"] = "no response body yet" if exchange.pending else "no response body"
            return
        if not is_text(exchange.mime):
            item["bodyOmitted"] = "not a text type"
            return
        try:
            data = await asyncio.wait_for(response.body(), BODY_PATIENCE_S)
        except Exception:
            item["bodyOmitted"] = "the browser no longer has it"
            return
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        item["body"] = decoder.decode(data[:BODY_MAX], final=len(data) <= BODY_MAX)
        if len(data) > BODY_MAX:
            item["bodyTruncated"] = True


def _matcher(flt: Mapping[str, Any], full: bool) -> Any:
    text = str(flt["url"]).lower() if flt.get("url") else None
    types = {str(t).lower() for t in flt.get("resourceTypes") or ()}
    methods = {str(m).upper() for m in flt.get("methods") or ()}
    failed = flt.get("failed") is True

    def accept(e: Exchange) -> bool:
        if types and e.resource_type not in types:
            return False
        if methods and e.method.upper() not in methods:
            return False
        if failed and e.failure is None and not (e.status is not None and e.status >= 400):
            return False
        return text is None or text in network_url(e.url, full=full).lower()

    return accept


def _shown(e: Exchange, full: bool, headers: bool) -> JsonObject:
    """What a read shows of exchange ``e`` (module docstring)."""
    initiator = dict(e.initiator)
    if "url" in initiator:
        initiator["url"] = network_url(str(initiator["url"]), full=full)
    item: JsonObject = {
        "seq": e.seq,
        "method": e.method,
        "url": network_url(e.url, full=full),
        "resourceType": e.resource_type,
        "pending": e.pending,
        "initiator": initiator,
        "time": round(e.start, 3),
    }
    if e.status is not None:
        item["status"] = e.status
    if e.mime:
        item["mimeType"] = e.mime
    if e.failure is not None:
        item["failure"] = e.failure
    if e.timing:
        timing = {
            key: round(float(e.timing[src]), 3)
            for key, src in (
                ("requestStartMs", "requestStart"),
                ("responseStartMs", "responseStart"),
                ("responseEndMs", "responseEnd"),
            )
            if isinstance(e.timing.get(src), int | float) and e.timing[src] >= 0
        }
        if timing:
            item["timing"] = timing
    if e.sizes:
        item["sizes"] = dict(e.sizes)
    if e.from_service_worker:
        item["fromServiceWorker"] = True
    if e.resource_type == "websocket":
        item["framesSent"], item["framesReceived"] = e.frames_sent, e.frames_received
    if headers:
        if e.request is not None:
            item["requestHeaders"] = _headers(e.request.headers, full)
        if e.response is not None:
            item["responseHeaders"] = _headers(e.response.headers, full)
    return item


def _headers(raw: Mapping[str, str], full: bool) -> JsonObject:
    shown: JsonObject = {}
    for name, value in list(raw.items())[:100]:
        shown[name[:200]] = header_value(name, str(value), full=full)
    return shown
