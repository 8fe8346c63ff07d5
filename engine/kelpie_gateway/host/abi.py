"""``--via-abi``: the gateway reached through the C library with ctypes (CONTRACT.md §10).

:class:`AbiGateway` has the same methods as ``kelpie_gateway.Gateway`` (CONTRACT.md §11), so the host's
driver cannot tell them apart; every transaction then crosses the real C ABI. The library is loaded with
``RTLD_GLOBAL`` (a cffi-embedded library loaded ``RTLD_LOCAL`` cannot initialise). Every returned string
is copied and released with ``kelpie_mcp_free_string``.

Library lookup: the ``library`` argument, else ``$KELPIE_GATEWAY_LIBRARY``, else
``<repo>/build/abi/lib/libkelpie_browser_gateway.so``.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from kelpie_gateway import dumps as json_dumps

JsonObject = dict[str, Any]

KELPIE_GATEWAY_OK = 0
KELPIE_GATEWAY_PENDING = 1


def default_library() -> Path:
    """Where ``tools/dev setup`` builds the library (``build/abi/lib``) relative to this source tree."""
    env = os.environ.get("KELPIE_GATEWAY_LIBRARY")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "build" / "abi" / "lib" / "libkelpie_browser_gateway.so"


class AbiError(RuntimeError):
    """The library could not be loaded, or refused the config; ``envelope`` holds its failure envelope."""

    def __init__(self, message: str, envelope: JsonObject | None = None) -> None:
        super().__init__(message)
        self.envelope = envelope


def _text(value: Any) -> bytes:
    if isinstance(value, Mapping | list):
        data = json_dumps(value)
    elif isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
    elif isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
    else:
        data = json_dumps(value)
    # A C string ends at NUL. A raw NUL is never valid JSON, and neither is U+0001, so the swap keeps
    # invalid input invalid instead of letting truncation turn it into a different, valid request.
    return data.replace(b"\x00", b"\x01")


class AbiGateway:
    """A gateway created through ``kelpie_browser_gateway_create``; same surface as ``Gateway``."""

    def __init__(self, config: Any, *, library: str | os.PathLike[str] | None = None) -> None:
        path = Path(library) if library is not None else default_library()
        self.library = path
        """The library this gateway was made through (a one-shot observer beside it is made the same way)."""
        if not path.exists():
            raise AbiError(f"the C library is not built: {path} (run tools/dev setup)")
        try:
            lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise AbiError(f"cannot load {path}: {exc}") from None
        vp, cp = ctypes.c_void_p, ctypes.c_char_p
        lib.kelpie_browser_gateway_create.argtypes = [cp, ctypes.POINTER(vp)]
        lib.kelpie_browser_gateway_create.restype = vp
        lib.kelpie_browser_gateway_destroy.argtypes = [vp]
        lib.kelpie_browser_gateway_destroy.restype = ctypes.c_int32
        for name in ("begin", "begin_mcp", "next", "advance", "cancel"):
            fn = getattr(lib, f"kelpie_browser_gateway_{name}")
            fn.argtypes = [vp, cp]
            fn.restype = vp
        lib.kelpie_browser_gateway_invalidate_refs.argtypes = [vp, cp]
        lib.kelpie_browser_gateway_invalidate_refs.restype = ctypes.c_int32
        lib.kelpie_browser_gateway_version.argtypes = []
        lib.kelpie_browser_gateway_version.restype = cp
        lib.kelpie_mcp_free_string.argtypes = [vp]
        lib.kelpie_mcp_free_string.restype = None
        self._lib = lib
        self.path = path
        error = vp()
        handle = lib.kelpie_browser_gateway_create(_text(config), ctypes.byref(error))
        if not handle:
            envelope = self._take(error.value) if error.value else None
            message = (envelope or {}).get("error", {}).get("message", "create failed")
            raise AbiError(f"the library refused the config: {message}", envelope)
        self._handle: int | None = handle

    @property
    def version(self) -> str:
        """``kelpie_browser_gateway_version()``."""
        raw = self._lib.kelpie_browser_gateway_version()
        return raw.decode("utf-8") if isinstance(raw, bytes) else "?"

    def _take(self, pointer: int | None) -> JsonObject:
        if not pointer:
            return {"step": "rejected", "error": {"code": "INTERNAL", "message": "the library returned NULL"}}
        try:
            raw = ctypes.string_at(pointer)
        finally:
            self._lib.kelpie_mcp_free_string(pointer)
        value = orjson.loads(raw)
        return value if isinstance(value, dict) else {"step": "rejected", "error": {"code": "INTERNAL"}}

    def _call(self, name: str, arg: bytes | None) -> JsonObject:
        fn = getattr(self._lib, f"kelpie_browser_gateway_{name}")
        return self._take(fn(self._handle, arg))

    def begin(self, request: Any) -> JsonObject:
        """``kelpie_browser_gateway_begin``: see ``Gateway.begin``."""
        return self._call("begin", _text(request))

    def begin_mcp(self, message: Any) -> JsonObject:
        """``kelpie_browser_gateway_begin_mcp``: see ``Gateway.begin_mcp``."""
        return self._call("begin_mcp", _text(message))

    def next(self, transaction: str | None = None) -> JsonObject:
        """``kelpie_browser_gateway_next``: see ``Gateway.next``."""
        return self._call("next", None if transaction is None else str(transaction).encode("utf-8"))

    def advance(self, result: Any) -> JsonObject:
        """``kelpie_browser_gateway_advance``: see ``Gateway.advance``."""
        return self._call("advance", _text(result))

    def cancel(self, cancel: Any) -> JsonObject:
        """``kelpie_browser_gateway_cancel``: see ``Gateway.cancel``."""
        return self._call("cancel", _text(cancel))

    def invalidate_refs(self, tab_id: str | None = None) -> None:
        """``kelpie_browser_gateway_invalidate_refs``: see ``Gateway.invalidate_refs``."""
        self._lib.kelpie_browser_gateway_invalidate_refs(
            self._handle, None if tab_id is None else tab_id.encode("utf-8", "replace")
        )

    def close(self) -> None:
        """``kelpie_browser_gateway_destroy``; raises ``AbiError`` while a renderer callback is pending."""
        if self._handle is None:
            return
        rc = self._lib.kelpie_browser_gateway_destroy(self._handle)
        if rc == KELPIE_GATEWAY_PENDING:
            raise AbiError("a renderer callback is pending; retire it before closing")
        self._handle = None
