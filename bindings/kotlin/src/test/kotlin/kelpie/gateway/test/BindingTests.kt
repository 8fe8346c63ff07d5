/*
 * The Kotlin binding's tests: a dependency-free runner (no JUnit in Debian's Kotlin setup) that prints
 *   PASS <name> <ms>ms   or   FAIL <name>: <reason>
 * per test, then `SUMMARY passed=<n> failed=<m>`, and exits 1 when anything failed.
 * tests/kotlin/test_kotlin_binding.py runs it and asserts every expected test passed.
 *
 *   java ... kelpie.gateway.test.BindingTests [name ...]     (no names = all)
 */
package kelpie.gateway.test

import kelpie.gateway.Authorization
import kelpie.gateway.CancelReason
import kelpie.gateway.GatewayConfigException
import kelpie.gateway.GatewayDriver
import kelpie.gateway.GatewayPendingException
import kelpie.gateway.Json
import kelpie.gateway.JsonException
import kelpie.gateway.JsonNull
import kelpie.gateway.JsonNumber
import kelpie.gateway.JsonObject
import kelpie.gateway.JsonString
import kelpie.gateway.KelpieBrowserGateway
import kelpie.gateway.KelpieLibrary
import kelpie.gateway.NativeHandler
import kelpie.gateway.Step
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.CountDownLatch
import java.util.concurrent.CyclicBarrier
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import kotlin.system.exitProcess

class Failure(message: String) : Exception(message)

fun check(cond: Boolean, msg: () -> String) {
    if (!cond) throw Failure(msg())
}

fun <T> eq(expected: T, actual: T, what: String) {
    if (expected != actual) throw Failure("$what: expected <$expected>, got <$actual>")
}

inline fun <reified T : Step> expectStep(s: Step, what: String): T {
    if (s !is T) throw Failure("$what: expected ${T::class.java.simpleName}, got ${s.raw.take(400)}")
    return s
}

const val TABS_CONFIG = """{"nativeMethods":["get-tabs"]}"""
const val NAV_CONFIG = """{"nativeMethods":["get-tabs","navigate"]}"""
const val TABS_LIST = """{"version":1,"method":"tabs.list","params":{}}"""
const val OK_TABS = """{"success":true,"tabs":[]}"""

fun navigate(timeoutMs: Int) =
    """{"version":1,"method":"tab.navigate","params":{"tabId":"tab-1","url":"https://example.com/","timeoutMs":$timeoutMs}}"""

val navigateOk: NativeHandler = { p ->
    val o = Json.parseObject(p)
    """{"success":true,"tabId":${o["tabId"]},"generation":1,"url":${o["url"]}}"""
}

fun withGateway(config: String = TABS_CONFIG, body: (KelpieBrowserGateway) -> Unit) {
    val gw = KelpieBrowserGateway.create(config)
    try {
        body(gw)
    } finally {
        try {
            gw.close()
        } catch (e: GatewayPendingException) {
            // a failing test may leave a callback pending; that gateway is simply leaked
        }
    }
}

/** Runs tabs.list by hand through the typed steps and returns the complete step. */
fun tabsListByHand(gw: KelpieBrowserGateway, tabsResult: String = OK_TABS): Step.Complete {
    val a = expectStep<Step.Authorize>(gw.begin(TABS_LIST), "begin")
    val d = expectStep<Step.Dispatch>(gw.advance(a.admit()), "admit")
    return expectStep(gw.advance(d.resultFor(tabsResult)), "result")
}

val tests = linkedMapOf<String, () -> Unit>()

fun test(name: String, body: () -> Unit) {
    tests[name] = body
}

fun defineTests() {
    // ---------------------------------------------------------------- JSON reader / writer
    test("json_escapes_and_surrogate_pairs") {
        val v = Json.parse("\"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83e\\uddad\\u4e2d\"")
        eq("a\"\\/\b\u000C\n\r\té\uD83E\uDDAD中", v.asString, "decoded")
        eq(0x1F9AD, v.asString!!.codePointAt(v.asString!!.length - 3), "astral code point from an escape pair")
        // raw UTF-8 text (already decoded to a Kotlin string) with astral characters
        val raw = Json.parse("\"🦭 seal, ü, 中文\"")
        eq("🦭 seal, ü, 中文", raw.asString, "raw non-ASCII")
        // writer: control characters escaped, non-ASCII kept, lone surrogates escaped
        eq("\"\\u0001\\n🦭\\ud800x\\udc00\"", Json.quote("\u0001\n🦭\uD800x\uDC00"), "writer escapes")
        for (s in listOf("", "plain", "\u0000\u001f\"\\", "🦭\uD800", "\u2028\u2029", "a\uDBFF\uDFFFb")) {
            eq(s, Json.parse(Json.quote(s)).asString, "round trip of ${Json.quote(s)}")
        }
        val o = Json.parseObject(" {\"k\" : [1, -0.5e-3, true, false, null, {\"n\":{}}], \"k\":\"last\"} ")
        eq("last", o.string("k"), "duplicate key: last wins")
    }
    test("json_numbers_keep_their_text") {
        eq("12345678901234567890", (Json.parse("12345678901234567890") as JsonNumber).text, "big integer")
        eq(null, Json.parse("12345678901234567890").asLong, "no Long for an overflowing integer")
        eq(-7L, Json.parse("-7").asLong, "small integer")
        eq(null, Json.parse("1.0").asLong, "1.0 is not an integer lexeme")
        eq("[0,-0.5E+3,1e9]", Json.parse("[0, -0.5E+3, 1e9]").toString(), "exact number text")
    }
    test("json_rejects_invalid_text") {
        val bad = listOf(
            "", " ", "{", "[1,]", "{\"a\":1,}", "{\"a\"}", "{a:1}", "01", "-", "1.", ".5", "1e", "+1",
            "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"tab\there\"", "\"nl\nhere\"", "\"open", "tru", "nul",
            "1 2", "[1] x", "'s'", "NaN", "Infinity", "[" .repeat(Json.MAX_DEPTH + 1) + "]".repeat(Json.MAX_DEPTH + 1)
        )
        for (t in bad) {
            val threw = try {
                Json.parse(t); false
            } catch (e: JsonException) {
                true
            }
            check(threw) { "accepted invalid JSON ${Json.quote(t.take(40))}" }
        }
        Json.parse("[".repeat(Json.MAX_DEPTH) + "]".repeat(Json.MAX_DEPTH)) // the limit itself is fine
    }

    // ---------------------------------------------------------------- library basics
    test("version_and_load_flags") {
        check(Regex("""\d+\.\d+.*""").matches(KelpieBrowserGateway.version)) {
            "version ${KelpieBrowserGateway.version}"
        }
        println("INFO loaded ${KelpieLibrary.loadedFrom} openFlags=${KelpieLibrary.loadedFlags}")
    }
    test("create_refuses_bad_config_as_typed_exception") {
        val cases = listOf(
            """{"nativeMethods":"get-tabs"}""" to "INVALID_REQUEST",
            """{"bogus":true}""" to "INVALID_REQUEST",
            """{"targeting":"sideways"}""" to "INVALID_REQUEST",
            "not json" to "INVALID_JSON"
        )
        for ((config, code) in cases) {
            try {
                KelpieBrowserGateway.create(config).close()
                throw Failure("create accepted $config")
            } catch (e: GatewayConfigException) {
                eq(code, e.code, "code for $config")
                eq(false, e.envelope.boolean("success"), "envelope success")
                eq(false, e.envelope.boolean("mayHaveCompleted"), "envelope mayHaveCompleted")
            }
        }
        try {
            KelpieBrowserGateway.create("""{"nativeMethods":"get-tabs"}""")
        } catch (e: GatewayConfigException) {
            check(e.message!!.contains("/nativeMethods")) { "message should name the JSON Pointer: ${e.message}" }
        }
    }

    // ---------------------------------------------------------------- transactions by hand
    test("simple_transaction_typed_steps") {
        withGateway { gw ->
            val a = expectStep<Step.Authorize>(gw.begin(TABS_LIST), "begin")
            eq("direct", a.lane, "lane")
            eq(false, a.mutates, "mutates")
            eq("tabs.list", a.method, "method")
            eq(null, a.target, "target")
            eq(a.raw, gw.next().raw, "next() re-reads the pending step")
            eq(a.raw, gw.next(a.transaction).raw, "next(T) re-reads the pending step")
            val d = expectStep<Step.Dispatch>(gw.advance(a.admit()), "admit")
            eq("get-tabs", d.method, "dispatch method")
            eq(JsonObject(emptyMap()), d.params, "dispatch params")
            eq(a.transaction, d.transaction, "same transaction")
            check(d.seq > a.seq) { "seq must grow" }
            check(d.timeoutMs in 1..30000) { "timeoutMs ${d.timeoutMs}" }
            val c = expectStep<Step.Complete>(gw.advance(d.resultFor(OK_TABS)), "result")
            eq(true, c.success, "success")
            eq("[]", c.response.asObject!!.obj("result")!!["tabs"].toString(), "tabs")
            eq(a.transaction, c.transaction, "complete names the transaction")
            check(c.audit != null) { "audit missing" }
            expectStep<Step.Idle>(gw.next(), "next after complete")
        }
    }
    test("not_authorized_refusal") {
        withGateway { gw ->
            val a = expectStep<Step.Authorize>(gw.begin(TABS_LIST), "begin")
            val c = expectStep<Step.Complete>(gw.advance(a.refuse("the user said no")), "refuse")
            eq("NOT_AUTHORIZED", c.errorCode, "code")
            eq(false, c.mayHaveCompleted, "mayHaveCompleted")
        }
    }
    test("busy_while_a_transaction_is_active") {
        withGateway { gw ->
            val a = expectStep<Step.Authorize>(gw.begin(TABS_LIST), "begin")
            val busy = expectStep<Step.Complete>(gw.begin(TABS_LIST), "second begin")
            eq("BUSY", busy.errorCode, "code")
            eq(true, busy.response.asObject!!.obj("error")!!.boolean("retryable"), "BUSY is retryable")
            eq(false, busy.mayHaveCompleted, "BUSY dispatched nothing")
            eq(a.raw, gw.next().raw, "the active transaction is untouched")
            val d = expectStep<Step.Dispatch>(gw.advance(a.admit()), "admit")
            eq("BUSY", (gw.begin(TABS_LIST) as Step.Complete).errorCode, "BUSY during dispatch too")
            eq(true, (gw.advance(d.resultFor(OK_TABS)) as Step.Complete).success, "first completes")
            expectStep<Step.Authorize>(gw.begin(TABS_LIST), "the lane is free again")
        }
    }
    test("stale_duplicate_forged_and_malformed_results_are_rejected") {
        withGateway { gw ->
            val a = expectStep<Step.Authorize>(gw.begin(TABS_LIST), "begin")
            eq("STALE_STEP", expectStep<Step.Rejected>(gw.advance(a.transaction, 99, """{"success":true}"""), "forged seq").code, "forged seq")
            eq("STALE_STEP", expectStep<Step.Rejected>(gw.advance("t999", a.seq, """{"success":true}"""), "forged T").code, "forged T")
            val d = expectStep<Step.Dispatch>(gw.advance(a.admit()), "admit")
            eq("STALE_STEP", expectStep<Step.Rejected>(gw.advance(a.admit()), "duplicate").code, "duplicate admit")
            eq("INVALID_REQUEST", expectStep<Step.Rejected>(gw.advance("""{"x":1}"""), "malformed").code, "malformed")
            val garbage = expectStep<Step.Rejected>(gw.advance("not json"), "garbage")
            check(garbage.code == "INVALID_REQUEST" || garbage.code == "INVALID_JSON") { "garbage code ${garbage.code}" }
            eq(d.raw, gw.next().raw, "rejections changed nothing")
            eq(true, (gw.advance(d.resultFor(OK_TABS)) as Step.Complete).success, "still completes")
            eq("STALE_STEP", expectStep<Step.Rejected>(gw.advance(d.resultFor(OK_TABS)), "late dup").code, "duplicate result")
        }
    }
    test("cancel_during_authorize") {
        withGateway { gw ->
            val a = expectStep<Step.Authorize>(gw.begin(TABS_LIST), "begin")
            val c = expectStep<Step.Complete>(gw.cancel(a.transaction, CancelReason.CANCELLED), "cancel")
            eq("CANCELLED", c.errorCode, "code")
            eq(false, c.mayHaveCompleted, "mayHaveCompleted")
            expectStep<Step.Idle>(gw.next(), "idle")
            eq("STALE_STEP", expectStep<Step.Rejected>(gw.cancel(a.transaction, CancelReason.CANCELLED), "again").code, "second cancel")
            eq("INVALID_REQUEST", expectStep<Step.Rejected>(gw.cancel("""{"transaction":"t1","reason":"bored"}"""), "bad reason").code, "bad reason")
            eq(true, tabsListByHand(gw).success, "a new transaction works")
        }
    }
    test("cancel_read_dispatch_late_callback_and_destroy_while_pending") {
        val gw = KelpieBrowserGateway.create(TABS_CONFIG)
        val a = expectStep<Step.Authorize>(gw.begin(TABS_LIST), "begin")
        val d = expectStep<Step.Dispatch>(gw.advance(a.admit()), "admit")
        val c = expectStep<Step.Complete>(gw.cancel(d.transaction, CancelReason.TIMEOUT), "cancel")
        eq("TIMEOUT", c.errorCode, "code")
        eq(false, c.mayHaveCompleted, "a read cannot have had an effect")
        eq("BUSY", (gw.begin(TABS_LIST) as Step.Complete).errorCode, "lane exclusive until the late callback")
        try {
            gw.close()
            throw Failure("close succeeded while a callback was pending")
        } catch (e: GatewayPendingException) {
            // expected: typed, and the gateway stays usable
        }
        eq(false, gw.isClosed, "still open")
        check(gw.next() !is Step.Rejected) { "gateway unusable after a refused close: ${gw.next().raw}" }
        eq(KelpieBrowserGateway.OK, gw.invalidateRefs(), "invalidateRefs still works")
        val r = expectStep<Step.Retired>(gw.advance(d.resultFor(OK_TABS)), "late result")
        eq(d.transaction, r.transaction, "retired transaction")
        eq("STALE_STEP", expectStep<Step.Rejected>(gw.advance(d.resultFor(OK_TABS)), "second late").code, "twice")
        eq(true, tabsListByHand(gw).success, "lane free after retirement")
        gw.close()
        eq(true, gw.isClosed, "closed")
        gw.close() // idempotent
    }
    test("cancel_mutating_dispatch_is_unknown_outcome_then_retire") {
        withGateway(NAV_CONFIG) { gw ->
            val a = expectStep<Step.Authorize>(gw.begin(navigate(1000)), "begin")
            eq(true, a.mutates, "navigate mutates")
            eq("tab-1", a.target?.string("tabId"), "target")
            val d = expectStep<Step.Dispatch>(gw.advance(a.admit()), "admit")
            eq("navigate", d.method, "method")
            eq(1000L, d.timeoutMs, "timeoutMs")
            val c = expectStep<Step.Complete>(gw.cancel(d.transaction, CancelReason.TIMEOUT), "cancel")
            eq("TIMEOUT", c.errorCode, "code")
            eq(true, c.mayHaveCompleted, "a dispatched mutation may have completed")
            expectStep<Step.Retired>(gw.retire(d.transaction), "retire")
            expectStep<Step.Authorize>(gw.begin(TABS_LIST), "lane free after retire")
        }
    }
    test("overdue_retirement_is_visible_through_next_then_retire") {
        withGateway("""{"nativeMethods":["get-tabs","navigate"],"retirementGraceMs":0}""") { gw ->
            val a = expectStep<Step.Authorize>(gw.begin(navigate(1)), "begin")
            val d = expectStep<Step.Dispatch>(gw.advance(a.admit()), "admit")
            val c = expectStep<Step.Complete>(gw.cancel(d.transaction, CancelReason.TIMEOUT), "cancel")
            eq(true, c.mayHaveCompleted, "unknown outcome")
            eq(false, c.response.asObject?.obj("error")?.boolean("retryable"), "an unknown outcome is never retryable")
            Thread.sleep(20) // timeoutMs 1 + grace 0 have passed
            val idle = expectStep<Step.Idle>(gw.next(d.transaction), "next")
            eq(true, idle.overdue, "overdue")
            eq("tab-1", idle.stuckTab, "the stuck dispatch's tab")
            eq("navigate", idle.awaitingRetirement?.string("method"), "the stuck endpoint")
            eq("BUSY", (gw.begin(TABS_LIST) as Step.Complete).errorCode, "lane held until retired")
            expectStep<Step.Retired>(gw.retire(d.transaction), "retire")
            expectStep<Step.Authorize>(gw.begin(TABS_LIST), "lane free after retire")
        }
    }
    test("undelivered_mutation_requires_a_reconcile") {
        withGateway(NAV_CONFIG) { gw ->
            val a = expectStep<Step.Authorize>(gw.begin(navigate(1000)), "begin")
            val d = expectStep<Step.Dispatch>(gw.advance(a.admit()), "admit")
            val ok = """{"success":true,"tabId":"tab-1","generation":2,"url":"https://example.test/"}"""
            eq(true, expectStep<Step.Complete>(gw.advance(d.resultFor(ok)), "navigated").success, "navigated")
            val noted = expectStep<Step.Noted>(gw.undelivered(d.transaction), "undelivered")
            eq("tab-1", noted.reconcileRequired, "tab to reconcile")
            val again = expectStep<Step.Complete>(gw.begin(navigate(1000)), "next mutation")
            eq("RECONCILE_REQUIRED", again.errorCode, "refused until observed")
        }
    }
    test("closed_gateway_refuses_as_values") {
        val gw = KelpieBrowserGateway.create(TABS_CONFIG)
        gw.close()
        val c = expectStep<Step.Complete>(gw.begin(TABS_LIST), "begin after close")
        eq("INVALID_REQUEST", c.errorCode, "begin code")
        eq(null, c.transaction, "no transaction")
        eq("INVALID_REQUEST", expectStep<Step.Rejected>(gw.next(), "next").code, "next code")
        eq("INVALID_REQUEST", expectStep<Step.Rejected>(gw.advance("""{"transaction":"t1","seq":1,"result":{"success":true}}"""), "advance").code, "advance code")
        eq(KelpieBrowserGateway.INVALID, gw.invalidateRefs("tab-1"), "invalidateRefs code")
        gw.close()
    }
    test("embedded_nul_and_lone_surrogates_in_input") {
        withGateway { gw ->
            // C would stop at the NUL and see a valid (but wrong) prefix; the binding makes the text invalid.
            eq("INVALID_JSON", (gw.begin("{\"version\":1}\u0000{\"x\":1}") as Step.Complete).errorCode, "NUL")
            // a raw lone surrogate in the Kotlin string (not a JSON escape) cannot be UTF-8: sent as U+FFFD
            val lone = "{\"version\":1,\"id\":\"x\uD800y\",\"method\":\"tabs.list\",\"params\":{}}"
            check(lone.contains('\uD800')) { "test string lost its lone surrogate" }
            val a = expectStep<Step.Authorize>(gw.begin(lone), "lone")
            eq("x\uFFFDy", a.request.string("id"), "lone surrogate arrives as U+FFFD")
            val bad = byteArrayOf(0x7b, 0xff.toByte(), 0x7d) // "{\xff}" is not UTF-8
            check(gw.begin(bad) is Step.Complete) { "invalid UTF-8 must complete refused" }
        }
    }
    test("utf8_round_trip_through_the_gateway") {
        withGateway { gw ->
            val title = "🦭 Kelpie — \"quoted\" \\ back\nslash é 中文 \u2028 end"
            val req = Json.obj("version" to 1, "id" to "req-🦭", "method" to "tabs.list", "params" to Json.obj()).toString()
            val a = expectStep<Step.Authorize>(gw.begin(req), "begin")
            val d = expectStep<Step.Dispatch>(gw.advance(a.admit()), "admit")
            val tab = Json.obj("tabId" to "tab-1", "generation" to 1, "url" to "https://example.com/ü", "title" to title, "active" to true)
            val result = Json.obj("success" to true, "tabs" to listOf(tab)).toString()
            val c = expectStep<Step.Complete>(gw.advance(d.resultFor(result)), "result")
            val env = c.response.asObject!!
            eq("req-🦭", env.string("id"), "id")
            val got = env.obj("result")!!.array("tabs")!![0].asObject!!
            eq(title, got.string("title"), "title")
            eq("https://example.com/ü", got.string("url"), "url")
            check(c.raw.contains("🦭")) { "raw step text should carry UTF-8, not escapes" }
        }
    }
    test("mcp_initialize_notification_and_errors") {
        withGateway { gw ->
            val init = """{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"kotlin-test","version":"1"}}}"""
            val c = expectStep<Step.Complete>(gw.beginMcp(init), "initialize")
            val r = c.response.asObject!!
            eq("2.0", r.string("jsonrpc"), "jsonrpc")
            eq("2025-06-18", r.obj("result")?.string("protocolVersion"), "protocolVersion")
            eq(true, c.success, "success")
            val n = expectStep<Step.Complete>(gw.beginMcp("""{"jsonrpc":"2.0","method":"notifications/initialized"}"""), "notification")
            eq(JsonNull, n.response, "notification response")
            eq("null", n.responseJson, "notification response text")
            eq(202, n.httpStatus, "httpStatus")
            eq("-32700", (gw.beginMcp("{") as Step.Complete).errorCode, "parse error")
            eq("-32600", (gw.beginMcp("[]") as Step.Complete).errorCode, "batch refused")
            eq("-32601", (gw.beginMcp("""{"jsonrpc":"2.0","id":2,"method":"no/such"}""") as Step.Complete).errorCode, "unknown method")
        }
    }

    // ---------------------------------------------------------------- the driver
    test("driver_runs_a_transaction_to_completion") {
        withGateway { gw ->
            val calls = AtomicInteger()
            GatewayDriver(gw, mapOf<String, NativeHandler>("get-tabs" to { p ->
                eq("{}", p, "params")
                calls.incrementAndGet()
                """{"success":true,"tabs":[{"tabId":"tab-1","generation":3,"url":"about:blank","title":"t","active":true}]}"""
            })).use { driver ->
                val c = expectStep<Step.Complete>(driver.request(TABS_LIST), "driver")
                eq(true, c.success, "success")
                eq(3L, c.response.asObject!!.obj("result")!!.array("tabs")!![0].asObject!!.long("generation"), "generation")
                eq(1, calls.get(), "handler called exactly once")
            }
        }
    }
    test("driver_policy_denies") {
        withGateway { gw ->
            val calls = AtomicInteger()
            GatewayDriver(gw, mapOf<String, NativeHandler>("get-tabs" to { _ -> calls.incrementAndGet(); OK_TABS }),
                policy = { a -> if (a.mutates) Authorization.Allow else Authorization.Deny("reads are off today") }
            ).use { driver ->
                val c = expectStep<Step.Complete>(driver.request(TABS_LIST), "driver")
                eq("NOT_AUTHORIZED", c.errorCode, "code")
                eq(0, calls.get(), "nothing dispatched")
            }
        }
    }
    test("driver_timeout_cancels_and_late_result_retires") {
        withGateway(NAV_CONFIG) { gw ->
            val late = ConcurrentLinkedQueue<Step>()
            val lateSeen = CountDownLatch(1)
            val release = CountDownLatch(1)
            val handlers = mapOf<String, NativeHandler>("navigate" to { p -> release.await(10, TimeUnit.SECONDS); navigateOk(p) })
            GatewayDriver(gw, handlers, onLateStep = { s -> late.add(s); lateSeen.countDown() }).use { driver ->
                val t0 = System.nanoTime()
                val c = expectStep<Step.Complete>(driver.request(navigate(150)), "driver")
                val ms = (System.nanoTime() - t0) / 1_000_000
                eq("TIMEOUT", c.errorCode, "code")
                eq(true, c.mayHaveCompleted, "dispatched mutation: unknown outcome")
                check(ms in 140..5000) { "gave up after $ms ms, expected about 150" }
                eq("BUSY", (gw.begin(TABS_LIST) as Step.Complete).errorCode, "lane exclusive until the late result")
                try {
                    gw.close(); throw Failure("close succeeded while pending")
                } catch (e: GatewayPendingException) {
                }
                release.countDown()
                check(lateSeen.await(10, TimeUnit.SECONDS)) { "the late result never reached advance" }
                expectStep<Step.Retired>(late.single(), "late step")
                expectStep<Step.Authorize>(gw.begin(TABS_LIST), "lane free again")
            }
        }
    }
    test("driver_handler_failures_complete_the_transaction") {
        withGateway(NAV_CONFIG) { gw ->
            val handlers = mapOf<String, NativeHandler>(
                "get-tabs" to { _ -> throw IllegalStateException("renderer crashed") },
                "navigate" to { _ -> "{not json" }
            )
            GatewayDriver(gw, handlers).use { driver ->
                val c1 = expectStep<Step.Complete>(driver.request(TABS_LIST), "throwing handler")
                eq("RENDERER_FAILED", c1.errorCode, "thrown: code")
                eq(false, c1.mayHaveCompleted, "thrown read: no effect")
                expectStep<Step.Idle>(gw.next(), "nothing left pending")
                val c2 = expectStep<Step.Complete>(driver.request(navigate(1000)), "invalid JSON handler")
                eq("RENDERER_FAILED", c2.errorCode, "invalid JSON: code")
                eq(true, c2.mayHaveCompleted, "a mutation's handler ran: unknown outcome")
                expectStep<Step.Idle>(gw.next(), "nothing left pending")
            }
        }
        withGateway(NAV_CONFIG) { gw ->
            // a lone-surrogate escape in a renderer result (page text does this) is repaired, not refused
            // (CONTRACT §8): the transaction succeeds and the output is well-formed UTF-8
            GatewayDriver(gw, mapOf<String, NativeHandler>("get-tabs" to { _ -> "{\"success\":true,\"tabs\":[{\"tabId\":\"A\",\"generation\":1,\"url\":\"u\",\"title\":\"\\ud800\",\"active\":true}]}" })).use { driver ->
                val c4 = expectStep<Step.Complete>(driver.request(TABS_LIST), "lone surrogate in result text")
                eq(true, c4.success, "lone surrogate in result text: success")
                check(c4.raw.contains("\\ufffd") || c4.raw.contains("\uFFFD")) { "title repaired to U+FFFD: ${c4.raw}" }
                expectStep<Step.Idle>(gw.next(), "nothing left pending")
            }
            GatewayDriver(gw, emptyMap()).use { driver ->
                val c3 = expectStep<Step.Complete>(driver.request(navigate(1000)), "no handler")
                eq("RENDERER_FAILED", c3.errorCode, "missing handler: code")
                eq(false, c3.mayHaveCompleted, "missing handler: never invoked")
            }
        }
    }

    test("driver_after_close_completes_instead_of_throwing") {
        withGateway(NAV_CONFIG) { gw ->
            val driver = GatewayDriver(gw, mapOf<String, NativeHandler>("navigate" to navigateOk))
            driver.close()
            val c = expectStep<Step.Complete>(driver.request(navigate(1000)), "after close")
            eq("RENDERER_FAILED", c.errorCode, "code")
            eq(false, c.mayHaveCompleted, "the handler never ran")
            expectStep<Step.Idle>(gw.next(), "nothing left pending")
        }
    }

    // ---------------------------------------------------------------- threads
    test("invalidate_refs_from_another_thread_during_a_transaction") {
        withGateway { gw ->
            val entered = CountDownLatch(1)
            val leave = CountDownLatch(1)
            val codes = ConcurrentLinkedQueue<Int>()
            GatewayDriver(gw, mapOf<String, NativeHandler>("get-tabs" to { _ ->
                entered.countDown(); leave.await(10, TimeUnit.SECONDS); OK_TABS
            })).use { driver ->
                val t = Thread { codes.add(-1); driver.request(TABS_LIST) }
                t.start()
                check(entered.await(10, TimeUnit.SECONDS)) { "handler never ran" }
                val t0 = System.nanoTime()
                val other = Thread { codes.add(gw.invalidateRefs("tab-1")); codes.add(gw.invalidateRefs(null)) }
                other.start(); other.join(5000)
                check(!other.isAlive) { "invalidateRefs blocked during a transaction" }
                check((System.nanoTime() - t0) / 1_000_000 < 5000) { "invalidateRefs too slow" }
                leave.countDown(); t.join(10000)
                eq(listOf(-1, 0, 0), codes.toList(), "codes")
            }
        }
    }
    test("concurrent_threads_on_one_gateway_busy_or_complete") {
        withGateway { gw ->
            val dispatched = AtomicInteger()
            val ok = AtomicInteger()
            val busy = AtomicInteger()
            val other = ConcurrentLinkedQueue<String>()
            val threads = 8
            val per = 150
            val barrier = CyclicBarrier(threads)
            GatewayDriver(gw, mapOf<String, NativeHandler>("get-tabs" to { _ -> dispatched.incrementAndGet(); OK_TABS })).use { driver ->
                val ts = (1..threads).map {
                    Thread {
                        barrier.await()
                        repeat(per) {
                            val s = driver.request(TABS_LIST)
                            when {
                                s is Step.Complete && s.success == true -> ok.incrementAndGet()
                                s is Step.Complete && s.errorCode == "BUSY" -> busy.incrementAndGet()
                                else -> other.add(s.raw)
                            }
                        }
                    }.apply { start() }
                }
                ts.forEach { it.join(60000) }
            }
            eq(emptyList<String>(), other.toList(), "steps that were neither success nor BUSY")
            eq(threads * per, ok.get() + busy.get(), "every transaction accounted for")
            eq(ok.get(), dispatched.get(), "exactly one dispatch per success, none for BUSY")
            check(ok.get() > 0) { "nothing succeeded" }
            expectStep<Step.Idle>(gw.next(), "idle at the end")
            println("INFO one gateway, $threads threads: ${ok.get()} complete, ${busy.get()} BUSY")
        }
    }
    test("concurrent_threads_each_with_its_own_gateway") {
        val threads = 4
        val per = 250
        val failures = ConcurrentLinkedQueue<String>()
        val t0 = System.nanoTime()
        val ts = (1..threads).map {
            Thread {
                withGateway { gw ->
                    repeat(per) {
                        val c = tabsListByHand(gw)
                        if (c.success != true) failures.add(c.raw)
                    }
                }
            }.apply { start() }
        }
        ts.forEach { it.join(60000) }
        eq(emptyList<String>(), failures.toList(), "failures")
        val ms = (System.nanoTime() - t0) / 1_000_000
        println("INFO $threads gateways x $per transactions in $ms ms")
    }
}

fun main(args: Array<String>) {
    defineTests()
    val selected = if (args.isEmpty()) tests.keys.toList() else args.toList()
    var passed = 0
    var failed = 0
    for (name in selected) {
        val body = tests[name]
        if (body == null) {
            println("FAIL $name: no such test"); failed++; continue
        }
        val t0 = System.nanoTime()
        try {
            body()
            println("PASS $name ${(System.nanoTime() - t0) / 1_000_000}ms")
            passed++
        } catch (e: Throwable) {
            val why = if (e is Failure) e.message else e.toString()
            println("FAIL $name: ${why?.replace('\n', ' ')}")
            if (e !is Failure) e.printStackTrace()
            failed++
        }
        System.out.flush()
    }
    println("SUMMARY passed=$passed failed=$failed")
    exitProcess(if (failed == 0) 0 else 1)
}
