"""Fixed reader and captured-node action scripts (contract §8-§9).

The JavaScript lives as committed sources in ``kelpie_gateway/js/``. A *bundle* is one JavaScript
function expression, ``(async function kelpieReader(P) { … })``, assembled from ``prelude.js``,
``core.js`` and one entry file (``snapshot.js``, ``click.js``, …). ``prelude.js`` and ``core.js`` are not
files: each is the concatenation, in file-name order, of the parts in ``js/prelude/`` and ``js/core/``
(one section of the reader per part, docs/reader.md "Source map"; :func:`source_parts`), so a bundle
reads exactly as if each were one file. ``tools/gen_reader.py`` (build step ``tools/build.d/20-reader.sh``) writes
the bundles to ``build/generated/js/`` with a digest of their sources; at run time this module uses a
built bundle whose digest matches the committed sources and otherwise assembles the very same bundle in
memory with the same function (:func:`assemble_bundle`), so the two can never differ.

A *script* is a self-contained JavaScript expression that the host evaluates in the isolated world
``KelpieBrowserControl`` of the tab's main frame (``Runtime.evaluate`` with ``returnByValue`` and
``awaitPromise``): ``<loader>("<slot>", () => <bundle>)(<parameters as a JSON literal>)``. The *loader*
(:data:`LOADER`) returns the bundle function kept in the world's global under ``slot`` — a name made of
the bundle's name and the digest of the sources it was built from (:func:`bundle_slot`) — and installs
it there first when that document's world does not hold it yet. So a document compiles each bundle once
and later calls reuse the compiled (and JIT-warmed) function, while a script still carries its whole
bundle and works in any world, fresh or not; a world can never run another build's bundle, since a
different build has a different slot. A host may install bundles ahead of the first call with
:func:`preload_script` (the same loader; docs/reader.md "Loading the bundles"). Parameters are only
ever injected as one JSON literal that is pure ASCII with ``<``, ``>`` and ``&`` escaped, so no page or
client text (quotes, ``</script>``, U+2028, astral characters, lone surrogates) can change the
script's meaning.

The functions raise :class:`ValueError` for arguments the engine should never pass (a malformed key or
handle, out-of-range bounds); they never touch I/O.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

__all__ = [
    "BUNDLES",
    "FRAME_TAG_FUNCTION",
    "FRAME_WANTS",
    "KEPT_LITERAL_LIMIT",
    "KEPT_MISSING",
    "LOADER",
    "MAX_CHARS_LIMIT",
    "MAX_ELEMENTS_LIMIT",
    "WARM_UP",
    "WORLD_NAME",
    "assemble_bundle",
    "assemble_entry",
    "bundle",
    "bundle_missing",
    "bundle_slot",
    "bundles_status",
    "click_script",
    "collect_browser_selector_snapshot_expression",
    "element_box_script",
    "element_node_script",
    "element_script",
    "fill_script",
    "find_text_script",
    "focus_script",
    "frame_compose_script",
    "frame_part_script",
    "kept_script",
    "links_script",
    "new_document_script",
    "observer_script",
    "pointer_aim_script",
    "pointer_frame_script",
    "pointer_report_script",
    "preload_script",
    "script_parameters",
    "scroll_script",
    "snapshot_script",
    "source_parts",
    "sources_digest",
    "storage_script",
    "type_script",
    "upload_files_script",
    "upload_target_script",
    "write_bundles",
]

WORLD_NAME: Final = "KelpieBrowserControl"
MAX_CHARS_LIMIT: Final = 12000
MAX_ELEMENTS_LIMIT: Final = 200
MAX_TEXT_CODE_POINTS: Final = 200000

JS_DIR: Final = Path(__file__).resolve().parent / "js"
BUILD_DIR: Final = Path(__file__).resolve().parents[2] / "build" / "generated" / "js"
#: Sources every bundle starts with, in this order; each is assembled from its folder of parts
#: (``prelude.js`` from ``js/prelude/*.js``, ``core.js`` from ``js/core/*.js``; :func:`source_parts`).
COMMON_SOURCES: Final = ("prelude.js", "core.js")
#: bundle name -> entry source file (in ``js/``). Only what hosts run ships here; a script of the
#: tests' own (tests/browser/js/) is assembled on the same prelude and core with :func:`assemble_entry`.
BUNDLES: Final[Mapping[str, str]] = {
    "snapshot": "snapshot.js",
    "click": "click.js",
    "type": "type.js",
    "selector-snapshot": "selector_snapshot.js",
    "focus": "focus.js",
    "fill": "fill.js",
    "scroll": "scroll.js",
    "find-text": "find_text.js",
    "links": "links.js",
    "element": "element.js",
    "storage": "storage.js",
    "files": "files.js",
    "pointer": "pointer.js",
}
DIGEST_MARK: Final = "// kelpie-reader-sources-sha256: "

_KEY_RE: Final = re.compile(r"[0-9a-f]{32}")
_HANDLE_RE: Final = re.compile(r"[0-9a-f]{16}-[0-9a-z]{1,13}")


def source_parts(name: str) -> tuple[str, ...]:
    """The files (paths relative to ``js/``) whose concatenation is source `name`: for a common source
    (:data:`COMMON_SOURCES`) the ``.js`` parts of its folder in file-name order, else the file itself.
    Raises FileNotFoundError when a common source's folder holds no part (a broken install must not
    assemble a reader without its core)."""
    if name not in COMMON_SOURCES:
        return (name,)
    folder = name.removesuffix(".js")
    parts = tuple(f"{folder}/{p.name}" for p in sorted((JS_DIR / folder).glob("*.js"), key=lambda p: p.name))
    if not parts:
        raise FileNotFoundError(f"no reader sources in {JS_DIR / folder}")
    return parts


def _source_text(name: str) -> str:
    return "".join((JS_DIR / part).read_text(encoding="utf-8") for part in source_parts(name))


def sources_digest() -> str:
    """SHA-256 (hex) over every committed JS source, in a fixed order; names a bundle generation. A
    common source counts as the one text its parts make (:func:`source_parts`), so how the parts are
    cut does not change the digest, only what they say does."""
    h = hashlib.sha256()
    for name in (*COMMON_SOURCES, *sorted(set(BUNDLES.values()))):
        h.update(name.encode())
        h.update(b"\0")
        h.update(_source_text(name).encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def assemble_bundle(name: str) -> str:
    """Assemble bundle `name` (a key of :data:`BUNDLES`) from the committed sources.

    Returns the text of one JavaScript function expression ``(async function kelpieReader(P) {…})``
    whose value is the entry's answer; every exception inside is turned into a RENDERER_FAILED value.
    Raises KeyError for an unknown bundle name.
    """
    entry = BUNDLES[name]
    return assemble_entry(name, entry, _source_text(entry))


def assemble_entry(name: str, source: str, text: str) -> str:
    """A bundle made of the shared sources and the entry `text` (which defines ``async function main(P)``),
    exactly as :func:`assemble_bundle` makes the bundles of :data:`BUNDLES`: `name` and `source` (the
    entry's file name) only label it. For a script that is not one of this package's (a test's own entry
    on the same reader); call the result as ``<bundle>(<js_literal(params)>)``."""
    parts = [f"// Kelpie fixed reader bundle {name!r}: generated from kelpie_gateway/js, never edited."]
    parts.append('(async function kelpieReader(P) {\n"use strict";')
    for common in COMMON_SOURCES:
        parts.append(f"// ---- {common}\n{_source_text(common)}")
    parts.append(f"// ---- {source}\n{text}")
    parts.append("return await guard(main);\n})")
    return "\n".join(parts)


def _built_path(name: str) -> Path:
    return BUILD_DIR / f"{name}.js"


def write_bundles(out_dir: Path | None = None) -> list[Path]:
    """Write every bundle to `out_dir` (default build/generated/js), each headed by the sources digest.

    Idempotent: files whose content is already current are left untouched; a bundle an earlier build
    wrote there under a name no longer in :data:`BUNDLES` (a ``.js`` file headed by the digest mark) is
    removed. Returns the paths written or kept.
    """
    target = out_dir or BUILD_DIR
    target.mkdir(parents=True, exist_ok=True)
    digest = sources_digest()
    written = []
    for name in BUNDLES:
        path = target / f"{name}.js"
        text = f"{DIGEST_MARK}{digest}\n{assemble_bundle(name)}\n"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    for path in sorted(target.glob("*.js")):
        if path not in written and path.read_text(encoding="utf-8").startswith(DIGEST_MARK):
            path.unlink()
    return written


@functools.cache
def bundle(name: str) -> str:
    """The bundle `name`: the built file when it matches the committed sources, else assembled in memory."""
    path = _built_path(name)
    try:
        built = path.read_text(encoding="utf-8")
    except OSError:
        built = ""
    first, _, rest = built.partition("\n")
    if first == DIGEST_MARK + sources_digest():
        return rest.rstrip("\n")
    return assemble_bundle(name)


def js_literal(value: Any) -> str:
    """`value` as a JSON literal that is also a safe JavaScript expression in any embedding.

    Pure ASCII (every non-ASCII code unit, U+2028/U+2029 and lone surrogates are ``\\uXXXX``), with
    ``<``, ``>`` and ``&`` escaped so the text can never close a ``<script>`` element or an HTML comment.
    """
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


LOADER: Final = (
    "(function kelpieLoad(slot, make) {"
    ' "use strict";'
    " const kept = Object.getOwnPropertyDescriptor(globalThis, slot);"
    ' if (kept && typeof kept.value === "function") return kept.value;'
    " const run = make();"
    " Object.defineProperty(globalThis, slot, { value: run, enumerable: false, configurable: false, writable: false });"
    " return run;"
    " })"
)
"""The loader every script starts with: ``LOADER(slot, make)`` is the function kept in the world's own
global property ``slot`` (a non-enumerable, non-writable, non-configurable data property — an inherited
or accessor property never counts), else ``make()``'s, stored there first. Throws (the host then answers
RENDERER_FAILED) only if something else already occupies ``slot``, which in the isolated world nothing
but an earlier loader can."""


@functools.cache
def bundle_slot(name: str) -> str:
    """Global property name under which a world keeps bundle `name` of this build:
    ``__kelpieBundle_<name>_<sources digest>`` (``-`` in the name becomes ``_``). Raises KeyError for
    an unknown bundle name."""
    if name not in BUNDLES:
        raise KeyError(name)
    return f"__kelpieBundle_{name.replace('-', '_')}_{sources_digest()}"


@functools.cache
def _loaded(name: str) -> str:
    return f'{LOADER}("{bundle_slot(name)}", () => {bundle(name)})'


def _script(name: str, params: Mapping[str, Any]) -> str:
    return f"{_loaded(name)}({js_literal(dict(params))})"


def preload_script(names: tuple[str, ...] = ("snapshot",)) -> str:
    """An expression that installs the bundles `names` (keys of :data:`BUNDLES`) in the world it runs
    in, exactly as the scripts' own loader would on their first call; its value is the number of bundles
    named. Optional: a host may run it in a new document's ``KelpieBrowserControl`` world ahead of the
    first script so that call finds its bundle compiled. The text depends only on this build, never on a
    gateway or document (an engine compiling it once per process can reuse that compilation). Raises
    KeyError for an unknown bundle name."""
    return _preload(tuple(names))


@functools.cache
def _preload(names: tuple[str, ...]) -> str:
    loads = ", ".join(_loaded(name) for name in names)
    return f"[{loads}].length"


def new_document_script(names: tuple[str, ...] = ("snapshot", "click", "type")) -> str:
    """:func:`preload_script` for a host to register once per tab so that the browser runs it in the
    ``KelpieBrowserControl`` world of every new document as the document is created (CDP
    ``Page.addScriptToEvaluateOnNewDocument`` with ``worldName``), before any page script runs. It installs
    the bundles only in a top-level document (a frame's world gets only :func:`value_watch`: fixed scripts
    run in the main frame's world); value: the number of bundles named there, else 0. Every document, a
    frame's too, first starts :func:`value_watch`. A constant text, so a renderer
    compiles it once and every later document reuses that compilation.

    When ``"snapshot"`` is among `names`, the document's snapshot bundle also *warms up* once, in a task
    of its own right after the document's ``load`` event (:data:`WARM_UP`): it reads a small inert
    document of its own, never the page, so the first real snapshot finds the world's
    reader compiled and its inline caches warm (docs/reader.md "Warm-up"). Raises KeyError for an
    unknown bundle name."""
    return _new_document(tuple(names))


WARM_UP: Final = (
    "(function kelpieWarm(run) {"
    ' "use strict";'
    " const step = (doc, part) => { setTimeout(() => { run({ warm: true, doc, part }).then((v) => {"
    " if (v && v.more === true) step(v.doc, part + 1); }); }, 0); };"
    ' if (document.readyState === "complete") step(null, 0);'
    ' else addEventListener("load", () => step(null, 0), { once: true });'
    " })"
)
"""``WARM_UP(run)``: once the document has loaded, call the snapshot bundle ``run`` with ``{warm: true,
doc, part}`` for each part of its warm-up document in turn, each call in a task of its own, the first
after ``load`` and its listeners: ``load`` itself is never held up for it, and a call that arrives
meanwhile (the reference host's first-layout evaluation after a navigation, a snapshot) waits for one
part at most; the other parts run while that answer travels to the client. Every name it uses
(``setTimeout``, ``addEventListener``, ``document``, the promise's ``then``) is the isolated world's own, which no page script can replace; the listener and the
timers are invisible to the page."""


def value_watch() -> str:
    """An expression that starts watching, in the world it runs in, which elements of its document a
    person set a value on (``js/core/24-values.js``, the same text the bundles use; value: that set). The
    reader names no button from such an element's ``value`` (docs/reader.md "Value-free"; issue 27)."""
    return _value_watch()


@functools.cache
def _value_watch() -> str:
    return f"({_source_text_of('core/24-values.js')}\n)(globalThis)"


def _source_text_of(part: str) -> str:
    return (JS_DIR / part).read_text(encoding="utf-8")


@functools.cache
def _new_document(names: tuple[str, ...]) -> str:
    watch = _value_watch()  # every document, frames too: a frame's fields are watched from its creation
    if "snapshot" not in names:
        return f"({watch}, globalThis.top === globalThis ? {_preload(names)} : 0)"
    loads = ", ".join(_loaded(name) for name in names)
    warm = names.index("snapshot")
    return (
        f"({watch}, globalThis.top === globalThis ?"
        f" ((runs) => ({WARM_UP}(runs[{warm}]), runs.length))([{loads}]) : 0)"
    )


KEPT_MISSING: Final = "kelpieBundleMissing"
"""The one member of the value a :func:`kept_script` expression answers, without running anything, in a
world that does not hold the bundle: ``{"kelpieBundleMissing": <slot>}``."""

KEPT_LITERAL_LIMIT: Final = 65536
"""Parameter literals longer than this (characters) are not shortened by :func:`kept_script`."""

_KEPT: Final = (
    "(function kelpieKept(slot) {"
    ' "use strict";'
    " const kept = Object.getOwnPropertyDescriptor(globalThis, slot);"
    ' return kept && typeof kept.value === "function" ? kept.value : null;'
    " })"
)


@functools.cache
def _slots() -> dict[str, str]:
    return {bundle_slot(name): name for name in BUNDLES}


def _split(script: str) -> tuple[str, str] | None:
    """``(bundle name, parameter literal)`` of a script of this build, exactly
    ``<loader>("<slot>", () => <bundle>)(<literal>)``; None for anything else (the literal unchecked)."""
    if not isinstance(script, str) or not script.startswith(LOADER + '("'):
        return None
    start = len(LOADER) + 2
    end = script.find('"', start)
    name = _slots().get(script[start:end]) if end > 0 else None
    if name is None:
        return None
    prefix = _loaded(name) + "("
    if not (script.startswith(prefix) and script.endswith(")")):
        return None
    return name, script[len(prefix) : -1]


def script_parameters(script: str) -> tuple[str, dict[str, Any]] | None:
    """``(bundle name, parameters)`` of a script of this build (a key of :data:`BUNDLES` and the object the
    script passes its bundle, e.g. ``{"key", "handle"}`` of a click), or None for any other text — another
    build's script, a host's own, a tail that is not one JSON object. For a host that must know where a
    script acts (docs/host.md "Frames": a handle's registry names the document it lives in). Never raises."""
    split = _split(script)
    if split is None:
        return None
    try:
        params = json.loads(split[1])
    except (ValueError, RecursionError):
        return None
    return (split[0], params) if isinstance(params, dict) else None


def kept_script(script: str) -> tuple[str, str] | None:
    """The short form of a script of this module for a world that already holds its bundle (docs/reader.md
    "Loading the bundles"): ``(slot, expression)``, or None when `script` is not exactly
    ``<loader>("<slot>", () => <bundle>)(<one JSON value>)`` of this build.

    Where the world's global has ``slot`` (a function, as the loader keeps it), the expression calls that
    function with the script's own parameter literal — what the whole script does there, since its loader
    would return that same function — without shipping or parsing the bundle. Where it has not, the
    expression runs nothing (it only reads that property) and answers ``{KEPT_MISSING: slot}``
    (:func:`bundle_missing`); the caller then evaluates the whole `script`, once. None also when the
    parameters are longer than :data:`KEPT_LITERAL_LIMIT` characters (a long ``text``): checking them
    would cost more than the bundle's bytes save. Never raises."""
    split = _split(script)
    if split is None:
        return None
    name, literal = split
    if len(literal) > KEPT_LITERAL_LIMIT:
        return None
    try:
        json.loads(literal)  # one JSON value and nothing else: the call's only argument, as in `script`
    except (ValueError, RecursionError):  # RecursionError: a literal nested deeper than json can parse
        return None
    slot = bundle_slot(name)
    missing = js_literal({KEPT_MISSING: slot})
    return slot, f'((run) => run ? run({literal}) : {missing})({_KEPT}("{slot}"))'


def bundles_status() -> tuple[int, int]:
    """``(bundles, built)``: how many reader bundles there are, and how many of them are built under
    ``BUILD_DIR`` from the current sources. Assembles each from its sources first, so a package whose
    ``js/`` sources are incomplete raises (``OSError``, ``KeyError`` or ``ValueError``); ``kelpie-gateway
    doctor`` reports it."""
    built = 0
    for name in BUNDLES:
        assemble_bundle(name)
        path = BUILD_DIR / f"{name}.js"
        built += path.is_file() and path.read_text(encoding="utf-8").startswith(
            DIGEST_MARK + sources_digest()
        )
    return len(BUNDLES), built


def bundle_missing(value: Any, slot: str) -> bool:
    """True when `value` is what a :func:`kept_script` expression for `slot` answers in a world without
    that bundle (nothing ran there)."""
    return isinstance(value, dict) and len(value) == 1 and value.get(KEPT_MISSING) == slot


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
        raise ValueError("key must be 32 lowercase hexadecimal characters")


def _check_handle(handle: str) -> None:
    if not isinstance(handle, str) or not _HANDLE_RE.fullmatch(handle):
        raise ValueError("handle is not a reader handle")


def _check_bound(name: str, value: Any, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise ValueError(f"{name} must be an integer in 1..{limit}")
    return value


def snapshot_script(
    key: str,
    *,
    max_chars: int,
    max_elements: int,
    scope: str | None = None,
    cursor: Mapping[str, Any] | None = None,
    include: str | None = None,
    find: Mapping[str, str] | None = None,
    since: str | None = None,
) -> str:
    """Script for ``tab.snapshot`` (contract §3, §8-§9 with the v1.1 and v1.2 additions).

    `key`: the per-gateway key (32 lowercase hex). `max_chars`: 1..12000 UTF-16 code units of `text`;
    `max_elements`: 1..200 elements. `scope`: a handle whose subtree alone is read (a new snapshot).
    `cursor`: a continuation position ``{snapshot, textAt, elementAt}`` exactly as an earlier answer's
    ``rest`` gave it: the next page of that same read (its captured order: removed elements are skipped
    and counted in ``removed``, text resumes where the previous page stopped). `include`: ``"all"``
    (default) or ``"controls"`` (priority classes 1–5 only, no text). `find`: ``{role?, name?, text?}``
    (each a non-empty string of at most 200 code points, at least one given): only the matching elements,
    and as ``text`` the lines around each match. `since`: the ``token`` of the kept read to compare with.
    `include`, `find` and `since` reads do not compose frames read in their own worlds (docs/reader.md
    "Frames and v1.2 reads"): such a frame is its element's placeholder (``unreadable:"unavailable"``).

    The script's value is ``{url, title, text, truncated, elements:[{handle, tag, role, label, …}], token,
    removed?, rest?, since?}`` where the optional element fields are ``type`` (inputs), ``level``
    (headings), ``states`` (sorted, from :data:`kelpie_gateway.schema.ELEMENT_STATES`), ``value`` (range
    widgets: ``{now, min?, max?, text?}``), ``url`` (links, ≤ 500 UTF-16 units), ``unreadable``
    (``"closed-shadow-root"`` | ``"cross-origin-frame"`` | ``"blocked-by-policy"`` | ``"unavailable"`` |
    ``"limit"``), ``frame`` (``{origin, depth}`` inside a frame, §9 v1.2), ``shadow`` (true inside an open
    shadow tree) and ``text`` (visible text of a clickable
    element that has no accessible name); ``token`` names this read; ``removed`` (a continuation page)
    counts the elements of the captured order skipped because they left the document; ``rest`` (present
    while anything is left) is the position of the next page; ``since`` (a `since` read) is ``{changed:
    [old handle | null per changed element], added: n, removed: [old handles], textAdded, textRemoved}``
    with the changed elements first in ``elements``, then the ``n`` added ones. It never contains form
    values, editable content or password-like text. Refusals: ``NODE_REPLACED`` (the scope node is
    gone), ``STALE_SNAPSHOT`` (the cursor's or since's read is no longer the kept one, or — a read that
    composed frames — the document changed since), both with
    ``mayHaveCompleted:false``; on an internal failure ``{error:{code:"RENDERER_FAILED", message},
    mayHaveCompleted:false}``.
    Raises ValueError for a malformed key, scope, cursor, include, find or since, out-of-range bounds, or
    a cursor together with anything that selects what a new snapshot reads.
    """
    _check_key(key)
    params: dict[str, Any] = {
        "key": key,
        "maxChars": _check_bound("max_chars", max_chars, MAX_CHARS_LIMIT),
        "maxElements": _check_bound("max_elements", max_elements, MAX_ELEMENTS_LIMIT),
    }
    if cursor is not None and (
        scope is not None or include not in (None, "all") or find is not None or since is not None
    ):
        raise ValueError("a cursor continues its own snapshot: no scope, include, find or since with it")
    if scope is not None and since is not None:
        raise ValueError("a since read takes the scope of the snapshot it compares with")
    if scope is not None:
        _check_handle(scope)
        params["scope"] = scope
    if cursor is not None:
        params["cursor"] = _check_position(cursor)
    if include is not None:
        if include not in ("all", "controls"):
            raise ValueError("include must be 'all' or 'controls'")
        if include == "controls":
            params["include"] = include
    if find is not None:
        params["find"] = _check_find(find)
    if since is not None:
        _check_handle(since)
        params["since"] = since
    return _script("snapshot", params)


def observer_script(*, max_chars: int = MAX_CHARS_LIMIT, max_elements: int = MAX_ELEMENTS_LIMIT) -> str:
    """Script for an observer's ``tab.snapshot`` (contract §9 v1.2, config ``observer: true``): the snapshot
    bundle's reader in its one-shot mode — the same reader, rules and bounds as :func:`snapshot_script`,
    but no registry is made or read and nothing is installed in the page (no ``pagehide``/``popstate``/
    ``hashchange`` listener, no ``MutationObserver``, no kept read), and the read is one page.

    `max_chars`: 1..12000 UTF-16 code units; `max_elements`: 1..200. Value: ``{url, title, text, truncated,
    elements:[{tag, role, label, …}]}`` with the optional element fields of :func:`snapshot_script` and
    **no** ``handle`` (and no ``rest``): nothing of the answer names a node. Value-free as every read.
    Raises ValueError for out-of-range bounds."""
    return _script(
        "snapshot",
        {
            "observe": True,
            "maxChars": _check_bound("max_chars", max_chars, MAX_CHARS_LIMIT),
            "maxElements": _check_bound("max_elements", max_elements, MAX_ELEMENTS_LIMIT),
        },
    )


FIND_FIELDS: Final = ("role", "name", "text")
FIND_MAX_CODE_POINTS: Final = 200


def _check_find(find: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(find, Mapping) or not find or not set(find) <= set(FIND_FIELDS):
        raise ValueError("find must be {role?, name?, text?} with at least one of them")
    out: dict[str, str] = {}
    for name in FIND_FIELDS:
        if name in find:
            value = find[name]
            if not isinstance(value, str) or not 1 <= len(value) <= FIND_MAX_CODE_POINTS:
                raise ValueError(f"find.{name} must be a string of 1..{FIND_MAX_CODE_POINTS} code points")
            out[name] = value
    return out


def _check_position(cursor: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(cursor, Mapping) or set(cursor) != {"snapshot", "textAt", "elementAt"}:
        raise ValueError("cursor must be {snapshot, textAt, elementAt}")
    token, text_at, element_at = cursor["snapshot"], cursor["textAt"], cursor["elementAt"]
    if not isinstance(token, str) or not _HANDLE_RE.fullmatch(token):
        raise ValueError("cursor.snapshot is not a reader snapshot token")
    for name, v in (("textAt", text_at), ("elementAt", element_at)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**53:
            raise ValueError(f"cursor.{name} must be a non-negative integer")
    return {"snapshot": token, "textAt": text_at, "elementAt": element_at}


FRAME_WANTS: Final = "kelpieFrames"
"""The one member of a snapshot's value while it waits for its frames (docs/reader.md "Frames"):
``{"kelpieFrames": [{frame, maxChars, maxElements, cursor?}]}``, answered only in a world whose host tagged
frames (:data:`FRAME_TAG_FUNCTION`). ``frame`` is the tag the host gave; without ``cursor`` the host reads
that frame afresh (:func:`frame_part_script`), with it it continues the frame's own read at that position;
then it gives the outcomes back with :func:`frame_compose_script`."""

FRAME_TAG_FUNCTION: Final = (
    "function kelpieTagFrames(depth, ids, ...owners) {"  # no "use strict": not with a rest parameter
    ' const slot = "__kelpieFrames";'
    " let kept = Object.getOwnPropertyDescriptor(globalThis, slot);"
    " if (!kept) {"
    " Object.defineProperty(globalThis, slot, { value: { depth: 0, tags: new WeakMap() },"
    " enumerable: false, configurable: false, writable: false });"
    " kept = Object.getOwnPropertyDescriptor(globalThis, slot); }"
    " const frames = kept.value;"
    " frames.depth = depth;"
    " if (!frames.owners) frames.owners = new Map();"
    " owners.forEach((owner, i) => { frames.tags.set(owner, ids[i]); frames.owners.set(ids[i], new WeakRef(owner)); });"
    " return owners.length;"
    " }"
)
"""For ``Runtime.callFunctionOn`` in a document's ``KelpieBrowserControl`` world (``executionContextId``),
with arguments ``depth`` (the document's frame depth: 0 for the tab's top document), ``ids`` (one string per
frame element: the tag, e.g. the frame's CDP id) and then the frame elements themselves (remote objects of
that world, e.g. from ``DOM.getFrameOwner`` and ``DOM.resolveNode``). From then on the snapshot bundle reads
those frames as *hosted* — each in its own world, by the host — instead of walking them (docs/reader.md
"Frames"), and :func:`pointer_frame_script` finds a frame element by its tag (weakly held: a removed frame
element is not kept alive). The tags live in a non-enumerable global of the isolated world, out of any page
script's reach; value: the number of frames tagged."""


def frame_part_script(
    key: str, *, max_chars: int, max_elements: int, cursor: Mapping[str, Any] | None = None
) -> str:
    """Script that reads a frame's document as a *part* of a snapshot (run it in that frame's
    ``KelpieBrowserControl`` world; docs/reader.md "Frames"): a new read of the whole document, or with
    `cursor` (a ``cursor`` of a :data:`FRAME_WANTS` want) the page of its own read at that position. Value:
    a snapshot page (:func:`snapshot_script`) plus ``part: {nonce, snapshot, counts, cut, origin, textAt,
    textEnd}`` and, on each element, ``rank`` and ``key``; or :data:`FRAME_WANTS` for the frames it holds
    itself; or a refusal (``STALE_SNAPSHOT`` for a cursor whose document changed). Raises ValueError as
    :func:`snapshot_script` does."""
    _check_key(key)
    params: dict[str, Any] = {
        "key": key,
        "maxChars": _check_bound("max_chars", max_chars, MAX_CHARS_LIMIT),
        "maxElements": _check_bound("max_elements", max_elements, MAX_ELEMENTS_LIMIT),
        "part": True,
    }
    if cursor is not None:
        params["cursor"] = _check_position(cursor)
    return _script("snapshot", params)


def frame_compose_script(key: str, outcomes: list[tuple[str, Any]], *, part: bool = False) -> str:
    """Script that gives a document's world the outcomes for the frames its last answer wanted
    (:data:`FRAME_WANTS`), in the order wanted: ``(tag, outcome)`` where outcome is that frame's part answer
    (:func:`frame_part_script`), ``{"unreadable": "blocked-by-policy"|"unavailable"|"limit"}``, or a
    refusal ``{"error": {code, message}}``. `part`: that world is itself a part (its answer then carries
    ranks, as :func:`frame_part_script`'s). Value: the snapshot's page (what the engine's script would
    have answered), or more wants. Raises ValueError for a malformed key or outcomes."""
    _check_key(key)
    if not isinstance(outcomes, list) or not all(
        isinstance(o, tuple) and len(o) == 2 and isinstance(o[0], str) for o in outcomes
    ):
        raise ValueError("outcomes must be a list of (tag, outcome) pairs")
    params: dict[str, Any] = {"key": key, "frames": [[tag, outcome] for tag, outcome in outcomes]}
    if part:
        params["part"] = True
    return _script("snapshot", params)


def click_script(key: str, handle: str) -> str:
    """Script for ``tab.click`` on the node captured as `handle` (contract §9).

    On an ``<option>`` of a native select the click chooses it as a user does (single select: that
    option; ``multiple``: toggles it; ``input`` then ``change`` on the select when the selection changed).
    Value: ``{clicked:true}`` (plus ``downloadLink:true`` when the target is, or is inside, a link that
    downloads — a ``download`` attribute, a ``blob:`` or ``data:`` URL — a hint for the host, which waits
    for that download), or ``{error:{code:"NODE_REPLACED", …}, mayHaveCompleted:false}`` when the
    handle's node is gone (replaced, disconnected, registry cleared by navigation/history),
    ``NOT_ACTIONABLE`` with ``mayHaveCompleted:false`` for a disabled or inert target or an optgroup
    (no event fired), ``EFFECT_NOT_OBSERVED`` with ``mayHaveCompleted:true`` when the page undid an
    option choice, or ``{error:{code:"RENDERER_FAILED", …}, mayHaveCompleted:true}`` if activation
    itself failed.
    Raises ValueError for a malformed key or handle.
    """
    _check_key(key)
    _check_handle(handle)
    return _script("click", {"key": key, "handle": handle})


def type_script(key: str, handle: str, text: str) -> str:
    """Script for ``tab.type``: append `text` (1..200000 code points) to the captured node (contract §9).

    Value: ``{typed: <code points appended>}``; ``NOT_ACTIONABLE`` (disabled or inert target) and
    ``NOT_TYPABLE`` (number, file, date-like, checkbox, radio and other non-text inputs, read-only
    fields, non-editable elements) with ``mayHaveCompleted:false`` before focus;
    ``NOT_TYPABLE``/``NODE_REPLACED`` with ``mayHaveCompleted:true`` when focus handlers changed or
    removed the field; ``EFFECT_NOT_OBSERVED`` with ``mayHaveCompleted:true`` when, after the events
    and one turn of the page's event loop, the value (or editable text) does not end with what was
    appended; ``NODE_REPLACED`` with ``mayHaveCompleted:false`` for a gone node. Raises ValueError for a malformed key, handle or
    text.
    """
    _check_key(key)
    _check_handle(handle)
    if not isinstance(text, str) or not 1 <= len(text) <= MAX_TEXT_CODE_POINTS:
        raise ValueError(f"text must be a string of 1..{MAX_TEXT_CODE_POINTS} code points")
    return _script("type", {"key": key, "handle": handle, "text": text})


def focus_script(key: str, handle: str) -> str:
    """Script that focuses the node captured as `handle` (the host extension ``press_key`` with a ref).

    Value: ``{focused:true}``; ``NODE_REPLACED`` (``mayHaveCompleted:false``) for a gone node;
    ``NOT_ACTIONABLE`` with ``mayHaveCompleted:false`` before any event when the node is disabled as §9
    v1.1 defines it (as ``tab.click``/``tab.type``) or cannot take keyboard focus; once the node received
    focus (page focus handlers ran), ``NODE_REPLACED`` or ``EFFECT_NOT_OBSERVED`` (focus moved elsewhere)
    with ``mayHaveCompleted:true`` (docs/contract-notes.md, "press_key targets").
    Raises ValueError for a malformed key or handle.
    """
    _check_key(key)
    _check_handle(handle)
    return _script("focus", {"key": key, "handle": handle})


def fill_script(key: str, handle: str, text: str) -> str:
    """Script that replaces the content of the captured field with `text` (0..200000 code points; the
    host extension ``fill``; eligibility and effects as :func:`type_script`, plus number and date/time-like
    inputs whose text must be in the input's own format).

    Value: ``{filled: <code points now in the field>}``; ``NOT_ACTIONABLE``/``NOT_TYPABLE``/``NODE_REPLACED``
    as :func:`type_script`; ``INVALID_PARAMS`` (``mayHaveCompleted:false``) for text not in a number/date
    input's format; ``EFFECT_NOT_OBSERVED`` (``mayHaveCompleted:true``) when the field does not hold the
    text afterwards (CONTRACT.md §9, v1.1). Never returns the value. Raises ValueError for a malformed key,
    handle or text.
    """
    _check_key(key)
    _check_handle(handle)
    if not isinstance(text, str) or len(text) > MAX_TEXT_CODE_POINTS:
        raise ValueError(f"text must be a string of 0..{MAX_TEXT_CODE_POINTS} code points")
    return _script("fill", {"key": key, "handle": handle, "text": text})


def scroll_script(key: str | None, handle: str | None, *, direction: str = "down", pages: int = 1) -> str:
    """Script for the host extension ``scroll``: the captured node into view (`handle`, with the
    per-gateway `key`), else the page `pages` (1..10) viewport pages `direction` (``"up"``/``"down"``;
    `key` may then be None).

    Value: element ``{scrolled:true, inView: bool}``; page ``{scrolled, atTop, atBottom}`` (booleans);
    ``NODE_REPLACED`` (``mayHaveCompleted:false``) for a gone node. Raises ValueError for a malformed
    key, handle, direction or pages.
    """
    params: dict[str, Any] = {}
    if handle is not None:
        _check_key(key or "")
        _check_handle(handle)
        params["key"] = key
        params["handle"] = handle
    if direction not in ("up", "down"):
        raise ValueError('direction must be "up" or "down"')
    params["direction"] = direction
    params["pages"] = _check_bound("pages", pages, 10)
    return _script("scroll", params)


def upload_target_script(key: str, handle: str) -> str:
    """Script for the host extension ``upload_file``, before anything happens: what the node captured as
    `handle` is. Value: ``{kind: "file-input", multiple: bool}`` for an ``<input type=file>``, else
    ``{kind: "other"}`` (an element whose click may open a file chooser); ``NODE_REPLACED`` for a gone node
    and ``NOT_ACTIONABLE`` for a disabled target (as ``tab.click``), both ``mayHaveCompleted:false``.
    Raises ValueError for a malformed key or handle."""
    _check_key(key)
    _check_handle(handle)
    return _script("files", {"key": key, "handle": handle, "op": "upload-target"})


def upload_files_script(key: str, handle: str) -> str:
    """Script for ``upload_file``, afterwards: after one turn of the page's event loop, the names of the
    files the captured ``<input type=file>`` holds, ``{files: [names]}`` (never contents; ``[]`` for
    another element); ``NODE_REPLACED`` with ``mayHaveCompleted:true`` when the page removed it. Raises
    ValueError for a malformed key or handle."""
    _check_key(key)
    _check_handle(handle)
    return _script("files", {"key": key, "handle": handle, "op": "upload-files"})


def element_box_script(key: str, handle: str) -> str:
    """Script for the host extension ``screenshot`` of an element: the captured node's border box in CSS
    pixels of the top document (page coordinates, same-origin frames' offsets added) and the device pixel
    ratio, ``{x, y, width, height, devicePixelRatio}``; ``NODE_REPLACED`` (``mayHaveCompleted:false``) for
    a gone node. Raises ValueError for a malformed key or handle."""
    _check_key(key)
    _check_handle(handle)
    return _script("files", {"key": key, "handle": handle, "op": "box"})


POINTER_EVENTS: Final = frozenset(
    {
        "pointerdown",
        "pointerup",
        "pointermove",
        "pointerover",
        "mousedown",
        "mouseup",
        "mousemove",
        "mouseover",
        "click",
        "auxclick",
        "dblclick",
        "contextmenu",
        "dragstart",
        "dragenter",
        "dragover",
        "drop",
        "keydown",
    }
)
"""The event types a :func:`pointer_aim_script` watch may record."""


def pointer_aim_script(
    key: str,
    handle: str,
    *,
    enabled: bool = True,
    offset: Mapping[str, float] | None = None,
    watch: tuple[str, ...] = (),
    outer: Mapping[str, Any] | None = None,
) -> str:
    """Script that prepares trusted input on the node captured as `handle` (the host's native-input
    extensions ``click``, ``hover``, ``drag``, ``type_keys``; docs/host.md "Native input"). Read-only but for
    scrolling the node into view when needed.

    Checks, in one run and in this order: the node is live (``NODE_REPLACED``); with `enabled`, not disabled
    as §9 v1.1 defines it (``NOT_ACTIONABLE``); its box is non-empty; the point — the centre of the largest
    visible part of its box, or `offset` ``{x, y}`` (CSS px, 0..100000) from the box's top-left corner
    (outside the box: ``INVALID_PARAMS``) — is visible; the box did not move across one animation frame; the
    hit test at the point lands on the node, a descendant of it (through open shadow roots and same-origin
    frames) or a ``<label>`` of it. Every refusal is ``{error, mayHaveCompleted:false}``; a covered node's
    ``NOT_ACTIONABLE`` message names the cover's role and name or text. Value: ``{x, y, target}`` — the
    point in the top-level viewport's CSS pixels and ``"same"`` | ``"descendant"`` | ``"label"`` — and the
    trusted events of the types in `watch` (members of :data:`POINTER_EVENTS`) that reach the node's
    window are recorded from then on (:func:`pointer_report_script`). `outer`: where the world's document
    is seen in the top-level viewport when it is a frame read in a world of its own (the ``outer`` a
    :func:`pointer_frame_script` of its parent answered; docs/host.md "Native input in frames"): the
    point, the visibility and the viewport size are then the top viewport's. Raises ValueError for a
    malformed key, handle, offset, outer or event type.
    """
    _check_key(key)
    _check_handle(handle)
    params: dict[str, Any] = {"key": key, "handle": handle, "op": "aim", "enabled": bool(enabled)}
    if outer is not None:
        params["outer"] = _check_outer(outer)
    if offset is not None:
        if not isinstance(offset, Mapping) or set(offset) != {"x", "y"}:
            raise ValueError("offset must be {x, y}")
        for axis in ("x", "y"):
            v = offset[axis]
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 100_000:
                raise ValueError(f"offset.{axis} must be a number in 0..100000")
        params["offset"] = {"x": float(offset["x"]), "y": float(offset["y"])}
    types = list(dict.fromkeys(watch))
    if any(t not in POINTER_EVENTS for t in types):
        raise ValueError(f"watch holds an event type outside {sorted(POINTER_EVENTS)}")
    params["watch"] = types
    return _script("pointer", params)


_FRAME_ID_RE = re.compile(r"[0-9A-Za-z._-]{1,64}")


def _number(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not -1e7 <= v <= 1e7:
        raise ValueError(f"{what} must be a finite number")
    return float(v)


def _check_outer(outer: Mapping[str, Any]) -> dict[str, Any]:
    """A frame document's place in the top viewport as :func:`pointer_frame_script` answers it."""
    try:
        clip, view = outer["clip"], outer["view"]
        return {
            "dx": _number(outer["dx"], "outer.dx"),
            "dy": _number(outer["dy"], "outer.dy"),
            "clip": {k: _number(clip[k], f"outer.clip.{k}") for k in ("left", "top", "right", "bottom")},
            "view": {k: _number(view[k], f"outer.view.{k}") for k in ("width", "height")},
        }
    except (KeyError, TypeError) as exc:
        raise ValueError(
            "outer must be {dx, dy, clip: {left, top, right, bottom}, view: {width, height}}"
        ) from exc


def pointer_frame_script(
    key: str,
    frame: str,
    *,
    outer: Mapping[str, Any] | None = None,
    scroll: bool = False,
    point: Mapping[str, float] | None = None,
) -> str:
    """Script for the world of the document holding the frame element the host tagged with CDP frame id
    `frame` (:data:`FRAME_TAG_FUNCTION`), one step of native input inside that frame (docs/host.md "Native
    input in frames"). `outer`: where this world's document is seen in the top viewport (None: it is the
    top document). Without `point`, the value is ``{outer: {dx, dy, clip: {left, top, right, bottom},
    view: {width, height}}}``: where the frame's document is seen in the top viewport (its viewport's
    offset, the visible part, the top viewport's size, CSS px), after scrolling the frame element into
    view when `scroll` and it is not wholly visible. With `point` ``{x, y}`` (top viewport), the value is
    ``{hit: true}`` when the pointer there lands on the frame element, else ``NOT_ACTIONABLE`` naming the
    cover. ``NODE_REPLACED`` when the frame element is gone; every refusal ``mayHaveCompleted:false``.
    Read-only but for that scrolling; value-free. Raises ValueError for a malformed key, frame id, outer or
    point."""
    _check_key(key)
    if not isinstance(frame, str) or not _FRAME_ID_RE.fullmatch(frame):
        raise ValueError("frame must be a CDP frame id")
    params: dict[str, Any] = {"key": key, "op": "frame", "frame": frame, "scroll": bool(scroll)}
    if outer is not None:
        params["outer"] = _check_outer(outer)
    if point is not None:
        if not isinstance(point, Mapping) or set(point) != {"x", "y"}:
            raise ValueError("point must be {x, y}")
        params["point"] = {"x": _number(point["x"], "point.x"), "y": _number(point["y"], "point.y")}
    return _script("pointer", params)


def pointer_report_script(key: str, handles: tuple[str, ...], *, keep: bool = False) -> str:
    """Script whose value is ``{watches: [record | null, …]}``, one per handle (1..4) of `handles`, in order:
    what the watch :func:`pointer_aim_script` started on that node recorded — ``events: {type: "same" |
    "descendant" | "outside"}`` (the first trusted event of each watched type: on the node itself, on a
    descendant, or elsewhere), ``dragstartPrevented`` (when a ``dragstart`` was watched and seen) and
    ``connected`` (whether the node is still live) — or null when there is no watch (a new document). The
    watches end, unless `keep` (a look in the middle of a gesture). Read-only, value-free. Raises ValueError
    for a malformed key or handle."""
    _check_key(key)
    if not isinstance(handles, tuple) or not 1 <= len(handles) <= 4:
        raise ValueError("handles must be a tuple of 1..4 handles")
    for handle in handles:
        _check_handle(handle)
    return _script("pointer", {"key": key, "op": "report", "handles": list(handles), "keep": bool(keep)})


def find_text_script(text: str) -> str:
    """Script whose value is ``{found: bool}``: whether `text` (1..1000 code points) appears in the page's
    visible text as ``tab.snapshot`` reads it (white-space runs compare as one space; case-sensitive).
    Value-free: field values and editable content are never searched. Raises ValueError for bad text.
    """
    if not isinstance(text, str) or not 1 <= len(text) <= 1000:
        raise ValueError("text must be a string of 1..1000 code points")
    return _script("find-text", {"text": text})


LINKS_PAGE_MAX: Final = 500
LINKS_MAX: Final = 10000
STORAGE_KEYS_MAX: Final = 1000


def links_script(*, offset: int = 0, limit: int = 200) -> str:
    """Script for the host extension ``links``: the links of the document(s) as ``tab.snapshot`` sees them
    (the same walk, visibility, accessible name and resolved ``url``), in page order, from `offset`
    (0..10000) at most `limit` (1..500) of them. Value: ``{url, title, total, truncated, links: [{text,
    tag, url?, states?, frame?, shadow?}]}`` (``total``: every link listed, at most 10,000). Registry-free
    and value-free. Raises ValueError for out-of-range arguments."""
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= LINKS_MAX:
        raise ValueError(f"offset must be an integer in 0..{LINKS_MAX}")
    return _script("links", {"offset": offset, "limit": _check_bound("limit", limit, LINKS_PAGE_MAX)})


def element_script(key: str, handle: str) -> str:
    """Script for the host extension ``element``: the facts of the node captured as `handle` (registry of
    the gateway whose `key` it is), read without changing the registry. Value: ``{tag, role, name,
    description?, type?, level?, states?, url?, box: {x, y, width, height} (CSS px, viewport-relative),
    viewport: {width, height}, visible, hidden?, frame?, shadow?, attributes: [{name, value}] (at most 64,
    values ≤ 500 UTF-16 units), truncated}``: never a ``value`` attribute, and on a text-entry control or
    editing host no attribute whose name says value; ``NODE_REPLACED`` (``mayHaveCompleted:false``) for a
    gone node. Raises ValueError for a malformed key or handle."""
    _check_key(key)
    _check_handle(handle)
    return _script("element", {"key": key, "handle": handle})


def element_node_script(key: str, handle: str) -> str:
    """Script whose value is the node captured as `handle` itself (for a host that evaluates it without
    ``returnByValue`` to learn the node's DOM identity, e.g. the accessibility read below a ref), or the
    ``NODE_REPLACED`` refusal. Raises ValueError for a malformed key or handle."""
    _check_key(key)
    _check_handle(handle)
    return _script("element", {"key": key, "handle": handle, "node": True})


def storage_script(*, max_keys: int = STORAGE_KEYS_MAX) -> str:
    """Script for the host extension ``storage``: the main document origin's ``localStorage`` and
    ``sessionStorage`` keys with the size of each value (UTF-16 code units; the value itself is never
    returned) and its IndexedDB database names. `max_keys`: 1..1000 keys per area. Value: ``{origin,
    localStorage, sessionStorage, indexedDB}`` (docstring of ``js/storage.js``). Raises ValueError for an
    out-of-range bound."""
    return _script("storage", {"maxKeys": _check_bound("max_keys", max_keys, STORAGE_KEYS_MAX)})


def collect_browser_selector_snapshot_expression(options: Mapping[str, Any] | None = None) -> str:
    """Selector snapshot expression (contract §9): the reader without a registry.

    `options`: optional ``maxChars`` (1..12000, default 12000) and ``maxElements`` (1..200, default 200).
    Value: ``{url, title, text, truncated, elements:[{selector, tag, role, label}]}``; each `selector`
    matches exactly its element in the main document, or is null (element inside a frame or shadow
    tree, no verified selector, or longer than 2,000 characters). Raises ValueError for unknown
    options or out-of-range values.
    """
    opts = dict(options or {})
    unknown = set(opts) - {"maxChars", "maxElements"}
    if unknown:
        raise ValueError(f"unknown selector snapshot options: {sorted(unknown)}")
    params = {
        "maxChars": _check_bound("maxChars", opts.get("maxChars", MAX_CHARS_LIMIT), MAX_CHARS_LIMIT),
        "maxElements": _check_bound(
            "maxElements", opts.get("maxElements", MAX_ELEMENTS_LIMIT), MAX_ELEMENTS_LIMIT
        ),
    }
    return _script("selector-snapshot", params)
