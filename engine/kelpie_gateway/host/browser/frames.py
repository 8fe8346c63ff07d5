"""Frames: every frame of a tab read in its own isolated world, and every script that carries a handle run
in the world of the document that handle belongs to (CONTRACT.md §9 v1.2 "Frames"; docs/host.md "Frames:
every frame in its own world", docs/reader.md "Frames").

* **The frame tree** of a tab, at a snapshot: the main session's ``Page.getFrameTree`` (the frames its
  renderer process holds) and, for each out-of-process frame, a CDP session of its own
  (``context.new_cdp_session(frame)``, kept per Playwright frame) and that session's tree, whose root names
  its parent frame. A tab whose page has no frame skips all of it.
* **Tagging**: before a document's world reads, its child frames' elements are tagged in that world
  (``DOM.getFrameOwner``, ``DOM.resolveNode`` into the world, one ``Runtime.callFunctionOn`` of
  :data:`kelpie_gateway.FRAME_TAG_FUNCTION`), once per frame and world.
* **Reading**: the root's answer wants frames; they are read breadth-first as parts
  (:func:`kelpie_gateway.frame_part_script`), each in its own world, all frames of one depth at once;
  then each document gets its frames' outcomes (:func:`kelpie_gateway.frame_compose_script`), deepest
  first, until the root answers its page. At most :data:`MAX_FRAMES` frame documents per snapshot and
  :data:`MAX_DEPTH` deep (``"limit"``); a frame showing the error page of a URL the site policy refuses is
  not read (``"blocked-by-policy"``); one that cannot be read in what is left of the call's deadline is
  ``"unavailable"``.
* **Routing**: a handle is ``<registry nonce>-<n>``; the part answers say each frame document's nonce, and
  a later script with a handle, scope or cursor of that nonce runs in that document's world. A document
  that ended (its frame navigated or was removed, its renderer crashed) refuses it with nothing sent:
  ``NODE_REPLACED`` (``STALE_SNAPSHOT`` for a cursor), ``mayHaveCompleted:false``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from playwright.async_api import CDPSession, Frame
from playwright.async_api import Error as PlaywrightError

from kelpie_gateway import (
    FRAME_TAG_FUNCTION,
    FRAME_WANTS,
    WORLD_NAME,
    frame_compose_script,
    frame_part_script,
    kept_script,
)
from kelpie_gateway.host.renderer import JsonObject, Refused, fail

from .common import Tab, quiet, short, state_of, timeout_ms

if TYPE_CHECKING:
    from .world import DocumentWorld, World

MAX_FRAMES = 64
"""Frame documents read for one snapshot (breadth-first, in page order); past that: ``"limit"``."""
MAX_DEPTH = 8
"""The deepest frame read (1: a frame of the tab's top document); deeper: ``"limit"``."""
MARGIN_S = 0.5
"""What a frame read leaves of the call's ``timeoutMs``, so that the snapshot still answers in time."""
NONCES_KEPT = 4096
"""Frame documents remembered per tab for routing (the oldest are forgotten first)."""
ROUNDS = 16
"""Rounds of wants one document may answer for one page (each round tells it more; a guard, not a limit
a page can reach: a page's wants are met in one or two)."""
OBJECT_GROUP = "kelpie-frames"
NO_SESSION = "does not have a separate CDP session"
T = TypeVar("T")


@dataclass(eq=False)
class FrameInfo:
    """One frame of the tree as a snapshot found it: its id, its parent's, the session of the process that
    renders it, its document's ``loaderId``, for an error page the URL that could not be loaded, and its URL."""

    frame_id: str
    parent_id: str | None
    session: CDPSession
    loader_id: str | None
    unreachable: str | None
    url: str | None = None


@dataclass(eq=False)
class FrameDoc:
    """One document of one frame: where its world is, how deep it is, whether it is still the frame's
    document (``alive``), and the document holding its frame element (``parent``, as the snapshot that read
    it found it). ``main``: the tab's top document (its world is the world part's own)."""

    frame_id: str
    session: CDPSession
    depth: int
    loader_id: str | None
    main: bool = False
    world: DocumentWorld | None = None
    alive: bool = True
    parent: FrameDoc | None = None


@dataclass
class TabFrames:
    """Per tab: each frame's current document, the documents by registry nonce (for routing), and each
    Playwright frame's own session (None: it has none, it is rendered in its parent's process)."""

    docs: dict[str, FrameDoc] = field(default_factory=dict)
    nonces: OrderedDict[str, FrameDoc] = field(default_factory=OrderedDict)
    sessions: dict[int, tuple[Frame, CDPSession | None, str | None]] = field(default_factory=dict)


@dataclass(eq=False)
class Node:
    """One document's part of a snapshot being read: its document, the script it runs next, whether its
    answers are a part's (``part``), its last answer, and the frames its last answer wanted (tag → child
    node, or the outcome fixed without reading: a placeholder or a refusal)."""

    doc: FrameDoc
    script: str
    part: bool
    cursor: bool = False
    value: Any = None
    failed: JsonObject | None = None
    children: list[tuple[str, Node | JsonObject]] = field(default_factory=list)


class _Gone(Exception):
    """The document's world went away before the script ran (nothing ran)."""


def wants(value: Any) -> list[Any] | None:
    """The frames a snapshot's answer wants (:data:`kelpie_gateway.FRAME_WANTS`), or None for a page."""
    found = value.get(FRAME_WANTS) if isinstance(value, dict) else None
    return found if isinstance(found, list) else None


def _nonce(handle: Any) -> str | None:
    return handle.split("-", 1)[0] if isinstance(handle, str) and "-" in handle else None


class Frames:
    """The frames of every tab, for the isolated-world part (see the module docstring)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.renderer = world.renderer

    @staticmethod
    def of(tab: Tab) -> TabFrames:
        return state_of(tab, TabFrames)

    # ----------------------------------------------------------------- the tab's events
    def attached(self, tab: Tab) -> None:
        """A new page: forget everything, and follow its frames' navigations."""
        self.reset(tab)
        page = tab.page
        page.on("framenavigated", lambda frame: self._frame_moved(tab, frame) if tab.page is page else None)
        page.on("framedetached", lambda frame: self._frame_moved(tab, frame) if tab.page is page else None)

    def listen(self, tab: Tab, session: CDPSession) -> None:
        """The main session's page events: an in-process frame's new document or removal ends its document."""
        session.on("Page.frameNavigated", lambda e: self._ended(tab, str(e.get("frame", {}).get("id"))))
        session.on("Page.frameDetached", lambda e: self._ended(tab, str(e.get("frameId"))))

    def reset(self, tab: Tab) -> None:
        """The main frame's document changed (or the page went): every frame document ended."""
        state = self.of(tab)
        for doc in state.docs.values():
            doc.alive = False
        for _frame, session, _id in state.sessions.values():
            if session is not None:
                self.renderer.spawn(quiet(session.detach()))
        state.docs.clear()
        state.nonces.clear()
        state.sessions.clear()

    def _ended(self, tab: Tab, frame_id: str) -> None:
        doc = self.of(tab).docs.pop(frame_id, None)
        if doc is not None:
            doc.alive = False

    def _frame_moved(self, tab: Tab, frame: Frame) -> None:
        """A Playwright frame navigated or went: an out-of-process one's document ended, and the frame may
        now be rendered elsewhere (its own session, if any, is asked again)."""
        if frame == tab.page.main_frame:
            return
        entry = self.of(tab).sessions.pop(id(frame), None)
        if entry is None:
            return
        _frame, session, frame_id = entry
        if frame_id is not None:
            self._ended(tab, frame_id)
        if session is not None:
            self.renderer.spawn(quiet(session.detach()))

    def _crashed(self, tab: Tab, session: CDPSession) -> None:
        for doc in self.of(tab).docs.values():
            if doc.session is session:
                doc.alive = False

    # ----------------------------------------------------------------- which scripts come here
    def takes(self, tab: Tab, parsed: tuple[str, dict[str, Any]]) -> bool:
        """Whether a script of this build (bundle name, parameters) is this part's: a snapshot of a tab with
        frames, or any script whose handle, scope or cursor belongs to a frame's document."""
        name, params = parsed
        if self._routed_nonce(params) in self.of(tab).nonces:
            return True
        return name == "snapshot" and len(tab.page.frames) > 1

    @staticmethod
    def _routed_nonce(params: Mapping[str, Any]) -> str | None:
        cursor = params.get("cursor")
        if isinstance(cursor, Mapping):
            return _nonce(cursor.get("snapshot"))
        handles = params.get("handles")  # a native-input report: its handles are of one document
        first = handles[0] if isinstance(handles, list) and handles else None
        return _nonce(params.get("handle") or params.get("scope") or first)

    def route(self, tab: Tab, params: Mapping[str, Any]) -> FrameDoc | None:
        """The frame document a script's handle, scope or cursor belongs to (None: the main document's, or
        not one of a frame this host read). Raises :class:`Refused` with nothing run when that document
        ended: ``NODE_REPLACED``, ``STALE_SNAPSHOT`` for a cursor, ``mayHaveCompleted:false``."""
        doc = self.of(tab).nonces.get(self._routed_nonce(params) or "")
        if doc is None:
            return None
        if not doc.alive:
            raise Refused(self._gone(params))
        return doc

    @staticmethod
    def _gone(params: Mapping[str, Any]) -> JsonObject:
        if isinstance(params.get("cursor"), Mapping):
            return fail(
                "STALE_SNAPSHOT",
                "the frame this snapshot continues in has a new document (it navigated, was removed or its "
                "renderer went); take a new tab.snapshot",
                mayHaveCompleted=False,
            )
        return fail(
            "NODE_REPLACED",
            "the element's frame has a new document (it navigated, was removed or its renderer went); "
            "nothing was done; take a new snapshot",
            mayHaveCompleted=False,
        )

    def lineage(self, tab: Tab, handle: str) -> list[FrameDoc]:
        """For native input (docs/host.md "Native input in frames"): the documents from the tab's top one
        down to the frame document `handle` belongs to — ``[]`` for a handle of the top document (or of no
        frame this host read). Raises :class:`Refused` (``NODE_REPLACED``, nothing run) when that document
        or one above it ended."""
        doc = self.of(tab).nonces.get(_nonce(handle) or "")
        chain: list[FrameDoc] = []
        while doc is not None and not doc.main:
            if not doc.alive or len(chain) > MAX_DEPTH:
                raise Refused(self._gone({}))
            chain.append(doc)
            doc = doc.parent
        if doc is None and chain:  # read under a scope whose root was a frame: its parents are not known
            raise Refused(self._gone({}))
        return chain[::-1]

    async def run_in(self, tab: Tab, doc: FrameDoc | None, script: str) -> JsonObject:
        """Run `script` in `doc`'s world (None or the top document: the tab's main world); never raises but
        :class:`Refused`."""
        if doc is None or doc.main:
            return await self.world.run_main(tab, WORLD_NAME, script)
        if not doc.alive:
            raise Refused(self._gone({}))
        return await self._act(doc, script, {})

    # ----------------------------------------------------------------- evaluate
    async def evaluate(
        self, tab: Tab, script: str, parsed: tuple[str, dict[str, Any]], params: Mapping[str, Any]
    ) -> JsonObject:
        """``browser-control-evaluate`` of a script this part takes (:meth:`takes`); never raises but
        :class:`Refused`."""
        name, p = parsed
        deadline = asyncio.get_running_loop().time() + timeout_ms(params) / 1000 - MARGIN_S
        routed = self.route(tab, p)
        if name != "snapshot":
            assert routed is not None
            return await self._act(routed, script, p)
        infos: dict[str, FrameInfo] = {}
        if "cursor" not in p and len(tab.page.frames) > 1:
            infos = await self._tree(tab, deadline)
        root_doc = routed if routed is not None else self._main_doc(tab, infos)
        root = Node(root_doc, script, part=False, cursor="cursor" in p)
        key = p.get("key")
        if not isinstance(key, str):
            return fail("RENDERER_FAILED", "a snapshot script without its key", mayHaveCompleted=False)
        if not root.cursor:
            with contextlib.suppress(PlaywrightError, asyncio.TimeoutError, _Gone):
                await self._bounded(self._tag(tab, root_doc, infos), deadline)
        await self._run(tab, root, None)
        if root.failed is not None:
            return root.failed
        await self._settle(tab, key, [root], [0], infos, deadline)
        if root.failed is not None:
            return root.failed
        if wants(root.value) is not None:
            return fail(
                "RENDERER_FAILED", "the snapshot's frames could not be composed", mayHaveCompleted=False
            )
        return {"success": True, "value": root.value}

    async def _act(self, doc: FrameDoc, script: str, p: Mapping[str, Any]) -> JsonObject:
        """Run an action (or any script but a snapshot) in a frame document's world."""
        try:
            reply = await self._send(doc, script)
        except _Gone:
            return self._gone(p)
        except PlaywrightError as exc:  # the world was there; what ran is unknown (the engine says so)
            return fail("RENDERER_FAILED", short(exc))
        return self._answer(reply)

    @staticmethod
    def _answer(reply: JsonObject) -> JsonObject:
        details = reply.get("exceptionDetails")
        if details:
            text = details.get("exception", {}).get("description") or details.get("text") or "exception"
            return fail("RENDERER_FAILED", f"the fixed script threw: {short(text)}")
        return {"success": True, "value": reply.get("result", {}).get("value")}

    async def _send(self, doc: FrameDoc, script: str) -> JsonObject:
        """``Runtime.evaluate`` of `script` in `doc`'s world, once. Raises :class:`_Gone` when the document
        ended before it ran (nothing ran), PlaywrightError for anything else."""
        from .world import World

        world = await self._doc_world(doc)
        try:
            reply: JsonObject = await World.run_script(world, script, kept_script(script))
        except PlaywrightError as exc:
            if "Cannot find context" in str(exc):
                doc.alive = False
                raise _Gone from exc
            raise
        return reply

    async def _run(self, tab: Tab, node: Node, deadline: float | None) -> None:
        """Run `node`'s script once; its answer goes to ``node.value`` (or ``node.failed``), and a part's
        answer teaches the document's registry nonce."""
        node.value = node.failed = None
        try:
            if node.doc.main:
                result = await self.world.run_main(tab, WORLD_NAME, node.script)
            else:
                result = self._answer(await self._bounded(self._send(node.doc, node.script), deadline))
        except (TimeoutError, _Gone, PlaywrightError) as exc:
            result = fail("RENDERER_FAILED", short(exc) if str(exc) else "the frame's document is gone")
        if result.get("success") is not True:
            node.failed = result
            return
        node.value = result.get("value")
        part = node.value.get("part") if isinstance(node.value, dict) else None
        nonce = part.get("nonce") if isinstance(part, dict) else None
        if isinstance(nonce, str) and not node.doc.main:
            nonces = self.of(tab).nonces
            nonces[nonce] = node.doc
            nonces.move_to_end(nonce)
            while len(nonces) > NONCES_KEPT:
                nonces.popitem(last=False)

    @staticmethod
    async def _bounded(aw: Awaitable[T], deadline: float | None) -> T:
        if deadline is None:
            return await aw
        return await asyncio.wait_for(aw, max(0.05, deadline - asyncio.get_running_loop().time()))

    # ----------------------------------------------------------------- reading the frames a snapshot wants
    async def _settle(
        self,
        tab: Tab,
        key: str,
        nodes: list[Node],
        budget: list[int],
        infos: dict[str, FrameInfo],
        deadline: float,
    ) -> None:
        """Until no node of `nodes` (one depth) wants anything: read the frames they want (breadth-first:
        this depth's wants in order, then the next depth's), then give each its frames' outcomes."""
        waiting = [n for n in nodes if n.failed is None and wants(n.value) is not None]
        for _round in range(ROUNDS):
            if not waiting:
                return
            level: list[Node] = []
            for node in waiting:
                node.children = []
                for want in wants(node.value) or []:
                    child = self._child(tab, key, node, want, budget, infos)
                    node.children.append((str(want.get("frame") if isinstance(want, dict) else ""), child))
                    if isinstance(child, Node):
                        level.append(child)
            await asyncio.gather(*(self._first(tab, child, infos, deadline) for child in level))
            await self._settle(tab, key, level, budget, infos, deadline)
            await asyncio.gather(*(self._compose(tab, key, node, deadline) for node in waiting))
            waiting = [n for n in waiting if n.failed is None and wants(n.value) is not None]
        for node in waiting:
            node.failed = fail("RENDERER_FAILED", "a frame's read did not settle", mayHaveCompleted=False)

    def _child(
        self,
        tab: Tab,
        key: str,
        parent: Node,
        want: Any,
        budget: list[int],
        infos: dict[str, FrameInfo],
    ) -> Node | JsonObject:
        """The node reading what `want` asks of a frame, or the outcome fixed without reading it."""
        if not isinstance(want, dict):
            return {"unreadable": "unavailable"}
        cursor = want.get("cursor")
        chars, elements = want.get("maxChars"), want.get("maxElements")
        if not (isinstance(chars, int) and isinstance(elements, int)):
            return {"unreadable": "unavailable"}
        try:
            if isinstance(cursor, dict):  # a later page of a frame's own read: its document must be the same
                doc = self.of(tab).nonces.get(_nonce(cursor.get("snapshot")) or "")
                if doc is None or not doc.alive:
                    return {"error": self._gone({"cursor": cursor})["error"]}
                script = frame_part_script(key, max_chars=chars, max_elements=elements, cursor=cursor)
                return Node(doc, script, part=True, cursor=True)
            info = infos.get(str(want.get("frame")))
            if info is None:
                return {"unreadable": "unavailable"}
            depth = parent.doc.depth + 1
            if depth > MAX_DEPTH or budget[0] >= MAX_FRAMES:
                return {"unreadable": "limit"}
            if self._blocked(info):
                return {"unreadable": "blocked-by-policy"}
            script = frame_part_script(key, max_chars=chars, max_elements=elements)
        except ValueError:  # a want this build's reader cannot have made
            return {"unreadable": "unavailable"}
        budget[0] += 1
        return Node(self._doc_for(tab, info, depth, parent.doc), script, part=True)

    def _blocked(self, info: FrameInfo) -> bool:
        """Whether the frame shows what the site policy put in place of its document: the browser's error
        page for a refused tunnel (``unreachableUrl``) or the policy proxy's refusal for a refused plain
        request (the frame's URL is then the refused one)."""
        policy = self.renderer.policy
        if policy is None or not policy.restrictive:
            return False
        return any(url and policy.refusal(url) is not None for url in (info.unreachable, info.url))

    async def _first(self, tab: Tab, node: Node, infos: dict[str, FrameInfo], deadline: float) -> None:
        """A frame's first script: its own frames tagged, then its read."""
        if not node.cursor:
            try:
                await self._bounded(self._tag(tab, node.doc, infos), deadline)
            except (TimeoutError, _Gone, PlaywrightError) as exc:
                node.failed = fail("RENDERER_FAILED", short(exc) if str(exc) else "the frame is gone")
                return
        await self._run(tab, node, deadline)

    async def _compose(self, tab: Tab, key: str, node: Node, deadline: float) -> None:
        outcomes = [(tag, self._outcome(child)) for tag, child in node.children]
        node.script = frame_compose_script(key, outcomes, part=node.part)
        await self._run(tab, node, None if node.doc.main else deadline)

    @staticmethod
    def _outcome(child: Node | JsonObject) -> Any:
        """What a document is told of one frame it wanted."""
        if not isinstance(child, Node):
            return child
        if child.failed is None and isinstance(child.value, dict) and wants(child.value) is None:
            if not isinstance(child.value.get("error"), dict):
                return child.value
            if child.cursor:
                return {"error": child.value["error"]}
        if child.cursor:
            return {"error": {"code": "STALE_SNAPSHOT", "message": "the frame's document is gone"}}
        return {"unreadable": "unavailable"}

    # ----------------------------------------------------------------- the tree, documents and tags
    async def _tree(self, tab: Tab, deadline: float) -> dict[str, FrameInfo]:
        """Every frame of the tab, by id (best effort: a frame whose session or tree cannot be had is left
        out, and so stays a placeholder)."""
        infos: dict[str, FrameInfo] = {}
        main = tab.cdp
        if main is None:
            return infos
        try:
            tree = await self._bounded(main.send("Page.getFrameTree"), deadline)
        except (TimeoutError, PlaywrightError):
            return infos
        self._add(infos, tree["frameTree"], main, None)
        frames = [f for f in tab.page.frames if f != tab.page.main_frame]
        sessions = await asyncio.gather(*(self._own_session(tab, f, deadline) for f in frames))
        own = [(f, s) for f, s in zip(frames, sessions, strict=True) if s is not None]
        trees = await asyncio.gather(
            *(self._bounded(s.send("Page.getFrameTree"), deadline) for _f, s in own), return_exceptions=True
        )
        state = self.of(tab)
        for (frame, session), got in zip(own, trees, strict=True):
            if isinstance(got, BaseException) or not isinstance(got, dict):
                state.sessions.pop(id(frame), None)  # asked again next time
                continue
            root = got["frameTree"]
            parent = root["frame"].get("parentId")
            self._add(infos, root, session, str(parent) if parent else None)
            state.sessions[id(frame)] = (frame, session, str(root["frame"]["id"]))
        for frame_id, doc in list(state.docs.items()):  # documents the tree no longer shows have ended
            info = infos.get(frame_id)
            if info is None or info.loader_id != doc.loader_id or info.session is not doc.session:
                self._ended(tab, frame_id)
        return infos

    def _add(
        self, infos: dict[str, FrameInfo], tree: Mapping[str, Any], session: CDPSession, parent: str | None
    ) -> None:
        frame = tree["frame"]
        frame_id = str(frame["id"])
        loader = frame.get("loaderId")
        unreachable, url = frame.get("unreachableUrl"), frame.get("url")
        infos[frame_id] = FrameInfo(
            frame_id,
            parent,
            session,
            str(loader) if loader else None,
            str(unreachable) if unreachable else None,
            str(url) if url else None,
        )
        for child in tree.get("childFrames", []) or []:
            self._add(infos, child, session, frame_id)

    async def _own_session(self, tab: Tab, frame: Frame, deadline: float) -> CDPSession | None:
        """The out-of-process frame's own session (made once, kept until it fails), or None for a frame
        rendered in its parent's process (or one that cannot have a session now)."""
        state = self.of(tab)
        known = state.sessions.get(id(frame))
        if known is not None:
            return known[1]
        context = self.renderer.context
        if context is None or frame.is_detached():
            return None
        try:
            session = await self._bounded(context.new_cdp_session(frame), deadline)
        except PlaywrightError as exc:
            if NO_SESSION in str(exc):
                state.sessions[id(frame)] = (frame, None, None)
            return None
        except TimeoutError:
            return None
        session.on("Inspector.targetCrashed", lambda _e: self._crashed(tab, session))
        state.sessions[id(frame)] = (frame, session, None)
        return session

    def _main_doc(self, tab: Tab, infos: Mapping[str, FrameInfo]) -> FrameDoc:
        main = next((i for i in infos.values() if i.parent_id is None), None)
        session = tab.cdp
        assert session is not None or main is None
        return FrameDoc(
            main.frame_id if main else "",
            main.session if main else session,  # type: ignore[arg-type]
            0,
            main.loader_id if main else None,
            main=True,
        )

    def _doc_for(self, tab: Tab, info: FrameInfo, depth: int, parent: FrameDoc) -> FrameDoc:
        """The frame's current document (the one seen before, while its loader and session are the same)."""
        docs = self.of(tab).docs
        doc = docs.get(info.frame_id)
        if doc is not None and doc.alive and doc.loader_id == info.loader_id and doc.session is info.session:
            doc.parent = parent
            return doc
        if doc is not None:
            doc.alive = False
        doc = FrameDoc(info.frame_id, info.session, depth, info.loader_id, parent=parent)
        docs[info.frame_id] = doc
        return doc

    async def _tag(self, tab: Tab, doc: FrameDoc, infos: Mapping[str, FrameInfo]) -> None:
        """Tag `doc`'s child frames in its world (those not tagged there yet), and tell the world its depth."""
        world = await self.world.world(tab) if doc.main else await self._doc_world(doc)
        children = [
            i for i in infos.values() if i.parent_id == doc.frame_id and i.frame_id not in world.tagged
        ]
        if world.framed and not children:
            return
        session = world.cdp
        owners = await asyncio.gather(
            *(self._owner(session, world, c) for c in children), return_exceptions=True
        )
        found = [(c.frame_id, o) for c, o in zip(children, owners, strict=True) if isinstance(o, str)]
        try:
            tagged = await session.send(
                "Runtime.callFunctionOn",
                {
                    "functionDeclaration": FRAME_TAG_FUNCTION,
                    "executionContextId": world.context_id,
                    "arguments": [
                        {"value": doc.depth},
                        {"value": [frame_id for frame_id, _o in found]},
                        *({"objectId": o} for _f, o in found),
                    ],
                    "returnByValue": True,
                },
            )
            if tagged.get("exceptionDetails"):
                raise PlaywrightError("the frames could not be tagged in the world")
        finally:
            if found:
                self.renderer.spawn(
                    quiet(session.send("Runtime.releaseObjectGroup", {"objectGroup": OBJECT_GROUP}))
                )
        world.framed = True
        world.tagged.update(frame_id for frame_id, _o in found)

    @staticmethod
    async def _owner(session: CDPSession, world: DocumentWorld, child: FrameInfo) -> str:
        """The remote object, in `world`, of `child`'s frame element."""
        owner = await session.send("DOM.getFrameOwner", {"frameId": child.frame_id})
        node = await session.send(
            "DOM.resolveNode",
            {
                "backendNodeId": owner["backendNodeId"],
                "executionContextId": world.context_id,
                "objectGroup": OBJECT_GROUP,
            },
        )
        return str(node["object"]["objectId"])

    async def _doc_world(self, doc: FrameDoc) -> DocumentWorld:
        from .world import DocumentWorld

        if not doc.alive:
            raise _Gone
        if doc.world is None:
            try:
                made = await doc.session.send(
                    "Page.createIsolatedWorld",
                    {"frameId": doc.frame_id, "worldName": WORLD_NAME, "grantUniveralAccess": False},
                )
            except PlaywrightError as exc:
                doc.alive = False
                raise _Gone from exc
            doc.world = DocumentWorld(doc.session, int(made["executionContextId"]))
        return doc.world
