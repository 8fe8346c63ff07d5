"""``kelpie-gateway``: the reference Linux host's command line.

Commands (exit status 0 = success):

* ``serve``  run the host (browser + gateway + loopback HTTP); see ``serve --help``.
* ``mcp``    MCP over stdio for MCP clients that launch servers (browser + gateway, no pairing: the
  parent owns the pipe); exits when stdin closes. Same site, browser, config, ``--audit-log`` and
  ``--connect`` flags as ``serve`` (``--connect``: a remote agent reaches the same browser over an
  outbound WebSocket while the stdio session lasts).
* ``call METHOD --params JSON``  forward one canonical request to a running host. Exit 0 success,
  1 refused (nothing happened), 3 unknown outcome (``mayHaveCompleted:true``: observe before acting),
  2 usage or transport error (no host, HTTP 401, …).
* ``observe [--tab ID]``  read a running host's tab once as a one-shot observer (``POST /v1/observe``): the
  page's text and elements without refs, for grounding; exit status as ``call``.
* ``pair request`` ask a running host for a token (the operator approves the printed code); the token is
  written to a 0600 file and never printed. ``pair approve CODE`` / ``pair deny CODE`` / ``pair pending``
  talk to the host's admin Unix socket. ``pair revoke`` revokes the saved token. ``pair list`` shows the
  client names and creation times saved in the host's pairing file (never tokens). The operator's
  ``pair revoke --client NAME`` / ``pair revoke --all`` / ``pair prune --older-than 30d`` revoke pairings in
  that file directly (hosts sharing it refuse those bearers at once and close their contexts).
* ``--version`` (also ``serve --version``, ``mcp --version``): the package, contract and MCP revisions.
* ``build-abi --prefix P``  build the relocatable C library tree from the sources the package carries.
* ``demo``  the main job: a host on the built-in fixture site and an MCP SDK journey, step by step.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import signal
import socket
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kelpie_gateway.host.files import DEFAULT_MAX_DOWNLOAD_MB, DEFAULT_MAX_DOWNLOADS, FilesOptions

DEFAULT_PORT = 7788
DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""Requests to the host never use $http_proxy: the host is on loopback and requests carry the bearer."""


def default_token_file() -> Path:
    """``$KELPIE_GATEWAY_TOKEN_FILE``, else ``$XDG_CONFIG_HOME/kelpie-gateway/token`` (``~/.config/...``)."""
    explicit = os.environ.get("KELPIE_GATEWAY_TOKEN_FILE")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "kelpie-gateway" / "token"


def _url(args: argparse.Namespace) -> str:
    return str(args.url or os.environ.get("KELPIE_GATEWAY_URL") or DEFAULT_URL).rstrip("/")


def _token(args: argparse.Namespace) -> str | None:
    if getattr(args, "token", None):
        return str(args.token)
    if os.environ.get("KELPIE_GATEWAY_TOKEN"):
        return os.environ["KELPIE_GATEWAY_TOKEN"]
    path = Path(args.token_file) if getattr(args, "token_file", None) else default_token_file()
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _http(method: str, url: str, body: Any, token: str | None, timeout: float = 130.0) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json"} if data is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    # The bearer goes to the loopback host only: never through $http_proxy and friends.
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode("utf-8", "replace")


def _short_result(result: Any) -> Any:
    if isinstance(result, dict) and isinstance(result.get("data"), str) and result.get("mimeType"):
        shown = dict(result)
        shown["data"] = f"<{len(result['data'])} base64 characters; use --json for the data>"
        return shown
    return result


# ---------------------------------------------------------------------- call
def cmd_call(args: argparse.Namespace) -> int:
    from kelpie_gateway import JsonError, loads  # the engine's parser: a repeated name is refused

    try:
        params = loads(args.params) if args.params else {}
    except JsonError as exc:
        print(f"error: --params is not JSON: {exc}", file=sys.stderr)
        return 2
    request = {"version": 1, "id": 1, "method": args.method, "params": params}
    return _forward(args, "/v1/browser-control", request)


def _forward(args: argparse.Namespace, route: str, body: Any) -> int:
    """POST ``body`` to the host's ``route`` with the saved bearer and report the envelope (``call``'s
    output and exit status)."""
    token = _token(args)
    if not token:
        print(
            "error: no token: pair first (kelpie-gateway pair request) or pass --token/--token-file",
            file=sys.stderr,
        )
        return 2
    try:
        status, envelope = _http("POST", f"{_url(args)}{route}", body, token, args.timeout)
    except OSError as exc:
        print(f"error: cannot reach the host at {_url(args)}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(envelope, ensure_ascii=False))
    if not isinstance(envelope, dict) or "success" not in envelope:
        if not args.json:
            print(f"error: HTTP {status}: {envelope}", file=sys.stderr)
        return 2
    if envelope["success"]:
        if not args.json:
            print(json.dumps(_short_result(envelope.get("result")), indent=2, ensure_ascii=False))
        return 0
    error = envelope.get("error") or {}
    unknown = bool(envelope.get("mayHaveCompleted"))
    if status != 200:
        if not args.json:
            print(f"error: HTTP {status}: {error.get('code')}: {error.get('message')}", file=sys.stderr)
        return 2
    if not args.json:
        kind = "unknown outcome" if unknown else "refused"
        retry = " (retryable)" if error.get("retryable") else ""
        print(f"{kind}: {error.get('code')}: {error.get('message')}{retry}", file=sys.stderr)
    return 3 if unknown else 1


# ---------------------------------------------------------------------- observe
def cmd_observe(args: argparse.Namespace) -> int:
    """One-shot observer read of a running host's tab (``POST /v1/observe``; docs/host.md "Observers")."""
    params: dict[str, Any] = {}
    if args.tab:
        params["tabId"] = args.tab
    if args.max_chars is not None:
        params["maxChars"] = args.max_chars
    if args.max_elements is not None:
        params["maxElements"] = args.max_elements
    return _forward(args, "/v1/observe", params)


# ---------------------------------------------------------------------- pairing
class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float = 5.0) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def _admin(path: Path, method: str, route: str, body: Any = None) -> tuple[int, Any]:
    conn = _UnixHTTPConnection(str(path))
    try:
        payload = None if body is None else json.dumps(body)
        conn.request(method, route, body=payload, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def _sockets(args: argparse.Namespace) -> list[Path]:
    if args.socket:
        return [Path(args.socket)]
    from kelpie_gateway.host.auth import state_dir  # light: the CLI never loads aiohttp or Playwright

    return sorted(state_dir().glob("admin-*.sock"))


def cmd_pair(args: argparse.Namespace) -> int:
    if args.action == "request":
        return _pair_request(args)
    if args.action == "list":
        return _pair_list(args)
    if args.action == "prune" or (args.action == "revoke" and (args.all or args.client is not None)):
        return _pair_operator(args)
    if args.older_than is not None:
        print("error: --older-than goes with `pair prune`", file=sys.stderr)
        return 2
    if args.action == "revoke":
        token = _token(args)
        if not token:
            print("error: no saved token to revoke", file=sys.stderr)
            return 2
        status, body = _http("DELETE", f"{_url(args)}/v1/pair", None, token)
        if status != 200:
            print(f"error: HTTP {status}: {body}", file=sys.stderr)
            return 1
        if not args.token and not os.environ.get("KELPIE_GATEWAY_TOKEN"):
            path = Path(args.token_file) if args.token_file else default_token_file()
            path.unlink(missing_ok=True)
        print("revoked")
        return 0
    sockets = _sockets(args)
    if not sockets:
        print(
            "error: no running host found (no admin socket); is `kelpie-gateway serve` running?",
            file=sys.stderr,
        )
        return 2
    if args.action == "pending":
        for path in sockets:
            try:
                _, body = _admin(path, "GET", "/pair/pending")
            except OSError:
                continue
            for item in body.get("pending", []):
                print(f"{item['code']}  client {item['client']!r}  ({path.name})")
        return 0
    if not args.code:
        print(f"error: pair {args.action} needs the CODE the host printed", file=sys.stderr)
        return 2
    for path in sockets:
        try:
            status, body = _admin(path, "POST", f"/pair/{args.action}", {"code": args.code})
        except OSError:
            continue
        if status == 200:
            word = "approved" if args.action == "approve" else "denied"
            print(f"{word} pairing {body['code']} for client {body['client']!r}")
            return 0
    print(f"error: no running host has a pending pairing request with code {args.code!r}", file=sys.stderr)
    return 1


def duration(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``45s`` or ``2w`` (a positive number, then one unit) -> seconds.
    Raises ``argparse.ArgumentTypeError`` naming the accepted forms."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
    raw = text.strip().lower()
    try:
        value = float(raw[:-1]) if raw and raw[-1] in units else float("nan")
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: a positive number and a unit, e.g. 30d, 12h, 90m, 45s, 2w"
        )
    return value * units[raw[-1]]


def _pair_operator(args: argparse.Namespace) -> int:
    """``pair revoke --client NAME`` / ``--all`` and ``pair prune --older-than D``: the operator revokes
    pairings in the host's pairing file directly (no host needs to run; running hosts sharing the file
    refuse those bearers on their next request and close their contexts)."""
    from kelpie_gateway.host.auth import PairingFileError, TokenStore, default_pairings_file

    if args.action == "prune" and args.older_than is None:
        print("error: pair prune needs --older-than DURATION (e.g. 30d, 12h)", file=sys.stderr)
        return 2
    if args.action == "prune" and (args.all or args.client is not None):
        print("error: pair prune takes --older-than only (use pair revoke --client/--all)", file=sys.stderr)
        return 2
    if args.action == "revoke" and args.all and args.client is not None:
        print("error: pair revoke takes --client NAME or --all, not both", file=sys.stderr)
        return 2
    if args.action == "revoke" and args.older_than is not None:
        print("error: --older-than goes with `pair prune`", file=sys.stderr)
        return 2
    path = Path(args.pairings) if args.pairings else default_pairings_file()
    if not path.exists():
        print(f"error: no pairing file at {path} (nothing to revoke); pass --pairings FILE", file=sys.stderr)
        return 1
    try:
        store = TokenStore(path)
        if args.action == "prune":
            gone = store.prune(args.older_than)
        elif args.all:
            gone = store.revoke_all()
        else:
            gone = store.revoke_client(args.client)
    except (PairingFileError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stamp = "%Y-%m-%d %H:%M:%S UTC"
    for entry in gone:
        print(f"revoked {entry.client!r} (paired {time.strftime(stamp, time.gmtime(entry.created))})")
    if gone:
        print(f"{len(gone)} pairing(s) revoked in {path}; {len(store)} left")
        return 0
    if args.action == "revoke" and not args.all:
        names = sorted({p.client for p in store.pairings()})
        known = ", ".join(repr(n) for n in names[:10]) or "none"
        print(
            f"error: no active pairing for client {args.client!r} (paired clients: {known})", file=sys.stderr
        )
        return 1
    print(f"nothing to revoke in {path}; {len(store)} pairing(s) left")
    return 0


def _pair_list(args: argparse.Namespace) -> int:
    """Client names and creation times from the pairing file (never tokens; no host needs to run)."""
    from kelpie_gateway.host.auth import PairingFileError, TokenStore, default_pairings_file

    path = Path(args.pairings) if args.pairings else default_pairings_file()
    if not path.exists():
        print(f"no pairings ({path} does not exist)")
        return 0
    try:
        store = TokenStore(path)
    except (PairingFileError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stamp = "%Y-%m-%d %H:%M:%S UTC"
    active = store.pairings()
    print(f"{len(active)} paired client(s) in {path}:")
    for entry in active:
        print(f"  {entry.client!r:40} paired {time.strftime(stamp, time.gmtime(entry.created))}")
    revoked = store.revoked()
    if revoked:
        print(f"{len(revoked)} revoked token(s) remembered (still refused); the latest:")
        for entry in revoked[-5:]:
            when = time.strftime(stamp, time.gmtime(entry.revoked or 0))
            print(f"  {entry.client!r:40} revoked {when}")
    return 0


def _client_name(args: argparse.Namespace) -> str:
    return str(args.client) if args.client is not None else "kelpie-cli"


def _pair_request(args: argparse.Namespace) -> int:
    print(
        "asking the host to pair; approve the code it prints with `kelpie-gateway pair approve CODE`",
        file=sys.stderr,
    )
    try:
        status, body = _http("POST", f"{_url(args)}/v1/pair", {"client": _client_name(args)}, None)
    except OSError as exc:
        print(f"error: cannot reach the host at {_url(args)}: {exc}", file=sys.stderr)
        return 2
    if status != 200 or not isinstance(body, dict) or "token" not in body:
        reason = {403: "denied by the operator", 408: "not approved in time"}.get(status, f"HTTP {status}")
        print(f"error: pairing failed: {reason}", file=sys.stderr)
        return 1
    path = Path(args.token_file) if args.token_file else default_token_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # A fresh 0600 file renamed over the target: an existing file's mode, or a symlink planted at the
    # path, can never make the token readable by others.
    fd, tmp = tempfile.mkstemp(prefix=".token-", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(body["token"])
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    print(f"paired as {_client_name(args)!r}; token saved to {path} (mode 0600)")
    return 0


# ---------------------------------------------------------------------- serve / mcp / demo
def _add_client_flags(parser: argparse.ArgumentParser, token_help: str) -> None:
    """The flags of a command that calls a running host (``call``, ``observe``): ``--url``, ``--token`` /
    ``--token-file`` (one of them), ``--json``, ``--timeout`` (seconds, default 60)."""
    parser.add_argument("--url", help=f"host URL (default $KELPIE_GATEWAY_URL or {DEFAULT_URL})")
    token = parser.add_mutually_exclusive_group()
    token.add_argument("--token", help=token_help)
    token.add_argument(
        "--token-file", help="file holding the bearer token (default: the one pair request saved)"
    )
    parser.add_argument("--json", action="store_true", help="print the response envelope as JSON")
    parser.add_argument("--timeout", type=float, default=60.0, help="HTTP timeout in seconds")


def version_text() -> str:
    """``kelpie-gateway X.Y.Z (contract v1 revision 1.2[ in part…]; MCP …)``: what ``--version`` prints.
    "in part" while some additions of the revision are still planned (docs/contract.md's status table)."""
    from kelpie_gateway import (
        CONTRACT_REVISION,
        CONTRACT_REVISION_COMPLETE,
        MCP_PROTOCOL_VERSIONS,
        MCP_STATELESS_VERSIONS,
        VERSION,
    )

    mcp = ", ".join((*MCP_PROTOCOL_VERSIONS, *MCP_STATELESS_VERSIONS))
    part = "" if CONTRACT_REVISION_COMPLETE else " in part, see docs/contract.md"
    return f"kelpie-gateway {VERSION} (contract v1 revision {CONTRACT_REVISION}{part}; MCP {mcp})"


class _Version(argparse.Action):
    """``--version``: prints :func:`version_text` on one line (argparse's own action re-wraps it)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(version_text())
        parser.exit()


def _browser_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "site": Path(args.site) if args.site else None,
        "browser": args.browser,
        "browser_executable": args.browser_executable,
        "headed": args.headed,
        "user_data_dir": args.user_data_dir,
        "cdp_endpoint": args.cdp_endpoint,
        "browser_endpoint": args.browser_endpoint,
        "browser_headers": list(args.browser_header or []),
        "browser_backoff_max_s": args.browser_backoff_max,
        "direct_cdp": args.direct_cdp,
        "config_file": Path(args.config) if args.config else None,
        "via_abi": args.via_abi,
        "abi_library": args.abi_library,
        "allowed_origins": args.allowed_origins,
        "blocked_origins": args.blocked_origins,
        "read_only": args.read_only,
        "observer": args.observer,
        "network_urls": args.network_urls,
        "network_bodies": args.network_bodies,
        "extensions_include": _globs(args.extensions_include),
        "extensions_exclude": _globs(args.extensions_exclude) or [],
        "tools": args.tools,
        "viewport": args.viewport,
        "max_popups": args.max_popups,
        "retirement_grace_ms": args.retirement_grace_ms,
        "files": FilesOptions(
            tuple(args.upload_dir),
            args.downloads_dir,
            args.max_download_mb,
            args.download_settle_ms,
            args.max_downloads,
        ),
        **_transport_options(args),
    }


def _host_missing(exc: ImportError) -> int:
    print(
        f"error: the reference host needs its extra dependencies ({exc.name or exc}): "
        "pip install 'kelpie-browser-gateway[host]'",
        file=sys.stderr,
    )
    return 2


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        from kelpie_gateway.host.app import ServeOptions, serve
    except ImportError as exc:
        return _host_missing(exc)
    from kelpie_gateway.host.auth import default_pairings_file

    pairings = None if args.pairings == "memory" else Path(args.pairings or default_pairings_file())
    opts = ServeOptions(
        port=args.port,
        bind=args.bind,
        approve_pairing=args.approve_pairing,
        pairing_timeout_s=args.pairing_timeout,
        pairings_file=pairings,
        listen=not args.no_listen,
        isolation=args.isolation,
        max_contexts=args.max_contexts,
        context_idle_s=args.context_idle_s,
        **_browser_options(args),
    )
    try:
        return asyncio.run(serve(opts))
    except KeyboardInterrupt:
        return 130


def _globs(raw: str | None) -> list[str] | None:
    """A comma-separated list of extension-name globs (None when the flag was not given)."""
    if raw is None:
        return None
    return [part.strip() for part in raw.split(",") if part.strip()]


def _transport_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--audit-log``, ``--connect`` and friends (``serve`` and ``mcp``) as ``BrowserOptions`` fields."""
    from kelpie_gateway.host.tunnel import TunnelOptions

    connect = None
    if args.connect:
        connect = TunnelOptions(
            url=args.connect,
            token_file=Path(args.connect_token_file) if args.connect_token_file else None,
            name=args.connect_name,
            session=args.connect_session,
            backoff_max_s=args.connect_backoff_max,
        )
    return {
        "audit_log": Path(args.audit_log) if args.audit_log else None,
        "audit_max_bytes": args.audit_max_bytes,
        "connect": connect,
    }


def _bounded(low: int, high: int) -> Any:
    """An argparse type: an integer in ``low..high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not in {low}..{high}")
        return value

    return parse


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("a number of seconds above 0")
    return value


def _context_count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 256:
        raise argparse.ArgumentTypeError("an integer 1..256")
    return int(text)


def _viewport(text: str) -> tuple[int, int]:
    width, sep, height = text.lower().partition("x")
    try:
        size = (int(width), int(height))
    except ValueError:
        size = (0, 0)
    if not sep or not all(100 <= n <= 8192 for n in size):
        raise argparse.ArgumentTypeError("WIDTHxHEIGHT, each 100..8192 CSS pixels, e.g. 1280x800")
    return size


def add_transport_flags(cmd: argparse.ArgumentParser) -> None:
    """``--audit-log`` and ``--connect`` (issue 17; docs/tunnel.md, docs/host.md "Audit log")."""
    cmd.add_argument(
        "--audit-log",
        metavar="FILE",
        help="append one JSON line per transaction (never params or typed text; 0600; SIGHUP reopens)",
    )
    cmd.add_argument(
        "--audit-max-bytes",
        type=int,
        default=64 * 1024 * 1024,
        help="rotate the audit log to FILE.1 past this size (default 64 MiB)",
    )
    cmd.add_argument(
        "--connect",
        metavar="URL",
        help="also serve MCP over an outbound WebSocket to an agent broker (MCP-over-ACP; wss://, or ws:// "
        "on loopback)",
    )
    cmd.add_argument(
        "--connect-token-file",
        metavar="FILE",
        help="bearer for the broker (default $KELPIE_GATEWAY_CONNECT_TOKEN); never logged",
    )
    cmd.add_argument(
        "--connect-name", default="kelpie-browser", help="the MCP server name declared to the broker"
    )
    cmd.add_argument(
        "--connect-session", metavar="ID", help="attach to this existing broker session (session/resume)"
    )
    cmd.add_argument(
        "--connect-backoff-max",
        type=float,
        default=30.0,
        metavar="S",
        help="longest wait between reconnect attempts (default 30 s; doubling from 0.5 s, jittered)",
    )


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from kelpie_gateway.host.app import BrowserOptions
        from kelpie_gateway.host.stdio import main_stdio
    except ImportError as exc:
        return _host_missing(exc)
    return main_stdio(BrowserOptions(**_browser_options(args)))


def cmd_build_abi(args: argparse.Namespace) -> int:
    """Build the relocatable C library tree (docs/c-abi.md) from the sources this package carries."""
    import subprocess

    import kelpie_gateway

    script = Path(kelpie_gateway.__file__).resolve().parent / "abi" / "build_abi.py"
    if not script.is_file():
        print(
            f"error: {script} is missing: this install does not carry the C library's sources",
            file=sys.stderr,
        )
        return 2
    command = [sys.executable, str(script), "--prefix", args.prefix, *(["--force"] if args.force else [])]
    return subprocess.call(command)


def cmd_doctor(args: argparse.Namespace) -> int:
    """``kelpie-gateway doctor``: see :mod:`kelpie_gateway.host.doctor`."""
    from kelpie_gateway.host import doctor

    return doctor.run(args.browser_executable, Path(args.pairings) if args.pairings else None)


def cmd_install_browser(args: argparse.Namespace) -> int:
    """``kelpie-gateway install-browser``: see :mod:`kelpie_gateway.host.install_browser`."""
    from kelpie_gateway.host import install_browser

    return install_browser.run(method=args.method, dry_run=args.dry_run, force=args.force)


def cmd_demo(args: argparse.Namespace) -> int:
    from kelpie_gateway.host.demo import run_demo

    return run_demo(via_abi=args.via_abi, browser_executable=args.browser_executable)


def _add_browser_flags(cmd: argparse.ArgumentParser) -> None:
    """The site, browser and gateway flags ``serve`` and ``mcp`` share."""
    cmd.add_argument("--version", action=_Version)
    cmd.add_argument("--site", help="folder of pages to serve and open (default: the built-in fixture site)")
    cmd.add_argument(
        "--browser",
        choices=["chromium", "none"],
        default="chromium",
        help="chromium (default) or none: the no-renderer fallback (browserAvailable:false)",
    )
    cmd.add_argument(
        "--browser-executable",
        help="Chromium or Chrome binary (default: the first found, docs/host.md Which browser)",
    )
    cmd.add_argument(
        "--headed", action="store_true", help="show the browser window (needs a display: DISPLAY)"
    )
    cmd.add_argument(
        "--user-data-dir",
        metavar="DIR",
        help="persistent Chromium profile (cookies, storage; default: an isolated temporary profile)",
    )
    cmd.add_argument(
        "--cdp-endpoint",
        metavar="URL",
        help="attach to a Chromium already started with --remote-debugging-port (http(s):// or ws(s)://, "
        "e.g. http://127.0.0.1:9222, or a remote one given explicitly); it is never closed by this host",
    )
    cmd.add_argument(
        "--browser-endpoint",
        metavar="URL",
        help="use a browser from a Playwright browser server (ws(s)://, e.g. `playwright run-server`, a grid "
        "or a cloud service) instead of launching one",
    )
    cmd.add_argument(
        "--browser-header",
        action="append",
        metavar="'NAME: VALUE'",
        help="header sent to --browser-endpoint/--cdp-endpoint (repeatable); the value may be "
        "'@file:PATH' or '@env:VAR'; values are never logged",
    )
    cmd.add_argument(
        "--browser-backoff-max",
        type=_positive,
        default=30.0,
        metavar="S",
        help="longest wait between reconnects to a remote browser that went away (default 30 s; doubling "
        "from 0.5 s, jittered)",
    )
    cmd.add_argument(
        "--direct-cdp",
        action="store_true",
        help="run fixed scripts over the host's own CDP connection to the browser it launches (a loopback "
        "DevTools port that any local process could use; skips Playwright's driver: docs/host.md 'Direct CDP')",
    )
    cmd.add_argument(
        "--config",
        metavar="FILE",
        help='gateway settings as JSON (CONTRACT.md §2), e.g. {"allowActions": false} for a read-only session',
    )
    cmd.add_argument("--via-abi", action="store_true", help="drive every transaction through the C library")
    cmd.add_argument("--abi-library", help="path of libkelpie_browser_gateway.so (default: build/abi/lib)")
    cmd.add_argument(
        "--allowed-origins",
        help="site policy: comma-separated origins or globs the browser may load (e.g. "
        "'https://example.com,http://localhost:*,*.example.org'); default: every http(s) origin",
    )
    cmd.add_argument(
        "--blocked-origins",
        help="site policy: comma-separated origins or globs the browser must not load (wins over --allowed-origins)",
    )
    cmd.add_argument(
        "--read-only",
        action="store_true",
        help="allowActions:false: only reads (snapshot, screenshot, tabs.list, wait_for_text, dialog_observe)",
    )
    cmd.add_argument(
        "--observer",
        action="store_true",
        help="observer:true: a read-only session whose snapshots are one-shot reads without refs (for grounding)",
    )
    cmd.add_argument(
        "--network-urls",
        choices=["redacted", "full"],
        default="redacted",
        help="network_requests and console URLs: redacted (default: query values and fragments hidden) or full "
        "(credential parameters still hidden)",
    )
    cmd.add_argument(
        "--network-bodies",
        action="store_true",
        help="let network_requests answer text response bodies (at most 64 KiB each) when a call asks",
    )
    cmd.add_argument(
        "--extensions-include", help="comma-separated globs of extension names to offer (default: all)"
    )
    cmd.add_argument(
        "--extensions-exclude", help="comma-separated globs of extension names to hide (wins over include)"
    )
    cmd.add_argument(
        "--tools",
        choices=("compact", "full"),
        default="compact",
        help="MCP tools/list: the four compact tools (default), or 'full': also one tool per method and extension",
    )
    cmd.add_argument(
        "--viewport",
        type=_viewport,
        metavar="WxH",
        help="browser viewport in CSS pixels (default 1280x800)",
    )
    cmd.add_argument(
        "--max-popups",
        type=_bounded(0, 1000),
        default=20,
        metavar="N",
        help="popups of one tab open at once; later ones are closed as they open and counted "
        "(tabs.list popupsClosed) (default 20)",
    )
    cmd.add_argument(
        "--retirement-grace-ms",
        type=_bounded(0, 5000),
        metavar="MS",
        help="how long past its timeoutMs a cancelled call's page may run before the host stops its script "
        "(0..5000; default 5000, the engine's)",
    )
    cmd.add_argument(
        "--upload-dir",
        metavar="DIR",
        action="append",
        default=[],
        help="a folder upload_file may attach files from (repeatable; symlinks are resolved; default: none, "
        "so upload_file is refused)",
    )
    cmd.add_argument(
        "--downloads-dir",
        metavar="DIR",
        help="where downloads and PDFs are kept (made 0700 if missing; default: a private temporary folder "
        "removed on exit)",
    )
    cmd.add_argument(
        "--max-download-mb",
        type=int,
        metavar="N",
        default=DEFAULT_MAX_DOWNLOAD_MB,
        help=f"cancel a download past N MiB (default {DEFAULT_MAX_DOWNLOAD_MB})",
    )
    cmd.add_argument(
        "--max-downloads",
        type=int,
        metavar="N",
        default=DEFAULT_MAX_DOWNLOADS,
        help=f"keep at most N downloads while the host runs; later ones are cancelled and said so "
        f"(default {DEFAULT_MAX_DOWNLOADS}: a page reloading itself starts 10 more each time)",
    )
    cmd.add_argument(
        "--download-settle-ms",
        type=int,
        metavar="MS",
        default=0,
        help="how long a click that neither navigates nor follows a download link waits for a download the "
        "page's script may start, to report it (default 0: it is kept and listed, not reported by the click)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kelpie-gateway", description="Kelpie browser gateway: reference Linux host"
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the host: headless Chromium + gateway + loopback HTTP")
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"API port (default {DEFAULT_PORT}; 0 = any)"
    )
    serve.add_argument(
        "--bind", default="127.0.0.1", help="loopback address to bind (non-loopback is refused)"
    )
    _add_browser_flags(serve)
    serve.add_argument(
        "--approve-pairing",
        choices=["manual", "auto"],
        default="manual",
        help="manual (default): the operator runs 'kelpie-gateway pair approve CODE'; auto: for tests and demos",
    )
    serve.add_argument(
        "--pairing-timeout", type=float, default=120.0, help="seconds a pairing request waits (default 120)"
    )
    serve.add_argument(
        "--pairings",
        metavar="FILE",
        help="pairing file (token digests, 0600; default $KELPIE_GATEWAY_PAIRINGS or "
        "$XDG_STATE_HOME/kelpie-gateway/pairings.json); 'memory' = forget pairings on exit",
    )
    serve.add_argument(
        "--no-listen", action="store_true", help="serve only through --connect (no loopback HTTP routes)"
    )
    serve.add_argument(
        "--isolation",
        choices=["shared", "per-client"],
        help="shared: one browser context and gateway for every client; per-client: one per paired client "
        "and tunnel session (default shared)",
    )
    serve.add_argument(
        "--max-contexts",
        type=_context_count,
        metavar="N",
        help="per-client: at most N client contexts at once (default 8)",
    )
    serve.add_argument(
        "--context-idle-s",
        type=_positive,
        metavar="S",
        help="per-client: close a client's context after S seconds without requests (default 900)",
    )
    add_transport_flags(serve)
    serve.set_defaults(func=cmd_serve)

    mcp = sub.add_parser(
        "mcp",
        help="MCP over stdio (for MCP clients that launch servers): browser + gateway, no pairing",
        description="MCP over stdio: newline-delimited JSON-RPC on stdin/stdout, logs on stderr; exits when "
        "stdin closes. No pairing: the client that launched the process owns it.",
    )
    _add_browser_flags(mcp)
    add_transport_flags(mcp)
    mcp.set_defaults(func=cmd_mcp)

    call = sub.add_parser(
        "call",
        help="forward one canonical request to a running host",
        epilog="exit status: 0 success, 1 refused, 3 unknown outcome (mayHaveCompleted:true: observe before "
        "acting again), 2 usage or transport error",
    )
    call.add_argument("method", help="canonical method, e.g. tabs.list or tab.snapshot")
    call.add_argument("--params", default="{}", help="params as a JSON object (default {})")
    _add_client_flags(call, "bearer token (prefer --token-file: argv is visible to other users)")
    call.set_defaults(func=cmd_call)

    observe = sub.add_parser(
        "observe",
        help="read a running host's tab once, as an observer: page text and elements, no refs (grounding)",
        epilog="exit status as call: 0 success, 1 refused (RENDERER_CHANGED: the page changed during the read, "
        "read again), 2 usage or transport error",
    )
    observe.add_argument("--tab", help="the tab to read (default: the host's selected tab)")
    observe.add_argument("--max-chars", type=int, help="page text budget, 1..12000 (default 12000)")
    observe.add_argument("--max-elements", type=int, help="most elements, 1..200 (default 200)")
    _add_client_flags(observe, argparse.SUPPRESS)
    observe.set_defaults(func=cmd_observe)

    pair = sub.add_parser("pair", help="pairing: request a token, approve/deny codes, revoke, prune")
    pair.add_argument("action", choices=["request", "approve", "deny", "pending", "revoke", "list", "prune"])
    pair.add_argument("code", nargs="?", help="the code the host printed (approve/deny)")
    pair.add_argument(
        "--url", help=f"host URL (request/revoke; default $KELPIE_GATEWAY_URL or {DEFAULT_URL})"
    )
    pair.add_argument(
        "--client",
        help="request: the client name shown to the operator (default kelpie-cli); revoke: revoke every "
        "pairing of this client name in the pairing file",
    )
    pair.add_argument("--all", action="store_true", help="revoke: revoke every pairing in the pairing file")
    pair.add_argument(
        "--older-than",
        type=duration,
        metavar="DURATION",
        help="prune: revoke the pairings made longer ago than this (30d, 12h, 90m, 45s, 2w)",
    )
    pair.add_argument("--token", help=argparse.SUPPRESS)
    pair.add_argument("--token-file", help="where the token is saved/read")
    pair.add_argument("--socket", help="admin socket of the host (default: every running host's)")
    pair.add_argument(
        "--pairings", metavar="FILE", help="the host's pairing file (list/revoke/prune; default as serve)"
    )
    pair.set_defaults(func=cmd_pair)

    build_abi = sub.add_parser(
        "build-abi",
        help="build the C library (libkelpie_browser_gateway.so) as a relocatable tree under PREFIX",
        description="Needs a C compiler and this Python's headers and shared libpython; see docs/c-abi.md.",
    )
    build_abi.add_argument("--prefix", required=True, help="install tree (include/, lib/, lib/pkgconfig/)")
    build_abi.add_argument("--force", action="store_true", help="rebuild even when up to date")
    build_abi.set_defaults(func=cmd_build_abi)

    doctor = sub.add_parser(
        "doctor",
        help="check this machine: Python, the browser, the reader bundles, the C library, the pairing file",
        description="One line per check, with what to do for each that failed; exit 1 when one failed.",
    )
    doctor.add_argument("--browser-executable", help="the Chromium binary serve would be given")
    doctor.add_argument("--pairings", metavar="FILE", help="the pairing file (default as serve)")
    doctor.set_defaults(func=cmd_doctor)

    install = sub.add_parser(
        "install-browser",
        help="install a Chromium the host can launch (apt as root on Debian/Ubuntu, else Playwright's installer)",
        description="Does nothing when a browser is already found (the order serve uses); says what to do "
        "when the install cannot run or fails. See docs/host.md, install-browser.",
    )
    install.add_argument(
        "--with",
        dest="method",
        choices=("auto", "apt", "playwright"),
        default="auto",
        help="how: apt (root, Debian/Ubuntu), playwright (no root), auto (apt when it can, else playwright)",
    )
    install.add_argument("--dry-run", action="store_true", help="print the commands, run none")
    install.add_argument("--force", action="store_true", help="install even when a browser is found")
    install.set_defaults(func=cmd_install_browser)

    demo = sub.add_parser("demo", help="the host on the fixture site + an MCP SDK journey, step by step")
    demo.add_argument("--via-abi", action="store_true", help="run the host through the C library")
    demo.add_argument("--browser-executable", help="Chromium binary")
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command in ("call", "observe", "pair"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `kelpie-gateway call … | head` ends quietly
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
