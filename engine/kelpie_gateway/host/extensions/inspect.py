"""Reading the document more closely, read-only and value-free (docs/host.md "The read-only lane"):

* ``links {tabId, offset?, limit?}``: the links of the document(s) as ``tab.snapshot`` sees them (the same
  walk, visibility, name and resolved URL; ``kelpie_gateway.links_script``), paged by ``offset``; each
  ``url`` without userinfo and credential-named parameters (``redaction.redact_url``, the rule of every URL
  the gateway reports).
* ``element {tabId, ref}``: one captured element's box, visibility, computed role, name, description,
  states and attributes (``kelpie_gateway.element_script``): never a ``value`` attribute, nor on a text-entry
  control an attribute whose name says value; URL-valued attributes through ``redact_url``, and the value of
  an attribute whose name says token, key, secret, password, auth or session replaced by ``REDACTED``.
* ``accessibility {tabId, ref?, maxNodes?}``: the browser's own accessibility tree (CDP
  ``Accessibility.getFullAXTree`` of the main frame), or the subtree of a captured element, as a nested tree
  of ``{role, name?, description?, value?, properties?, children?}``, ignored nodes left out (their children
  kept), at most ``maxNodes`` nodes. Value-free: a text field, an editable region or any node the browser
  marks ``editable`` is shown without its value and without its children (the text inside it is what a
  person typed); ``value`` stays only on range widgets (slider, scrollbar, progressbar, meter).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from kelpie_gateway import element_node_script, element_script, kept_script, links_script
from kelpie_gateway.host.browser.chromium import endpoint
from kelpie_gateway.host.browser.world import World
from kelpie_gateway.host.renderer import JsonObject, fail

from .base import REF, TAB, Extension, no_captured_node, schema
from .redaction import REDACTED, redact_text, redact_url, secret_name

LINKS_DEFAULT = 200
LINKS_PAGE_MAX = 500
AX_DEFAULT = 500
AX_MAX = 2_000
AX_DEPTH_MAX = 100
NAME_MAX = 500
URL_ATTRIBUTES = frozenset(
    {
        "href",
        "src",
        "action",
        "formaction",
        "poster",
        "cite",
        "data",
        "background",
        "ping",
        "xlink:href",
        "longdesc",
        "manifest",
        "codebase",
        "usemap",
        "itemid",
        "srcset",
        "imagesrcset",
    }
)
RANGE_ROLES = frozenset({"slider", "scrollbar", "progressbar", "meter"})
TEXT_ENTRY_ROLES = frozenset({"textbox", "searchbox"})
NOISE_ROLES = frozenset({"InlineTextBox"})
SPLICED_ROLES = frozenset({"generic", "none", "presentation"})
PROPERTIES = frozenset(
    {
        "checked",
        "pressed",
        "expanded",
        "selected",
        "disabled",
        "required",
        "readonly",
        "invalid",
        "focused",
        "focusable",
        "modal",
        "multiline",
        "multiselectable",
        "level",
        "hasPopup",
        "busy",
        "orientation",
        "autocomplete",
        "live",
        "atomic",
        "url",
        "roledescription",
    }
)
RANGE_PROPERTIES = frozenset({"valuemin", "valuemax", "valuetext"})
TWO_WAY = frozenset({"checked", "pressed", "expanded", "selected"})
"""States shown when false too (an unchecked box says something); other false properties are left out."""


def _cut(text: str, limit: int = NAME_MAX) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


class Inspect(Extension):
    """``links``, ``element`` and ``accessibility``; see the module docstring."""

    @endpoint(
        {
            "name": "links",
            "method": "links",
            "description": "List the links of the tab's page as a person sees them (read-only): each link's text "
            "and resolved url, in page order, offset..offset+limit (default 200, at most 500). total counts "
            "every link; next is the offset of the following page.",
            "inputSchema": schema(
                {
                    "tabId": TAB,
                    "offset": {"type": "integer", "minimum": 0, "maximum": 10_000},
                    "limit": {"type": "integer", "minimum": 1, "maximum": LINKS_PAGE_MAX},
                },
                ["tabId"],
            ),
            "mutates": False,
        }
    )
    async def links(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, offset?, limit?}`` → ``{tabId, url, title, total, offset, links, next?, truncated}``."""
        tab_id = self.tab(params).tab_id
        offset = int(params.get("offset") or 0)
        result = await self.run_script(
            tab_id, links_script(offset=offset, limit=int(params.get("limit") or LINKS_DEFAULT))
        )
        if result.get("success") is not True:
            return result
        value = result.get("value")
        if not isinstance(value, dict) or not isinstance(value.get("links"), list):
            return fail("RENDERER_FAILED", "the links script answered no list", mayHaveCompleted=False)
        links = []
        for link in value["links"]:
            if isinstance(link, dict):
                if isinstance(link.get("url"), str):
                    link = {**link, "url": redact_url(link["url"])}
                links.append(link)
        total = int(value.get("total") or 0)
        out: JsonObject = {
            "success": True,
            "tabId": tab_id,
            "url": redact_url(str(value.get("url", ""))),
            "title": str(value.get("title", "")),
            "total": total,
            "offset": offset,
            "links": links,
            "truncated": bool(value.get("truncated")),
        }
        if offset + len(links) < total:
            out["next"] = offset + len(links)
        return out

    @endpoint(
        {
            "name": "element",
            "method": "element",
            "description": "Describe one element of the latest tab.snapshot (read-only): its box (CSS pixels, "
            "viewport-relative), whether it is visible (and why not), computed role, name, description, "
            "states and attributes — never its value.",
            "inputSchema": schema({"tabId": TAB, "ref": REF}, ["tabId", "ref"]),
            "mutates": False,
            "refArguments": ["ref"],
        }
    )
    async def element(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, ref}`` → ``{tabId, ref, tag, role, name, …}`` (``js/element.js``)."""
        tab_id = self.tab(params).tab_id
        captured = self.captured(params)
        if captured is None:
            return no_captured_node()
        result = await self.run_script(tab_id, element_script(*captured))
        if result.get("success") is not True:
            return result
        value = result.get("value")
        if not isinstance(value, dict):
            return fail("RENDERER_FAILED", "the element script answered no object", mayHaveCompleted=False)
        attributes = []
        for attribute in value.get("attributes") or []:
            name, text = str(attribute.get("name", "")), str(attribute.get("value", ""))
            lower = name.lower()
            if secret_name(lower) and lower not in (
                "aria-describedby",
                "aria-labelledby",
                "aria-keyshortcuts",
            ):
                text = REDACTED
            elif lower in URL_ATTRIBUTES:
                text = redact_text(text, full=True) if "," in text and "srcset" in lower else redact_url(text)
            attributes.append({"name": name, "value": text})
        shown: JsonObject = {**value, "attributes": attributes}
        if isinstance(shown.get("url"), str):
            shown["url"] = redact_url(shown["url"])
        return {"success": True, "tabId": tab_id, "ref": params.get("ref"), **shown}

    @endpoint(
        {
            "name": "accessibility",
            "method": "accessibility",
            "description": "Read the browser's own accessibility tree of the tab (read-only), or of one element "
            "of the latest tab.snapshot and what is inside it: role, name, description and states of each "
            "node, at most maxNodes (default 500). Text fields show no value and no content.",
            "inputSchema": schema(
                {"tabId": TAB, "ref": REF, "maxNodes": {"type": "integer", "minimum": 1, "maximum": AX_MAX}},
                ["tabId"],
            ),
            "mutates": False,
            "refArguments": ["ref"],
        }
    )
    async def accessibility(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, ref?, maxNodes?}`` → ``{tabId, ref?, nodes, truncated, tree}``."""
        tab = self.tab(params)
        world_part = self.renderer.part(World)
        if world_part is None:
            return fail("RENDERER_FAILED", "this host has no isolated world", mayHaveCompleted=False)
        world = await world_part.world(tab)
        cdp = world.cdp
        below: int | None = None
        if params.get("ref") is not None:
            captured = self.captured(params)
            if captured is None:
                return no_captured_node()
            node = await self._node_of(world, element_node_script(*captured))
            if isinstance(node, dict):
                return node
            below = node
        tree = await cdp.send("Accessibility.getFullAXTree", {})
        nodes = tree.get("nodes") or []
        budget = int(params.get("maxNodes") or AX_DEFAULT)
        shaped, count, truncated = _ax_tree(nodes, below, budget)
        if shaped is None:
            return fail(
                "NODE_REPLACED", "the element has no node in the accessibility tree", mayHaveCompleted=False
            )
        out: JsonObject = {"success": True, "tabId": tab.tab_id}
        if params.get("ref") is not None:
            out["ref"] = params["ref"]
        return {**out, "nodes": count, "truncated": truncated, "tree": shaped}

    @staticmethod
    async def _node_of(world: Any, script: str) -> int | JsonObject:
        """The backend DOM node id of the element ``script`` answers (evaluated in ``world`` without
        ``returnByValue``), or the refusal to answer (NODE_REPLACED when the node is gone)."""
        short_form = kept_script(script)
        params = {"contextId": world.context_id, "returnByValue": False, "awaitPromise": True}
        expression = short_form[1] if short_form is not None and short_form[0] in world.kept else script
        reply = await world.cdp.send("Runtime.evaluate", {"expression": expression, **params})
        remote = reply.get("result") or {}
        if remote.get("subtype") != "node" and expression is not script:  # the world lacked the bundle
            reply = await world.cdp.send("Runtime.evaluate", {"expression": script, **params})
            remote = reply.get("result") or {}
        object_id = remote.get("objectId")
        try:
            if remote.get("subtype") != "node" or not object_id:
                return fail(
                    "NODE_REPLACED",
                    "the element was replaced or removed since the snapshot; take a new snapshot",
                    mayHaveCompleted=False,
                )
            described = await world.cdp.send("DOM.describeNode", {"objectId": object_id})
            return int(described["node"]["backendNodeId"])
        finally:
            if object_id:
                with contextlib.suppress(Exception):
                    await world.cdp.send("Runtime.releaseObject", {"objectId": object_id})


def _value_of(field: Any) -> Any:
    return field.get("value") if isinstance(field, dict) else None


def _ax_tree(nodes: list[JsonObject], below: int | None, budget: int) -> tuple[JsonObject | None, int, bool]:
    """The nested, value-free tree of CDP AX ``nodes`` from the root (or from the node of backend DOM id
    ``below``), at most ``budget`` nodes: ``(tree or None, nodes shown, truncated)``."""
    by_id = {str(n.get("nodeId")): n for n in nodes}
    if below is None:
        root = next((n for n in nodes if not n.get("parentId")), None)
    else:
        root = next((n for n in nodes if n.get("backendDOMNodeId") == below), None)
    if root is None:
        return None, 0, False
    state: dict[str, int] = {"count": 0, "truncated": 0}

    def children_of(node: JsonObject, depth: int) -> list[JsonObject]:
        out: list[JsonObject] = []
        for child_id in node.get("childIds") or []:
            child = by_id.get(str(child_id))
            if child is None:
                continue
            out.extend(shape(child, depth + 1))
        return out

    def shape(node: JsonObject, depth: int) -> list[JsonObject]:
        role = str(_value_of(node.get("role")) or "")
        if role in NOISE_ROLES:
            return []
        if depth > AX_DEPTH_MAX or state["count"] >= budget:
            state["truncated"] = 1
            return []
        if node.get("ignored"):
            return children_of(node, depth)
        props = {
            p.get("name"): _value_of(p.get("value"))
            for p in node.get("properties") or []
            if isinstance(p, dict)
        }
        editable = bool(props.get("editable")) or role in TEXT_ENTRY_ROLES
        name = str(_value_of(node.get("name")) or "")
        if role in SPLICED_ROLES and not name and not editable:
            return children_of(node, depth)
        state["count"] += 1
        item: JsonObject = {"role": role}
        if name:
            item["name"] = _cut(name)
        description = _value_of(node.get("description"))
        if description:
            item["description"] = _cut(str(description))
        value = _value_of(node.get("value"))
        if role in RANGE_ROLES and isinstance(value, int | float) and not isinstance(value, bool):
            item["value"] = value
        shown = {}
        for key, v in props.items():
            if not isinstance(key, str) or v is None or v == "":
                continue
            if (v is False or v == "false") and key not in TWO_WAY:
                continue
            if key in PROPERTIES or (key in RANGE_PROPERTIES and role in RANGE_ROLES):
                shown[key] = redact_url(v) if key == "url" and isinstance(v, str) else v
        if editable:
            shown["editable"] = True
        if shown:
            item["properties"] = shown
        if not editable:
            kids = children_of(node, depth)
            if (
                len(kids) == 1
                and kids[0].get("role") == "StaticText"
                and kids[0].get("name") == item.get("name")
            ):
                kids = []
                state["count"] -= 1
            if kids:
                item["children"] = kids
        return [item]

    shaped = shape(root, 0)
    if not shaped:
        return None, 0, bool(state["truncated"])
    tree: JsonObject = shaped[0] if len(shaped) == 1 else {"role": "group", "children": shaped}
    return tree, state["count"], bool(state["truncated"])
