/*
 * JNA mapping of kelpie/browser_gateway_c_api.h (CONTRACT.md §10) and how the library is loaded.
 *
 * Every `char *` the library returns is declared as Pointer (never String) so the binding can read it
 * as UTF-8 and then free it with kelpie_mcp_free_string. Inputs are passed as NUL-terminated UTF-8
 * byte arrays, so the JVM's default charset (not UTF-8 on JDK 17 under LANG=C) never matters.
 */
package kelpie.gateway

import com.sun.jna.Library
import com.sun.jna.Native
import com.sun.jna.Platform
import com.sun.jna.Pointer
import com.sun.jna.ptr.PointerByReference
import java.io.File
import java.nio.ByteBuffer
import java.nio.CharBuffer
import java.nio.charset.CodingErrorAction
import java.nio.charset.StandardCharsets

/** The raw C functions. Use [KelpieBrowserGateway] instead; this is public only for advanced hosts. */
interface KelpieNative : Library {
    fun kelpie_browser_gateway_create(configJson: ByteArray?, errorJsonOut: PointerByReference?): Pointer?
    fun kelpie_browser_gateway_destroy(gw: Pointer?): Int
    fun kelpie_browser_gateway_begin(gw: Pointer?, requestJson: ByteArray?): Pointer?
    fun kelpie_browser_gateway_begin_mcp(gw: Pointer?, jsonrpcJson: ByteArray?): Pointer?
    fun kelpie_browser_gateway_next(gw: Pointer?, transactionOrNull: ByteArray?): Pointer?
    fun kelpie_browser_gateway_advance(gw: Pointer?, resultJson: ByteArray?): Pointer?
    fun kelpie_browser_gateway_cancel(gw: Pointer?, cancelJson: ByteArray?): Pointer?
    fun kelpie_browser_gateway_invalidate_refs(gw: Pointer?, tabIdOrNull: ByteArray?): Int
    /** Static storage: read it, never free it. */
    fun kelpie_browser_gateway_version(): Pointer?
    fun kelpie_mcp_free_string(s: Pointer?)
}

/**
 * Loads libkelpie_browser_gateway once per JVM.
 *
 * Where from, first match wins: the argument of [load]; the system property `kelpie.gateway.library`;
 * the environment variable `KELPIE_GATEWAY_LIBRARY` (a path or a name); else the name
 * `kelpie_browser_gateway`, which JNA searches on `jna.library.path`, `java.library.path` and the
 * system's library paths (e.g. the `lib/` of the install prefix once registered with ldconfig).
 *
 * Open flags: RTLD_NOW | RTLD_GLOBAL by default ([defaultOpenFlags]), passed through
 * `Library.OPTION_OPEN_FLAGS`. RTLD_GLOBAL lets the embedded CPython's extension modules resolve
 * libpython's symbols; the library also promotes libpython to global scope itself on Linux, so
 * RTLD_LOCAL works there too, but GLOBAL is the documented, portable choice. Override with the system
 * property `kelpie.gateway.openFlags` (an integer) or the [load] argument.
 */
object KelpieLibrary {
    const val LIBRARY_PROPERTY: String = "kelpie.gateway.library"
    const val LIBRARY_ENV: String = "KELPIE_GATEWAY_LIBRARY"
    const val OPEN_FLAGS_PROPERTY: String = "kelpie.gateway.openFlags"
    const val DEFAULT_NAME: String = "kelpie_browser_gateway"

    @JvmStatic val RTLD_LAZY: Int = 0x1
    @JvmStatic val RTLD_NOW: Int = 0x2
    /** 0x100 on Linux and most ELF systems, 0x8 on macOS. */
    @JvmStatic val RTLD_GLOBAL: Int = if (Platform.isMac()) 0x8 else 0x100
    /** 0 on Linux, 0x4 on macOS. */
    @JvmStatic val RTLD_LOCAL: Int = if (Platform.isMac()) 0x4 else 0
    @JvmStatic val defaultOpenFlags: Int get() = RTLD_NOW or RTLD_GLOBAL

    @Volatile private var instance: KelpieNative? = null

    /** The path or name actually loaded, once loaded. */
    @Volatile var loadedFrom: String? = null
        private set
    @Volatile var loadedFlags: Int? = null
        private set

    /**
     * Loads the library now (idempotent: a second call returns the loaded one and ignores arguments).
     * Throws UnsatisfiedLinkError when the library cannot be found or opened.
     */
    @JvmStatic
    @JvmOverloads
    @Synchronized
    fun load(pathOrName: String? = null, openFlags: Int? = null): KelpieNative {
        instance?.let { return it }
        val where = pathOrName
            ?: System.getProperty(LIBRARY_PROPERTY)?.takeIf { it.isNotEmpty() }
            ?: System.getenv(LIBRARY_ENV)?.takeIf { it.isNotEmpty() }
            ?: DEFAULT_NAME
        val flags = openFlags ?: System.getProperty(OPEN_FLAGS_PROPERTY)?.let { Integer.decode(it) }
            ?: defaultOpenFlags
        val options = mapOf(Library.OPTION_OPEN_FLAGS to flags)
        val target = if (where.contains(File.separatorChar)) File(where).absolutePath else where
        val lib = Native.load(target, KelpieNative::class.java, options)
        loadedFrom = target
        loadedFlags = flags
        instance = lib
        return lib
    }

    internal val native: KelpieNative get() = instance ?: load()

    /** kelpie_browser_gateway_version(): the library version, e.g. "0.1.0" (static, not freed). */
    @JvmStatic
    fun version(): String = native.kelpie_browser_gateway_version()?.getString(0, "UTF-8") ?: ""

    /**
     * UTF-8 bytes of [s] plus the terminating NUL. An embedded U+0000 (never valid in JSON text, and C
     * would stop there) is passed as U+0001, which is equally invalid anywhere in JSON, so the library
     * refuses the text as a value instead of reading a truncated prefix. Lone surrogates (not encodable
     * as UTF-8) become U+FFFD, the rule the gateway applies to page text (CONTRACT.md §8).
     */
    internal fun cString(s: String?): ByteArray? {
        if (s == null) return null
        val src = if (s.indexOf('\u0000') >= 0) s.replace('\u0000', '\u0001') else s
        val enc = StandardCharsets.UTF_8.newEncoder()
            .onMalformedInput(CodingErrorAction.REPLACE)
            .onUnmappableCharacter(CodingErrorAction.REPLACE)
            .replaceWith(byteArrayOf(0xEF.toByte(), 0xBF.toByte(), 0xBD.toByte()))
        val buf: ByteBuffer = enc.encode(CharBuffer.wrap(src))
        val out = ByteArray(buf.remaining() + 1)
        buf.get(out, 0, out.size - 1)
        return out
    }

    /** [bytes] NUL-terminated, with any zero byte inside replaced by 0x01 (see [cString]). */
    internal fun cBytes(bytes: ByteArray): ByteArray {
        val out = bytes.copyOf(bytes.size + 1)
        for (i in bytes.indices) if (out[i] == 0.toByte()) out[i] = 1
        return out
    }

    /** Reads a returned string as UTF-8 and frees it (in a finally), so no path leaks it. */
    internal fun takeString(p: Pointer?): String? {
        if (p == null) return null
        try {
            return p.getString(0, "UTF-8")
        } finally {
            native.kelpie_mcp_free_string(p)
        }
    }
}
