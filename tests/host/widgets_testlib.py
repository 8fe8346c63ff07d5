"""The widget pages of ``fixtures/widgets/`` (written for this project on top of widget libraries written by
others) and the site that serves them: the libraries come from npm (``tools/node`` dev dependencies,
installed by ``tools/dev setup``) and are copied from ``tools/node/node_modules`` into a temporary site at
test time, never committed (docs/host.md "Native input", "Widgets written by others")."""

from __future__ import annotations

import shutil
from pathlib import Path

from host_testlib import ROOT

WIDGETS = ROOT / "fixtures" / "widgets"
NODE_MODULES = ROOT / "tools" / "node" / "node_modules"
VENDOR = (
    "jquery/dist/jquery.min.js",
    "jquery-ui/dist/jquery-ui.min.js",
    "jquery-ui/dist/themes/base/jquery-ui.min.css",
    "select2/dist/js/select2.min.js",
    "select2/dist/css/select2.min.css",
    "tom-select/dist/js/tom-select.complete.min.js",
    "tom-select/dist/css/tom-select.default.min.css",
    "choices.js/public/assets/scripts/choices.min.js",
    "choices.js/public/assets/styles/choices.min.css",
    "flatpickr/dist/flatpickr.min.js",
    "flatpickr/dist/flatpickr.min.css",
    "sortablejs/Sortable.min.js",
    "nouislider/dist/nouislider.min.js",
    "nouislider/dist/nouislider.min.css",
    "@popperjs/core/dist/umd/popper.min.js",
    "tippy.js/dist/tippy-bundle.umd.min.js",
)
"""The library files the widget pages load (``vendor/<package path>``)."""


def build_site(root: Path) -> Path:
    """Write the widget site into ``root``: the pages, an index, and ``vendor/`` copies of the library files.
    Raises FileNotFoundError naming the file when a library is not installed (run tools/dev setup)."""
    root.mkdir(parents=True, exist_ok=True)
    for page in WIDGETS.glob("*.html"):
        shutil.copy(page, root / page.name)
    for rel in VENDOR:
        source = NODE_MODULES / rel
        if not source.is_file():
            raise FileNotFoundError(f"{source} is missing: tools/dev setup installs the widget libraries")
        target = root / "vendor" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
    links = "".join(f'<li><a href="{p.name}">{p.stem}</a></li>' for p in sorted(WIDGETS.glob("*.html")))
    (root / "index.html").write_text(f"<!doctype html><title>Widgets</title><ul>{links}</ul>", encoding="utf-8")
    return root
