// GatewayDriver against a fake host: handlers that answer, stall, throw, ignore cancellation.

import Foundation
import KelpieBrowserGateway
import XCTest

final class DriverTests: XCTestCase {
    func testDriverRunsATransactionToCompletion() async throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let asked = Log<String>()
        let driver = GatewayDriver(gateway: gw, policy: { a in
            asked.append(a.method ?? "?")
            return .allow
        })
        let calls = Log<String>()
        let step = await driver.run(request: tabsList) { d in
            calls.append("\(d.method) \(d.paramsJSON) \(d.timeoutMs)")
            return tabsResult
        }
        let c = try complete(step)
        XCTAssertEqual(c.success, true)
        XCTAssertEqual(c.envelope?.result?["tabs"]?.arrayValue?.count, 1)
        XCTAssertEqual(asked.all, ["tabs.list"])
        XCTAssertEqual(calls.all, ["get-tabs {} 10000"], "the handler runs exactly once with the step's params")
        let mcp = try complete(await driver.run(mcp: #"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"kelpie_browser_control","arguments":{"method":"tabs.list","params":{}}}}"#) { _ in tabsResult })
        XCTAssertEqual(mcp.response["result"]?["isError"], false)
        try gw.close()
    }

    func testPolicyDenies() async throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let driver = GatewayDriver(gateway: gw, policy: { _ in .deny("blocked by the user") })
        let invoked = Log<String>()
        let c = try complete(await driver.run(request: navigate()) { d in
            invoked.append(d.method)
            return navigateResult
        })
        XCTAssertEqual(c.errorCode, "NOT_AUTHORIZED")
        XCTAssertEqual(c.mayHaveCompleted, false)
        XCTAssertTrue(c.envelope?.error?.message.contains("blocked by the user") ?? false)
        XCTAssertTrue(invoked.all.isEmpty, "a refused transaction dispatches nothing")
        try gw.close()
    }

    func testHandlerFailuresCompleteTheTransaction() async throws {
        struct RendererDown: Error {}
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let driver = GatewayDriver(gateway: gw)
        let threw = try complete(await driver.run(request: tabsList) { _ in throw RendererDown() })
        XCTAssertEqual(threw.errorCode, "RENDERER_FAILED")
        XCTAssertTrue(threw.envelope?.error?.message.contains("RendererDown") ?? false, "\(threw.responseJSON)")
        let garbage = try complete(await driver.run(request: tabsList) { _ in "this is not JSON" })
        XCTAssertEqual(garbage.errorCode, "RENDERER_FAILED")
        let mutation = try complete(await driver.run(request: navigate()) { _ in "[]" })
        XCTAssertEqual(mutation.errorCode, "RENDERER_FAILED")
        XCTAssertEqual(mutation.mayHaveCompleted, true, "a failed mutation's outcome is unknown")
        XCTAssertEqual(Step(parsing: gw.next()).kind, "idle")
        try gw.close()
    }

    func testTimeoutCancelsAndTheLateResultRetires() async throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let lateSteps = Log<Step>()
        let driver = GatewayDriver(gateway: gw, onLateStep: { lateSteps.append($0) })
        let release = Gate()
        let started = Date()
        let c = try complete(await driver.run(request: screenshot(timeoutMs: 150)) { _ in
            await release.wait()
            return screenshotResult
        })
        let waited = Date().timeIntervalSince(started)
        XCTAssertEqual(c.errorCode, "TIMEOUT")
        XCTAssertEqual(c.mayHaveCompleted, false, "a timed-out read had no effect")
        XCTAssertGreaterThanOrEqual(waited, 0.14)
        XCTAssertLessThan(waited, 5, "the driver waited for the handler instead of timing out")
        let pending = await driver.pendingRetirements
        XCTAssertEqual(pending, 1)
        XCTAssertEqual(try complete(gw.begin(tabsList)).errorCode, "BUSY", "the lane waits for the late result")
        XCTAssertThrowsError(try gw.close())
        release.open()
        await driver.waitForRetirements()
        XCTAssertEqual(lateSteps.all.map(\.kind), ["retired"])
        XCTAssertEqual(lateSteps.all.first?.transaction, c.transaction)
        let pendingAfter = await driver.pendingRetirements
        XCTAssertEqual(pendingAfter, 0)
        let again = await driver.run(request: tabsList) { _ in tabsResult }
        XCTAssertEqual(try complete(again).success, true, "the lane is free again")
        XCTAssertNoThrow(try gw.close())
    }

    func testTaskCancellationCancelsTheDispatchedMutation() async throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let lateSteps = Log<Step>()
        let driver = GatewayDriver(gateway: gw, onLateStep: { lateSteps.append($0) })
        let inHandler = Gate()
        let release = Gate()
        let handlerSawCancel = Log<Bool>()
        let task = Task {
            await driver.run(request: navigate()) { _ in
                inHandler.open()
                await release.wait()
                handlerSawCancel.append(Task.isCancelled)
                return navigateResult
            }
        }
        await inHandler.wait()
        task.cancel()
        let c = try complete(await task.value)
        XCTAssertEqual(c.errorCode, "CANCELLED")
        XCTAssertEqual(c.mayHaveCompleted, true, "a cancelled dispatched mutation may have happened")
        release.open()
        await driver.waitForRetirements()
        XCTAssertEqual(lateSteps.all.map(\.kind), ["retired"])
        XCTAssertEqual(handlerSawCancel.all, [true], "the handler's task was cancelled too")
        XCTAssertNoThrow(try gw.close())
    }

    func testTaskCancelledBeforeTheDispatchInvokesNothing() async throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let invoked = Log<String>()
        let policyEntered = Gate()
        let policyRelease = Gate()
        let driver = GatewayDriver(gateway: gw, policy: { _ in
            policyEntered.open()
            await policyRelease.wait()
            return .allow
        })
        let task = Task {
            await driver.run(request: navigate()) { d in
                invoked.append(d.method)
                return navigateResult
            }
        }
        await policyEntered.wait()
        task.cancel()
        policyRelease.open()
        let c = try complete(await task.value)
        XCTAssertEqual(c.errorCode, "CANCELLED")
        XCTAssertEqual(c.mayHaveCompleted, false, "cancelled at authorize: nothing was dispatched")
        XCTAssertTrue(invoked.all.isEmpty)
        XCTAssertNoThrow(try gw.close())
    }

    func testOverdueRetirementIsEndedByTheHost() async throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let overdue = Log<String>()
        let lateSteps = Log<Step>()
        let stuck = Gate()  // the page's script never returns until the test ends
        defer { stuck.open() }
        let driver = GatewayDriver(
            gateway: gw, retirementGrace: .milliseconds(200),
            onOverdue: { waiting in overdue.append(waiting.transaction) },
            onLateStep: { lateSteps.append($0) })
        let t0 = Date()
        let c = try complete(await driver.run(request: navigate(timeoutMs: 100)) { _ in
            await stuck.wait()
            return navigateResult
        })
        XCTAssertEqual(c.errorCode, "TIMEOUT")
        XCTAssertEqual(c.mayHaveCompleted, true)
        await driver.waitForRetirements()
        let elapsed = Date().timeIntervalSince(t0)
        XCTAssertEqual(overdue.all, [c.transaction!], "the host was asked to end the stuck work once")
        XCTAssertEqual(lateSteps.all.map(\.kind), ["retired"], "reported renderer-closed")
        XCTAssertGreaterThanOrEqual(elapsed, 0.29, "overdue before timeoutMs + grace")
        XCTAssertLessThan(elapsed, 6)
        XCTAssertEqual(Step(parsing: gw.next()).json, ["step": "idle"], "nothing awaits retirement any more")
        XCTAssertNoThrow(try gw.close(), "the gateway can be closed although the handler never returned")
    }

    func testConcurrentRunsOnOneDriverAreCompleteOrBusy() async throws {
        let gw = try BrowserGateway(configJSON: tabsConfig)
        let driver = GatewayDriver(gateway: gw)
        let results = await withTaskGroup(of: Step.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await driver.run(request: tabsList) { _ in
                        try await Task.sleep(for: .milliseconds(20))
                        return tabsResult
                    }
                }
            }
            var out: [Step] = []
            for await s in group { out.append(s) }
            return out
        }
        let codes = try results.map { try complete($0).errorCode ?? "ok" }
        XCTAssertEqual(codes.filter { $0 == "ok" }.count + codes.filter { $0 == "BUSY" }.count, 8, "\(codes)")
        XCTAssertGreaterThanOrEqual(codes.filter { $0 == "ok" }.count, 1)
        try gw.close()
    }
}
