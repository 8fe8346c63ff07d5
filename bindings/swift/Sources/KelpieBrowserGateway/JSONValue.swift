// JSONValue: any JSON value, Codable, for the parts of a step whose shape belongs to the caller
// (requests, params, responses, audits). Parsing and writing go through Foundation's JSONDecoder and
// JSONEncoder; integers stay integers (Int64) and other numbers are Double.

import Foundation

public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else if let o = try? c.decode([String: JSONValue].self) {
            self = .object(o)
        } else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "not a JSON value")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    /// Parses one JSON text (RFC 8259, strict: no comments, no trailing commas, no leading zeros, no raw
    /// control characters in strings, nesting at most 512). An escaped lone surrogate becomes U+FFFD (a
    /// Swift string cannot hold it; the gateway itself never returns one). Throws ``JSONParseError``.
    /// Hand-written over the UTF-8 bytes: the typed layer parses every step, and Foundation's decoder
    /// made a step cost several times the library call itself (tools/bench_swift.sh).
    public static func parse(_ text: String) throws -> JSONValue {
        var text = text
        return try text.withUTF8 { buf in
            var p = JSONParser(buf)
            return try p.document()
        }
    }

    /// Compact JSON text (object keys sorted, so equal values give equal text; non-ASCII written raw).
    public var jsonText: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d): out += d.isFinite ? "\(d)" : "null"
        case .string(let s): out += JSONValue.quote(s)
        case .array(let a):
            out += "["
            for (i, v) in a.enumerated() {
                if i > 0 { out += "," }
                v.write(to: &out)
            }
            out += "]"
        case .object(let o):
            out += "{"
            for (i, k) in o.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                out += JSONValue.quote(k)
                out += ":"
                o[k]!.write(to: &out)
            }
            out += "}"
        }
    }

    /// JSON has one number type: `.int(1)` equals `.double(1.0)` (Foundation's encoder, for one, writes
    /// 0.0 as `0`), so a value equals itself after any encode/decode round trip.
    public static func == (l: JSONValue, r: JSONValue) -> Bool {
        switch (l, r) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)): return Int64(exactly: b) == a
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)): return a == b
        default: return false
        }
    }

    public func hash(into h: inout Hasher) {
        switch self {
        case .null: h.combine(0)
        case .bool(let b): h.combine(b)
        case .int(let i): h.combine(i)
        case .double(let d):
            if let i = Int64(exactly: d) { h.combine(i) } else { h.combine(d) }
        case .string(let s): h.combine(s)
        case .array(let a): h.combine(a)
        case .object(let o): h.combine(o)
        }
    }

    public subscript(key: String) -> JSONValue? { objectValue?[key] }

    public var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The integer value (also for a Double that is integral and fits).
    public var intValue: Int? {
        switch self {
        case .int(let i): return Int(exactly: i)
        case .double(let d): return Int(exactly: d)
        default: return nil
        }
    }

    public var isNull: Bool { self == .null }

    /// A JSON string literal for `s` (quotes, backslash and control characters escaped; the rest raw UTF-8).
    public static func quote(_ s: String) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    out += String(format: "\\u%04x", u.value)
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        out += "\""
        return out
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// Why a text is not JSON: the reason and the byte offset.
public struct JSONParseError: Error, CustomStringConvertible, Sendable {
    public let reason: String
    public let offset: Int
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// A strict recursive-descent JSON parser over UTF-8 bytes (the input comes from a Swift String, so it is
/// valid UTF-8).
struct JSONParser {
    private let b: UnsafeBufferPointer<UInt8>
    private var i = 0
    private var depth = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { b = bytes }

    mutating func document() throws -> JSONValue {
        let v = try value()
        skipSpace()
        if i != b.count { throw fail("text after the value") }
        return v
    }

    private func fail(_ reason: String) -> JSONParseError { JSONParseError(reason: reason, offset: i) }

    private mutating func skipSpace() {
        while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
    }

    private mutating func literal(_ word: StaticString, _ v: JSONValue) throws -> JSONValue {
        let n = word.utf8CodeUnitCount
        guard i + n <= b.count else { throw fail("truncated literal") }
        for k in 0..<n where b[i + k] != word.utf8Start[k] { throw fail("unexpected character") }
        i += n
        return v
    }

    private mutating func value() throws -> JSONValue {
        skipSpace()
        guard i < b.count else { throw fail("unexpected end") }
        switch b[i] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail("unexpected character")
        }
    }

    private mutating func nest() throws {
        depth += 1
        if depth > 512 { throw fail("nesting deeper than 512") }
    }

    private mutating func object() throws -> JSONValue {
        try nest()
        i += 1
        var o: [String: JSONValue] = [:]
        skipSpace()
        if i < b.count, b[i] == UInt8(ascii: "}") {
            i += 1
            depth -= 1
            return .object(o)
        }
        while true {
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let k = try string()
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            o[k] = try value()
            skipSpace()
            guard i < b.count else { throw fail("unexpected end in an object") }
            if b[i] == UInt8(ascii: ",") {
                i += 1
            } else if b[i] == UInt8(ascii: "}") {
                i += 1
                depth -= 1
                return .object(o)
            } else {
                throw fail("expected ',' or '}'")
            }
        }
    }

    private mutating func array() throws -> JSONValue {
        try nest()
        i += 1
        var a: [JSONValue] = []
        skipSpace()
        if i < b.count, b[i] == UInt8(ascii: "]") {
            i += 1
            depth -= 1
            return .array(a)
        }
        while true {
            a.append(try value())
            skipSpace()
            guard i < b.count else { throw fail("unexpected end in an array") }
            if b[i] == UInt8(ascii: ",") {
                i += 1
            } else if b[i] == UInt8(ascii: "]") {
                i += 1
                depth -= 1
                return .array(a)
            } else {
                throw fail("expected ',' or ']'")
            }
        }
    }

    private mutating func hex4() throws -> UInt32 {
        guard i + 4 <= b.count else { throw fail("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = b[i]
            let d: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - UInt8(ascii: "A") + 10
            default: throw fail("bad \\u escape")
            }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }

    private mutating func string() throws -> String {
        i += 1  // the opening quote
        let start = i
        // fast path: no escapes
        while i < b.count, b[i] != UInt8(ascii: "\""), b[i] != UInt8(ascii: "\\") {
            if b[i] < 0x20 { throw fail("raw control character in a string") }
            i += 1
        }
        guard i < b.count else { throw fail("unterminated string") }
        if b[i] == UInt8(ascii: "\"") {
            defer { i += 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
        }
        var bytes = Array(b[start..<i])
        while true {
            guard i < b.count else { throw fail("unterminated string") }
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return String(decoding: bytes, as: UTF8.self)
            }
            if c < 0x20 { throw fail("raw control character in a string") }
            if c != UInt8(ascii: "\\") {
                bytes.append(c)
                i += 1
                continue
            }
            i += 1
            guard i < b.count else { throw fail("unterminated escape") }
            let e = b[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): bytes.append(0x22)
            case UInt8(ascii: "\\"): bytes.append(0x5C)
            case UInt8(ascii: "/"): bytes.append(0x2F)
            case UInt8(ascii: "b"): bytes.append(0x08)
            case UInt8(ascii: "f"): bytes.append(0x0C)
            case UInt8(ascii: "n"): bytes.append(0x0A)
            case UInt8(ascii: "r"): bytes.append(0x0D)
            case UInt8(ascii: "t"): bytes.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800..<0xDC00).contains(scalar), i + 6 <= b.count, b[i] == UInt8(ascii: "\\"),
                    b[i + 1] == UInt8(ascii: "u")
                {
                    let save = i
                    i += 2
                    let low = try hex4()
                    if (0xDC00..<0xE000).contains(low) {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        i = save  // not a pair: the high surrogate stands alone
                    }
                }
                let u = Unicode.Scalar(scalar) ?? "\u{FFFD}"
                bytes.append(contentsOf: Array(String(Character(u)).utf8))
            default: throw fail("bad escape")
            }
        }
    }

    private mutating func number() throws -> JSONValue {
        let start = i
        var integral = true
        if b[i] == UInt8(ascii: "-") { i += 1 }
        guard i < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) else { throw fail("bad number") }
        if b[i] == UInt8(ascii: "0") {
            i += 1
        } else {
            while i < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) { i += 1 }
        }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            integral = false
            i += 1
            let f = i
            while i < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) { i += 1 }
            if i == f { throw fail("bad fraction") }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            integral = false
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            let e = i
            while i < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) { i += 1 }
            if i == e { throw fail("bad exponent") }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
        if integral, let v = Int64(text) { return .int(v) }
        guard let d = Double(text) else { throw fail("bad number") }
        return .double(d)
    }
}
