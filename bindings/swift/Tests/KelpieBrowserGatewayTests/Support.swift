// Helpers shared by the binding's tests.

import Foundation
import KelpieBrowserGateway
import XCTest

/// The repository root, from this file's path (bindings/swift/Tests/KelpieBrowserGatewayTests/…).
let repoRoot: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

let tabsConfig = #"{"nativeMethods":["get-tabs","new-tab","navigate","screenshot"]}"#
let tabsList = #"{"version":1,"id":"r1","method":"tabs.list","params":{}}"#
let tabsResult =
    #"{"success":true,"tabs":[{"tabId":"tab-1","generation":1,"url":"https://example.test/","title":"Example","active":true}]}"#

func screenshot(timeoutMs: Int = 10000) -> String {
    #"{"version":1,"id":"shot","method":"tab.screenshot","params":{"tabId":"tab-1","timeoutMs":\#(timeoutMs)}}"#
}

func navigate(timeoutMs: Int = 10000) -> String {
    #"{"version":1,"id":"nav","method":"tab.navigate","params":{"tabId":"tab-1","url":"https://example.test/next","timeoutMs":\#(timeoutMs)}}"#
}

let screenshotResult = #"{"success":true,"mimeType":"image/png","data":"iVBORw0KGgo=","width":1,"height":1}"#
let navigateResult = #"{"success":true,"tabId":"tab-1","generation":2,"url":"https://example.test/next"}"#

/// Prints a line the pytest wrapper collects (tests/swift): `INFO …`.
func info(_ s: String) {
    print("INFO \(s)")
    fflush(nil)
}

func parse(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [String: JSONValue] {
    guard let o = (try? JSONValue.parse(text))?.objectValue else {
        XCTFail("not a JSON object: \(text)", file: file, line: line)
        return [:]
    }
    return o
}

/// The step `s` parses to, when it is of the kind `pick` extracts; else the test fails (and this throws).
func expectStep<T>(
    _ step: Step, _ pick: (Step) -> T?, file: StaticString = #filePath, line: UInt = #line
) throws -> T {
    guard let t = pick(step) else {
        XCTFail("expected a \(T.self) step, got \(step.json)", file: file, line: line)
        throw Unexpected(text: "\(step.json)")
    }
    return t
}

func authorize(_ s: String, file: StaticString = #filePath, line: UInt = #line) throws -> Step.Authorize {
    try expectStep(Step(parsing: s), { if case .authorize(let a) = $0 { a } else { nil } }, file: file, line: line)
}

func dispatch(_ s: String, file: StaticString = #filePath, line: UInt = #line) throws -> Step.Dispatch {
    try expectStep(Step(parsing: s), { if case .dispatch(let d) = $0 { d } else { nil } }, file: file, line: line)
}

func complete(_ s: String, file: StaticString = #filePath, line: UInt = #line) throws -> Step.Complete {
    try complete(Step(parsing: s), file: file, line: line)
}

func complete(_ step: Step, file: StaticString = #filePath, line: UInt = #line) throws -> Step.Complete {
    try expectStep(step, { if case .complete(let c) = $0 { c } else { nil } }, file: file, line: line)
}

func rejected(_ s: String, file: StaticString = #filePath, line: UInt = #line) throws -> Step.Rejected {
    try expectStep(Step(parsing: s), { if case .rejected(let r) = $0 { r } else { nil } }, file: file, line: line)
}

struct Unexpected: Error {
    let text: String
}

/// A gate a fake renderer waits on; `open()` lets every waiter through (also later ones).
final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func open() {
        lock.lock()
        isOpen = true
        let w = waiters
        waiters = []
        lock.unlock()
        for c in w { c.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            lock.lock()
            if isOpen {
                lock.unlock()
                c.resume()
            } else {
                waiters.append(c)
                lock.unlock()
            }
        }
    }
}

/// A thread-safe counter / list for fake hosts.
final class Log<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    func append(_ t: T) {
        lock.lock()
        items.append(t)
        lock.unlock()
    }
    var all: [T] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}

/// Waits (polling, at most `seconds`) until `condition` holds.
func eventually(_ seconds: Double = 10, _ condition: () async -> Bool) async -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

func rssKiB() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }
    return -1
}
