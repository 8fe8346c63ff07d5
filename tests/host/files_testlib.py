"""A small web site for the file tests (``test_files.py``): upload forms, downloads of every kind, pages to
picture and print. It records every path requested, like ``host_testlib.RecordingSite``.

Downloads: ``/att`` (``Content-Disposition: attachment; filename="report.csv"``), ``/plain.bin`` (linked
with a ``download`` attribute), ``/big`` (2 MiB, attachment), ``/slow`` (attachment, 3 chunks 1 s apart),
``/redirect?to=URL`` (302), ``/broken`` (attachment announcing 200,000 bytes, the connection closed after
5,000: a download that fails). Every body is :func:`body_of` its path, so a test knows each file's bytes.
"""

from __future__ import annotations

import hashlib
import http.server
import socket
import threading
import time
import urllib.parse
from typing import Any

BIG = 2 * 1024 * 1024


def body_of(path: str) -> bytes:
    """The bytes the site serves for download ``path`` (``/att``, ``/plain.bin``, ``/big``, ``/slow``)."""
    if path == "/att":
        return b"name,count\nkelpie,3\n"
    if path == "/plain.bin":
        return bytes(range(256)) * 8
    if path == "/big":
        return (b"0123456789abcdef" * (BIG // 16 + 1))[:BIG]
    if path == "/slow":
        return b"slow" * 3000
    raise KeyError(path)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


BLOB_TEXT = "made in the page by a script"

UPLOAD_PAGE = """<!doctype html><title>Uploads</title>
<h1>Uploads</h1>
<label>One file <input type=file id=one></label>
<label>Several files <input type=file id=many multiple></label>
<label>Clearing input <input type=file id=clearing></label>
<label>Disabled input <input type=file id=off disabled></label>
<input type=file id=hidden style="display:none" multiple>
<button id=choose>Choose pictures</button>
<input type=file id=single style="display:none">
<button id=choose-one>Choose one picture</button>
<button id=nothing>Does nothing</button>
<pre id=log></pre>
<script>
const log = (line) => { document.getElementById("log").textContent += line + "\\n"; };
const names = (input) => Array.from(input.files, (f) => f.name).join("+") || "-";
for (const id of ["one", "many", "clearing", "hidden"]) {
  const input = document.getElementById(id);
  input.addEventListener("click", () => log(id + " clicked"));
  input.addEventListener("input", () => log(id + " input " + names(input)));
  input.addEventListener("change", () => log(id + " change " + names(input)));
}
document.getElementById("clearing").addEventListener("change", (e) => { e.target.value = ""; });
document.getElementById("choose").addEventListener("click", () => document.getElementById("hidden").click());
document.getElementById("choose-one").addEventListener("click", () => document.getElementById("single").click());
</script>"""

DOWNLOAD_PAGE = """<!doctype html><title>Downloads</title>
<h1>Downloads</h1>
<p><a href="/att">Attachment report</a></p>
<p><a href="/plain.bin" download="saved.bin">Saved with a download attribute</a></p>
<p><button id=export>Export made by a script</button></p>
<p><a href="/big">Too big file</a></p>
<p><a href="BLOCKED/att">Blocked origin file</a></p>
<p><a href="/redirect?to=BLOCKED/att" download>Redirected to a blocked origin</a></p>
<p><a href="/index.html?next">Ordinary link</a></p>
<p><a href="/broken">Broken download</a></p>
<script>
document.getElementById("export").addEventListener("click", () => {
  const a = document.createElement("a");
  a.href = window.URL.createObjectURL(new Blob(["BLOB"], { type: "text/plain" }));
  a.download = "export.txt";
  a.click();
});
</script>""".replace("BLOB", BLOB_TEXT)

SHOT_PAGE = """<!doctype html><title>Pictures</title>
<style>body { margin: 0; height: 3000px; background: #fff; } button { position: absolute; border: 0; padding: 0;
margin: 0; } #red { left: 40px; top: 60px; width: 300px; height: 150px; background: rgb(255, 0, 0); }
#wide { left: 0; top: 400px; width: 1000px; height: 500px; background: rgb(0, 0, 255); }
#far { left: 10px; top: 2500px; width: 200px; height: 100px; background: rgb(0, 128, 0); }</style>
<button id=red aria-label="Red box"></button>
<button id=wide aria-label="Wide box"></button>
<button id=far aria-label="Far box"></button>"""

TALL_PAGE = """<!doctype html><title>Tall</title>
<style>body { margin: 0; height: 20000px; background: linear-gradient(#f00, #0f0, #00f, #ff0); }</style>
<p>20,000 pixels tall</p>"""

PRINT_PAGE = """<!doctype html><title>Kelpie print test</title>
<h1>Kelpie prints this page</h1><p>The quick brown fox jumps over the lazy dog.</p>"""

NOISE_PAGE = """<!doctype html><title>Noise</title>
<style>body { margin: 0; } canvas { display: block; }</style>
<canvas id=c width=1280 height=4000></canvas>
<script>
// random pixels: neither PNG nor Flate can compress them, so a full-page PNG is ~20 MB and a PDF ~15 MB
const c = document.getElementById("c"), g = c.getContext("2d"), img = g.createImageData(1280, 4000);
let x = 2463534242;
for (let i = 0; i < img.data.length; i += 4) {
  x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
  img.data[i] = x & 255; img.data[i + 1] = (x >>> 8) & 255; img.data[i + 2] = (x >>> 16) & 255;
  img.data[i + 3] = 255;
}
g.putImageData(img, 0, 0);
document.title = "Noise ready";
</script>"""

CHANGING_PAGE = """<!doctype html><title>Changing</title>
<button id=v style="width:200px;height:80px">Vanishing box</button>
<button id=c style="width:200px;height:80px">Collapsing box</button>
<script>
// another tab of this origin (TRIGGER_PAGE) changes this one without an action on this tab
new BroadcastChannel("kelpie-files").onmessage = () => {
  document.getElementById("v").remove();
  document.getElementById("c").style.display = "none";
  document.body.append("changed by the other tab");
};
</script>"""

TRIGGER_PAGE = """<!doctype html><title>Trigger</title><p>changing the other tab</p>
<script>new BroadcastChannel("kelpie-files").postMessage("change");</script>"""

FLOOD_PAGE = """<!doctype html><title>Flood</title><p>downloads without end</p>
<script>
// a hostile page: 40 blob downloads from a script, no user gesture
for (let i = 0; i < 40; i++) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob(["flood " + i], { type: "text/plain" }));
  a.download = "flood-" + i + ".txt";
  a.click();
}
</script>"""

PAGES = {
    "/upload.html": UPLOAD_PAGE,
    "/downloads.html": DOWNLOAD_PAGE,
    "/shot.html": SHOT_PAGE,
    "/tall.html": TALL_PAGE,
    "/print.html": PRINT_PAGE,
    "/noise.html": NOISE_PAGE,
    "/changing.html": CHANGING_PAGE,
    "/flood.html": FLOOD_PAGE,
    "/trigger.html": TRIGGER_PAGE,
    "/index.html": "<!doctype html><title>Index</title><h1>Index page</h1>",
}


class FileSite:
    """The site on ``address`` (any free port); ``blocked`` is the URL of the blocked origin its download
    page links to. :attr:`hits` lists every path requested."""

    def __init__(self, address: str = "127.0.0.1", blocked: str = "") -> None:
        self.hits: list[str] = []
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                site.hits.append(self.path)
                parts = urllib.parse.urlsplit(self.path)
                if parts.path == "/redirect":
                    target = urllib.parse.parse_qs(parts.query).get("to", ["/"])[0]
                    self._send(302, b"", {"Location": target})
                elif parts.path in PAGES:
                    page = PAGES[parts.path].replace("BLOCKED", blocked).encode()
                    self._send(200, page, {"Content-Type": "text/html; charset=utf-8"})
                elif parts.path == "/slow":
                    data = body_of("/slow")
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Disposition", 'attachment; filename="slow.bin"')
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    third = len(data) // 3
                    for i in range(3):
                        self.wfile.write(data[i * third : (i + 1) * third if i < 2 else len(data)])
                        self.wfile.flush()
                        time.sleep(1.0)
                elif parts.path == "/broken":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Disposition", 'attachment; filename="broken.bin"')
                    self.send_header("Content-Length", "200000")
                    self.end_headers()
                    self.wfile.write(b"x" * 5000)
                    self.wfile.flush()
                    self.close_connection = True
                    time.sleep(0.2)
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif parts.path in ("/att", "/big"):
                    name = "report.csv" if parts.path == "/att" else "big.bin"
                    headers = {
                        "Content-Type": "text/csv" if parts.path == "/att" else "application/octet-stream",
                        "Content-Disposition": f'attachment; filename="{name}"',
                    }
                    self._send(200, body_of(parts.path), headers)
                elif parts.path == "/plain.bin":
                    self._send(200, body_of("/plain.bin"), {"Content-Type": "application/octet-stream"})
                else:
                    self._send(404, b"not found", {"Content-Type": "text/plain"})

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer((address, 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://{address}:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
