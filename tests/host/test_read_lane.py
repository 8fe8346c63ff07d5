"""The read-only lane (docs/host.md "The read-only lane"; ARCHITECTURE.md host rules 1.2): console_messages,
page_errors, network_requests, cookies, storage, links, element and accessibility on a real host, in real
headless Chromium, against pages that log at every level, throw, reject, make fetch, XHR, image and WebSocket
requests carrying a bearer, an API key, cookies and tokens in the query, keep secret-looking cookies and
storage, and hold a password a person typed. Every read returns the facts and none of the values: each
secret is searched for in every result, every host log line and every audit line.

One host (Python API, default flags: URLs redacted, no bodies) and one test site for the module; the
operator's options (--network-urls full, --network-bodies) and an observer host are in
test_read_lane_options.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from host_testlib import Host, call, ok, start_host
from kelpie_gateway import Gateway
from kelpie_gateway.host.parts import gateway_config
from lane_site import BODY_MARK, LaneSite

pytestmark = pytest.mark.timeout(240)

SECRETS = [
    "s3cr3tBEARER",
    "s3cr3tAPIKEY",
    "s3cr3tXHRTOKEN",
    "s3cr3tQUERY",
    "s3cr3tFRAGMENT",
    "s3cr3tSIG",
    "s3cr3tBODY",
    "s3cr3tCOOKIE",
    "s3cr3tSETCOOKIE",
    "s3cr3tLOCAL",
    "s3cr3tSESSION",
    "s3cr3tIDB",
    "s3cr3tWS",
    "s3cr3tFRAME",
    "s3cr3tCONSOLE",
    "s3cr3tERRQUERY",
    "s3cr3tLINKQUERY",
    "s3cr3tATTRTOKEN",
    "s3cr3tDATAVALUE",
    "s3cr3tTYPED",
    "s3cr3tUSERTYPED",
    BODY_MARK,
]
LANE = ["console_messages", "page_errors", "network_requests", "cookies", "storage", "links", "element",
        "accessibility"]
EVERY_FACT = ("fetch", "idb", "xhr", "image", "ws")


class Lane:
    def __init__(self, host: Host, site: LaneSite, audit: Path) -> None:
        self.host, self.site, self.audit = host, site, audit
        self.answers: list[Any] = []

    def ext(self, name: str, **arguments: Any) -> dict[str, Any]:
        envelope = call(self.host, "extension.call", {"name": name, "arguments": arguments})
        self.answers.append(envelope)
        return envelope

    def read(self, name: str, **arguments: Any) -> dict[str, Any]:
        envelope = self.ext(name, **arguments)
        assert envelope["success"], envelope
        return dict(envelope["result"])


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lane]:
    site = LaneSite()
    audit = tmp_path_factory.mktemp("lane") / "audit.jsonl"
    process = start_host(["--approve-pairing", "auto", "--audit-log", str(audit)], "python")
    try:
        yield Lane(Host(process, process.pair("lane-tests"), "python"), site, audit)
    finally:
        process.stop()
        site.stop()


def settle(lane: Lane, tab: str, words: tuple[str, ...] = EVERY_FACT, timeout_s: float = 30.0) -> None:
    """Wait until the page says it did everything (its status line names each step)."""
    deadline = time.monotonic() + timeout_s
    while True:
        text = ok(lane.host, "tab.snapshot", {"tabId": tab})["text"]
        if all(word in text for word in words):
            return
        assert time.monotonic() < deadline, text
        time.sleep(0.2)


@pytest.fixture(scope="module")
def secret_tab(lane: Lane) -> str:
    """The lane page, loaded, every request made, and a person's password and user name typed in."""
    tab = str(ok(lane.host, "tabs.open", {"url": lane.site.page("lane.html")})["tabId"])
    settle(lane, tab)
    snap = ok(lane.host, "tab.snapshot", {"tabId": tab})
    ref = {e["label"]: e["ref"] for e in snap["elements"]}
    assert lane.read("fill", tabId=tab, ref=ref["Password"], text="s3cr3tTYPED") == {"filled": 11}
    snap = ok(lane.host, "tab.snapshot", {"tabId": tab})
    ref = {e["label"]: e["ref"] for e in snap["elements"]}
    assert ok(lane.host, "tab.type", {"tabId": tab, "ref": ref["User"], "text": "s3cr3tUSERTYPED"})["typed"] == 15
    return tab


def refs_of(lane: Lane, tab: str) -> dict[str, str]:
    snap = ok(lane.host, "tab.snapshot", {"tabId": tab})
    return {e["label"]: e["ref"] for e in snap["elements"]}


# ---------------------------------------------------------------- the facts
def test_console_messages_at_every_level(lane: Lane, secret_tab: str) -> None:
    result = lane.read("console_messages", tabId=secret_tab)
    messages = result["messages"]
    by_text = {m["text"]: m for m in messages}
    for text, level, kind in (("debug level line", "debug", "debug"), ("info level line", "info", "info"),
                              ("log level line {answer: 42}", "info", "log"), ("error level line", "error", "error"),
                              ("assert level line", "error", "assert")):
        assert by_text[text]["level"] == level and by_text[text]["type"] == kind, by_text.get(text)
    warn = next(m for m in messages if m["level"] == "warning")
    assert warn["text"] == "warn level line, see http://127.0.0.1/help?token=REDACTED#REDACTED", warn
    assert warn["url"] == lane.site.page("lane.html") and warn["line"] == 25 and warn["column"] >= 1
    long = next(m for m in messages if m["text"].startswith("xxx"))
    assert len(long["text"]) == 2000 and long["truncated"] == 500 and result["truncated"] == 1
    # The browser's own messages: a failed load, named by its (redacted) URL.
    assert any(m["level"] == "error" and m["url"].endswith("/api/missing") for m in messages), messages
    assert [m["seq"] for m in messages] == sorted(m["seq"] for m in messages)
    only_errors = lane.read("console_messages", tabId=secret_tab, levels=["error"])["messages"]
    assert only_errors and {m["level"] for m in only_errors} == {"error"}


def test_page_errors_thrown_and_rejected_with_their_stack(lane: Lane, secret_tab: str) -> None:
    errors = lane.read("page_errors", tabId=secret_tab)["errors"]
    thrown = next(e for e in errors if e["name"] == "TypeError")
    assert thrown["message"] == "thrown on purpose at http://127.0.0.1/err?key=REDACTED"
    assert "lane.html:" in thrown["stack"] and thrown["line"] == 29
    rejected = next(e for e in errors if e["message"] == "rejected on purpose")
    assert rejected["name"] == "Error" and rejected["stack"].startswith("Error: rejected on purpose")


def test_network_requests_say_what_happened_and_never_the_credentials(lane: Lane, secret_tab: str) -> None:
    result = lane.read("network_requests", tabId=secret_tab, headers=True)
    requests = result["requests"]
    by_path = {r["url"].split("/", 3)[-1]: r for r in requests}
    document = by_path["lane.html"]
    assert document["resourceType"] == "document" and document["status"] == 200
    assert document["initiator"] == {"type": "navigation", "frame": "main"}
    fetched = by_path["api/data?token=REDACTED&page=REDACTED"]  # the fragment is never sent
    assert fetched["method"] == "GET" and fetched["resourceType"] == "fetch" and fetched["status"] == 200
    assert fetched["mimeType"] == "application/json" and fetched["pending"] is False
    assert fetched["initiator"] == {"type": "document", "url": lane.site.page("lane.html"), "frame": "main"}
    assert fetched["requestHeaders"]["authorization"] == "REDACTED"
    assert fetched["requestHeaders"]["x-api-key"] == "REDACTED"
    assert fetched["responseHeaders"].get("set-cookie", "REDACTED") == "REDACTED"
    assert fetched["sizes"]["responseBodySize"] > 0 and fetched["timing"]["responseEndMs"] >= 0
    posted = by_path["api/echo"]
    assert posted["method"] == "POST" and posted["resourceType"] == "xhr" and posted["status"] == 200
    assert posted["sizes"]["requestBodySize"] == 10  # the size of the body, never the body
    assert posted["requestHeaders"]["x-session-token"] == "REDACTED"
    assert by_path["api/pixel.png?sig=REDACTED"]["resourceType"] == "image"
    assert by_path["api/missing"]["status"] == 404
    socket = next(r for r in requests if r["resourceType"] == "websocket")
    assert socket["url"].endswith("/ws?token=REDACTED") and socket["framesSent"] >= 1 and socket["framesReceived"] >= 1
    # The browser really sent what the read keeps private.
    seen = {s["path"].split("?")[0]: s for s in lane.site.seen}
    assert seen["/api/data"]["headers"]["Authorization"] == "Bearer s3cr3tBEARER"
    assert "s3cr3tCOOKIE" in seen["/api/data"]["headers"]["Cookie"] and seen["/api/echo"]["body"] == "s3cr3tBODY"
    failed = lane.read("network_requests", tabId=secret_tab, filter={"failed": True})["requests"]
    assert [r["url"].rsplit("/", 1)[-1] for r in failed] == ["missing"], failed
    xhr = lane.read("network_requests", tabId=secret_tab, filter={"resourceTypes": ["xhr"], "methods": ["post"]})
    assert [r["seq"] for r in xhr["requests"]] == [posted["seq"]]
    named = lane.read("network_requests", tabId=secret_tab, filter={"url": "PIXEL"})["requests"]
    assert len(named) == 1 and named[0]["resourceType"] == "image"
    refused = lane.ext("network_requests", tabId=secret_tab, bodies=True)
    assert refused["success"] is False and refused["error"]["code"] == "NOT_AUTHORIZED", refused
    assert "--network-bodies" in refused["error"]["message"] and refused["mayHaveCompleted"] is False


def test_cookies_and_storage_never_their_values(lane: Lane, secret_tab: str) -> None:
    cookies = {c["name"]: c for c in lane.read("cookies", tabId=secret_tab)["cookies"]}
    assert cookies["session"]["size"] == len("session") + len("s3cr3tCOOKIE") and not cookies["session"]["httpOnly"]
    assert cookies["sid"]["httpOnly"] is True and cookies["sid"]["expires"] is None and cookies["sid"]["path"] == "/"
    assert all("value" not in c for c in cookies.values())
    storage = lane.read("storage", tabId=secret_tab)
    assert storage["origin"] == lane.site.url
    assert storage["localStorage"] == {"count": 2, "keys": [{"key": "authToken", "size": 11}, {"key": "theme", "size": 4}],
                                       "truncated": False}
    assert storage["sessionStorage"]["keys"] == [{"key": "draft", "size": 13}]
    assert storage["indexedDB"] == {"databases": [{"name": "kelpie-db", "version": 3}]}


def test_links_as_a_person_sees_them(lane: Lane, secret_tab: str) -> None:
    result = lane.read("links", tabId=secret_tab)
    assert [link["text"] for link in result["links"]] == ["Same page", "Docs", "Section"]  # not the hidden one
    assert result["links"][0]["url"] == lane.site.page("lane.html") + "?from=nav&token=REDACTED"
    assert result["links"][1]["url"] == "https://example.invalid/docs" and result["links"][2]["url"] == "#section"
    assert result["total"] == 3 and "next" not in result
    paged = lane.read("links", tabId=secret_tab, offset=1, limit=1)
    assert [link["text"] for link in paged["links"]] == ["Docs"] and paged["next"] == 2


def test_element_and_accessibility_never_the_values(lane: Lane, secret_tab: str) -> None:
    ref = refs_of(lane, secret_tab)
    password = lane.read("element", tabId=secret_tab, ref=ref["Password"])
    assert password["role"] == "textbox" and password["type"] == "password" and password["visible"] is True
    attributes = {a["name"]: a["value"] for a in password["attributes"]}
    assert attributes["data-api-token"] == "REDACTED" and attributes["type"] == "password" and "value" not in attributes
    assert password["box"]["width"] > 0 and password["viewport"] == {"width": 1280, "height": 800}
    user = {a["name"] for a in lane.read("element", tabId=secret_tab, ref=ref["User"])["attributes"]}
    assert "value" not in user and "data-value" not in user and "name" in user
    button = lane.read("element", tabId=secret_tab, ref=ref["Sign in"])
    assert button["name"] == "Sign in" and button["description"] == "Signs you in with the account above"
    tree = lane.read("accessibility", tabId=secret_tab)
    text = json.dumps(tree)
    assert '"role": "slider", "name": "Volume", "value": 4' in text and '"name": "Sign in"' in text
    below = lane.read("accessibility", tabId=secret_tab, ref=ref["Password"])["tree"]
    assert below == {"role": "textbox", "name": "Password", "properties": {"focusable": True, "editable": True}}, below
    small = lane.read("accessibility", tabId=secret_tab, maxNodes=3)
    assert small["nodes"] == 3 and small["truncated"] is True
    # A ref the gateway never issued is refused before anything runs, for the read-only reads too.
    made_up = lane.ext("element", tabId=secret_tab, ref="s999e1")
    assert made_up["error"]["code"] in ("UNKNOWN_REF", "STALE_SNAPSHOT") and made_up["mayHaveCompleted"] is False


def test_no_result_log_line_or_audit_line_holds_a_secret(lane: Lane, secret_tab: str) -> None:
    """Every read of the lane, twice over (all kinds and options), then every answer of the module, every
    line the host printed and every audit line, searched for every secret."""
    ref = refs_of(lane, secret_tab)
    for name in LANE:
        arguments: dict[str, Any] = {"tabId": secret_tab}
        if name in ("element",):
            arguments["ref"] = ref["Password"]
        lane.ext(name, **arguments)
    lane.ext("network_requests", tabId=secret_tab, headers=True)
    lane.ext("accessibility", tabId=secret_tab, ref=ref["User"])
    answers = json.dumps(lane.answers)
    lines = "\n".join(lane.host.process.lines)
    audit = lane.audit.read_text(encoding="utf-8")
    assert audit.count("\n") >= 10
    for secret in SECRETS:
        assert secret not in answers, secret
        assert secret not in lines, secret
        assert secret not in audit, secret


# ---------------------------------------------------------------- bounds and cursors
def test_rings_are_bounded_and_since_reads_on(lane: Lane) -> None:
    tab = str(ok(lane.host, "tabs.open", {})["tabId"])
    ok(lane.host, "tab.navigate", {"tabId": tab, "url": lane.site.page("logs.html?n=1500"), "timeoutMs": 30000})
    deadline = time.monotonic() + 60
    # A read that answers all it matched has the ring's newest number as next (a filter matching nothing
    # costs nothing): wait until every entry was captured.
    while (
        lane.read("page_errors", tabId=tab, limit=200)["next"] < 250
        or lane.read("console_messages", tabId=tab, limit=1000)["next"] < 1500
        or lane.read("network_requests", tabId=tab, filter={"methods": ["NONE"]})["next"] < 1201
    ):
        assert time.monotonic() < deadline
        time.sleep(0.3)
    everything = lane.read("console_messages", tabId=tab, limit=1000)
    assert len(everything["messages"]) == 1000 and everything["more"] is False
    assert everything["dropped"] == everything["next"] - 1000 >= 500
    assert everything["messages"][-1]["text"] == "line 1500"
    assert lane.read("console_messages", tabId=tab, since=everything["next"])["messages"] == []
    first = lane.read("console_messages", tabId=tab, limit=10)
    assert first["more"] is True and first["next"] == first["messages"][-1]["seq"] and first["dropped"] >= 500
    second = lane.read("console_messages", tabId=tab, since=first["next"], limit=10)
    assert [m["seq"] for m in second["messages"]] == list(range(first["next"] + 1, first["next"] + 11))
    assert second["dropped"] == 0
    errors = lane.read("page_errors", tabId=tab, limit=200)
    assert len(errors["errors"]) == 200 and errors["dropped"] == 50 and errors["errors"][-1]["message"] == "error 250"
    network = lane.read("network_requests", tabId=tab, limit=1000)
    assert len(network["requests"]) == 1000 and network["dropped"] == network["next"] - 1000 >= 201
    beyond = lane.ext("console_messages", tabId=tab, since=everything["next"] + 1)
    assert beyond["error"]["code"] == "INVALID_PARAMS" and beyond["mayHaveCompleted"] is False
    too_many = lane.ext("console_messages", tabId=tab, limit=1001)
    assert too_many["error"]["code"] == "INVALID_PARAMS"


def test_a_popup_is_captured_from_its_first_request(lane: Lane) -> None:
    opener = str(ok(lane.host, "tabs.open", {"url": lane.site.page("lane.html?popup=1")})["tabId"])
    settle(lane, opener)
    deadline = time.monotonic() + 20
    while True:
        tabs = ok(lane.host, "tabs.list", {})["tabs"]
        child = next((t["tabId"] for t in tabs if t["url"].endswith("/child.html")), None)
        if child is not None:
            requests = lane.read("network_requests", tabId=child)["requests"]
            if len(requests) >= 2:
                break
        assert time.monotonic() < deadline, tabs
        time.sleep(0.2)
    kinds = {r["resourceType"]: r for r in requests}
    assert kinds["document"]["url"].endswith("/child.html") and kinds["document"]["initiator"]["type"] == "navigation"
    assert kinds["fetch"]["url"].endswith("/api/data?from=REDACTED")
    assert [m["text"] for m in lane.read("console_messages", tabId=child)["messages"]] == ["child logs at once"]


def test_reads_of_a_tab_that_does_not_exist_are_refused(lane: Lane) -> None:
    for name in LANE:
        arguments: dict[str, Any] = {"tabId": "t999"}
        if name == "element":
            continue  # its ref is checked first (UNKNOWN_REF)
        envelope = lane.ext(name, **arguments)
        assert envelope["error"]["code"] == "TAB_NOT_FOUND" and envelope["mayHaveCompleted"] is False, envelope


# ---------------------------------------------------------------- read-only sessions
def test_read_only_sessions_keep_the_lane_and_lose_every_mutating_extension() -> None:
    every = {e["name"]: e["mutates"] for e in gateway_config(browser=True)["extensions"]}
    assert {name for name in LANE} <= set(every) and not any(every[name] for name in LANE)
    for flags in ({"read_only": True}, {"observer": True}):
        gateway = Gateway({**gateway_config(browser=True, **flags), "requireAuthorization": False})
        try:
            caps = gateway.begin({"version": 1, "id": 1, "method": "capabilities", "params": {}})["response"]["result"]
        finally:
            gateway.close()
        assert caps["extensions"] == [name for name, mutates in every.items() if not mutates]
        assert set(LANE) <= set(caps["extensions"]) and caps["allowActions"] is False


def test_a_hostile_page_is_bounded_and_redacted(lane: Lane) -> None:
    """A page logging tokens in URLs (query, fragment, userinfo, one where the 2,000-character cut runs
    through the URL), a 5 MiB line, 500 long arguments, a 1 MiB error message, then (``?flood``) 5,000 more
    lines: every text within its bound, the ring at 1,000, no secret in any answer or host log line, and the
    host still answers snapshots of the tab."""
    tab = str(ok(lane.host, "tabs.open", {"url": lane.site.page("hostile.html")})["tabId"])
    deadline = time.monotonic() + 60
    while len(lane.read("page_errors", tabId=tab)["errors"]) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.3)
    early = {m["text"][:8]: m for m in lane.read("console_messages", tabId=tab)["messages"]}
    assert early["token at"]["text"] == "token at http://127.0.0.1/cb?access_token=REDACTED&state=REDACTED#REDACTED"
    assert early["db at ht"]["text"] == "db at https://db.example/admin"
    assert early["p" * 8]["text"] == "p" * 1990 + " \u2026" and early["p" * 8]["truncated"] > 0
    assert len(early["huge yyy"]["text"]) == 2000 and early["huge yyy"]["truncated"] == 5 + 5 * 1024 * 1024 - 2000
    assert len(early["arg0zzzz"]["text"]) == 2000 and early["arg0zzzz"]["truncated"] > 90_000
    errors = lane.read("page_errors", tabId=tab)["errors"]
    assert all(len(e["message"]) <= 2_100 and len(e["stack"]) <= 4_100 and e["truncated"] for e in errors), errors
    ok(lane.host, "tab.navigate", {"tabId": tab, "url": lane.site.page("hostile.html?flood=1"), "timeoutMs": 30000})
    deadline = time.monotonic() + 60
    while lane.read("console_messages", tabId=tab, limit=1000)["next"] < 2 * 5 + 5000:
        assert time.monotonic() < deadline
        time.sleep(0.3)
    flooded = lane.read("console_messages", tabId=tab, limit=1000)
    assert flooded["dropped"] == flooded["next"] - 1000 and len(flooded["messages"]) == 1000
    flood = [m["text"] for m in flooded["messages"] if m["text"].startswith("flood")]
    assert flooded["messages"][-1]["text"] == flood[-1] == "flood 4999 http://127.0.0.1/f?key=REDACTED"
    assert all(len(m["text"]) <= 2_100 for m in flooded["messages"])  # 2,000 and redaction's own words
    assert "Logged." in ok(lane.host, "tab.snapshot", {"tabId": tab})["text"]
    answers = json.dumps(lane.answers)
    lines = "\n".join(lane.host.process.lines)
    for secret in ("s3cr3tHOSTILE", "s3cr3tUSERINFO", "s3cr3tCUTUSERINFO", "s3cr3tFLOOD", "s3cr3tERRHUGE",
                   "s3cr3tERRUSER", "s3c"):
        assert secret not in answers, secret
        assert secret not in lines, secret


def test_the_lane_over_mcp_by_name_and_through_kelpie_extension(lane: Lane, secret_tab: str) -> None:
    """An agent's view: the official MCP SDK calls every lane extension by name and through
    ``kelpie_extension`` (each answer's text block is its structured content), and no secret reaches it."""
    from mcp_testlib import connect, run

    ref = refs_of(lane, secret_tab)
    texts: list[str] = []

    async def journey() -> None:
        async with connect(lane.host, "auto") as client:
            for name in LANE:
                arguments: dict[str, Any] = {"tabId": secret_tab}
                if name == "element":
                    arguments["ref"] = ref["Password"]
                for tool, args in ((name, arguments), ("kelpie_extension", {"name": name, "arguments": arguments})):
                    result = await client.call_tool(tool, args)
                    envelope = result.structured_content
                    assert isinstance(envelope, dict) and envelope["success"], (tool, name, envelope)
                    assert json.loads(result.content[0].text) == envelope and not result.is_error
                    texts.append(result.content[0].text)

    run(journey())
    assert len(texts) == 2 * len(LANE)
    every = "\n".join(texts)
    assert "REDACTED" in every and "s3cr3t" not in every and BODY_MARK not in every


def test_a_request_that_never_ends_is_answered_pending(lane: Lane) -> None:
    """A response whose body never ends: every read answers at once with the exchange ``pending`` and its
    status (its response came), the others ended; a read never fails for it."""
    tab = str(ok(lane.host, "tabs.open", {"url": lane.site.page("stall.html")})["tabId"])
    deadline = time.monotonic() + 30
    while True:
        requests = {r["url"].rsplit("/", 1)[-1]: r for r in lane.read("network_requests", tabId=tab)["requests"]}
        if requests.get("pixel.png?after=REDACTED", {}).get("pending") is False and "stall" in requests:
            break
        assert time.monotonic() < deadline, requests
        time.sleep(0.2)
    for _ in range(3):
        requests = {r["url"].rsplit("/", 1)[-1]: r for r in lane.read("network_requests", tabId=tab)["requests"]}
        stalled = requests["stall"]
        assert stalled["pending"] is True and "sizes" not in stalled and stalled["resourceType"] == "fetch"
        assert requests["stall.html"]["pending"] is False and requests["stall.html"]["status"] == 200
    ok(lane.host, "tabs.close", {"tabId": tab})
