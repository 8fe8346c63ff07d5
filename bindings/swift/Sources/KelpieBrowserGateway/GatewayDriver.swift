// GatewayDriver: the host loop of CONTRACT.md §5 in one place, for hosts to use or copy. It mirrors the
// Kotlin binding's driver (docs/kotlin.md), with Swift concurrency instead of an executor:
//
//   authorize -> policy(step) -> advance(admit | refuse NOT_AUTHORIZED)
//                (the calling Task is cancelled -> cancel(T, "cancelled"): refused, nothing dispatched)
//   dispatch  -> handler(step) in its own Task, awaited at most timeoutMs
//                  result in time       -> advance(result)
//                  too slow             -> cancel(T, "timeout") at once
//                  calling Task cancelled -> cancel(T, "cancelled") at once (the handler's Task is
//                                          cancelled too, so a cooperative handler can stop)
//                  handler threw        -> advance({success:false, error:{RENDERER_FAILED}})
//                  not JSON / refused   -> the same RENDERER_FAILED (an unparsable advance would leave
//                                          the transaction stuck in dispatch)
//                after a cancel, the late result is passed to advance when it arrives ("retired": the
//                lane is free again; onLateStep sees it). If it has not arrived by timeoutMs + the
//                retirement grace (≤ 5 s, CONTRACT.md §5 v1.1), the retirement is overdue: onOverdue runs
//                (the host ends the stuck work: stops the page's script or closes that renderer), then
//                the driver reports {"transaction":T,"retire":"renderer-closed"}.
//   complete / rejected / idle / retired -> returned

import Foundation

/// The host's decision on an authorize step.
public enum Authorization: Sendable, Hashable {
    case allow
    case deny(String)
}

/// Drives transactions of one ``BrowserGateway`` to completion.
///
/// An actor, and reentrant: while one `run` awaits its policy or handler, other `run` calls proceed, each
/// driving its own transaction (the gateway answers BUSY for a second transaction on a busy lane).
public actor GatewayDriver {
    /// The host's site, tab-visibility and user-action policy, asked at every authorize step.
    public typealias Policy = @Sendable (Step.Authorize) async -> Authorization
    /// A native endpoint: the dispatch step (method, params, timeoutMs) in, its `{success:…}` result JSON
    /// text out. It is invoked at most once per dispatch step.
    public typealias Handler = @Sendable (Step.Dispatch) async throws -> String
    /// Called when a retirement is overdue, before the driver reports `renderer-closed`: end the stuck work.
    public typealias OverdueHandler = @Sendable (Step.AwaitingRetirement) async -> Void
    /// Receives the step answered to a late result or to an overdue retirement (normally `retired`).
    public typealias LateStepHandler = @Sendable (Step) -> Void

    public nonisolated let gateway: BrowserGateway
    private let policy: Policy
    private let retirementGrace: Duration
    private let onOverdue: OverdueHandler?
    private let onLateStep: LateStepHandler?
    private var late: [Int: Task<Void, Never>] = [:]
    private var lateCounter = 0

    /// - Parameters:
    ///   - policy: default admits everything.
    ///   - retirementGrace: how long after `timeoutMs` a cancelled dispatch may take to hand back its late
    ///     result before the driver treats it as overdue (CONTRACT.md §5: at most 5 s; clamped to 0…5 s).
    public init(
        gateway: BrowserGateway,
        policy: @escaping Policy = { _ in .allow },
        retirementGrace: Duration = .seconds(5),
        onOverdue: OverdueHandler? = nil,
        onLateStep: LateStepHandler? = nil
    ) {
        self.gateway = gateway
        self.policy = policy
        self.retirementGrace = min(max(retirementGrace, .zero), .seconds(5))
        self.onOverdue = onOverdue
        self.onLateStep = onLateStep
    }

    /// begin(request), then drive it to its end (normally a `complete` step).
    public func run(request requestJSON: String, handler: @escaping Handler) async -> Step {
        await run(Step(parsing: gateway.begin(requestJSON)), handler: handler)
    }

    /// beginMCP(message), then drive it (a notification completes with `httpStatus` 202).
    public func run(mcp messageJSON: String, handler: @escaping Handler) async -> Step {
        await run(Step(parsing: gateway.beginMCP(messageJSON)), handler: handler)
    }

    /// Drives `first` to a terminal step: `complete` normally; `rejected` only when something outside this
    /// call advanced or cancelled the same transaction; other kinds are returned as they come.
    public func run(_ first: Step, handler: @escaping Handler) async -> Step {
        var step = first
        while true {
            switch step {
            case .authorize(let a):
                if Task.isCancelled {
                    return Step(parsing: gateway.cancel(transaction: a.transaction, reason: .cancelled))
                }
                let decision = await policy(a)
                if Task.isCancelled {
                    return Step(parsing: gateway.cancel(transaction: a.transaction, reason: .cancelled))
                }
                switch decision {
                case .allow: step = Step(parsing: gateway.advance(a.admit()))
                case .deny(let why): step = Step(parsing: gateway.advance(a.refuse(why)))
                }
            case .dispatch(let d):
                step = await dispatch(d, handler: handler)
            default:
                return step
            }
        }
    }

    /// How many cancelled dispatches still await their late result (or their overdue retirement).
    public var pendingRetirements: Int { late.count }

    /// Waits until every cancelled dispatch of this driver has retired (late result delivered, or
    /// retired as overdue).
    public func waitForRetirements() async {
        while let (_, task) = late.first {
            await task.value
        }
    }

    // MARK: dispatch

    private func dispatch(_ d: Step.Dispatch, handler: @escaping Handler) async -> Step {
        let gw = gateway
        if Task.isCancelled {  // the handler was never invoked: nothing can have happened
            return Self.deliver(
                gw, d,
                Step.failureResult(
                    code: "CANCELLED", message: "the task was cancelled before the handler was invoked",
                    mayHaveCompleted: false))
        }
        let started = ContinuousClock.now
        let work = Task.detached { () -> HandlerOutcome in
            do { return .returned(try await handler(d)) } catch { return .threw(error) }
        }
        let race = await Race.run(work: work, deadline: started + .milliseconds(d.timeoutMs), cancellable: true)
        switch race {
        case .finished(let outcome):
            return Self.deliver(gw, d, outcome.resultJSON)
        case .timedOut:
            return abandon(d, work: work, reason: .timeout, deadline: started + .milliseconds(d.timeoutMs))
        case .cancelled:
            work.cancel()
            return abandon(d, work: work, reason: .cancelled, deadline: started + .milliseconds(d.timeoutMs))
        }
    }

    /// Cancel now; the late result goes to advance whenever it arrives, or the retirement is reported
    /// overdue once timeoutMs + grace have passed.
    private func abandon(
        _ d: Step.Dispatch, work: Task<HandlerOutcome, Never>, reason: CancelReason,
        deadline: ContinuousClock.Instant
    ) -> Step {
        let gw = gateway
        let complete = Step(parsing: gw.cancel(transaction: d.transaction, reason: reason))
        guard case .complete = complete else { return complete }  // not ours any more: nothing to retire
        lateCounter += 1
        let key = lateCounter
        let grace = retirementGrace
        let onOverdue = onOverdue
        let onLateStep = onLateStep
        late[key] = Task.detached { [weak self] in
            let r = await Race.run(work: work, deadline: deadline + grace, cancellable: false)
            let step: Step
            switch r {
            case .finished(let outcome):
                step = Self.deliver(gw, d, outcome.resultJSON)
            case .timedOut, .cancelled:
                step = await Self.retireOverdue(gw, d, work: work, onOverdue: onOverdue)
            }
            onLateStep?(step)
            await self?.lateDone(key)
        }
        return complete
    }

    private func lateDone(_ key: Int) { late[key] = nil }

    private static func retireOverdue(
        _ gw: BrowserGateway, _ d: Step.Dispatch, work: Task<HandlerOutcome, Never>, onOverdue: OverdueHandler?
    ) async -> Step {
        let now = Step(parsing: gw.next(transaction: d.transaction))
        guard case .idle(let idle) = now, let waiting = idle.awaitingRetirement,
            waiting.transaction == d.transaction
        else {
            return now  // retired meanwhile (e.g. the late result raced us): nothing to do
        }
        await onOverdue?(waiting)
        work.cancel()
        return Step(parsing: gw.retire(transaction: d.transaction))
    }

    /// advance(result). Should the gateway refuse the result text itself (INVALID_REQUEST/INVALID_JSON),
    /// the transaction would stay in dispatch forever, so a RENDERER_FAILED result is delivered instead.
    private static func deliver(_ gw: BrowserGateway, _ d: Step.Dispatch, _ result: String) -> Step {
        let step = Step(parsing: gw.advance(d.resultFor(result)))
        if case .rejected(let r) = step, r.code == "INVALID_REQUEST" || r.code == "INVALID_JSON" {
            return Step(
                parsing: gw.advance(
                    d.resultFor(
                        Step.failureResult(
                            code: "RENDERER_FAILED", message: "the gateway refused the handler's result: \(r.message)"))))
        }
        return step
    }
}

/// What a handler did.
enum HandlerOutcome: Sendable {
    case returned(String)
    case threw(any Error)

    /// The result to advance: the handler's text if it is one JSON object, else a RENDERER_FAILED result.
    var resultJSON: String {
        switch self {
        case .threw(let e):
            return Step.failureResult(code: "RENDERER_FAILED", message: "native handler failed: \(e)")
        case .returned(let text):
            guard (try? JSONValue.parse(text))?.objectValue != nil else {
                return Step.failureResult(
                    code: "RENDERER_FAILED", message: "native handler returned text that is not a JSON object")
            }
            return text
        }
    }
}

/// The first of: the handler's Task finishing, a deadline, the calling Task's cancellation.
enum Race: Sendable {
    case finished(HandlerOutcome)
    case timedOut
    case cancelled

    static func run(
        work: Task<HandlerOutcome, Never>, deadline: ContinuousClock.Instant, cancellable: Bool
    ) async -> Race {
        let box = OneShot<Race>()
        let timer = Task.detached {
            try? await Task.sleep(until: deadline, clock: .continuous)
            box.resolve(.timedOut)
        }
        let watcher = Task.detached { box.resolve(.finished(await work.value)) }
        let outcome: Race
        if cancellable {
            outcome = await withTaskCancellationHandler {
                await box.value()
            } onCancel: {
                box.resolve(.cancelled)
            }
        } else {
            outcome = await box.value()
        }
        timer.cancel()
        if case .finished = outcome {} else { watcher.cancel() }
        return outcome
    }
}

/// A value set once by whichever party comes first; later `resolve` calls are ignored.
final class OneShot<T: Sendable>: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`.
    private let lock = NSLock()
    private var result: T?
    private var waiter: CheckedContinuation<T, Never>?

    func resolve(_ value: T) {
        lock.lock()
        guard result == nil else {
            lock.unlock()
            return
        }
        result = value
        let w = waiter
        waiter = nil
        lock.unlock()
        w?.resume(returning: value)
    }

    func value() async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
            lock.lock()
            if let r = result {
                lock.unlock()
                c.resume(returning: r)
            } else {
                waiter = c
                lock.unlock()
            }
        }
    }
}
