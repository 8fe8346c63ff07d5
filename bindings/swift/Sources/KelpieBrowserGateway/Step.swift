// Typed steps (CONTRACT.md §5) and envelopes (§4).
//
// Every typed step keeps the whole step object (`json`), so a step encodes back to exactly what the
// library said (fields this binding does not know included); the typed properties are read from it.

import Foundation

/// A step of a transaction, decoded from the JSON text the raw layer returns.
public enum Step: Sendable, Hashable, Codable {
    case authorize(Authorize)
    case dispatch(Dispatch)
    case complete(Complete)
    case idle(Idle)
    case rejected(Rejected)
    case retired(Retired)

    /// Parses step text. Never throws: text that is not a step (which the library never returns) becomes
    /// a rejected step with code INTERNAL whose message quotes the start of the text.
    public init(parsing text: String) {
        do {
            guard let json = try JSONValue.parse(text).objectValue else { throw StepError.missing("step") }
            self = try Step(json: json)
        } catch {
            self = .rejected(Rejected(internal: "the library returned text that is not a step (\(error))", raw: text))
        }
    }

    public init(from decoder: Decoder) throws {
        do {
            self = try Step(json: try [String: JSONValue](from: decoder))
        } catch let e as StepError {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "\(e)"))
        }
    }

    /// A step from its parsed object; throws when a required field is missing or mistyped.
    public init(json: [String: JSONValue]) throws {
        let kind = json["step"]?.stringValue
        switch kind {
        case "authorize": self = .authorize(try Authorize(json: json))
        case "dispatch": self = .dispatch(try Dispatch(json: json))
        case "complete": self = .complete(try Complete(json: json))
        case "idle": self = .idle(Idle(json: json))
        case "rejected": self = .rejected(try Rejected(json: json))
        case "retired": self = .retired(Retired(json: json))
        default: throw StepError.unknownKind(kind ?? "(none)")
        }
    }

    public func encode(to encoder: Encoder) throws { try json.encode(to: encoder) }

    /// The whole step object.
    public var json: [String: JSONValue] {
        switch self {
        case .authorize(let s): return s.json
        case .dispatch(let s): return s.json
        case .complete(let s): return s.json
        case .idle(let s): return s.json
        case .rejected(let s): return s.json
        case .retired(let s): return s.json
        }
    }

    /// "authorize", "dispatch", "complete", "idle", "rejected" or "retired".
    public var kind: String { json["step"]?.stringValue ?? "" }

    /// The transaction this step belongs to (nil for idle and rejected steps, and for refusals made
    /// before a transaction existed).
    public var transaction: String? { json["transaction"]?.stringValue }

    /// The advance input `{"transaction":T,"seq":n,"result":<result verbatim>}`.
    public static func resultJSON(transaction: String, seq: Int, result: String) -> String {
        #"{"transaction":\#(JSONValue.quote(transaction)),"seq":\#(seq),"result":\#(result)}"#
    }

    /// A native endpoint's failure result `{success:false,error:{code,message}[,mayHaveCompleted]}`;
    /// `mayHaveCompleted: false` promises that nothing took effect.
    public static func failureResult(code: String, message: String, mayHaveCompleted: Bool? = nil) -> String {
        var o: [String: JSONValue] = [
            "success": false, "error": .object(["code": .string(code), "message": .string(message)]),
        ]
        if let mayHaveCompleted { o["mayHaveCompleted"] = .bool(mayHaveCompleted) }
        return JSONValue.object(o).jsonText
    }

    // MARK: kinds

    /// `authorize`: apply the host's policy, then advance ``admit()`` or ``refuse(_:)``.
    public struct Authorize: Sendable, Hashable {
        public let json: [String: JSONValue]
        public let transaction: String
        public let seq: Int
        /// "direct", "recovery" or "dedicated:<extension name>".
        public let lane: String
        /// The normalized canonical request.
        public let request: JSONValue
        public let mutates: Bool
        /// `{tabId, generation}` or nil.
        public let target: JSONValue?

        init(json: [String: JSONValue]) throws {
            self.json = json
            transaction = try need(json, "transaction", \.stringValue)
            seq = try need(json, "seq", \.intValue)
            lane = try need(json, "lane", \.stringValue)
            request = try need(json, "request", { $0.objectValue.map(JSONValue.object) })
            mutates = try need(json, "mutates", \.boolValue)
            target = json["target"].flatMap { $0.isNull ? nil : $0 }
        }

        /// The canonical method being authorized.
        public var method: String? { request["method"]?.stringValue }
        /// The advance input that admits this transaction.
        public func admit() -> String { Step.resultJSON(transaction: transaction, seq: seq, result: #"{"success":true}"#) }
        /// The advance input that refuses it (NOT_AUTHORIZED: completes refused, nothing dispatched).
        public func refuse(_ message: String) -> String {
            Step.resultJSON(
                transaction: transaction, seq: seq,
                result: Step.failureResult(code: "NOT_AUTHORIZED", message: message))
        }
    }

    /// `dispatch`: invoke native endpoint `method` with `params` exactly once, within `timeoutMs`, and pass
    /// its `{success:…}` result to advance (``resultFor(_:)``).
    public struct Dispatch: Sendable, Hashable {
        public let json: [String: JSONValue]
        public let transaction: String
        public let seq: Int
        public let method: String
        public let params: JSONValue
        public let mutates: Bool
        public let timeoutMs: Int
        /// `next` marks a dispatch whose `timeoutMs` has passed: the host must cancel it.
        public var overdue: Bool { json["overdue"]?.boolValue ?? false }

        init(json: [String: JSONValue]) throws {
            self.json = json
            transaction = try need(json, "transaction", \.stringValue)
            seq = try need(json, "seq", \.intValue)
            method = try need(json, "method", \.stringValue)
            params = try need(json, "params", { $0.objectValue.map(JSONValue.object) })
            mutates = try need(json, "mutates", \.boolValue)
            timeoutMs = try need(json, "timeoutMs", \.intValue)
        }

        /// `params` as JSON text.
        public var paramsJSON: String { params.jsonText }
        /// The advance input carrying the handler's result JSON text (embedded verbatim).
        public func resultFor(_ handlerResultJSON: String) -> String {
            Step.resultJSON(transaction: transaction, seq: seq, result: handlerResultJSON)
        }
    }

    /// `complete`: terminal. Return `response` to the caller (an envelope, a JSON-RPC response, or null
    /// for an MCP notification, which carries `httpStatus` 202).
    public struct Complete: Sendable, Hashable {
        public let json: [String: JSONValue]
        /// nil for refusals made before a transaction existed (bad handle, oversize input).
        public let transaction: String?
        public let seq: Int?
        public let response: JSONValue
        public let audit: JSONValue?
        public let httpStatus: Int?

        init(json: [String: JSONValue]) throws {
            self.json = json
            transaction = json["transaction"]?.stringValue
            seq = json["seq"]?.intValue
            guard let r = json["response"] else { throw StepError.missing("response") }
            response = r
            audit = json["audit"]
            httpStatus = json["httpStatus"]?.intValue
        }

        /// The response as JSON text ("null" for a notification).
        public var responseJSON: String { response.jsonText }
        /// The canonical envelope, when the response is one (not for JSON-RPC responses).
        public var envelope: Envelope? {
            guard response["version"] != nil, response["success"] != nil else { return nil }
            return Envelope(json: response)
        }
        /// Envelope `success`; for JSON-RPC: true when the response has a `result`.
        public var success: Bool? {
            if let s = response["success"]?.boolValue { return s }
            if response["jsonrpc"] != nil { return response["result"] != nil }
            return nil
        }
        /// Envelope error code ("BUSY", …), or the JSON-RPC error code as text ("-32601").
        public var errorCode: String? {
            guard let c = response["error"]?["code"] else { return nil }
            return c.stringValue ?? c.jsonText
        }
        public var mayHaveCompleted: Bool? { response["mayHaveCompleted"]?.boolValue }
    }

    /// `idle` from next: nothing pending on that lane, except perhaps a cancelled dispatch's callback.
    public struct Idle: Sendable, Hashable {
        public let json: [String: JSONValue]
        init(json: [String: JSONValue]) { self.json = json }
        /// Present while a cancelled dispatch's renderer callback is still out.
        public var awaitingRetirement: AwaitingRetirement? {
            json["awaitingRetirement"]?.objectValue.flatMap(AwaitingRetirement.init(json:))
        }
    }

    /// What `idle` says about a cancelled dispatch that has not retired yet (CONTRACT.md §5, v1.1).
    public struct AwaitingRetirement: Sendable, Hashable {
        public let json: [String: JSONValue]
        public let transaction: String
        public let seq: Int
        init?(json: [String: JSONValue]) {
            guard let t = json["transaction"]?.stringValue, let s = json["seq"]?.intValue else { return nil }
            self.json = json
            transaction = t
            seq = s
        }
        /// The native endpoint and tab of the stuck dispatch, when the library says.
        public var method: String? { json["method"]?.stringValue }
        public var tabId: String? { json["tabId"]?.stringValue }
        /// Set by the library once `timeoutMs` + the retirement grace have passed.
        public var overdue: Bool { json["overdue"]?.boolValue ?? false }
    }

    /// `rejected`: the input was refused and nothing changed (STALE_STEP, INVALID_REQUEST, …).
    public struct Rejected: Sendable, Hashable {
        public let json: [String: JSONValue]
        public let code: String
        public let message: String

        init(json: [String: JSONValue]) throws {
            self.json = json
            guard let e = json["error"]?.objectValue, let c = e["code"]?.stringValue else {
                throw StepError.missing("error.code")
            }
            code = c
            message = e["message"]?.stringValue ?? ""
        }

        init(internal message: String, raw: String) {
            let full = raw.isEmpty ? message : "\(message); text starts: \(raw.prefix(200))"
            json = ["step": "rejected", "error": .object(["code": "INTERNAL", "message": .string(full)])]
            code = "INTERNAL"
            self.message = full
        }
    }

    /// `retired`: a late result after a cancel was discarded (or the dispatch was reported gone) and the
    /// lane is free again.
    public struct Retired: Sendable, Hashable {
        public let json: [String: JSONValue]
        public var transaction: String? { json["transaction"]?.stringValue }
        public var seq: Int? { json["seq"]?.intValue }
        init(json: [String: JSONValue]) { self.json = json }
    }
}

/// Why an object is not a step.
public enum StepError: Error, CustomStringConvertible, Sendable {
    case missing(String)
    case unknownKind(String)
    public var description: String {
        switch self {
        case .missing(let f): return "missing or mistyped field \(f)"
        case .unknownKind(let k): return "unknown step kind \(k)"
        }
    }
}

private func need<T>(_ json: [String: JSONValue], _ key: String, _ get: (JSONValue) -> T?) throws -> T {
    guard let v = json[key], let t = get(v) else { throw StepError.missing(key) }
    return t
}

// MARK: - envelopes (CONTRACT.md §4)

/// The versioned envelope: `{"version":1,"id":…,"success":true,"result":{…}}` or
/// `{"version":1,"id":…,"success":false,"error":{code,message,retryable},"mayHaveCompleted":bool}`.
public struct Envelope: Sendable, Hashable, Codable {
    public struct ErrorBody: Sendable, Hashable, Codable {
        public let code: String
        public let message: String
        public let retryable: Bool
    }

    public let version: Int
    /// The request's id (string, number or null).
    public let id: JSONValue
    public let success: Bool
    public let result: JSONValue?
    public let error: ErrorBody?
    /// Present on failures: true = unknown outcome (observe before acting again, never resend).
    public let mayHaveCompleted: Bool?

    enum CodingKeys: String, CodingKey { case version, id, success, result, error, mayHaveCompleted }

    /// The envelope in a parsed response, or nil when it is not one (e.g. a JSON-RPC response).
    public init?(json: JSONValue) {
        guard let v = json["version"]?.intValue, let ok = json["success"]?.boolValue else { return nil }
        version = v
        id = json["id"] ?? .null
        success = ok
        result = json["result"]
        if let e = json["error"] {
            guard let code = e["code"]?.stringValue else { return nil }
            error = ErrorBody(
                code: code, message: e["message"]?.stringValue ?? "", retryable: e["retryable"]?.boolValue ?? false)
        } else {
            error = nil
        }
        mayHaveCompleted = json["mayHaveCompleted"]?.boolValue
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(Int.self, forKey: .version)
        id = try c.decodeIfPresent(JSONValue.self, forKey: .id) ?? .null
        success = try c.decode(Bool.self, forKey: .success)
        result = try c.decodeIfPresent(JSONValue.self, forKey: .result)
        error = try c.decodeIfPresent(ErrorBody.self, forKey: .error)
        mayHaveCompleted = try c.decodeIfPresent(Bool.self, forKey: .mayHaveCompleted)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(version, forKey: .version)
        try c.encode(id, forKey: .id)
        try c.encode(success, forKey: .success)
        try c.encodeIfPresent(result, forKey: .result)
        try c.encodeIfPresent(error, forKey: .error)
        try c.encodeIfPresent(mayHaveCompleted, forKey: .mayHaveCompleted)
    }
}
