"""Operator pairing control (issue 34; docs/host.md "Pairing and tokens"): ``pair revoke --client NAME`` /
``--all``, ``pair prune --older-than DURATION`` on the pairing file, a running host refusing those bearers
at once (401 "revoked") and closing a revoked client's context under ``--isolation per-client``, and the
rate-limited log line for each refused request (never the token).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from host_testlib import Host, cli, start_host
from kelpie_gateway.host.auth import RefusalLog, TokenStore, _stamp
from kelpie_gateway.host.cli import duration
from kelpie_gateway.host.launch import HostProcess

pytestmark = pytest.mark.timeout(300)

CAPS = {"version": 1, "id": 1, "method": "capabilities", "params": {}}


def _store_with(path: Path, *clients: str) -> dict[str, str]:
    store = TokenStore(path)
    return {name: store.issue(name) for name in clients}


def _age(path: Path, client: str, days: float) -> None:
    """Backdate ``client``'s pairing in the file by ``days`` (as if it had been made that long ago)."""
    data = json.loads(path.read_text())
    for item in data["pairings"]:
        if item["client"] == client:
            item["created"] = _stamp(time.time() - days * 86400)
    path.write_text(json.dumps(data))


# ---------------------------------------------------------------------------------------- the store
def test_revoke_client_all_and_prune_revoke_exactly_what_they_name(tmp_path: Path) -> None:
    path = tmp_path / "pairings.json"
    tokens = _store_with(path, "a", "a", "b", "old", "c")
    _age(path, "old", 40)
    store = TokenStore(path)
    assert [p.client for p in store.revoke_client("a")] == ["a", "a"]  # every pairing of that name
    assert store.revoke_client("nobody") == []
    assert [p.client for p in store.prune(30 * 86400)] == ["old"]  # only the one older than 30 days
    with pytest.raises(ValueError):
        store.prune(0)
    fresh = TokenStore(path)  # persistently: another process sees it
    assert fresh.check(tokens["a"])[0] == "revoked" and fresh.check(tokens["old"])[0] == "revoked"
    assert fresh.check(tokens["b"])[0] == "valid"
    assert sorted(p.client for p in fresh.revoke_all()) == ["b", "c"]
    assert len(TokenStore(path)) == 0 and TokenStore(path).check(tokens["c"])[0] == "revoked"


def test_durations() -> None:
    assert duration("30d") == 30 * 86400 and duration("12h") == 43200 and duration("1.5m") == 90
    assert duration("2w") == 14 * 86400 and duration("45s") == 45
    for bad in ("30", "d", "-1d", "0h", "xh", "infd", "nand", ""):
        with pytest.raises(Exception, match="not a duration"):
            duration(bad)


def test_refusal_log_is_one_line_per_reason_per_interval_with_a_count_of_the_rest() -> None:
    now = [0.0]
    lines: list[str] = []
    log = RefusalLog(lines.append, interval_s=60, clock=lambda: now[0])
    assert log.refused(401, "unknown bearer")
    assert not log.refused(401, "unknown bearer") and not log.refused(401, "unknown bearer")
    assert log.refused(401, "revoked bearer", "client 'a'")  # another reason has its own budget
    now[0] = 59.9
    assert not log.refused(401, "unknown bearer")
    now[0] = 60.0
    assert log.refused(401, "unknown bearer")
    now[0] = 200.0
    assert log.refused(401, "unknown bearer")  # nothing was left out since the last one
    assert lines == [
        "refused a request (401 unknown bearer)",
        "refused a request (401 revoked bearer): client 'a'",
        "refused a request (401 unknown bearer) (3 more of this reason left out of the log in the last 60 s)",
        "refused a request (401 unknown bearer)",
    ]


# ---------------------------------------------------------------------------------------- the CLI
def test_cli_revoke_and_prune(tmp_path: Path) -> None:
    path = tmp_path / "pairings.json"
    tokens = _store_with(path, "agent-a", "agent-b", "stale", "agent-c")
    _age(path, "stale", 45)
    args = ["--pairings", str(path)]
    done = cli("pair", "revoke", "--client", "agent-a", *args)
    assert done.returncode == 0, done.stderr
    assert "revoked 'agent-a'" in done.stdout and "1 pairing(s) revoked" in done.stdout and "3 left" in done.stdout
    missing = cli("pair", "revoke", "--client", "agent-z", *args)
    assert missing.returncode == 1 and "no active pairing for client 'agent-z'" in missing.stderr
    assert "'agent-b'" in missing.stderr  # the names that are paired, so the operator can pick
    pruned = cli("pair", "prune", "--older-than", "30d", *args)
    assert pruned.returncode == 0 and "revoked 'stale'" in pruned.stdout and "2 left" in pruned.stdout
    again = cli("pair", "prune", "--older-than", "30d", *args)
    assert again.returncode == 0 and "nothing to revoke" in again.stdout
    bad = cli("pair", "prune", "--older-than", "30", *args)
    assert bad.returncode == 2 and "not a duration" in bad.stderr
    assert cli("pair", "prune", *args).returncode == 2
    assert cli("pair", "revoke", "--all", "--client", "x", *args).returncode == 2
    everything = cli("pair", "revoke", "--all", *args)
    assert everything.returncode == 0 and "2 pairing(s) revoked" in everything.stdout
    store = TokenStore(path)
    assert len(store) == 0 and all(store.check(t)[0] == "revoked" for t in tokens.values())
    listed = cli("pair", "list", *args)
    assert "0 paired client(s)" in listed.stdout and "4 revoked token(s)" in listed.stdout
    nofile = cli("pair", "revoke", "--all", "--pairings", str(tmp_path / "none.json"))
    assert nofile.returncode == 1 and "no pairing file" in nofile.stderr


# ---------------------------------------------------------------------------------------- a running host
@pytest.fixture(scope="module")
def no_browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Host, Path]]:
    path = tmp_path_factory.mktemp("pairs") / "pairings.json"
    process = HostProcess(["--browser", "none", "--approve-pairing", "auto", "--pairings", str(path)])
    process.start()
    try:
        yield Host(process, "", "python"), path
    finally:
        process.stop()


def test_an_operator_revoke_is_a_401_on_the_next_request_and_logged_once(no_browser: tuple[Host, Path]) -> None:
    host, path = no_browser
    leaving, staying = host.pair("leaving"), host.pair("staying")
    assert host.post("/v1/browser-control", CAPS, leaving)[0] == 200
    done = cli("pair", "revoke", "--client", "leaving", "--pairings", str(path))
    assert done.returncode == 0, done.stderr
    status, envelope = host.post("/v1/browser-control", CAPS, leaving)
    assert status == 401 and "revoked" in envelope["error"]["message"]
    assert host.post("/v1/browser-control", CAPS, staying)[0] == 200
    assert host.process.wait_for_line("refused a request (401 revoked bearer): client 'leaving'", 10)
    for _ in range(5):  # a client hammering with a bad bearer: one line, not five
        assert host.post("/v1/browser-control", CAPS, "not-a-token-" + "x" * 20)[0] == 401
    assert host.post("/v1/browser-control", CAPS, token="", headers={"Origin": "https://evil.example"})[0] == 401
    assert host.process.wait_for_line("refused a request (401 unknown bearer)", 10)
    time.sleep(0.5)  # let the log reader catch up before counting
    lines = list(host.process.lines)
    assert sum("401 unknown bearer" in x for x in lines) == 1
    assert sum("401 missing bearer" in x for x in lines) == 1
    assert not any("not-a-token" in x or leaving in x or staying in x for x in lines)  # never a token


def test_a_403_for_a_web_page_is_logged(no_browser: tuple[Host, Path]) -> None:
    host, _path = no_browser
    token = host.pair("with-origin")
    status, _ = host.post("/v1/browser-control", CAPS, token, headers={"Origin": "https://evil.example"})
    assert status == 403
    assert host.process.wait_for_line("refused a request (403 Origin header (a web page))", 10)


def test_an_operator_revoke_closes_that_client_s_context(tmp_path: Path) -> None:
    path = tmp_path / "pairings.json"
    process = start_host(
        ["--approve-pairing", "auto", "--pairings", str(path), "--isolation", "per-client"], "python"
    )
    try:
        host = Host(process, "", "python")
        leaving, staying = host.pair("leaving"), host.pair("staying")
        for token in (leaving, staying):  # each gets its own context (a first tabs.list makes it)
            assert host.call("tabs.list", {}, token=token)["success"] is True
        assert process.wait_for_line("client 'leaving'", 30)
        done = cli("pair", "revoke", "--client", "leaving", "--pairings", str(path))
        assert done.returncode == 0, done.stderr
        status, envelope = host.post("/v1/browser-control", {"version": 1, "method": "tabs.list", "params": {}},
                                     leaving)
        assert status == 401 and "revoked" in envelope["error"]["message"]
        assert process.wait_for_line("of client 'leaving' closed: its pairing was revoked", 10)
        assert host.call("tabs.list", {}, token=staying)["success"] is True
        assert not any("of client 'staying' closed" in x for x in process.lines)
    finally:
        process.stop()
