/*
 * kelpie/browser_gateway_c_api.h — C ABI of the Kelpie browser gateway (CONTRACT.md §10).
 *
 * Library: libkelpie_browser_gateway.so (Linux) / libkelpie_browser_gateway.dylib (macOS).
 * pkg-config: kelpie-browser-gateway (cflags, libs and an rpath to the library directory).
 *
 * THEORY OF OPERATION
 * A gateway is a sans-I/O state machine: the host passes JSON text in and gets JSON text ("steps",
 * CONTRACT.md §5) back, and does every piece of I/O (renderer calls, timers, sockets) itself:
 *
 *     step = begin(gw, request)            -> {"step":"authorize",...}   host applies its policy
 *     step = advance(gw, {"transaction","seq","result":{"success":true}})
 *                                          -> {"step":"dispatch",...}    host calls the native endpoint ONCE
 *     step = advance(gw, {"transaction","seq","result":<endpoint result>})
 *                                          -> {"step":"complete","response":<envelope>,"audit":{...}}
 *
 * AUDIT. Every complete step carries "audit": method, extension, lane, tabId, outcome, code,
 * mayHaveCompleted, mutates, authorized (null when no authorize step was issued), dispatches, elapsedMs
 * and paramsSha256 (hex SHA-256 of the canonical params; the params themselves never appear). A host
 * that keeps an audit trail writes it with its own wall-clock time and caller (docs/engine.md).
 *
 * STRINGS. Every input is UTF-8, NUL-terminated JSON text (or NULL where a parameter says so). The
 * library reads inputs only during the call and never keeps a pointer to them. Every `char *` the
 * library returns is heap memory (C malloc) owned by the caller: free it with kelpie_mcp_free_string()
 * exactly once. The only exception is kelpie_browser_gateway_version(), which is static.
 *
 * ERRORS ARE VALUES. No function aborts, throws or longjmps for bad input. A failure is a JSON value:
 * a complete step carrying a failure envelope (begin, begin_mcp), a {"step":"rejected"} step (next,
 * advance, cancel), an error envelope through error_json_out (create) or a result code below
 * (destroy, invalidate_refs). A step-returning function returns NULL only when malloc itself failed.
 *
 * HANDLES. KelpieBrowserGatewayRef is opaque: it is an identifier looked up in a table, never a pointer
 * the library dereferences. A NULL, destroyed, unknown or garbage handle is refused (INVALID_REQUEST
 * step or KELPIE_GATEWAY_INVALID) without being used; identifiers are never reused in a process.
 *
 * THREADS. Every function may be called from any thread, concurrently. Each gateway serialises its own
 * transactions (one active transaction per lane; a begin on a busy lane is answered BUSY, never
 * queued). kelpie_browser_gateway_invalidate_refs() never waits for a transaction in progress.
 *
 * LOADING. The library embeds CPython (cffi embedding). Linked normally (or through pkg-config) it needs
 * no environment variables: it carries an rpath to libpython and the interpreter paths recorded at
 * build time. A host that dlopen()s it should pass RTLD_NOW | RTLD_GLOBAL (the library also promotes
 * libpython to global scope itself, so RTLD_LOCAL works on Linux too). Loaded into a process that
 * already runs the same Python (ctypes), it reuses that interpreter. The embedded interpreter is never
 * finalised. An initialisation failure is reported by kelpie_browser_gateway_create() (NULL plus an
 * INTERNAL envelope naming the cause) and by every other call, not only on stderr. See docs/c-abi.md.
 *
 * LIMITS (CONTRACT.md §8). A request over KELPIE_GATEWAY_MAX_REQUEST_BYTES is refused
 * REQUEST_TOO_LARGE (JSON-RPC -32600 for begin_mcp) without being read past the cap or parsed. A
 * renderer result over KELPIE_GATEWAY_MAX_RESULT_BYTES completes its transaction RESPONSE_TOO_LARGE.
 */
#ifndef KELPIE_BROWSER_GATEWAY_C_API_H
#define KELPIE_BROWSER_GATEWAY_C_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(KELPIE_GATEWAY_BUILDING)
#  define KELPIE_GATEWAY_API __declspec(dllexport)
#elif defined(__GNUC__) && defined(KELPIE_GATEWAY_BUILDING)
#  define KELPIE_GATEWAY_API __attribute__((visibility("default")))
#else
#  define KELPIE_GATEWAY_API
#endif

/* ---- Result codes (int32_t) of kelpie_browser_gateway_destroy / _invalidate_refs. Closed set. ---- */
#define KELPIE_GATEWAY_OK       0  /* done */
#define KELPIE_GATEWAY_PENDING  1  /* destroy: a renderer callback is pending; the gateway is intact and usable */
#define KELPIE_GATEWAY_INVALID  2  /* NULL, destroyed, unknown or garbage handle, or an argument that is not
                                      UTF-8; nothing was done */
#define KELPIE_GATEWAY_ERROR    3  /* the runtime failed (initialisation failure or internal error); nothing
                                      was changed */

/* ---- Limits (bytes of UTF-8 JSON, excluding the terminating NUL; CONTRACT.md §8) ---- */
#define KELPIE_GATEWAY_MAX_REQUEST_BYTES (4u * 1024u * 1024u)   /* 4 MiB: begin / begin_mcp input */
#define KELPIE_GATEWAY_MAX_RESULT_BYTES  (32u * 1024u * 1024u)  /* 32 MiB: renderer result in advance */

/* Opaque gateway handle. Never dereference it; compare only with NULL. */
typedef struct KelpieBrowserGateway *KelpieBrowserGatewayRef;

/*
 * Create a gateway from a config JSON object (CONTRACT.md §2).
 *   config_json     UTF-8 JSON object, e.g. {"nativeMethods":["get-tabs"]}. NULL is refused (INVALID_JSON).
 *   error_json_out  may be NULL. On success *error_json_out is set to NULL. On failure it receives a failure
 *                   envelope {"version":1,"id":null,"success":false,"error":{"code","message","retryable"},
 *                   "mayHaveCompleted":false} (free it with kelpie_mcp_free_string): INVALID_JSON,
 *                   INVALID_REQUEST whose message starts with the JSON Pointer of the bad field, or INTERNAL
 *                   when the embedded runtime failed to initialise (the message names the cause).
 * Returns a new handle, or NULL on failure (nothing was created). Release it with _destroy.
 * The first call in a process also initialises the runtime (cold start, tens of milliseconds).
 *
 * Observers (CONTRACT.md §9 v1.2): {"observer":true,...} makes a one-shot observer, for grounding a chat
 * turn on the visible tab without touching the session that acts on it. It implies allowActions:false
 * (nothing it answers can authorize an action), and its tab.snapshot runs the fixed reader without a
 * registry or listeners: the snapshot's elements never hold refs, there is no snapshot id and no cursor
 * (one page, at most 12,000 characters and 200 elements). The host must add "generation" (the tab's
 * document generation, the same before and after the evaluation) to the browser-control-evaluate result
 * and call _invalidate_refs on navigation; a read it cannot vouch for is discarded RENDERER_CHANGED.
 * Create one per read and destroy it after.
 */
KELPIE_GATEWAY_API KelpieBrowserGatewayRef kelpie_browser_gateway_create(const char *config_json,
                                                                         char **error_json_out);

/*
 * Destroy a gateway.
 * Returns KELPIE_GATEWAY_OK (the handle is now invalid forever), KELPIE_GATEWAY_PENDING (a renderer
 * callback is pending: advance the late result or report {"transaction":T,"retire":"renderer-closed"},
 * then destroy again; the gateway is intact), KELPIE_GATEWAY_INVALID (NULL, already destroyed, unknown
 * or garbage handle) or KELPIE_GATEWAY_ERROR (runtime failure; the handle stays valid).
 */
KELPIE_GATEWAY_API int32_t kelpie_browser_gateway_destroy(KelpieBrowserGatewayRef gw);

/*
 * Begin a transaction from a canonical request (CONTRACT.md §3, §5).
 *   request_json  UTF-8 JSON text, at most KELPIE_GATEWAY_MAX_REQUEST_BYTES bytes. NULL is refused.
 * Returns a step (caller frees): authorize, or complete (refusals: INVALID_JSON, INVALID_REQUEST,
 * INVALID_PARAMS, BUSY, REQUEST_TOO_LARGE, ..., or INVALID_REQUEST for an invalid handle; a complete
 * step produced outside the engine — invalid handle, NULL input, oversize input, runtime failure —
 * has "transaction":null). Documentation and capabilities complete at once.
 */
KELPIE_GATEWAY_API char *kelpie_browser_gateway_begin(KelpieBrowserGatewayRef gw, const char *request_json);

/*
 * Begin from a JSON-RPC 2.0 message (MCP, CONTRACT.md §7). Same rules as _begin; refusals are JSON-RPC
 * errors inside the complete step's "response". A notification completes with "response":null and
 * "httpStatus":202. Both MCP eras are spoken, decided per message (§7 v1.1, docs/mcp.md "Eras"): a JSON-RPC
 * error answering a stateless (2026-07-28) request carries the HTTP status the revision asks for
 * ("httpStatus":404 for -32601, 400 for the others); a host serving /mcp over HTTP sends it, and checks the
 * MCP-Protocol-Version / Mcp-Method / Mcp-Name headers against the body first (docs/mcp.md).
 * notifications/cancelled {"requestId":R} cancels (reason "cancelled") the one in-flight
 * tools/call whose id is R; its complete step then rides in the 202 step as "cancelled":{...}: answer the
 * caller still waiting on that tools/call with it (stop waiting for its dispatch; the late renderer
 * callback is still passed to _advance and retires).
 */
KELPIE_GATEWAY_API char *kelpie_browser_gateway_begin_mcp(KelpieBrowserGatewayRef gw, const char *jsonrpc_json);

/*
 * Re-read the pending step of a transaction without changing anything.
 *   transaction_or_null  the transaction identifier exactly as it appears in a step's "transaction" value
 *                        (the string itself, no JSON quotes), or NULL for the direct lane.
 * Returns the pending step, {"step":"idle"} when nothing is pending, or a rejected step (caller frees).
 * A pending dispatch whose timeoutMs has passed carries "overdue":true: call _cancel.
 * Bounded retirement (CONTRACT.md §5, v1.1): while a cancelled dispatch's callback is still out, "idle"
 * carries "awaitingRetirement":{"transaction":T,"seq":n,"method":<native endpoint>,"tabId":<tab or null>}
 * and, once timeoutMs + the config's retirementGraceMs (default and maximum 5000) have passed,
 * "overdue":true inside it. The host must then end that stuck work (stop the page's script, e.g. CDP
 * Runtime.terminateExecution, else close or crash that tab's renderer) and report
 * {"transaction":T,"retire":"renderer-closed"} to _advance; until then the lane answers BUSY. Poll _next
 * for each transaction you cancelled (it costs well under a microsecond of C time plus the engine call).
 */
KELPIE_GATEWAY_API char *kelpie_browser_gateway_next(KelpieBrowserGatewayRef gw, const char *transaction_or_null);

/*
 * Consume one result: {"transaction":T,"seq":n,"result":{...}} or {"transaction":T,"retire":"renderer-closed"}.
 * Returns the next step (dispatch, complete), {"step":"retired"} for a late result after a cancel, or
 * {"step":"rejected","error":{"code":"STALE_STEP"|"INVALID_REQUEST",...}} which changed nothing
 * (late, duplicated, forged seq; NULL or malformed input; invalid handle). Caller frees.
 * A renderer crash or browser exit: _cancel every dispatch pending on it with reason "renderer-closed"
 * (answers at once) and retire every cancelled one still awaiting retirement the same way.
 * Undelivered response (v1.1): {"transaction":T,"undelivered":true} says the caller never received T's
 * complete step (it disconnected). If T dispatched a mutation, that tab becomes RECONCILE_REQUIRED for
 * the next caller. Returns {"step":"noted","transaction":T,"reconcileRequired":<tab or null>}.
 * Closed tab: {"tabClosed":"<tabId>"} says a tab is gone for good although no tabs.close went through the
 * gateway (the host closed it to end stuck work, the page or the user closed it, its browser exited; for an
 * exit, report before cancelling the pending dispatches). Its refs are forgotten and its RECONCILE_REQUIRED
 * mark cleared: every later call naming it is TAB_NOT_FOUND. Returns
 * {"step":"noted","tabClosed":<tab>,"reconcileCleared":<bool>}.
 */
KELPIE_GATEWAY_API char *kelpie_browser_gateway_advance(KelpieBrowserGatewayRef gw, const char *result_json);

/*
 * Cancel: {"transaction":T,"reason":"timeout"|"cancelled"|"renderer-closed"} (CONTRACT.md §5). Mandatory
 * on renderer timeout or cancellation. Returns the complete step (mayHaveCompleted:true for a dispatched
 * mutation) or a rejected step. After a cancel during dispatch the lane stays exclusive until the late
 * callback is passed to _advance (answered {"step":"retired"}) or retired. Caller frees.
 */
KELPIE_GATEWAY_API char *kelpie_browser_gateway_cancel(KelpieBrowserGatewayRef gw, const char *cancel_json);

/*
 * Invalidate element refs of one tab (tab_id_or_null = the tabId string) or of every tab (NULL).
 * Safe from any thread at any time, including during a transaction; it only enqueues and never waits
 * for the transaction in progress (CONTRACT.md §6).
 * Returns KELPIE_GATEWAY_OK, KELPIE_GATEWAY_INVALID (bad handle, or tab id not UTF-8) or KELPIE_GATEWAY_ERROR.
 */
KELPIE_GATEWAY_API int32_t kelpie_browser_gateway_invalidate_refs(KelpieBrowserGatewayRef gw,
                                                                  const char *tab_id_or_null);

/*
 * The library version, e.g. "0.1.0". Static storage: do NOT free. Never initialises the runtime.
 */
KELPIE_GATEWAY_API const char *kelpie_browser_gateway_version(void);

/*
 * Free a string returned by this library. Plain C free(): safe with NULL, safe from any thread, never
 * enters the runtime. Do not pass the same pointer twice, nor memory the library did not return.
 */
KELPIE_GATEWAY_API void kelpie_mcp_free_string(char *s);

#ifdef __cplusplus
}
#endif

#endif /* KELPIE_BROWSER_GATEWAY_C_API_H */
