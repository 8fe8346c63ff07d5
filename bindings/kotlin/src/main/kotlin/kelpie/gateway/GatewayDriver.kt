/*
 * The host loop (CONTRACT.md §5) in one place, for hosts to use or copy:
 *
 *   authorize -> ask the policy -> advance(admit | refuse NOT_AUTHORIZED)
 *   dispatch  -> run the native handler once, on the executor, at most timeoutMs
 *                  result in time  -> advance(result)
 *                  too slow        -> cancel(T, timeout) now; the late result is passed to advance when it
 *                                     arrives, so the lane retires (answer "retired", see onLateStep)
 *                  handler threw   -> advance({success:false, error:{RENDERER_FAILED}})
 *                  not runnable    -> (executor shut down) RENDERER_FAILED, mayHaveCompleted:false
 *   complete / rejected / other -> return it
 */
package kelpie.gateway

import java.io.Closeable
import java.util.concurrent.CompletableFuture
import java.util.concurrent.ExecutionException
import java.util.concurrent.ExecutorService
import java.util.concurrent.Executors
import java.util.concurrent.RejectedExecutionException
import java.util.concurrent.ThreadFactory
import java.util.concurrent.TimeUnit
import java.util.concurrent.TimeoutException
import java.util.concurrent.atomic.AtomicInteger

/** A native endpoint: params JSON text (the dispatch's `params`) in, `{success:…}` result JSON text out. */
typealias NativeHandler = (String) -> String

/** The host's decision on an authorize step. */
sealed class Authorization {
    object Allow : Authorization()
    data class Deny(val message: String) : Authorization()
}

/**
 * Runs transactions to completion against [handlers] (native endpoint name -> handler).
 *
 * Thread-safe: [run] may be called from many threads; each call drives its own transaction. Handlers run
 * on [executor] (default: an owned pool of daemon threads, shut down by [close]) so the driver can stop
 * waiting after the dispatch's `timeoutMs`. [onLateStep] receives the step answered to a late result
 * (normally Retired) on the handler's thread.
 */
class GatewayDriver @JvmOverloads constructor(
    val gateway: KelpieBrowserGateway,
    val handlers: Map<String, NativeHandler>,
    val policy: (Step.Authorize) -> Authorization = { Authorization.Allow },
    executor: ExecutorService? = null,
    val onLateStep: (Step) -> Unit = {}
) : Closeable {
    private val ownsExecutor = executor == null
    private val executor: ExecutorService = executor ?: Executors.newCachedThreadPool(daemonThreads())

    /** begin(requestJson), then [run]. */
    fun request(requestJson: String): Step = run(gateway.begin(requestJson))

    /** beginMcp(messageJson), then [run]. */
    fun mcp(messageJson: String): Step = run(gateway.beginMcp(messageJson))

    /**
     * Drives [first] to a terminal step: Complete normally; Rejected only when something outside this
     * call advanced or cancelled the same transaction; Idle/Retired/Unknown are returned as they come.
     */
    fun run(first: Step): Step {
        var step = first
        while (true) {
            step = when (step) {
                is Step.Authorize -> when (val d = policy(step)) {
                    is Authorization.Allow -> gateway.advance(step.admit())
                    is Authorization.Deny -> gateway.advance(step.refuse(d.message))
                }
                is Step.Dispatch -> dispatch(step)
                else -> return step
            }
        }
    }

    private fun dispatch(d: Step.Dispatch): Step {
        val handler = handlers[d.method]
            ?: return gateway.advance(
                d.transaction, d.seq,
                failure("RENDERER_FAILED", "the host has no handler for ${d.method}", mayHaveCompleted = false)
            )
        val params = d.params.toString()
        val future = try {
            CompletableFuture.supplyAsync(java.util.function.Supplier { handler(params) }, executor)
        } catch (e: RejectedExecutionException) { // executor shut down: the handler was never invoked
            return gateway.advance(
                d.transaction, d.seq,
                failure("RENDERER_FAILED", "the driver's executor refused the handler: $e", mayHaveCompleted = false)
            )
        }
        val result = try {
            future.get(d.timeoutMs, TimeUnit.MILLISECONDS)
        } catch (e: TimeoutException) {
            return abandon(d, future, CancelReason.TIMEOUT)
        } catch (e: InterruptedException) {
            Thread.currentThread().interrupt()
            return abandon(d, future, CancelReason.CANCELLED)
        } catch (e: ExecutionException) {
            return gateway.advance(d.transaction, d.seq, thrown(e.cause ?: e))
        }
        return deliver(d, checked(result))
    }

    /**
     * advance(result). Should the gateway refuse the result text itself (INVALID_REQUEST/INVALID_JSON:
     * e.g. a lone-surrogate escape the engine's strict parser refuses, or text over its parse cap), the
     * transaction would stay in dispatch forever, so a RENDERER_FAILED result is delivered instead.
     */
    private fun deliver(d: Step.Dispatch, result: String): Step {
        val step = gateway.advance(d.transaction, d.seq, result)
        if (step is Step.Rejected && (step.code == "INVALID_REQUEST" || step.code == "INVALID_JSON")) {
            return gateway.advance(
                d.transaction, d.seq, failure("RENDERER_FAILED", "the gateway refused the handler's result: ${step.message}")
            )
        }
        return step
    }

    /** Cancel first, then hand the late result to advance whenever it arrives (it retires the lane). */
    private fun abandon(d: Step.Dispatch, future: CompletableFuture<String>, reason: CancelReason): Step {
        val complete = gateway.cancel(d.transaction, reason)
        future.whenComplete { r, e ->
            val late = if (e != null) thrown(unwrap(e)) else checked(r)
            onLateStep(deliver(d, late))
        }
        return complete
    }

    override fun close() {
        if (ownsExecutor) executor.shutdown()
    }

    companion object {
        /** A `{success:false,error:{code,message}}` result; [mayHaveCompleted] false promises no effect. */
        @JvmStatic
        @JvmOverloads
        fun failure(code: String, message: String, mayHaveCompleted: Boolean? = null): String {
            val pairs = mutableListOf<Pair<String, Any?>>(
                "success" to false, "error" to Json.obj("code" to code, "message" to message)
            )
            if (mayHaveCompleted != null) pairs.add("mayHaveCompleted" to mayHaveCompleted)
            return Json.obj(*pairs.toTypedArray()).toString()
        }

        private fun unwrap(e: Throwable): Throwable =
            if ((e is java.util.concurrent.CompletionException || e is ExecutionException) && e.cause != null)
                e.cause!! else e

        private fun thrown(e: Throwable): String =
            failure("RENDERER_FAILED", "native handler failed: ${e.javaClass.simpleName}: ${e.message}")

        /** A handler result must be one JSON object, or the whole advance would be refused unparsed. */
        private fun checked(result: String?): String {
            if (result == null) return failure("RENDERER_FAILED", "native handler returned null")
            return try {
                Json.parseObject(result)
                result
            } catch (e: JsonException) {
                failure("RENDERER_FAILED", "native handler returned invalid JSON: ${e.message}")
            }
        }

        private fun daemonThreads(): ThreadFactory {
            val n = AtomicInteger()
            return ThreadFactory { r ->
                Thread(r, "kelpie-handler-${n.incrementAndGet()}").apply { isDaemon = true }
            }
        }
    }
}
