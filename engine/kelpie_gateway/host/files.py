"""The host's files: the folders an operator allows uploads from (``--upload-dir``), the downloads folder
(``--downloads-dir``) and its size cap (``--max-download-mb``) — docs/host.md "Files"; ARCHITECTURE.md,
host rules 1.2 "Files".

:class:`Files` is what the parts (``host/extensions/uploads.py``, ``downloads.py``, ``capture.py``) share:

* **Uploads.** :meth:`Files.resolve_uploads` turns the paths of an ``upload_file`` call into real files:
  each path, absolute or relative to an upload folder (the first folder holding it), is resolved with
  every symlink followed (``os.path.realpath``) and must then lie inside one of the folders (themselves
  resolved once, at start); a path with a ``..`` component is refused as it stands, so is one that
  resolves outside (a symlink escaping the folder), and every path when no folder was given. Those are
  ``NOT_AUTHORIZED`` naming the allowed folders; a path inside a folder that is not an existing regular
  file is ``INVALID_PARAMS``. :meth:`Files.authorize` applies it at the ``authorize`` step, so a refused
  upload has run nothing and left the tab's refs valid; the handler resolves again before it acts (the
  folder may have changed in between).
* **Downloads.** :attr:`Files.downloads_dir` is ``--downloads-dir`` (made, mode 0700, when missing) or a
  private temporary folder (``tempfile.mkdtemp``: 0700) removed by :meth:`Files.close`; files in it are
  written 0600. :meth:`Files.claim` reserves a browser-like name there (``report.csv``, then
  ``report (1).csv`` …) with ``O_EXCL``, so two hosts sharing a folder never write one file.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JsonObject = dict[str, Any]
Authorizer = Callable[[Mapping[str, Any]], JsonObject | Awaitable[JsonObject]]

DEFAULT_MAX_DOWNLOAD_MB = 100
DEFAULT_MAX_DOWNLOADS = 1000
"""``--max-downloads``: downloads one renderer (the host, or one client context) keeps while it runs."""
MAX_UPLOAD_FILES = 32
"""At most this many paths in one ``upload_file`` call."""
MAX_NAME_CHARS = 200
"""A saved file's name is cut to this many characters (its extension kept)."""
UPLOAD_EXTENSION = "upload_file"


class FilesError(ValueError):
    """A folder flag the host cannot honour (exit status 2 at start); the message names the flag."""


class UploadRefused(Exception):
    """``upload_file`` paths the host refuses before anything runs: ``code`` (``NOT_AUTHORIZED`` or
    ``INVALID_PARAMS``) and a message naming the allowed folders."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class FilesOptions:
    """The command line's file flags: ``--upload-dir`` (repeatable), ``--downloads-dir``,
    ``--max-download-mb`` (1..100000; default 100), ``--download-settle-ms`` (0..10000; default 0: how long
    an ordinary click waits for a download a page's script may start, ``extensions/downloads.py``),
    ``--max-downloads`` (1..1000000; default 1000: how many downloads are kept in a run; later ones are
    cancelled — a page that starts downloads and reloads itself would otherwise fill the disk)."""

    upload_dirs: tuple[str, ...] = ()
    downloads_dir: str | None = None
    max_download_mb: int = DEFAULT_MAX_DOWNLOAD_MB
    download_settle_ms: int = 0
    max_downloads: int = DEFAULT_MAX_DOWNLOADS


@dataclass
class Files:
    """The host's folders (see the module docstring). Make it with :meth:`open` (raises
    :class:`FilesError`); :meth:`close` removes a temporary downloads folder."""

    upload_dirs: tuple[Path, ...]
    downloads_dir: Path
    max_download_bytes: int
    temporary: bool = False
    download_settle_s: float = 0.0
    max_downloads: int = DEFAULT_MAX_DOWNLOADS
    _closed: bool = field(default=False, repr=False)

    @classmethod
    def open(cls, options: FilesOptions | None = None) -> Files:
        """Resolve the upload folders (each must be an existing folder) and make the downloads folder."""
        opts = options or FilesOptions()
        uploads: list[Path] = []
        for raw in opts.upload_dirs:
            real = Path(os.path.realpath(os.path.expanduser(raw)))
            if not real.is_dir():
                raise FilesError(f"--upload-dir {raw}: not a folder")
            if real not in uploads:
                uploads.append(real)
        if not 1 <= opts.max_download_mb <= 100_000:
            raise FilesError(f"--max-download-mb {opts.max_download_mb}: must be 1..100000")
        if not 0 <= opts.download_settle_ms <= 10_000:
            raise FilesError(f"--download-settle-ms {opts.download_settle_ms}: must be 0..10000")
        if not 1 <= opts.max_downloads <= 1_000_000:
            raise FilesError(f"--max-downloads {opts.max_downloads}: must be 1..1000000")
        temporary = opts.downloads_dir is None
        if opts.downloads_dir is None:
            downloads = Path(tempfile.mkdtemp(prefix="kelpie-downloads-"))
        else:
            downloads = Path(os.path.realpath(os.path.expanduser(opts.downloads_dir)))
            try:
                downloads.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise FilesError(f"--downloads-dir {opts.downloads_dir}: {exc.strerror or exc}") from None
            if not downloads.is_dir() or not os.access(downloads, os.W_OK | os.X_OK):
                raise FilesError(f"--downloads-dir {opts.downloads_dir}: not a folder this user can write")
        return cls(
            tuple(uploads),
            downloads,
            opts.max_download_mb * 1024 * 1024,
            temporary,
            opts.download_settle_ms / 1000,
            opts.max_downloads,
        )

    def describe(self) -> str:
        """One log line: the upload folders and the downloads folder."""
        uploads = ", ".join(map(str, self.upload_dirs)) or "none (upload_file is refused)"
        where = (
            f"{self.downloads_dir} (temporary, removed on exit)"
            if self.temporary
            else str(self.downloads_dir)
        )
        cap = self.max_download_bytes // (1024 * 1024)
        return f"files: uploads from {uploads}; downloads into {where}, at most {cap} MiB each"

    def close(self) -> None:
        """Remove the temporary downloads folder (an operator's ``--downloads-dir`` stays). Never raises."""
        if self.temporary and not self._closed:
            self._closed = True
            shutil.rmtree(self.downloads_dir, ignore_errors=True)

    def for_context(self, label: str) -> Files:
        """The folders of one client's browser context (``serve --isolation per-client``, issue 31):
        the same upload folders, cap and settle time, and a downloads folder of its own,
        ``<downloads folder>/<label>`` (made 0700), so one client's files never share a folder with
        another's (each context's renderer keeps its own list, so neither lists nor reads the other's
        files either). ``label`` is the context's (``c1``, ``c2`` …: letters, digits, ``-``, ``_``).
        Closing the view removes nothing: the host's own :meth:`close` removes a temporary folder with
        every context's in it; an operator's ``--downloads-dir`` keeps them. Raises :class:`FilesError`
        for a bad label or a folder that cannot be made."""
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", label):
            raise FilesError(f"context label {label!r}: letters, digits, '-' and '_' only")
        folder = self.downloads_dir / label
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            raise FilesError(f"downloads folder of context {label}: {exc.strerror or exc}") from None
        return Files(
            self.upload_dirs,
            folder,
            self.max_download_bytes,
            False,
            self.download_settle_s,
            self.max_downloads,
        )

    # ----------------------------------------------------------------- uploads
    def allowed(self) -> str:
        """The allowed folders, for messages."""
        if not self.upload_dirs:
            return "no folder is allowed: the host was started without --upload-dir"
        return "allowed folders: " + ", ".join(map(str, self.upload_dirs))

    def _inside(self, real: str) -> bool:
        return any(os.path.commonpath([real, str(d)]) == str(d) for d in self.upload_dirs)

    def resolve_uploads(self, paths: Sequence[Any]) -> list[Path]:
        """The real files behind ``paths`` (see the module docstring); raises :class:`UploadRefused`."""
        if not self.upload_dirs:
            raise UploadRefused("NOT_AUTHORIZED", f"upload_file: {self.allowed()}")
        if not paths or len(paths) > MAX_UPLOAD_FILES:
            raise UploadRefused(
                "INVALID_PARAMS", f"upload_file: paths must hold 1 to {MAX_UPLOAD_FILES} paths"
            )
        found: list[Path] = []
        for raw in paths:
            if not isinstance(raw, str) or not raw or "\0" in raw:
                raise UploadRefused("INVALID_PARAMS", "upload_file: every path must be a non-empty string")
            shown = _shown(raw)
            if ".." in Path(raw).parts:
                raise UploadRefused(
                    "NOT_AUTHORIZED", f"upload_file: {shown}: '..' is not allowed; {self.allowed()}"
                )
            expanded = os.path.expanduser(raw)
            candidates = (
                [expanded] if os.path.isabs(expanded) else [str(d / expanded) for d in self.upload_dirs]
            )
            real = None
            for candidate in candidates:
                resolved = os.path.realpath(candidate)
                if self._inside(resolved) and os.path.exists(resolved):
                    real = resolved
                    break
            if real is None:
                resolved = os.path.realpath(candidates[0])
                if not self._inside(resolved):
                    why = (
                        "resolves outside the upload folders"
                        if os.path.islink(candidates[0])
                        else "is outside the upload folders"
                    )
                    raise UploadRefused("NOT_AUTHORIZED", f"upload_file: {shown} {why}; {self.allowed()}")
                raise UploadRefused(
                    "INVALID_PARAMS", f"upload_file: {shown}: no such file in the upload folders"
                )
            if not os.path.isfile(real):
                raise UploadRefused("INVALID_PARAMS", f"upload_file: {shown}: not a regular file")
            if not os.access(real, os.R_OK):
                raise UploadRefused("INVALID_PARAMS", f"upload_file: {shown}: not readable by the host")
            found.append(Path(real))
        return found

    def authorize(self, step: Mapping[str, Any]) -> JsonObject:
        """The host's decision for an ``authorize`` step of ``upload_file`` (any other step is admitted):
        ``NOT_AUTHORIZED`` (or ``INVALID_PARAMS`` for a missing file, reported as the authorization's
        refusal message) before anything runs."""
        request = step.get("request")
        params = request.get("params") if isinstance(request, Mapping) else None
        if not (
            isinstance(request, Mapping)
            and request.get("method") == "extension.call"
            and isinstance(params, Mapping)
            and params.get("name") == UPLOAD_EXTENSION
        ):
            return {"success": True}
        arguments = params.get("arguments")
        paths = arguments.get("paths") if isinstance(arguments, Mapping) else None
        try:
            self.resolve_uploads(paths if isinstance(paths, list) else [])
        except UploadRefused as refused:
            return {"success": False, "error": {"code": "NOT_AUTHORIZED", "message": refused.message}}
        return {"success": True}

    # ----------------------------------------------------------------- downloads
    def claim(self, suggested: str) -> Path:
        """A new empty file (mode 0600) in the downloads folder named after ``suggested`` (sanitised;
        ``name (1).ext`` … when taken), created with ``O_EXCL``. Raises OSError."""
        stem, dot, ext = safe_name(suggested).rpartition(".")
        if not dot or not stem:
            stem, ext = safe_name(suggested), ""
        for n in range(10_000):
            name = f"{stem} ({n}).{ext}" if n and ext else f"{stem} ({n})" if n else safe_name(suggested)
            path = self.downloads_dir / name
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            os.close(fd)
            return path
        raise OSError(f"no free name for {suggested!r} in {self.downloads_dir}")

    def release(self, path: Path) -> None:
        """Remove a claimed file that was never finished. Never raises."""
        with contextlib.suppress(OSError):
            path.unlink()


_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]+')


def safe_name(suggested: str) -> str:
    """A file name that is safe in the downloads folder: no path separators, control or reserved
    characters, no leading dots or spaces, at most :data:`MAX_NAME_CHARS` characters (the extension kept);
    ``download`` when nothing is left."""
    name = unicodedata.normalize("NFC", os.path.basename(suggested.replace("\\", "/")))
    name = _UNSAFE.sub("_", name).strip().lstrip(".").strip()
    if not name:
        return "download"
    if len(name) > MAX_NAME_CHARS:
        stem, dot, ext = name.rpartition(".")
        keep = ext[:20] if dot and stem else ""
        name = (name[: MAX_NAME_CHARS - len(keep) - 1] + "." + keep) if keep else name[:MAX_NAME_CHARS]
    return name


def _shown(path: str) -> str:
    """A client's path for a message: printable, at most 200 characters."""
    text = "".join(ch if ch.isprintable() else "?" for ch in path)
    return repr(text if len(text) <= 200 else text[:199] + "…")


def compose(*authorizers: Authorizer | None) -> Authorizer:
    """One ``authorize`` decision from several (the upload folders, the site policy): the first refusal
    wins, else admitted. A decision may be an awaitable (the policy resolving a host name): the ones after
    it then wait for it, so the order holds."""
    chosen = [a for a in authorizers if a is not None]

    def authorize(step: Mapping[str, Any]) -> JsonObject | Awaitable[JsonObject]:
        for i, decide in enumerate(chosen):
            verdict = decide(step)
            if inspect.isawaitable(verdict):
                return _rest(verdict, chosen[i + 1 :], step)
            if verdict.get("success") is not True:
                return verdict
        return {"success": True}

    return authorize


async def _rest(
    first: Awaitable[JsonObject], rest: Sequence[Authorizer], step: Mapping[str, Any]
) -> JsonObject:
    verdict = await first
    if verdict.get("success") is not True:
        return verdict
    for decide in rest:
        answer = decide(step)
        verdict = await answer if inspect.isawaitable(answer) else answer
        if verdict.get("success") is not True:
            return verdict
    return {"success": True}
