/*
 * bench_abi.c — costs of the Kelpie C ABI, measured side by side in one run (issue 4).
 *
 *   build/abi/bin/bench_abi [--transactions 1000000] [--crossings 1000000] [--summary]
 *   build/abi/bin/bench_abi --cold        (only: first create, then the first full transaction; one line)
 *   build/abi/bin/bench_abi --count N     (only: create, 200 warm-up and N full transactions, untimed: what
 *                                          tools/bench_abi.sh --instructions counts under callgrind)
 *   --py-calls N: timed calls of each Python API row (default 20000)
 *   (built by tools/build.d/30-abi.sh; tools/bench_abi.sh builds and runs it, also side by side with the
 *   library of another commit: tools/bench_abi.sh --base REV)
 *
 * Prints: cold start (first create, which starts the embedded interpreter and imports the engine) and,
 * separately, the first full transaction after it, ns per exported call that does not enter Python
 * (version) and per no-op crossing (next on an idle lane, including its malloc'd JSON and free; answered
 * by the C side since issue 16), ns per begin+advance+free round (a transaction without authorize), full canonical
 * transactions (authorize -> dispatch get-tabs -> complete, the host parsing every step with a small C
 * JSON reader like a real host) per second with median/p99 latency, and resident memory after loading,
 * after warm-up and after all transactions (it must not grow after warm-up). Per-call figures are medians
 * of batches or of single timed calls (a call that was preempted on a shared machine is an outlier, not a
 * shift). --summary adds one line of key=value figures for tools/bench_abi.sh. Targets (issue 16): median
 * full transaction at most 40 us, no-op crossing at most 1 us, cold start (first create) at most 150 ms,
 * no RSS growth.
 *
 * Like with like (the rows that split an ABI transaction into its parts, all in this one process, on the
 * one libpython this library loads — printed in the report; the Makefile links bench_abi with the rpath of
 * the Python the library was built with, so the ABI and the Python API rows run the same interpreter):
 *   - full transaction through the ABI = the host's own JSON work + the ABI's crossings + the engine;
 *   - the host's own JSON work alone: the C reader parsing the same three step texts and building the two
 *     results, no ABI call (what full_transaction spends outside the library);
 *   - minimal host: the same transaction through the ABI with no JSON parsing (transaction and seq cut out
 *     of the step text), against the same minimal host in Python calling Gateway.call_json (the engine
 *     entry the ABI calls) with the same bytes: their difference is the crossings' own cost;
 *   - the Python API with dicts, and with JSON bytes parsed by orjson (the earlier comparison rows).
 */
#include <Python.h>
#include <dlfcn.h>
#include <time.h>

#include "kelpie_test_support.h"

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static long rss_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kib = atol(line + 6);
    fclose(f);
    return kib;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median ns per call of `body` over `batches` batches of `per` calls. */
#define BATCHED_NS(out, batches, per, body)                                                            \
    do {                                                                                               \
        double *_b = (double *)malloc(sizeof(double) * (size_t)(batches));                             \
        for (long _i = 0; _i < (batches); _i++) {                                                      \
            double _t = now_ns();                                                                      \
            for (long _j = 0; _j < (per); _j++) {                                                      \
                body;                                                                                  \
            }                                                                                          \
            _b[_i] = (now_ns() - _t) / (double)(per);                                                  \
        }                                                                                              \
        qsort(_b, (size_t)(batches), sizeof *_b, cmp_double);                                          \
        (out) = _b[(batches) / 2];                                                                     \
        free(_b);                                                                                      \
    } while (0)

static const char *REQ = "{\"version\":1,\"method\":\"tabs.list\",\"params\":{}}";
static const char *TABS = "{\"success\":true,\"tabs\":[{\"tabId\":\"t1\",\"generation\":1,\"url\":\"https://example.test/\","
                          "\"title\":\"Example\",\"active\":true}]}";

/* One full transaction as a host would run it; returns 1 on a successful complete step. */
static int full_transaction(KelpieBrowserGatewayRef gw)
{
    kj_node *step = kt_take(kelpie_browser_gateway_begin(gw, REQ), "begin"), *next;
    int ok;
    next = kt_advance(gw, step, "{\"success\":true}");
    kj_free(step);
    step = kt_advance(gw, next, TABS);
    kj_free(next);
    ok = kt_is(step, "step", "complete") && kj_path(step, "response.success") &&
         kj_path(step, "response.success")->type == KJ_TRUE;
    kj_free(step);
    return ok;
}

/* advance(gw, {"transaction":T,"seq":n,"result":<result>}) with T and n cut out of the step text (no
   parsing: "transaction" and "seq" are the members after "step"); frees `step`. */
static char *cut_advance(KelpieBrowserGatewayRef gw, char *step, const char *result)
{
    char adv[1024];
    char *t = strstr(step, "\"transaction\":"), *q = t ? strstr(t, "\"seq\":") : NULL, *e = q ? strchr(q + 6, ',') : NULL;
    char *out;
    if (e == NULL) {
        kelpie_mcp_free_string(step);
        return NULL;
    }
    snprintf(adv, sizeof adv, "{%.*s,%.*s,\"result\":%s}", (int)(q - t - 1), t, (int)(e - q), q, result);
    kelpie_mcp_free_string(step);
    out = kelpie_browser_gateway_advance(gw, adv);
    return out;
}

/* The same transaction with a minimal host (no JSON parsing); returns 1 on a successful complete step. */
static int minimal_transaction(KelpieBrowserGatewayRef gw)
{
    char *s = kelpie_browser_gateway_begin(gw, REQ);
    int ok;
    s = s ? cut_advance(gw, s, "{\"success\":true}") : NULL;
    s = s ? cut_advance(gw, s, TABS) : NULL;
    ok = s != NULL && !strncmp(s, "{\"step\":\"complete\"", 18) && strstr(s, "\"success\":true") != NULL;
    kelpie_mcp_free_string(s);
    return ok;
}

/* The step texts of one full transaction, captured once, for the host-work-alone row. */
static char *STEP_TEXT[3];

/* What full_transaction does outside the library: parse the three steps with the C reader, build the two
   results; returns 1 when the last one parses as a complete step. */
static int host_work(void)
{
    kj_node *a = kj_parse(STEP_TEXT[0], (size_t)-1), *b, *c;
    char *r1 = kt_result_for(a, "{\"success\":true}"), *r2;
    int ok;
    b = kj_parse(STEP_TEXT[1], (size_t)-1);
    r2 = kt_result_for(b, TABS);
    c = kj_parse(STEP_TEXT[2], (size_t)-1);
    ok = kt_is(c, "step", "complete") && r1[0] == '{' && r2[0] == '{';
    kj_free(a);
    kj_free(b);
    kj_free(c);
    free(r1);
    free(r2);
    return ok;
}

/* Median us of `n` single timed calls of `f`. */
static double median_us(long n, int (*f)(KelpieBrowserGatewayRef), int (*g)(void), KelpieBrowserGatewayRef gw,
                        long *failures)
{
    double *lat = (double *)malloc(sizeof(double) * (size_t)n), m;
    for (long i = 0; i < n; i++) {
        double a = now_ns();
        *failures += f ? !f(gw) : !g();
        lat[i] = now_ns() - a;
    }
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    m = lat[n / 2] / 1e3;
    free(lat);
    return m;
}

/* The file name of the libpython this process runs (the one the library loaded). */
static const char *libpython_path(void)
{
    Dl_info info;
    return dladdr((void *)&Py_IsInitialized, &info) && info.dli_fname ? info.dli_fname : "?";
}

int main(int argc, char **argv)
{
    long n_tx = 1000000, n_cross = 1000000, warm = 20000, failures = 0, count_only = -1, py_calls = 20000;
    double t0, cold_ms, first_tx_ms, version_ns, next_ns, round_ns, *lat, tx_s, py_us = -1, py_bytes_us = -1;
    double host_us, min_us, py_json_us = -1;
    double seconds;
    int cold_only = 0, summary = 0;
    long rss_start, rss_loaded, rss_warm, rss_end;
    char *err = NULL;
    volatile size_t sink = 0;
    KelpieBrowserGatewayRef gw, gw_noauth;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cold")) cold_only = 1;
        else if (!strcmp(argv[i], "--summary")) summary = 1;
        else if (!strcmp(argv[i], "--transactions") && i + 1 < argc) n_tx = atol(argv[++i]);
        else if (!strcmp(argv[i], "--crossings") && i + 1 < argc) n_cross = atol(argv[++i]);
        else if (!strcmp(argv[i], "--count") && i + 1 < argc) count_only = atol(argv[++i]);
        else if (!strcmp(argv[i], "--py-calls") && i + 1 < argc) py_calls = atol(argv[++i]);
    }
    if (py_calls < 100) py_calls = 100;
    if (n_tx < 1000) n_tx = 1000;
    if (warm > n_tx / 2) warm = n_tx / 2;
    rss_start = rss_kib();

    t0 = now_ns();
    gw = kelpie_browser_gateway_create("{\"nativeMethods\":[\"get-tabs\"]}", &err);
    cold_ms = (now_ns() - t0) / 1e6;
    if (!gw) {
        fprintf(stderr, "create failed: %s\n", err ? err : "?");
        return 1;
    }
    t0 = now_ns();
    failures += !full_transaction(gw);
    first_tx_ms = (now_ns() - t0) / 1e6;
    if (count_only >= 0) {
        for (long i = 0; i < 200 + count_only; i++) failures += !full_transaction(gw);
        printf("count=%ld failures=%ld\n", count_only, failures);
        kelpie_browser_gateway_destroy(gw);
        return failures ? 1 : 0;
    }
    if (cold_only) {
        printf("cold_ms=%.3f first_tx_ms=%.3f failures=%ld\n", cold_ms, first_tx_ms, failures);
        kelpie_browser_gateway_destroy(gw);
        return failures ? 1 : 0;
    }
    gw_noauth = kelpie_browser_gateway_create("{\"nativeMethods\":[\"get-tabs\"],\"requireAuthorization\":false}", &err);
    if (!gw_noauth) {
        fprintf(stderr, "create failed: %s\n", err ? err : "?");
        return 1;
    }
    rss_loaded = rss_kib();

    BATCHED_NS(version_ns, n_cross / 1000 + 1, 1000, sink += (size_t)kelpie_browser_gateway_version()[0]);
    BATCHED_NS(next_ns, n_cross / 1000 + 1, 100, {
        char *s = kelpie_browser_gateway_next(gw, NULL);
        sink += (size_t)s[2];
        kelpie_mcp_free_string(s);
    });

    /* the latency array is allocated and touched before the warm-up RSS sample, so it is not "growth" */
    lat = (double *)malloc(sizeof(double) * (size_t)n_tx);
    memset(lat, 0xff, sizeof(double) * (size_t)n_tx); /* not 0: malloc+memset(0) may become calloc */
    for (long i = 0; i < warm; i++) failures += !full_transaction(gw);
    for (long i = 0; i < warm / 4; i++) failures += !minimal_transaction(gw);

    /* begin -> dispatch, advance -> complete, free both: no JSON parsing on the host side (after the
       warm-up, a median of batches like the other per-call rows). */
    BATCHED_NS(round_ns, n_cross / 500 + 3, 20, {
        char *s = kelpie_browser_gateway_begin(gw_noauth, REQ);
        s = cut_advance(gw_noauth, s, TABS);
        if (s == NULL || strncmp(s, "{\"step\":\"complete\"", 18)) failures++;
        kelpie_mcp_free_string(s);
    });

    /* The host's own JSON work alone, on the step texts of one real transaction. */
    {
        kj_node *a, *b;
        char *r;
        STEP_TEXT[0] = kelpie_browser_gateway_begin(gw, REQ);
        a = kt_take(strdup(STEP_TEXT[0]), "begin");
        r = kt_result_for(a, "{\"success\":true}");
        STEP_TEXT[1] = kelpie_browser_gateway_advance(gw, r);
        free(r);
        b = kt_take(strdup(STEP_TEXT[1]), "advance");
        r = kt_result_for(b, TABS);
        STEP_TEXT[2] = kelpie_browser_gateway_advance(gw, r);
        free(r);
        kj_free(a);
        kj_free(b);
        for (long i = 0; i < 2000; i++) failures += !host_work();
    }
    host_us = median_us(n_tx, NULL, host_work, gw, &failures);
    min_us = median_us(n_tx, minimal_transaction, NULL, gw, &failures);
    rss_warm = rss_kib();
    t0 = now_ns();
    for (long i = 0; i < n_tx; i++) {
        double a = now_ns();
        failures += !full_transaction(gw);
        lat[i] = now_ns() - a;
    }
    seconds = (now_ns() - t0) / 1e9;
    tx_s = (double)n_tx / seconds;
    rss_end = rss_kib();
    qsort(lat, (size_t)n_tx, sizeof *lat, cmp_double);

    /* The same transaction through the Python API, in this process's (embedded) interpreter. */
    {
        PyGILState_STATE st = PyGILState_Ensure();
        PyObject *main = PyImport_AddModule("__main__"), *g = PyModule_GetDict(main), *r;
        PyObject *calls = PyLong_FromLong(py_calls);
        PyDict_SetItemString(g, "PY_CALLS", calls);
        Py_XDECREF(calls);
        r = PyRun_String(
            "import time\n"
            "from kelpie_gateway import Gateway\n"
            "_g = Gateway({'nativeMethods': ['get-tabs']})\n"
            "_tabs = {'success': True, 'tabs': [{'tabId': 't1', 'generation': 1, 'url': 'https://example.test/',"
            " 'title': 'Example', 'active': True}]}\n"
            "from kelpie_gateway.jsonio import dumps\n"
            "import orjson\n"
            "def _one_bytes():\n"
            "    s = orjson.loads(dumps(_g.begin(b'{\"version\":1,\"method\":\"tabs.list\",\"params\":{}}')))\n"
            "    s = orjson.loads(dumps(_g.advance(orjson.dumps({'transaction': s['transaction'], 'seq': s['seq'],"
            " 'result': {'success': True}}))))\n"
            "    s = orjson.loads(dumps(_g.advance(orjson.dumps({'transaction': s['transaction'], 'seq': s['seq'],"
            " 'result': _tabs}))))\n"
            "    assert s['response']['success']\n"
            "_cj = _g.call_json\n"
            "def _cut(s, result):\n"
            "    t = s.index(b'\"transaction\":'); q = s.index(b'\"seq\":', t); e = s.index(b',', q + 6)\n"
            "    return b'{' + s[t:q - 1] + b',' + s[q:e] + b',\"result\":' + result + b'}'\n"
            "_tabs_bytes = orjson.dumps(_tabs)\n"
            "def _one_call_json():\n"
            "    s = _cj('begin', b'{\"version\":1,\"method\":\"tabs.list\",\"params\":{}}')\n"
            "    s = _cj('advance', _cut(s, b'{\"success\":true}'))\n"
            "    s = _cj('advance', _cut(s, _tabs_bytes))\n"
            "    assert s.startswith(b'{\"step\":\"complete\"') and b'\"success\":true' in s\n"
            "def _one():\n"
            "    s = _g.begin(b'{\"version\":1,\"method\":\"tabs.list\",\"params\":{}}')\n"
            "    s = _g.advance({'transaction': s['transaction'], 'seq': s['seq'], 'result': {'success': True}})\n"
            "    s = _g.advance({'transaction': s['transaction'], 'seq': s['seq'], 'result': _tabs})\n"
            "    assert s['response']['success']\n"
            "def _median(f):\n"
            "    for _ in range(min(2000, PY_CALLS)): f()\n"
            "    lat = []\n"
            "    for _ in range(PY_CALLS):\n"
            "        a = time.perf_counter_ns(); f(); lat.append(time.perf_counter_ns() - a)\n"
            "    lat.sort()\n"
            "    return lat[len(lat) // 2] / 1000\n"
            "PY_MEDIAN_US = _median(_one)\n"
            "PY_BYTES_MEDIAN_US = _median(_one_bytes)\n"
            "PY_JSON_MEDIAN_US = _median(_one_call_json)\n",
            Py_file_input, g, g);
        if (r == NULL) PyErr_Print();
        Py_XDECREF(r);
        r = PyDict_GetItemString(g, "PY_MEDIAN_US");
        if (r) py_us = PyFloat_AsDouble(r);
        r = PyDict_GetItemString(g, "PY_BYTES_MEDIAN_US");
        if (r) py_bytes_us = PyFloat_AsDouble(r);
        r = PyDict_GetItemString(g, "PY_JSON_MEDIAN_US");
        if (r) py_json_us = PyFloat_AsDouble(r);
        PyGILState_Release(st);
    }

    printf("kelpie C ABI benchmark (library %s, %ld full transactions; every row runs %s)\n",
           kelpie_browser_gateway_version(), n_tx, libpython_path());
    printf("  %-58s %12.1f ms   (target <= 150)\n", "cold start: first create (starts embedded Python)", cold_ms);
    printf("  %-58s %12.1f ms\n", "  then the first full transaction", first_tx_ms);
    printf("  %-58s %12.1f ns\n", "exported call, no Python (version)", version_ns);
    printf("  %-58s %12.1f ns   (target <= 1000)\n", "exported no-op crossing (next on idle + free)", next_ns);
    printf("  %-58s %12.1f ns\n", "begin + advance + free round (no authorize step)", round_ns);
    printf("  %-58s %12.0f /s\n", "full transactions (authorize, dispatch, complete)", tx_s);
    printf("  %-58s %12.1f us   (target <= 40)\n", "  median full transaction through the ABI", lat[n_tx / 2] / 1e3);
    printf("  %-58s %12.1f us\n", "  p10 full transaction through the ABI", lat[n_tx / 10] / 1e3);
    printf("  %-58s %12.1f us\n", "  p99 full transaction through the ABI", lat[(size_t)((double)n_tx * 0.99)] / 1e3);
    printf("  %-58s %12.1f us\n", "  the host's own JSON work alone (C reader, no ABI call)", host_us);
    printf("  %-58s %12.1f us\n", "  median minimal-host transaction through the ABI", min_us);
    printf("  %-58s %12.1f us   (ABI / this = %.2f)\n", "  median same minimal host in Python, Gateway.call_json",
           py_json_us, py_json_us > 0 ? min_us / py_json_us : 0.0);
    printf("  %-58s %12.1f us   (ABI / this = %.2f)\n", "  median same transaction, Python API, dict in/out", py_us,
           py_us > 0 ? lat[n_tx / 2] / 1e3 / py_us : 0.0);
    printf("  %-58s %12.1f us   (ABI / this = %.2f)\n", "  median same transaction, Python API, JSON bytes in/out",
           py_bytes_us, py_bytes_us > 0 ? lat[n_tx / 2] / 1e3 / py_bytes_us : 0.0);
    printf("  %-58s %12ld KiB\n", "RSS at start (library linked, Python not started)", rss_start);
    printf("  %-58s %12ld KiB\n", "RSS after load (interpreter + engine + 2 gateways)", rss_loaded);
    printf("  %-58s %12ld KiB\n", "RSS after warm-up", rss_warm);
    printf("  %-58s %12ld KiB   (growth after warm-up: %+ld KiB)\n", "RSS after all transactions", rss_end,
           rss_end - rss_warm);
    printf("  failures: %ld\n", failures + (long)(sink == 0));
    if (summary)
        printf("summary cold_ms=%.3f first_tx_ms=%.3f version_ns=%.2f next_ns=%.2f round_ns=%.1f median_us=%.3f "
               "p10_us=%.3f p99_us=%.3f tx_per_s=%.0f py_us=%.3f py_bytes_us=%.3f host_us=%.3f min_us=%.3f "
               "py_json_us=%.3f rss_growth_kib=%ld\n",
               cold_ms, first_tx_ms, version_ns, next_ns, round_ns, lat[n_tx / 2] / 1e3, lat[n_tx / 10] / 1e3,
               lat[(size_t)((double)n_tx * 0.99)] / 1e3, tx_s, py_us, py_bytes_us, host_us, min_us, py_json_us,
               rss_end - rss_warm);
    free(lat);
    for (int i = 0; i < 3; i++) kelpie_mcp_free_string(STEP_TEXT[i]);
    kelpie_browser_gateway_destroy(gw);
    kelpie_browser_gateway_destroy(gw_noauth);
    return failures ? 1 : 0;
}
