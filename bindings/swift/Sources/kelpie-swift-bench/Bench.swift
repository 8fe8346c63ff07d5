// Per-transaction cost through Swift vs C, measured side by side in one process (tools/bench_swift.sh).
//
//   kelpie-swift-bench [--transactions N]
//
// The same full transaction (tabs.list: authorize, dispatch get-tabs, complete) is run, interleaved in
// rounds so machine load hits every variant alike:
//   C        the C ABI called directly (const char* in, char* out, transaction/seq cut out with strstr)
//   raw      BrowserGateway (Swift String in/out), transaction/seq cut out of the text the same way
//   typed    BrowserGateway + Step(parsing:) for every step, inputs built with admit()/resultFor()
//   driver   GatewayDriver.run(request:handler:) (async, policy + handler closures, Task per dispatch)
// It prints the median per variant and its ratio to C.

import CKelpieBrowserGateway
import Foundation
import KelpieBrowserGateway

@main
struct Bench {
    static func main() async throws {
        let request = #"{"version":1,"method":"tabs.list","params":{}}"#
        let tabs =
            #"{"success":true,"tabs":[{"tabId":"t1","generation":1,"url":"https://example.test/","title":"Example","active":true}]}"#
        let config = #"{"nativeMethods":["get-tabs"]}"#

        var n = 20000
        var args = CommandLine.arguments.dropFirst()
        while let a = args.popFirst() {
            if a == "--transactions", let v = args.popFirst(), let i = Int(v) { n = max(1000, i) }
        }

        func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

        /// `"transaction":"tN","seq":K` cut out of step text (both formats put them in this order).
        func cut(_ s: String) -> (String, String) {
            let t = s.range(of: #""transaction":"#)!
            let q = s.range(of: #","seq":"#, range: t.upperBound..<s.endIndex)!
            let e = s[q.upperBound...].firstIndex(where: { $0 == "," || $0 == "}" })!
            return (String(s[t.upperBound..<q.lowerBound]), String(s[q.upperBound..<e]))
        }

        // C: the same transaction with C strings only.
        let cgw: KelpieBrowserGatewayRef = {
            var err: UnsafeMutablePointer<CChar>? = nil
            guard let g = kelpie_browser_gateway_create(config, &err) else { fatalError("create failed") }
            return g
        }()

        func cTransaction() -> Bool {
            func adv(_ step: UnsafeMutablePointer<CChar>, _ result: String) -> UnsafeMutablePointer<CChar> {
                let t = strstr(step, "\"transaction\":")!
                let q = strstr(t, ",\"seq\":")!
                var e = q + 7
                while e.pointee != 44 /* , */ && e.pointee != 125 /* } */ { e += 1 }
                var buf = [CChar](repeating: 0, count: 512)
                let tl = Int32(q - t), ql = Int32(e - q)
                _ = result.withCString { r in
                    withVaList([tl, t, ql, q, r]) { vsnprintf(&buf, 512, "{%.*s%.*s,\"result\":%s}", $0) }
                }
                kelpie_mcp_free_string(step)
                return kelpie_browser_gateway_advance(cgw, buf)!
            }
            let a = kelpie_browser_gateway_begin(cgw, request)!
            let d = adv(a, #"{"success":true}"#)
            let c = adv(d, tabs)
            let ok = strstr(c, "\"success\":true") != nil
            kelpie_mcp_free_string(c)
            return ok
        }

        let raw = try BrowserGateway(configJSON: config)
        func rawTransaction() -> Bool {
            func adv(_ step: String, _ result: String) -> String {
                let (t, q) = cut(step)
                return raw.advance(#"{"transaction":\#(t),"seq":\#(q),"result":\#(result)}"#)
            }
            let c = adv(adv(raw.begin(request), #"{"success":true}"#), tabs)
            return c.contains(#""success":true"#)
        }

        let typed = try BrowserGateway(configJSON: config)
        func typedTransaction() -> Bool {
            guard case .authorize(let a) = Step(parsing: typed.begin(request)),
                case .dispatch(let d) = Step(parsing: typed.advance(a.admit())),
                case .complete(let c) = Step(parsing: typed.advance(d.resultFor(tabs)))
            else { return false }
            return c.success == true
        }

        let driverGateway = try BrowserGateway(configJSON: config)
        let driver = GatewayDriver(gateway: driverGateway)
        func driverTransaction() async -> Bool {
            let step = await driver.run(request: request) { _ in tabs }
            if case .complete(let c) = step { return c.success == true }
            return false
        }

        func median(_ xs: [UInt64]) -> Double {
            let s = xs.sorted()
            return Double(s[s.count / 2]) / 1000.0
        }

        func rssKiB() -> Int {
            guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
            for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
                return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
            }
            return -1
        }

        var failures = 0
        // warm-up (also starts the embedded interpreter)
        for _ in 0..<2000 {
            failures += cTransaction() ? 0 : 1
            failures += rawTransaction() ? 0 : 1
            failures += typedTransaction() ? 0 : 1
            failures += await driverTransaction() ? 0 : 1
        }
        let rssWarm = rssKiB()
        var lc: [UInt64] = [], lr: [UInt64] = [], lt: [UInt64] = [], ld: [UInt64] = []
        lc.reserveCapacity(n); lr.reserveCapacity(n); lt.reserveCapacity(n); ld.reserveCapacity(n)
        let round = 500
        var done = 0
        while done < n {
            let k = min(round, n - done)
            for _ in 0..<k { let a = now(); failures += cTransaction() ? 0 : 1; lc.append(now() - a) }
            for _ in 0..<k { let a = now(); failures += rawTransaction() ? 0 : 1; lr.append(now() - a) }
            for _ in 0..<k { let a = now(); failures += typedTransaction() ? 0 : 1; lt.append(now() - a) }
            for _ in 0..<k { let a = now(); failures += await driverTransaction() ? 0 : 1; ld.append(now() - a) }
            done += k
        }
        let c = median(lc), r = median(lr), t = median(lt), d = median(ld)
        func line(_ name: String, _ us: Double) {
            print(String(format: "  %-52@ %9.1f us   (/ C = %.2f)", name as NSString, us, us / c))
        }
        print("kelpie Swift binding benchmark (library \(BrowserGateway.version), \(n) transactions per variant)")
        line("median full transaction, C ABI called from Swift", c)
        line("median full transaction, BrowserGateway (raw text)", r)
        line("median full transaction, typed steps (Step parsing)", t)
        line("median full transaction, GatewayDriver (async)", d)
        print(String(format: "  %-52@ %9.1f us", "Swift raw overhead per transaction (raw - C)" as NSString, r - c))
        print("  RSS after warm-up \(rssWarm) KiB, after all transactions \(rssKiB()) KiB")
        print("  failures: \(failures)")
        _ = kelpie_browser_gateway_destroy(cgw)
        if failures != 0 { exit(1) }
    }
}
