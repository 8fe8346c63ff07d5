"""Module layering (issue 10): the engine's import graph has no cycle, the coordinator knows nothing of
MCP, the per-method modules know nothing of the coordinator, and the reference host uses only the public
Python API (``kelpie_gateway.__all__``) plus its own subpackage.

Read from the sources with ``ast`` (no import side effects), so a new import that breaks a rule fails here
with the file and line that added it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kelpie_gateway

PACKAGE = Path(kelpie_gateway.__file__).resolve().parent
# ``__main__`` is ``python -m kelpie_gateway``: the command line's entry point (it runs the host's CLI), run
# by the interpreter and never imported by the engine, so it is not an engine module.
ENGINE_MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__"))


def _imports(path: Path, package: str) -> list[tuple[str, tuple[str, ...], int]]:
    """``(absolute module, imported names, line)`` for every import in ``path`` (``package``: its own)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, (), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((module, tuple(a.name for a in node.names), node.lineno))
    return out


def _engine_edges(name: str) -> set[str]:
    """Engine modules that ``kelpie_gateway.<name>`` imports (``from . import x`` counts as x)."""
    edges = set()
    for module, names, _line in _imports(PACKAGE / f"{name}.py", "kelpie_gateway"):
        if module == "kelpie_gateway":
            edges |= {n for n in names if n in ENGINE_MODULES}
        elif module.startswith("kelpie_gateway.") and not module.startswith("kelpie_gateway.host"):
            edges.add(module.split(".")[1])
    return edges - {name}


def test_engine_import_graph_has_no_cycle() -> None:
    graph = {name: _engine_edges(name) for name in ENGINE_MODULES}
    visiting: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> None:
        if node in done:
            return
        assert node not in visiting, f"import cycle: {' -> '.join([*visiting[visiting.index(node) :], node])}"
        visiting.append(node)
        for nxt in sorted(graph[node]):
            visit(nxt)
        visiting.pop()
        done.add(node)

    for name in ENGINE_MODULES:
        visit(name)


def test_mcp_is_a_frontend_over_the_coordinator() -> None:
    assert "gateway" in _engine_edges("mcp")
    assert not ({"mcp", "api"} & _engine_edges("gateway")), "the coordinator must not import its frontends"
    for pure in ("results", "natives"):
        assert not ({"gateway", "api", "mcp", "transaction"} & _engine_edges(pure)), pure


def test_engine_never_imports_the_host() -> None:
    for name in ENGINE_MODULES:
        for module, _names, line in _imports(PACKAGE / f"{name}.py", "kelpie_gateway"):
            assert not module.startswith("kelpie_gateway.host"), f"{name}.py:{line} imports {module}"


def test_host_uses_only_the_public_api() -> None:
    public = set(kelpie_gateway.__all__)
    host_files = sorted((PACKAGE / "host").rglob("*.py"))  # the host's subpackages (browser/, extensions/) too
    assert host_files
    for path in host_files:
        relative = path.relative_to(PACKAGE)
        package = ".".join(("kelpie_gateway", *relative.parent.parts))
        for module, names, line in _imports(path, package):
            where = f"{relative}:{line}"
            if module == "kelpie_gateway":
                private = [n for n in names if n not in public]
                assert not private, f"{where} imports {private}, not in kelpie_gateway.__all__"
            elif module.startswith("kelpie_gateway") and not module.startswith("kelpie_gateway.host"):
                raise AssertionError(f"{where} imports the engine's private module {module}")


def test_public_api_names_exist() -> None:
    for name in kelpie_gateway.__all__:
        assert hasattr(kelpie_gateway, name), name
    gw = kelpie_gateway.Gateway({})
    step = gw.begin_mcp({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert step["response"] == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_every_dispatched_method_has_one_native_call_and_one_shaper() -> None:
    from kelpie_gateway import natives, results, schema

    answered_by_the_gateway = {"documentation", "capabilities"}
    dispatched = set(schema.METHODS) - answered_by_the_gateway
    assert set(natives.BUILDERS) == dispatched
    assert set(results.SHAPERS) == dispatched
