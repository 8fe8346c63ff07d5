"""Capability projection (CONTRACT.md §2 last paragraph, §3 ``documentation``/``capabilities``).

Only implemented methods are advertised: a core method appears when the native endpoints it needs are in
``nativeMethods`` (and ``fixedReader`` for reader-based ones), ``browserAvailable`` is true, and — for
mutations — ``allowActions`` is true. In ``selected`` targeting, tab-scoped methods also need ``get-tabs``
(the active-tab inspection of §5). With ``pinnedTab`` the tab-switching methods (``tabs.select``,
``tabs.open``, ``tabs.close``) are not advertised and are refused ``TAB_PINNED``.

An extension is *admitted* when its ``method`` is in ``nativeMethods``, the ``extensionFilter`` admits its
name (exclude wins), and it does not mutate or ``allowActions`` is true. The config is immutable, so the
projection is computed once; the filter is therefore applied identically at discovery and at call time.
"""

from __future__ import annotations

from typing import Final

from . import jsonio
from .config import Config, Extension
from .errors import ERROR_CODES, JsonObject
from .jsonio import MAX_REQUEST_BYTES, MAX_RESULT_BYTES
from .schema import (
    MAX_CHARS,
    MAX_ELEMENTS,
    MAX_EXTENSION_TOOL_NAMES,
    MAX_TEXT_CODE_POINTS,
    METHODS,
    TIMEOUT_DEFAULT_MS,
    TIMEOUT_MAX_MS,
    TIMEOUT_MIN_MS,
    VERSION,
    Method,
    param_json_schema,
)

PIN_REFUSED: Final = frozenset({"tabs.select", "tabs.open", "tabs.close"})


class Catalog:
    """What this gateway offers. ``methods``: advertised canonical method names in table order;
    ``extensions``: admitted extensions by name (discovery order = config order)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.extensions: dict[str, Extension] = {
            e.name: e
            for e in config.extensions
            if e.method in config.native_methods
            and config.filter_admits(e.name)
            and (config.allow_actions or not e.mutates)
        }
        self.refusals: dict[str, str | None] = {m.name: self._compute_refusal(m) for m in METHODS.values()}
        """Per canonical method name: the error code that refuses it here, or None when it is advertised."""
        self.methods: list[str] = [name for name, code in self.refusals.items() if code is None]
        self._capabilities: JsonObject | None = None
        self._documentation: str | None = None

    def refusal(self, method: Method) -> str | None:
        """The error code that refuses ``method`` on this gateway, or None when it is advertised."""
        return self.refusals[method.name]

    def _compute_refusal(self, method: Method) -> str | None:
        cfg = self.config
        if method.name in ("documentation", "capabilities"):
            return None
        if method.name == "extension.call":
            return None if self.extensions else "EXTENSION_NOT_ADMITTED"
        if method.browser and not cfg.browser_available:
            return "BROWSER_UNAVAILABLE"
        if method.mutates and not cfg.allow_actions:
            return "ACTIONS_DISABLED"
        if cfg.pinned_tab is not None and method.name in PIN_REFUSED:
            return "TAB_PINNED"
        if any(e not in cfg.native_methods for e in method.endpoints):
            return "UNSUPPORTED_METHOD"
        if method.reader and not cfg.fixed_reader:
            return "UNSUPPORTED_METHOD"
        if method.tab_scoped and cfg.targeting == "selected" and "get-tabs" not in cfg.native_methods:
            return "UNSUPPORTED_METHOD"
        return None

    def limits(self) -> JsonObject:
        return {
            "maxRequestBytes": MAX_REQUEST_BYTES,
            "maxResultBytes": MAX_RESULT_BYTES,
            "maxChars": MAX_CHARS,
            "maxElements": MAX_ELEMENTS,
            "maxTextCodePoints": MAX_TEXT_CODE_POINTS,
            "timeoutMs": {"min": TIMEOUT_MIN_MS, "max": TIMEOUT_MAX_MS, "default": TIMEOUT_DEFAULT_MS},
            "maxExtensionToolNames": MAX_EXTENSION_TOOL_NAMES,
        }

    def capabilities(self) -> JsonObject:
        """The ``capabilities`` result (a fresh copy each call)."""
        if self._capabilities is None:
            cfg = self.config
            self._capabilities = {
                "version": VERSION,
                "methods": list(self.methods),
                "extensions": list(self.extensions),
                "targeting": cfg.targeting,
                "realm": cfg.realm,
                "allowActions": cfg.allow_actions,
                "browserAvailable": cfg.browser_available,
                "requireAuthorization": cfg.require_authorization,
                "pinnedTab": cfg.pinned_tab,
                "observer": cfg.observer,
                "limits": self.limits(),
            }
        copied: JsonObject = jsonio.clone(self._capabilities)
        return copied

    def documentation(self) -> str:
        """Markdown reference of the advertised catalogue only."""
        if self._documentation is None:
            self._documentation = render_documentation(self.methods, self.extensions, self.config)
        return self._documentation


def render_documentation(methods: list[str], extensions: dict[str, Extension], config: Config | None) -> str:
    """Markdown for ``methods`` (and the admitted ``extensions``); also used by the docs generator."""
    lines = ["# Kelpie browser gateway — methods", ""]
    if config is not None:
        lines += [
            f"Targeting: `{config.targeting}`. Realm: `{config.realm}`. Actions allowed: "
            f"`{str(config.allow_actions).lower()}`."
            + (f" Pinned tab: `{config.pinned_tab}`." if config.pinned_tab else ""),
            "",
        ]
    lines += [
        'Requests: `{"version":1,"id":…,"method":…,"params":{…}}`; unknown fields are refused. '
        "A failure with `mayHaveCompleted:true` means the action may have happened: observe "
        "(`tab.snapshot`) before acting again. Refs are valid only in their tab's latest snapshot.",
        "",
    ]
    for name in methods:
        m = METHODS[name]
        mut = "mutates" if m.mutates else "read-only"
        if name == "extension.call":
            mut = "mutates per extension"
        lines += [f"## `{name}` ({mut})", "", m.summary, "", f"Result: `{m.result}`", ""]
        if m.params:
            lines += ["| param | type | default | bounds | meaning |", "|---|---|---|---|---|"]
            for p in m.params:
                s = param_json_schema(p)
                bounds = []
                for key, word in (
                    ("minimum", "≥"),
                    ("maximum", "≤"),
                    ("minLength", "len ≥"),
                    ("maxLength", "len ≤"),
                ):
                    if key in s:
                        bounds.append(f"{word} {s[key]}")
                if "enum" in s:
                    bounds.append("only " + ", ".join(f"`{v}`" for v in s["enum"]))
                req = "required" if p.required else ("" if p.default is None else f"`{p.default}`")
                lines.append(f"| `{p.name}` | {p.kind} | {req} | {'; '.join(bounds)} | {p.description} |")
            lines.append("")
    if extensions:
        lines += ["## Extensions", ""]
        for e in extensions.values():
            mut = "mutates" if e.mutates else "read-only"
            lines.append(f"- `{e.name}` ({mut}): {e.description}")
        lines.append("")
    lines += ["## Error codes", ""]
    lines += [f"- `{c}`{' (retryable)' if r else ''}: {d}" for c, (r, d) in ERROR_CODES.items()]
    return "\n".join(lines) + "\n"
