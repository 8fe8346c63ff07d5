"""CONTRACT.md §3 last sentence / §8: the 4 MiB request cap admits the worst-case JSON escaping of a maximal
`tab.type` request — every one of the 200,000 code points of `text` astral and escaped as two `\\uXXXX`
escapes (12 bytes per code point) — and `Gateway.begin` takes it as bytes."""

from __future__ import annotations

from typing import Any

from kelpie_gateway import Gateway
from kelpie_gateway.jsonio import MAX_REQUEST_BYTES
from kelpie_gateway.schema import MAX_REF_CHARS, MAX_TAB_ID_CHARS, MAX_TEXT_CODE_POINTS

ESCAPED = "\\ud83d\\ude00"  # U+1F600 as two JSON escapes: 12 bytes for one code point
TAB = "\U0001f600" * MAX_TAB_ID_CHARS  # a maximal tab id, every code point astral


def _body(tab_escaped: str, ref_escaped: str, n: int, request_id: str = "r" * 64) -> bytes:
    return (
        '{"version":1,"id":"' + request_id + '","method":"tab.type","params":{"tabId":"' + tab_escaped + '",'
        '"ref":"' + ref_escaped + '","text":"' + ESCAPED * n + '","timeoutMs":30000}}'
    ).encode("ascii")


def _gateway_with_ref() -> tuple[Gateway, str]:
    gw = Gateway(
        {"nativeMethods": ["browser-control-evaluate"], "fixedReader": True, "requireAuthorization": False}
    )
    step = gw.begin({"version": 1, "method": "tab.snapshot", "params": {"tabId": TAB}})
    assert step["step"] == "dispatch", step
    value = {  # what the generated reader returns; handles look like "<16 hex>-<base36 counter>"
        "url": "about:blank",
        "title": "",
        "text": "",
        "truncated": False,
        "elements": [
            {"handle": "0123456789abcdef-1", "tag": "textarea", "role": "textbox", "label": "notes"}
        ],
    }
    done = gw.advance(
        {"transaction": step["transaction"], "seq": step["seq"], "result": {"success": True, "value": value}}
    )
    ref: str = done["response"]["result"]["elements"][0]["ref"]
    return gw, ref


def _code(step: dict[str, Any]) -> str | None:
    response = step.get("response") or {}
    return (response.get("error") or {}).get("code")


def test_worst_case_escaping_of_every_bounded_field_fits_under_4_mib() -> None:
    body = _body(ESCAPED * MAX_TAB_ID_CHARS, ESCAPED * MAX_REF_CHARS, MAX_TEXT_CODE_POINTS)
    assert 12 * (MAX_TEXT_CODE_POINTS + MAX_TAB_ID_CHARS + MAX_REF_CHARS) < len(body) <= MAX_REQUEST_BYTES
    assert len(body) < 0.6 * MAX_REQUEST_BYTES  # ≈2.4 MB: a wide margin, not a near miss
    gw, _ref = _gateway_with_ref()
    step = gw.begin(body)
    # parsed and validated in full; only the invented ref is refused (by ref ownership, after validation)
    assert step["step"] == "complete"
    assert _code(step) == "UNKNOWN_REF"


def test_maximal_astral_text_is_accepted_as_bytes_and_dispatched_intact() -> None:
    gw, ref = _gateway_with_ref()
    body = _body(ESCAPED * MAX_TAB_ID_CHARS, ref, MAX_TEXT_CODE_POINTS)
    assert len(body) <= MAX_REQUEST_BYTES
    step = gw.begin(body)
    assert step["step"] == "dispatch", _code(step)
    assert step["mutates"] is True and step["timeoutMs"] == 30000
    script = step["params"]["script"].lower()
    assert script.count(ESCAPED) == MAX_TEXT_CODE_POINTS  # every code point reached the renderer script
    done = gw.advance(
        {
            "transaction": step["transaction"],
            "seq": step["seq"],
            "result": {"success": True, "value": {"typed": MAX_TEXT_CODE_POINTS}},
        }
    )
    assert done["response"]["success"] is True
    assert done["response"]["result"] == {"typed": MAX_TEXT_CODE_POINTS}


def test_one_code_point_more_is_refused_by_the_text_limit_not_the_byte_cap() -> None:
    gw, ref = _gateway_with_ref()
    body = _body(ESCAPED * MAX_TAB_ID_CHARS, ref, MAX_TEXT_CODE_POINTS + 1)
    assert len(body) <= MAX_REQUEST_BYTES
    step = gw.begin(body)
    assert _code(step) == "INVALID_PARAMS"
    assert "/params/text" in step["response"]["error"]["message"]


def test_a_body_one_byte_over_the_cap_is_refused_unparsed() -> None:
    gw, ref = _gateway_with_ref()
    body = _body("t", ref, 1)
    body = body[:-2] + b" " * (MAX_REQUEST_BYTES + 1 - len(body)) + body[-2:]
    assert len(body) == MAX_REQUEST_BYTES + 1
    assert _code(gw.begin(body)) == "REQUEST_TOO_LARGE"
