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
# by the interpreter and never imported by the engine, so it is not an engine module. An engine subpackage
# (``mcp/``) is one module ``mcp`` (its ``__init__``) plus one per file (``mcp.protocol``, …); ``host/`` is
# not the engine, and ``abi/`` (a link to the C library's build) is no package.
ENGINE_PACKAGES = sorted(
    d.name for d in PACKAGE.iterdir() if d.name != "host" and (d / "__init__.py").is_file()
)
ENGINE_MODULES = sorted(
    [p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")]
    + [
        pkg if p.stem == "__init__" else f"{pkg}.{p.stem}"
        for pkg in ENGINE_PACKAGES
        for p in (PACKAGE / pkg).glob("*.py")
    ]
)


INIT = "__init__"
"""The package's own ``__init__`` as a node of the graph: it imports the public API from every module, so
a module that imports a name from the package itself (``from . import __version__``) closes a cycle."""


def _source(name: str) -> Path:
    """The file of engine module ``name`` (``gateway``, ``mcp``, ``mcp.protocol``, :data:`INIT`)."""
    if name == INIT:
        return PACKAGE / "__init__.py"
    path = PACKAGE.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _package(name: str) -> str:
    """The package relative imports in module ``name`` resolve against."""
    parent = "" if name == INIT else name if _source(name).name == "__init__.py" else name.rpartition(".")[0]
    return "kelpie_gateway" + (f".{parent}" if parent else "")


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
    """Engine modules that ``kelpie_gateway.<name>`` imports (``from . import x`` counts as x; inside a
    subpackage, ``from .protocol import y`` counts as ``mcp.protocol``)."""
    edges = set()
    for module, names, _line in _imports(_source(name), _package(name)):
        if module != "kelpie_gateway" and not module.startswith("kelpie_gateway."):
            continue
        rel = module.removeprefix("kelpie_gateway").removeprefix(".")
        if rel.split(".")[0] == "host":
            continue
        for n in names:
            sub = f"{rel}.{n}" if rel else n
            if sub in ENGINE_MODULES:
                edges.add(sub)
            else:  # a name of module ``rel`` (of the package's own __init__ when rel is empty)
                edges.add(rel or INIT)
    return edges - {name}


def _frontend_edges(top: str) -> set[str]:
    """Top-level engine modules that module or package ``top`` imports, from any of its files."""
    members = [m for m in ENGINE_MODULES if m.split(".")[0] == top]
    return {e.split(".")[0] for m in members for e in _engine_edges(m)} - {top}


def test_engine_import_graph_has_no_cycle() -> None:
    graph = {name: _engine_edges(name) for name in [INIT, *ENGINE_MODULES]}
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

    for name in graph:
        visit(name)


def test_mcp_is_a_frontend_over_the_coordinator() -> None:
    assert "mcp.protocol" in ENGINE_MODULES, "the mcp package's modules must be seen"
    assert "gateway" in _frontend_edges("mcp")
    assert not ({"mcp", "api"} & _frontend_edges("gateway")), "the coordinator must not import its frontends"
    for pure in ("results", "natives"):
        assert not ({"gateway", "api", "mcp", "transaction"} & _frontend_edges(pure)), pure
    # the JSON-RPC layer and the HTTP rules are pure: no coordinator under them
    for pure in ("mcp.protocol", "mcp.http"):
        assert not ({"gateway", "api", "transaction"} & _engine_edges(pure)), pure


def test_the_version_is_written_once_and_imports_nothing() -> None:
    """Guards the ``api`` -> ``mcp`` -> package ``__init__`` cycle (issue 26): the version lives in its own
    module, which imports nothing, and nothing else spells it."""
    assert _imports(_source("version"), "kelpie_gateway") == []
    for name in ENGINE_MODULES:
        if name != "version":
            text = _source(name).read_text(encoding="utf-8")
            assert f'"{kelpie_gateway.VERSION}"' not in text, f"{name} spells the version itself"


def test_engine_never_imports_the_host() -> None:
    for name in ENGINE_MODULES:
        for module, _names, line in _imports(_source(name), _package(name)):
            assert not module.startswith("kelpie_gateway.host"), f"{name}:{line} imports {module}"


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
                private = [n for n in names if n not in public or n.startswith("_")]
                assert not private, f"{where} imports {private}, not in kelpie_gateway.__all__ (or a dunder)"
            elif module.startswith("kelpie_gateway") and not module.startswith("kelpie_gateway.host"):
                raise AssertionError(f"{where} imports the engine's private module {module}")


def test_host_transports_build_json_rpc_errors_with_the_one_builder() -> None:
    """Guards the hand-built JSON-RPC error objects of the host transports (issue 26: eight of them in
    server.py, tunnel.py and driver.py): a dict display with a ``jsonrpc`` key whose ``error`` is itself a
    dict display is an error built by hand; the host calls ``kelpie_gateway.jsonrpc_error`` instead
    (passing an engine error on under another id is not building one)."""
    host_files = sorted((PACKAGE / "host").glob("*.py"))
    for path in host_files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Dict):
                continue
            keys = {
                k.value: v for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)
            }
            built = "jsonrpc" in keys and isinstance(keys.get("error"), ast.Dict)
            assert not built, f"host/{path.name}:{node.lineno} builds a JSON-RPC error by hand"


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


def _subscripts(name: str, table: str) -> int:
    """How many times engine module ``name`` looks something up in a module-level table named ``table``."""
    tree = ast.parse(_source(name).read_text(encoding="utf-8"))
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and (
            (isinstance(node.value, ast.Attribute) and node.value.attr == table)
            or (isinstance(node.value, ast.Name) and node.value.id == table)
        )
    )


def test_native_calls_and_results_are_made_only_by_their_builder_and_shaper() -> None:
    """One builder (``natives.BUILDERS``) and one shaper (``results.SHAPERS``) per dispatched method, and the
    coordinator's one lookup of each is the only way a native call is made or a result shaped: no other
    engine module looks them up (so no method grows a second, special-cased path)."""
    lookups = {
        table: {name: n for name in ENGINE_MODULES if (n := _subscripts(name, table))}
        for table in ("BUILDERS", "SHAPERS")
    }
    assert lookups == {"BUILDERS": {"gateway": 1}, "SHAPERS": {"gateway": 1}}


def test_the_coordinators_parts_sit_below_it() -> None:
    """The jobs carved out of the coordinator (issue 26: reading host input, admission, the tab ledger, the
    audit record, the steps, ref issuing) never import it or its frontends, and the pure ones (``inputs``,
    ``audit``, ``steps``) hold no gateway state: they import no ref store, ledger, admission or transaction."""
    for part in ("inputs", "admission", "ledger", "audit", "steps", "refs", "transaction", "results", "natives"):
        assert not ({"gateway", "api", "mcp", INIT} & _frontend_edges(part)), part
    for pure in ("inputs", "audit", "steps"):
        assert not ({"refs", "ledger", "admission", "transaction"} & _frontend_edges(pure)), pure


def test_every_state_change_goes_through_the_transaction_table() -> None:
    """Every state and transition lives in ``transaction.py``: no other engine module assigns a
    transaction's ``state``, and only the coordinator fires events (``Transaction.fire``)."""
    for name in ENGINE_MODULES:
        for node in ast.walk(ast.parse(_source(name).read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == "state":
                    assert name == "transaction", f"{name}.py:{node.lineno} assigns .state"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "fire":
                assert name in ("gateway", "transaction"), f"{name}.py:{node.lineno} fires an event"
