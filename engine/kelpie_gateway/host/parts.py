"""The parts of the reference host's renderer, in one list, and the gateway config they add up to
(CONTRACT.md §2; docs/host.md "Layout of the host").

:data:`PARTS` is every part :class:`~kelpie_gateway.host.browser.ChromiumRenderer` installs, in the order it
tells them the browser's events: the built-in endpoints, the dialogs, the isolated world, what the site
policy's proxy stopped, its routing (a browser on another machine), then the rich extensions (the downloads
after the world: they listen on its sessions). A new rich extension is one module under ``host/extensions/`` (a
:class:`~kelpie_gateway.host.browser.chromium.Part` whose handlers carry their descriptors) and one line here.

:func:`gateway_config` is the only place the host's gateway config is built: the base config, every part's
extension descriptors, ``--read-only`` and the operator's extension filter. ``--config FILE`` is applied on
top by ``host/settings.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from kelpie_gateway import NATIVE_ENDPOINTS
from kelpie_gateway.host.browser.chromium import Part
from kelpie_gateway.host.browser.endpoints import TabEndpoints
from kelpie_gateway.host.browser.routing import SiteRouting
from kelpie_gateway.host.browser.stops import PolicyStops
from kelpie_gateway.host.browser.world import World
from kelpie_gateway.host.extensions.capture import Capture
from kelpie_gateway.host.extensions.console import Console
from kelpie_gateway.host.extensions.dialogs import Dialogs
from kelpie_gateway.host.extensions.downloads import Downloads
from kelpie_gateway.host.extensions.history import History
from kelpie_gateway.host.extensions.inspect import Inspect
from kelpie_gateway.host.extensions.keys import Keys
from kelpie_gateway.host.extensions.network import Network
from kelpie_gateway.host.extensions.pointer import NativeInput
from kelpie_gateway.host.extensions.scroll import Scroll
from kelpie_gateway.host.extensions.site_data import SiteData
from kelpie_gateway.host.extensions.uploads import Uploads
from kelpie_gateway.host.extensions.waits import Waits
from kelpie_gateway.host.files import UPLOAD_EXTENSION
from kelpie_gateway.host.renderer import JsonObject

PARTS: tuple[type[Part], ...] = (
    TabEndpoints,  # get-tabs, switch-tab, new-tab, close-tab, navigate, screenshot
    Dialogs,  # dialog_observe, dialog_accept, dialog_dismiss (recovery extensions)
    World,  # browser-control-evaluate; the world of each document
    PolicyStops,  # the navigations the site policy's proxy stopped (no endpoint)
    SiteRouting,  # the site policy's request routing in a browser that cannot reach its proxy (no endpoint)
    Keys,  # press_key, fill
    Scroll,  # scroll
    History,  # go_back, go_forward
    Waits,  # wait_for_text
    NativeInput,  # click, hover, drag, type_keys
    Console,  # console_messages, page_errors (read-only lane: captured per tab)
    Network,  # network_requests (read-only lane: captured per tab)
    SiteData,  # cookies, storage (read-only lane)
    Inspect,  # links, element, accessibility (read-only lane)
    Downloads,  # every download; downloads_list, resources_list, resources_read (after World: its sessions)
    Uploads,  # upload_file
    Capture,  # screenshot, pdf
)


def extension_descriptors(upload_dirs: Sequence[str] = ()) -> list[JsonObject]:
    """Every part's extension descriptors, in :data:`PARTS` order; ``upload_file``'s description names the
    operator's ``--upload-dir`` folders (``upload_dirs``), so a model knows where its paths may point."""
    descriptors = [dict(descriptor) for part in PARTS for descriptor in part.descriptors]
    for descriptor in descriptors:
        if descriptor["name"] == UPLOAD_EXTENSION:
            allowed = (
                ", ".join(upload_dirs) if upload_dirs else "none: this host was started without --upload-dir"
            )
            descriptor["description"] = f"{descriptor['description']} Allowed folders: {allowed}."
    return descriptors


def gateway_config(
    *,
    browser: bool,
    read_only: bool = False,
    observer: bool = False,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    upload_dirs: Sequence[str] = (),
    retirement_grace_ms: int | None = None,
) -> JsonObject:
    """The gateway config the reference host creates (CONTRACT.md §2): with a browser, every native
    endpoint and every part's extension; without one (``--browser none``), none. ``read_only`` sets
    ``allowActions:false`` (``--read-only``), ``observer`` sets ``observer:true`` (``--observer``: a read-only
    session of one-shot reads without refs, CONTRACT.md §9 v1.2); ``include``/``exclude``
    (``--extensions-include`` / ``--extensions-exclude`` globs) become the ``extensionFilter``;
    ``upload_dirs``: the resolved ``--upload-dir`` folders, named in ``upload_file``'s description.
    ``retirement_grace_ms`` (``--retirement-grace-ms``) sets ``retirementGraceMs``; None leaves the engine's
    own grace, 5000 ms, the one number the contract, the engine and this host use (issue 27: the host used
    2 s, so a page's 3 s handler under a 500 ms ``timeoutMs`` was stopped mid-run and its effect never
    landed)."""
    config: JsonObject
    if browser:
        extensions = extension_descriptors(upload_dirs)
        config = {
            "nativeMethods": [*NATIVE_ENDPOINTS, *(e["method"] for e in extensions)],
            "targeting": "direct",
            "browserAvailable": True,
            "fixedReader": True,
            "allowActions": True,
            "requireAuthorization": True,
            "realm": "isolated",
            "extensions": extensions,
        }
    else:
        config = {"nativeMethods": [], "browserAvailable": False, "fixedReader": False, "realm": "isolated"}
    if read_only or observer:
        config["allowActions"] = False
    if retirement_grace_ms is not None:
        config["retirementGraceMs"] = retirement_grace_ms
    if observer:
        config["observer"] = True
    if include is not None or exclude:
        flt: JsonObject = {}
        if include is not None:
            flt["include"] = list(include)
        if exclude:
            flt["exclude"] = list(exclude)
        config["extensionFilter"] = flt
    return config
