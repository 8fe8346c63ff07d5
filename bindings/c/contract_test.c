/*
 * C contract tests of libkelpie_browser_gateway (CONTRACT.md §4, §5, §8, §10; issue 4).
 *
 *   contract_test [--quick]
 *
 * --quick skips the payloads over 1 MiB (used under valgrind, where CPython runs ~50x slower).
 * The shared request/response vectors (fixtures/vectors) are replayed by vector_replay.c.
 * Prints one line per failed check and a summary; exit status 0 only when every check passed.
 */
#include <pthread.h>

#include "kelpie_test_support.h"

static const char *CONFIG =
    "{\"nativeMethods\":[\"get-tabs\",\"switch-tab\",\"new-tab\",\"close-tab\",\"navigate\","
    "\"browser-control-evaluate\"],\"fixedReader\":true}";
static const char *TABS_LIST = "{\"version\":1,\"id\":\"r1\",\"method\":\"tabs.list\",\"params\":{}}";
static const char *TABS_SELECT = "{\"version\":1,\"id\":7,\"method\":\"tabs.select\",\"params\":{\"tabId\":\"t2\"}}";
static const char *SNAPSHOT_VALUE =
    "{\"url\":\"https://example.test/\",\"title\":\"Example\",\"text\":\"Hello\",\"truncated\":false,"
    "\"elements\":[{\"handle\":\"h-0\",\"tag\":\"button\",\"role\":\"button\",\"label\":\"Go\"}]}";
static int quick = 0;

static KelpieBrowserGatewayRef make_gateway(const char *config)
{
    char *err = NULL;
    KelpieBrowserGatewayRef gw = kelpie_browser_gateway_create(config, &err);
    if (gw == NULL) {
        fprintf(stderr, "FATAL: create failed: %s\n", err ? err : "(no error)");
        exit(98);
    }
    kelpie_mcp_free_string(err);
    return gw;
}

static void destroy_ok(KelpieBrowserGatewayRef gw)
{
    int32_t rc = kelpie_browser_gateway_destroy(gw);
    KT_CHECK(rc == KELPIE_GATEWAY_OK, "destroy returned %d", rc);
}

/* The envelope of a complete step, checked for failure `code`. */
static void check_refused(const kj_node *step, const char *code, int may_have_completed)
{
    const kj_node *mhc = kj_path(step, "response.mayHaveCompleted");
    KT_CHECK(!strcmp(kt_step(step), "complete"), "expected complete, got %s", kt_step(step));
    KT_CHECK(kt_is(step, "response.error.code", code), "expected %s, got %s", code,
             kj_str(step, "response.error.code") ? kj_str(step, "response.error.code") : "(none)");
    KT_CHECK(mhc && mhc->type == (may_have_completed ? KJ_TRUE : KJ_FALSE), "mayHaveCompleted should be %d",
             may_have_completed);
}

static void check_rejected(const kj_node *step, const char *code)
{
    KT_CHECK(!strcmp(kt_step(step), "rejected"), "expected rejected, got %s", kt_step(step));
    KT_CHECK(kt_is(step, "error.code", code), "expected %s, got %s", code,
             kj_str(step, "error.code") ? kj_str(step, "error.code") : "(none)");
}

static void test_version(void)
{
    const char *v = kelpie_browser_gateway_version();
    kt_test = "version";
    KT_CHECK(v != NULL && strlen(v) >= 5 && strchr(v, '.') != NULL, "version %s", v ? v : "NULL");
    KT_CHECK(v == kelpie_browser_gateway_version(), "version must be static storage");
}

static void test_create(void)
{
    static const struct { const char *config, *code, *pointer; } bad[] = {
        {"{", "INVALID_JSON", NULL},
        {"", "INVALID_JSON", NULL},
        {"[]", "INVALID_REQUEST", NULL},
        {"{\"nativeMethods\":\"get-tabs\"}", "INVALID_REQUEST", "/nativeMethods"},
        {"{\"bogus\":true}", "INVALID_REQUEST", "bogus"},
        {"{\"targeting\":\"sideways\"}", "INVALID_REQUEST", "/targeting"},
        {"{\"extensions\":[{\"name\":\"Bad Name\",\"method\":\"x\",\"description\":\"d\",\"inputSchema\":{},"
         "\"mutates\":false}]}", "INVALID_REQUEST", "/extensions/0"},
    };
    char *err = (char *)"untouched";
    KelpieBrowserGatewayRef gw;
    kt_test = "create";
    gw = kelpie_browser_gateway_create("{\"nativeMethods\":[\"get-tabs\"]}", &err);
    KT_CHECK(gw != NULL, "good config refused");
    KT_CHECK(err == NULL, "error_json_out must be NULL on success");
    destroy_ok(gw);
    gw = kelpie_browser_gateway_create("{}", NULL); /* error_json_out may be NULL */
    KT_CHECK(gw != NULL, "empty config refused");
    destroy_ok(gw);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kj_node *env;
        err = NULL;
        gw = kelpie_browser_gateway_create(bad[i].config, &err);
        KT_CHECK(gw == NULL, "bad config %s admitted", bad[i].config);
        if (gw) kelpie_browser_gateway_destroy(gw);
        env = kt_take(err, "create error_json_out");
        KT_CHECK(kj_path(env, "success") && kj_path(env, "success")->type == KJ_FALSE, "success:false");
        KT_CHECK(kt_is(env, "error.code", bad[i].code), "config %s: expected %s got %s", bad[i].config,
                 bad[i].code, kj_str(env, "error.code") ? kj_str(env, "error.code") : "(none)");
        KT_CHECK(kj_path(env, "version") && kj_path(env, "version")->number == 1, "envelope version");
        if (bad[i].pointer) {
            const char *msg = kj_str(env, "error.message");
            KT_CHECK(msg && strstr(msg, bad[i].pointer), "message should name %s: %s", bad[i].pointer,
                     msg ? msg : "(none)");
        }
        kj_free(env);
    }
    /* bad config with error_json_out == NULL: nothing leaks (valgrind), NULL returned */
    KT_CHECK(kelpie_browser_gateway_create("{\"bogus\":1}", NULL) == NULL, "bad config, NULL out");
    err = (char *)"untouched";
    KT_CHECK(kelpie_browser_gateway_create(NULL, &err) == NULL, "NULL config");
    {
        kj_node *env = kt_take(err, "create(NULL)");
        KT_CHECK(kt_is(env, "error.code", "INVALID_JSON"), "NULL config code");
        kj_free(env);
    }
}

static void test_full_transaction(void)
{
    KelpieBrowserGatewayRef gw = make_gateway(CONFIG);
    kj_node *step, *next;
    kt_trace trace = {0};
    kt_test = "full_transaction";
    step = kt_take(kelpie_browser_gateway_begin(gw, TABS_LIST), "begin");
    KT_CHECK(!strcmp(kt_step(step), "authorize"), "first step %s", kt_step(step));
    KT_CHECK(kt_is(step, "lane", "direct"), "lane direct");
    KT_CHECK(kt_is(step, "request.method", "tabs.list"), "normalized request");
    KT_CHECK(kj_path(step, "mutates") && kj_path(step, "mutates")->type == KJ_FALSE, "tabs.list is a read");
    {
        /* next re-reads the pending step without changing anything */
        char txn[128];
        kj_node *again, *lane;
        kt_txn_text(step, txn, sizeof txn);
        again = kt_take(kelpie_browser_gateway_next(gw, txn), "next");
        KT_CHECK(kj_equal(again, step), "next(T) must equal the pending step");
        lane = kt_take(kelpie_browser_gateway_next(gw, NULL), "next(NULL)");
        KT_CHECK(kj_equal(lane, step), "next(NULL) = the direct lane's pending step");
        kj_free(again);
        kj_free(lane);
    }
    next = kt_advance(gw, step, "{\"success\":true}");
    KT_CHECK(!strcmp(kt_step(next), "dispatch"), "after authorize: %s", kt_step(next));
    KT_CHECK(kt_is(next, "method", "get-tabs"), "dispatch get-tabs");
    KT_CHECK(kj_path(next, "params") && kj_path(next, "params")->type == KJ_OBJECT, "params object");
    KT_CHECK(kj_path(next, "seq") && kj_path(step, "seq") &&
                 kj_path(next, "seq")->number > kj_path(step, "seq")->number, "seq increases");
    kj_free(step);
    step = kt_drive(gw, next, NULL, &trace);
    KT_CHECK(!strcmp(kt_step(step), "complete"), "ends complete");
    KT_CHECK(kj_path(step, "response.success") && kj_path(step, "response.success")->type == KJ_TRUE, "success");
    KT_CHECK(kt_is(step, "response.id", "r1"), "id echoed");
    KT_CHECK(kt_is(step, "response.result.tabs.0.tabId", "t1"), "tabs passed through");
    KT_CHECK(trace.dispatches == 1, "exactly one dispatch, got %d", trace.dispatches);
    kj_free(step);
    step = kt_take(kelpie_browser_gateway_next(gw, NULL), "next idle");
    KT_CHECK(!strcmp(kt_step(step), "idle"), "idle after complete: %s", kt_step(step));
    kj_free(step);
    /* a mutation: authorize, dispatch switch-tab, complete */
    memset(&trace, 0, sizeof trace);
    step = kt_run(gw, TABS_SELECT, NULL, &trace);
    KT_CHECK(kj_path(step, "response.success") && kj_path(step, "response.success")->type == KJ_TRUE,
             "tabs.select succeeds");
    KT_CHECK(kt_is(step, "response.result.tabId", "t2"), "selected t2");
    KT_CHECK(trace.authorizations >= 1 && trace.dispatches == 1 && !strcmp(trace.methods[0], "switch-tab"),
             "one switch-tab dispatch");
    kj_free(step);
    /* refused by the host's policy at authorize */
    step = kt_take(kelpie_browser_gateway_begin(gw, TABS_LIST), "begin");
    next = kt_advance(gw, step,
                      "{\"success\":false,\"error\":{\"code\":\"NOT_AUTHORIZED\",\"message\":\"policy says no\"}}");
    check_refused(next, "NOT_AUTHORIZED", 0);
    kj_free(step);
    kj_free(next);
    /* answered by the gateway: capabilities */
    memset(&trace, 0, sizeof trace);
    step = kt_run(gw, "{\"version\":1,\"method\":\"capabilities\",\"params\":{}}", NULL, &trace);
    KT_CHECK(kj_path(step, "response.result.methods") != NULL, "capabilities lists methods");
    KT_CHECK(trace.dispatches == 0, "capabilities needs no dispatch");
    kj_free(step);
    destroy_ok(gw);
}

static void test_busy(void)
{
    KelpieBrowserGatewayRef gw = make_gateway(CONFIG);
    kj_node *first, *busy, *done;
    const kj_node *retry;
    kt_test = "busy";
    first = kt_take(kelpie_browser_gateway_begin(gw, TABS_LIST), "begin");
    busy = kt_take(kelpie_browser_gateway_begin(gw, TABS_SELECT), "begin 2");
    check_refused(busy, "BUSY", 0);
    retry = kj_path(busy, "response.error.retryable");
    KT_CHECK(retry && retry->type == KJ_TRUE, "BUSY is retryable");
    done = kt_drive(gw, first, NULL, NULL); /* the first transaction is untouched */
    KT_CHECK(kj_path(done, "response.success") && kj_path(done, "response.success")->type == KJ_TRUE,
             "first transaction still completes");
    kj_free(busy);
    kj_free(done);
    destroy_ok(gw);
}

/* Begin `request`, advance to its first dispatch; returns the dispatch step. */
static kj_node *to_dispatch(KelpieBrowserGatewayRef gw, const char *request)
{
    kj_node *step = kt_take(kelpie_browser_gateway_begin(gw, request), "begin");
    while (!strcmp(kt_step(step), "authorize")) {
        kj_node *next = kt_advance(gw, step, "{\"success\":true}");
        kj_free(step);
        step = next;
    }
    KT_CHECK(!strcmp(kt_step(step), "dispatch"), "expected dispatch, got %s", kt_step(step));
    return step;
}

static void test_cancel(void)
{
    KelpieBrowserGatewayRef gw = make_gateway(CONFIG);
    kj_node *step, *done, *late, *busy, *again;
    char *late_result;
    kt_test = "cancel_authorize";
    step = kt_take(kelpie_browser_gateway_begin(gw, TABS_SELECT), "begin");
    done = kt_cancel(gw, step, "cancelled");
    check_refused(done, "CANCELLED", 0);
    kj_free(done);
    late = kt_advance(gw, step, "{\"success\":true}");
    check_rejected(late, "STALE_STEP");
    kj_free(late);
    kj_free(step);
    again = kt_run(gw, TABS_LIST, NULL, NULL); /* lane free at once: nothing was dispatched */
    KT_CHECK(kj_path(again, "response.success") && kj_path(again, "response.success")->type == KJ_TRUE,
             "lane free after cancel during authorize");
    kj_free(again);

    kt_test = "cancel_read";
    step = to_dispatch(gw, TABS_LIST);
    done = kt_cancel(gw, step, "timeout");
    check_refused(done, "TIMEOUT", 0);
    kj_free(done);
    busy = kt_take(kelpie_browser_gateway_begin(gw, TABS_LIST), "begin while retiring");
    check_refused(busy, "BUSY", 0);
    kj_free(busy);
    KT_CHECK(kelpie_browser_gateway_destroy(gw) == KELPIE_GATEWAY_PENDING, "destroy while pending (read)");
    late_result = kt_fake_renderer(step, NULL);
    late = kt_advance(gw, step, late_result);
    KT_CHECK(!strcmp(kt_step(late), "retired"), "late callback after cancel -> retired, got %s", kt_step(late));
    kj_free(late);
    late = kt_advance(gw, step, late_result); /* a duplicate of the late callback */
    check_rejected(late, "STALE_STEP");
    kj_free(late);
    free(late_result);
    kj_free(step);

    kt_test = "cancel_mutation";
    step = to_dispatch(gw, TABS_SELECT);
    KT_CHECK(kj_path(step, "mutates") && kj_path(step, "mutates")->type == KJ_TRUE, "switch-tab mutates");
    done = kt_cancel(gw, step, "cancelled");
    check_refused(done, "CANCELLED", 1);
    kj_free(done);
    kt_test = "destroy_while_pending";
    KT_CHECK(kelpie_browser_gateway_destroy(gw) == KELPIE_GATEWAY_PENDING, "destroy refused while pending");
    again = kt_take(kelpie_browser_gateway_next(gw, NULL), "next after refused destroy");
    KT_CHECK(strcmp(kt_step(again), "rejected") != 0, "gateway intact after PENDING: %s", kt_step(again));
    kj_free(again);
    {
        char *retire = kt_txn_obj(step, "\"retire\":\"renderer-closed\"");
        late = kt_take(kelpie_browser_gateway_advance(gw, retire), "retire");
        KT_CHECK(!strcmp(kt_step(late), "retired"), "renderer-closed retires, got %s", kt_step(late));
        kj_free(late);
        free(retire);
    }
    kj_free(step);
    again = kt_run(gw, TABS_LIST, NULL, NULL);
    KT_CHECK(kj_path(again, "response.success") && kj_path(again, "response.success")->type == KJ_TRUE,
             "lane free after retirement");
    kj_free(again);
    kt_test = "double_destroy";
    destroy_ok(gw);
    KT_CHECK(kelpie_browser_gateway_destroy(gw) == KELPIE_GATEWAY_INVALID, "double destroy refused");
    again = kt_take(kelpie_browser_gateway_begin(gw, TABS_LIST), "begin on destroyed");
    check_refused(again, "INVALID_REQUEST", 0);
    kj_free(again);
    KT_CHECK(kelpie_browser_gateway_invalidate_refs(gw, NULL) == KELPIE_GATEWAY_INVALID, "invalidate destroyed");
}

static void test_stale_seq(void)
{
    KelpieBrowserGatewayRef gw = make_gateway(CONFIG);
    kj_node *step, *r, *done;
    char forged[256], *good;
    const kj_node *seq;
    kt_test = "stale_seq";
    step = to_dispatch(gw, TABS_LIST);
    seq = kj_get(step, "seq");
    {
        char *t = kj_write(kj_get(step, "transaction"));
        snprintf(forged, sizeof forged, "{\"transaction\":%s,\"seq\":%.0f,\"result\":{\"success\":true,\"tabs\":[]}}",
                 t, seq->number + 1);
        r = kt_take(kelpie_browser_gateway_advance(gw, forged), "advance seq+1");
        check_rejected(r, "STALE_STEP");
        kj_free(r);
        snprintf(forged, sizeof forged, "{\"transaction\":%s,\"seq\":%.0f,\"result\":{\"success\":true,\"tabs\":[]}}",
                 t, seq->number - 1);
        r = kt_take(kelpie_browser_gateway_advance(gw, forged), "advance seq-1");
        check_rejected(r, "STALE_STEP");
        kj_free(r);
        free(t);
    }
    r = kt_take(kelpie_browser_gateway_advance(
                    gw, "{\"transaction\":\"forged-transaction\",\"seq\":1,\"result\":{\"success\":true}}"),
                "advance forged transaction");
    check_rejected(r, "STALE_STEP");
    kj_free(r);
    r = kt_take(kelpie_browser_gateway_advance(gw, "{\"transaction\":"), "advance malformed");
    check_rejected(r, "INVALID_REQUEST");
    kj_free(r);
    r = kt_take(kelpie_browser_gateway_advance(gw, "[1,2]"), "advance array");
    check_rejected(r, "INVALID_REQUEST");
    kj_free(r);
    r = kt_take(kelpie_browser_gateway_cancel(gw, "{\"transaction\":\"x\",\"reason\":\"bored\"}"), "cancel bad reason");
    KT_CHECK(!strcmp(kt_step(r), "rejected"), "bad cancel rejected");
    kj_free(r);
    /* nothing changed: the pending step is the same and the real result still completes it */
    r = kt_take(kelpie_browser_gateway_next(gw, NULL), "next");
    KT_CHECK(kj_equal(r, step), "pending step unchanged after rejected inputs");
    kj_free(r);
    good = kt_fake_renderer(step, NULL);
    done = kt_advance(gw, step, good);
    KT_CHECK(!strcmp(kt_step(done), "complete"), "real result completes");
    kj_free(done);
    r = kt_advance(gw, step, good); /* duplicated callback */
    check_rejected(r, "STALE_STEP");
    kj_free(r);
    free(good);
    kj_free(step);
    destroy_ok(gw);
}

struct invalidator { KelpieBrowserGatewayRef gw; int calls, ok; };

static void *invalidate_thread(void *arg)
{
    struct invalidator *inv = (struct invalidator *)arg;
    for (int i = 0; i < inv->calls; i++) {
        int32_t rc = kelpie_browser_gateway_invalidate_refs(inv->gw, (i & 1) ? "t1" : NULL);
        if (rc == KELPIE_GATEWAY_OK) inv->ok++;
    }
    return NULL;
}

static void test_invalidate_from_thread(void)
{
    KelpieBrowserGatewayRef gw = make_gateway(CONFIG);
    kj_node *snap, *step, *done;
    const char *ref;
    char req[512];
    pthread_t th;
    struct invalidator inv = {gw, 200, 0};
    kt_test = "invalidate_thread";
    snap = kt_run(gw, "{\"version\":1,\"method\":\"tab.snapshot\",\"params\":{\"tabId\":\"t1\"}}", SNAPSHOT_VALUE, NULL);
    ref = kj_str(snap, "response.result.elements.0.ref");
    KT_CHECK(ref != NULL, "snapshot gives a ref");
    {
        char *text = kj_write(snap);
        KT_CHECK(text && strstr(text, "h-0") == NULL, "renderer handles never appear in a response");
        free(text);
    }
    snprintf(req, sizeof req, "{\"version\":1,\"method\":\"tab.click\",\"params\":{\"tabId\":\"t1\",\"ref\":\"%s\"}}",
             ref ? ref : "s0e0");
    /* a transaction is in dispatch while another thread invalidates: the calls return at once */
    step = to_dispatch(gw, TABS_LIST);
    pthread_create(&th, NULL, invalidate_thread, &inv);
    pthread_join(th, NULL);
    KT_CHECK(inv.ok == inv.calls, "invalidate_refs during a transaction: %d/%d OK", inv.ok, inv.calls);
    done = kt_drive(gw, step, NULL, NULL);
    KT_CHECK(!strcmp(kt_step(done), "complete"), "transaction completes");
    kj_free(done);
    done = kt_run(gw, req, "{\"clicked\":true}", NULL);
    check_refused(done, "REFS_INVALIDATED", 0);
    kj_free(done);
    KT_CHECK(kelpie_browser_gateway_invalidate_refs(gw, "\xff\xfe") == KELPIE_GATEWAY_INVALID, "non-UTF-8 tab id");
    kj_free(snap);
    destroy_ok(gw);
}

/* A thread's first call into the runtime goes through the cffi shim (which gives the thread its one
   Python thread state); every later call on a live handle crosses directly with the C API (docs/c-abi.md,
   "Costs"). Both paths must give the same bytes: here each fresh thread asks the same things twice. */
struct two_paths { KelpieBrowserGatewayRef gw; int order, same, complete; };

static void *two_paths_thread(void *arg)
{
    struct two_paths *tp = (struct two_paths *)arg;
    /* an unknown transaction (answered by the engine) and text that is not UTF-8 (refused at the
       boundary, by the shim on its path and by C on the direct one), the thread's first call alternating */
    static const char *const asks[] = {"no-such-transaction", "\xff\xfe"};
    for (int k = 0; k < 2; k++) {
        int i = (k + tp->order) % 2;
        char *first = kelpie_browser_gateway_next(tp->gw, asks[i]);
        char *second = kelpie_browser_gateway_next(tp->gw, asks[i]);
        tp->same += first != NULL && second != NULL && !strcmp(first, second) &&
                    (i == 0 || strstr(first, "\"INVALID_REQUEST\"") != NULL);
        kelpie_mcp_free_string(first);
        kelpie_mcp_free_string(second);
    }
    for (int i = 0; i < 2; i++) {
        kj_node *done = kt_run(tp->gw, TABS_LIST, NULL, NULL);
        tp->complete += kt_is(done, "step", "complete") && kj_path(done, "response.success") &&
                        kj_path(done, "response.success")->type == KJ_TRUE;
        kj_free(done);
    }
    return NULL;
}

static void test_first_call_of_a_thread(void)
{
    KelpieBrowserGatewayRef gw = make_gateway(CONFIG);
    kt_test = "first_call_of_a_thread";
    for (int t = 0; t < 3; t++) {
        pthread_t th;
        struct two_paths tp = {gw, t, 0, 0};
        pthread_create(&th, NULL, two_paths_thread, &tp);
        pthread_join(th, NULL);
        KT_CHECK(tp.same == 2, "thread %d: the shim's and the direct answer differ (%d/2 equal)", t, tp.same);
        KT_CHECK(tp.complete == 2, "thread %d: %d/2 transactions completed", t, tp.complete);
    }
    destroy_ok(gw);
}

static void test_bad_handles_and_strings(void)
{
    int local = 0;
    KelpieBrowserGatewayRef garbage[] = {NULL, (KelpieBrowserGatewayRef)(uintptr_t)0xdeadbeef,
                                         (KelpieBrowserGatewayRef)(void *)&local,
                                         (KelpieBrowserGatewayRef)(uintptr_t)1, (KelpieBrowserGatewayRef)(uintptr_t)-1};
    KelpieBrowserGatewayRef gw;
    kj_node *r;
    kt_test = "bad_handles";
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        KelpieBrowserGatewayRef h = garbage[i];
        r = kt_take(kelpie_browser_gateway_begin(h, TABS_LIST), "begin");
        check_refused(r, "INVALID_REQUEST", 0);
        kj_free(r);
        r = kt_take(kelpie_browser_gateway_begin_mcp(h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"), "mcp");
        KT_CHECK(kj_path(r, "response.error.code") != NULL, "begin_mcp on bad handle gives a JSON-RPC error");
        kj_free(r);
        r = kt_take(kelpie_browser_gateway_next(h, NULL), "next");
        check_rejected(r, "INVALID_REQUEST");
        kj_free(r);
        r = kt_take(kelpie_browser_gateway_advance(h, "{}"), "advance");
        check_rejected(r, "INVALID_REQUEST");
        kj_free(r);
        r = kt_take(kelpie_browser_gateway_cancel(h, "{}"), "cancel");
        check_rejected(r, "INVALID_REQUEST");
        kj_free(r);
        KT_CHECK(kelpie_browser_gateway_destroy(h) == KELPIE_GATEWAY_INVALID, "destroy bad handle");
        KT_CHECK(kelpie_browser_gateway_invalidate_refs(h, NULL) == KELPIE_GATEWAY_INVALID, "invalidate bad handle");
    }
    kelpie_mcp_free_string(NULL);

    kt_test = "bad_strings";
    gw = make_gateway(CONFIG);
    r = kt_take(kelpie_browser_gateway_begin(gw, NULL), "begin NULL");
    check_refused(r, "INVALID_JSON", 0);
    kj_free(r);
    r = kt_take(kelpie_browser_gateway_begin_mcp(gw, NULL), "begin_mcp NULL");
    KT_CHECK(kj_path(r, "response.error.code") != NULL, "begin_mcp(NULL) -> JSON-RPC error");
    kj_free(r);
    r = kt_take(kelpie_browser_gateway_advance(gw, NULL), "advance NULL");
    check_rejected(r, "INVALID_REQUEST");
    kj_free(r);
    r = kt_take(kelpie_browser_gateway_cancel(gw, NULL), "cancel NULL");
    check_rejected(r, "INVALID_REQUEST");
    kj_free(r);
    r = kt_take(kelpie_browser_gateway_next(gw, NULL), "next NULL");
    KT_CHECK(!strcmp(kt_step(r), "idle"), "next(NULL) on an idle gateway: %s", kt_step(r));
    kj_free(r);
    {
        static const char *garbage_json[] = {"", "\xff\xfe\xfd", "{\"version\":1,\"method\":\"tabs.list\",\"params\":{}",
                                             "null", "[]", "{\"version\":1,\"method\":\"tabs.list\",\"params\":{},\"x\":1}",
                                             "{\"version\":1,\"method\":\"tabs.list\",\"params\":{\"s\":\"\\ud800\"}}"};
        for (size_t i = 0; i < sizeof garbage_json / sizeof garbage_json[0]; i++) {
            const char *code;
            r = kt_take(kelpie_browser_gateway_begin(gw, garbage_json[i]), "begin garbage");
            code = kj_str(r, "response.error.code");
            KT_CHECK(!strcmp(kt_step(r), "complete") && code &&
                         (!strcmp(code, "INVALID_JSON") || !strcmp(code, "INVALID_REQUEST") ||
                          !strcmp(code, "INVALID_PARAMS")),
                     "garbage #%zu refused (%s)", i, code ? code : "none");
            kj_free(r);
            r = kt_take(kelpie_browser_gateway_begin_mcp(gw, garbage_json[i]), "begin_mcp garbage");
            KT_CHECK(!strcmp(kt_step(r), "complete"), "mcp garbage #%zu completes", i);
            kj_free(r);
            r = kt_take(kelpie_browser_gateway_advance(gw, garbage_json[i]), "advance garbage");
            KT_CHECK(!strcmp(kt_step(r), "rejected"), "advance garbage #%zu rejected", i);
            kj_free(r);
            r = kt_take(kelpie_browser_gateway_cancel(gw, garbage_json[i]), "cancel garbage");
            KT_CHECK(!strcmp(kt_step(r), "rejected"), "cancel garbage #%zu rejected", i);
            kj_free(r);
        }
        r = kt_take(kelpie_browser_gateway_next(gw, "\xff\xfe"), "next non-UTF-8");
        check_rejected(r, "INVALID_REQUEST");
        kj_free(r);
        r = kt_take(kelpie_browser_gateway_next(gw, "no-such-transaction"), "next unknown");
        KT_CHECK(!strcmp(kt_step(r), "idle") || !strcmp(kt_step(r), "rejected"), "next unknown: %s", kt_step(r));
        kj_free(r);
    }
    destroy_ok(gw);
}

/* `size` bytes of JSON: the canonical tabs.list request padded with trailing whitespace. */
static char *padded_request(size_t size, const char *base)
{
    size_t n = strlen(base);
    char *s = (char *)malloc(size + 1);
    memcpy(s, base, n);
    memset(s + n, ' ', size - n);
    s[size] = '\0';
    return s;
}

static void test_request_cap(void)
{
    KelpieBrowserGatewayRef gw = make_gateway(CONFIG);
    const size_t cap = KELPIE_GATEWAY_MAX_REQUEST_BYTES;
    char *req;
    kj_node *r, *done;
    const char *msg;
    kt_test = "request_cap";
    KT_CHECK(cap == 4194304u, "cap is 4 MiB");
    req = padded_request(cap + 1, TABS_LIST);
    r = kt_take(kelpie_browser_gateway_begin(gw, req), "begin over cap");
    check_refused(r, "REQUEST_TOO_LARGE", 0);
    msg = kj_str(r, "response.error.message");
    KT_CHECK(msg && strstr(msg, "4194304") && strstr(msg, "4 MiB"), "message says the cap: %s", msg ? msg : "");
    kj_free(r);
    r = kt_take(kelpie_browser_gateway_begin_mcp(gw, req), "begin_mcp over cap");
    KT_CHECK(kj_path(r, "response.error.code") && kj_path(r, "response.error.code")->number == -32600,
             "JSON-RPC -32600 over cap");
    kj_free(r);
    free(req);
    if (!quick) {
        req = padded_request(cap, TABS_LIST);
        r = kt_take(kelpie_browser_gateway_begin(gw, req), "begin at cap");
        KT_CHECK(!strcmp(kt_step(r), "authorize"), "exactly 4 MiB is admitted: %s %s", kt_step(r),
                 kj_str(r, "response.error.message") ? kj_str(r, "response.error.message") : "");
        done = kt_drive(gw, r, NULL, NULL);
        KT_CHECK(kj_path(done, "response.success") && kj_path(done, "response.success")->type == KJ_TRUE,
                 "and completes");
        kj_free(done);
        free(req);
        /* CONTRACT §3: a maximal tab.type text, every code point astral and escaped as two \uXXXX, fits. */
        {
            const char *head = "{\"version\":1,\"method\":\"tab.type\",\"params\":{\"tabId\":\"t1\",\"ref\":\"s1e0\",\"text\":\"";
            size_t hn = strlen(head), n = hn + 200000 * 12 + 3;
            char *s = (char *)malloc(n + 1), *p;
            const char *code;
            memcpy(s, head, hn);
            p = s + hn;
            for (int i = 0; i < 200000; i++, p += 12) memcpy(p, "\\ud83d\\ude00", 12);
            memcpy(p, "\"}}", 4);
            r = kt_take(kelpie_browser_gateway_begin(gw, s), "begin astral text");
            code = kj_str(r, "response.error.code");
            KT_CHECK(!code || (strcmp(code, "REQUEST_TOO_LARGE") && strcmp(code, "INVALID_PARAMS") &&
                               strcmp(code, "INVALID_JSON")),
                     "maximal escaped text admitted past validation (%s)", code ? code : "authorize");
            if (!strcmp(kt_step(r), "authorize")) kj_free(kt_cancel(gw, r, "cancelled"));
            kj_free(r);
            free(s);
        }
    }
    destroy_ok(gw);
}

static void test_result_cap(void)
{
    KelpieBrowserGatewayRef gw;
    size_t big = KELPIE_GATEWAY_MAX_RESULT_BYTES + 16;
    const char *requests[2] = {TABS_LIST, TABS_SELECT};
    kt_test = "result_cap";
    if (quick) return;
    gw = make_gateway(CONFIG);
    for (int m = 0; m < 2; m++) {
        kj_node *step = to_dispatch(gw, requests[m]), *done;
        const char *head = "{\"success\":true,\"tabs\":[],\"tabId\":\"t2\",\"generation\":1,\"pad\":\"";
        size_t hn = strlen(head);
        char *res = (char *)malloc(big + 8), *in;
        memcpy(res, head, hn);
        memset(res + hn, 'x', big - hn);
        memcpy(res + big, "\"}", 3);
        in = kt_result_for(step, res);
        free(res);
        done = kt_take(kelpie_browser_gateway_advance(gw, in), "advance 32 MiB");
        free(in);
        check_refused(done, "RESPONSE_TOO_LARGE", m == 1);
        kj_free(done);
        kj_free(step);
    }
    destroy_ok(gw);
}

static void test_mcp(void)
{
    KelpieBrowserGatewayRef gw = make_gateway(CONFIG);
    kj_node *r;
    kt_trace trace = {0};
    kt_test = "mcp";
    r = kt_run_mcp(gw, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                       "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}", NULL, NULL);
    KT_CHECK(kt_is(r, "response.result.protocolVersion", "2025-06-18"), "initialize answers the version");
    kj_free(r);
    r = kt_run_mcp(gw, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", NULL, NULL);
    KT_CHECK(!strcmp(kt_step(r), "complete") && kj_path(r, "response") && kj_path(r, "response")->type == KJ_NULL,
             "notification: response null");
    KT_CHECK(kj_path(r, "httpStatus") && kj_path(r, "httpStatus")->number == 202, "notification: 202");
    kj_free(r);
    r = kt_run_mcp(gw, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", NULL, NULL);
    KT_CHECK(kt_is(r, "response.result.tools.0.name", "kelpie_browser_control"), "tools/list");
    kj_free(r);
    r = kt_run_mcp(gw, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
                       "\"kelpie_browser_control\",\"arguments\":{\"method\":\"tabs.list\",\"params\":{}}}}", NULL, &trace);
    KT_CHECK(kj_path(r, "response.result.isError") && kj_path(r, "response.result.isError")->type == KJ_FALSE,
             "tools/call succeeds");
    KT_CHECK(kt_is(r, "response.result.structuredContent.result.tabs.0.tabId", "t1"), "structuredContent");
    KT_CHECK(trace.dispatches == 1, "one dispatch through MCP");
    kj_free(r);
    r = kt_run_mcp(gw, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", NULL, NULL);
    KT_CHECK(kj_path(r, "response.error.code") && kj_path(r, "response.error.code")->number == -32600,
             "batch refused -32600");
    kj_free(r);
    destroy_ok(gw);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else {
            fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
            return 2;
        }
    }
    test_version();
    test_create();
    test_full_transaction();
    test_busy();
    test_cancel();
    test_stale_seq();
    test_invalidate_from_thread();
    test_first_call_of_a_thread();
    test_bad_handles_and_strings();
    test_request_cap();
    test_result_cap();
    test_mcp();
    printf("contract_test: %d checks, %d failures%s\n", kt_checks, kt_failures, quick ? " (quick)" : "");
    return kt_failures ? 1 : 0;
}
