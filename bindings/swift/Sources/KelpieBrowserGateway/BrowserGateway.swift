// BrowserGateway: the raw layer over the C ABI (CONTRACT.md §10, mirroring the Python API §11).
//
// JSON text in, JSON text out, exactly as the library answers. Every `char *` the library returns is
// read as UTF-8 and freed with kelpie_mcp_free_string exactly once (in a `defer`), whatever happens
// next; kelpie_browser_gateway_version() is static and never freed. Nothing here parses JSON: the typed
// layer (Step, GatewayDriver) is built on top.

import CKelpieBrowserGateway
import Foundation

/// An error of the binding. Bad requests and results never throw: they come back as steps (values).
/// Thrown only by `BrowserGateway.init(configJSON:)` (``Kind/config``) and `close()`
/// (``Kind/pending``, ``Kind/runtime``).
public struct GatewayError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// create refused the config (CONTRACT.md §2): `envelopeJSON` is the library's failure envelope.
        case config
        /// close refused: a cancelled dispatch still awaits its renderer callback (KELPIE_GATEWAY_PENDING).
        case pending
        /// the runtime failed (KELPIE_GATEWAY_ERROR); the handle stays valid.
        case runtime
    }

    public let kind: Kind
    /// The envelope's error code (INVALID_JSON, INVALID_REQUEST, INTERNAL, …); "PENDING"/"ERROR" for close.
    public let code: String
    /// The envelope's message (for INVALID_REQUEST it starts with the JSON Pointer of the bad field).
    public let message: String
    /// The failure envelope exactly as the library returned it (config errors), else nil.
    public let envelopeJSON: String?

    public init(kind: Kind, code: String, message: String, envelopeJSON: String? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.envelopeJSON = envelopeJSON
    }

    public var description: String { "GatewayError.\(kind.rawValue) \(code): \(message)" }
}

/// Result codes of destroy and invalidate_refs (the header's KELPIE_GATEWAY_*).
public enum GatewayResultCode: Int32, Sendable {
    case ok = 0
    case pending = 1
    case invalid = 2
    case error = 3
    /// A code this binding does not know (a newer library).
    case unknown = -1

    init(code: Int32) { self = GatewayResultCode(rawValue: code) ?? .unknown }
}

/// One gateway (one per browser or profile), owning its native handle.
///
/// Every method may be called from any thread or task at once, like the C API: the library serialises
/// each gateway's transactions (a begin on a busy lane is answered BUSY, never queued) and
/// ``invalidateRefs(tabId:)`` never waits for a transaction in progress. After ``close()`` the handle is
/// dead and the library refuses it as a value (an INVALID_REQUEST step, ``GatewayResultCode/invalid``):
/// identifiers are never reused, so a stale handle can never reach another gateway. `deinit` destroys
/// the gateway if ``close()`` was not called (if a callback is still pending then, the native gateway
/// is left to the process: the library cannot destroy it, and nothing can reach it any more).
public final class BrowserGateway: @unchecked Sendable {
    // @unchecked: `handle` is immutable and the library is thread-safe; `closed` is guarded by `lock`.
    private let handle: KelpieBrowserGatewayRef
    private let lock = NSLock()
    private var closed = false

    /// Create a gateway from a config JSON object (CONTRACT.md §2), e.g. `{"nativeMethods":["get-tabs"]}`.
    /// Throws ``GatewayError`` (kind ``GatewayError/Kind/config``) carrying the library's failure envelope:
    /// INVALID_JSON, INVALID_REQUEST (message starts with the JSON Pointer of the bad field) or INTERNAL
    /// (the embedded runtime could not start; the message names the cause). Nothing is created then.
    public init(configJSON: String) throws {
        var err: UnsafeMutablePointer<CChar>? = nil
        let h = BrowserGateway.withCText(configJSON) { kelpie_browser_gateway_create($0, &err) }
        let errText = BrowserGateway.take(err)
        guard let h else {
            throw BrowserGateway.configError(errText)
        }
        handle = h
    }

    deinit {
        lock.lock()
        let wasClosed = closed
        lock.unlock()
        if !wasClosed { _ = kelpie_browser_gateway_destroy(handle) }
    }

    /// True once ``close()`` succeeded.
    public var isClosed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return closed
    }

    /// Begin a transaction from a canonical request (CONTRACT.md §3, §5). Returns an authorize or a
    /// complete step (refusals: INVALID_JSON, INVALID_PARAMS, BUSY, REQUEST_TOO_LARGE, …).
    public func begin(_ requestJSON: String) -> String {
        BrowserGateway.withCText(requestJSON) { BrowserGateway.step(kelpie_browser_gateway_begin(handle, $0)) }
    }

    /// Begin from one JSON-RPC 2.0 message (MCP, §7). A notification completes with `"response":null`
    /// and `"httpStatus":202`.
    public func beginMCP(_ messageJSON: String) -> String {
        BrowserGateway.withCText(messageJSON) { BrowserGateway.step(kelpie_browser_gateway_begin_mcp(handle, $0)) }
    }

    /// Re-read the pending step of `transaction` (nil = the direct lane) without changing anything:
    /// the pending step, `{"step":"idle"}` (with `awaitingRetirement` while a cancelled dispatch's
    /// callback is out), or a rejected step.
    public func next(transaction: String? = nil) -> String {
        guard let transaction else { return BrowserGateway.step(kelpie_browser_gateway_next(handle, nil)) }
        return BrowserGateway.withCText(transaction) { BrowserGateway.step(kelpie_browser_gateway_next(handle, $0)) }
    }

    /// Consume one result: `{"transaction":T,"seq":n,"result":{…}}` or `{"transaction":T,"retire":"renderer-closed"}`.
    /// Late, duplicated, forged or malformed input gets a rejected step and changes nothing.
    public func advance(_ resultJSON: String) -> String {
        BrowserGateway.withCText(resultJSON) { BrowserGateway.step(kelpie_browser_gateway_advance(handle, $0)) }
    }

    /// Cancel: `{"transaction":T,"reason":"timeout"|"cancelled"|"renderer-closed"}` — mandatory on
    /// renderer timeout or cancellation (CONTRACT.md §5).
    public func cancel(_ cancelJSON: String) -> String {
        BrowserGateway.withCText(cancelJSON) { BrowserGateway.step(kelpie_browser_gateway_cancel(handle, $0)) }
    }

    /// Invalidate element refs of `tabId` (nil = every tab). Any thread, any time; it only enqueues and
    /// never waits for a transaction in progress (§6). Returns ``GatewayResultCode/ok``,
    /// ``GatewayResultCode/invalid`` (closed gateway) or ``GatewayResultCode/error``.
    @discardableResult
    public func invalidateRefs(tabId: String? = nil) -> GatewayResultCode {
        guard let tabId else { return GatewayResultCode(code: kelpie_browser_gateway_invalidate_refs(handle, nil)) }
        return BrowserGateway.withCText(tabId) { GatewayResultCode(code: kelpie_browser_gateway_invalidate_refs(handle, $0)) }
    }

    /// Destroy the native gateway. Idempotent. Throws ``GatewayError`` of kind ``GatewayError/Kind/pending``
    /// while a cancelled dispatch awaits its renderer callback (the gateway stays open and usable: advance
    /// the late result or retire it, then close again), or ``GatewayError/Kind/runtime`` on a runtime failure.
    public func close() throws {
        lock.lock()
        defer { lock.unlock() }
        if closed { return }
        switch GatewayResultCode(code: kelpie_browser_gateway_destroy(handle)) {
        case .ok, .invalid:  // invalid: nothing left to destroy
            closed = true
        case .pending:
            throw GatewayError(
                kind: .pending, code: "PENDING",
                message: "a renderer callback is pending: advance the late result (or retire it), then close again")
        case .error, .unknown:
            throw GatewayError(kind: .runtime, code: "ERROR", message: "kelpie_browser_gateway_destroy failed")
        }
    }

    /// The library version (kelpie_browser_gateway_version; static storage, never freed).
    public static var version: String {
        guard let p = kelpie_browser_gateway_version() else { return "" }
        return String(cString: p)
    }

    // MARK: byte-exact variants

    /// For hosts that already hold UTF-8 JSON bytes (and for replaying vectors with deliberately
    /// invalid UTF-8): the bytes are passed as they are, NUL-terminated (a zero byte inside becomes 0x01,
    /// which is invalid anywhere in JSON text, so the gateway refuses it instead of reading a prefix).
    public func begin(utf8 bytes: [UInt8]) -> String {
        BrowserGateway.withCBytes(bytes) { BrowserGateway.step(kelpie_browser_gateway_begin(handle, $0)) }
    }

    public func beginMCP(utf8 bytes: [UInt8]) -> String {
        BrowserGateway.withCBytes(bytes) { BrowserGateway.step(kelpie_browser_gateway_begin_mcp(handle, $0)) }
    }

    public func advance(utf8 bytes: [UInt8]) -> String {
        BrowserGateway.withCBytes(bytes) { BrowserGateway.step(kelpie_browser_gateway_advance(handle, $0)) }
    }

    public func cancel(utf8 bytes: [UInt8]) -> String {
        BrowserGateway.withCBytes(bytes) { BrowserGateway.step(kelpie_browser_gateway_cancel(handle, $0)) }
    }

    // MARK: strings across the boundary

    /// Reads a returned string as UTF-8 and frees it (exactly once, in a defer). NULL (malloc failed in
    /// the library) becomes nil.
    static func take(_ p: UnsafeMutablePointer<CChar>?) -> String? {
        guard let p else { return nil }
        defer { kelpie_mcp_free_string(p) }
        let n = strlen(p)
        return p.withMemoryRebound(to: UInt8.self, capacity: n) {
            String(decoding: UnsafeBufferPointer(start: $0, count: n), as: UTF8.self)
        }
    }

    /// A step-returning call's answer; NULL (out of memory in the library) becomes a rejected INTERNAL step.
    static func step(_ p: UnsafeMutablePointer<CChar>?) -> String {
        take(p) ?? #"{"step":"rejected","error":{"code":"INTERNAL","message":"the library returned NULL (out of memory)"}}"#
    }

    /// A Swift string as NUL-terminated UTF-8 for the duration of `body`. Swift strings are always valid
    /// Unicode scalars (no lone surrogates); an embedded U+0000 is sent as U+0001 (see the byte variants).
    static func withCText<R>(_ s: String, _ body: (UnsafePointer<CChar>) -> R) -> R {
        if s.utf8.contains(0) {
            return withCBytes(Array(s.utf8), body)
        }
        return s.withCString(body)
    }

    static func withCBytes<R>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) -> R) -> R {
        var buf = bytes.map { $0 == 0 ? 1 : $0 }
        buf.append(0)
        return buf.withUnsafeBufferPointer { b in
            b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) { body($0) }
        }
    }

    static func configError(_ errText: String?) -> GatewayError {
        let text = errText ?? ""
        if let obj = try? JSONValue.parse(text).objectValue, let e = obj["error"]?.objectValue {
            return GatewayError(
                kind: .config, code: e["code"]?.stringValue ?? "INTERNAL",
                message: e["message"]?.stringValue ?? text, envelopeJSON: text)
        }
        let message = errText ?? "create failed without an error envelope"
        let envelope = JSONValue.object([
            "version": .int(1), "id": .null, "success": .bool(false),
            "error": .object(["code": .string("INTERNAL"), "message": .string(message), "retryable": .bool(false)]),
            "mayHaveCompleted": .bool(false),
        ])
        return GatewayError(kind: .config, code: "INTERNAL", message: message, envelopeJSON: envelope.jsonText)
    }
}

// MARK: - convenience inputs (still raw text out)

/// Reasons accepted by cancel (CONTRACT.md §5).
public enum CancelReason: String, Sendable, Codable {
    case timeout
    case cancelled
    case rendererClosed = "renderer-closed"
}

extension BrowserGateway {
    /// advance(`{"transaction":T,"seq":n,"result":<handlerResultJSON verbatim>}`).
    public func advance(transaction: String, seq: Int, result handlerResultJSON: String) -> String {
        advance(Step.resultJSON(transaction: transaction, seq: seq, result: handlerResultJSON))
    }

    /// cancel(`{"transaction":T,"reason":…}`).
    public func cancel(transaction: String, reason: CancelReason) -> String {
        cancel(#"{"transaction":\#(JSONValue.quote(transaction)),"reason":"\#(reason.rawValue)"}"#)
    }

    /// Report that a cancelled dispatch's renderer callback will never come:
    /// advance(`{"transaction":T,"retire":"renderer-closed"}`); answers `retired`.
    public func retire(transaction: String) -> String {
        advance(#"{"transaction":\#(JSONValue.quote(transaction)),"retire":"renderer-closed"}"#)
    }
}
