"""The repository's documents stand on their own and say what the code does (issue 34).

- No Markdown file links or points outside the checkout (a relative link resolving outside it, a
  ``../shared`` path, a citation of a document the repository does not hold); every relative link
  resolves to a file, and every ``#anchor`` to a heading of its target.
- docs/contract.md keeps the section numbers §1…§11 that code and docs cite as "CONTRACT.md §N", and its
  "Revision 1.2 in this build" table says "implemented" exactly for the additions whose code is in.
- The README's options table is what ``tools/options_table.py`` prints from the CLI's parser; the
  environment variables it names are read by the code; its tool examples are accepted by a gateway
  configured as the reference host's.
- LICENSE is the Apache License 2.0 text; CHANGELOG.md starts with an Unreleased section.

Nothing here starts a browser: the gateway is the engine (sans-I/O), so each example call is judged by
the steps it produces.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(ROOT / "tools"))

import options_table  # noqa: E402  (tools/options_table.py)

SKIP_DIRS = {".git", ".venv", "build", "node_modules", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


def markdown_files() -> list[Path]:
    """Every Markdown file of the checkout (git's list when there is one; else a walk without build dirs)."""
    proc = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if proc.returncode == 0 and proc.stdout.strip():
        return sorted(ROOT / line for line in proc.stdout.splitlines() if (ROOT / line).is_file())
    return sorted(p for p in ROOT.rglob("*.md") if not SKIP_DIRS & set(p.relative_to(ROOT).parts))


MARKDOWN = markdown_files()
IDS = [str(p.relative_to(ROOT)) for p in MARKDOWN]

_INLINE_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
_HTML_LINK = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""")
_DOTDOT = re.compile(r"(?<![\w.$@/{}~-])(?:\.\./)+[^\s`'\")\]>,;]*")
_FORBIDDEN = (
    (re.compile(r"\.\./shared\b"), "a ../shared path (outside the checkout)"),
    (re.compile(r"\bshared/(?:spec|corpus|bugcases)\b"), "the team's shared folder (outside the checkout)"),
    (re.compile(r"beside this repository", re.I), "a document 'beside this repository'"),
    (
        re.compile(r"\bARCHITECTURE(?:\.md)?\b"),
        "ARCHITECTURE.md (not in the repository: cite docs/contract.md)",
    ),
)
_EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, …


def links(text: str) -> list[str]:
    """Every link target of a Markdown text: inline, reference-style and HTML ``href``/``src``."""
    return [m.group(1) for pattern in (_INLINE_LINK, _REF_LINK, _HTML_LINK) for m in pattern.finditer(text)]


def _outside(path: Path) -> bool:
    try:
        path.resolve().relative_to(ROOT)
    except ValueError:
        return True
    return False


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (not ``-``/``_``), spaces as ``-``."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown text's headings (a repeated heading gets ``-1``, ``-2``, …)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m and not in_fence:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def problems_of(path: Path) -> list[str]:
    """What in one Markdown file points outside the checkout or does not resolve."""
    text = path.read_text(encoding="utf-8")
    problems: list[str] = []
    for target in links(text):
        if _EXTERNAL.match(target):
            continue
        file_part, _, fragment = target.partition("#")
        if file_part.startswith("/"):
            problems.append(f"absolute path link {target!r} (a machine path, not the repository)")
            continue
        dest = (path.parent / file_part).resolve() if file_part else path
        if _outside(dest):
            problems.append(f"link {target!r} resolves outside the checkout")
        elif not dest.exists():
            problems.append(f"link {target!r}: {dest.relative_to(ROOT)} does not exist")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest.read_text(encoding="utf-8")):
            problems.append(
                f"link {target!r}: no heading with anchor #{fragment} in {dest.relative_to(ROOT)}"
            )
    for m in _DOTDOT.finditer(text):
        if _outside(path.parent / m.group(0)):
            problems.append(f"path {m.group(0)!r} points outside the checkout")
    for pattern, what in _FORBIDDEN:
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"line {line}: {what}: {m.group(0)!r}")
    return problems


@pytest.mark.parametrize("path", MARKDOWN, ids=IDS)
def test_markdown_stays_inside_the_checkout_and_its_links_resolve(path: Path) -> None:
    problems = problems_of(path)
    assert not problems, f"{path.relative_to(ROOT)}:\n  " + "\n  ".join(problems)


def test_the_link_checker_catches_what_it_must(tmp_path: Path) -> None:
    """The rules above on a file that breaks each of them (the checker itself must be able to fail)."""
    bad = ROOT / "docs" / ".link-check-probe.md"
    bad.write_text(
        "See [the spec](../../shared/spec/CONTRACT.md), [gone](missing.md), [anchor](engine.md#no-such-heading),\n"
        "[abs](/etc/passwd), `../../outside/file` and the files beside this repository (ARCHITECTURE.md).\n"
        "Fine: [engine](engine.md#map-of-modules), [web](https://example.com), `${pcfiledir}/../..`.\n",
        encoding="utf-8",
    )
    try:
        found = "\n".join(problems_of(bad))
    finally:
        bad.unlink()
    for expected in (
        "'../../shared/spec/CONTRACT.md' resolves outside",
        "'missing.md': docs/missing.md does not exist",
        "no heading with anchor #no-such-heading",
        "absolute path link '/etc/passwd'",
        "path '../../outside/file' points outside",
        "a ../shared path",
        "beside this repository",
        "ARCHITECTURE.md (not in the repository",
    ):
        assert expected in found, (expected, found)
    assert "map-of-modules" not in found and "example.com" not in found and "pcfiledir" not in found


def test_slugs_follow_github() -> None:
    assert slug("Revision 1.2 in this build") == "revision-12-in-this-build"
    assert (
        slug("stdio and the tunnel together (`mcp --connect`)")
        == "stdio-and-the-tunnel-together-mcp---connect"
    )
    assert slug("11. Python API (`kelpie_gateway`)") == "11-python-api-kelpie_gateway"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}


# ---------------------------------------------------------------------------------- docs/contract.md

CONTRACT = ROOT / "docs" / "contract.md"
SECTIONS = [
    "What the gateway is",
    "Creating a gateway",
    "Canonical requests",
    "Responses: the versioned envelope",
    "Transactions",
    "References",
    "MCP translation",
    "Limits",
    "The fixed reader and captured-node actions",
    "C ABI",
    "Python API (`kelpie_gateway`)",
]


def test_contract_keeps_the_section_numbers_every_citation_uses() -> None:
    headings = re.findall(r"^## (\d+)\. (.+)$", CONTRACT.read_text(encoding="utf-8"), re.M)
    assert [int(n) for n, _ in headings] == list(range(1, 12))
    assert [title for _, title in headings] == SECTIONS


def test_every_contract_citation_names_a_section_that_exists() -> None:
    """Every "CONTRACT.md §N" (and "CONTRACT §N") in code or docs names one of §1…§11."""
    cited = re.compile(r"CONTRACT(?:\.md)?\s+§(\d+)")
    bad = []
    for folder in ("engine", "abi", "bindings", "tests", "tools", "docs", "fixtures"):
        for path in (ROOT / folder).rglob("*"):
            if not path.is_file() or SKIP_DIRS & set(path.relative_to(ROOT).parts):
                continue
            if path.suffix not in {".py", ".md", ".c", ".h", ".kt", ".swift", ".sh", ".js", ".json", ""}:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            bad += [f"{path.relative_to(ROOT)}: §{n}" for n in cited.findall(text) if not 1 <= int(n) <= 11]
    assert not bad, bad


def _status_rows() -> dict[str, str]:
    text = CONTRACT.read_text(encoding="utf-8")
    table = text.split("## Revision 1.2 in this build", 1)[1]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("addition", "---"):
            rows[cells[0]] = cells[2]
    return rows


def _snapshot_has(param: str) -> Callable[[], bool]:
    def probe() -> bool:
        from kelpie_gateway import schema

        return param in schema.METHODS["tab.snapshot"].by_name

    return probe


def _config_has(name: str) -> Callable[[], bool]:
    def probe() -> bool:
        from kelpie_gateway import config

        return name in config.config_json_schema()["properties"]

    return probe


def _host_flags() -> set[str]:
    from kelpie_gateway.host.cli import build_parser

    return {row.flag.strip("`").split()[0] for row in options_table.rows(build_parser())}


def _flag(name: str) -> Callable[[], bool]:
    return lambda: name in _host_flags()


def _host_extensions() -> set[str]:
    config = _reference_host_config()
    return {e["name"] for e in config["extensions"]}


def _extensions(*names: str) -> Callable[[], bool]:
    return lambda: set(names) <= _host_extensions()


PROBES: dict[str, Callable[[], bool]] = {
    "`tab.snapshot` `include`": _snapshot_has("include"),
    "`tab.snapshot` `find`": _snapshot_has("find"),
    "`tab.snapshot` `since`": _snapshot_has("since"),
    "observers (config `observer`)": _config_has("observer"),
    "native input extensions (`click`, `hover`, `drag`, `type_keys`)": _extensions(
        "click", "hover", "drag", "type_keys"
    ),
    "isolation per client (`--isolation`)": _flag("--isolation"),
    "remote browsers (`--browser-endpoint`, `--browser-header`)": _flag("--browser-endpoint"),
    "files (`upload_file`, `--upload-dir`, `--downloads-dir`, `pdf`)": _flag("--upload-dir"),
    "read-only lane extensions (`console_messages`, `network_requests`, …)": _extensions("console_messages"),
    "stdio in arrival order": lambda: getattr(
        importlib.import_module("kelpie_gateway.host.stdio"), "REQUEST_ORDER", None
    )
    == "arrival",
    'direct CDP hot path (`--direct-cdp`, opt-in: docs/host.md "Direct CDP")': _flag("--direct-cdp"),
    "site policy for every request of every target": lambda: (
        importlib.util.find_spec("kelpie_gateway.host.policy_proxy") is not None
    ),
}
"""Rows of the status table whose truth the code can tell without a browser."""

PLANNED = "planned in revision 1.2"


def test_revision_1_2_status_rows_say_implemented_or_planned() -> None:
    rows = _status_rows()
    assert len(rows) >= 15, rows
    for addition, status in rows.items():
        assert status == "implemented" or status.startswith(PLANNED), (addition, status)
    assert set(PROBES) <= set(rows), sorted(set(PROBES) - set(rows))


@pytest.mark.parametrize("addition", sorted(PROBES))
def test_revision_1_2_status_matches_the_code(addition: str) -> None:
    """When an addition's code lands, its row must say "implemented" (and not before): flip the row in
    docs/contract.md, "Revision 1.2 in this build"."""
    status = _status_rows()[addition]
    present = PROBES[addition]()
    expected = "implemented" if present else PLANNED
    assert status.startswith(expected), f"docs/contract.md says {addition} is {status!r}, but the code " + (
        "has it: change the row to 'implemented'" if present else f"does not: the row must say {PLANNED!r}"
    )


def test_version_says_revision_1_2_in_part_exactly_while_rows_are_planned() -> None:
    """``--version`` names contract v1 revision 1.2, "in part" while a row above is still planned: flip
    ``CONTRACT_REVISION_COMPLETE`` in engine/kelpie_gateway/version.py with the last row."""
    from kelpie_gateway.host.cli import version_text
    from kelpie_gateway.version import CONTRACT_REVISION, CONTRACT_REVISION_COMPLETE

    planned = sorted(a for a, status in _status_rows().items() if status.startswith(PLANNED))
    assert CONTRACT_REVISION == "1.2"
    assert CONTRACT_REVISION_COMPLETE is (not planned), planned
    text = version_text()
    assert "contract v1 revision 1.2" in text
    assert ("in part" in text) is bool(planned), text


# ---------------------------------------------------------------------------------- README

README = ROOT / "README.md"


def test_readme_options_table_is_the_parsers() -> None:
    current = options_table.readme_table(README.read_text(encoding="utf-8"))
    assert current is not None, "README.md lost its generated options table"
    assert current == options_table.render(), (
        "README.md's options table is stale: run .venv/bin/python tools/options_table.py --write"
    )


def test_options_table_covers_every_flag_and_the_issues_variables() -> None:
    from kelpie_gateway.host.cli import build_parser

    table = options_table.render(build_parser())
    for command in ("serve", "mcp", "call", "pair"):
        sub = build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
        for action in sub._actions:
            if (
                action.option_strings
                and action.help != "==SUPPRESS=="
                and "--help" not in action.option_strings
            ):
                assert f"`{max(action.option_strings, key=len)}" in table, (command, action.option_strings)
    for suffix in ("URL", "TOKEN", "TOKEN_FILE", "PAIRINGS", "STATE_DIR", "LIBRARY"):
        assert f"`KELPIE_GATEWAY_{suffix}`" in table, suffix


def test_every_variable_in_the_options_table_is_read_by_the_code() -> None:
    table = options_table.render()
    names = set(re.findall(r"`(KELPIE_[A-Z0-9_]+)`", table))
    sources = "\n".join(
        p.read_text(encoding="utf-8") for p in (ROOT / "engine" / "kelpie_gateway").rglob("*.py")
    )
    unread = sorted(n for n in names if f'"{n}"' not in sources)
    assert not unread, f"the README names variables no code reads: {unread}"


def test_default_clause_parsing() -> None:
    parse = options_table.default_in_help
    assert parse("origins (e.g. 'a,b'); default: every http(s) origin") == "every http(s) origin"
    assert parse("pairing file (0600; default $X or $Y/p.json); 'memory' = forget") == "$X or $Y/p.json"
    assert parse("rotate past this size (default 64 MiB)") == "64 MiB"
    assert parse("manual (default): the operator approves") is None
    assert parse("rebuild even when up to date") is None


def _reference_host_config() -> dict[str, Any]:
    from kelpie_gateway.host.parts import gateway_config

    return gateway_config(browser=True)


def readme_tool_examples() -> list[tuple[str, dict[str, Any]]]:
    section = README.read_text(encoding="utf-8").split("## The MCP tools", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(kelpie_\w+)` \| `(\{.*?\})` \|", section, re.M)
    return [(tool, json.loads(arguments)) for tool, arguments in rows]


def test_readme_shows_each_of_the_four_tools_once() -> None:
    assert sorted(tool for tool, _ in readme_tool_examples()) == sorted(
        ["kelpie_browser_control", "kelpie_extensions", "kelpie_extension_tools", "kelpie_extension"]
    )


TOOL_EXAMPLES = readme_tool_examples()


@pytest.mark.parametrize(("tool", "arguments"), TOOL_EXAMPLES, ids=[tool for tool, _ in TOOL_EXAMPLES])
def test_readme_tool_example_is_accepted_by_the_reference_hosts_gateway(
    tool: str, arguments: dict[str, Any]
) -> None:
    """The example call starts a transaction (an ``authorize`` step, nothing refused) or, for the discovery
    tools, answers without an error — on a gateway with the reference host's config, in both MCP eras."""
    from kelpie_gateway import Gateway

    gw = Gateway(_reference_host_config())
    for meta in (
        {},
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    ):
        message = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, **meta},
        }
        step = gw.begin_mcp(message)
        if step["step"] == "authorize":
            assert step["request"]["method"] in (arguments.get("method"), "extension.call"), step
            refused = gw.advance(
                {
                    "transaction": step["transaction"],
                    "seq": step["seq"],
                    "result": {"success": False, "error": {"code": "NOT_AUTHORIZED", "message": "test"}},
                }
            )
            assert refused["step"] == "complete", refused
            continue
        assert step["step"] == "complete", step
        result = step["response"].get("result")
        assert result is not None and result["isError"] is False, step["response"]
        envelope = result["structuredContent"]
        assert envelope["success"], envelope
        for entry in envelope["result"].get("tools", []):
            assert "error" not in entry, entry
    gw.close()


def test_a_method_called_as_a_tool_is_refused_as_the_readme_says() -> None:
    from kelpie_gateway import Gateway

    gw = Gateway(_reference_host_config())
    step = gw.begin_mcp(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "tab.snapshot", "arguments": {"tabId": "t1"}},
        }
    )
    assert step["step"] == "complete" and step["response"]["error"]["code"] == -32602, step
    gw.close()


# ---------------------------------------------------------------------------------- LICENSE, CHANGELOG

APACHE_2_0_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
"""SHA-256 of https://www.apache.org/licenses/LICENSE-2.0.txt (the same bytes as Debian's
/usr/share/common-licenses/Apache-2.0)."""


def test_license_is_the_apache_2_0_text_pyproject_names() -> None:
    data = (ROOT / "LICENSE").read_bytes()
    assert hashlib.sha256(data).hexdigest() == APACHE_2_0_SHA256
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_changelog_starts_with_unreleased_and_dates_every_section() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", text, re.M)
    assert sections[0] == "[Unreleased]", sections[:2]
    assert len(sections) > 3
    for title in sections[1:]:
        assert re.search(r"\b2026-\d\d-\d\d\b", title), f"a CHANGELOG section without a date: {title!r}"
    assert "keepachangelog.com" in text
