#!/usr/bin/env python3
"""Request/response vectors: flatten, replay (Python API) and check (fixtures/vectors/README.md).

Usage::

    python tools/vectors.py plan  VECTOR                 # flat call lines for a C/Kotlin replayer
    python tools/vectors.py check VECTOR OUTPUT          # compare a replayer's output lines; exit 1 on mismatch
    python tools/vectors.py run   [VECTOR ...]           # replay through kelpie_gateway.Gateway and check
    python tools/vectors.py list                         # every vector file, one per line

Importable (``from tools import vectors``): :func:`load`, :func:`plan`, :func:`replay`, :func:`check`,
:func:`match`, :func:`all_vectors`. Only the standard library is used except in :func:`replay`.
"""

from __future__ import annotations

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


def all_vectors() -> list[Path]:
    """Every vector file under fixtures/vectors, sorted by name."""
    return sorted(VECTOR_DIR.glob("*.json"))


def load(path: str | Path) -> dict[str, Any]:
    """Read and structurally validate one vector file (raises ValueError with the reason)."""
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
        if key not in ("name", "description", "config", "steps"):
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


def check(vector: dict[str, Any], outputs: list[bytes] | list[str]) -> list[str]:
    """Every mismatch between ``vector`` and a replayer's output lines (empty list = pass)."""
    lines = [o.encode("utf-8") if isinstance(o, str) else o for o in outputs]
    lines = [line.rstrip(b"\r\n") for line in lines]
    steps = vector["steps"]
    if len(lines) != len(steps):
        first = lines[0][:300].decode("utf-8", "replace") if lines else ""
        return [f"expected {len(steps)} output line(s), got {len(lines)} (first: {first})"]
    problems = []
    for i, (step, line) in enumerate(zip(steps, lines, strict=True)):
        try:
            actual = json.loads(line)
        except ValueError as exc:
            problems.append(f"steps[{i}]: output is not JSON ({exc}): {line[:200]!r}")
            continue
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
    for path in args or [str(p) for p in all_vectors()]:
        vector = load(path)
        problems = check(vector, replay(vector))
        failed += bool(problems)
        for p in problems:
            print(f"{path}: {p}")
    print(f"{len(args) or len(all_vectors())} vector(s), {failed} failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
