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


def test_build_step_writes_exactly_the_in_memory_bundles(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "tools" / "gen_reader.py"), str(tmp_path)], check=True)
    for name in reader.BUNDLES:
        first, _, rest = (tmp_path / f"{name}.js").read_text(encoding="utf-8").partition("\n")
        assert first == reader.DIGEST_MARK + reader.sources_digest()
        assert rest.rstrip("\n") == reader.assemble_bundle(name) == reader.bundle(name)


def test_hostile_text_is_one_inert_ascii_json_literal() -> None:
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
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]
