"""Fixtures for the Kotlin/JNA binding tests: build the C ABI and the Kotlin jars once per session.

The library comes from tools/build.d/30-abi.sh (idempotent, the step `tools/dev setup` runs); the jars from
bindings/kotlin/build.sh (Debian's kotlinc against /usr/share/java/jna.jar, skipped when up to date).
Every test then runs a JVM as a subprocess; each JVM run is shared by many tests through session fixtures.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "build" / "kotlin"
LIB_DIR = ROOT / "build" / "abi" / "lib"
LIB = LIB_DIR / "libkelpie_browser_gateway.so"
JNA = Path("/usr/share/java/jna.jar")
STDLIB = Path("/usr/share/java/kotlin-stdlib.jar")
JAVA = shutil.which("java") or "java"


@dataclass(frozen=True)
class KotlinBuild:
    classpath: str

    def java(self, main: str, *args: str, props: dict[str, str] | None = None, timeout: float = 180):
        """Run `java -cp … main args…` with -Dkey=value props; returns the CompletedProcess (text)."""
        cmd = [JAVA, "-Xss4m", "-cp", self.classpath]
        cmd += [f"-D{k}={v}" for k, v in (props or {}).items()]
        cmd += [main, *args]
        env = {k: v for k, v in os.environ.items() if not k.startswith("KELPIE_")}
        env["LC_ALL"] = "C"  # the JVM default charset is then ASCII: the binding must not depend on it
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, encoding="utf-8")


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    passed: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    info: list[str] = field(default_factory=list)


def _run_step(script: Path) -> None:
    env = dict(os.environ, ROOT=str(ROOT), PY=sys.executable)
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout}\n{proc.stderr}"


@pytest.fixture(scope="session")
def kotlin() -> KotlinBuild:
    for tool, pkg in (("kotlinc", "kotlin"), ("java", "default-jre-headless")):
        assert shutil.which(tool), f"{tool} missing: apt-get install {pkg} (tools/dev setup does)"
    assert JNA.exists(), "JNA missing: apt-get install libjna-java (tools/dev setup does)"
    _run_step(ROOT / "tools" / "build.d" / "30-abi.sh")
    assert LIB.exists(), f"the C ABI build did not produce {LIB}"
    _run_step(ROOT / "bindings" / "kotlin" / "build.sh")
    cp = [JNA, STDLIB, OUT / "kelpie-gateway.jar", OUT / "kelpie-gateway-tests.jar"]
    return KotlinBuild(classpath=os.pathsep.join(str(p) for p in cp))


_LINE = re.compile(r"^(PASS|FAIL) (\S+)(?::? ?(.*))$")


def run_binding_tests(kotlin: KotlinBuild, *names: str, props: dict[str, str] | None = None) -> RunResult:
    """Run kelpie.gateway.test.BindingTestsKt and parse its PASS/FAIL/INFO lines."""
    proc = kotlin.java("kelpie.gateway.test.BindingTestsKt", *names, props=props)
    res = RunResult(proc.returncode, proc.stdout, proc.stderr)
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        if m:
            (res.passed if m.group(1) == "PASS" else res.failed)[m.group(2)] = m.group(3)
        elif line.startswith("INFO "):
            res.info.append(line[5:])
    return res


@pytest.fixture(scope="session")
def binding_run(kotlin: KotlinBuild) -> RunResult:
    """Every Kotlin binding test in one JVM, loading the library by path with the default open flags."""
    return run_binding_tests(kotlin, props={"kelpie.gateway.library": str(LIB)})
