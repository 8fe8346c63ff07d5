"""The site policy's one decision and its proxy, without a browser (issue 27; the browser and every
transport: ``test_policy_attacks.py``; the browser modes: ``test_policy_modes.py``).

* Canonical origins: every URL read by the WHATWG parser as Chromium reads it; IPv4-mapped IPv6 is IPv4,
  trailing dots and case do not matter, ``*.localhost`` is ``localhost``; a URL that does not parse is
  refused naming why.
* Tunnels (``CONNECT``: https, wss, ws) are decided at their endpoint; addresses a name resolves to are
  checked when the policy names addresses.
* The proxy (real sockets on loopback): each request of a kept-alive connection is decided and forwarded
  on its own (the flaw of the proxy libraries we evaluated), refusals never connect, tunnels and upgrades
  relay bytes, the proxy connects to exactly the address it checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from kelpie_gateway.host.policy import PolicyError, SitePolicy, origin_text, parse_pattern
from kelpie_gateway.host.policy_proxy import PolicyProxy
from stdio_testlib import run_async

POLICY = ("http://127.0.0.1:*,http://localhost:*", "http://127.0.0.2:*,http://localhost:9,http://127.0.0.1:7")


def policy() -> SitePolicy:
    return SitePolicy.from_flags(*POLICY)


# ---------------------------------------------------------------------- canonical origins
@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://127.0.0.2:18082\\@127.0.0.1:18081/", "http://127.0.0.2:18082"),
        ("http://[::ffff:127.0.0.2]:80/", "http://127.0.0.2"),
        ("http://[::ffff:7f00:2]/", "http://127.0.0.2"),
        ("http://localhost.:9/x", "http://localhost:9"),
        ("http://SUB.Localhost:9/", "http://localhost:9"),
        ("HTTP://a.B.example.COM./", "http://a.b.example.com"),
        ("http://0x7f.0.0.2/", "http://127.0.0.2"),
        ("http://127.2:5/", "http://127.0.0.2:5"),
        ("http://2130706434/", "http://127.0.0.2"),
        ("http://0177.0.0.02/", "http://127.0.0.2"),
        ("http://127.0.0.2./", "http://127.0.0.2"),
        ("http://user:pw@127.0.0.2/?code=1", "http://127.0.0.2"),
        ("https://127.0.0.2:443/", "https://127.0.0.2"),
        ("http://[0:0:0:0:0:0:0:1]:8/", "http://[::1]:8"),
        ("http://ÄÖ.de/", "http://xn--4ca0b.de"),
        ("http://127.0.0.2:5#@127.0.0.1/", "http://127.0.0.2:5"),
    ],
)
def test_urls_are_read_as_the_browser_reads_them(url: str, origin: str) -> None:
    assert origin_text(url) == origin


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:18081./x", "its port is not a number"),
        ("http://127.0.0.1:99999/", "its port is over 65535"),
        ("http://exa mple/", "its host is not a valid host name or address"),
        ("http://[::1/", "its host is not a valid host name or address"),
    ],
)
def test_a_url_the_browser_cannot_parse_is_refused_naming_why(url: str, why: str) -> None:
    reason = policy().refusal(url)
    assert reason == f"not a valid URL ({why}): the browser would not load it"
    assert "/x" not in reason and "http:" not in reason  # never the scheme it is not, never a path


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("http://127.0.0.1:5000/", None),
        ("http://localhost:8/", None),
        ("https://localhost:8443/", None),  # a tunnel to an allowed endpoint
        ("http://127.0.0.2:5/", "http://127.0.0.2:5 is blocked by the site policy (http://127.0.0.2:*)"),
        ("https://127.0.0.2/", "https://127.0.0.2 is blocked by the site policy (http://127.0.0.2:*)"),
        ("http://[::ffff:127.0.0.3]/", "http://127.0.0.3 is not in the site policy's allowed origins"),
        ("http://sub.localhost:9/", "http://localhost:9 is blocked by the site policy (http://localhost:9)"),
        ("ftp://x/", "ftp: URLs are not allowed"),
        ("file:///etc/passwd", "file: URLs are not allowed"),
        ("about:blank", None),
        ("data:text/html,x", None),
    ],
)
def test_the_decision(url: str, refused: str | None) -> None:
    assert policy().refusal(url) == refused


def test_tunnels_are_decided_at_their_endpoint() -> None:
    p = policy()
    assert p.tunnel_refusal("127.0.0.2", 443) == "127.0.0.2:443 is blocked by the site policy (http://127.0.0.2:*)"
    assert p.tunnel_refusal("localhost", 8443) is None  # https://localhost:8443 or ws://localhost:8443
    assert p.tunnel_refusal("127.0.0.3", 443) == "127.0.0.3:443 is not in the site policy's allowed origins"
    assert p.tunnel_refusal("::1", 5) == "[::1]:5 is not in the site policy's allowed origins"
    assert SitePolicy.from_flags("https://example.com", None).tunnel_refusal("example.com", 443) is None


def test_addresses_a_name_resolves_to() -> None:
    p = policy()
    assert p.names_addresses
    assert p.address_refusal("http", ["127.0.0.1", "::1"], 7, tunnel=False) == (
        "its address 127.0.0.1:7 is blocked by the site policy (http://127.0.0.1:7)"
    )
    # 0.0.0.0 and :: reach this machine; an IPv4-mapped address is its IPv4 address.
    assert p.address_refusal("http", ["0.0.0.0"], 7, tunnel=False) is not None
    assert p.address_refusal("http", ["::ffff:127.0.0.2"], 5, tunnel=False) is not None
    assert p.address_refusal("http", ["127.0.0.1"], 8, tunnel=False) is None
    assert not SitePolicy.from_flags(None, "*.evil.test").names_addresses


def test_authorize_resolves_a_name_when_the_policy_names_addresses() -> None:
    lines: list[str] = []
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return {"rebind.test": ["127.0.0.2"], "fine.test": ["127.0.0.1"]}[host]

    p = SitePolicy.from_flags("*", "http://127.0.0.2:*")
    p.log, p.resolver = lines.append, resolver

    def step(url: str) -> dict:
        return {"request": {"method": "tab.navigate", "params": {"tabId": "t1", "url": url}}}

    async def decide(url: str) -> dict:
        answer = p.authorize(step(url))
        return await answer if isinstance(answer, Awaitable) else answer  # type: ignore[misc]

    refused = run_async(decide("http://rebind.test/path?token=x"))
    assert refused["success"] is False and refused["error"]["code"] == "NOT_AUTHORIZED"
    assert "its address 127.0.0.2:80 is blocked" in refused["error"]["message"]
    assert run_async(decide("http://fine.test/")) == {"success": True}
    assert asked == ["rebind.test", "fine.test"]
    assert lines == [
        "site policy: refused tab.navigate to http://rebind.test before dispatch: http://rebind.test: "
        "its address 127.0.0.2:80 is blocked by the site policy (http://127.0.0.2:*)"
    ]
    # An IP literal or a policy without addresses needs no lookup: the answer is immediate.
    assert p.authorize(step("http://127.0.0.2/"))["success"] is False  # type: ignore[index]
    assert SitePolicy.from_flags(None, "*.evil.test").authorize(step("http://fine.test/")) == {"success": True}


# ---------------------------------------------------------------------- patterns
@pytest.mark.parametrize(
    ("pattern", "url", "matches"),
    [
        ("https://example.com", "https://example.com/a", True),
        ("https://example.com", "https://example.com:8443/a", False),
        ("http://example.com", "https://example.com/a", False),
        ("http://localhost:*", "http://localhost:9/a", True),
        ("https://*.example.com", "https://a.b.example.com/", True),
        ("https://*.example.com", "https://example.com/", False),
        ("example.com", "http://example.com:81/", True),
        ("*", "https://anything.test/", True),
        ("http://[::1]:8080", "http://[::1]:8080/x", True),
        ("http://[::ffff:127.0.0.2]:*", "http://127.0.0.2:5/", True),
        ("http://LOCALHOST.:*", "http://sub.localhost:5/", True),
        ("http://*.localhost:*", "http://localhost:5/", True),
        ("http://127.2:*", "http://127.0.0.2:5/", True),
    ],
)
def test_origin_patterns(pattern: str, url: str, matches: bool) -> None:
    assert (SitePolicy.from_flags(None, pattern).refusal(url) is not None) is matches


@pytest.mark.parametrize(
    "bad", ["ftp://example.com", "https://example.com/path", "http://host:99999", "exa mple.com", "http://a\\b"]
)
def test_bad_patterns_are_refused(bad: str) -> None:
    with pytest.raises(PolicyError):
        parse_pattern(bad)


def test_an_explicitly_empty_allow_list_allows_only_the_site() -> None:
    p = SitePolicy.from_flags("", None)
    p.allow_origin_of("http://127.0.0.1:5000/index.html")
    assert p.refusal("http://127.0.0.1:5000/second.html") is None
    assert p.refusal("http://127.0.0.1:5001/") is not None
    assert SitePolicy.from_flags(None, None).refusal("https://anything.test/") is None
    assert not SitePolicy.from_flags(None, None).restrictive


# ---------------------------------------------------------------------- the proxy, on real sockets
class Upstream:
    """A loopback TCP server that records every connection and what each sent; ``answer(head)`` gives the
    bytes to answer an HTTP request head with (default: a small 200)."""

    def __init__(self, answer: Callable[[bytes], bytes] | None = None, *, raw: bool = False) -> None:
        self.connections = 0
        self.received: list[bytes] = []
        self.answer = answer or (lambda head: b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        self.raw = raw

    async def start(self, address: str) -> int:
        self.server = await asyncio.start_server(self._conn, address, 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            if self.raw:  # echo
                while data := await reader.read(65536):
                    self.received.append(data)
                    writer.write(data)
                    await writer.drain()
                return
            head = await reader.readuntil(b"\r\n\r\n")
            if b"content-length: " in head.lower():
                size = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                head += await reader.readexactly(size)
            elif b"transfer-encoding: chunked" in head.lower():
                while not head.endswith(b"0\r\n\r\n"):
                    head += await reader.read(65536)
            self.received.append(head)
            writer.write(self.answer(head))
            await writer.drain()
            if b"101" in self.answer(head)[:13]:
                while data := await reader.read(65536):
                    writer.write(data.upper())
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        self.server.close()


async def exchange(port: int, data: bytes, until: bytes = b"", timeout: float = 5.0) -> bytes:
    """Send ``data`` to the proxy and read until ``until`` appears (or the connection closes)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    got = b""
    try:
        while not (until and until in got):
            chunk = await asyncio.wait_for(reader.read(65536), timeout)
            if not chunk:
                break
            got += chunk
    finally:
        writer.close()
    return got


def with_proxy(body: Callable[[PolicyProxy, list[str]], Awaitable[None]], p: SitePolicy | None = None) -> list[str]:
    lines: list[str] = []

    async def run() -> None:
        proxy = PolicyProxy(p or SitePolicy.from_flags("http://127.0.0.1:*,http://127.0.0.4:*", "http://127.0.0.2:*"),
                            lines.append)
        await proxy.start()
        try:
            await body(proxy, lines)
        finally:
            await proxy.close()

    run_async(run())
    return lines


def get(host: str, path: str = "/x", extra: str = "") -> bytes:
    return f"GET http://{host}{path} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n".encode()


def test_every_request_of_a_kept_alive_connection_is_decided_and_sent_on_its_own() -> None:
    """proxy.py 2.4 and pproxy 2.7 send a kept-alive connection's later requests to its first request's
    upstream, unchecked: here the second request names another host and the third a blocked one."""

    async def body(proxy: PolicyProxy, lines: list[str]) -> None:
        a, b, blocked = Upstream(lambda h: b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA"), \
            Upstream(lambda h: b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nB"), Upstream()
        pa, pb, px = await a.start("127.0.0.1"), await b.start("127.0.0.4"), await blocked.start("127.0.0.2")
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        answers = []
        for host in (f"127.0.0.1:{pa}", f"127.0.0.4:{pb}", f"127.0.0.2:{px}"):
            writer.write(get(host, "/secret?token=t"))
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            size = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            answers.append((head, await reader.readexactly(size)))
        writer.close()
        assert answers[0][1] == b"A" and answers[1][1] == b"B"
        head, page = answers[2]
        assert head.startswith(b"HTTP/1.1 403") and b"content-security-policy: sandbox" in head
        assert b"Blocked by the site policy" in page and b"/secret" not in page
        assert (a.connections, b.connections, blocked.connections) == (1, 1, 0)
        assert b"connection: close" in a.received[0] and a.received[0].startswith(b"GET /secret?token=t HTTP/1.1")
        assert lines == [f"site policy: blocked GET to http://127.0.0.2:{px}: http://127.0.0.2:{px} is blocked by the "
                         "site policy (http://127.0.0.2:*)"]
        assert proxy.refused_since(f"http://127.0.0.2:{px}/anything", 0) == f"http://127.0.0.2:{px}"
        for server in (a, b, blocked):
            server.close()

    with_proxy(body)


def test_tunnels_relay_bytes_and_refused_ones_never_connect() -> None:
    async def body(proxy: PolicyProxy, lines: list[str]) -> None:
        echo, blocked = Upstream(raw=True), Upstream(raw=True)
        pe, px = await echo.start("127.0.0.4"), await blocked.start("127.0.0.2")
        got = await exchange(proxy.port, f"CONNECT 127.0.0.4:{pe} HTTP/1.1\r\nHost: x\r\n\r\nearly bytes".encode(), b"early bytes")
        assert got.startswith(b"HTTP/1.1 200 Connection established") and got.endswith(b"early bytes")
        refused = await exchange(proxy.port, f"CONNECT 127.0.0.2:{px} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert refused.startswith(b"HTTP/1.1 403") and blocked.connections == 0 and echo.connections == 1
        assert lines == [f"site policy: blocked CONNECT (https, wss or ws) to 127.0.0.2:{px}: 127.0.0.2:{px} is "
                         "blocked by the site policy (http://127.0.0.2:*)"]
        mapped = await exchange(proxy.port, f"CONNECT [::ffff:127.0.0.2]:{px} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert mapped.startswith(b"HTTP/1.1 403") and blocked.connections == 0
        bad = await exchange(proxy.port, b"CONNECT user@127.0.0.4:1/x HTTP/1.1\r\nHost: x\r\n\r\n")
        assert bad.startswith(b"HTTP/1.1 400")
        echo.close()
        blocked.close()

    with_proxy(body)


def test_the_proxy_connects_to_exactly_the_address_it_checked() -> None:
    calls: list[str] = []

    async def body(proxy: PolicyProxy, lines: list[str]) -> None:
        target = Upstream()
        port = await target.start("127.0.0.4")
        answers = {"ok.test": ["127.0.0.4"], "rebind.test": ["127.0.0.2"], "both.test": ["127.0.0.4", "127.0.0.2"]}

        async def resolver(host: str, p: int) -> list[str]:
            calls.append(host)
            return answers[host]

        proxy.policy.resolver = resolver
        fine = await exchange(proxy.port, get(f"ok.test:{port}"), b"ok")
        assert fine.startswith(b"HTTP/1.1 200") and target.connections == 1
        assert f"Host: ok.test:{port}".lower().encode() in target.received[0].lower()
        for name in ("rebind.test", "both.test"):  # any blocked address refuses the name
            refused = await exchange(proxy.port, get(f"{name}:{port}"))
            assert refused.startswith(b"HTTP/1.1 403"), refused
        assert target.connections == 1 and calls == ["ok.test", "rebind.test", "both.test"]
        assert all("its address 127.0.0.2:" in line for line in lines) and len(lines) == 2
        target.close()

    with_proxy(body, SitePolicy.from_flags("*", "http://127.0.0.2:*"))


def test_what_the_proxy_answers_itself() -> None:
    async def body(proxy: PolicyProxy, lines: list[str]) -> None:
        itself = await exchange(proxy.port, get(f"127.0.0.1:{proxy.port}"))
        assert itself.startswith(b"HTTP/1.1 403") and b"proxy itself" in itself
        unreachable = await exchange(proxy.port, get("127.0.0.4:1"))
        assert unreachable.startswith(b"HTTP/1.1 502") and b"x-kelpie-site-policy: unreachable" in unreachable
        origin_form = await exchange(proxy.port, b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
        assert origin_form.startswith(b"HTTP/1.1 400")
        garbage = await exchange(proxy.port, b"\x16\x03\x01 not http\r\n\r\n")
        assert garbage.startswith(b"HTTP/1.1 400")
        https_absolute = await exchange(proxy.port, b"GET https://127.0.0.4/ HTTP/1.1\r\nHost: a\r\n\r\n")
        assert https_absolute.startswith(b"HTTP/1.1 400")
        assert len(lines) == 1 and "proxy itself" in lines[0]

    with_proxy(body)


def test_bodies_stream_and_hop_by_hop_headers_stay_behind() -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nKeep-Alive: timeout=5\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"

    async def body(proxy: PolicyProxy, lines: list[str]) -> None:
        target = Upstream(lambda head: chunked)
        port = await target.start("127.0.0.4")
        request = (f"POST http://127.0.0.4:{port}/up HTTP/1.1\r\nHost: 127.0.0.4:{port}\r\nProxy-Connection: keep-alive\r\n"
                   "Connection: keep-alive, X-Private\r\nX-Private: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "4\r\nwxyz\r\n0\r\n\r\n").encode()
        got = await exchange(proxy.port, request, b"0\r\n\r\n")
        sent = target.received[0].lower()
        assert b"proxy-connection" not in sent and b"x-private" not in sent and b"wxyz" in sent
        assert b"connection: close" in sent
        assert got.startswith(b"HTTP/1.1 200") and b"abc" in got and b"de" in got and b"keep-alive:" not in got.lower()
        target.close()

    with_proxy(body)


def test_an_upgrade_sent_without_a_tunnel_is_relayed_after_101() -> None:
    switching = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"

    async def body(proxy: PolicyProxy, lines: list[str]) -> None:
        target = Upstream(lambda head: switching)
        port = await target.start("127.0.0.4")
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(get(f"127.0.0.4:{port}", "/ws", "Connection: Upgrade\r\nUpgrade: websocket\r\n"))
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert head.startswith(b"HTTP/1.1 101") and b"upgrade: websocket" in head.lower()
        writer.write(b"frames")
        await writer.drain()
        assert await asyncio.wait_for(reader.readexactly(6), 5) == b"FRAMES"
        writer.close()
        target.close()

    with_proxy(body)


def test_a_flood_of_refusals_cannot_flood_the_log() -> None:
    async def body(proxy: PolicyProxy, lines: list[str]) -> None:
        for _ in range(130):
            assert (await exchange(proxy.port, get("127.0.0.2:9"))).startswith(b"HTTP/1.1 403")
        assert proxy.refused == 130

    lines = with_proxy(body)
    assert len(lines) == 101 and all("blocked GET to http://127.0.0.2:9" in line for line in lines[:100])
    assert lines[100] == "site policy: 30 more requests blocked within 10 s (past 100 lines, not logged one by one)"


def test_a_destination_that_answers_garbage_is_502_and_the_proxy_goes_on() -> None:
    async def body(proxy: PolicyProxy, lines: list[str]) -> None:
        garbled = Upstream(lambda head: b"SPEAKS NO HTTP\r\n\r\n")
        silent = Upstream(lambda head: b"")
        pg, ps = await garbled.start("127.0.0.4"), await silent.start("127.0.0.4")
        assert (await exchange(proxy.port, get(f"127.0.0.4:{pg}"))).startswith(b"HTTP/1.1 502")
        assert (await exchange(proxy.port, get(f"127.0.0.4:{ps}"))).startswith(b"HTTP/1.1 502")
        fine = Upstream()
        pf = await fine.start("127.0.0.4")
        assert (await exchange(proxy.port, get(f"127.0.0.4:{pf}"), b"ok")).startswith(b"HTTP/1.1 200")
        for server in (garbled, silent, fine):
            server.close()

    with_proxy(body)
