/*
 * Typed steps (CONTRACT.md §5). Every step keeps the exact text the library returned ([Step.raw]) and
 * its parsed object ([Step.json]); the typed fields are read from that object.
 */
package kelpie.gateway

/** Reasons accepted by cancel (CONTRACT.md §5). */
enum class CancelReason(val wire: String) {
    TIMEOUT("timeout"), CANCELLED("cancelled"), RENDERER_CLOSED("renderer-closed")
}

sealed class Step {
    /** The step JSON text exactly as the library returned it. */
    abstract val raw: String
    /** The parsed step object. */
    abstract val json: JsonObject

    /** `{"step":"authorize"}`: apply the host's policy, then [admit] or [refuse] through advance. */
    data class Authorize(
        override val raw: String,
        override val json: JsonObject,
        val transaction: String,
        val seq: Long,
        /** "direct", "recovery" or "dedicated:<extension name>". */
        val lane: String,
        /** The normalized canonical request. */
        val request: JsonObject,
        val mutates: Boolean,
        /** `{tabId, generation}` or null. */
        val target: JsonObject?
    ) : Step() {
        val method: String? get() = request.string("method")
        /** The advance input that admits this transaction. */
        fun admit(): String = resultJson(transaction, seq, """{"success":true}""")
        /** The advance input that refuses it (NOT_AUTHORIZED, completes refused). */
        fun refuse(message: String): String = resultJson(
            transaction, seq,
            Json.obj("success" to false, "error" to Json.obj("code" to "NOT_AUTHORIZED", "message" to message))
                .toString()
        )
    }

    /**
     * `{"step":"dispatch"}`: invoke native endpoint [method] with [params] exactly once, within
     * [timeoutMs] milliseconds, and pass its `{success:…}` result to advance (see [resultFor]).
     */
    data class Dispatch(
        override val raw: String,
        override val json: JsonObject,
        val transaction: String,
        val seq: Long,
        val method: String,
        val params: JsonObject,
        val mutates: Boolean,
        val timeoutMs: Long
    ) : Step() {
        /** The advance input carrying the handler's result JSON text (embedded verbatim). */
        fun resultFor(handlerResultJson: String): String = resultJson(transaction, seq, handlerResultJson)
    }

    /**
     * `{"step":"complete"}`: terminal. Return [response] to the caller (a canonical envelope, a JSON-RPC
     * response, or JSON null for an MCP notification, which carries [httpStatus] 202; a JSON-RPC error
     * answering an MCP 2026-07-28 request carries the status to send over HTTP, 400 or 404). [transaction] and
     * [seq] are null for refusals produced before a transaction existed (bad handle, NULL/oversize input).
     */
    data class Complete(
        override val raw: String,
        override val json: JsonObject,
        val transaction: String?,
        val seq: Long?,
        val response: JsonValue,
        val audit: JsonObject?,
        val httpStatus: Int?
    ) : Step() {
        /** The response as JSON text ("null" for a notification). */
        val responseJson: String get() = response.toString()
        /** Canonical envelope `success`, or for JSON-RPC: true when the response has a `result`. */
        val success: Boolean?
            get() {
                val r = response.asObject ?: return null
                r.boolean("success")?.let { return it }
                return if (r.containsKey("jsonrpc")) r.containsKey("result") else null
            }
        /** Canonical envelope error code ("BUSY", …), or the JSON-RPC error code as text ("-32601"). */
        val errorCode: String?
            get() {
                val e = response.asObject?.obj("error") ?: return null
                val c = e["code"] ?: return null
                return c.asString ?: c.toString()
            }
        val mayHaveCompleted: Boolean? get() = response.asObject?.boolean("mayHaveCompleted")
    }

    /** `{"step":"rejected"}`: the input was refused and nothing changed (STALE_STEP, INVALID_REQUEST). */
    data class Rejected(
        override val raw: String,
        override val json: JsonObject,
        val code: String,
        val message: String
    ) : Step()

    /** `{"step":"retired"}`: a late result after a cancel was discarded and the lane is free again. */
    data class Retired(
        override val raw: String,
        override val json: JsonObject,
        val transaction: String?,
        val seq: Long?
    ) : Step()

    /**
     * `{"step":"idle"}` from next: nothing pending on that lane. While a cancelled dispatch's callback is
     * still out, [awaitingRetirement] is `{transaction, seq, method, tabId}`; once [overdue] (its timeoutMs +
     * the config's retirementGraceMs have passed, CONTRACT.md §5 v1.1) the host must end the stuck work in
     * [stuckTab] (stop the page's script, else close/crash that renderer) and call
     * [KelpieBrowserGateway.retire].
     */
    data class Idle(override val raw: String, override val json: JsonObject) : Step() {
        val awaitingRetirement: JsonObject? get() = json.obj("awaitingRetirement")
        val overdue: Boolean get() = awaitingRetirement?.boolean("overdue") == true
        val stuckTab: String? get() = awaitingRetirement?.string("tabId")
    }

    /**
     * `{"step":"noted"}`: answer to [KelpieBrowserGateway.undelivered]. [reconcileRequired] is the tab that
     * now needs an observation before its next mutation (null: nothing to reconcile).
     */
    data class Noted(
        override val raw: String,
        override val json: JsonObject,
        val transaction: String?,
        val reconcileRequired: String?
    ) : Step()

    /** A step kind this binding does not know (a newer library); [raw] has everything. */
    data class Unknown(override val raw: String, override val json: JsonObject) : Step()

    companion object {
        /** The advance input `{"transaction":T,"seq":n,"result":<resultJson verbatim>}`. */
        @JvmStatic
        fun resultJson(transaction: String, seq: Long, resultJson: String): String =
            """{"transaction":${Json.quote(transaction)},"seq":$seq,"result":$resultJson}"""

        /**
         * Parses step text. Never throws: text that is not a step object (which the library never
         * returns) becomes a Rejected step with code INTERNAL, as does null (malloc failure in C).
         */
        @JvmStatic
        fun parse(raw: String?): Step {
            if (raw == null) return internal("", "the library returned NULL (out of memory)")
            val o = try {
                Json.parseObject(raw)
            } catch (e: JsonException) {
                return internal(raw, "the library returned text that is not a JSON object: ${e.message}")
            }
            return try {
                fromObject(raw, o)
            } catch (e: MalformedStep) {
                internal(raw, "malformed ${o.string("step")} step: ${e.message}")
            }
        }

        private class MalformedStep(msg: String) : Exception(msg)

        private fun need(o: JsonObject, name: String): JsonValue = o[name] ?: throw MalformedStep("no $name")
        private fun str(o: JsonObject, n: String) = need(o, n).asString ?: throw MalformedStep("$n not a string")
        private fun lng(o: JsonObject, n: String) = need(o, n).asLong ?: throw MalformedStep("$n not an integer")
        private fun bool(o: JsonObject, n: String) = need(o, n).asBoolean ?: throw MalformedStep("$n not a bool")
        private fun objOf(o: JsonObject, n: String) = need(o, n).asObject ?: throw MalformedStep("$n not an object")

        private fun fromObject(raw: String, o: JsonObject): Step = when (o.string("step")) {
            "authorize" -> Authorize(
                raw, o, str(o, "transaction"), lng(o, "seq"), str(o, "lane"), objOf(o, "request"),
                bool(o, "mutates"), o["target"]?.asObject
            )
            "dispatch" -> Dispatch(
                raw, o, str(o, "transaction"), lng(o, "seq"), str(o, "method"), objOf(o, "params"),
                bool(o, "mutates"), lng(o, "timeoutMs")
            )
            "complete" -> Complete(
                raw, o, o.string("transaction"), o.long("seq"), need(o, "response"), o.obj("audit"),
                o.long("httpStatus")?.toInt()
            )
            "rejected" -> {
                val e = objOf(o, "error")
                Rejected(raw, o, str(e, "code"), e.string("message") ?: "")
            }
            "retired" -> Retired(raw, o, o.string("transaction"), o.long("seq"))
            "idle" -> Idle(raw, o)
            "noted" -> Noted(raw, o, o.string("transaction"), o.string("reconcileRequired"))
            else -> Unknown(raw, o)
        }

        /** A synthesized INTERNAL rejection; the message quotes the start of the offending text. */
        internal fun internal(raw: String, message: String): Rejected {
            val full = if (raw.length == 0) message else "$message (text starts: ${raw.take(200)})"
            val o = Json.obj("step" to "rejected", "error" to Json.obj("code" to "INTERNAL", "message" to full))
            return Rejected(o.toString(), o, "INTERNAL", full)
        }
    }
}
