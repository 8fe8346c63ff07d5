"""Native input: trusted pointer and key events at a captured element, as a person's hand makes them —
``click``, ``hover``, ``drag``, ``type_keys`` (docs/host.md "Native input"; ARCHITECTURE.md, host rules 1.2).

``tab.click`` stays the contract's synthetic activation; these go through the browser's input pipeline
(CDP ``Input.dispatchMouseEvent`` / ``dispatchKeyEvent`` / ``insertText`` / ``dispatchDragEvent`` on the
tab's own CDP session), so pages see ``pointerdown``/``mousedown``/``focus``/``mouseup``/``click`` in
order, at a point, with ``isTrusted`` true.

Before any event, one run of the generated ``pointer`` script (:func:`kelpie_gateway.pointer_aim_script`)
checks the captured node — live (``NODE_REPLACED``), enabled (``NOT_ACTIONABLE``), scrolled into view, a
non-empty box that did not move across an animation frame, and the hit test at the point: the element,
a descendant or a label of it must be what the pointer lands on, else ``NOT_ACTIONABLE`` naming the cover.
Every such refusal is ``mayHaveCompleted:false`` with nothing sent to the page. Once an event was sent,
any failure is an unknown outcome (``mayHaveCompleted:true``), and so is a press that the page's own
watch saw land elsewhere (``EFFECT_NOT_OBSERVED``: the page changed between the hit test and the press).
Results are facts without values: ``{clicked, target}``, ``{hovered, target}``, ``{dragged, via}``,
``{typed}`` (code points sent), with ``removed: true`` when the page removed the element in answer and
``navigated: true`` when the tab's document changed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from playwright.async_api import CDPSession
from playwright.async_api import Error as PlaywrightError

from kelpie_gateway import focus_script, pointer_aim_script, pointer_frame_script, pointer_report_script
from kelpie_gateway.host.browser.chromium import endpoint
from kelpie_gateway.host.browser.common import Tab, short
from kelpie_gateway.host.browser.direct import DirectSession
from kelpie_gateway.host.browser.frames import FrameDoc, Frames
from kelpie_gateway.host.browser.world import World
from kelpie_gateway.host.renderer import JsonObject, fail

from .base import REF, TAB, Extension, no_captured_node, schema, script_failure

BUTTONS = {"left": 1, "right": 2, "middle": 4}
"""CDP ``buttons`` bit of each mouse button."""
MODIFIER_KEYS = {  # name: (CDP modifiers bit, key, code, windowsVirtualKeyCode)
    "Alt": (1, "Alt", "AltLeft", 18),
    "Control": (2, "Control", "ControlLeft", 17),
    "Meta": (4, "Meta", "MetaLeft", 91),
    "Shift": (8, "Shift", "ShiftLeft", 16),
}
DRAG_STEPS = 10
"""Pointer moves between a drag's press and its release (after a first one of 5 px, to start a drag)."""
STEP_PAUSE_S = 0.016
HOLD_PAUSE_S = 0.05
"""A drag's pace: one move per frame (16 ms), as a hand's, then one more over the target after 50 ms before
the release — widgets ignore moves that come too fast after they reordered (SortableJS waits 30 ms)."""
MAX_TYPE_KEYS = 2_000
"""``type_keys`` text bound, in code points."""
TYPE_BUDGET_MS = 8_000
"""``type_keys``: ``delayMs`` × characters must fit in this (inside the extension's 9 s)."""
PLACE_ATTEMPTS = 3
"""Native input in a frame read in a world of its own: how often the frame's place in the top viewport is
measured again when aiming moved it (the element's scrolling into view scrolled a parent too)."""
DRAG_INTERCEPT_WAIT_S = 1.0
"""How long a drag whose ``dragstart`` went through waits for Chromium's intercepted drag data."""

OFFSET = {
    "type": "object",
    "properties": {
        "x": {"type": "number", "minimum": 0, "maximum": 100_000},
        "y": {"type": "number", "minimum": 0, "maximum": 100_000},
    },
    "required": ["x", "y"],
    "additionalProperties": False,
    "description": "a point inside the element's box, in CSS pixels from its top-left corner "
    "(default: the centre of its largest visible part)",
}
BY = {
    "type": "object",
    "properties": {
        "x": {"type": "number", "minimum": -100_000, "maximum": 100_000},
        "y": {"type": "number", "minimum": -100_000, "maximum": 100_000},
    },
    "required": ["x", "y"],
    "additionalProperties": False,
    "description": "how far to drag, in CSS pixels from the press point (x right, y down)",
}
MODIFIERS = {
    "type": "array",
    "items": {"enum": list(MODIFIER_KEYS)},
    "uniqueItems": True,
    "maxItems": 4,
    "description": 'keys held during the click, e.g. ["Shift"] to extend a selection',
}

US_KEYS: dict[str, tuple[str, int]] = {  # character: (code, windowsVirtualKeyCode), US layout
    **{c: (f"Key{c.upper()}", ord(c.upper())) for c in "abcdefghijklmnopqrstuvwxyz"},
    **{c: (f"Key{c}", ord(c)) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
    **{c: (f"Digit{c}", ord(c)) for c in "0123456789"},
    **{c: (f"Digit{d}", 48 + d) for d, c in enumerate(")!@#$%^&*(")},
    " ": ("Space", 32),
    **{c: ("Minus", 189) for c in "-_"},
    **{c: ("Equal", 187) for c in "=+"},
    **{c: ("BracketLeft", 219) for c in "[{"},
    **{c: ("BracketRight", 221) for c in "]}"},
    **{c: ("Backslash", 220) for c in "\\|"},
    **{c: ("Semicolon", 186) for c in ";:"},
    **{c: ("Quote", 222) for c in "'\""},
    **{c: ("Comma", 188) for c in ",<"},
    **{c: ("Period", 190) for c in ".>"},
    **{c: ("Slash", 191) for c in "/?"},
    **{c: ("Backquote", 192) for c in "`~"},
}


class Unknown(Exception):
    """A failure after at least one event reached the page (an unknown outcome)."""


class Hand:
    """The trusted events of one call, sent over the tab's CDP session (``cdp``), or over its direct session
    when one is given and alive (``--direct-cdp``: docs/host.md "Direct CDP"); :attr:`sent` says whether any
    was (so a failure is a refusal or an unknown outcome)."""

    def __init__(self, cdp: CDPSession, direct: DirectSession | None = None) -> None:
        self.cdp = cdp
        self.direct = direct
        self.sent = False
        self.modifiers = 0

    async def send(self, method: str, params: JsonObject) -> Any:
        self.sent = True
        direct = self.direct
        if direct is not None and direct.gone is None:
            return await direct.send(method, params)
        return await self.cdp.send(method, params)

    async def mouse(
        self, kind: str, x: float, y: float, button: str = "none", buttons: int = 0, count: int = 0
    ) -> None:
        await self.send(
            "Input.dispatchMouseEvent",
            {
                "type": kind,
                "x": x,
                "y": y,
                "button": button,
                "buttons": buttons,
                "clickCount": count,
                "modifiers": self.modifiers,
                "pointerType": "mouse",
            },
        )

    async def hold(self, names: Sequence[str]) -> None:
        """Press the modifier keys ``names`` (kept down until :meth:`release_all`)."""
        for name in names:
            bit, key, code, vk = MODIFIER_KEYS[name]
            self.modifiers |= bit
            await self.send(
                "Input.dispatchKeyEvent",
                {
                    "type": "rawKeyDown",
                    "key": key,
                    "code": code,
                    "windowsVirtualKeyCode": vk,
                    "modifiers": self.modifiers,
                },
            )

    async def release_all(self, names: Sequence[str]) -> None:
        for name in reversed(names):
            bit, key, code, vk = MODIFIER_KEYS[name]
            self.modifiers &= ~bit
            await self.send(
                "Input.dispatchKeyEvent",
                {
                    "type": "keyUp",
                    "key": key,
                    "code": code,
                    "windowsVirtualKeyCode": vk,
                    "modifiers": self.modifiers,
                },
            )

    async def char(self, ch: str) -> None:
        """One character as a person types it: its key's keydown (with the text: keypress, input) and
        keyup on a US layout; Enter for a line break, Tab for a tab; other characters as inserted text."""
        if ch in "\r\n":
            key, code, vk, text = "Enter", "Enter", 13, "\r"
        elif ch == "\t":
            key, code, vk, text = "Tab", "Tab", 9, ""
        elif ch in US_KEYS:
            (code, vk), key, text = US_KEYS[ch], ch, ch
        else:
            await self.send("Input.insertText", {"text": ch})
            return
        down: JsonObject = {"type": "keyDown" if text else "rawKeyDown", "key": key, "code": code}
        down.update(windowsVirtualKeyCode=vk, nativeVirtualKeyCode=vk)
        if text:
            down.update(text=text, unmodifiedText=text)
        await self.send("Input.dispatchKeyEvent", down)
        await self.send(
            "Input.dispatchKeyEvent",
            {
                "type": "keyUp",
                "key": key,
                "code": code,
                "windowsVirtualKeyCode": vk,
                "nativeVirtualKeyCode": vk,
            },
        )


def landed(record: Any, event: str) -> str | None:
    """Where a watch saw ``event`` land: ``"same"``, ``"descendant"``, ``"outside"``, or None (not seen)."""
    events = record.get("events") if isinstance(record, dict) else None
    where = events.get(event) if isinstance(events, dict) else None
    return where if where in ("same", "descendant", "outside") else None


class NativeInput(Extension):
    """``click``, ``hover``, ``drag`` and ``type_keys``; see the module docstring."""

    # ------------------------------------------------------------------ shared steps
    async def aim(
        self,
        tab: Tab,
        captured: tuple[str, str],
        *,
        watch: tuple[str, ...],
        offset: Any = None,
        enabled: bool = True,
    ) -> JsonObject:
        """The checks before any event (``pointer_aim_script``): ``{success:true, x, y, target}`` or the
        refusal (``mayHaveCompleted:false``). For a ref inside a frame read in a world of its own (issue 30:
        cross-origin and out-of-process frames), see :meth:`aim_in_frame`."""
        world = self.renderer.part(World)
        chain = world.frames.lineage(tab, captured[1]) if world is not None else []
        if chain and world is not None:
            return await self.aim_in_frame(tab, world.frames, chain, captured, watch, offset, enabled)
        script = pointer_aim_script(*captured, enabled=enabled, offset=offset, watch=watch)
        return self.aimed(await self.run_script(tab.tab_id, script))

    async def aim_in_frame(
        self,
        tab: Tab,
        frames: Frames,
        chain: list[FrameDoc],
        captured: tuple[str, str],
        watch: tuple[str, ...],
        offset: Any,
        enabled: bool,
    ) -> JsonObject:
        """:meth:`aim` for a ref of the frame document ``chain[-1]`` (``chain``: the frame documents from the
        top one's child down). Each parent's world measures where its frame is seen in the top viewport
        (scrolling the frame element into view the first time), the frame's world aims with that place —
        the hit test in the frame's own document, the point in top viewport coordinates — and then every
        parent's world, outermost first, hit-tests the point on its frame element. When aiming moved a frame
        (its scrolling into view scrolled a parent), it is measured and aimed again. Nothing is dispatched
        before all of it held (docs/host.md "Native input in frames")."""
        key, handle = captured
        for attempt in range(PLACE_ATTEMPTS):
            outers = await self.place(tab, frames, chain, key, scroll=attempt == 0)
            if isinstance(outers, dict):
                return outers
            script = pointer_aim_script(
                key, handle, enabled=enabled, offset=offset, watch=watch, outer=outers[-1]
            )
            aimed = self.aimed(await self.run_script(tab.tab_id, script))
            again = await self.place(tab, frames, chain, key, scroll=False)
            if aimed.get("success") is not True:
                if again == outers or attempt == PLACE_ATTEMPTS - 1:
                    return aimed
                continue
            if again != outers:
                await self.report(tab, key, (handle,))  # ends this aim's watch; aimed again
                if isinstance(again, dict):
                    return again
                continue
            point = {"x": aimed["x"], "y": aimed["y"]}
            for i, doc in enumerate(chain):
                parent = chain[i - 1] if i else None
                covered = await self.in_doc(
                    tab, frames, parent, pointer_frame_script(key, doc.frame_id, outer=outers[i], point=point)
                )
                if covered.get("success") is not True:
                    await self.report(tab, key, (handle,))
                    return covered
            return aimed
        await self.report(tab, key, (handle,))
        return fail(
            "NOT_ACTIONABLE",
            "the element's frame kept moving while it was aimed at; nothing was dispatched; wait for it to settle",
            mayHaveCompleted=False,
        )

    async def place(
        self, tab: Tab, frames: Frames, chain: list[FrameDoc], key: str, *, scroll: bool
    ) -> list[Any] | JsonObject:
        """Where each document of ``chain`` is seen in the top viewport, measured in its parent's world:
        ``[None (the top document), outer of chain[0], …, outer of chain[-1]]``, or the refusal."""
        outers: list[Any] = [None]
        for i, doc in enumerate(chain):
            parent = chain[i - 1] if i else None
            script = pointer_frame_script(key, doc.frame_id, outer=outers[-1], scroll=scroll)
            placed = await self.in_doc(tab, frames, parent, script)
            if placed.get("success") is not True:
                return placed
            value = placed.get("value")
            outer = value.get("outer") if isinstance(value, dict) else None
            if not isinstance(outer, dict):
                return fail(
                    "RENDERER_FAILED", "the pointer script gave no frame place", mayHaveCompleted=False
                )
            outers.append(outer)
        return outers

    @staticmethod
    async def in_doc(tab: Tab, frames: Frames, doc: FrameDoc | None, script: str) -> JsonObject:
        """Run `script` in `doc`'s world (None: the top document's) and unwrap its own refusal."""
        result = await frames.run_in(tab, doc, script)
        if result.get("success") is not True:
            return result
        failed = script_failure(result.get("value"))
        return failed if failed is not None else result

    @staticmethod
    def aimed(result: JsonObject) -> JsonObject:
        """An aim's answer as :meth:`aim` gives it."""
        if result.get("success") is not True:
            return result
        value = result.get("value")
        if not isinstance(value, dict) or not all(isinstance(value.get(k), int | float) for k in ("x", "y")):
            return fail("RENDERER_FAILED", "the pointer script gave no point", mayHaveCompleted=False)
        view = (value.get("width"), value.get("height"))
        return {
            "success": True,
            "x": float(value["x"]),
            "y": float(value["y"]),
            "target": value.get("target"),
            "view": tuple(float(v) if isinstance(v, int | float) else 0.0 for v in view),
        }

    async def report(self, tab: Tab, key: str, handles: tuple[str, ...], keep: bool = False) -> list[Any]:
        """What the watches on ``handles`` recorded (a record or None each); [None…] when the document
        changed or the tab cannot be read (nothing to observe then)."""
        script = pointer_report_script(key, handles, keep=keep)
        result = await self.run_script(tab.tab_id, script)
        value = result.get("value") if result.get("success") is True else None
        watches = value.get("watches") if isinstance(value, dict) else None
        if not isinstance(watches, list) or len(watches) != len(handles):
            return [None] * len(handles)
        return watches

    async def hand(self, tab: Tab, *, direct: bool = True) -> Hand | JsonObject:
        """A :class:`Hand` on the tab's CDP session (and its direct session, when ``direct`` and there is
        one), or the refusal when there is none (nothing sent). A drag keeps to the Playwright session: its
        ``Input.dragIntercepted`` events come on the session that asked for them."""
        world = self.renderer.part(World)
        try:
            if world is None:
                raise PlaywrightError("this host has no isolated-world part")
            session = await world.session(tab)
            return Hand(session, world.direct_session(tab) if direct else None)
        except PlaywrightError as exc:
            return fail(
                "RENDERER_FAILED", f"no CDP session for the tab: {short(exc)}", mayHaveCompleted=False
            )

    async def perform(self, tab: Tab, hand: Hand, act: Callable[[], Any]) -> JsonObject | None:
        """Run ``act`` (the events); None on success, else the failure (unknown outcome once anything was
        sent)."""
        try:
            await act()
        except (PlaywrightError, Unknown) as exc:
            gone = self.renderer.refusal(tab.tab_id)
            why = gone["error"]["message"] if gone is not None else short(exc)
            code = gone["error"]["code"] if gone is not None else "RENDERER_FAILED"
            if not hand.sent:
                return fail(code, f"{why}; nothing was dispatched", mayHaveCompleted=False)
            return fail(
                code, f"{why}; input events had been sent: observe before acting", mayHaveCompleted=True
            )
        return None

    def facts(self, tab: Tab, generation: int, record: Any, target: Any) -> JsonObject:
        """What the host can tell after the events: the press ``target``; ``removed`` when the page removed
        the element; ``navigated`` when the tab's document changed."""
        out: JsonObject = {"target": target if target in ("same", "descendant", "label") else "same"}
        if tab.generation != generation:
            out["navigated"] = True
        elif isinstance(record, dict) and record.get("connected") is False:
            out["removed"] = True
        return out

    @staticmethod
    def elsewhere(what: str) -> JsonObject:
        return fail(
            "EFFECT_NOT_OBSERVED",
            f"the {what} landed on something other than the element (the page moved or covered it between "
            "the hit test and the event); observe before acting",
            mayHaveCompleted=True,
        )

    def pressed_target(self, record: Any, aimed: Any, event: str) -> str | JsonObject:
        """The press's target as the watch saw ``event``, the aim's when unseen; a failure when it landed
        elsewhere. A label forwards its activation, so its press is not expected on the element."""
        where = landed(record, event)
        if aimed == "label" or where is None:
            return str(aimed)
        if where == "outside":
            return self.elsewhere("press" if event != "pointermove" else "pointer")
        return where

    async def at_point(
        self,
        params: Mapping[str, Any],
        done: str,
        watch: tuple[str, ...],
        event: str,
        events: Callable[[Hand, float, float], Awaitable[None]],
    ) -> JsonObject:
        """A gesture at one point of the captured ``ref``: aim (``watch`` those events), send ``events`` at the
        point, then tell where ``event`` landed: ``{done: true, target, removed?, navigated?}``."""
        tab = self.tab(params)
        captured = self.captured(params)
        if captured is None:
            return no_captured_node()
        generation = tab.generation
        aimed = await self.aim(tab, captured, watch=watch, offset=params.get("offset"))
        if aimed.get("success") is not True:
            return aimed
        hand = await self.hand(tab)
        if not isinstance(hand, Hand):
            return hand
        failed = await self.perform(tab, hand, lambda: events(hand, aimed["x"], aimed["y"]))
        if failed is not None:
            return failed
        (record,) = await self.report(tab, captured[0], (captured[1],))
        target = self.pressed_target(record, aimed["target"], event)
        if isinstance(target, dict):
            return target
        return {"success": True, done: True, **self.facts(tab, generation, record, target)}

    # ------------------------------------------------------------------ click
    @endpoint(
        {
            "name": "click",
            "method": "native-click",
            "description": "Click an element as a hand does: trusted pointer events (pointerdown, mousedown, focus, "
            "mouseup, click) at a point inside it, after checking that nothing covers it there. Use it when "
            "tab.click did not work (a control that reacts to mousedown or pointerdown, needs focus, or listens "
            "on a child); button right opens a context menu, clickCount 2 double-clicks, modifiers hold keys "
            "(Shift for a range selection). A covered element is refused NOT_ACTIONABLE naming what covers it.",
            "inputSchema": schema(
                {
                    "tabId": TAB,
                    "ref": REF,
                    "button": {"enum": list(BUTTONS), "description": "default left"},
                    "clickCount": {"type": "integer", "minimum": 1, "maximum": 3, "description": "default 1"},
                    "modifiers": MODIFIERS,
                    "offset": OFFSET,
                },
                ["tabId", "ref"],
            ),
            "mutates": True,
            "refArguments": ["ref"],
        }
    )
    async def click(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, ref, button?, clickCount?, modifiers?, offset?}`` → ``{clicked, target, removed?, navigated?}``."""
        button = str(params.get("button", "left"))
        count = int(params.get("clickCount", 1))
        held = [m for m in MODIFIER_KEYS if m in (params.get("modifiers") or [])]
        final = {"left": "click", "right": "contextmenu", "middle": "auxclick"}[button]

        async def events(hand: Hand, x: float, y: float) -> None:
            await hand.hold(held)
            await hand.mouse("mouseMoved", x, y)
            for n in range(1, count + 1):
                await hand.mouse("mousePressed", x, y, button, BUTTONS[button], n)
                await hand.mouse("mouseReleased", x, y, button, 0, n)
            await hand.release_all(held)

        watch = ("pointerdown", "mousedown", final, *(("dblclick",) if count > 1 else ()))
        return await self.at_point(params, "clicked", watch, "pointerdown", events)

    # ------------------------------------------------------------------ hover
    @endpoint(
        {
            "name": "hover",
            "method": "native-hover",
            "description": "Move the pointer onto an element (trusted pointerover/pointerenter/pointermove, "
            "mouseover…), e.g. to open a menu or a tooltip that appears on hover; the pointer stays there. A "
            "covered element is refused NOT_ACTIONABLE naming what covers it.",
            "inputSchema": schema({"tabId": TAB, "ref": REF, "offset": OFFSET}, ["tabId", "ref"]),
            "mutates": True,
            "refArguments": ["ref"],
        }
    )
    async def hover(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, ref, offset?}`` → ``{hovered, target, removed?, navigated?}``."""

        async def events(hand: Hand, x: float, y: float) -> None:
            await hand.mouse("mouseMoved", x, y)

        return await self.at_point(params, "hovered", ("pointermove", "pointerover"), "pointermove", events)

    # ------------------------------------------------------------------ drag
    @endpoint(
        {
            "name": "drag",
            "method": "native-drag",
            "description": "Drag an element (ref) as a hand does: press, move in steps, release — onto another "
            "element (toRef, optionally at toOffset inside it) or by a distance (by: {x, y} CSS pixels from the "
            "press point). Works for HTML5 drag-and-drop (draggable elements, sortable lists) and for "
            "pointer-driven widgets: e.g. a slider's handle with by {x: 120, y: 0}. The element (and toRef) must "
            "be visible and uncovered.",
            "inputSchema": schema(
                {"tabId": TAB, "ref": REF, "toRef": REF, "toOffset": OFFSET, "by": BY},
                ["tabId", "ref"],
                anyOf=[{"required": ["toRef"]}, {"required": ["by"]}],
                dependentSchemas={
                    "by": {"not": {"required": ["toRef"]}},
                    "toOffset": {"required": ["toRef"]},
                },
            ),
            "mutates": True,
            "refArguments": ["ref", "toRef"],
        }
    )
    async def drag(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, ref, toRef, toOffset?}`` or ``{tabId, ref, by}`` → ``{dragged, via: "html5"|"pointer",
        target, removed?, navigated?}``."""
        tab = self.tab(params)
        captured = params.get("kelpieCaptured")
        handles = captured.get("handles") if isinstance(captured, Mapping) else None
        key = captured.get("key") if isinstance(captured, Mapping) else None
        if not isinstance(handles, Mapping) or not isinstance(key, str):
            return no_captured_node()
        source, goal = handles.get("ref"), handles.get("toRef")
        if not isinstance(source, str) or (params.get("toRef") is not None and not isinstance(goal, str)):
            return no_captured_node()
        generation = tab.generation
        start = await self.aim(tab, (key, source), watch=("pointerdown", "dragstart"))
        if start.get("success") is not True:
            return start
        x0, y0 = start["x"], start["y"]
        if isinstance(goal, str):
            end = await self.aim(tab, (key, goal), watch=(), offset=params.get("toOffset"), enabled=False)
        else:
            by = params.get("by") or {}
            end = {"success": True, "x": x0 + float(by.get("x", 0)), "y": y0 + float(by.get("y", 0))}
            width, height = start["view"]
            if not (0 <= end["x"] < width and 0 <= end["y"] < height):
                end = fail(
                    "NOT_ACTIONABLE",
                    f"the drag would end outside the {width:.0f}x{height:.0f} viewport (at {end['x']:.0f}, "
                    f"{end['y']:.0f}); nothing was dispatched",
                    mayHaveCompleted=False,
                )
        if end.get("success") is not True:
            await self.report(tab, key, (source,))  # ends the source's watch
            return end
        hand = await self.hand(tab, direct=False)
        if not isinstance(hand, Hand):
            return hand
        x1, y1 = end["x"], end["y"]
        via = "pointer"
        intercepted: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def on_drag(event: Any) -> None:
            if not intercepted.done():
                intercepted.set_result(event.get("data") if isinstance(event, dict) else None)

        def point(i: int) -> tuple[float, float]:
            if i == 0:  # a short first move, enough to start a drag
                dist = max(1.0, ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5)
                return x0 + 5 * (x1 - x0) / dist, y0 + 5 * (y1 - y0) / dist
            return x0 + (x1 - x0) * i / DRAG_STEPS, y0 + (y1 - y0) * i / DRAG_STEPS

        async def act() -> None:
            nonlocal via
            await hand.mouse("mouseMoved", x0, y0)
            await hand.mouse("mousePressed", x0, y0, "left", 1, 1)
            await hand.send("Input.setInterceptDrags", {"enabled": True})
            hand.cdp.on("Input.dragIntercepted", on_drag)
            try:
                await hand.mouse("mouseMoved", *point(0), "left", 1)
                data = await self._drag_data(tab, key, source, intercepted)
                if data is not None:
                    via = "html5"
                    for i in range(1, DRAG_STEPS + 2):  # the last one: held over the target a moment
                        await asyncio.sleep(STEP_PAUSE_S if i <= DRAG_STEPS else HOLD_PAUSE_S)
                        kind = "dragEnter" if i == 1 else "dragOver"
                        x, y = point(min(i, DRAG_STEPS))
                        event = {"type": kind, "x": x, "y": y, "data": data}
                        await hand.send("Input.dispatchDragEvent", event)
                    event = {"type": "drop", "x": x1, "y": y1, "data": data}
                    await hand.send("Input.dispatchDragEvent", event)
                else:
                    for i in range(1, DRAG_STEPS + 2):
                        await asyncio.sleep(STEP_PAUSE_S if i <= DRAG_STEPS else HOLD_PAUSE_S)
                        await hand.mouse("mouseMoved", *point(min(i, DRAG_STEPS)), "left", 1)
                    await hand.mouse("mouseReleased", x1, y1, "left", 0, 1)
            finally:
                hand.cdp.remove_listener("Input.dragIntercepted", on_drag)
                with contextlib.suppress(PlaywrightError):
                    await hand.cdp.send("Input.setInterceptDrags", {"enabled": False})

        failed = await self.perform(tab, hand, act)
        if failed is not None:
            return failed
        (record,) = await self.report(tab, key, (source,))
        target = self.pressed_target(record, start["target"], "pointerdown")
        if isinstance(target, dict):
            return target
        return {"success": True, "dragged": True, "via": via, **self.facts(tab, generation, record, target)}

    async def _drag_data(self, tab: Tab, key: str, source: str, intercepted: asyncio.Future[Any]) -> Any:
        """After the first move: the intercepted HTML5 drag data when the page started a drag (its
        ``dragstart`` went through), else None (a pointer-driven drag)."""
        await asyncio.sleep(0)
        if intercepted.done():
            return intercepted.result()
        (record,) = await self.report(tab, key, (source,), keep=True)
        started = landed(record, "dragstart") is not None  # the element's or a draggable ancestor's
        if not started or (isinstance(record, dict) and record.get("dragstartPrevented") is True):
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(intercepted), DRAG_INTERCEPT_WAIT_S)
        except TimeoutError as exc:
            raise Unknown("the page started an HTML5 drag that the browser did not hand over") from exc

    # ------------------------------------------------------------------ type_keys
    @endpoint(
        {
            "name": "type_keys",
            "method": "type-keys",
            "description": "Type text key by key (trusted keydown, keypress, input and keyup per character) into "
            "the focused element, or into ref after focusing it; delayMs waits between keys. Use it for widgets "
            "that react to keys (autocomplete, filtering, masked fields) where tab.type or fill set the value "
            "without key events. The text is never echoed.",
            "inputSchema": schema(
                {
                    "tabId": TAB,
                    "ref": REF,
                    "text": {"type": "string", "minLength": 1, "maxLength": MAX_TYPE_KEYS},
                    "delayMs": {"type": "integer", "minimum": 0, "maximum": 1000, "description": "default 0"},
                },
                ["tabId", "text"],
            ),
            "mutates": True,
            "refArguments": ["ref"],
        }
    )
    async def type_keys(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, ref?, text, delayMs?}`` → ``{typed: <code points sent>}``."""
        tab = self.tab(params)
        text = str(params.get("text", ""))
        delay = int(params.get("delayMs", 0))
        if len(text) * delay > TYPE_BUDGET_MS:
            return fail(
                "INVALID_PARAMS",
                f"{len(text)} characters × delayMs {delay} is over {TYPE_BUDGET_MS} ms; send fewer characters per call",
                mayHaveCompleted=False,
            )
        captured = self.captured(params)
        if params.get("ref") is not None and captured is None:
            return no_captured_node()
        if captured is not None:
            aimed = await self.aim(tab, captured, watch=("keydown",))
            if aimed.get("success") is not True:
                return aimed
        hand = await self.hand(tab)
        if not isinstance(hand, Hand):
            return hand
        if captured is not None:
            focused = await self.run_script(tab.tab_id, focus_script(*captured))
            if focused.get("success") is not True:
                await self.report(tab, captured[0], (captured[1],))
                return focused
            hand.sent = True  # the page's focus handlers ran

        async def act() -> None:
            for i, ch in enumerate(text):
                if ch == "\n" and i and text[i - 1] == "\r":
                    continue  # one Enter for a CR LF pair
                if i and delay:
                    await asyncio.sleep(delay / 1000)
                await hand.char(ch)

        failed = await self.perform(tab, hand, act)
        if failed is not None:
            return failed
        if captured is not None:
            (record,) = await self.report(tab, captured[0], (captured[1],))
            if landed(record, "keydown") == "outside":
                return self.elsewhere("keys")
        return {"success": True, "typed": len(text)}
