"""The reference host's rich extensions (ARCHITECTURE.md, "Host rules added in revision 1.1": Rich
extensions): native input semantics declared as extension descriptors (CONTRACT.md §2), each declared on
the handler that serves it as a native endpoint of the Chromium renderer. One module per group:

| module | extensions | mutates |
|---|---|---|
| ``keys`` | ``press_key`` ``{tabId, key, ref?}``, ``fill`` ``{tabId, ref, text}`` | yes |
| ``scroll`` | ``scroll`` ``{tabId, ref?}`` / ``{tabId, direction?, pages?}`` | yes |
| ``history`` | ``go_back``, ``go_forward`` ``{tabId}`` | yes |
| ``waits`` | ``wait_for_text`` ``{tabId, text, timeoutMs?}`` | no |
| ``dialogs`` | ``dialog_observe``, ``dialog_accept``, ``dialog_dismiss`` (recovery) | observe: no |
| ``pointer`` | native input: ``click``, ``hover``, ``drag``, ``type_keys`` (trusted CDP events, hit-tested) | yes |

``base`` holds what they share. They go through the gateway like any extension: ``extension.call`` / MCP
``kelpie_extension`` or their own name, the same lanes, the same ``mayHaveCompleted`` rules; a mutating one
invalidates its tab's refs when dispatched, and ``allowActions:false`` or the ``extensionFilter`` hide
them. Every DOM step runs a generated reader script (``focus``, ``fill``, ``scroll``, ``find-text``,
``pointer``) in the isolated world through ``browser-control-evaluate``; keys and pointer events are trusted
CDP input events.

Faults (docs/host.md, "Liveness"): every endpoint refuses a tab whose renderer crashed exactly as the
built-in natives do — ``RENDERER_FAILED`` with ``mayHaveCompleted:false`` and nothing run — until
``tab.navigate`` or ``tabs.close`` recovers it. A new group is a module here and one line in
``kelpie_gateway.host.parts.PARTS``.
"""
