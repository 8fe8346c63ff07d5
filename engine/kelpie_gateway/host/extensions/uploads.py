"""Attaching files: ``upload_file`` sets the files of a captured ``<input type=file>``, or answers the file
chooser that clicking the captured element opens (docs/host.md "Files"; ARCHITECTURE.md host rules 1.2).

One way for both, as a person does it: the captured element is clicked (the ``tab.click`` script, run with
a user gesture so that the page may open a chooser), the chooser it opens is answered through Playwright
(``FileChooser.set_files``: CDP ``DOM.setFileInputFiles`` on a local browser, the files' bytes sent along
to a remote one), and the page hears what a person's choice fires (``input`` and ``change`` on the input).

* **Before anything runs** (the ``authorize`` step, ``host/files.py``; checked again here before acting):
  every path must resolve, symlinks followed, to a regular file inside an ``--upload-dir`` folder; no
  ``..``; anything else — or a host without ``--upload-dir`` — is ``NOT_AUTHORIZED`` naming the allowed
  folders. A disabled target is ``NOT_ACTIONABLE``; several files for a single-file input are
  ``INVALID_PARAMS``; all ``mayHaveCompleted:false``.
* **Afterwards, verified** as typing is: the input (the captured one, read in the isolated world; or the
  one behind the chooser, read through Playwright's handle) must hold exactly the chosen files' names
  after the page's change handlers ran, else ``EFFECT_NOT_OBSERVED`` (unknown outcome: the page saw the
  files and cleared or replaced them). A click that opens no chooser is ``EFFECT_NOT_OBSERVED`` too (its
  handlers ran).
* Results name the files (``{uploaded: [names], files: n}``); file contents never appear.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from playwright.async_api import Error as PlaywrightError

from kelpie_gateway import click_script, upload_files_script, upload_target_script
from kelpie_gateway.host.browser.chromium import endpoint
from kelpie_gateway.host.browser.world import World
from kelpie_gateway.host.files import MAX_UPLOAD_FILES, UploadRefused
from kelpie_gateway.host.renderer import JsonObject, fail

from .base import REF, STEP_TIMEOUT_MS, TAB, Extension, no_captured_node, schema, script_failure

CHOOSER_WAIT_MS = 3_000
"""How long after the click a file chooser may take to open."""
FILES_OF_CHOOSER = "e => Array.from(e.files || [], f => String(f.name))"
"""Playwright evaluates this on the chooser's input (not a captured node) to verify the names."""


class Uploads(Extension):
    """``upload_file``."""

    @endpoint(
        {
            "name": "upload_file",
            "method": "upload-file",
            "description": "Attach files to a file input (ref of an <input type=file>), or to the file chooser "
            "that clicking ref opens (an upload button), as a person choosing them does. paths: files inside "
            "the folders the operator allowed (--upload-dir; absolute, or relative to such a folder). "
            "Verified afterwards: if the page does not keep the files, the outcome is unknown "
            "(EFFECT_NOT_OBSERVED).",
            "inputSchema": schema(
                {
                    "tabId": TAB,
                    "ref": REF,
                    "paths": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": MAX_UPLOAD_FILES,
                        "items": {"type": "string", "minLength": 1, "maxLength": 4096},
                    },
                },
                ["tabId", "ref", "paths"],
            ),
            "mutates": True,
            "refArguments": ["ref"],
        }
    )
    async def upload_file(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, ref, paths}`` → ``{uploaded: [file names], files: n}``."""
        tab = self.tab(params)
        captured = self.captured(params)
        if captured is None:
            return no_captured_node()
        files = self.renderer.files
        if files is None:
            return fail(
                "NOT_AUTHORIZED", "upload_file: this host has no upload folders", mayHaveCompleted=False
            )
        try:
            chosen = files.resolve_uploads(list(params.get("paths") or []))
        except UploadRefused as refused:
            return fail(refused.code, refused.message, mayHaveCompleted=False)
        names = [path.name for path in chosen]
        target = await self.run_script(tab.tab_id, upload_target_script(*captured))
        if target.get("success") is not True:
            return target
        value = target.get("value")
        kind = value.get("kind") if isinstance(value, dict) else None
        if kind not in ("file-input", "other"):
            return fail("RENDERER_FAILED", "the upload script gave no answer", mayHaveCompleted=False)
        if kind == "file-input" and len(chosen) > 1 and isinstance(value, dict) and not value.get("multiple"):
            return fail(
                "INVALID_PARAMS",
                f"the file input takes one file; {len(chosen)} were given; nothing was chosen",
                mayHaveCompleted=False,
            )
        world = self.renderer.part(World)
        if world is None:
            return fail("RENDERER_FAILED", "this host has no isolated world", mayHaveCompleted=False)
        document = await world.world(tab)
        page = tab.page
        try:
            async with page.expect_file_chooser(timeout=CHOOSER_WAIT_MS) as waiting:
                reply = await document.cdp.send(
                    "Runtime.evaluate",
                    {
                        "expression": click_script(*captured),
                        "contextId": document.context_id,
                        "returnByValue": True,
                        "awaitPromise": True,
                        "userGesture": True,  # a page opens a chooser only from a user's activation
                    },
                )
                not_clicked = _click_refusal(reply)
                if not_clicked is not None:
                    raise _NotClicked(not_clicked)
            chooser = await waiting.value
        except _NotClicked as stopped:
            return stopped.result
        except PlaywrightError as exc:
            if "Timeout" not in str(exc) and "timeout" not in str(exc):
                raise
            return fail(
                "EFFECT_NOT_OBSERVED",
                "the element was clicked but no file chooser opened; no file was chosen; observe before acting",
                mayHaveCompleted=True,
            )
        if len(chosen) > 1 and not chooser.is_multiple():
            return fail(
                "INVALID_PARAMS",
                f"the chooser takes one file; {len(chosen)} were given; nothing was chosen (the click ran)",
                mayHaveCompleted=True,
            )
        await chooser.set_files([str(path) for path in chosen], timeout=STEP_TIMEOUT_MS)
        if kind == "file-input":
            held = await self.run_script(tab.tab_id, upload_files_script(*captured))
            if held.get("success") is not True:
                return {**held, "mayHaveCompleted": True}
            seen = (held.get("value") or {}).get("files")
        else:
            await asyncio.sleep(0)
            seen = await chooser.element.evaluate(FILES_OF_CHOOSER)
        if seen != names:
            return fail(
                "EFFECT_NOT_OBSERVED",
                f"the files were chosen but the input holds {len(seen) if isinstance(seen, list) else 'no'} "
                f"file(s) afterwards instead of {len(names)} (the page cleared or replaced them); observe "
                "before acting",
                mayHaveCompleted=True,
            )
        return {"success": True, "uploaded": names, "files": len(names)}


class _NotClicked(Exception):
    def __init__(self, result: JsonObject) -> None:
        super().__init__(result["error"]["message"])
        self.result = result


def _click_refusal(reply: Mapping[str, Any]) -> JsonObject | None:
    """The click script's own refusal (or a thrown script) as a native failure, or None when it clicked."""
    details = reply.get("exceptionDetails")
    if details:
        return fail("RENDERER_FAILED", "the click script threw", mayHaveCompleted=True)
    value = (reply.get("result") or {}).get("value")
    failed = script_failure(value)
    if failed is not None:
        return failed
    if not isinstance(value, dict) or value.get("clicked") is not True:
        return fail("RENDERER_FAILED", "the click script gave no answer", mayHaveCompleted=True)
    return None
