"""The ``kelpie-gateway`` command line (``host/cli.py``): start-up errors a user meets first (each names its
cause and what to do, with a usage exit status), ``call``, ``--version`` and the module entry point, and the
client-side safety of ``call``/``pair`` (docs/host.md "Client-side safety of the CLI").

The host runs ``--browser none``: the command line needs no renderer.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from host_testlib import Host, cli, no_browser_host
from kelpie_gateway import VERSION
from stdio_testlib import KELPIE

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    with no_browser_host(tmp_path_factory.mktemp("kelpie-state"), "cli") as paired:
        yield paired


def test_module_entry_point_and_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kelpie_gateway", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith(f"kelpie-gateway {VERSION} (")
    for command in ("serve", "mcp"):
        again = subprocess.run(
            [str(KELPIE), command, "--version"], capture_output=True, text=True, timeout=60
        )
        assert again.returncode == 0 and again.stdout == done.stdout
    assert "2025-03-26" in done.stdout and "2026-07-28" in done.stdout  # every revision a client can pick
    assert "(contract v1 revision 1.2" in done.stdout


def test_a_port_already_in_use_says_so_and_how_to_pick_another() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(KELPIE), "serve", "--port", str(port), "--browser", "none", "--pairings", "memory"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1
    assert "address already in use" in done.stderr.lower(), done.stderr
    assert f"another process listens on port {port}" in done.stderr and "--port 0" in done.stderr


def test_non_loopback_bind_is_refused() -> None:
    done = cli("serve", "--browser", "none", "--bind", "0.0.0.0", "--port", "0", timeout=30)
    assert done.returncode == 2
    assert "loopback" in done.stderr and "listening" not in done.stdout


def test_call_command(host: Host, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(host.token)
    base = ["--url", host.url, "--token-file", str(token_file)]
    done = cli("call", "capabilities", *base)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["browserAvailable"] is False
    done = cli("call", "capabilities", *base, "--json")
    assert json.loads(done.stdout)["success"] is True
    refused = cli("call", "tab.snapshot", "--params", '{"tabId":"t1"}', *base)
    assert refused.returncode == 1 and refused.stderr.startswith("refused: ")
    bad = cli("call", "capabilities", "--params", "{not json", *base)
    assert bad.returncode == 2
    unpaired = cli("call", "capabilities", "--url", host.url, "--token", "wrong")
    assert unpaired.returncode == 2 and "401" in unpaired.stderr


def test_cli_never_sends_the_bearer_through_a_proxy(host: Host, tmp_path: Path) -> None:
    """Guards: ``call`` sent its bearer through ``$http_proxy`` (off the loopback, to whoever runs the proxy)."""
    seen: list[bytes] = []
    proxy = socket.create_server(("127.0.0.1", 0))
    proxy.settimeout(5)

    def accept() -> None:
        try:
            conn, _ = proxy.accept()
            seen.append(conn.recv(4096))
            conn.close()
        except OSError:
            pass

    threading.Thread(target=accept, daemon=True).start()
    token_file = tmp_path / "token"
    token_file.write_text(host.token)
    proxy_url = f"http://127.0.0.1:{proxy.getsockname()[1]}"
    done = cli("call", "capabilities", "--url", host.url, "--token-file", str(token_file),
               env={"http_proxy": proxy_url, "HTTP_PROXY": proxy_url, "no_proxy": "", "NO_PROXY": ""})
    proxy.close()
    assert done.returncode == 0, done.stderr
    assert seen == []
