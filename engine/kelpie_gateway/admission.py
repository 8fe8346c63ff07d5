"""Admission: the guards a validated request passes before it takes a lane, and again before each
dispatch (CONTRACT.md §2, §4, §6, §9 v1.1). Every guard raises the engine's refusal type,
:class:`~kelpie_gateway.errors.Refusal` (``mayHaveCompleted:false``: nothing was dispatched); the
coordinator turns it into the ``complete`` step. Nothing here changes a lane, a ref or a mark.

* :meth:`Admission.admit` — what this gateway offers (the catalog's code: UNSUPPORTED_METHOD,
  ACTIONS_DISABLED, BROWSER_UNAVAILABLE, TAB_PINNED for the tab-switching methods), the extension of an
  ``extension.call`` (EXTENSION_NOT_ADMITTED, its arguments: INVALID_PARAMS), the pinned tab (TAB_PINNED)
  and direct targeting (TAB_REQUIRED). Returns the lane, whether it mutates, the extension and the target
  tab.
* :meth:`Admission.check` — the refs a request carries (the ref store's codes), a tab known to be closed
  (TAB_NOT_FOUND), a snapshot's ``scope``, ``cursor`` and ``since`` (an observer's: INVALID_PARAMS, it has
  none of them, nor ``include``/``find``), and RECONCILE_REQUIRED. Run at ``begin`` and
  again before the main dispatch and before a tab switch: an ``authorize`` step or an inspection may have
  let the tab change meanwhile.
* :meth:`Admission.switch` — whether selected targeting may switch tabs for a transaction (TAB_NOT_SELECTED,
  TAB_NOT_FOUND, then :meth:`Admission.check` for the tab it switches to).
* :meth:`Admission.handles` — the renderer handles behind a ref-bearing extension's ``refArguments``.
"""

from __future__ import annotations

from typing import Any, Final

from . import natives
from .catalog import Catalog
from .config import Config, Extension
from .errors import ERROR_CODES, NAME_SHAPE, TAB_ID_SHAPE, JsonObject, Refusal, shown
from .ledger import TabLedger
from .refs import RefStore
from .schema import Method
from .transaction import Transaction

_TAB_TARGETED: Final = frozenset({"tabs.select", "tabs.close"})
_REF_METHODS: Final = frozenset({"tab.click", "tab.type"})
_GUARDED: Final = _REF_METHODS | {"tab.snapshot"}
"""Reads that :meth:`Admission.check` guards (refs, a scope, a cursor or a since); it guards every mutation and
extension call, and nothing else."""

Admitted = tuple[str, bool, Extension | None, str | None, bool]
"""What :meth:`Admission.admit` decides: ``(lane, mutates, extension or None, target tab or None,
guarded)``; ``guarded`` is False when :meth:`Admission.check` can refuse nothing of the transaction (a read
carrying no ref, scope or cursor, such as ``tabs.list``), so the coordinator need not ask it."""


def _tab(tab_id: Any) -> str:
    """A client's ``tabId`` as a refusal shows it: quoted only when it looks like a tab id (issue 27)."""
    return shown(tab_id, "a tab id", TAB_ID_SHAPE)


class Admission:
    """The admission guards of one gateway (its config, catalog, ref store and tab ledger)."""

    def __init__(
        self, config: Config, catalog: Catalog, refs: RefStore, ledger: TabLedger, ctx: natives.Context
    ) -> None:
        self._config = config
        self._catalog = catalog
        self._refusals = catalog.refusals
        self._refs = refs
        self._ledger = ledger
        self._ctx = ctx

    def admit(self, rid: Any, method: Method | None, name: str, params: dict[str, Any]) -> Admitted:
        """Admit validated request ``name`` (``method`` None: an unknown name) with its normalized
        ``params`` (a pinned tab is written into them). Raises :class:`Refusal`."""
        if method is None:
            advertised = ", ".join(self._catalog.methods)
            raise Refusal(
                "UNSUPPORTED_METHOD",
                f"unknown method {shown(name, 'a method name', NAME_SHAPE)}; this gateway offers: {advertised}",
            )
        code = self._refusals[name]
        if code is not None and name != "extension.call":
            raise Refusal(code, self._refusal_message(code, name))
        lane, mutates, ext, tab_id = "direct", method.mutates, None, None
        if name == "extension.call":
            ext = self._catalog.extensions.get(params["name"])
            if ext is None:
                named = shown(params["name"], "an extension name", NAME_SHAPE)
                raise Refusal("EXTENSION_NOT_ADMITTED", f"no admitted extension named {named}")
            arguments = params["arguments"]  # an object: validated
            refusal = ext.check_arguments(arguments)
            if refusal is not None:
                raise Refusal(*refusal)
            lane, mutates = ext.lane, ext.mutates
            if isinstance(arguments.get("tabId"), str):
                tab_id = arguments["tabId"]  # its target tab: invalidation and RECONCILE_REQUIRED apply
        if method.tab_scoped or name in _TAB_TARGETED:
            tab_id = params.get("tabId")
            pin = self._config.pinned_tab
            if pin is not None:
                if tab_id is None:
                    tab_id = params["tabId"] = pin
                elif tab_id != pin:
                    raise Refusal(
                        "TAB_PINNED", f"this session is pinned to tab {pin!r}; {_tab(tab_id)} is refused"
                    )
            if tab_id is None and self._config.targeting == "direct":
                raise Refusal(
                    "TAB_REQUIRED", f"{name} needs params.tabId (direct targeting): get one from tabs.list"
                )
        return lane, mutates, ext, tab_id, mutates or ext is not None or name in _GUARDED

    def _refusal_message(self, code: str, name: str) -> str:
        if code == "UNSUPPORTED_METHOD":
            return f"{name} is not implemented by this host; this gateway offers: {', '.join(self._catalog.methods)}"
        if code == "TAB_PINNED":
            return f"{name} is refused: this session is pinned to tab {self._config.pinned_tab!r}"
        return f"{name}: {ERROR_CODES[code][1]}"

    def check(self, txn: Transaction, tab_id: str | None) -> None:
        """Ref validity and RECONCILE_REQUIRED for ``tab_id`` (None: the ref's own tab); raises Refusal."""
        params = txn.request["params"]
        if txn.method in _REF_METHODS:
            ref = params["ref"]
            target = tab_id if tab_id is not None else (self._refs.owner(ref) or "")
            self.refuse_closed(target)
            self._refs.resolve(ref, target)
        if txn.ext is not None:
            self.handles(txn, tab_id)
        if txn.method == "tab.snapshot":  # scope, cursor, since are refused before anything runs (§9)
            if self._config.observer:
                self.refuse_anchor(params)
            if any(params.get(k) is not None for k in ("cursor", "scope", "since")):
                self.refuse_closed(tab_id)
            natives.snapshot_anchor(params, tab_id or "", self._ctx)
        if txn.mutates and tab_id is not None and tab_id in self._ledger.reconcile:
            raise Refusal(
                "RECONCILE_REQUIRED",
                f"an earlier action on tab {_tab(tab_id)} has an unknown outcome; take a tab.snapshot (or tabs.list) "
                "of it before acting on it again",
            )

    def switch(self, txn: Transaction, tabs: list[JsonObject], selected: str) -> None:
        """Selected targeting (§5): may ``txn`` switch the host's selection from tab ``selected`` to its own
        before acting? Reads never switch (TAB_NOT_SELECTED); the tab must be among the listed ``tabs``
        (TAB_NOT_FOUND); the host must offer ``switch-tab`` (TAB_NOT_SELECTED); and the tab must pass
        :meth:`check`. Raises Refusal."""
        wanted = txn.tab_id
        if not txn.mutates:
            raise Refusal(
                "TAB_NOT_SELECTED",
                f"tab {_tab(wanted)} is not the selected tab ({selected!r}); reads never switch",
            )
        if all(t["tabId"] != wanted for t in tabs):
            raise Refusal("TAB_NOT_FOUND", f"no tab {_tab(wanted)}")
        if "switch-tab" not in self._config.native_methods:
            raise Refusal(
                "TAB_NOT_SELECTED", f"tab {_tab(wanted)} is not selected and this host cannot switch tabs"
            )
        self.check(txn, wanted)

    @staticmethod
    def refuse_anchor(params: JsonObject) -> None:
        """An observer (config ``observer: true``, §9 v1.2) issues no refs, no cursor and no snapshot id, and
        reads the whole tab in one page: a snapshot naming a ``scope``, ``cursor``, ``since``, ``include`` or
        ``find`` is refused INVALID_PARAMS before anything runs (docs/contract-notes.md "Observers")."""
        for name in ("scope", "cursor", "since", "include", "find"):
            if params.get(name) is not None:
                raise Refusal(
                    "INVALID_PARAMS",
                    f"/params/{name}: this gateway is an observer (one-shot reads without refs or cursors, "
                    "CONTRACT.md §9 v1.2): read the whole tab without it",
                )

    def refuse_closed(self, tab: str | None) -> None:
        """A ref or cursor of a tab known to be closed is refused TAB_NOT_FOUND (what the renderer answers
        for that tab), not a ref code that would send the client to snapshot a tab that is gone."""
        if tab is not None and tab in self._ledger.closed:
            raise Refusal(
                "TAB_NOT_FOUND",
                f"tab {_tab(tab)} was closed; its refs and cursors went with it (tabs.list shows the open tabs)",
            )

    def handles(self, txn: Transaction, tab_id: str | None) -> dict[str, str]:
        """The renderer handles behind a ref-bearing extension's ``refArguments`` (§6 rules, before any
        dispatch; ``tab_id`` None: each ref's own tab). Raises Refusal with the ref's refusal code."""
        ext: Extension | None = txn.ext
        if ext is None or not ext.ref_arguments:
            return {}
        arguments = txn.request["params"]["arguments"]
        handles: dict[str, str] = {}
        for arg in ext.ref_arguments:
            ref = arguments.get(arg) if isinstance(arguments, dict) else None
            if not isinstance(ref, str):
                continue
            target = tab_id if tab_id is not None else (self._refs.owner(ref) or "")
            self.refuse_closed(target)
            handles[arg] = self._refs.resolve(ref, target)
        return handles
