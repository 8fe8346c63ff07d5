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
 * JSON reader like a real host) per second with median/p99 latency, the same transaction through the
 * Python API in the same interpreter (the ABI's overhead ratio), and resident memory after loading, after
 * warm-up and after all transactions (it must not grow after warm-up). Per-call figures are medians of
 * batches (a batch that was preempted on a shared machine is an outlier, not a shift). --summary adds one
 * line of key=value figures for tools/bench_abi.sh. Targets (issue 16): median full transaction at most
 * 40 us, no-op crossing at most 1 us, cold start (first create) at most 150 ms, no RSS growth.
 */
#include <Python.h>
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

int main(int argc, char **argv)
{
    long n_tx = 1000000, n_cross = 1000000, warm = 20000, failures = 0, count_only = -1, py_calls = 20000;
    double t0, cold_ms, first_tx_ms, version_ns, next_ns, round_ns, *lat, tx_s, py_us = -1, py_bytes_us = -1;
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

    /* begin -> dispatch, advance -> complete, free both: no JSON parsing on the host side. */
    {
        long n = n_cross / 20;
        char adv[512];
        t0 = now_ns();
        for (long i = 0; i < n; i++) {
            char *s = kelpie_browser_gateway_begin(gw_noauth, REQ);
            /* "transaction":"tN" is the first member after "step":"dispatch": cut it out cheaply */
            char *t = strstr(s, "\"transaction\":"), *q = strstr(s, "\"seq\":"), *e;
            char *out;
            e = strchr(q + 6, ',');
            snprintf(adv, sizeof adv, "{%.*s,%.*s,\"result\":%s}", (int)(q - t - 1), t, (int)(e - q), q, TABS);
            kelpie_mcp_free_string(s);
            out = kelpie_browser_gateway_advance(gw_noauth, adv);
            if (strncmp(out, "{\"step\":\"complete\"", 18)) failures++;
            kelpie_mcp_free_string(out);
        }
        round_ns = (now_ns() - t0) / (double)n;
    }

    /* the latency array is allocated and touched before the warm-up RSS sample, so it is not "growth" */
    lat = (double *)malloc(sizeof(double) * (size_t)n_tx);
    memset(lat, 0xff, sizeof(double) * (size_t)n_tx); /* not 0: malloc+memset(0) may become calloc */
    for (long i = 0; i < warm; i++) failures += !full_transaction(gw);
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
            "PY_BYTES_MEDIAN_US = _median(_one_bytes)\n",
            Py_file_input, g, g);
        if (r == NULL) PyErr_Print();
        Py_XDECREF(r);
        r = PyDict_GetItemString(g, "PY_MEDIAN_US");
        if (r) py_us = PyFloat_AsDouble(r);
        r = PyDict_GetItemString(g, "PY_BYTES_MEDIAN_US");
        if (r) py_bytes_us = PyFloat_AsDouble(r);
        PyGILState_Release(st);
    }

    printf("kelpie C ABI benchmark (library %s, %ld full transactions)\n", kelpie_browser_gateway_version(), n_tx);
    printf("  %-58s %12.1f ms   (target <= 150)\n", "cold start: first create (starts embedded Python)", cold_ms);
    printf("  %-58s %12.1f ms\n", "  then the first full transaction", first_tx_ms);
    printf("  %-58s %12.1f ns\n", "exported call, no Python (version)", version_ns);
    printf("  %-58s %12.1f ns   (target <= 1000)\n", "exported no-op crossing (next on idle + free)", next_ns);
    printf("  %-58s %12.1f ns\n", "begin + advance + free round (no authorize step)", round_ns);
    printf("  %-58s %12.0f /s\n", "full transactions (authorize, dispatch, complete)", tx_s);
    printf("  %-58s %12.1f us   (target <= 40)\n", "  median full transaction through the ABI", lat[n_tx / 2] / 1e3);
    printf("  %-58s %12.1f us\n", "  p10 full transaction through the ABI", lat[n_tx / 10] / 1e3);
    printf("  %-58s %12.1f us\n", "  p99 full transaction through the ABI", lat[(size_t)((double)n_tx * 0.99)] / 1e3);
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
               "p10_us=%.3f p99_us=%.3f tx_per_s=%.0f py_us=%.3f py_bytes_us=%.3f rss_growth_kib=%ld\n",
               cold_ms, first_tx_ms, version_ns, next_ns, round_ns, lat[n_tx / 2] / 1e3, lat[n_tx / 10] / 1e3,
               lat[(size_t)((double)n_tx * 0.99)] / 1e3, tx_s, py_us, py_bytes_us, rss_end - rss_warm);
    free(lat);
    kelpie_browser_gateway_destroy(gw);
    kelpie_browser_gateway_destroy(gw_noauth);
    return failures ? 1 : 0;
}
