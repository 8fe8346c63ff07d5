// The raw layer (BrowserGateway) and the typed steps over the real library.

import Foundation
import KelpieBrowserGateway
import XCTest

final class RawLayerTests: XCTestCase {
    func testVersionIsTheLibrarys() {
        let v = BrowserGateway.version
        XCTAssertFalse(v.isEmpty)
        XCTAssertTrue(v.first!.isNumber, "version \(v)")
        info("library version \(v)")
    }

    func testInitRefusesBadConfigWithTheEnvelope() {
        XCTAssertThrowsError(try BrowserGateway(configJSON: #"{"nativeMethods":["get-tabs"],"targeting":"sideways"}"#)) {
            error in
            guard let e = error as? GatewayError else { return XCTFail("not a GatewayError: \(error)") }
            XCTAssertEqual(e.kind, .config)
            XCTAssertEqual(e.code, "INVALID_REQUEST")
            XCTAssertTrue(e.message.hasPrefix("/targeting"), e.message)
            XCTAssertTrue("\(e)".contains(e.message), "description \(e) lacks the message")
            let env = parse(e.envelopeJSON ?? "")
            XCTAssertEqual(env["success"], false)
            XCTAssertEqual(env["mayHaveCompleted"], false)
            XCTAssertEqual(env["error"]?["code"], "INVALID_REQUEST")
        }
        XCTAssertThrowsError(try BrowserGateway(configJSON: "{not json")) { error in
            XCTAssertEqual((error as? GatewayError)?.code, "INVALID_JSON")
        }
    }

    func testSimpleTransactionThroughTypedSteps() throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        XCTAssertEqual(Step(parsing: gw.next()).json, ["step": "idle"])
        let a = try authorize(gw.begin(tabsList))
        XCTAssertEqual(a.method, "tabs.list")
        XCTAssertEqual(a.lane, "direct")
        XCTAssertFalse(a.mutates)
        XCTAssertEqual(a.request["id"], "r1")
        XCTAssertEqual(Step(parsing: gw.next(transaction: a.transaction)), .authorize(a), "next re-reads the step")
        let d = try dispatch(gw.advance(a.admit()))
        XCTAssertEqual(d.method, "get-tabs")
        XCTAssertEqual(d.params, .object([:]))
        XCTAssertEqual(d.seq, a.seq + 1)
        let c = try complete(gw.advance(d.resultFor(tabsResult)))
        XCTAssertEqual(c.transaction, a.transaction)
        XCTAssertEqual(c.success, true)
        let env = try XCTUnwrap(c.envelope)
        XCTAssertEqual(env.id, "r1")
        XCTAssertEqual(env.result?["tabs"]?.arrayValue?.first?["tabId"], "tab-1")
        XCTAssertNotNil(c.audit)
        XCTAssertEqual(Step(parsing: gw.next()).kind, "idle")
        try gw.close()
        XCTAssertTrue(gw.isClosed)
    }

    func testTypedStepsRoundTrip() throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        var texts: [String] = []
        let a = gw.begin(screenshot(timeoutMs: 50))
        texts.append(a)
        let d = gw.advance(try authorize(a).admit())
        texts.append(d)
        texts.append(gw.begin(tabsList))  // BUSY: complete with transaction null
        let tx = try dispatch(d).transaction
        texts.append(gw.cancel(transaction: tx, reason: .timeout))
        texts.append(gw.next())  // idle + awaitingRetirement
        texts.append(gw.advance(try dispatch(d).resultFor(screenshotResult)))  // retired
        texts.append(gw.advance(try dispatch(d).resultFor(screenshotResult)))  // rejected STALE_STEP
        texts.append(gw.beginMCP(#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#))  // 202
        let kinds = texts.map { Step(parsing: $0).kind }
        XCTAssertEqual(kinds, ["authorize", "dispatch", "complete", "complete", "idle", "retired", "rejected", "complete"])
        guard case .idle(let idle) = Step(parsing: texts[4]), let waiting = idle.awaitingRetirement else {
            return XCTFail("idle without awaitingRetirement: \(texts[4])")
        }
        XCTAssertEqual(waiting.transaction, tx)
        let encoder = JSONEncoder()
        for text in texts {
            let step = Step(parsing: text)
            let again = try JSONDecoder().decode(Step.self, from: encoder.encode(step))
            XCTAssertEqual(again, step, "Step round trip of \(text)")
            XCTAssertEqual(try JSONValue.parse(String(decoding: encoder.encode(step), as: UTF8.self)),
                           try JSONValue.parse(text), "encoded step differs from the library's text")
        }
        let busy = try complete(texts[2])
        XCTAssertNotEqual(busy.transaction, tx, "BUSY is its own refused transaction")
        let env = try XCTUnwrap(busy.envelope)
        let envAgain = try JSONDecoder().decode(Envelope.self, from: JSONEncoder().encode(env))
        XCTAssertEqual(envAgain, env)
        XCTAssertEqual(envAgain.error?.code, "BUSY")
        XCTAssertEqual(try complete(texts[7]).httpStatus, 202)
        XCTAssertEqual(try complete(texts[7]).response, .null)
        XCTAssertEqual(Step(parsing: "not json").kind, "rejected", "text that is no step becomes a value")
        try gw.close()
    }

    func testBusyWhileATransactionIsActive() throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let a = try authorize(gw.begin(tabsList))
        let busy = try complete(gw.begin(tabsList))
        XCTAssertEqual(busy.errorCode, "BUSY")
        XCTAssertEqual(busy.envelope?.error?.retryable, true)
        XCTAssertEqual(busy.mayHaveCompleted, false)
        XCTAssertEqual(Step(parsing: gw.next(transaction: a.transaction)), .authorize(a), "BUSY left it untouched")
        let d = try dispatch(gw.advance(a.admit()))
        XCTAssertEqual(try complete(gw.advance(d.resultFor(tabsResult))).success, true)
        try gw.close()
    }

    func testStaleDuplicateForgedAndMalformedResultsAreRejected() throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let a = try authorize(gw.begin(tabsList))
        let d = try dispatch(gw.advance(a.admit()))
        XCTAssertEqual(try rejected(gw.advance(a.admit())).code, "STALE_STEP", "duplicate authorize result")
        XCTAssertEqual(
            try rejected(gw.advance(transaction: d.transaction, seq: d.seq + 7, result: tabsResult)).code, "STALE_STEP",
            "forged seq")
        XCTAssertEqual(
            try rejected(gw.advance(transaction: "t999", seq: d.seq, result: tabsResult)).code, "STALE_STEP",
            "forged transaction")
        XCTAssertEqual(try rejected(gw.advance("{not json")).code.isEmpty, false)
        XCTAssertEqual(try rejected(gw.cancel(#"{"transaction":1}"#)).code, "INVALID_REQUEST")
        XCTAssertEqual(Step(parsing: gw.next(transaction: d.transaction)), .dispatch(d), "nothing changed")
        XCTAssertEqual(try complete(gw.advance(d.resultFor(tabsResult))).success, true)
        XCTAssertEqual(try rejected(gw.advance(d.resultFor(tabsResult))).code, "STALE_STEP", "late duplicate")
        try gw.close()
    }

    func testCancelDuringAuthorizeIsARefusal() throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let a = try authorize(gw.begin(navigate()))
        XCTAssertTrue(a.mutates)
        let c = try complete(gw.cancel(transaction: a.transaction, reason: .cancelled))
        XCTAssertEqual(c.errorCode, "CANCELLED")
        XCTAssertEqual(c.mayHaveCompleted, false)
        XCTAssertEqual(Step(parsing: gw.next()).kind, "idle")
        try gw.close()
    }

    func testCancelledMutationIsUnknownOutcomeAndTheLateResultRetires() throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let a = try authorize(gw.begin(navigate()))
        let d = try dispatch(gw.advance(a.admit()))
        XCTAssertTrue(d.mutates)
        let c = try complete(gw.cancel(transaction: d.transaction, reason: .timeout))
        XCTAssertEqual(c.errorCode, "TIMEOUT")
        XCTAssertEqual(c.mayHaveCompleted, true, "a dispatched mutation that was cancelled may have happened")
        XCTAssertEqual(try complete(gw.begin(tabsList)).errorCode, "BUSY", "the lane stays exclusive until retired")
        XCTAssertThrowsError(try gw.close()) { error in
            XCTAssertEqual((error as? GatewayError)?.kind, .pending)
        }
        XCTAssertFalse(gw.isClosed)
        guard case .retired(let r) = Step(parsing: gw.advance(d.resultFor(navigateResult))) else {
            return XCTFail("the late result did not retire the lane")
        }
        XCTAssertEqual(r.transaction, d.transaction)
        XCTAssertEqual(try rejected(gw.advance(d.resultFor(navigateResult))).code, "STALE_STEP")
        // the lane is free, and after an unknown outcome the next mutation of that tab needs a fresh look
        let again = try complete(gw.begin(navigate()))
        XCTAssertEqual(again.errorCode, "RECONCILE_REQUIRED")
        XCTAssertEqual(again.mayHaveCompleted, false)
        try gw.close()
    }

    func testCancelledReadCanBeRetiredAsRendererClosed() throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let d = try dispatch(gw.advance(try authorize(gw.begin(screenshot())).admit()))
        let c = try complete(gw.cancel(transaction: d.transaction, reason: .cancelled))
        XCTAssertEqual(c.errorCode, "CANCELLED")
        XCTAssertEqual(c.mayHaveCompleted, false)
        XCTAssertThrowsError(try gw.close())
        guard case .retired = Step(parsing: gw.retire(transaction: d.transaction)) else {
            return XCTFail("retire did not answer retired")
        }
        let a = try authorize(gw.begin(tabsList))  // the lane is free again
        XCTAssertEqual(try complete(gw.advance(try dispatch(gw.advance(a.admit())).resultFor(tabsResult))).success, true)
        XCTAssertNoThrow(try gw.close())
    }

    func testClosedGatewayRefusesAsValues() throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        try gw.close()
        try gw.close()  // idempotent
        XCTAssertEqual(try complete(gw.begin(tabsList)).errorCode, "INVALID_REQUEST")
        XCTAssertEqual(try complete(gw.beginMCP(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)).errorCode, "-32600")
        XCTAssertEqual(try rejected(gw.next()).code, "INVALID_REQUEST")
        XCTAssertEqual(try rejected(gw.advance(#"{"transaction":"t1","seq":1,"result":{"success":true}}"#)).code,
                       "INVALID_REQUEST")
        XCTAssertEqual(gw.invalidateRefs(), .invalid)
        XCTAssertEqual(gw.invalidateRefs(tabId: "tab-1"), .invalid)
    }

    func testUnicodeEmbeddedNulAndInvalidBytes() throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let id = "k-🦭-é-\u{10FFFF}-\"quoted\"\\"
        let req = #"{"version":1,"id":\#(JSONValue.quote(id)),"method":"tabs.list","params":{}}"#
        let a = try authorize(gw.begin(req))
        XCTAssertEqual(a.request["id"]?.stringValue, id)
        let d = try dispatch(gw.advance(a.admit()))
        let title = "Ünïcödé 🦭 \u{1F600} ✓"
        let result = #"{"success":true,"tabs":[{"tabId":"tab-1","generation":1,"url":"https://example.test/","title":\#(JSONValue.quote(title)),"active":true}]}"#
        let c = try complete(gw.advance(d.resultFor(result)))
        XCTAssertEqual(c.envelope?.result?["tabs"]?.arrayValue?.first?["title"]?.stringValue, title)
        XCTAssertEqual(c.envelope?.id.stringValue, id)
        // an embedded NUL must not let the library act on a valid prefix
        let nul = try complete(gw.begin(tabsList + "\u{0}garbage"))
        XCTAssertEqual(nul.errorCode, "INVALID_JSON")
        XCTAssertEqual(gw.invalidateRefs(tabId: "tab\u{0}1"), .ok)
        // invalid UTF-8 bytes through the byte-exact variants
        XCTAssertEqual(try complete(gw.begin(utf8: [0x7B, 0xFF, 0x7D])).errorCode, "INVALID_JSON")
        XCTAssertEqual(try complete(gw.beginMCP(utf8: [0xFF, 0xFE, 0x7B, 0x7D])).errorCode, "-32700")
        XCTAssertEqual(try complete(gw.begin(utf8: Array(tabsList.utf8) + [0] + Array("x".utf8))).errorCode,
                       "INVALID_JSON")
        try gw.close()
    }

    func testMCPInitializeNotificationAndErrors() throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let initialize = try complete(gw.beginMCP(
            #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"swift-test","version":"1"}}}"#))
        XCTAssertEqual(initialize.success, true)
        XCTAssertEqual(initialize.response["result"]?["protocolVersion"], "2025-06-18")
        let note = try complete(gw.beginMCP(#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#))
        XCTAssertEqual(note.httpStatus, 202)
        XCTAssertEqual(note.responseJSON, "null")
        let list = try complete(gw.beginMCP(#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#))
        let names = list.response["result"]?["tools"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
        XCTAssertTrue(names.contains("kelpie_browser_control"), "\(names)")
        XCTAssertEqual(try complete(gw.beginMCP(#"{"jsonrpc":"2.0","id":3,"method":"nope"}"#)).errorCode, "-32601")
        XCTAssertEqual(try complete(gw.beginMCP("{")).errorCode, "-32700")
        try gw.close()
    }

    func testInvalidateRefsFromAnotherThreadDuringATransaction() throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let a = try authorize(gw.begin(tabsList))
        let codes = Log<GatewayResultCode>()
        let done = DispatchSemaphore(value: 0)
        let t = Thread {
            for i in 0..<200 { codes.append(gw.invalidateRefs(tabId: i % 2 == 0 ? "tab-1" : nil)) }
            done.signal()
        }
        t.start()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success, "invalidateRefs blocked behind a transaction")
        XCTAssertEqual(codes.all.count, 200)
        XCTAssertTrue(codes.all.allSatisfy { $0 == .ok })
        let d = try dispatch(gw.advance(a.admit()))
        XCTAssertEqual(try complete(gw.advance(d.resultFor(tabsResult))).success, true)
        try gw.close()
    }
}
