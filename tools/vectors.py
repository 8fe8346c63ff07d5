#!/usr/bin/env python3
"""Request/response vectors: flatten, replay (Python API) and check (fixtures/vectors/README.md).

Usage::

    python tools/vectors.py plan  VECTOR                 # flat call lines for a C/Kotlin replayer
    python tools/vectors.py check VECTOR OUTPUT          # compare a replayer's output lines; exit 1 on mismatch
    python tools/vectors.py run   [VECTOR ...]           # replay through kelpie_gateway.Gateway and check
    python tools/vectors.py list                         # every vector, one per line (files, then twins)

VECTOR is a file path, or a file path followed by ``@2026-07-28`` for that file's *modern twin*
(:func:`twin`): the same case spoken in the stateless MCP revision, checked against the same
expectations once the era's own members are verified and set aside (fixtures/vectors/README.md).

Importable (``from tools import vectors``): :func:`load`, :func:`plan`, :func:`replay`, :func:`check`,
:func:`match`, :func:`all_vectors`, :func:`twin`, :func:`all_cases`. Only the standard library is used
except in :func:`replay`.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VECTOR_DIR = ROOT / "fixtures" / "vectors"
CALLS = ("begin", "begin_mcp", "advance", "cancel", "next", "invalidate_refs")
_PLAIN = ("next", "invalidate_refs")
_INPUTS = ("input", "inputText", "inputHex", "inputRepeat")
_OPERATORS = ("$absent", "$type", "$contains", "$json", "$len", "$oneOf")

MODERN = "2026-07-28"
"""The stateless MCP revision (CONTRACT.md §7 v1.1) every twin speaks."""
MODERN_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "kelpie-vectors", "version": "1"},
}
"""The per-request ``_meta`` envelope a twin adds to each request."""
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
MODERN_HTTP_STATUS = {-32700: 400, -32600: 400, -32602: 400, -32020: 400, -32022: 400, -32601: 404}
"""The ``httpStatus`` a stateless request's JSON-RPC error carries on its ``complete`` step."""
_HANDSHAKE_ONLY = ("initialize", "ping")
"""Methods a twin leaves in the handshake era (the stateless revision has neither)."""


def all_vectors() -> list[Path]:
    """Every vector file under fixtures/vectors, sorted by name."""
    return sorted(VECTOR_DIR.glob("*.json"))


def all_cases() -> list[tuple[str, dict[str, Any]]]:
    """``(name, vector)`` for every vector file, then the modern twin of each file that has one."""
    files = [(p.stem, load(p)) for p in all_vectors()]
    twins = [(t["name"], t) for t in (twin(v) for _, v in files) if t is not None]
    return [*files, *twins]


def _modernizable(step: dict[str, Any]) -> bool:
    msg = step.get("input")
    return (
        step["call"] == "begin_mcp"
        and isinstance(msg, dict)
        and isinstance(msg.get("method"), str)
        and msg["method"] not in _HANDSHAKE_ONLY
        and isinstance(msg.get("params", {}), dict)
    )


def twin(vector: dict[str, Any]) -> dict[str, Any] | None:
    """The modern twin of a vector, or None when it has nothing to say in the stateless revision (or is
    written in it already).

    Every ``begin_mcp`` input that is a JSON-RPC request or notification with an object (or no)
    ``params`` gains the :data:`MODERN_META` envelope in ``params._meta`` (kept beside any ``_meta`` it
    had), except ``initialize`` and ``ping``, which stay handshake-era. Everything else — canonical calls,
    renderer results, raw text — is unchanged, and so are the expectations: :func:`check` verifies the
    era's own members (``resultType``, the serverInfo stamp, ``httpStatus``) and sets them aside first,
    so the tool results, ``structuredContent``, image blocks and error mapping must be those of the
    handshake era."""
    if any(_stateless(step) for step in vector["steps"]):
        return None  # written for the stateless revision already
    steps = []
    changed = False
    for step in vector["steps"]:
        step = copy.deepcopy(step)
        if _modernizable(step):
            msg = step["input"]
            params = msg.get("params", {})
            own = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
            msg["params"] = {**params, "_meta": {**own, **MODERN_META}}
            changed = True
        steps.append(step)
    if not changed:
        return None
    return {
        **vector,
        "name": f"{vector['name']}@{MODERN}",
        "description": f"Modern twin ({MODERN}) of {vector['name']}: {vector.get('description', '')}",
        "era": MODERN,
        "steps": steps,
    }


def load(path: str | Path) -> dict[str, Any]:
    """Read and structurally validate one vector file (raises ValueError with the reason); a path ending
    in ``@2026-07-28`` gives that file's modern twin (ValueError if it has none)."""
    text = str(path)
    if text.endswith("@" + MODERN):
        made = twin(load(text[: -len(MODERN) - 1]))
        if made is None:
            raise ValueError(f"{text}: that vector has no modern twin")
        return made
    p = Path(path)
    vector = json.loads(p.read_text(encoding="utf-8"))
    problems = validate(vector)
    if vector.get("name") != p.stem:
        problems.append(f"name {vector.get('name')!r} differs from the file name {p.stem!r}")
    if problems:
        raise ValueError(f"{p}: " + "; ".join(problems))
    return vector


def validate(vector: Any) -> list[str]:
    """Structural problems of a vector (empty list = well-formed)."""
    if not isinstance(vector, dict):
        return ["a vector is a JSON object"]
    out = []
    for key in vector:
        if key not in ("name", "description", "config", "steps", "era"):
            out.append(f"unknown key {key!r}")
    if not isinstance(vector.get("name"), str):
        out.append("name must be a string")
    if not isinstance(vector.get("config"), dict):
        out.append("config must be an object")
    steps = vector.get("steps")
    if not isinstance(steps, list) or not steps:
        return [*out, "steps must be a non-empty array"]
    for i, s in enumerate(steps):
        if not isinstance(s, dict):
            out.append(f"steps[{i}] must be an object")
            continue
        for key in s:
            if key not in ("call", "expect", "expectCount", "note", *_INPUTS):
                out.append(f"steps[{i}]: unknown key {key!r}")
        if s.get("call") not in CALLS:
            out.append(f"steps[{i}].call must be one of {CALLS}")
        forms = [k for k in _INPUTS if k in s]
        if len(forms) != 1:
            out.append(f"steps[{i}] needs exactly one of {_INPUTS}")
        if s.get("call") in _PLAIN and forms != ["input"]:
            out.append(f"steps[{i}]: {s.get('call')} takes 'input' (a string or null)")
        if s.get("call") in _PLAIN and not (s.get("input") is None or isinstance(s.get("input"), str)):
            out.append(f"steps[{i}]: {s.get('call')} input must be a string or null")
        counts = s.get("expectCount", {})
        if not isinstance(counts, dict) or not all(type(v) is int for v in counts.values()):
            out.append(f"steps[{i}].expectCount must map substrings to integers")
    return out


def _compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
        "utf-8", "surrogatepass"
    )


def step_input(step: dict[str, Any]) -> tuple[str, bytes]:
    """``(kind, payload)`` of one step: kind ``J`` (text), ``S`` (plain string) or ``N`` (NULL)."""
    call = step["call"]
    if call in _PLAIN:
        value = step["input"]
        return ("N", b"") if value is None else ("S", value.encode("utf-8"))
    if "input" in step:
        return "J", _compact(step["input"])
    if "inputText" in step:
        return "J", step["inputText"].encode("utf-8", "surrogatepass")
    if "inputHex" in step:
        return "J", bytes.fromhex(step["inputHex"])
    r = step["inputRepeat"]
    return "J", (r.get("prefix", "") + r["repeat"] * r["times"] + r.get("suffix", "")).encode("utf-8")


def plan(vector: dict[str, Any]) -> list[bytes]:
    """The plan lines (without ``\\n``): ``create J <config>`` then one line per step."""
    lines = [b"create J " + _compact(vector["config"])]
    for i, step in enumerate(vector["steps"]):
        kind, payload = step_input(step)
        if any(c in payload for c in (b"\n", b"\r", b"\0")):
            raise ValueError(f"steps[{i}]: a payload must not contain newline, carriage return or NUL")
        lines.append(step["call"].encode() + b" " + kind.encode() + b" " + payload)
    return lines


def replay(vector: dict[str, Any]) -> list[bytes]:
    """Run the vector through the Python API; one output line per step (what a C replayer writes)."""
    sys.path.insert(0, str(ROOT / "engine"))
    from kelpie_gateway import Gateway, GatewayConfigError
    from kelpie_gateway.jsonio import dumps

    try:
        gw = Gateway(_compact(vector["config"]))
    except GatewayConfigError as exc:
        return [dumps(exc.envelope)]
    out: list[bytes] = []
    for step in vector["steps"]:
        kind, payload = step_input(step)
        call = step["call"]
        if call == "invalidate_refs":
            gw.invalidate_refs(None if kind == "N" else payload.decode("utf-8"))
            out.append(b"null")
        elif call == "next":
            out.append(dumps(gw.next(None if kind == "N" else payload.decode("utf-8"))))
        else:
            out.append(dumps(getattr(gw, call)(payload)))
    return out


# ---------------------------------------------------------------- the subset rule


def _type_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _short(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= 200 else text[:200] + f"… ({len(text)} chars)"


def _is_operator(e: Any) -> bool:
    return isinstance(e, dict) and len(e) == 1 and next(iter(e)) in _OPERATORS


def match(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Mismatches of ``actual`` against ``expected`` under the subset rule (README); empty = match."""
    here = where or "/"
    if _is_operator(expected):
        op, arg = next(iter(expected.items()))
        if op == "$absent":
            return [f"{here}: expected the key to be absent, got {_short(actual)}"]
        if op == "$type":
            t = _type_of(actual)
            ok = t == arg or (arg == "number" and t == "integer")
            return [] if ok else [f"{here}: expected type {arg}, got {t} {_short(actual)}"]
        if op == "$contains":
            if isinstance(actual, str) and arg in actual:
                return []
            return [f"{here}: expected a string containing {_short(arg)}, got {_short(actual)}"]
        if op == "$json":
            if not isinstance(actual, str):
                return [f"{here}: expected JSON text, got {_short(actual)}"]
            try:
                parsed = json.loads(actual)
            except ValueError as exc:
                return [f"{here}: expected JSON text, got unparsable {_short(actual)} ({exc})"]
            return match(arg, parsed, where + "($json)")
        if op == "$len":
            if isinstance(actual, list | dict | str) and len(actual) == arg:
                return []
            n = len(actual) if isinstance(actual, list | dict | str) else None
            return [f"{here}: expected length {arg}, got {n} in {_short(actual)}"]
        # $oneOf
        if any(not match(alt, actual, where) for alt in arg):
            return []
        return [f"{here}: matches none of {_short(arg)}: got {_short(actual)}"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{here}: expected an object, got {_short(actual)}"]
        out = []
        for key, value in expected.items():
            path = f"{where}/{key.replace('~', '~0').replace('/', '~1')}"
            if value == {"$absent": True}:
                if key in actual:
                    out.append(f"{path}: expected absent, got {_short(actual[key])}")
            elif key not in actual:
                out.append(f"{path}: missing (expected {_short(value)})")
            else:
                out += match(value, actual[key], path)
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{here}: expected an array of {len(expected)} item(s), got {_short(actual)}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            out += match(e, a, f"{where}/{i}")
        return out
    if (
        isinstance(expected, bool)
        or isinstance(actual, bool)
        or expected is None
        or isinstance(expected, str)
    ):
        same = type(expected) is type(actual) and expected == actual
    elif isinstance(expected, int | float):
        same = isinstance(actual, int | float) and expected == actual
    else:
        same = expected == actual
    return [] if same else [f"{here}: expected {_short(expected)}, got {_short(actual)}"]


def _stateless(step: dict[str, Any]) -> bool:
    """Whether a ``begin_mcp`` step sends a message of the stateless era (CONTRACT.md §7 v1.1): a
    ``server/discover``, or ``params._meta`` carrying either required envelope key."""
    msg = step.get("input")
    if step["call"] != "begin_mcp" or not isinstance(msg, dict):
        return False
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    keys = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities")
    return msg.get("method") == "server/discover" or (isinstance(meta, dict) and any(k in meta for k in keys))


def _era_members(actual: Any, modern: bool, twin: bool) -> list[str]:
    """Check what only the stateless era adds to an output step: ``resultType:"complete"`` and the
    serverInfo ``_meta`` stamp on every result answering a stateless request (then removed in place, so
    the expectations see the handshake era's result), and ``httpStatus`` exactly on a JSON-RPC error
    answering one (404 for ``-32601``, else 400; kept). A handshake-era answer must carry none of these
    (the handshake revisions are unchanged) — only the 202 of a message that gets no response."""
    if not isinstance(actual, dict) or actual.get("step") != "complete":
        return []
    response = actual.get("response")
    status = actual.get("httpStatus")
    if response is None:
        return [] if status == 202 else [f": a null response needs httpStatus 202, got {status!r}"]
    if not isinstance(response, dict) or "jsonrpc" not in response:
        return [] if status is None else [f": httpStatus {status!r} on a non-MCP answer"]
    out = []
    result, error = response.get("result"), response.get("error")
    if isinstance(result, dict):
        if modern:
            if result.pop("resultType", None) != "complete":
                out.append('/response/result/resultType: a stateless result needs resultType "complete"')
            meta = result.pop("_meta", None)
            stamp = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
            if not (isinstance(stamp, dict) and stamp.get("name") == "kelpie-browser-gateway"):
                out.append(f"/response/result/_meta: no serverInfo stamp ({_short(meta)})")
        elif "resultType" in result or (twin and "_meta" in result):
            out.append(f"/response/result: a handshake-era result with stateless members {_short(result)}")
    wanted = MODERN_HTTP_STATUS.get(error.get("code")) if modern and isinstance(error, dict) else None
    if status != wanted:
        out.append(f"/httpStatus: expected {wanted!r}, got {status!r}")
    return out


def check(vector: dict[str, Any], outputs: list[bytes] | list[str]) -> list[str]:
    """Every mismatch between ``vector`` and a replayer's output lines (empty list = pass).

    Before the expectations, every ``complete`` step is checked for its era (:func:`_era_members`): the
    stateless members must be exactly where a stateless request was answered, and are then removed, so a
    twin meets the expectations of the file it was made from."""
    lines = [o.encode("utf-8") if isinstance(o, str) else o for o in outputs]
    lines = [line.rstrip(b"\r\n") for line in lines]
    steps = vector["steps"]
    if len(lines) != len(steps):
        first = lines[0][:300].decode("utf-8", "replace") if lines else ""
        return [f"expected {len(steps)} output line(s), got {len(lines)} (first: {first})"]
    problems = []
    # Which era answers each step: a begin_mcp step's own message decides; a later step (advance, cancel)
    # completes the request that began its transaction, found by the JSON-RPC id it answers.
    modern_ids = {json.dumps(s["input"].get("id")) for s in steps if _stateless(s)}
    for i, (step, line) in enumerate(zip(steps, lines, strict=True)):
        try:
            actual = json.loads(line)
        except ValueError as exc:
            problems.append(f"steps[{i}]: output is not JSON ({exc}): {line[:200]!r}")
            continue
        if step["call"] == "begin_mcp":
            modern = _stateless(step)
        else:
            response = actual.get("response") if isinstance(actual, dict) else None
            modern = isinstance(response, dict) and json.dumps(response.get("id")) in modern_ids
        problems += [f"steps[{i}]{m}" for m in _era_members(actual, modern, "era" in vector)]
        if "expect" in step:
            problems += [f"steps[{i}]{m}" for m in match(step["expect"], actual)]
        for needle, n in step.get("expectCount", {}).items():
            got = line.count(needle.encode("utf-8"))
            if got != n:
                problems.append(f"steps[{i}]: {needle[:40]!r} occurs {got} time(s), expected {n}")
    return problems


def _read_lines(path: str) -> list[bytes]:
    data = Path(path).read_bytes()
    if data.endswith(b"\n"):
        data = data[:-1]
    return data.split(b"\n") if data else []


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("plan", "check", "run", "list"):
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    if cmd == "list":
        for p in all_vectors():
            print(p)
        for p in all_vectors():
            if twin(load(p)) is not None:
                print(f"{p}@{MODERN}")
        return 0
    if cmd == "plan":
        if len(args) != 1:
            print("usage: vectors.py plan VECTOR", file=sys.stderr)
            return 2
        out = sys.stdout.buffer
        for line in plan(load(args[0])):
            out.write(line + b"\n")
        return 0
    if cmd == "check":
        if len(args) != 2:
            print("usage: vectors.py check VECTOR OUTPUT", file=sys.stderr)
            return 2
        problems = check(load(args[0]), _read_lines(args[1]))
        for p in problems:
            print(f"{args[0]}: {p}")
        return 1 if problems else 0
    failed = 0
    cases = [(path, load(path)) for path in args] if args else all_cases()
    for name, vector in cases:
        problems = check(vector, replay(vector))
        failed += bool(problems)
        for p in problems:
            print(f"{name}: {p}")
    print(f"{len(cases)} vector(s), {failed} failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
