"""docs/swift.md's complete host program, built and run exactly as written (issue 34).

The doc puts a package `MyHost` next to the checkout (a folder `kelpie-browser-gateway`) with the manifest
and `main.swift` it shows, and builds it with the two lines it shows. This machine's Swift lives in the
Debian 13 environment, which sees only the checkout (read-only), so the test stages the doc's two files under
`build/doc-swift/MyHost/`, copies them inside the environment to `/var/tmp/kelpie-doc-swift/<key>/MyHost`
beside a link `kelpie-browser-gateway` to the checkout — the doc's layout — and runs the doc's lines there
verbatim. That folder's `.build` is kept between runs, so a second run is an incremental build.
"""

from __future__ import annotations

import hashlib
import re
import shlex

import pytest

from .conftest import LIB, ROOT, swiftenv

pytestmark = pytest.mark.timeout(1800)

DOC = ROOT / "docs" / "swift.md"
STAGE = ROOT / "build" / "doc-swift" / "MyHost"


def program_section() -> str:
    return DOC.read_text(encoding="utf-8").split("## A complete host program", 1)[1].split("\n## ", 1)[0]


def doc_files() -> tuple[str, str]:
    """(Package.swift, main.swift) as the doc shows them."""
    blocks = re.findall(r"```swift\n(.*?)```", program_section(), re.S)
    manifests = [b for b in blocks if b.startswith("// swift-tools-version:")]
    programs = [b for b in blocks if "import KelpieBrowserGateway" in b]
    assert len(manifests) == 1 and len(programs) == 1, "one manifest and one program in the doc"
    return manifests[0], programs[0]


def doc_commands() -> list[str]:
    """The sh lines after `cd ../MyHost` (continuations joined)."""
    blocks = re.findall(r"```sh\n(.*?)```", program_section(), re.S)
    block = next(b for b in blocks if b.startswith("cd ../MyHost\n"))
    joined = re.sub(r"\\\n\s*", " ", block)
    return [line.strip() for line in joined.splitlines()[1:] if line.strip()]


def test_the_manifest_has_the_dependency_line_the_doc_names() -> None:
    manifest, _ = doc_files()
    assert '.package(path: "../kelpie-browser-gateway/bindings/swift")' in manifest
    assert '.product(name: "KelpieBrowserGateway", package: "swift")' in manifest
    assert '`.package(path: "../kelpie-browser-gateway/bindings/swift")`' in program_section()


def test_the_complete_program_builds_and_runs_as_written() -> None:
    status = swiftenv("status", timeout=60)
    assert "ready: swift" in status.stdout, f"no Swift environment: run `tools/dev setup` ({status.stdout})"
    assert LIB.exists(), f"no C library at {LIB}: run `tools/dev setup` (tools/build.d/30-abi.sh)"
    manifest, program = doc_files()
    (STAGE / "Sources" / "MyHost").mkdir(parents=True, exist_ok=True)
    (STAGE / "Package.swift").write_text(manifest, encoding="utf-8")
    (STAGE / "Sources" / "MyHost" / "main.swift").write_text(program, encoding="utf-8")

    work = f"/var/tmp/kelpie-doc-swift/{hashlib.sha256(str(ROOT).encode()).hexdigest()[:16]}"
    q = shlex.quote
    script = "; ".join(
        [
            "set -e",
            f"mkdir -p {q(work)}/MyHost",
            f"rm -rf {q(work)}/MyHost/Package.swift {q(work)}/MyHost/Sources",  # keep .build: incremental
            f"cp -r {q(str(STAGE))}/. {q(work)}/MyHost/",
            f"ln -sfn {q(str(ROOT))} {q(work)}/kelpie-browser-gateway",
            f"cd {q(work)}/MyHost",
            *doc_commands(),
        ]
    )
    proc = swiftenv("exec", "sh", "-c", script)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    lines = proc.stdout.splitlines()
    assert any(line.startswith("library ") and len(line) > 8 for line in lines), out[-3000:]
    by_hand = next(line for line in lines if line.startswith("by hand: "))
    driver = next(line for line in lines if line.startswith("driver: "))
    for line, request_id in ((by_hand, 1), (driver, 2)):
        assert f'"id":{request_id}' in line and '"success":true' in line and '"tabId":"t1"' in line, out
    assert "refused: NOT_AUTHORIZED mayHaveCompleted=false" in lines, out[-3000:]
    assert any(line.startswith('mcp: success=true {"id":4,"jsonrpc":"2.0","result"') for line in lines), out
    after = swiftenv("status", timeout=60)
    assert "mounts: none" in after.stdout, after.stdout
