"""``--config FILE``: the operator's gateway settings on top of what the reference host provides.

The file is the gateway config of CONTRACT.md §2 as one JSON object. The host builds its own config first
(the native endpoints Chromium implements, the fixed reader, the isolated realm, its extensions); the file
then decides the session's policy:

* ``allowActions``, ``requireAuthorization``, ``targeting``, ``pinnedTab``, ``extensionFilter``: taken as
  given (``{"allowActions": false}`` is a read-only session);
* ``nativeMethods``: a subset of the host's endpoints (to withhold some); naming one the host does not
  implement is an error;
* ``browserAvailable``, ``fixedReader``, ``realm``, ``extensions``: facts about the host, not choices; the
  file may repeat the host's value and nothing else (``--browser none`` is how to run without a browser);
* ``isolation`` (``"shared"`` | ``"per-client"``), ``maxContexts`` (integer 1..256) and ``contextIdleS``
  (seconds, > 0): the host's own settings of ``serve --isolation``, ``--max-contexts`` and
  ``--context-idle-s`` (a flag given on the command line wins); taken out before the engine sees the file
  (:func:`host_settings`);
* anything else is passed to the engine, which refuses unknown fields with a JSON Pointer at create.

Errors are :class:`ConfigFileError` with a message naming the file and the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kelpie_gateway import JsonError, loads

JsonObject = dict[str, Any]

HOST_FACTS = ("browserAvailable", "fixedReader", "realm", "extensions")
"""Config fields the host decides (what it is), never the operator's file."""
HOST_SETTINGS = ("isolation", "maxContexts", "contextIdleS")
"""Config fields that are the host's own settings (``serve`` flags), not the gateway's."""
MAX_CONFIG_BYTES = 1024 * 1024
MAX_CONTEXTS_BOUND = 256


class ConfigFileError(ValueError):
    """``--config FILE`` cannot be used; the message names the file and the reason."""


def load_config_file(path: Path) -> JsonObject:
    """Read ``path`` as one JSON object (at most 1 MiB). Raises :class:`ConfigFileError`."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigFileError(f"--config {path}: cannot read it: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigFileError(f"--config {path}: over {MAX_CONFIG_BYTES} bytes")
    try:  # the engine's parser: a name repeated in the file is refused, not read last-wins
        data = loads(raw, cap=MAX_CONFIG_BYTES)
    except JsonError as exc:
        raise ConfigFileError(f"--config {path}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigFileError(f"--config {path}: must be a JSON object (the gateway config, CONTRACT.md §2)")
    return data


def host_settings(user: Mapping[str, Any], *, source: str = "--config") -> tuple[JsonObject, JsonObject]:
    """Split the operator's file into ``(gateway settings, host settings)`` (:data:`HOST_SETTINGS`),
    checking the host's: ``isolation`` one of ``shared``/``per-client``, ``maxContexts`` an integer
    1..256, ``contextIdleS`` a positive number of seconds. Raises :class:`ConfigFileError`."""
    gateway = {k: v for k, v in user.items() if k not in HOST_SETTINGS}
    host = {k: v for k, v in user.items() if k in HOST_SETTINGS}
    if "isolation" in host and host["isolation"] not in ("shared", "per-client"):
        raise ConfigFileError(f'{source}: /isolation must be "shared" or "per-client"')
    count = host.get("maxContexts", 1)
    if type(count) is not int or not 1 <= count <= MAX_CONTEXTS_BOUND:
        raise ConfigFileError(f"{source}: /maxContexts must be an integer 1..{MAX_CONTEXTS_BOUND}")
    idle = host.get("contextIdleS", 1)
    if type(idle) not in (int, float) or not idle > 0:
        raise ConfigFileError(f"{source}: /contextIdleS must be a number of seconds above 0")
    return gateway, host


def apply_config(host: Mapping[str, Any], user: Mapping[str, Any], *, source: str = "--config") -> JsonObject:
    """The gateway config for ``create``: ``host`` (what the host provides) with the operator's ``user``
    settings applied by the rules in the module docstring. Raises :class:`ConfigFileError`."""
    merged: JsonObject = dict(host)
    for key, value in user.items():
        if key in HOST_FACTS:
            if value != host.get(key):
                hint = (
                    " (use --browser none for a host without a browser)" if key == "browserAvailable" else ""
                )
                raise ConfigFileError(
                    f"{source}: /{key} is decided by the host ({json.dumps(host.get(key))[:200]}), "
                    f"not by the config file{hint}"
                )
            continue
        if key == "nativeMethods":
            offered = list(host.get("nativeMethods") or [])
            if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
                raise ConfigFileError(f"{source}: /nativeMethods must be an array of strings")
            unknown = [m for m in value if m not in offered]
            if unknown:
                raise ConfigFileError(
                    f"{source}: /nativeMethods names endpoints this host does not implement: "
                    f"{', '.join(unknown)[:300]} (it implements {', '.join(offered)})"
                )
            merged[key] = value
            continue
        merged[key] = value
    return merged
