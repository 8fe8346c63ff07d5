"""The generated scripts as text: build output equals in-memory assembly, parameters are injected safely.

The browser tests prove behaviour; these prove the generator contract of §9 (built at build time from
the committed sources, parameterised only through one JSON literal).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from kelpie_gateway import reader

KEY = "0123456789abcdef0123456789abcdef"
OUTER = {"dx": 10, "dy": -20.5, "clip": {"left": 0, "top": 0, "right": 100, "bottom": 50}, "view": {"width": 800, "height": 600}}
OUTER_FLOAT = {"dx": 10.0, "dy": -20.5, "clip": {"left": 0.0, "top": 0.0, "right": 100.0, "bottom": 50.0},
               "view": {"width": 800.0, "height": 600.0}}


def test_build_step_writes_exactly_the_in_memory_bundles(tmp_path: Path) -> None:
    """Guards built == in-memory bundles, and that a bundle an earlier build wrote under a name that is no
    longer a bundle (the tests' "names", once) is removed while other files stay."""
    (tmp_path / "names.js").write_text(f"{reader.DIGEST_MARK}{'0' * 64}\n(async function () {{}})\n", "utf-8")
    (tmp_path / "other.js").write_text("// not a bundle\n", "utf-8")
    subprocess.run([sys.executable, str(ROOT / "tools" / "gen_reader.py"), str(tmp_path)], check=True)
    for name in reader.BUNDLES:
        first, _, rest = (tmp_path / f"{name}.js").read_text(encoding="utf-8").partition("\n")
        assert first == reader.DIGEST_MARK + reader.sources_digest()
        assert rest.rstrip("\n") == reader.assemble_bundle(name) == reader.bundle(name)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"{n}.js" for n in reader.BUNDLES] + ["other.js"])


def test_every_part_of_the_shared_sources_ends_with_a_newline() -> None:
    """Guards the assembly of prelude.js and core.js from their parts (js/prelude/, js/core/): a part
    without a final newline would run its last line into the next part's first (a trailing ``//``
    comment would silently swallow that line)."""
    for name in reader.COMMON_SOURCES:
        parts = reader.source_parts(name)
        assert len(parts) > 1 and list(parts) == sorted(parts), name
        for part in parts:
            assert (reader.JS_DIR / part).read_text(encoding="utf-8").endswith("\n"), part


def test_the_package_ships_only_the_sources_of_its_bundles() -> None:
    """Guards the package's js/ against scripts no host runs (the tests' own accessible-names entry used to
    ship there): every file is an entry of reader.BUNDLES or a part of a shared source."""
    shipped = {p.relative_to(reader.JS_DIR).as_posix() for p in reader.JS_DIR.rglob("*") if p.is_file()}
    parts = (part for name in reader.COMMON_SOURCES for part in reader.source_parts(name))
    assert shipped == {*reader.BUNDLES.values(), *parts}


def test_hostile_text_is_one_inert_ascii_json_literal() -> None:
    """Guards parameter injection: page or client text (quotes, `</script>`, an HTML comment, U+2028/U+2029,
    an astral character, a lone surrogate) enters a script only as one pure-ASCII JSON literal with `<`, `>`
    and `&` escaped."""
    text = "\"'`</script><!-- ${x} \\u0022 \u2028\u2029 \U0001f600 \ud800 & >"
    script = reader.type_script(KEY, "0123456789abcdef-1a", text)
    prefix = f'{reader.LOADER}("{reader.bundle_slot("type")}", () => {reader.bundle("type")})('
    assert script.startswith(prefix) and script.endswith(")")
    literal = script[len(prefix) : -1]
    assert literal.isascii()
    for raw in ("<", ">", "&", "\u2028", "\u2029", "</script"):
        assert raw not in literal
    assert json.loads(literal) == {"key": KEY, "handle": "0123456789abcdef-1a", "text": text}


@pytest.mark.parametrize(
    "call",
    [
        lambda: reader.snapshot_script("ABC", max_chars=10, max_elements=10),
        lambda: reader.snapshot_script(KEY + '"', max_chars=10, max_elements=10),
        lambda: reader.snapshot_script(KEY, max_chars=0, max_elements=10),
        lambda: reader.snapshot_script(KEY, max_chars=12001, max_elements=10),
        lambda: reader.snapshot_script(KEY, max_chars=10, max_elements=201),
        lambda: reader.snapshot_script(KEY, max_chars=True, max_elements=10),
        lambda: reader.click_script(KEY, "x'); alert(1); ('"),
        lambda: reader.type_script(KEY, "0123456789abcdef-1", ""),
        lambda: reader.collect_browser_selector_snapshot_expression({"maxChars": 5, "extra": 1}),
        lambda: reader.collect_browser_selector_snapshot_expression({"maxElements": 0}),
    ],
)
def test_malformed_parameters_are_refused(call: object) -> None:
    """Guards the script builders' ValueError for arguments the engine never passes: a malformed key or
    handle, bounds out of range or boolean, empty text, unknown or out-of-range selector snapshot options."""
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]


def test_kept_script_shortens_only_this_builds_own_scripts() -> None:
    """Guards the short form (reader.kept_script): only this build's own scripts are shortened, carrying their
    parameter literal unchanged; another build's slot, another bundle text, an extra argument, a tail that is
    not one JSON value, a literal nested deeper than json parses, a literal over the limit and a preload
    script are not."""
    key, handle = "0123456789abcdef0123456789abcdef", "0123456789abcdef-1"
    scripts = {
        "snapshot": reader.snapshot_script(key, max_chars=100, max_elements=5),
        "click": reader.click_script(key, handle),
        "type": reader.type_script(key, handle, 'he said "</script>\u2028\U0001f600'),
        "fill": reader.fill_script(key, handle, ""),
        "find-text": reader.find_text_script("x"),
    }
    for name, script in scripts.items():
        made = reader.kept_script(script)
        assert made is not None, name
        slot, short = made
        assert slot == reader.bundle_slot(name)
        body = script.index(reader.bundle(name)) + len(reader.bundle(name))
        assert script[body : body + 2] == ")("
        literal = script[body + 2 : -1]  # the parameter literal, carried over unchanged
        assert f"run({literal})" in short and reader.bundle(name) not in short
        assert short.isascii()
    full = scripts["click"]
    stale = full.replace(reader.sources_digest(), "0" * 64)  # another build's slot
    assert reader.kept_script(stale) is None
    assert reader.kept_script(full.replace("kelpieReader", "kelpieReadeR", 1)) is None  # another bundle text
    assert reader.kept_script(full[:-1] + "), globalThis.x = (1)") is None  # more than one argument
    assert reader.kept_script(full[:-2] + " + 1)") is None  # not one JSON value
    assert reader.kept_script("1 + 1") is None
    head = full[: full.rindex(")(") + 2]  # a literal nested deeper than json parses: refused, not raised
    assert reader.kept_script(head + "[" * 5000 + "]" * 5000 + ")") is None
    long_text = "x" * (reader.KEPT_LITERAL_LIMIT + 1)  # its parameters are not worth checking: sent whole
    assert reader.kept_script(reader.type_script(key, handle, long_text)) is None
    assert reader.kept_script(reader.type_script(key, handle, long_text[:60000])) is not None
    assert reader.kept_script(reader.preload_script()) is None
    assert not reader.bundle_missing(
        {reader.KEPT_MISSING: reader.bundle_slot("type")}, reader.bundle_slot("click")
    )
    assert not reader.bundle_missing(
        {reader.KEPT_MISSING: reader.bundle_slot("click"), "x": 1}, reader.bundle_slot("click")
    )


def test_script_parameters_reads_back_exactly_what_a_builder_put_in() -> None:
    """Guards reader.script_parameters (docs/host.md "Frames": how a host learns where a script acts): the
    bundle and parameters of each builder's script, hostile text included; None for a preload script,
    another build's script, a tail that is not one JSON object, or any other text."""
    key, handle = KEY, "0123456789abcdef-1"
    cursor = {"snapshot": "0123456789abcdef-2", "textAt": 5, "elementAt": 3}
    cases = [
        (reader.snapshot_script(key, max_chars=9, max_elements=2, scope=handle), "snapshot",
         {"key": key, "maxChars": 9, "maxElements": 2, "scope": handle}),
        (reader.click_script(key, handle), "click", {"key": key, "handle": handle}),
        (reader.type_script(key, handle, 'x"</script>\u2028'), "type", {"key": key, "handle": handle, "text": 'x"</script>\u2028'}),
        (reader.frame_part_script(key, max_chars=7, max_elements=1, cursor=cursor), "snapshot",
         {"key": key, "maxChars": 7, "maxElements": 1, "part": True, "cursor": cursor}),
        (reader.frame_compose_script(key, [("F1", {"unreadable": "limit"})], part=True), "snapshot",
         {"key": key, "frames": [["F1", {"unreadable": "limit"}]], "part": True}),
        (reader.pointer_frame_script(key, "A1B2", outer=OUTER, point={"x": 3, "y": 4.5}), "pointer",
         {"key": key, "op": "frame", "frame": "A1B2", "scroll": False, "outer": OUTER_FLOAT,
          "point": {"x": 3.0, "y": 4.5}}),
        (reader.pointer_aim_script(key, handle, outer=OUTER), "pointer",
         {"key": key, "handle": handle, "op": "aim", "enabled": True, "outer": OUTER_FLOAT, "watch": []}),
    ]
    for script, name, params in cases:
        assert reader.script_parameters(script) == (name, params)
    click = reader.click_script(key, handle)
    assert reader.script_parameters(click.replace(reader.sources_digest(), "0" * 64)) is None
    assert reader.script_parameters(click[: click.rindex(")(") + 2] + "[1])") is None  # not an object
    assert reader.script_parameters(click[:-2] + " + 1)") is None
    assert reader.script_parameters(reader.preload_script()) is None
    assert reader.script_parameters("1 + 1") is None


@pytest.mark.parametrize(
    "call",
    [
        lambda: reader.frame_part_script("ABC", max_chars=10, max_elements=10),
        lambda: reader.frame_part_script(KEY, max_chars=0, max_elements=10),
        lambda: reader.frame_part_script(KEY, max_chars=10, max_elements=201),
        lambda: reader.frame_part_script(KEY, max_chars=10, max_elements=1, cursor={"snapshot": "x"}),
        lambda: reader.frame_compose_script(KEY, [["F1", {}]]),  # type: ignore[list-item]
        lambda: reader.frame_compose_script(KEY, [(1, {})]),  # type: ignore[list-item]
        lambda: reader.frame_compose_script("ABC", []),
        lambda: reader.pointer_frame_script(KEY, "not a frame id"),
        lambda: reader.pointer_frame_script(KEY, "F1", outer={"dx": 1}),
        lambda: reader.pointer_frame_script(KEY, "F1", outer={**OUTER, "dx": float("inf")}),
        lambda: reader.pointer_frame_script(KEY, "F1", point={"x": 1}),
        lambda: reader.pointer_aim_script(KEY, "abcdef0123456789-1", outer={**OUTER, "view": None}),
    ],
)
def test_malformed_frame_script_parameters_are_refused(call: object) -> None:
    """Guards the frame script builders' ValueError: a bad key, bounds out of range, a cursor that is not a
    reader position, outcomes that are not (tag, outcome) pairs."""
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]


def test_the_frame_tag_function_is_one_function_declaration() -> None:
    """Guards reader.FRAME_TAG_FUNCTION as CDP ``Runtime.callFunctionOn`` takes it: one function declaration
    that compiles (a "use strict" directive with its rest parameter would not) and tags what it is given."""
    program = (
        f"const tag = ({reader.FRAME_TAG_FUNCTION});"
        " const a = {}, b = {};"
        " const n = tag(2, ['F1', 'F2'], a, b);"
        " const kept = Object.getOwnPropertyDescriptor(globalThis, '__kelpieFrames');"
        " console.log(JSON.stringify([n, kept.enumerable, kept.value.depth, kept.value.tags.get(a), kept.value.tags.get(b),"
        " kept.value.owners.get('F2').deref() === b]));"
    )
    done = subprocess.run(["node", "-e", program], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [2, False, 2, "F1", "F2", True]
