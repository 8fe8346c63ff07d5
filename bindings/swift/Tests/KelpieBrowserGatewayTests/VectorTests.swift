// Every shared vector in fixtures/vectors, and each one's modern (2026-07-28) twin, replayed through the
// raw layer (fixtures/vectors/README.md):
// tools/vectors.py flattens each vector to a plan (one Python run for all), this test replays every plan
// through BrowserGateway's byte-exact calls, and tools/vectors.py checks the outputs (one more run).
// Each vector's verdict is printed as `VECTOR PASS name` / `VECTOR FAIL name: problems` (tests/swift
// reports each as its own pytest case).

import Foundation
import KelpieBrowserGateway
import XCTest

final class VectorTests: XCTestCase {
    func testEverySharedVectorReplaysThroughTheRawLayer() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kelpie-swift-vectors-\(getpid())")
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }

        let planned = try python(
            """
            import sys
            from tools import vectors
            for name, v in vectors.all_cases():
                with open(f"{sys.argv[1]}/{name}.plan", "wb") as f:
                    f.write(b"".join(line + b"\\n" for line in vectors.plan(v)))
                print(name)
            """, dir.path)
        let names = planned.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        XCTAssertGreaterThan(names.count, 1, "fixtures/vectors holds no shared vectors")

        for name in names {
            let plan = try Data(contentsOf: dir.appendingPathComponent("\(name).plan"))
            let out = try replay(plan: plan, name: name)
            try out.write(to: dir.appendingPathComponent("\(name).out"))
        }

        let verdicts = try python(
            """
            import sys
            from tools import vectors
            for name, v in vectors.all_cases():
                data = open(f"{sys.argv[1]}/{name}.out", "rb").read()
                lines = data[:-1].split(b"\\n") if data.endswith(b"\\n") else ([data] if data else [])
                problems = vectors.check(v, lines)
                print(f"VECTOR FAIL {name}: " + " | ".join(problems) if problems else f"VECTOR PASS {name}")
            """, dir.path)
        print(verdicts, terminator: "")
        fflush(nil)
        let lines = verdicts.split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.hasPrefix("VECTOR PASS ") }.count, names.count, "some vectors failed")
        for line in lines where line.hasPrefix("VECTOR FAIL ") { XCTFail(String(line)) }
    }

    /// One plan: `create J <config>` then `CALL KIND PAYLOAD` lines; one output line per call.
    private func replay(plan: Data, name: String) throws -> Data {
        var lines = plan.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        var out = Data()
        func emit(_ s: String) {
            out.append(contentsOf: Array(s.utf8))
            out.append(UInt8(ascii: "\n"))
        }
        let (c0, k0, config) = try split(Data(lines[0]))
        guard c0 == "create", k0 == "J" else { throw Unexpected(text: "\(name): the first plan line must be create J") }
        let gw: BrowserGateway
        do {
            gw = try BrowserGateway(configJSON: String(decoding: config, as: UTF8.self))
        } catch let e as GatewayError {
            emit(e.envelopeJSON ?? "\(e)")
            return out
        }
        for line in lines.dropFirst() {
            let (call, kind, payload) = try split(Data(line))
            let bytes = [UInt8](payload)
            let text: String? = kind == "N" ? nil : String(decoding: bytes, as: UTF8.self)
            switch call {
            case "begin": emit(gw.begin(utf8: bytes))
            case "begin_mcp": emit(gw.beginMCP(utf8: bytes))
            case "advance": emit(gw.advance(utf8: bytes))
            case "cancel": emit(gw.cancel(utf8: bytes))
            case "next": emit(gw.next(transaction: text))
            case "invalidate_refs":
                gw.invalidateRefs(tabId: text)
                emit("null")
            default: throw Unexpected(text: "\(name): unknown call \(call)")
            }
        }
        do { try gw.close() } catch { print("\(name): gateway left with a pending callback (\(error))") }
        return out
    }

    /// `CALL KIND PAYLOAD`, split on the first two spaces; the payload is the rest of the line.
    private func split(_ line: Data) throws -> (String, String, Data) {
        let bytes = [UInt8](line)
        guard let a = bytes.firstIndex(of: UInt8(ascii: " ")), bytes.count >= a + 3, bytes[a + 2] == UInt8(ascii: " ")
        else { throw Unexpected(text: "malformed plan line: \(String(decoding: bytes.prefix(80), as: UTF8.self))") }
        return (String(decoding: bytes[..<a], as: UTF8.self), String(decoding: [bytes[a + 1]], as: UTF8.self),
                Data(bytes[(a + 3)...]))
    }

    /// Runs the repository's virtualenv Python on `script` with the repository root on sys.path.
    private func python(_ script: String, _ args: String...) throws -> String {
        let p = Process()
        p.executableURL = repoRoot.appendingPathComponent(".venv/bin/python")
        p.arguments = ["-B", "-c", "import sys; sys.path.insert(0, \(JSONValue.quote(repoRoot.path)))\n" + script] + args
        p.currentDirectoryURL = repoRoot
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "python failed")
        return String(decoding: data, as: UTF8.self)
    }
}
