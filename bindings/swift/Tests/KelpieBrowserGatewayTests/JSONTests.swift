// JSONValue: the strict parser and the writer the typed layer uses for every step.

import Foundation
import KelpieBrowserGateway
import XCTest

final class JSONTests: XCTestCase {
    func testParsesEveryKindAndKeepsIntegersExact() throws {
        let v = try JSONValue.parse(#" {"a":[1,-0,9223372036854775807,1.5,-2e3,true,false,null],"b":{"c":"d"}} "#)
        XCTAssertEqual(v["a"], [1, 0, .int(Int64.max), .double(1.5), .double(-2000), true, false, nil])
        XCTAssertEqual(v["b"]?["c"], "d")
        XCTAssertEqual(try JSONValue.parse("18446744073709551616"), .double(18446744073709551616), "beyond Int64")
        XCTAssertEqual(try JSONValue.parse(#"{"k":1,"k":2}"#)["k"], 2, "duplicate keys: the last wins")
        XCTAssertEqual(try JSONValue.parse("0.0"), .double(0))
        XCTAssertEqual(JSONValue.int(0), .double(0.0), "one number type")
        XCTAssertEqual(Set<JSONValue>([.int(3), .double(3.0)]).count, 1)
        XCTAssertNotEqual(JSONValue.int(0), .double(0.5))
    }

    func testEscapesAndSurrogatePairs() throws {
        XCTAssertEqual(try JSONValue.parse(#""\"\\\/\b\f\n\r\t\u0041\u00e9""#), "\"\\/\u{8}\u{c}\n\r\tAé")
        XCTAssertEqual(try JSONValue.parse(#""\ud83e\uddad""#), "🦭", "an escaped pair is one scalar")
        XCTAssertEqual(try JSONValue.parse(#""🦭 raw é""#), "🦭 raw é")
        XCTAssertEqual(try JSONValue.parse(#""\ud83e x""#), "\u{FFFD} x", "a lone surrogate escape becomes U+FFFD")
        XCTAssertEqual(try JSONValue.parse(#""\udead\u0041""#), "\u{FFFD}A")
    }

    func testRefusesWhatRFC8259Refuses() {
        for bad in ["", " ", "{", "[1,]", #"{"a":1,}"#, "01", "1.", ".5", "1e", "+1", "NaN", "tru", "nul",
                    "\"abc", "\"a\u{1}b\"", #""\x""#, #""\u12G4""#, "[1] 2", "{'a':1}", "// c\n1", #"{"a" 1}"#]
        {
            XCTAssertThrowsError(try JSONValue.parse(bad), "accepted \(bad.debugDescription)")
        }
        let deep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        XCTAssertThrowsError(try JSONValue.parse(deep), "nesting deeper than 512")
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        XCTAssertNoThrow(try JSONValue.parse(ok))
    }

    func testWriterRoundTripsAndAgreesWithFoundation() throws {
        let v: JSONValue = ["z": [1, 2.5, "x\u{0}y\n\"q\"", nil, true], "a": ["é🦭": false], "m": .double(-0.001)]
        let text = v.jsonText
        XCTAssertEqual(text, #"{"a":{"é🦭":false},"m":-0.001,"z":[1,2.5,"x\u0000y\n\"q\"",null,true]}"#)
        XCTAssertEqual(try JSONValue.parse(text), v)
        let foundation = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        XCTAssertEqual((foundation?["z"] as? [Any])?.count, 5, "Foundation reads the writer's text")
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        XCTAssertEqual(decoded, v, "the Codable path agrees with the parser")
    }
}
