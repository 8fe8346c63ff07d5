// Many tasks on one gateway (with invalidateRefs from other threads), and a leak check.

import Foundation
import KelpieBrowserGateway
import XCTest

final class ConcurrencyAndLeakTests: XCTestCase {
    /// 8 tasks hammer one gateway while two threads invalidate refs: every begin is either a transaction
    /// driven to success with exactly one dispatch, or a BUSY refusal; no transaction is dispatched twice.
    func testEightTasksHammerOneGatewayWithInvalidateRefsFromOtherThreads() async throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let perTask = 400
        let stop = Log<Bool>()
        let invalidations = Log<GatewayResultCode>()
        let finished = DispatchSemaphore(value: 0)
        for k in 0..<2 {
            Thread {
                var i = 0
                while stop.all.isEmpty {
                    invalidations.append(gw.invalidateRefs(tabId: (i + k) % 3 == 0 ? nil : "tab-1"))
                    i += 1
                }
                finished.signal()
            }.start()
        }
        struct Tally: Sendable {
            var ok = 0, busy = 0, other: [String] = [], dispatched: [String] = []
        }
        let tallies = await withTaskGroup(of: Tally.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var t = Tally()
                    for _ in 0..<perTask {
                        switch Step(parsing: gw.begin(tabsList)) {
                        case .authorize(let a):
                            guard case .dispatch(let d) = Step(parsing: gw.advance(a.admit())) else {
                                t.other.append("no dispatch for \(a.transaction)")
                                continue
                            }
                            t.dispatched.append(d.transaction)
                            if case .complete(let c) = Step(parsing: gw.advance(d.resultFor(tabsResult))),
                                c.success == true
                            {
                                t.ok += 1
                            } else {
                                t.other.append("not completed: \(d.transaction)")
                            }
                        case .complete(let c) where c.errorCode == "BUSY":
                            t.busy += 1
                            await Task.yield()
                        case let s:
                            t.other.append("\(s.json)")
                        }
                    }
                    return t
                }
            }
            var all: [Tally] = []
            for await t in group { all.append(t) }
            return all
        }
        stop.append(true)
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success)
        let ok = tallies.map(\.ok).reduce(0, +)
        let busy = tallies.map(\.busy).reduce(0, +)
        let dispatched = tallies.flatMap(\.dispatched)
        XCTAssertEqual(tallies.flatMap(\.other), [])
        XCTAssertEqual(ok + busy, 8 * perTask, "every begin is accounted for")
        XCTAssertEqual(dispatched.count, ok)
        XCTAssertEqual(Set(dispatched).count, dispatched.count, "a transaction was dispatched twice")
        XCTAssertGreaterThan(ok, 0)
        XCTAssertGreaterThan(invalidations.all.count, 0)
        XCTAssertTrue(invalidations.all.allSatisfy { $0 == .ok })
        info("hammer: \(ok) transactions, \(busy) BUSY, \(invalidations.all.count) invalidations, 0 double dispatch")
        try gw.close()
    }

    /// 100,000 full transactions through the raw layer (every returned string freed by the binding):
    /// resident memory after a warm-up stays flat.
    func testNoLeakOverAHundredThousandTransactions() throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        // transaction and seq are cut out of the text: the loop measures the binding, not JSON decoding
        func advance(after step: String, result: String) -> String? {
            guard let t = step.range(of: #""transaction":"#), let q = step.range(of: #","seq":"#),
                let e = step[q.upperBound...].firstIndex(where: { $0 == "," || $0 == "}" })
            else { return nil }
            return gw.advance(#"{"transaction":\#(step[t.upperBound..<q.lowerBound]),"seq":\#(step[q.upperBound..<e]),"result":\#(result)}"#)
        }
        func one() -> Bool {
            guard let d = advance(after: gw.begin(tabsList), result: #"{"success":true}"#),
                let c = advance(after: d, result: tabsResult)
            else { return false }
            return c.hasPrefix(#"{"step":"complete""#) && c.contains(#""success":true"#)
        }
        var failures = 0
        for _ in 0..<5_000 { failures += one() ? 0 : 1 }
        let warm = rssKiB()
        let n = 100_000
        let t0 = Date()
        for _ in 0..<n { failures += one() ? 0 : 1 }
        let seconds = Date().timeIntervalSince(t0)
        let end = rssKiB()
        XCTAssertEqual(failures, 0)
        info("leak check: \(n) transactions in \(String(format: "%.1f", seconds)) s; RSS \(warm) KiB -> \(end) KiB (\(end - warm) KiB)")
        // A leaked step string per call would be ~3 x 300 bytes x 1e5 = ~90 MiB; allow allocator noise.
        XCTAssertLessThan(end - warm, 16 * 1024, "RSS grew by \(end - warm) KiB over \(n) transactions")
        try gw.close()
    }
}
