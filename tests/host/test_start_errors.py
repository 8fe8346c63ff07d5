"""Start-up errors a user meets first: each names its cause and what to do, with a usage exit status."""

from __future__ import annotations

import socket
import subprocess

from stdio_testlib import KELPIE


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
