"""The isolated world: the part that runs the gateway's fixed scripts (``browser-control-evaluate``) in each
document's world ``KelpieBrowserControl`` (docs/host.md "Fixed scripts: one world per document"; CONTRACT.md §9).

* ``browser-control-evaluate`` runs the script in the isolated world ``KelpieBrowserControl`` of the tab's
  main frame: CDP ``Page.createIsolatedWorld`` once per document, then ``Runtime.evaluate`` with
  ``contextId``, ``returnByValue`` and ``awaitPromise``; a thrown script is ``RENDERER_FAILED``.
* Each tab's one CDP session (opened when the tab gets its page, before it navigates) registers
  :data:`NEW_DOCUMENT`, so Chromium makes the world of every new top-level document as the document is
  created and installs the snapshot, click and type bundles there; the host asks for the world's context id
  when the document commits, while it still loads. A script whose bundle the world holds is sent in its
  short form (:func:`kelpie_gateway.kept_script`), else whole; a script never depends on any of this (it
  installs its own bundle when the world lacks it), and a context that vanished in between is created again.
* The tab's session is :attr:`~kelpie_gateway.host.browser.common.Tab.cdp` (stopping a stuck script uses it).
* With ``--direct-cdp`` (``BrowserLink.direct``) each tab also gets a flat session on the host's own CDP
  connection (``direct.py``), and the main frame's fixed scripts (``run_script``: ``Runtime.evaluate`` with
  ``returnByValue``, in the world the Playwright session made) go over it, skipping Playwright's driver;
  everything else stays on the Playwright session (docs/host.md "Direct CDP").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from playwright.async_api import CDPSession
from playwright.async_api import Error as PlaywrightError

from kelpie_gateway import (
    WORLD_NAME,
    bundle_missing,
    bundle_slot,
    kept_script,
    new_document_script,
    preload_script,
    script_parameters,
)
from kelpie_gateway.host.renderer import JsonObject, fail

from .chromium import ChromiumRenderer, Part, endpoint
from .common import Tab, short, state_of
from .direct import DirectSession

if TYPE_CHECKING:
    from .frames import Frames

PRELOADED = ("snapshot", "click", "type")
"""The bundles every new top-level document's world gets as the document is created: what an agent's
first calls on a page are (a snapshot, then clicks and typing); the rich extensions' bundles install
with their first script."""
NEW_DOCUMENT = new_document_script(PRELOADED)
"""Registered once per tab (``Page.addScriptToEvaluateOnNewDocument`` with ``worldName``): Chromium makes
the world of every new top-level document and runs this in it before any page script (docs/host.md
"Fixed scripts: one world per document"). A constant text: compiled once per renderer process."""
PRELOAD = preload_script(PRELOADED)
"""The same installation run with ``Runtime.evaluate`` when a document commits that was created before the
tab's registration took effect (a popup's first document)."""


@dataclass
class DocumentWorld:
    """A document's isolated world: the tab's CDP session, the world's execution context id, and the
    bundle slots the host expects the world to hold (:func:`kelpie_gateway.kept_script`: a script whose
    slot is here is sent in its short form; a world that turns out not to hold it drops it)."""

    cdp: CDPSession
    context_id: int
    kept: set[str] = field(default_factory=set)
    direct: DirectSession | None = None
    """The tab's direct CDP session (``--direct-cdp``) when this is a main-frame world: fixed scripts go over
    it while it lasts; None otherwise (frames' worlds, no direct connection)."""
    tagged: set[str] = field(default_factory=set)
    """The frames whose elements the host tagged in this world (``frames.py``; docs/reader.md "Frames")."""
    framed: bool = False
    """Whether this world knows its document's frame depth (the tags' global exists)."""


@dataclass
class TabWorld:
    """What the world part keeps per tab: the future opening its CDP session (``Tab.cdp`` once open), whether
    :data:`NEW_DOCUMENT` runs in its new documents, the main frame's CDP id (fetched once per session) and
    the current document's worlds by name (until the next main-frame navigation, crash or a vanished
    context)."""

    session: asyncio.Future[CDPSession] | None = field(default=None, repr=False)
    registered: bool = False
    frame_id: str | None = None
    worlds: dict[str, asyncio.Future[DocumentWorld]] = field(default_factory=dict)
    direct: DirectSession | None = None
    """The page's flat session on the host's direct CDP connection (``--direct-cdp``), else None."""

    def reset(self, tab: Tab) -> None:
        """A new page, or a crashed one: nothing of the old session or its worlds is used again."""
        self.worlds.clear()
        tab.cdp, self.frame_id, self.session, self.registered = None, None, None, False
        old, self.direct = self.direct, None
        if old is not None:
            old.gone = old.gone or "the tab's page was replaced"
            old.connection.sessions.pop(old.session_id, None)


DOCUMENT_GONE = ("Inspected target navigated or closed", "Execution context was destroyed")
"""What Chromium answers an evaluation whose document went away under it (a navigation committed, often in
another renderer process, before the event saying so reached the host)."""


def _document_gone(exc: Exception) -> bool:
    return any(text in str(exc) for text in DOCUMENT_GONE)


def _retrieved(done: asyncio.Future[Any]) -> None:
    """A done callback: the future's exception counts as retrieved (it is awaited when used)."""
    if not done.cancelled():
        done.exception()


class World(Part):
    """The isolated world of each tab's current document; see the module docstring."""

    def __init__(self, renderer: ChromiumRenderer) -> None:
        super().__init__(renderer)
        from .frames import Frames  # it builds on this module's worlds

        self.frames: Frames = Frames(self)

    @staticmethod
    def of(tab: Tab) -> TabWorld:
        return state_of(tab, TabWorld)

    # ----------------------------------------------------------------- tab events
    def attached(self, tab: Tab) -> None:
        self.of(tab).reset(tab)
        self.frames.attached(tab)
        if self.renderer.context is not None:  # before its first navigation: every document is prepared
            tab.pending.append(self._start_session(tab))

    def navigated(self, tab: Tab) -> None:
        # A new document: its world is made now, while it loads (a same-document change finds it as it was).
        self.of(tab).worlds.clear()
        self.frames.reset(tab)  # every frame's document went with the main frame's
        if not tab.crashed and self.renderer.context is not None:
            self._prepare(tab)

    def crashed(self, tab: Tab) -> None:
        self.of(tab).reset(tab)
        self.frames.reset(tab)

    def closed(self, tab: Tab) -> None:
        self.frames.reset(tab)

    # ----------------------------------------------------------------- sessions and worlds
    def _prepare(self, tab: Tab, name: str = WORLD_NAME) -> asyncio.Future[DocumentWorld]:
        """Start making world ``name`` for the tab's current document and return its future."""
        made = asyncio.ensure_future(self._make_world(tab, name))
        made.add_done_callback(_retrieved)
        self.of(tab).worlds[name] = made
        return made

    def _start_session(self, tab: Tab) -> asyncio.Future[CDPSession]:
        """Open the tab's CDP session (one per page, reused) and register :data:`NEW_DOCUMENT` there."""
        session = asyncio.ensure_future(self._open_session(tab))
        session.add_done_callback(_retrieved)
        self.of(tab).session = session
        return session

    async def _open_session(self, tab: Tab) -> CDPSession:
        context = self.renderer.context
        assert context is not None
        page = tab.page
        session = await context.new_cdp_session(page)
        if tab.page is not page:  # replaced (crash) meanwhile
            with contextlib.suppress(Exception):
                await session.detach()
            raise PlaywrightError("the tab's page was replaced")
        tab.cdp, self.of(tab).frame_id = session, None
        self.frames.listen(tab, session)
        gone = tab.main_gone
        session.on("Inspector.targetCrashed", lambda _event: gone.set())
        # Best effort: without it each document gets its bundles when it commits (PRELOAD), or with its
        # first script. Page.enable is what makes Chromium run a session's new-document scripts.
        with contextlib.suppress(PlaywrightError):
            await session.send("Page.enable")
            await session.send(
                "Page.addScriptToEvaluateOnNewDocument", {"source": NEW_DOCUMENT, "worldName": WORLD_NAME}
            )
            self.of(tab).registered = tab.page is page
        await self._attach_direct(tab, session)
        return session

    async def _attach_direct(self, tab: Tab, session: CDPSession) -> None:
        """Best effort: the page's flat session on the host's direct CDP connection, if there is one; without
        it the tab's scripts go through ``session`` (Playwright's), exactly as without ``--direct-cdp``."""
        direct = self.renderer.lifecycle.link.direct
        if direct is None or direct.closed:
            return
        page = tab.page
        try:
            info = await session.send("Target.getTargetInfo")
            flat = await direct.attach(str(info["targetInfo"]["targetId"]))
        except (PlaywrightError, KeyError, TypeError):
            return
        if tab.page is not page or tab.cdp is not session:
            await flat.detach()
            return
        with contextlib.suppress(PlaywrightError):
            await flat.send("Inspector.enable")  # so a renderer crash fails a pending script at once
        self.of(tab).direct = flat

    async def session(self, tab: Tab) -> CDPSession:
        """The tab's one CDP session (:attr:`Tab.cdp`), for a part that sends CDP commands to the tab's
        target itself (native input: ``host/extensions/pointer.py``); opened again when opening it failed.
        Raises PlaywrightError when it cannot be had (the page replaced or closed)."""
        return await self._session_of(tab)

    def direct_session(self, tab: Tab) -> DirectSession | None:
        """The tab's live flat session on the host's direct CDP connection (``--direct-cdp``), else None: a
        part may send commands to the tab's target over it that need none of Playwright's bookkeeping
        (native input's ``Input`` events)."""
        direct = self.of(tab).direct
        return direct if direct is not None and direct.gone is None else None

    async def _session_of(self, tab: Tab) -> CDPSession:
        made = self.of(tab).session
        if made is None or (made.done() and (made.cancelled() or made.exception() is not None)):
            made = self._start_session(tab)
        return await asyncio.shield(made)

    async def _make_world(self, tab: Tab, name: str) -> DocumentWorld:
        page = tab.page
        registered = self.of(tab).registered  # this document was created with NEW_DOCUMENT in place
        cdp = await self._session_of(tab)
        state = self.of(tab)
        if tab.page is not page or tab.cdp is not cdp:
            raise PlaywrightError("the tab's page was replaced")
        for attempt in range(2):
            if state.frame_id is None:
                tree = await cdp.send("Page.getFrameTree")
                state.frame_id = str(tree["frameTree"]["frame"]["id"])
            try:
                # The world of that name in the current document: the one NEW_DOCUMENT ran in, if it did.
                made = await cdp.send(
                    "Page.createIsolatedWorld",
                    {"frameId": state.frame_id, "worldName": name, "grantUniveralAccess": False},
                )
                break
            except PlaywrightError:
                if attempt:
                    raise
                state.frame_id = None  # ask the frame tree again, once
        world = DocumentWorld(cdp, int(made["executionContextId"]), direct=state.direct)
        if name == WORLD_NAME:
            if not registered:
                # Best effort: a failure here only means the first script compiles its own bundle.
                try:
                    await cdp.send(
                        "Runtime.evaluate",
                        {"expression": PRELOAD, "contextId": world.context_id, "returnByValue": True},
                    )
                except PlaywrightError:
                    return world
            world.kept.update(bundle_slot(bundle) for bundle in PRELOADED)
        return world

    async def world(self, tab: Tab, name: str = WORLD_NAME) -> DocumentWorld:
        """World ``name`` of the tab's current document (made at most once per document). Raises
        PlaywrightError when it cannot be had (the page replaced, a context gone)."""
        made = self.of(tab).worlds.get(name)
        if made is None or (made.done() and (made.cancelled() or made.exception() is not None)):
            made = self._prepare(tab, name)
        return await asyncio.shield(made)

    # ----------------------------------------------------------------- endpoints
    @endpoint("browser-control-evaluate")
    async def evaluate(self, params: Mapping[str, Any]) -> JsonObject:
        tab = self.renderer.pages.named(params)
        script = params.get("script")
        if not isinstance(script, str):
            return fail("RENDERER_FAILED", "browser-control-evaluate needs a script", mayHaveCompleted=False)
        world_name = str(params.get("world") or WORLD_NAME)
        generation = tab.generation  # the document the script runs in (reported when it did not change)
        parsed = script_parameters(script) if world_name == WORLD_NAME else None
        if parsed is not None and self.frames.takes(tab, parsed):  # frames, or a handle of a frame's document
            answer = await self.frames.evaluate(tab, script, parsed, params)
        else:
            answer = await self.run_main(tab, world_name, script, generation)
        if answer.get("success") is True and tab.generation == generation:
            answer["generation"] = generation
        return answer

    async def run_main(
        self, tab: Tab, world_name: str, script: str, generation: int | None = None
    ) -> JsonObject:
        """Run `script` in world `world_name` of the tab's main-frame document: ``{success:true, value}`` or a
        failure (a thrown script, a context that kept vanishing; ``RENDERER_CHANGED`` when the document went
        away under it: the tab's ``generation``, as it was when the call began, moved or the context was
        destroyed by a navigation)."""
        if generation is None:
            generation = tab.generation
        short_form = kept_script(script)  # (slot, expression): the script without its bundle
        for attempt in range(2):
            world = await self.world(tab, world_name)
            try:
                reply = await self.run_script(world, script, short_form)
            except PlaywrightError as exc:
                # The document changed between world creation and evaluation: nothing ran; once more.
                if "Cannot find context" in str(exc) and attempt == 0:
                    self.of(tab).worlds.pop(world_name, None)
                    continue
                gone = tab.crashed or tab.page.is_closed()
                if not gone and (tab.generation != generation or _document_gone(exc)):
                    # The document went away under the script (a navigation committed meanwhile): what the
                    # script did there is unknown to the host, but the tab is on another document now.
                    return fail(
                        "RENDERER_CHANGED", f"the tab's document changed during the script: {short(exc)}"
                    )
                return fail("RENDERER_FAILED", short(exc))
            details = reply.get("exceptionDetails")
            if details:
                text = details.get("exception", {}).get("description") or details.get("text") or "exception"
                return fail("RENDERER_FAILED", f"the fixed script threw: {short(text)}")
            return {"success": True, "value": reply.get("result", {}).get("value")}
        return fail("RENDERER_FAILED", "the tab's document kept changing", mayHaveCompleted=False)

    @staticmethod
    async def run_script(world: DocumentWorld, script: str, short_form: tuple[str, str] | None) -> JsonObject:
        """``Runtime.evaluate`` of the script in ``world``, exactly once: its short form when the world is
        expected to hold its bundle; if it does not after all (that form then ran nothing), the whole
        script. Raises PlaywrightError as ``CDPSession.send`` does."""
        params = {"contextId": world.context_id, "returnByValue": True, "awaitPromise": True}
        direct = world.direct
        sender: CDPSession | DirectSession = world.cdp if direct is None or direct.gone else direct
        if short_form is not None and short_form[0] in world.kept:
            reply: JsonObject = await sender.send("Runtime.evaluate", {"expression": short_form[1], **params})
            if reply.get("exceptionDetails") or not bundle_missing(
                reply.get("result", {}).get("value"), short_form[0]
            ):
                return reply
            world.kept.discard(short_form[0])
        reply = await sender.send("Runtime.evaluate", {"expression": script, **params})
        if short_form is not None and not reply.get("exceptionDetails"):
            world.kept.add(short_form[0])  # the script's loader found or installed it
        return reply
