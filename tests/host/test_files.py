"""Files (issue 32; docs/host.md "Files"): ``upload_file`` from the operator's folders, downloads kept and
reported, the ``screenshot`` and ``pdf`` extensions, and the files served as MCP resources — in real
headless Chromium, over the canonical route, MCP over HTTP (both eras) and stdio.

One host for most of the module (Python API): ``--upload-dir`` a folder of its own, ``--downloads-dir`` one
the test reads, ``--max-download-mb 1``, ``--download-settle-ms 2000`` (a click waits for a download a
script starts) and ``127.0.0.2`` blocked. The stdio test starts ``kelpie-gateway
mcp --via-abi`` without any file flag (no upload folder, the private temporary downloads folder). The pages
are served by :class:`files_testlib.FileSite`, which records every request.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import re
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from files_testlib import BIG, BLOB_TEXT, FileSite, body_of, sha256
from host_testlib import Host, call, ext, ext_ok, ok, start_host
from mcp import Client, StdioServerParameters
from mcp_testlib import MODERN, connect, run
from PIL import Image
from stdio_testlib import KELPIE

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def sites() -> Iterator[dict[str, FileSite]]:
    blocked = FileSite("127.0.0.2")
    site = FileSite("127.0.0.1", blocked=blocked.url)
    yield {"site": site, "blocked": blocked}
    site.stop()
    blocked.stop()


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("files")
    uploads, outside, downloads = root / "uploads", root / "outside", root / "downloads"
    for folder in (uploads, uploads / "sub", outside):
        folder.mkdir(parents=True)
    (uploads / "a.txt").write_text("first file\n")
    (uploads / "b.txt").write_text("second file\n")
    (uploads / "sub" / "c.txt").write_text("third file\n")
    (outside / "secret.txt").write_text("not for the agent\n")
    (uploads / "escape.txt").symlink_to(outside / "secret.txt")
    (uploads / "inside-link.txt").symlink_to(uploads / "a.txt")
    return {"uploads": uploads, "outside": outside, "downloads": downloads}


@pytest.fixture(scope="module")
def host(folders: dict[str, Path]) -> Iterator[Host]:
    args = [
        "--approve-pairing", "auto",
        "--upload-dir", str(folders["uploads"]),
        "--downloads-dir", str(folders["downloads"]),
        "--max-download-mb", "1",
        "--download-settle-ms", "2000",
        "--blocked-origins", "http://127.0.0.2:*",
    ]  # fmt: skip
    process = start_host(args, "python")
    try:
        yield Host(process, process.pair("kelpie-files"), "python")
    finally:
        process.stop()


# ---------------------------------------------------------------- helpers
def open_tab(host: Host, url: str) -> str:
    return str(ok(host, "tabs.open", {"url": url})["tabId"])


def refs(host: Host, tab: str, *labels: str) -> list[str]:
    """The refs of the elements labelled ``labels`` (substrings), from one new snapshot."""
    elements = ok(host, "tab.snapshot", {"tabId": tab})["elements"]
    found = []
    for label in labels:
        hits = [e["ref"] for e in elements if label.lower() in str(e.get("label", "")).lower()]
        assert hits, f"no element labelled {label!r} in {elements}"
        found.append(str(hits[0]))
    return found


def ref(host: Host, tab: str, label: str) -> str:
    return refs(host, tab, label)[0]


def page_log(host: Host, tab: str) -> list[str]:
    text = str(ok(host, "tab.snapshot", {"tabId": tab})["text"])
    return [line for line in text.splitlines() if re.match(r"^(one|many|clearing|hidden) ", line)]


def refused(envelope: dict[str, Any], code: str, may_have_completed: bool) -> dict[str, Any]:
    assert envelope["success"] is False, envelope
    assert envelope["error"]["code"] == code, envelope
    assert envelope["mayHaveCompleted"] is may_have_completed, envelope
    return dict(envelope["error"])


def on_disk(folders: dict[str, Path], download: dict[str, Any]) -> bytes:
    """The kept file of ``download``: in the downloads folder, mode 0600, its SHA-256 as reported."""
    path = folders["downloads"] / download["name"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600, oct(path.stat().st_mode)
    data = path.read_bytes()
    assert sha256(data) == download["sha256"] and len(data) == download["bytes"], download
    return data


def listed(host: Host) -> dict[str, dict[str, Any]]:
    return {d["id"]: d for d in ext_ok(host, "downloads_list")["downloads"]}


# ---------------------------------------------------------------- uploads
def test_one_file_into_an_input_fires_what_a_persons_choice_fires(
    host: Host, sites: dict[str, FileSite]
) -> None:
    tab = open_tab(host, sites["site"].url + "/upload.html")
    result = ext_ok(host, "upload_file", tabId=tab, ref=ref(host, tab, "One file"), paths=["a.txt"])
    assert result == {"uploaded": ["a.txt"], "files": 1}
    assert page_log(host, tab) == ["one clicked", "one input a.txt", "one change a.txt"]
    assert "first file" not in json.dumps(result)  # names only, never contents


def test_several_files_into_a_multiple_input(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path]
) -> None:
    tab = open_tab(host, sites["site"].url + "/upload.html")
    paths = [str(folders["uploads"] / "b.txt"), "sub/c.txt", "inside-link.txt"]
    result = ext_ok(host, "upload_file", tabId=tab, ref=ref(host, tab, "Several files"), paths=paths)
    assert result == {"uploaded": ["b.txt", "c.txt", "a.txt"], "files": 3}  # a symlink inside: its target
    assert page_log(host, tab)[-1] == "many change b.txt+c.txt+a.txt"


def test_a_button_that_opens_a_chooser(host: Host, sites: dict[str, FileSite]) -> None:
    tab = open_tab(host, sites["site"].url + "/upload.html")
    result = ext_ok(host, "upload_file", tabId=tab, ref=ref(host, tab, "Choose pictures"), paths=["a.txt", "b.txt"])
    assert result == {"uploaded": ["a.txt", "b.txt"], "files": 2}
    assert page_log(host, tab) == ["hidden clicked", "hidden input a.txt+b.txt", "hidden change a.txt+b.txt"]


def test_paths_outside_the_folders_are_refused_before_anything_ran(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path]
) -> None:
    """Outside the folder, a symlink escaping it, ``..``, a missing file: each ``NOT_AUTHORIZED`` at the
    authorize step naming the allowed folder — no click on the page, the ref still valid afterwards."""
    tab = open_tab(host, sites["site"].url + "/upload.html")
    one = ref(host, tab, "One file")
    for paths in (
        [str(folders["outside"] / "secret.txt")],
        ["escape.txt"],
        [str(folders["uploads"] / ".." / "outside" / "secret.txt")],
        ["../outside/secret.txt"],
        ["missing.txt"],
        ["a.txt", str(folders["outside"] / "secret.txt")],
    ):
        error = refused(ext(host, "upload_file", tabId=tab, ref=one, paths=paths), "NOT_AUTHORIZED", False)
        assert str(folders["uploads"]) in error["message"] or "missing.txt" in error["message"], error
        assert "not for the agent" not in error["message"]
    # Nothing ran and nothing invalidated the snapshot: the same ref works now, and the page saw only that.
    assert ext_ok(host, "upload_file", tabId=tab, ref=one, paths=["a.txt"])["uploaded"] == ["a.txt"]
    assert page_log(host, tab) == ["one clicked", "one input a.txt", "one change a.txt"]


def test_several_files_for_a_single_file_input_or_a_disabled_one_are_refused_before_any_event(
    host: Host, sites: dict[str, FileSite]
) -> None:
    tab = open_tab(host, sites["site"].url + "/upload.html")
    one = ref(host, tab, "One file")
    refused(ext(host, "upload_file", tabId=tab, ref=one, paths=["a.txt", "b.txt"]), "INVALID_PARAMS", False)
    # (dispatched, so the tab's refs were invalidated as for any action: a new snapshot's refs)
    off = ref(host, tab, "Disabled input")
    refused(ext(host, "upload_file", tabId=tab, ref=off, paths=["a.txt"]), "NOT_ACTIONABLE", False)
    assert page_log(host, tab) == []


def test_a_page_that_clears_the_input_on_change_is_an_unknown_outcome(host: Host, sites: dict[str, FileSite]) -> None:
    tab = open_tab(host, sites["site"].url + "/upload.html")
    error = refused(
        ext(host, "upload_file", tabId=tab, ref=ref(host, tab, "Clearing input"), paths=["a.txt"]),
        "EFFECT_NOT_OBSERVED",
        True,
    )
    assert error["retryable"] is False
    # an unknown outcome: the tab must be observed before the next action on it
    refused(call(host, "tab.navigate", {"tabId": tab, "url": sites["site"].url + "/index.html"}), "RECONCILE_REQUIRED", False)
    assert page_log(host, tab)[-1] == "clearing change a.txt"  # the page saw the file, then dropped it


def test_a_click_that_opens_no_chooser_is_an_unknown_outcome(host: Host, sites: dict[str, FileSite]) -> None:
    tab = open_tab(host, sites["site"].url + "/upload.html")
    refused(ext(host, "upload_file", tabId=tab, ref=ref(host, tab, "Does nothing"), paths=["a.txt"]), "EFFECT_NOT_OBSERVED", True)


# ---------------------------------------------------------------- downloads
@pytest.mark.parametrize(
    ("label", "name", "body"),
    [
        ("Attachment report", "report.csv", body_of("/att")),
        ("Saved with a download attribute", "saved.bin", body_of("/plain.bin")),
        ("Export made by a script", "export.txt", BLOB_TEXT.encode()),
    ],
)
def test_a_click_that_downloads_succeeds_and_reports_the_kept_file(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path], label: str, name: str, body: bytes
) -> None:
    """Content-Disposition attachment, a ``download`` attribute, a script's blob (reported thanks to
    ``--download-settle-ms``): the click succeeds (never RENDERER_FAILED) and reports the download once it
    is complete; the file on disk has that SHA-256."""
    tab = open_tab(host, sites["site"].url + "/downloads.html")
    result = ok(host, "tab.click", {"tabId": tab, "ref": ref(host, tab, label)})
    download = result["download"]
    assert result["clicked"] is True and download["state"] == "complete", result
    assert download["name"].startswith(name.rsplit(".", 1)[0]) and download["sha256"] == sha256(body)
    assert download["resource"] == f"kelpie://downloads/{download['id']}" and download["tabId"] == tab
    assert on_disk(folders, download) == body
    assert listed(host)[download["id"]] == download


def test_a_navigation_to_a_download_succeeds_with_it_and_the_tab_stays(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path]
) -> None:
    tab = open_tab(host, sites["site"].url + "/index.html")
    result = ok(host, "tab.navigate", {"tabId": tab, "url": sites["site"].url + "/att"})
    assert result["url"] == sites["site"].url + "/index.html", result  # the tab did not leave its page
    assert result["download"]["state"] == "complete" and on_disk(folders, result["download"]) == body_of("/att")
    opened = ok(host, "tabs.open", {"url": sites["site"].url + "/att"})
    assert opened["download"]["state"] == "complete" and opened["download"]["tabId"] == opened["tabId"]


def test_a_download_over_the_cap_is_cancelled_and_not_kept(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path]
) -> None:
    tab = open_tab(host, sites["site"].url + "/downloads.html")
    before = set(os.listdir(folders["downloads"]))
    download = ok(host, "tab.click", {"tabId": tab, "ref": ref(host, tab, "Too big")})["download"]
    assert download["state"] == "cancelled" and "--max-download-mb 1" in download["reason"], download
    assert str(BIG) in download["reason"] and "sha256" not in download
    time.sleep(0.5)
    assert set(os.listdir(folders["downloads"])) == before
    assert listed(host)[download["id"]]["state"] == "cancelled"
    read = ext(host, "resources_read", uri=download["resource"])
    refused(read, "INVALID_PARAMS", False)


def test_a_download_from_a_blocked_origin_is_never_requested_nor_kept(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path]
) -> None:
    """A link to the blocked origin, and a same-origin ``download`` link that redirects there: the blocked
    server never sees a request and nothing is kept; the click still succeeds."""
    before = (set(os.listdir(folders["downloads"])), set(listed(host)))
    for label in ("Blocked origin file", "Redirected to a blocked origin"):
        tab = open_tab(host, sites["site"].url + "/downloads.html")
        stopped = len([line for line in host.process.lines if "site policy: blocked" in line])
        result = ok(host, "tab.click", {"tabId": tab, "ref": ref(host, tab, label)})
        assert result == {"clicked": True}, result  # stopped as it was requested: nothing to report
        host.process.wait_for_line(f"in tab {tab}: ", 10)
        lines = [line for line in host.process.lines if "site policy: blocked" in line][stopped:]
        assert lines and all(sites["blocked"].url.removeprefix("http://") in line for line in lines), lines
    assert sites["blocked"].hits == []
    assert set(os.listdir(folders["downloads"])) == before[0] and set(listed(host)) == before[1]


def test_a_long_download_is_reported_started_then_listed_when_done(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path]
) -> None:
    tab = open_tab(host, sites["site"].url + "/index.html")
    result = ok(host, "tab.navigate", {"tabId": tab, "url": sites["site"].url + "/slow", "timeoutMs": 1500})
    started = result["download"]
    assert started["state"] == "in-progress" and "sha256" not in started, started
    for _ in range(100):
        entry = listed(host)[started["id"]]
        if entry["state"] != "in-progress":
            break
        time.sleep(0.1)
    assert entry["state"] == "complete" and on_disk(folders, entry) == body_of("/slow")


# ---------------------------------------------------------------- resources over MCP (HTTP, both eras)
@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_resources_read_returns_the_bytes_on_disk_over_http(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path], mode: str
) -> None:
    tab = open_tab(host, sites["site"].url + "/downloads.html")
    target = ref(host, tab, "Saved with a download attribute")

    async def journey() -> dict[str, Any]:
        async with connect(host, mode) as client:
            clicked = await client.call_tool(
                "kelpie_browser_control", {"method": "tab.click", "params": {"tabId": tab, "ref": target}}
            )
            links = [b for b in clicked.content if b.type == "resource_link"]
            uri = str(links[0].uri)
            listing = await client.list_resources()
            read = await client.read_resource(uri)
            return {
                "capabilities": client.server_capabilities.resources,
                "links": links,
                "listed": [str(r.uri) for r in listing.resources],
                "blob": read.contents[0].blob,  # type: ignore[union-attr]
                "mime": read.contents[0].mime_type,
                "download": clicked.structured_content["result"]["download"],  # type: ignore[index]
            }

    seen = run(journey())
    assert seen["capabilities"] is not None or mode == MODERN  # pinned: the SDK skips server/discover
    assert len(seen["links"]) == 1 and seen["links"][0].size == len(body_of("/plain.bin"))
    assert str(seen["links"][0].uri) in seen["listed"]
    assert base64.b64decode(seen["blob"]) == on_disk(folders, seen["download"]) == body_of("/plain.bin")
    assert seen["mime"] == "application/octet-stream"


# ---------------------------------------------------------------- screenshots
def picture(host: Host, **arguments: Any) -> tuple[dict[str, Any], Image.Image]:
    result = ext_ok(host, "screenshot", **arguments)
    image = Image.open(io.BytesIO(base64.b64decode(result["data"])))
    image.load()
    assert image.size == (result["width"], result["height"]), result
    assert len(base64.b64decode(result["data"])) <= 5 * 1024 * 1024
    return result, image


def test_an_element_picture_is_the_elements_box(host: Host, sites: dict[str, FileSite]) -> None:
    tab = open_tab(host, sites["site"].url + "/shot.html")
    result, image = picture(host, tabId=tab, ref=ref(host, tab, "Red box"))
    ratio = result["devicePixelRatio"]
    assert ratio == 1 and result["scale"] == 1
    assert (result["width"], result["height"]) == (round(300 * ratio), round(150 * ratio))
    assert result["clip"] == {"x": 40, "y": 60, "width": 300, "height": 150}
    assert image.mode in ("RGB", "RGBA") and image.getpixel((150, 75))[:3] == (255, 0, 0)
    far, image = picture(host, tabId=tab, ref=ref(host, tab, "Far box"))  # below the viewport: not scrolled
    assert (far["width"], far["height"]) == (200, 100) and image.getpixel((100, 50))[:3] == (0, 128, 0)


def test_a_full_page_picture_is_taller_than_the_viewport(host: Host, sites: dict[str, FileSite]) -> None:
    tab = open_tab(host, sites["site"].url + "/shot.html")
    viewport, _ = picture(host, tabId=tab)
    assert (viewport["width"], viewport["height"]) == (1280, 800)
    full, image = picture(host, tabId=tab, fullPage=True, maxDimension=3000)
    assert (full["width"], full["height"]) == (1280, 3000) and full["height"] > viewport["height"]
    assert image.getpixel((100, 2550))[:3] == (0, 128, 0)  # the far box, 2,500 px down


def test_jpeg_with_quality_decodes(host: Host, sites: dict[str, FileSite]) -> None:
    tab = open_tab(host, sites["site"].url + "/shot.html")
    high, image = picture(host, tabId=tab, format="jpeg", quality=90)
    assert high["mimeType"] == "image/jpeg" and image.format == "JPEG"
    low, _ = picture(host, tabId=tab, format="jpeg", quality=10)
    assert len(base64.b64decode(low["data"])) < len(base64.b64decode(high["data"]))
    r, g, b = image.getpixel((190, 135))[:3]
    assert r > 200 and g < 60 and b < 60  # the red box, within JPEG's error
    refused(ext(host, "screenshot", tabId=tab, format="png", quality=50), "INVALID_PARAMS", False)


def test_scaling_keeps_the_aspect_ratio(host: Host, sites: dict[str, FileSite]) -> None:
    tab = open_tab(host, sites["site"].url + "/shot.html")
    result, _ = picture(host, tabId=tab, ref=ref(host, tab, "Wide box"), maxDimension=200)
    assert (result["width"], result["height"]) == (200, 100) and result["scale"] == 0.2
    default, _ = picture(host, tabId=tab, fullPage=True)
    assert max(default["width"], default["height"]) <= 1568
    assert abs(default["width"] / default["height"] - 1280 / 3000) < 0.01


def test_a_20000_pixel_page_stays_under_the_caps(host: Host, sites: dict[str, FileSite]) -> None:
    tab = open_tab(host, sites["site"].url + "/tall.html")
    for fmt in ("png", "jpeg"):
        result, image = picture(host, tabId=tab, fullPage=True, format=fmt)
        assert result["height"] <= 1568 and result["width"] <= 1568 and result["height"] >= 1560
        assert abs(result["width"] / result["height"] - 1280 / 20000) < 0.01
        top, bottom = image.getpixel((result["width"] // 2, 2))[:3], image.getpixel((result["width"] // 2, result["height"] - 3))[:3]
        assert top[0] > 200 and bottom[0] > 200 and bottom[1] > 200  # red at the top, yellow at the bottom


def test_the_extension_picture_is_one_mcp_image_block(host: Host, sites: dict[str, FileSite]) -> None:
    tab = open_tab(host, sites["site"].url + "/shot.html")

    async def journey() -> Any:
        async with connect(host, "legacy") as client:
            return await client.call_tool("screenshot", {"tabId": tab, "format": "jpeg", "maxDimension": 640})

    result = run(journey())
    images = [b for b in result.content if b.type == "image"]
    assert len(images) == 1 and images[0].mime_type == "image/jpeg"
    envelope = result.structured_content
    assert "data" not in envelope["result"] and envelope["result"]["width"] == 640
    assert envelope["result"]["imageBytes"] == len(base64.b64decode(images[0].data))


# ---------------------------------------------------------------- pdf
def test_a_pdf_is_kept_like_a_download_and_has_the_pages_text(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path]
) -> None:
    tab = open_tab(host, sites["site"].url + "/print.html")
    download = ext_ok(host, "pdf", tabId=tab)["download"]
    assert download["state"] == "complete" and download["mimeType"] == "application/pdf"
    assert download["name"] == "Kelpie print test.pdf"
    data = on_disk(folders, download)
    assert data.startswith(b"%PDF")
    text = subprocess.run(
        ["pdftotext", str(folders["downloads"] / download["name"]), "-"], capture_output=True, check=True, text=True
    ).stdout
    assert "Kelpie prints this page" in text and "lazy dog" in text
    read = ext_ok(host, "resources_read", uri=download["resource"])["contents"][0]
    assert base64.b64decode(read["blob"]) == data and read["mimeType"] == "application/pdf"


# ---------------------------------------------------------------- stdio, --via-abi, no file flags
def test_stdio_serves_resources_from_a_private_folder_and_refuses_uploads_without_upload_dir(
    sites: dict[str, FileSite], tmp_path: Path
) -> None:
    """``kelpie-gateway mcp --via-abi`` with no file flag: downloads go to a private temporary folder
    (0700, removed on exit), ``resources/read`` over stdio returns the downloaded bytes, and
    ``upload_file`` is refused ``NOT_AUTHORIZED`` saying no folder is allowed."""
    site = sites["site"]
    env = {**os.environ, "TMPDIR": str(tmp_path)}

    async def journey() -> dict[str, Any]:
        server = StdioServerParameters(command=str(KELPIE), args=["mcp", "--via-abi"], env=env)
        async with Client(server, mode="legacy") as client:

            async def control(method: str, params: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool("kelpie_browser_control", {"method": method, "params": params})
                assert isinstance(result.structured_content, dict)
                return result.structured_content

            opened = await control("tabs.open", {"url": site.url + "/upload.html"})
            tab = opened["result"]["tabId"]
            went = await control("tab.navigate", {"tabId": tab, "url": site.url + "/att"})
            download = went["result"]["download"]
            read = await client.read_resource(download["resource"])
            snap = await control("tab.snapshot", {"tabId": tab})
            one = next(e["ref"] for e in snap["result"]["elements"] if "One file" in e.get("label", ""))
            upload = await client.call_tool("upload_file", {"tabId": tab, "ref": one, "paths": ["a.txt"]})
            # No --download-settle-ms: a download link's click reports its file; a script's is kept and listed.
            await control("tab.navigate", {"tabId": tab, "url": site.url + "/downloads.html"})
            snap = await control("tab.snapshot", {"tabId": tab})
            link = next(e["ref"] for e in snap["result"]["elements"] if "download attribute" in e.get("label", ""))
            linked = await control("tab.click", {"tabId": tab, "ref": link})
            snap = await control("tab.snapshot", {"tabId": tab})
            export = next(e["ref"] for e in snap["result"]["elements"] if "Export" in e.get("label", ""))
            started = time.monotonic()
            scripted = await control("tab.click", {"tabId": tab, "ref": export})
            scripted_s = time.monotonic() - started
            listing: list[dict[str, Any]] = []
            for _ in range(50):
                result = await client.call_tool("downloads_list", {})
                listing = result.structured_content["result"]["downloads"]  # type: ignore[index]
                if any(d["name"] == "export.txt" and d["state"] == "complete" for d in listing):
                    break
                await asyncio.sleep(0.1)
            folders = sorted(tmp_path.glob("kelpie-downloads-*"))
            return {
                "download": download,
                "text": read.contents[0].text,  # type: ignore[union-attr]
                "upload": upload.structured_content,
                "linked": linked["result"],
                "scripted": scripted["result"],
                "scripted_s": scripted_s,
                "listing": listing,
                "folders": [(f, stat.S_IMODE(f.stat().st_mode), (f / download["name"]).read_bytes()) for f in folders],
            }

    seen = run(journey())
    assert seen["download"]["state"] == "complete" and seen["text"] == body_of("/att").decode()
    [(folder, mode, kept)] = seen["folders"]
    assert mode == 0o700 and kept == body_of("/att")
    assert not folder.exists()  # removed when the host exited
    error = seen["upload"]["error"]
    assert error["code"] == "NOT_AUTHORIZED" and "without --upload-dir" in error["message"]
    assert seen["upload"]["mayHaveCompleted"] is False
    assert seen["linked"]["download"]["state"] == "complete"
    assert seen["linked"]["download"]["sha256"] == sha256(body_of("/plain.bin"))
    assert seen["scripted"]["clicked"] is True and seen["scripted_s"] < 5  # not held for a script's download
    [made] = [d for d in seen["listing"] if d["name"] == "export.txt"]
    assert made["state"] == "complete" and made["sha256"] == sha256(BLOB_TEXT.encode())
    if "download" in seen["scripted"]:  # it began before the click answered: reported as well
        assert seen["scripted"]["download"]["id"] == made["id"]


# ---------------------------------------------------------------- faults
def test_a_chooser_for_one_file_given_several_is_refused_after_the_click(
    host: Host, sites: dict[str, FileSite]
) -> None:
    """A button opening a single-file chooser: the click ran (the page heard it) but no file is set;
    ``INVALID_PARAMS`` with ``mayHaveCompleted:true``."""
    tab = open_tab(host, sites["site"].url + "/upload.html")
    target = ref(host, tab, "Choose one picture")
    refused(ext(host, "upload_file", tabId=tab, ref=target, paths=["a.txt", "b.txt"]), "INVALID_PARAMS", True)
    assert not any(line.startswith("single change") for line in page_log(host, tab))


def test_a_download_whose_connection_breaks_is_failed_and_not_kept(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path]
) -> None:
    """The server announces 200,000 bytes and closes after 5,000: the click succeeds, reporting the
    download ``failed`` (CDP calls it ``canceled``; the host knows it did not cancel it and that fewer bytes
    came than announced); nothing is kept, listed failed, not readable."""
    tab = open_tab(host, sites["site"].url + "/downloads.html")
    before = set(os.listdir(folders["downloads"]))
    download = ok(host, "tab.click", {"tabId": tab, "ref": ref(host, tab, "Broken download")})["download"]
    assert download["state"] in ("failed", "in-progress"), download
    for _ in range(100):
        entry = listed(host)[download["id"]]
        if entry["state"] != "in-progress":
            break
        time.sleep(0.1)
    assert entry["state"] == "failed" and "sha256" not in entry, entry
    assert re.fullmatch(r"the transfer broke off after \d+ of 200000 bytes", entry["reason"]), entry
    assert set(os.listdir(folders["downloads"])) == before
    refused(ext(host, "resources_read", uri=entry["resource"]), "INVALID_PARAMS", False)


def test_a_kept_file_changed_or_removed_on_disk_is_not_served(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path]
) -> None:
    """``resources_read`` checks the SHA-256 it reported: a file edited on disk is ``RENDERER_FAILED``
    (never the new bytes), a removed one too; the listing still names both downloads."""
    tab = open_tab(host, sites["site"].url + "/index.html")
    edited = ok(host, "tab.navigate", {"tabId": tab, "url": sites["site"].url + "/att"})["download"]
    removed = ok(host, "tab.navigate", {"tabId": tab, "url": sites["site"].url + "/att"})["download"]
    assert edited["name"] != removed["name"]  # report.csv, then report (1).csv …
    assert ext_ok(host, "resources_read", uri=edited["resource"])["contents"][0]["text"] == body_of("/att").decode()
    (folders["downloads"] / edited["name"]).write_bytes(b"name,count\nmallory,9\n")
    (folders["downloads"] / removed["name"]).unlink()
    error = refused(ext(host, "resources_read", uri=edited["resource"]), "RENDERER_FAILED", False)
    assert "changed on disk" in error["message"] and "mallory" not in error["message"]
    error = refused(ext(host, "resources_read", uri=removed["resource"]), "RENDERER_FAILED", False)
    assert "cannot be read" in error["message"]
    assert {edited["id"], removed["id"]} <= set(listed(host))


def test_an_incompressible_picture_is_taken_again_under_5_mib_and_its_pdf_over_the_cap_is_refused(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path]
) -> None:
    """A 1280×4000 canvas of random pixels: a full-page PNG at maxDimension 8000 would be ~20 MB, so it is
    taken again smaller until under 5 MiB (aspect ratio kept); its PDF is over the module host's 1 MiB
    download cap: ``RESPONSE_TOO_LARGE``, nothing kept."""
    tab = open_tab(host, sites["site"].url + "/noise.html")
    assert ok(host, "tab.snapshot", {"tabId": tab})["title"] == "Noise ready"
    result, _ = picture(host, tabId=tab, fullPage=True, maxDimension=8000)
    assert result["scale"] < 1 and result["height"] < 4000, result
    assert abs(result["width"] / result["height"] - 1280 / 4000) < 0.01
    assert len(base64.b64decode(result["data"])) > 2 * 1024 * 1024  # shrunk to fit, not to a thumbnail
    before = set(os.listdir(folders["downloads"]))
    error = refused(ext(host, "pdf", tabId=tab), "RESPONSE_TOO_LARGE", False)
    assert "--max-download-mb" in error["message"] or "cap" in error["message"], error
    assert set(os.listdir(folders["downloads"])) == before


def test_a_download_whose_tab_closes_midway_still_ends(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path]
) -> None:
    """The tab that started a 3 s download is closed while it arrives: the download still completes
    (Chromium's downloads belong to the browser, not the page) and is kept and listed, and the host goes
    on serving."""
    tab = open_tab(host, sites["site"].url + "/index.html")
    started = ok(host, "tab.navigate", {"tabId": tab, "url": sites["site"].url + "/slow", "timeoutMs": 1500})
    assert started["download"]["state"] == "in-progress", started
    ok(host, "tabs.close", {"tabId": tab})
    for _ in range(100):
        entry = listed(host)[started["download"]["id"]]
        if entry["state"] != "in-progress":
            break
        time.sleep(0.1)
    assert entry["state"] == "complete" and entry["tabId"] == tab, entry
    assert on_disk(folders, entry) == body_of("/slow")
    assert ok(host, "tabs.open", {"url": sites["site"].url + "/att"})["download"]["state"] == "complete"


def test_a_picture_of_an_element_gone_or_without_a_box_is_refused(host: Host, sites: dict[str, FileSite]) -> None:
    """After the snapshot, another tab of the origin makes the page remove one button and hide the other
    (no action on this tab, so its refs stay issued): a picture of the removed one is ``NODE_REPLACED``,
    of the hidden one ``INVALID_PARAMS`` (no box to picture); neither may have done anything."""
    tab = open_tab(host, sites["site"].url + "/changing.html")
    gone, hidden = refs(host, tab, "Vanishing box", "Collapsing box")
    picture(host, tabId=tab, ref=hidden)  # pictured while it has a box
    other = open_tab(host, sites["site"].url + "/trigger.html")
    # wait_for_text is read-only: the refs of the first tab's snapshot stay issued
    assert ext_ok(host, "wait_for_text", tabId=tab, text="changed by the other tab")["found"] is True
    refused(ext(host, "screenshot", tabId=tab, ref=gone), "NODE_REPLACED", False)
    error = refused(ext(host, "screenshot", tabId=tab, ref=hidden), "INVALID_PARAMS", False)
    assert "box" in error["message"], error
    ok(host, "tabs.close", {"tabId": other})


def test_a_native_click_that_downloads_reports_it_like_tab_click(
    host: Host, sites: dict[str, FileSite], folders: dict[str, Path]
) -> None:
    """The native-input ``click`` (trusted CDP pointer events, issue 28) on an attachment link: the same
    download object as ``tab.click``'s, the file kept with its SHA-256."""
    tab = open_tab(host, sites["site"].url + "/downloads.html")
    result = ext_ok(host, "click", tabId=tab, ref=ref(host, tab, "Attachment report"))
    download = result["download"]
    assert download["state"] == "complete" and download["tabId"] == tab, result
    assert on_disk(folders, download) == body_of("/att")


def test_a_page_that_downloads_without_end_is_bounded_by_max_downloads(
    sites: dict[str, FileSite], tmp_path: Path
) -> None:
    """A hostile page starts 40 blob downloads from a script on every load. Chromium lets 10 of them
    through per document; reloads would bring 10 more each, so the host keeps at most ``--max-downloads``
    (here 12) and cancels the rest saying why; nothing cancelled reaches the disk; the host goes on."""
    folder = tmp_path / "dl"
    process = start_host(["--approve-pairing", "auto", "--downloads-dir", str(folder), "--max-downloads", "12"], "python")
    try:
        host = Host(process, process.pair("kelpie-flood"), "python")
        tab = open_tab(host, sites["site"].url + "/flood.html")
        for n in range(3):
            if n:
                ok(host, "tab.navigate", {"tabId": tab, "url": sites["site"].url + f"/flood.html?{n}"})
            for _ in range(100):
                entries = list(listed(host).values())
                if len(entries) >= 10 * (n + 1) and all(d["state"] != "in-progress" for d in entries):
                    break
                time.sleep(0.1)
        states = [d["state"] for d in entries]
        assert states.count("complete") == 12, states
        cancelled = [d for d in entries if d["state"] == "cancelled"]
        assert cancelled and all("at most 12 downloads" in d["reason"] for d in cancelled), cancelled
        assert len(os.listdir(folder)) == 12
        assert ok(host, "tab.snapshot", {"tabId": tab})["title"] == "Flood"
    finally:
        process.stop()


def test_per_client_contexts_keep_their_downloads_apart(sites: dict[str, FileSite], tmp_path: Path) -> None:
    """``serve --isolation per-client`` (issue 31): each client's downloads land in a 0700 folder of its
    own under ``--downloads-dir``, and each lists and reads only its own — the other's id is unknown."""
    folder = tmp_path / "dl"
    process = start_host(["--approve-pairing", "auto", "--downloads-dir", str(folder), "--isolation", "per-client"], "python")
    try:
        alice = Host(process, process.pair("alice"), "python")
        bob = Host(process, process.pair("bob"), "python")
        att = sites["site"].url + "/att"
        first = ok(alice, "tabs.open", {"url": att})["download"]
        second = ok(alice, "tabs.open", {"url": att})["download"]
        own = ok(bob, "tabs.open", {"url": att})["download"]
        assert {first["state"], second["state"], own["state"]} == {"complete"}
        homes = sorted(p for p in folder.iterdir() if p.is_dir())
        assert len(homes) == 2 and all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in homes), homes
        [alice_home] = [h for h in homes if len(os.listdir(h)) == 2]
        [bob_home] = [h for h in homes if len(os.listdir(h)) == 1]
        assert sorted(os.listdir(alice_home)) == sorted([first["name"], second["name"]])
        assert os.listdir(bob_home) == [own["name"]]
        assert [r["uri"] for r in ext_ok(bob, "resources_list")["resources"]] == [own["resource"]]
        assert len(ext_ok(alice, "resources_list")["resources"]) == 2
        refused(ext(bob, "resources_read", uri=second["resource"]), "INVALID_PARAMS", False)
        assert ext_ok(bob, "resources_read", uri=own["resource"])["contents"][0]["text"] == body_of("/att").decode()
    finally:
        process.stop()
