/*
 * KelpieBrowserGateway: the Kotlin face of the C ABI (CONTRACT.md §10, mirroring the Python API §11).
 */
package kelpie.gateway

import com.sun.jna.Pointer
import com.sun.jna.ptr.PointerByReference
import java.io.Closeable

/** Base of the binding's exceptions. Bad requests and results never throw: they are steps. */
open class GatewayException(message: String) : RuntimeException(message)

/**
 * create refused the config (CONTRACT.md §2). [envelope] is the failure envelope the C ABI returned:
 * [code] is INVALID_JSON, INVALID_REQUEST (the message starts with the JSON Pointer of the bad field)
 * or INTERNAL (the embedded runtime could not start; the message names the cause).
 */
class GatewayConfigException(val envelope: JsonObject) :
    GatewayException(envelope.obj("error")?.string("message") ?: envelope.toString()) {
    val code: String get() = envelope.obj("error")?.string("code") ?: "INTERNAL"
}

/**
 * close refused with KELPIE_GATEWAY_PENDING: a cancelled dispatch still awaits its renderer callback.
 * The gateway is intact and usable: pass the late result to advance (it answers "retired") or call
 * [KelpieBrowserGateway.retire], then close again.
 */
class GatewayPendingException(message: String) : GatewayException(message)

/**
 * One gateway (one per browser or profile), owning its native handle until [close]. It is a
 * java.io.Closeable (so an AutoCloseable that Kotlin's base `use {}` accepts).
 *
 * Every method is safe to call from several threads at once, like the C API: the library serialises
 * each gateway's transactions (a begin on a busy lane is answered BUSY, never queued) and
 * [invalidateRefs] never waits for a transaction in progress. Every string the library returns is read
 * as UTF-8 and freed with kelpie_mcp_free_string in a finally block, whatever happens next.
 *
 * After a successful [close] the handle is dead; further calls are refused by the library as values
 * (an INVALID_REQUEST complete or rejected step, [INVALID] from [invalidateRefs]) — the library never
 * reuses handle identifiers, so a stale handle can never reach another gateway.
 */
class KelpieBrowserGateway private constructor(private val handle: Pointer) : Closeable {
    private val lock = Any()
    @Volatile private var closed = false

    /** True once [close] succeeded. */
    val isClosed: Boolean get() = closed

    /** Begin a transaction from a canonical request (CONTRACT.md §3, §5): authorize or complete. */
    fun begin(requestJson: String): Step = call { n -> n.kelpie_browser_gateway_begin(handle, c(requestJson)) }
    fun begin(request: JsonObject): Step = begin(request.toString())

    /**
     * Byte-exact variants for hosts that already hold UTF-8 JSON text (and for replaying test vectors,
     * which include deliberately invalid UTF-8): the bytes are passed as they are, NUL-terminated (a zero
     * byte inside becomes 0x01, see [KelpieLibrary.cString]). [Step.raw] is the library's exact answer.
     */
    fun begin(requestUtf8: ByteArray): Step = call { n -> n.kelpie_browser_gateway_begin(handle, b(requestUtf8)) }
    fun beginMcp(messageUtf8: ByteArray): Step =
        call { n -> n.kelpie_browser_gateway_begin_mcp(handle, b(messageUtf8)) }
    fun advance(resultUtf8: ByteArray): Step = call { n -> n.kelpie_browser_gateway_advance(handle, b(resultUtf8)) }
    fun cancel(cancelUtf8: ByteArray): Step = call { n -> n.kelpie_browser_gateway_cancel(handle, b(cancelUtf8)) }

    /** Begin from one JSON-RPC 2.0 message (MCP, §7). A notification completes with response null, 202. */
    fun beginMcp(messageJson: String): Step =
        call { n -> n.kelpie_browser_gateway_begin_mcp(handle, c(messageJson)) }

    /** Re-read the pending step of [transaction] (null = the direct lane) without changing anything. */
    @JvmOverloads
    fun next(transaction: String? = null): Step =
        call { n -> n.kelpie_browser_gateway_next(handle, c(transaction)) }

    /** Consume one result: the full `{"transaction","seq","result"}` or `{"transaction","retire"}` text. */
    fun advance(resultJson: String): Step = call { n -> n.kelpie_browser_gateway_advance(handle, c(resultJson)) }

    /** advance(`{"transaction":T,"seq":n,"result":<handlerResultJson>}`); the result text is embedded as is. */
    fun advance(transaction: String, seq: Long, handlerResultJson: String): Step =
        advance(Step.resultJson(transaction, seq, handlerResultJson))

    /** Report that a cancelled dispatch's renderer callback will never come: `{"transaction":T,"retire":…}`. */
    fun retire(transaction: String): Step =
        advance("""{"transaction":${Json.quote(transaction)},"retire":"renderer-closed"}""")

    /**
     * The caller never received [transaction]'s complete step (it disconnected): `{"transaction":T,
     * "undelivered":true}`. A dispatched mutation's tab becomes RECONCILE_REQUIRED (CONTRACT.md §4, v1.1).
     */
    fun undelivered(transaction: String): Step =
        advance("""{"transaction":${Json.quote(transaction)},"undelivered":true}""")

    /** Cancel: the full `{"transaction","reason"}` text (mandatory on renderer timeout or cancellation). */
    fun cancel(cancelJson: String): Step = call { n -> n.kelpie_browser_gateway_cancel(handle, c(cancelJson)) }

    fun cancel(transaction: String, reason: CancelReason): Step =
        cancel("""{"transaction":${Json.quote(transaction)},"reason":"${reason.wire}"}""")

    /**
     * Invalidate element refs of [tabId] (null = every tab). Any thread, any time; never blocks on a
     * transaction. Returns [OK], [INVALID] (closed gateway) or [ERROR] (runtime failure).
     */
    @JvmOverloads
    fun invalidateRefs(tabId: String? = null): Int =
        KelpieLibrary.native.kelpie_browser_gateway_invalidate_refs(handle, c(tabId))

    /**
     * Destroy the native gateway. Idempotent. Throws [GatewayPendingException] (gateway intact and
     * usable) while a cancelled dispatch awaits its callback, or [GatewayException] on a runtime failure
     * (handle still valid).
     */
    override fun close() {
        synchronized(lock) {
            if (closed) return
            when (val rc = KelpieLibrary.native.kelpie_browser_gateway_destroy(handle)) {
                OK, INVALID -> closed = true // INVALID: already destroyed through the raw API
                PENDING -> throw GatewayPendingException(
                    "a renderer callback is pending: advance the late result (or retire it), then close again"
                )
                else -> throw GatewayException("kelpie_browser_gateway_destroy failed with code $rc")
            }
        }
    }

    private inline fun call(f: (KelpieNative) -> Pointer?): Step {
        val n = KelpieLibrary.native
        return Step.parse(KelpieLibrary.takeString(f(n)))
    }

    private fun c(s: String?): ByteArray? = KelpieLibrary.cString(s)
    private fun b(bytes: ByteArray): ByteArray = KelpieLibrary.cBytes(bytes)

    companion object {
        /** Result codes of destroy and invalidate_refs (the header's KELPIE_GATEWAY_*). */
        const val OK: Int = 0
        const val PENDING: Int = 1
        const val INVALID: Int = 2
        const val ERROR: Int = 3

        /**
         * Create a gateway from a config JSON object (CONTRACT.md §2), loading the library on first use
         * (see [KelpieLibrary]). Throws [GatewayConfigException] when the config is refused; nothing
         * was created then.
         */
        @JvmStatic
        fun create(configJson: String): KelpieBrowserGateway {
            val n = KelpieLibrary.native
            val err = PointerByReference()
            val h = n.kelpie_browser_gateway_create(KelpieLibrary.cString(configJson), err)
            val errText = KelpieLibrary.takeString(err.value)
            if (h == null) {
                val env = try {
                    errText?.let { Json.parseObject(it) }
                } catch (e: JsonException) {
                    null
                } ?: Json.obj(
                    "version" to 1, "id" to null, "success" to false,
                    "error" to Json.obj(
                        "code" to "INTERNAL", "message" to (errText ?: "create failed without an error envelope"),
                        "retryable" to false
                    ),
                    "mayHaveCompleted" to false
                )
                throw GatewayConfigException(env)
            }
            return KelpieBrowserGateway(h)
        }

        @JvmStatic
        fun create(config: JsonObject): KelpieBrowserGateway = create(config.toString())

        /** The library version (kelpie_browser_gateway_version). */
        @JvmStatic
        val version: String get() = KelpieLibrary.version()
    }
}
