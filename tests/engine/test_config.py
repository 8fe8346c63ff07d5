"""Config validation (CONTRACT.md §2): every field, defaults, JSON Pointer errors, nothing created."""

from __future__ import annotations

from typing import Any

import pytest
from kelpie_gateway import Gateway, GatewayConfigError

GOOD_EXT = {"name": "dialog_accept", "method": "dialog-accept", "description": "Accept the open dialog.",
            "inputSchema": {"type": "object"}, "mutates": True, "recovery": True}


@pytest.mark.parametrize(
    ("config", "pointer"),
    [
        ({"nativeMethods": "get-tabs"}, "/nativeMethods"),
        ({"nativeMethods": ["Get_Tabs"]}, "/nativeMethods/0"),
        ({"nativeMethods": ["get-tabs", "get-tabs"]}, "/nativeMethods"),
        ({"targeting": "visible"}, "/targeting"),
        ({"browserAvailable": "yes"}, "/browserAvailable"),
        ({"fixedReader": 1}, "/fixedReader"),
        ({"allowActions": None}, "/allowActions"),
        ({"requireAuthorization": "no"}, "/requireAuthorization"),
        ({"realm": "main"}, "/realm"),
        ({"pinnedTab": 3}, "/pinnedTab"),
        ({"colour": "red"}, ""),
        ({"extensions": [{**GOOD_EXT, "name": "Bad-Name"}]}, "/extensions/0/name"),
        ({"extensions": [{**GOOD_EXT, "method": "dialog_accept"}]}, "/extensions/0/method"),
        ({"extensions": [{k: v for k, v in GOOD_EXT.items() if k != "mutates"}]}, "/extensions/0"),
        ({"extensions": [GOOD_EXT, GOOD_EXT]}, "/extensions/1/name"),
        ({"extensions": [{**GOOD_EXT, "inputSchema": {"type": "nonsense"}}]}, "/extensions/0/inputSchema"),
        ({"extensions": [{**GOOD_EXT, "inputSchema": {"type": "string"}}]}, "/extensions/0/inputSchema/type"),
        ({"extensions": [{**GOOD_EXT, "coordinator": "other"}]}, "/extensions/0/coordinator"),
        ({"extensions": [{**GOOD_EXT, "extra": 1}]}, "/extensions/0"),
        ({"extensionFilter": {"include": "x"}}, "/extensionFilter/include"),
        ({"extensionFilter": {"allow": []}}, "/extensionFilter"),
    ],
)
def test_invalid_config_names_the_field(config: dict[str, Any], pointer: str) -> None:
    with pytest.raises(GatewayConfigError) as info:
        Gateway(config)
    env = info.value.envelope
    assert env["success"] is False and env["mayHaveCompleted"] is False
    assert env["error"]["code"] == "INVALID_REQUEST"
    assert env["error"]["message"].startswith(f"{pointer or '/'}: "), env["error"]["message"]
    assert env["error"]["message"].endswith("(config)")


@pytest.mark.parametrize("text", [b"", b"{", b"[]", b"null", b'{"pinnedTab": "\\ud800"}'])
def test_config_that_is_not_an_object_is_refused(text: bytes) -> None:
    with pytest.raises(GatewayConfigError) as info:
        Gateway(text)
    assert info.value.envelope["error"]["code"] in {"INVALID_JSON", "INVALID_REQUEST"}


def test_defaults() -> None:
    gw = Gateway({})
    caps = gw._catalog.capabilities()
    assert caps["targeting"] == "direct" and caps["realm"] == "isolated" and caps["allowActions"] is True
    assert caps["browserAvailable"] is True and caps["methods"] == ["documentation", "capabilities"]
    assert caps["extensions"] == [] and caps["requireAuthorization"] is True


def test_extension_filter_include_and_exclude_globs() -> None:
    exts = [{**GOOD_EXT, "name": n, "method": "m", "mutates": False} for n in ("dialog_accept", "dialog_x", "vision")]
    gw = Gateway({"nativeMethods": ["m"], "extensions": exts,
                  "extensionFilter": {"include": ["dialog_*", "vision"], "exclude": ["*_x"]}})
    assert gw._catalog.capabilities()["extensions"] == ["dialog_accept", "vision"]
