/*
 * A small, strict JSON reader and writer (RFC 8259) for the Kelpie gateway's step JSON.
 *
 * Why our own: Debian's Kotlin 1.3 setup ships no JSON library on the default classpath, and the
 * binding should need nothing but JNA. The reader is strict: no comments, no trailing commas, no
 * leading zeros, no raw control characters inside strings, nothing after the value, nesting at most
 * [Json.MAX_DEPTH] levels. `\uXXXX` escapes are decoded; a high+low surrogate escape pair becomes one
 * astral code point (a Kotlin String holds it as the same UTF-16 pair). Numbers keep their exact text,
 * so integers larger than a Long and decimals round-trip unchanged. Duplicate object keys: the last wins.
 *
 * The writer emits compact JSON, raw UTF-8-safe text for every non-ASCII character except lone
 * surrogates, which are written as `\uXXXX` escapes so the output is always encodable as UTF-8.
 */
package kelpie.gateway

/** Thrown by [Json.parse] for text that is not a single valid JSON value; [offset] is the UTF-16 index. */
class JsonException(message: String, val offset: Int) : RuntimeException("$message at offset $offset")

/** A parsed JSON value. [toString] returns its compact JSON text. */
sealed class JsonValue {
    override fun toString(): String = Json.write(this)

    /** This value as an object, or null when it is something else. */
    open val asObject: JsonObject? get() = null
    open val asArray: JsonArray? get() = null
    open val asString: String? get() = null
    open val asBoolean: Boolean? get() = null
    /** An integral number that fits a Long, else null (1.0 and 1e3 are not integral lexemes: null). */
    open val asLong: Long? get() = null
    open val isNull: Boolean get() = false
}

object JsonNull : JsonValue() {
    override val isNull: Boolean get() = true
}

data class JsonBool(val value: Boolean) : JsonValue() {
    override val asBoolean: Boolean? get() = value
    override fun toString(): String = Json.write(this)
}

/** A number kept as its exact JSON lexeme, e.g. "12", "-0.5", "1e999". */
data class JsonNumber(val text: String) : JsonValue() {
    constructor(value: Long) : this(value.toString())
    constructor(value: Int) : this(value.toString())

    override val asLong: Long?
        get() = if (text.any { it == '.' || it == 'e' || it == 'E' }) null else text.toLongOrNull()
    val asDouble: Double get() = text.toDouble()
    override fun toString(): String = text
}

data class JsonString(val value: String) : JsonValue() {
    override val asString: String? get() = value
    override fun toString(): String = Json.write(this)
}

data class JsonArray(val items: List<JsonValue>) : JsonValue(), List<JsonValue> by items {
    override val asArray: JsonArray? get() = this
    override fun toString(): String = Json.write(this)
}

/** A JSON object; iteration keeps the order of the text. */
data class JsonObject(val fields: Map<String, JsonValue>) : JsonValue(), Map<String, JsonValue> by fields {
    override val asObject: JsonObject? get() = this
    override fun toString(): String = Json.write(this)

    fun string(name: String): String? = fields[name]?.asString
    fun long(name: String): Long? = fields[name]?.asLong
    fun boolean(name: String): Boolean? = fields[name]?.asBoolean
    fun obj(name: String): JsonObject? = fields[name]?.asObject
    fun array(name: String): JsonArray? = fields[name]?.asArray
}

object Json {
    const val MAX_DEPTH: Int = 512

    /** Parses exactly one JSON value (surrounding whitespace allowed). Throws [JsonException]. */
    @JvmStatic
    fun parse(text: String): JsonValue {
        val p = Parser(text)
        p.skipWs()
        val v = p.value(0)
        p.skipWs()
        if (p.pos != text.length) throw JsonException("unexpected text after the JSON value", p.pos)
        return v
    }

    /** Parses a JSON object, or throws [JsonException] when the text is valid JSON of another type. */
    @JvmStatic
    fun parseObject(text: String): JsonObject =
        parse(text).asObject ?: throw JsonException("expected a JSON object", 0)

    /** Compact JSON text of [value]. */
    @JvmStatic
    fun write(value: JsonValue): String = StringBuilder().also { writeTo(it, value) }.toString()

    /** The JSON string literal for [s], with quotes. */
    @JvmStatic
    fun quote(s: String): String = StringBuilder(s.length + 2).also { writeString(it, s) }.toString()

    /** Builds an object: `Json.obj("a" to JsonNumber(1), "b" to "text", "c" to true, "d" to null)`. */
    @JvmStatic
    fun obj(vararg pairs: Pair<String, Any?>): JsonObject {
        val m = LinkedHashMap<String, JsonValue>()
        for ((k, v) in pairs) m[k] = of(v)
        return JsonObject(m)
    }

    /** Converts null, Boolean, Number (Int/Long only), String, JsonValue, Map and List to a JsonValue. */
    @JvmStatic
    fun of(v: Any?): JsonValue = when (v) {
        null -> JsonNull
        is JsonValue -> v
        is Boolean -> JsonBool(v)
        is Int -> JsonNumber(v.toLong())
        is Long -> JsonNumber(v)
        is String -> JsonString(v)
        is Map<*, *> -> JsonObject(LinkedHashMap<String, JsonValue>().also { m ->
            for ((k, x) in v) m[k as String] = of(x)
        })
        is List<*> -> JsonArray(v.map { of(it) })
        else -> throw IllegalArgumentException("cannot convert ${v.javaClass.name} to JSON")
    }

    private fun writeTo(sb: StringBuilder, v: JsonValue) {
        when (v) {
            is JsonNull -> sb.append("null")
            is JsonBool -> sb.append(if (v.value) "true" else "false")
            is JsonNumber -> sb.append(v.text)
            is JsonString -> writeString(sb, v.value)
            is JsonArray -> {
                sb.append('[')
                v.items.forEachIndexed { i, x -> if (i > 0) sb.append(','); writeTo(sb, x) }
                sb.append(']')
            }
            is JsonObject -> {
                sb.append('{')
                var first = true
                for ((k, x) in v.fields) {
                    if (!first) sb.append(',')
                    first = false
                    writeString(sb, k)
                    sb.append(':')
                    writeTo(sb, x)
                }
                sb.append('}')
            }
        }
    }

    private const val HEX = "0123456789abcdef"

    private fun escapeUnit(sb: StringBuilder, c: Char) {
        val n = c.toInt()
        sb.append("\\u").append(HEX[(n shr 12) and 15]).append(HEX[(n shr 8) and 15])
            .append(HEX[(n shr 4) and 15]).append(HEX[n and 15])
    }

    private fun writeString(sb: StringBuilder, s: String) {
        sb.append('"')
        var i = 0
        val n = s.length
        while (i < n) {
            val c = s[i]
            when {
                c == '"' -> sb.append("\\\"")
                c == '\\' -> sb.append("\\\\")
                c == '\n' -> sb.append("\\n")
                c == '\r' -> sb.append("\\r")
                c == '\t' -> sb.append("\\t")
                c == '\b' -> sb.append("\\b")
                c == '\u000C' -> sb.append("\\f")
                c < ' ' -> escapeUnit(sb, c)
                Character.isHighSurrogate(c) ->
                    if (i + 1 < n && Character.isLowSurrogate(s[i + 1])) {
                        sb.append(c).append(s[i + 1]); i++
                    } else escapeUnit(sb, c)
                Character.isLowSurrogate(c) -> escapeUnit(sb, c)
                else -> sb.append(c)
            }
            i++
        }
        sb.append('"')
    }

    private class Parser(val s: String) {
        var pos = 0

        fun fail(msg: String): Nothing = throw JsonException(msg, pos)

        fun skipWs() {
            while (pos < s.length) {
                val c = s[pos]
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') pos++ else return
            }
        }

        fun value(depth: Int): JsonValue {
            if (pos >= s.length) fail("unexpected end of input")
            return when (val c = s[pos]) {
                '{' -> obj(depth + 1)
                '[' -> arr(depth + 1)
                '"' -> JsonString(str())
                't' -> lit("true", JsonBool(true))
                'f' -> lit("false", JsonBool(false))
                'n' -> lit("null", JsonNull)
                else -> if (c == '-' || c in '0'..'9') num() else fail("unexpected character '$c'")
            }
        }

        fun lit(word: String, v: JsonValue): JsonValue {
            if (!s.startsWith(word, pos)) fail("invalid literal")
            pos += word.length
            return v
        }

        fun obj(depth: Int): JsonObject {
            if (depth > MAX_DEPTH) fail("nesting deeper than $MAX_DEPTH")
            pos++ // {
            val m = LinkedHashMap<String, JsonValue>()
            skipWs()
            if (pos < s.length && s[pos] == '}') { pos++; return JsonObject(m) }
            while (true) {
                skipWs()
                if (pos >= s.length || s[pos] != '"') fail("expected a string key")
                val k = str()
                skipWs()
                if (pos >= s.length || s[pos] != ':') fail("expected ':'")
                pos++
                skipWs()
                m[k] = value(depth)
                skipWs()
                if (pos >= s.length) fail("unterminated object")
                when (s[pos]) {
                    ',' -> pos++
                    '}' -> { pos++; return JsonObject(m) }
                    else -> fail("expected ',' or '}'")
                }
            }
        }

        fun arr(depth: Int): JsonArray {
            if (depth > MAX_DEPTH) fail("nesting deeper than $MAX_DEPTH")
            pos++ // [
            val l = ArrayList<JsonValue>()
            skipWs()
            if (pos < s.length && s[pos] == ']') { pos++; return JsonArray(l) }
            while (true) {
                skipWs()
                l.add(value(depth))
                skipWs()
                if (pos >= s.length) fail("unterminated array")
                when (s[pos]) {
                    ',' -> pos++
                    ']' -> { pos++; return JsonArray(l) }
                    else -> fail("expected ',' or ']'")
                }
            }
        }

        fun hex4(): Int {
            if (pos + 4 > s.length) fail("truncated \\u escape")
            var v = 0
            for (k in 0 until 4) {
                val d = Character.digit(s[pos + k], 16)
                if (d < 0) fail("invalid \\u escape")
                v = (v shl 4) or d
            }
            pos += 4
            return v
        }

        fun str(): String {
            pos++ // opening quote
            val sb = StringBuilder()
            while (true) {
                if (pos >= s.length) fail("unterminated string")
                val c = s[pos]
                when {
                    c == '"' -> { pos++; return sb.toString() }
                    c == '\\' -> {
                        pos++
                        if (pos >= s.length) fail("unterminated escape")
                        when (s[pos++]) {
                            '"' -> sb.append('"')
                            '\\' -> sb.append('\\')
                            '/' -> sb.append('/')
                            'b' -> sb.append('\b')
                            'f' -> sb.append('\u000C')
                            'n' -> sb.append('\n')
                            'r' -> sb.append('\r')
                            't' -> sb.append('\t')
                            'u' -> {
                                val u = hex4()
                                // A high surrogate followed by an escaped low surrogate is one code point;
                                // a lone surrogate escape is kept as that UTF-16 unit (valid JSON text).
                                sb.append(u.toChar())
                            }
                            else -> { pos--; fail("invalid escape") }
                        }
                    }
                    c < ' ' -> fail("raw control character in string")
                    else -> { sb.append(c); pos++ }
                }
            }
        }

        fun num(): JsonNumber {
            val start = pos
            if (s[pos] == '-') pos++
            if (pos >= s.length) fail("truncated number")
            if (s[pos] == '0') pos++
            else if (s[pos] in '1'..'9') { while (pos < s.length && s[pos] in '0'..'9') pos++ }
            else fail("invalid number")
            if (pos < s.length && s[pos] == '.') {
                pos++
                val f = pos
                while (pos < s.length && s[pos] in '0'..'9') pos++
                if (pos == f) fail("digit expected after '.'")
            }
            if (pos < s.length && (s[pos] == 'e' || s[pos] == 'E')) {
                pos++
                if (pos < s.length && (s[pos] == '+' || s[pos] == '-')) pos++
                val f = pos
                while (pos < s.length && s[pos] in '0'..'9') pos++
                if (pos == f) fail("digit expected in exponent")
            }
            return JsonNumber(s.substring(start, pos))
        }
    }
}
