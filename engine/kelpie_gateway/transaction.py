"""The transaction state graph. Everything that affects the state machine and its transitions lives
here, in this file, and only here (the h11 ``_state.py`` rule; CONTRACT.md §5).

Theory of operation
-------------------
A *transaction* is one canonical request (or one MCP ``tools/call``) carried from ``begin`` to a
``complete`` step. The gateway never does I/O: it hands the host one *step* at a time and waits for the
host to ``advance`` it with a result (or ``cancel`` it). Each step carries the transaction id and a
``seq`` number; only the pending ``(transaction, seq)`` pair can move the transaction, so a late,
duplicated or forged callback is ``rejected`` (``STALE_STEP``) and changes nothing.

States (a transaction is in exactly one)::

    new                 created by begin, nothing issued yet
    authorizing         an ``authorize`` step is pending (host policy)
    inspecting          a read-only ``dispatch`` of ``get-tabs`` is pending (selected targeting:
                        learn the active tab before acting; reads never switch)
    authorizing_switch  a write names a non-selected tab: the switch has its own ``authorize`` step
    switching           the ``switch-tab`` dispatch is pending (a mutation)
    dispatching         the main ``dispatch`` is pending (issued exactly once)
    retiring            cancelled during a dispatch: the response was delivered, but the renderer's
                        callback is still out; the lane stays exclusive (BUSY) until it retires
    complete            terminal; the ``complete`` step carried the response
    retired             terminal; the late callback (or ``renderer-closed``) arrived after a cancel

Events are the gateway's decisions after each input; :data:`TRANSITIONS` lists every legal
``(event, sources, destination)``. An illegal event raises :class:`IllegalTransition` — a gateway bug,
which the gateway turns into an ``INTERNAL`` envelope without corrupting its lanes.

Host inputs accepted per state are :data:`ACCEPTS`: ``advance`` (a result for the pending seq),
``cancel`` and ``retire`` (late result or ``{"retire":"renderer-closed"}`` while retiring).

Implementation note: the table is also loaded into a ``transitions.Machine`` by
:func:`build_machine` (used to draw ``docs`` diagrams and, in the tests, as the oracle that every
``(state, event)`` pair behaves identically). The hot path uses :data:`_NEXT`, a dict compiled from
the same table (looked up per source state, :data:`_FROM`), because a ``transitions`` trigger costs
≈13 µs here against a 60 µs budget for a whole transaction (``tools/bench`` prints both side by side).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

STATES: Final = (
    "new",
    "authorizing",
    "inspecting",
    "authorizing_switch",
    "switching",
    "dispatching",
    "retiring",
    "complete",
    "retired",
)
TERMINAL: Final = frozenset({"complete", "retired"})
DISPATCH_STATES: Final = frozenset({"inspecting", "switching", "dispatching"})
"""States in which a renderer callback is outstanding for the pending seq."""
AUTHORIZE_STATES: Final = frozenset({"authorizing", "authorizing_switch"})

_ACTIVE: Final = ("new", "authorizing", "inspecting", "authorizing_switch", "switching", "dispatching")

TRANSITIONS: Final[tuple[tuple[str, tuple[str, ...], str], ...]] = (
    ("authorize", ("new",), "authorizing"),
    ("inspect", ("new", "authorizing"), "inspecting"),
    ("authorize_switch", ("inspecting",), "authorizing_switch"),
    ("switch", ("inspecting", "authorizing_switch"), "switching"),
    ("dispatch", ("new", "authorizing", "inspecting", "switching"), "dispatching"),
    ("finish", _ACTIVE, "complete"),
    ("abandon", ("inspecting", "switching", "dispatching"), "retiring"),
    ("retire", ("retiring",), "retired"),
)
"""Every legal transition: (event, source states, destination)."""

ACCEPTS: Final[dict[str, frozenset[str]]] = {
    "new": frozenset(),
    "authorizing": frozenset({"advance", "cancel"}),
    "inspecting": frozenset({"advance", "cancel"}),
    "authorizing_switch": frozenset({"advance", "cancel"}),
    "switching": frozenset({"advance", "cancel"}),
    "dispatching": frozenset({"advance", "cancel"}),
    "retiring": frozenset({"retire"}),
    "complete": frozenset(),
    "retired": frozenset(),
}
"""Host inputs each state accepts; anything else is ``rejected`` with nothing changed."""

_NEXT: Final[dict[tuple[str, str], str]] = {
    (source, event): dest for event, sources, dest in TRANSITIONS for source in sources
}
_FROM: Final[dict[str, dict[str, str]]] = {
    state: {event: dest for (source, event), dest in _NEXT.items() if source == state} for state in STATES
}
""":data:`_NEXT` per source state (what :meth:`Transaction.fire` looks up: no key tuple per event)."""
_CLEARS_PENDING: Final = TERMINAL | {"retiring"}


class IllegalTransition(RuntimeError):
    """An event fired in a state that has no such transition (a gateway bug)."""


class Transaction:
    """One transaction's bookkeeping. ``state`` changes only through :meth:`fire`.

    ``seq`` is the number of the last issued step; ``pending`` is the ``authorize`` or ``dispatch`` step
    the host must answer, as the gateway keeps it for ``next`` (None in ``new``, ``retiring`` and the
    terminal states; a plain dict that may share containers with ``request``: the gateway hands out
    copies of it, never the dict itself); ``render`` turns the final canonical
    envelope into what the ``complete`` step carries (the envelope itself, or a JSON-RPC response).
    What the gateway decided along the way: ``ext`` (the admitted extension of ``extension.call``),
    ``guarded`` (admission has something to check before a dispatch: False for a read carrying no ref,
    scope or cursor), ``mcp`` (begun by ``begin_mcp``: ``notifications/cancelled`` can reach it),
    ``authorized`` (None until an ``authorize`` step is issued, then whether the host admitted it:
    ``audit.authorized``), ``planned`` (what the main dispatch acts on), ``switched`` (selected targeting
    dispatched a ``switch-tab`` that did not report "not run": the selection changed, so no later failure
    of the transaction is a refusal, §4, §5), ``closes`` (the gateway's count of tabs reported gone when
    the pending dispatch was issued: a tab closed later stays closed whatever its result says) and
    ``abandoned`` (the stuck dispatch's native ``{method, tabId}`` after a cancel, for ``next``'s
    ``awaitingRetirement``).

    A plain ``__slots__`` class, not a dataclass: one is built per transaction, and explicit attributes
    replace a per-transaction ``plan`` dict (docs/engine.md, "Performance")."""

    __slots__ = (
        "abandoned",
        "authorized",
        "closes",
        "deadline",
        "dispatched_mutation",
        "dispatches",
        "epoch",
        "ext",
        "guarded",
        "held",
        "id",
        "lane",
        "mcp",
        "method",
        "mutates",
        "pending",
        "planned",
        "render",
        "request",
        "request_id",
        "seq",
        "started",
        "state",
        "switched",
        "tab_id",
    )

    def __init__(
        self,
        id: str,
        lane: str,
        method: str,
        request_id: Any,
        request: dict[str, Any],
        mutates: bool,
        started: float,
        render: Callable[[dict[str, Any]], Any] | None = None,
        tab_id: str | None = None,
        ext: Any = None,
        guarded: bool = True,
    ) -> None:
        self.id = id
        self.lane = lane
        self.method = method
        self.request_id = request_id
        self.request = request
        self.mutates = mutates
        self.started = started
        self.render = render
        self.tab_id = tab_id
        self.ext = ext
        self.guarded = guarded
        self.mcp = render is not None
        self.state = "new"
        self.seq = 0
        self.pending: dict[str, Any] | None = None
        self.dispatches = 0
        self.dispatched_mutation = False
        self.switched = False
        self.closes = 0
        self.deadline: float | None = None
        self.epoch = 0
        self.authorized: bool | None = None
        self.planned: Any = None
        self.abandoned: dict[str, Any] | None = None
        self.held: tuple[Any, ...] = ()  # the refs its mutating dispatch invalidated (refs.RefStore.hold)

    def fire(self, event: str) -> str:
        """Apply ``event``; returns the new state or raises :class:`IllegalTransition`."""
        dest = _FROM[self.state].get(event)
        if dest is None:
            raise IllegalTransition(f"no transition {event!r} from {self.state!r} (transaction {self.id})")
        self.state = dest
        if dest in _CLEARS_PENDING:
            self.pending = None
        return dest

    def accepts(self, host_input: str) -> bool:
        return host_input in ACCEPTS[self.state]

    @property
    def occupies_lane(self) -> bool:
        """True until the transaction is terminal (retiring keeps the lane exclusive)."""
        return self.state not in TERMINAL

    @property
    def callback_pending(self) -> bool:
        """True while a renderer callback is outstanding (a dispatch is pending or retiring)."""
        return self.state in DISPATCH_STATES or self.state == "retiring"


def build_machine(model: Any | None = None) -> Any:
    """A ``transitions.Machine`` holding exactly :data:`STATES` and :data:`TRANSITIONS`."""
    from transitions import Machine

    return Machine(
        model=model,
        states=list(STATES),
        transitions=[{"trigger": e, "source": list(s), "dest": d} for e, s, d in TRANSITIONS],
        initial="new",
        auto_transitions=False,
        send_event=False,
    )


def mermaid() -> str:
    """A Mermaid ``stateDiagram-v2`` of the table (the docs diagram is generated from this)."""
    lines = ["stateDiagram-v2", "    [*] --> new"]
    for event, sources, dest in TRANSITIONS:
        lines += [f"    {s} --> {dest}: {event}" for s in sources]
    lines += ["    complete --> [*]", "    retired --> [*]"]
    return "\n".join(lines) + "\n"
