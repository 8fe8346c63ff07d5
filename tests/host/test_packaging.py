"""Packaging (issue 14): a fresh virtualenv ``pip install`` of the checkout works outside the checkout.

* the engine-only install (no extras) has the Python API and ``python -m kelpie_gateway --help``, no
  Playwright, aiohttp or MCP SDK, and ``serve`` says which extra to install; ``kelpie-gateway build-abi``
  builds the C library from the sources the wheel carries, and the C example host runs it;
* with ``[host]``, ``kelpie-gateway serve`` runs from the installed package on the fixture site the wheel
  carries (not the checkout's), and Chromium opens its index page.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
from kelpie_gateway.host.launch import terminate
from stdio_testlib import ROOT

pytestmark = pytest.mark.timeout(900)

IGNORED = (".git", "build", ".venv", "node_modules", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis")


READER_PROBE = (
    "import hashlib, json; from kelpie_gateway import reader;"
    "print(json.dumps({'files': sorted(p.relative_to(reader.JS_DIR).as_posix() for p in reader.JS_DIR.rglob('*')"
    " if p.is_file()), 'bundles': {n: hashlib.sha256(reader.assemble_bundle(n).encode()).hexdigest()"
    " for n in reader.BUNDLES}}))"
)


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_fresh_venv_install_engine_only_then_host(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED))
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], tmp_path).returncode == 0
    py, bin_dir = venv / "bin" / "python", venv / "bin"
    elsewhere = tmp_path / "elsewhere"  # never run from the checkout: imports must come from the venv
    elsewhere.mkdir()

    core = _run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(src)], elsewhere)
    assert core.returncode == 0, core.stdout + core.stderr
    helped = _run([str(py), "-m", "kelpie_gateway", "--help"], elsewhere)
    assert helped.returncode == 0 and "serve" in helped.stdout and "mcp" in helped.stdout, helped.stderr
    api = _run(
        [
            str(py),
            "-c",
            "import importlib.util as u, json, kelpie_gateway as k;"
            "g = k.Gateway({'nativeMethods': ['get-tabs']});"
            "print(json.dumps({'file': k.__file__, 'step': g.begin({'version': 1, 'method': 'tabs.list', 'params': {}})['step'],"
            "'missing': [m for m in ('playwright', 'aiohttp', 'mcp') if u.find_spec(m) is None]}))",
        ],
        elsewhere,
    )
    assert api.returncode == 0, api.stderr
    seen = json.loads(api.stdout)
    assert seen["file"].startswith(str(venv)) and seen["step"] == "authorize"
    assert seen["missing"] == ["playwright", "aiohttp", "mcp"]  # the engine needs none of them
    # The wheel's reader: exactly the sources the bundles are made of (its parts included, nothing the
    # tests alone use), assembling the very bundles of the checkout.
    shipped = _run([str(py), "-c", READER_PROBE], elsewhere)
    assert shipped.returncode == 0, shipped.stderr
    assert json.loads(shipped.stdout) == json.loads(_run([sys.executable, "-c", READER_PROBE], ROOT).stdout)
    refused = _run([str(bin_dir / "kelpie-gateway"), "serve", "--port", "0"], elsewhere, timeout=60)
    assert refused.returncode == 2 and "kelpie-browser-gateway[host]" in refused.stderr

    # The wheel carries abi/: the engine-only install builds the relocatable C library, which a C host
    # that knows nothing about Python loads with an empty environment.
    prefix = tmp_path / "c-prefix"
    built = _run([str(bin_dir / "kelpie-gateway"), "build-abi", "--prefix", str(prefix)], elsewhere)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (prefix / "lib" / "kelpie-browser-gateway" / "python" / "kelpie_gateway" / "api.py").is_file()
    example = subprocess.run(
        [
            str(ROOT / "build" / "abi" / "bin" / "example_host"),
            str(prefix / "lib" / "libkelpie_browser_gateway.so"),
        ],
        env={},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert example.returncode == 0 and '"success":true' in example.stdout, example.stdout + example.stderr

    host = _run(
        [str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", f"{src}[host]"], elsewhere
    )
    assert host.returncode == 0, host.stdout + host.stderr
    proc = subprocess.Popen(
        [
            str(bin_dir / "kelpie-gateway"),
            "serve",
            "--port",
            "0",
            "--approve-pairing",
            "auto",
            "--pairings",
            "memory",
        ],
        cwd=elsewhere,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("admin socket"):
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert ready.wait(120) and proc.poll() is None, "\n".join(lines)
        url = lines[0].split(" ", 1)[1]
        site_line = next(line for line in lines if line.startswith("site "))
        site_dir = site_line.split(" ")[1]
        assert site_dir.startswith(str(venv)) and "site-packages" in site_dir  # the wheel's copy
        assert Path(site_dir, "index.html").is_file() and not Path(site_dir).is_symlink()
        request = urllib.request.Request(
            f"{url}/v1/pair", data=b'{"client":"packaging"}', headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            token = json.loads(response.read())["token"]
        request = urllib.request.Request(
            f"{url}/v1/browser-control",
            data=json.dumps({"version": 1, "id": 1, "method": "tabs.list", "params": {}}).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            envelope = json.loads(response.read())
        assert envelope["success"], envelope
        assert envelope["result"]["tabs"][0]["title"] == "Kelpie fixture site"
    finally:
        terminate(proc)
