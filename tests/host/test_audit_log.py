"""The ``--audit-log`` file (rotation-safe appends) and the tunnel's pure rules (URL, backoff, frame cap
for answers, permission answers), without a browser. The journeys that produce the lines on real Chromium
are in test_tunnel.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from kelpie_gateway.host.audit import AuditLog, audit_line
from kelpie_gateway.host.tunnel import (
    MAX_RESPONSE_FRAME,
    TunnelConfigError,
    TunnelOptions,
    allow_option,
    backoff_delay,
    check_url,
    fit_response,
    read_token,
    shown,
)

DIGEST = "ab" * 32


def step(**audit: Any) -> dict[str, Any]:
    base = {"method": "tab.click", "extension": None, "lane": "direct", "tabId": "t1", "outcome": "success",
            "code": None, "mayHaveCompleted": False, "mutates": True, "authorized": True, "dispatches": 1,
            "elapsedMs": 12.5, "paramsSha256": DIGEST}
    base.update(audit)
    return {"step": "complete", "transaction": "t9", "seq": 3, "response": {}, "audit": base}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_line_per_canonical_transaction_with_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.record(step(), client="agent-one", transport="http")
    log.record(step(paramsSha256=None, method="initialize"), client="agent-one", transport="mcp-http")
    log.record(step(code="BUSY", outcome="refused", authorized=None, dispatches=0), client="tunnel:kelpie-x",
               transport="tunnel", connection="conn-1")
    first, second = lines(path)
    assert first["client"] == "agent-one" and first["transport"] == "http" and first["connection"] is None
    assert first["time"].endswith("Z") and first["durationMs"] == 12.5 and first["paramsSha256"] == DIGEST
    assert second["code"] == "BUSY" and second["authorized"] is None and second["connection"] == "conn-1"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert audit_line(step(paramsSha256=None), client="x", transport="http") is None


def test_reopens_after_an_external_rotation_and_on_sighup(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.record(step(tabId="before"), client="c", transport="http")
    os.rename(path, tmp_path / "audit.jsonl.old")  # logrotate's move
    log.record(step(tabId="after"), client="c", transport="http")
    assert [line["tabId"] for line in lines(path)] == ["after"]
    assert [line["tabId"] for line in lines(tmp_path / "audit.jsonl.old")] == ["before"]
    path.unlink()  # removed outright: recreated on the next line
    log.reopen()
    log.record(step(tabId="recreated"), client="c", transport="http")
    assert [line["tabId"] for line in lines(path)] == ["recreated"]


def test_rotates_itself_past_the_size_cap(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, max_bytes=4096)
    for i in range(40):
        log.record(step(tabId=f"t{i}"), client="c", transport="http")
    current, rotated = lines(path), lines(tmp_path / "audit.jsonl.1")
    assert path.stat().st_size <= 4096 and (tmp_path / "audit.jsonl.1").stat().st_size <= 4096
    assert current[-1]["tabId"] == "t39"
    seen = [line["tabId"] for line in rotated + current]
    assert seen == [f"t{i}" for i in range(40 - len(seen), 40)]  # nothing lost between the two files


def test_a_failing_write_is_reported_once_and_never_raises(tmp_path: Path) -> None:
    reports: list[str] = []
    folder = tmp_path / "logs"
    log = AuditLog(folder / "audit.jsonl", log=reports.append)
    os.rename(folder, tmp_path / "gone")
    folder.write_text("now a file, so the log cannot be recreated", encoding="utf-8")
    assert log.write({"x": 1}) is False and log.write({"x": 2}) is False
    assert len(reports) == 1 and "cannot write" in reports[0]
    folder.unlink()
    assert log.write({"x": 3}) is True and "writing again" in reports[-1]
    assert lines(folder / "audit.jsonl") == [{"x": 3}]


def test_url_rules_and_shown_url() -> None:
    assert check_url("wss://broker.example.com/acp").host == "broker.example.com"
    assert check_url("ws://127.0.0.1:9/acp").port == 9 and check_url("ws://[::1]:9/acp").port == 9
    assert check_url("ws://localhost:9/acp").host == "localhost"
    for bad in ("ws://broker.example.com/acp", "http://127.0.0.1/acp", "wss:///nohost", "not a url"):
        with pytest.raises(TunnelConfigError):
            check_url(bad)
    assert shown(check_url("wss://user:pw@broker.example.com/acp?token=s3cret#x")) == "wss://broker.example.com/acp"


def test_token_sources(tmp_path: Path) -> None:
    token_file = tmp_path / "t"
    token_file.write_text("  tok-from-file\n", encoding="utf-8")
    assert read_token(TunnelOptions("wss://b/acp", token_file=token_file, environ={})) == "tok-from-file"
    assert read_token(TunnelOptions("wss://b/acp", environ={"KELPIE_GATEWAY_CONNECT_TOKEN": "env"})) == "env"
    assert read_token(TunnelOptions("wss://b/acp", environ={})) is None
    token_file.write_text("\n", encoding="utf-8")
    with pytest.raises(TunnelConfigError, match="empty"):
        read_token(TunnelOptions("wss://b/acp", token_file=token_file, environ={}))


def test_backoff_doubles_is_capped_and_jittered() -> None:
    low = [backoff_delay(n, 0.5, 30.0, lambda: 0.0) for n in range(10)]
    high = [backoff_delay(n, 0.5, 30.0, lambda: 0.999999) for n in range(10)]
    assert low[:4] == [0.25, 0.5, 1.0, 2.0] and max(low) == 15.0  # half of the capped delay at least
    assert high[0] == pytest.approx(0.5) and max(high) == pytest.approx(30.0)
    assert backoff_delay(10_000, 0.5, 30.0, lambda: 0.5) == pytest.approx(22.5)


def test_answers_over_8_mib_become_refusals() -> None:
    envelope = {"version": 1, "id": 5, "success": True, "result": {"imageBytes": 1}}
    big = "A" * (MAX_RESPONSE_FRAME + 1)
    tool = {"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "{}"},
            {"type": "image", "data": big, "mimeType": "image/png"}], "structuredContent": envelope, "isError": False}}
    fitted = fit_response(step(method="tab.screenshot", mutates=False, response=None) | {"response": tool})
    result = fitted["response"]["result"]
    assert result["isError"] is True and result["structuredContent"]["error"]["code"] == "RESPONSE_TOO_LARGE"
    assert result["structuredContent"]["mayHaveCompleted"] is False and result["structuredContent"]["id"] == 5
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert fitted["audit"]["outcome"] == "refused" and fitted["audit"]["code"] == "RESPONSE_TOO_LARGE"
    # A mutation that ran but cannot be reported is an unknown outcome; a non-tool answer is -32603.
    ran = fit_response(step() | {"response": tool})
    assert ran["response"]["result"]["structuredContent"]["mayHaveCompleted"] is True
    assert ran["audit"]["outcome"] == "unknown"
    other = fit_response(step() | {"response": {"jsonrpc": "2.0", "id": 1, "result": {"x": big}}})
    assert other["response"]["error"]["code"] == -32603
    small = step() | {"response": {"jsonrpc": "2.0", "id": 1, "result": {}}}
    assert fit_response(small) is small


def test_permission_answers_pick_an_allow_option() -> None:
    options = [{"optionId": "r", "kind": "reject_always"}, {"optionId": "a", "kind": "allow_always"},
               {"optionId": "o", "kind": "allow_once"}]
    assert allow_option({"options": options}) == {"outcome": {"outcome": "selected", "optionId": "o"}}
    assert allow_option({"options": options[:2]})["outcome"]["optionId"] == "a"
    assert allow_option({"options": options[:1]}) == {"outcome": {"outcome": "cancelled"}}
    assert allow_option(None) == {"outcome": {"outcome": "cancelled"}}
