"""Which browser the host launches (issue 34; docs/host.md "Which browser"): one order for ``serve``, ``mcp``
and ``doctor`` — ``--browser-executable``, ``CHROME_PATH``, Debian/Ubuntu, snap, Chrome stable, ``PATH``,
Playwright's managed browsers — and ``kelpie-gateway install-browser``.

The order is checked on fake machines (a temporary root for the system paths, a ``PATH`` and a ``HOME`` of
fake executables that answer ``--version``); ``mcp`` is run for real with Debian's Chromium hidden and the
real Chromium placed where Playwright's installer puts its own, and with no browser anywhere (the agent's
error, stderr and ``doctor`` each name where the host looked and the fix). ``install-browser`` runs for real:
Playwright's installer, which cannot download on a machine without its CDN (as here, or with the CDN
pointed at a closed port), and apt through a fake ``apt-get`` that installs a fake Chromium.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from host_testlib import cli
from kelpie_gateway.host import discovery
from stdio_testlib import StdioHost

pytestmark = pytest.mark.timeout(240)

REAL_CHROMIUM = Path("/usr/lib/chromium/chromium")  # Debian's binary (/usr/bin/chromium is its wrapper)


def fake_browser(path: Path, version: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{version}'\n")
    path.chmod(0o755)
    return path


class Machine:
    """A fake machine: ``root`` (system paths), ``bin`` (the only ``PATH``), ``home`` (Playwright's cache)."""

    def __init__(self, base: Path) -> None:
        self.root, self.bin, self.home = base / "root", base / "bin", base / "home"
        for folder in (self.root, self.bin, self.home):
            folder.mkdir(parents=True, exist_ok=True)

    def env(self, **extra: str) -> dict[str, str]:
        return {
            discovery.ROOT_ENV: str(self.root),
            "PATH": str(self.bin),
            "HOME": str(self.home),
            **extra,
        }

    def playwright(self, revision: int, layout: str = "chrome-linux64/chrome") -> Path:
        return self.home / ".cache" / "ms-playwright" / f"chromium-{revision}" / layout


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    box = Machine(tmp_path)
    for name in ("CHROME_PATH", "PLAYWRIGHT_BROWSERS_PATH", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in box.env().items():
        monkeypatch.setenv(name, value)
    yield box


def test_the_order_is_one_list_first_found_wins(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    places = [
        (machine.root / "usr/bin/chromium", "Debian/Ubuntu package"),
        (machine.root / "usr/bin/chromium-browser", "Debian/Ubuntu package"),
        (machine.root / "snap/bin/chromium", "snap"),
        (machine.root / "opt/google/chrome/chrome", "Google Chrome stable"),
        (machine.bin / "google-chrome-stable", "Google Chrome stable"),
        (machine.bin / "google-chrome", "Google Chrome stable"),
        (machine.bin / "chromium", "PATH"),
        (machine.bin / "chromium-browser", "PATH"),
        (machine.playwright(1255), "Playwright's managed browsers"),
        (machine.playwright(1255, "chrome-linux-arm64/chrome"), "Playwright's managed browsers"),
        (
            machine.home / ".cache/ms-playwright/chromium_headless_shell-1255/chrome-headless-shell-linux64"
            / "chrome-headless-shell",
            "Playwright's headless shell (headless only)",
        ),
    ]
    for path, _source in places:
        fake_browser(path, f"Chromium {path.name}")
    for path, source in places:  # take each away in turn: the next one answers
        found = discovery.discover(None)
        assert (found.path, found.source) == (str(path), source)
        assert found.looked[-1] in (str(path), f"{path.name} on PATH") or "ms-playwright" in found.looked[-1]
        path.unlink()
    nothing = discovery.discover(None)
    assert nothing.path is None
    assert nothing.looked[:2] == ("--browser-executable (not given)", "CHROME_PATH (not set)")
    assert str(machine.root / "snap/bin/chromium") in nothing.looked
    assert "google-chrome-stable on PATH" in nothing.looked
    assert nothing.looked[-2].startswith(str(machine.home / ".cache/ms-playwright/chromium-*/"))
    assert nothing.looked[-1].startswith(str(machine.home / ".cache/ms-playwright/chromium_headless_shell-*/"))
    # What is given is taken as given (its failure to start is then named as its own).
    monkeypatch.setenv("CHROME_PATH", "/nowhere/chrome")
    assert discovery.discover(None).path == "/nowhere/chrome"
    assert discovery.discover("/given").source == "--browser-executable"


def test_what_does_not_count(machine: Machine) -> None:
    snap = machine.root / "snap/bin/chromium"
    snap.parent.mkdir(parents=True)
    snap.write_text("not executable")  # a file without the x bit
    (machine.root / "usr/bin/chromium").mkdir(parents=True)  # a directory of that name
    (machine.home / ".cache/ms-playwright/chromium-1300").mkdir(parents=True)  # an empty download
    older = fake_browser(machine.playwright(1200, "chrome-linux/chrome"), "Chromium 1200")
    assert discovery.discover(None).path == str(older)  # the older layout of an older revision


def test_playwright_browsers_path_and_the_newest_revision(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_browser(machine.playwright(1255), "in the home cache")
    elsewhere = machine.home / "browsers"
    fake_browser(elsewhere / "chromium-999/chrome-linux64/chrome", "old")
    newest = fake_browser(elsewhere / "chromium-1000/chrome-linux64/chrome", "new")
    fake_browser(elsewhere / "chromium_headless_shell-2000/chrome-linux64/chrome", "not a chromium-N")
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(elsewhere))
    assert discovery.discover(None).path == str(newest)  # 1000 > 999, numerically; the cache is not read
    monkeypatch.delenv("PLAYWRIGHT_BROWSERS_PATH")
    monkeypatch.setenv("XDG_CACHE_HOME", str(elsewhere.parent / "nothing"))
    assert discovery.discover(None).path is None


def test_doctor_names_what_it_found_and_where_it_looked(machine: Machine, tmp_path: Path) -> None:
    pairings = ["--pairings", str(tmp_path / "pairings.json")]
    done = cli("doctor", *pairings, env=machine.env())
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    line = next(line for line in out.splitlines() if line.startswith("FAIL browser:"))
    assert "no Chromium or Chrome found; looked at --browser-executable (not given), CHROME_PATH (not set)" in line
    for place in ("usr/bin/chromium", "snap/bin/chromium", "opt/google/chrome/chrome", "ms-playwright"):
        assert place in line, line
    assert "fix: run `kelpie-gateway install-browser`" in out

    snap = fake_browser(machine.root / "snap/bin/chromium", "Chromium 131.0 snap")
    done = cli("doctor", *pairings, env=machine.env())
    assert done.returncode == 0 and f"ok   browser: Chromium 131.0 snap at {snap} (snap)" in done.stdout
    chrome = fake_browser(machine.bin / "google-chrome-stable", "Google Chrome 131.0.6778.85")
    snap.unlink()
    done = cli("doctor", *pairings, env=machine.env())
    assert f"ok   browser: Google Chrome 131.0.6778.85 at {chrome} (Google Chrome stable)" in done.stdout


@pytest.mark.skipif(not REAL_CHROMIUM.exists(), reason="needs Debian's chromium package (tools/dev setup)")
def test_mcp_launches_the_browser_playwright_installed_when_debians_is_hidden(machine: Machine) -> None:
    where = machine.playwright(1255)
    where.parent.mkdir(parents=True)
    where.symlink_to(REAL_CHROMIUM)  # what `playwright install chromium` leaves there, here the real one
    with StdioHost([], env={**os.environ, **machine.env()}) as host:
        host.initialize()
        envelope = host.control(2, "tabs.list", {})
        assert envelope["success"], envelope
        assert envelope["result"]["tabs"][0]["title"] == "Kelpie fixture site"
        host.close_stdin()
        assert host.wait(60) == 0
    assert any(line.startswith("browser chromium") and f"({where})" in line for line in host.log), host.log


def test_no_browser_anywhere_the_agent_stderr_and_doctor_say_the_fix(machine: Machine) -> None:
    with StdioHost([], env={**os.environ, **machine.env()}) as host:
        host.initialize()
        envelope = host.control(2, "tabs.list", {})
        assert host.wait(120) == 1  # the session ends by itself, as for any browser that cannot start
    assert envelope["success"] is False and envelope["mayHaveCompleted"] is False
    assert envelope["error"]["code"] == "BROWSER_UNAVAILABLE"
    message = envelope["error"]["message"]
    assert message.startswith("the browser could not be started: no Chromium or Chrome found (looked at ")
    assert str(machine.root / "snap/bin/chromium") in message and "ms-playwright" in message
    assert "run `kelpie-gateway install-browser`" in message and "CHROME_PATH" in message
    stderr = [line for line in host.log if "could not start the browser" in line]
    assert stderr and "kelpie-gateway install-browser" in stderr[0], host.log


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_install_browser_says_playwright_cannot_download_and_what_to_do(machine: Machine) -> None:
    (machine.root / "etc").mkdir()
    (machine.root / "etc/os-release").write_text('ID=debian\nVERSION_ID="12"\n')
    # The real installer, its download pointed at a closed port: it fails as it does on a machine whose
    # network cannot reach Playwright's CDN (this one's cannot either: ENOTFOUND).
    host = f"http://127.0.0.1:{_closed_port()}"
    done = cli("install-browser", env=machine.env(PLAYWRIGHT_DOWNLOAD_HOST=host), timeout=180)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "running: " in out and "-m playwright install chromium" in out
    assert "  | " in out  # the installer's own progress is shown as it comes
    last = out.strip().splitlines()[-1]
    assert last.startswith("error: Playwright's installer failed: this machine cannot reach Playwright's "
                           "download server (127.0.0.1:"), last
    assert "as root, `sudo apt-get install chromium`" in last and "CHROME_PATH" in last
    assert not (machine.home / ".cache/ms-playwright").exists() or discovery.discover(None).path is None


def test_install_browser_uses_apt_as_root_and_names_what_it_installed(machine: Machine) -> None:
    if os.geteuid() != 0:
        pytest.skip("the apt path runs only as root (the test of the non-root message is below)")
    (machine.root / "etc").mkdir()
    (machine.root / "etc/os-release").write_text('ID=debian\nVERSION_ID="12"\n')
    calls = machine.home / "apt-calls"
    target = machine.root / "usr/bin/chromium"
    apt = machine.bin / "apt-get"  # records its arguments; "installs" a Chromium that answers --version
    apt.write_text(
        "#!/bin/sh\n"
        f'echo "$DEBIAN_FRONTEND $*" >> "{calls}"\n'
        'echo "Reading package lists..."\n'
        f'if [ "$1" = install ]; then /bin/mkdir -p "{target.parent}"; '
        f"printf '#!/bin/sh\\necho Chromium 131\\n' > \"{target}\"; /bin/chmod 755 \"{target}\"; fi\n"
    )
    apt.chmod(0o755)
    dry = cli("install-browser", "--dry-run", env=machine.env())
    assert dry.returncode == 0 and not calls.exists()
    assert "would run: apt-get update\nwould run: apt-get install -y --no-install-recommends chromium" in dry.stderr
    done = cli("install-browser", env=machine.env())
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == [
        "noninteractive update",
        "noninteractive install -y --no-install-recommends chromium",
    ]
    assert "  | Reading package lists..." in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"installed: {target} (Debian/Ubuntu package); `kelpie-gateway doctor` checks it starts"
    )
    again = cli("install-browser", env=machine.env())  # found now: nothing to do
    assert again.returncode == 0 and "a browser is already there: " + str(target) in again.stderr
    assert len(calls.read_text().splitlines()) == 2
    (machine.root / "etc/os-release").write_text("ID=ubuntu\nID_LIKE=debian\n")
    ubuntu = cli("install-browser", "--dry-run", "--force", env=machine.env())
    assert "would run: apt-get install -y --no-install-recommends chromium-browser" in ubuntu.stderr


def test_install_browser_not_root_names_the_sudo_command_and_uses_playwright(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kelpie_gateway.host import install_browser

    (machine.root / "etc").mkdir()
    (machine.root / "etc/os-release").write_text("ID=ubuntu\nID_LIKE=debian\n")
    fake_browser(machine.bin / "apt-get", "apt")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    said: list[str] = []
    assert install_browser.run(dry_run=True, out=said.append) == 0
    assert said[0].startswith("not root, so no apt-get: as root, `sudo apt-get install chromium-browser`")
    assert said[1].endswith("-m playwright install chromium") and said[1].startswith("would run: ")
    said.clear()
    assert install_browser.run(method="apt", out=said.append) == 2
    assert said == ["error: --with apt cannot run here (not root); as root: `sudo apt-get install "
                    "chromium-browser`, or --with playwright"]


def test_install_browser_with_apt_refuses_where_apt_cannot_run(machine: Machine) -> None:
    done = cli("install-browser", "--with", "apt", env=machine.env())  # no os-release, no apt-get
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: --with apt cannot run here (this is not Debian or Ubuntu with apt-get); as root: "
        "`sudo apt-get install chromium`, or --with playwright"
    )
