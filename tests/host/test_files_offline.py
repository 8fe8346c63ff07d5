"""The host's folders without a browser (``kelpie_gateway.host.files``; docs/host.md "Files"): how upload
paths resolve, the names downloads are kept under, the authorize decision, and the flags a host refuses at
start."""

from __future__ import annotations

import asyncio
import inspect
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from kelpie_gateway.host.files import Files, FilesError, FilesOptions, UploadRefused, compose, safe_name
from stdio_testlib import KELPIE


@pytest.fixture
def files(tmp_path: Path) -> Files:
    uploads = tmp_path / "up"
    (uploads / "sub").mkdir(parents=True)
    (uploads / "a.txt").write_text("a")
    (uploads / "sub" / "b.txt").write_text("b")
    (tmp_path / "secret.txt").write_text("s")
    (uploads / "escape").symlink_to(tmp_path / "secret.txt")
    (uploads / "subdir-link").symlink_to(tmp_path)
    link = tmp_path / "up-link"
    link.symlink_to(uploads)  # the folder given through a symlink: resolved once at start
    made = Files.open(FilesOptions((str(link),), str(tmp_path / "dl"), 1))
    assert made.upload_dirs == (uploads,)
    return made


def test_paths_resolve_inside_the_folders_only(files: Files, tmp_path: Path) -> None:
    up = files.upload_dirs[0]
    assert files.resolve_uploads(["a.txt", "sub/b.txt", str(up / "a.txt")]) == [up / "a.txt", up / "sub" / "b.txt", up / "a.txt"]
    for bad in (
        str(tmp_path / "secret.txt"),
        "escape",
        "subdir-link/secret.txt",
        "../secret.txt",
        "sub/../a.txt",
        str(up / "sub" / ".." / "a.txt"),
    ):
        with pytest.raises(UploadRefused) as refused:
            files.resolve_uploads([bad])
        assert refused.value.code == "NOT_AUTHORIZED" and str(up) in refused.value.message, bad
    for bad in ("missing.txt", "sub"):
        with pytest.raises(UploadRefused) as refused:
            files.resolve_uploads([bad])
        assert refused.value.code == "INVALID_PARAMS", bad
    with pytest.raises(UploadRefused):
        files.resolve_uploads(["a.txt"] * 33)


def test_the_authorize_step_refuses_uploads_only(files: Files, tmp_path: Path) -> None:
    def step(name: str, paths: list[str]) -> dict[str, object]:
        arguments = {"tabId": "t1", "ref": "s1e1", "paths": paths}
        return {"request": {"method": "extension.call", "params": {"name": name, "arguments": arguments}}}

    assert files.authorize(step("upload_file", ["a.txt"])) == {"success": True}
    refused = files.authorize(step("upload_file", [str(tmp_path / "secret.txt")]))
    assert refused["success"] is False and refused["error"]["code"] == "NOT_AUTHORIZED"  # type: ignore[index]
    assert files.authorize(step("fill", [str(tmp_path / "secret.txt")])) == {"success": True}
    nothing = Files.open(FilesOptions((), str(tmp_path / "dl2")))
    verdict = nothing.authorize(step("upload_file", ["a.txt"]))
    assert "without --upload-dir" in verdict["error"]["message"]  # type: ignore[index]
    site = lambda _step: {"success": False, "error": {"code": "NOT_AUTHORIZED", "message": "site"}}  # noqa: E731
    assert compose(site, files.authorize)(step("upload_file", ["a.txt"]))["error"]["message"] == "site"  # type: ignore[index]
    assert compose(None, files.authorize)(step("upload_file", ["a.txt"])) == {"success": True}

    # The site policy answers with an awaitable when it resolves a host name: the folders' decision waits.
    async def resolving(_step: object) -> dict[str, object]:
        await asyncio.sleep(0)
        return {"success": True}

    later = compose(resolving, files.authorize)
    outside = later(step("upload_file", [str(tmp_path / "secret.txt")]))
    assert inspect.isawaitable(outside)
    assert run_alone(outside)["error"]["code"] == "NOT_AUTHORIZED"  # type: ignore[arg-type,index]
    inside = later(step("upload_file", ["a.txt"]))
    assert run_alone(inside) == {"success": True}  # type: ignore[arg-type]


def run_alone(awaitable: Any) -> Any:
    """Run one awaitable on a fresh event loop in its own thread: a Playwright sync API fixture of an
    earlier test keeps an event loop running on the main thread, where ``asyncio.run`` refuses to start."""
    box: list[Any] = []

    async def main() -> None:
        box.append(await awaitable)

    worker = threading.Thread(target=lambda: asyncio.run(main()))
    worker.start()
    worker.join(30)
    assert box, "the awaitable did not finish"
    return box[0]


def test_downloads_are_claimed_under_safe_browser_like_names(files: Files) -> None:
    first = files.claim("report.csv")
    second = files.claim("report.csv")
    third = files.claim("../../etc/passwd")
    assert (first.name, second.name, third.name) == ("report.csv", "report (1).csv", "passwd")
    assert all(p.parent == files.downloads_dir for p in (first, second, third))
    assert stat.S_IMODE(first.stat().st_mode) == 0o600
    assert safe_name("..hidden") == "hidden" and safe_name("a\x00b:c?.txt") == "a_b_c_.txt"
    assert safe_name("") == "download" and safe_name("   ") == "download"
    long = safe_name("x" * 500 + ".pdf")
    assert len(long) == 200 and long.endswith(".pdf")


def test_a_temporary_downloads_folder_is_private_and_removed(tmp_path: Path) -> None:
    made = Files.open(FilesOptions())
    try:
        assert made.temporary and stat.S_IMODE(made.downloads_dir.stat().st_mode) == 0o700
    finally:
        made.close()
    assert not made.downloads_dir.exists()
    kept = Files.open(FilesOptions((), str(tmp_path / "new" / "dl")))
    kept.close()
    assert kept.downloads_dir.is_dir() and stat.S_IMODE(kept.downloads_dir.stat().st_mode) == 0o700


def test_each_client_context_gets_a_private_downloads_folder_of_its_own(tmp_path: Path) -> None:
    """``Files.for_context`` (for issue 31's per-client contexts): a 0700 subfolder per context label,
    the same upload folders and cap; two contexts claiming one name never meet; a temporary host folder
    takes every context's with it; a label that could name a path is refused."""
    uploads = tmp_path / "up"
    uploads.mkdir()
    host = Files.open(FilesOptions((str(uploads),), None, 3))
    try:
        one, two = host.for_context("c1"), host.for_context("c2")
        assert one.downloads_dir == host.downloads_dir / "c1" and not one.temporary
        assert stat.S_IMODE(one.downloads_dir.stat().st_mode) == 0o700
        assert one.upload_dirs == host.upload_dirs and one.max_download_bytes == 3 * 1024 * 1024
        assert one.claim("r.csv") == host.downloads_dir / "c1" / "r.csv"
        assert two.claim("r.csv") == host.downloads_dir / "c2" / "r.csv"  # not "r (1).csv": apart
        one.close()  # a context's close leaves the files; the host's removes them
        assert (host.downloads_dir / "c1" / "r.csv").exists()
        assert host.for_context("c1").downloads_dir == one.downloads_dir  # a label seen again: same folder
        for bad in ("..", "../c1", "a/b", "", ".hidden"):
            with pytest.raises(FilesError):
                host.for_context(bad)
    finally:
        host.close()
    assert not host.downloads_dir.exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--upload-dir", "/nonexistent/kelpie"], "--upload-dir /nonexistent/kelpie: not a folder"),
        (["--max-download-mb", "0"], "--max-download-mb 0: must be 1..100000"),
        (["--download-settle-ms", "20000"], "--download-settle-ms 20000: must be 0..10000"),
        (["--max-downloads", "0"], "--max-downloads 0: must be 1..1000000"),
        (["--downloads-dir", "/proc/kelpie"], "--downloads-dir /proc/kelpie"),
    ],
)
def test_file_flags_the_host_cannot_honour_stop_it_at_start(flags: list[str], message: str) -> None:
    with pytest.raises(FilesError):
        Files.open(FilesOptions(
            tuple(flags[1:2]) if flags[0] == "--upload-dir" else (),
            flags[1] if flags[0] == "--downloads-dir" else None,
            int(flags[1]) if flags[0] == "--max-download-mb" else 100,
            int(flags[1]) if flags[0] == "--download-settle-ms" else 0,
            int(flags[1]) if flags[0] == "--max-downloads" else 1000,
        ))  # fmt: skip
    done = subprocess.run(
        [str(KELPIE), "serve", "--port", "0", "--browser", "none", "--pairings", "memory", *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr + done.stdout
