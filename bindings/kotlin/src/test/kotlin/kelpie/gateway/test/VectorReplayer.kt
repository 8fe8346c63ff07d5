/*
 * Replays fixtures/vectors plans (fixtures/vectors/README.md) through KelpieBrowserGateway.
 *
 *   java ... kelpie.gateway.test.VectorReplayer PLAN OUT [PLAN OUT ...]
 *
 * Each PLAN is the output of `tools/vectors.py plan VECTOR`; OUT receives one line per call after create:
 * the exact step text the library returned (Step.raw), or `null` for invalidate_refs. Plans are raw bytes
 * (a payload may be invalid UTF-8 on purpose), so payloads are handed to the byte-exact overloads.
 * One JVM replays every plan, each against a fresh gateway.
 */
package kelpie.gateway.test

import kelpie.gateway.GatewayConfigException
import kelpie.gateway.GatewayPendingException
import kelpie.gateway.KelpieBrowserGateway
import java.io.File
import java.nio.charset.StandardCharsets.UTF_8

object VectorReplayer {
    private fun lines(data: ByteArray): List<ByteArray> {
        val out = ArrayList<ByteArray>()
        var start = 0
        for (i in data.indices) {
            if (data[i] == '\n'.toByte()) {
                out.add(data.copyOfRange(start, i)); start = i + 1
            }
        }
        if (start < data.size) out.add(data.copyOfRange(start, data.size))
        return out
    }

    /** Splits `CALL KIND PAYLOAD` on the first two spaces; the payload is the rest of the line. */
    private fun split(line: ByteArray): Triple<String, Char, ByteArray> {
        val a = line.indexOf(' '.toByte())
        require(a > 0 && line.size >= a + 3 && line[a + 2] == ' '.toByte()) {
            "malformed plan line: ${String(line.copyOf(minOf(line.size, 80)), UTF_8)}"
        }
        return Triple(String(line, 0, a, UTF_8), line[a + 1].toChar(), line.copyOfRange(a + 3, line.size))
    }

    fun replay(plan: File, out: File) {
        val ls = lines(plan.readBytes())
        val (c0, k0, config) = split(ls[0])
        require(c0 == "create" && k0 == 'J') { "the first plan line must be create J" }
        out.outputStream().buffered().use { w ->
            val gw = try {
                KelpieBrowserGateway.create(String(config, UTF_8))
            } catch (e: GatewayConfigException) {
                w.write(e.envelope.toString().toByteArray(UTF_8)); w.write('\n'.toInt())
                return
            }
            for (line in ls.drop(1)) {
                val (call, kind, payload) = split(line)
                val text: String? = if (kind == 'N') null else String(payload, UTF_8)
                val answer = when (call) {
                    "begin" -> gw.begin(payload).raw
                    "begin_mcp" -> gw.beginMcp(payload).raw
                    "advance" -> gw.advance(payload).raw
                    "cancel" -> gw.cancel(payload).raw
                    "next" -> gw.next(text).raw
                    "invalidate_refs" -> { gw.invalidateRefs(text); "null" }
                    else -> throw IllegalArgumentException("unknown call $call")
                }
                w.write(answer.toByteArray(UTF_8)); w.write('\n'.toInt())
            }
            try {
                gw.close()
            } catch (e: GatewayPendingException) {
                System.err.println("${plan.name}: gateway left with a pending callback (not destroyed)")
            }
        }
    }

    @JvmStatic
    fun main(args: Array<String>) {
        require(args.isNotEmpty() && args.size % 2 == 0) { "usage: VectorReplayer PLAN OUT [PLAN OUT ...]" }
        var i = 0
        while (i < args.size) {
            replay(File(args[i]), File(args[i + 1])); i += 2
        }
        println("replayed ${args.size / 2} plan(s)")
    }
}
