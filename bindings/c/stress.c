/*
 * stress.c — the ABI under churn (issue 27): every entry point from threads without a Python thread
 * state, while the main thread keeps replacing the gateway they use.
 *
 *   stress [--seconds S] [--workers N] [--churn K] [--lifetime L] [--sticky M] [--hold-us U] [--seed X]
 *
 * - The main thread loops: create a gateway, publish it as the current one, wait U µs (default 0), destroy
 *   the previous one (retrying while it answers KELPIE_GATEWAY_PENDING: a worker's dispatch is out), then
 *   checks that the destroyed handle is refused by destroy, next(NULL) and invalidate_refs, and keeps it in
 *   a ring of stale handles the workers use too.
 * - N worker threads (C threads: none ever had a Python thread state before its first call) each pick, per
 *   iteration, one of: a full tabs.list transaction (authorize -> dispatch -> complete), one whose dispatch
 *   is cancelled (timeout, then the late result retires it; or renderer-closed), an MCP tools/call and
 *   tools/list, capabilities, next(NULL), next(T) of an unknown T, invalidate_refs (all tabs and one),
 *   destroy and calls on a stale or a garbage handle, version, free_string(NULL), create+use+destroy of a
 *   private gateway, create with a bad config, and a begin left waiting for authorization (the lane stays
 *   BUSY until the gateway is destroyed) — on the handle that was current when the worker last
 *   looked (it keeps one for 1..M operations, default 8, as a host keeps the handle it holds), so calls
 *   race the destroy of their gateway and go on after it.
 * - K of the N worker slots are churned: their thread runs 1..L operations and ends, and a fresh thread takes
 *   its place (cffi gives each new thread a thread state on its first call and tears it down when the
 *   thread ends); the other N-K live for the whole run. A thread's first call is drawn from every entry
 *   point, so the shim path sees each of them first.
 *
 * Every answer is checked: non-NULL (the header allows NULL only when malloc fails), valid JSON, a step
 * kind the entry point may give, never an INTERNAL code; a destroyed handle is refused (never answered
 * like a live one); once a dispatch is out the gateway cannot be destroyed, so that transaction must
 * complete, cancel and retire exactly as on a quiet gateway. The summary line is printed after every thread
 * has been joined and the last gateway destroyed; exit status 0 only when nothing unexpected was seen.
 * tools/abi_stress runs it (plain, under AddressSanitizer, ThreadSanitizer, with core dumps, in a loop).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "kelpie_test_support.h" /* kjson.h, the header, the result and cancel text of a step */

#define MAX_WORKERS 64
#define STALE_RING 64

static const char CONFIG[] = "{\"nativeMethods\":[\"get-tabs\"]}";
static const char TABS_LIST[] = "{\"version\":1,\"method\":\"tabs.list\",\"params\":{}}";
static const char CAPABILITIES[] = "{\"version\":1,\"method\":\"capabilities\",\"params\":{}}";
static const char MCP_CALL[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
                               "\"kelpie_browser_control\",\"arguments\":{\"method\":\"tabs.list\",\"params\":{}}}}";
static const char MCP_LIST[] = "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\"}";
static const char TABS_RESULT[] = "{\"success\":true,\"tabs\":[{\"tabId\":\"t1\",\"generation\":1,"
                                  "\"url\":\"about:blank\","
                                  "\"title\":\"\",\"active\":true}]}";

static int n_workers = 6, n_churn = 3, lifetime = 200, sticky = 8, hold_us = 0;
static double seconds = 10;
static unsigned long seed = 1;

static _Atomic uintptr_t current;           /* the gateway workers use now */
static _Atomic uintptr_t stale[STALE_RING]; /* destroyed handles (0 = empty slot) */
static atomic_uint stale_next;
static atomic_int stopping;
static const char *version; /* kelpie_browser_gateway_version() as first seen by main */

/* --------------------------------------------------------------- counters ---- */
enum {
    C_CALLS, C_UNEXPECTED, C_THREADS, C_TRANSACTIONS, C_CANCELLED, C_RETIRED, C_BUSY, C_REFUSED_HANDLE,
    C_CLOSED, C_MCP, C_CREATES, C_DESTROYS, C_PENDING, C_STALE_CHECKS, C_NULLS, C_N
};
static const char *const counter_name[C_N] = {
    "calls", "unexpected", "threads", "transactions", "cancelled", "retired", "busy", "refused_handle",
    "closed_gateway", "mcp", "creates", "destroys", "pending_destroys", "stale_checks", "nulls"};
static atomic_long totals[C_N];

typedef struct {
    long n[C_N];
    unsigned long rng;
    const char *op;         /* what the thread is doing, for messages */
    KelpieBrowserGatewayRef held; /* the handle this worker uses now */
    int keep;               /* operations left before it looks at the current handle again */
} ctx;

static void flush(ctx *c)
{
    for (int i = 0; i < C_N; i++) {
        atomic_fetch_add(&totals[i], c->n[i]);
        c->n[i] = 0;
    }
}

static atomic_int reported;

#define BAD(c, ...)                                                                                  \
    do {                                                                                             \
        (c)->n[C_UNEXPECTED]++;                                                                      \
        if (atomic_fetch_add(&reported, 1) < 40) {                                                   \
            fprintf(stderr, "stress: unexpected (%s, line %d): ", (c)->op, __LINE__);                \
            fprintf(stderr, __VA_ARGS__);                                                            \
            fputc('\n', stderr);                                                                     \
        }                                                                                            \
    } while (0)

static unsigned rnd(ctx *c, unsigned n)
{
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 7;
    c->rng ^= c->rng << 17;
    return (unsigned)(c->rng % n);
}

/* --------------------------------------------------------------- answers ---- */

/* Parse and free a returned string. NULL (allowed only on malloc failure) and unparsable text are
   unexpected; both give NULL. */
static kj_node *take(ctx *c, char *s)
{
    kj_node *n;
    c->n[C_CALLS]++;
    if (s == NULL) {
        c->n[C_NULLS]++;
        BAD(c, "NULL returned");
        return NULL;
    }
    n = kj_parse(s, (size_t)-1);
    if (n == NULL || n->type != KJ_OBJECT)
        BAD(c, "not a JSON object: %.200s", s);
    kelpie_mcp_free_string(s);
    return n;
}

static const char *step_of(const kj_node *n)
{
    const char *s = n ? kj_str(n, "step") : NULL;
    return s ? s : "?";
}

/* 1 if `word` is one of the '|'-separated words of `list`. */
static int one_of(const char *word, const char *list)
{
    size_t w = strlen(word);
    for (const char *p = list; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == w && strncmp(p, word, w) == 0)
            return 1;
        if (!bar)
            break;
        p = bar + 1;
    }
    return 0;
}

/* Error codes wherever a step carries one. INTERNAL is never expected. */
static const char *code_of(const kj_node *n)
{
    static const char *const paths[] = {"error.code", "response.error.code", "response.error.data.code"};
    for (size_t i = 0; n && i < sizeof paths / sizeof *paths; i++) {
        const char *s = kj_str(n, paths[i]);
        if (s)
            return s;
    }
    return NULL;
}

/* The answer's step kind must be in `kinds`; any error code in `codes` ("" = none allowed). Returns 1
   if so. Counted: BUSY; a handle refused by the library (destroyed, unknown: refused_handle); and a call
   that reached its gateway's engine but found it closed (closed_gateway: the call took its reference to
   the gateway before a destroy on another thread finished). */
static int expect(ctx *c, const kj_node *n, const char *kinds, const char *codes)
{
    const char *code;
    if (n == NULL)
        return 0;
    if (!one_of(step_of(n), kinds)) {
        char *text = kj_write(n);
        BAD(c, "step %s, expected %s: %.300s", step_of(n), kinds, text);
        free(text);
        return 0;
    }
    code = code_of(n);
    if (code != NULL && !one_of(code, codes)) {
        char *text = kj_write(n);
        BAD(c, "code %s, expected one of %s: %.300s", code, codes[0] ? codes : "(none)", text);
        free(text);
        return 0;
    }
    if (code != NULL && !strcmp(code, "BUSY"))
        c->n[C_BUSY]++;
    if (code != NULL && !strcmp(code, "INVALID_REQUEST")) {
        const char *m = kj_str(n, "error.message") ? kj_str(n, "error.message") : kj_str(n, "response.error.message");
        if (m && !strncmp(m, "invalid gateway handle", 22))
            c->n[C_REFUSED_HANDLE]++;
        else if (m && !strcmp(m, "this gateway is closed"))
            c->n[C_CLOSED]++;
    }
    return 1;
}

static kj_node *advance(ctx *c, KelpieBrowserGatewayRef gw, const kj_node *step, const char *result)
{
    char *in = kt_result_for(step, result);
    kj_node *r = take(c, kelpie_browser_gateway_advance(gw, in));
    free(in);
    return r;
}

/* --------------------------------------------------------------- operations ---- */

static KelpieBrowserGatewayRef cur(void)
{
    return (KelpieBrowserGatewayRef)atomic_load(&current);
}

static KelpieBrowserGatewayRef a_stale_handle(ctx *c)
{
    uintptr_t h = atomic_load(&stale[rnd(c, STALE_RING)]);
    return (KelpieBrowserGatewayRef)h;
}

/* A successful complete step: a canonical envelope with success:true, or an MCP tools/call result whose
   isError is false. */
static int succeeded(const kj_node *step)
{
    const kj_node *ok = kj_path(step, "response.success");
    const kj_node *err = kj_path(step, "response.result.isError");
    return (ok && ok->type == KJ_TRUE) || (err && err->type == KJ_FALSE);
}

/* A transaction from its first step (begin or begin_mcp) on; how: 0 the renderer answers, 1 the dispatch is
   cancelled (timeout) and its late result retires it, 2 cancelled renderer-closed. The gateway may be
   destroyed until a dispatch is out; from then on it cannot be (destroy answers PENDING), so everything
   after must hold exactly. */

static void drive(ctx *c, KelpieBrowserGatewayRef gw, kj_node *step, int how)
{
    kj_node *next;
    if (step == NULL || strcmp(step_of(step), "authorize")) {
        kj_free(step);
        return;
    }
    next = advance(c, gw, step, "{\"success\":true}");
    kj_free(step);
    step = next;
    /* rejected: the gateway was destroyed while this transaction waited for authorization; complete:
       a method that needs no renderer (capabilities) */
    if (!expect(c, step, "dispatch|complete|rejected", "INVALID_REQUEST|STALE_STEP") ||
        strcmp(step_of(step), "dispatch")) {
        if (!strcmp(step_of(step), "complete")) {
            if (succeeded(step))
                c->n[C_TRANSACTIONS]++;
            else
                BAD(c, "an authorized transaction without a dispatch did not succeed");
        }
        kj_free(step);
        return;
    }
    if (how == 0) { /* the renderer answers */
        next = advance(c, gw, step, TABS_RESULT);
        if (expect(c, next, "complete", "") && succeeded(next))
            c->n[C_TRANSACTIONS]++;
        else if (next)
            BAD(c, "the dispatched transaction did not complete successfully");
        kj_free(next);
    } else { /* cancelled while dispatched: timeout (then the late result retires it) or renderer-closed */
        const char *reason = how == 1 ? "\"reason\":\"timeout\"" : "\"reason\":\"renderer-closed\"";
        char *in = kt_txn_obj(step, reason);
        const char *code = how == 1 ? "TIMEOUT" : "RENDERER_FAILED";
        next = take(c, kelpie_browser_gateway_cancel(gw, in));
        free(in);
        if (expect(c, next, "complete", code))
            c->n[C_CANCELLED]++;
        kj_free(next);
        if (how == 1) {
            next = advance(c, gw, step, TABS_RESULT); /* the late callback */
            if (expect(c, next, "retired", ""))
                c->n[C_RETIRED]++;
            kj_free(next);
        }
    }
    kj_free(step);
}

static void op_transaction(ctx *c, KelpieBrowserGatewayRef gw)
{
    kj_node *step = take(c, kelpie_browser_gateway_begin(gw, TABS_LIST));
    c->op = "begin";
    /* complete: BUSY (another thread's transaction holds the lane) or INVALID_REQUEST (destroyed/closed) */
    if (expect(c, step, "authorize|complete", "BUSY|INVALID_REQUEST"))
        drive(c, gw, step, (int)rnd(c, 4) % 3); /* 0 twice as often */
    else
        kj_free(step);
}

static void op_mcp(ctx *c, KelpieBrowserGatewayRef gw)
{
    kj_node *step;
    c->op = "begin_mcp";
    c->n[C_MCP]++;
    if (rnd(c, 2)) {
        step = take(c, kelpie_browser_gateway_begin_mcp(gw, MCP_LIST));
        expect(c, step, "complete", "INVALID_REQUEST");
        kj_free(step);
        return;
    }
    step = take(c, kelpie_browser_gateway_begin_mcp(gw, MCP_CALL));
    if (expect(c, step, "authorize|complete", "BUSY|INVALID_REQUEST"))
        drive(c, gw, step, 0);
    else
        kj_free(step);
}

static void op_capabilities(ctx *c, KelpieBrowserGatewayRef gw)
{
    kj_node *step = take(c, kelpie_browser_gateway_begin(gw, CAPABILITIES));
    c->op = "begin capabilities";
    if (expect(c, step, "authorize|complete", "BUSY|INVALID_REQUEST"))
        drive(c, gw, step, 0);
    else
        kj_free(step);
}

static void op_next(ctx *c, KelpieBrowserGatewayRef gw)
{
    kj_node *step;
    c->op = "next";
    /* another thread's transaction may be pending on the direct lane */
    step = take(c, kelpie_browser_gateway_next(gw, NULL));
    expect(c, step, "idle|authorize|dispatch|rejected", "INVALID_REQUEST");
    kj_free(step);
    step = take(c, kelpie_browser_gateway_next(gw, "no-such-transaction"));
    expect(c, step, "idle|rejected", "INVALID_REQUEST");
    kj_free(step);
}

static void op_invalidate(ctx *c, KelpieBrowserGatewayRef gw)
{
    int32_t rc = kelpie_browser_gateway_invalidate_refs(gw, rnd(c, 2) ? NULL : "t1");
    c->op = "invalidate_refs";
    c->n[C_CALLS]++;
    if (rc != KELPIE_GATEWAY_OK && rc != KELPIE_GATEWAY_INVALID)
        BAD(c, "invalidate_refs returned %d", rc);
}

/* A destroyed handle is refused by every entry point: never answered like a live gateway. */
static void op_stale(ctx *c)
{
    KelpieBrowserGatewayRef gw = rnd(c, 4) ? a_stale_handle(c) : (KelpieBrowserGatewayRef)(uintptr_t)0x5eed0000dead;
    kj_node *step;
    int32_t rc;
    c->op = "stale handle";
    if (gw == NULL)
        return;
    c->n[C_STALE_CHECKS]++;
    rc = kelpie_browser_gateway_destroy(gw);
    c->n[C_CALLS]++;
    if (rc != KELPIE_GATEWAY_INVALID)
        BAD(c, "destroy of a destroyed handle returned %d", rc);
    rc = kelpie_browser_gateway_invalidate_refs(gw, NULL);
    c->n[C_CALLS]++;
    if (rc != KELPIE_GATEWAY_INVALID)
        BAD(c, "invalidate_refs of a destroyed handle returned %d", rc);
    switch (rnd(c, 5)) {
    case 0:
        step = take(c, kelpie_browser_gateway_begin(gw, TABS_LIST));
        if (expect(c, step, "complete", "INVALID_REQUEST") &&
            (!kj_get(step, "transaction") || kj_get(step, "transaction")->type != KJ_NULL))
            BAD(c, "a destroyed handle's begin named a transaction");
        break;
    case 1:
        step = take(c, kelpie_browser_gateway_begin_mcp(gw, MCP_LIST));
        expect(c, step, "complete", "INVALID_REQUEST");
        if (step && !kj_path(step, "response.error"))
            BAD(c, "a destroyed handle's begin_mcp was answered without an error");
        break;
    case 2:
        step = take(c, kelpie_browser_gateway_next(gw, NULL));
        expect(c, step, "rejected", "INVALID_REQUEST");
        break;
    case 3:
        step = take(c, kelpie_browser_gateway_advance(
                           gw, "{\"transaction\":\"t1\",\"seq\":1,\"result\":{\"success\":true}}"));
        expect(c, step, "rejected", "INVALID_REQUEST");
        break;
    default:
        step = take(c, kelpie_browser_gateway_cancel(gw, "{\"transaction\":\"t1\",\"reason\":\"timeout\"}"));
        expect(c, step, "rejected", "INVALID_REQUEST");
        break;
    }
    kj_free(step);
}

/* A host that begins and walks away: the transaction waits for authorization until its gateway is
   destroyed (which must still succeed: no renderer callback is pending), and the lane answers BUSY. */
static void op_abandon(ctx *c, KelpieBrowserGatewayRef gw)
{
    kj_node *step = take(c, kelpie_browser_gateway_begin(gw, CAPABILITIES));
    c->op = "begin abandoned";
    expect(c, step, "authorize|complete", "BUSY|INVALID_REQUEST");
    kj_free(step);
}

static void op_version_free(ctx *c)
{
    const char *v = kelpie_browser_gateway_version();
    c->op = "version";
    c->n[C_CALLS] += 2;
    if (v == NULL || strcmp(v, version))
        BAD(c, "version %s, expected %s", v ? v : "NULL", version);
    kelpie_mcp_free_string(NULL);
}

/* A private gateway from a worker thread: create, one transaction, destroy; and a refused create. */
static void op_create(ctx *c)
{
    char *err = (char *)1;
    KelpieBrowserGatewayRef gw;
    int32_t rc;
    c->op = "create";
    if (rnd(c, 3) == 0) {
        gw = kelpie_browser_gateway_create("{\"nativeMethods\":[\"no-such-endpoint\"],\"targeting\":7}", &err);
        c->n[C_CALLS]++;
        if (gw != NULL || err == NULL) {
            BAD(c, "a bad config was accepted");
            if (gw)
                kelpie_browser_gateway_destroy(gw);
        } else {
            kj_node *e = take(c, err);
            if (e && (!kj_path(e, "success") || kj_path(e, "success")->type != KJ_FALSE ||
                      kt_is(e, "error.code", "INTERNAL")))
                BAD(c, "a bad config's envelope is not a refusal");
            c->n[C_CALLS]--; /* counted with create */
            kj_free(e);
        }
        return;
    }
    gw = kelpie_browser_gateway_create(CONFIG, &err);
    c->n[C_CALLS]++;
    if (gw == NULL || err != NULL) {
        BAD(c, "create failed: %s", err && err != (char *)1 ? err : "(no error)");
        if (err != (char *)1)
            kelpie_mcp_free_string(err);
        return;
    }
    c->n[C_CREATES]++;
    op_transaction(c, gw);
    c->op = "destroy own";
    rc = kelpie_browser_gateway_destroy(gw);
    c->n[C_CALLS]++;
    if (rc != KELPIE_GATEWAY_OK)
        BAD(c, "destroy of an idle private gateway returned %d", rc);
    else
        c->n[C_DESTROYS]++;
}

static void one_op(ctx *c)
{
    KelpieBrowserGatewayRef gw;
    if (c->keep-- <= 0) {
        c->held = cur();
        c->keep = (int)rnd(c, (unsigned)sticky);
    }
    gw = c->held;
    unsigned pick = rnd(c, 100);
    if (pick < 40)
        op_transaction(c, gw);
    else if (pick < 50)
        op_mcp(c, gw);
    else if (pick < 55)
        op_capabilities(c, gw);
    else if (pick < 70)
        op_next(c, gw);
    else if (pick < 80)
        op_invalidate(c, gw);
    else if (pick < 92)
        op_stale(c);
    else if (pick < 97)
        op_version_free(c);
    else if (pick < 99)
        op_create(c);
    else if (rnd(c, 4) == 0) /* rare: it holds the lane until the gateway goes */
        op_abandon(c, gw);
    else
        op_next(c, gw);
}

/* --------------------------------------------------------------- threads ---- */

typedef struct {
    int slot;
    int churned;
    unsigned long spawn;
} slot_arg;

static void *worker(void *arg)
{
    slot_arg *s = (slot_arg *)arg;
    ctx c = {{0}, 0, "start", NULL, 0};
    long calls;
    c.rng = (seed * 0x9E3779B97F4A7C15ul) ^ ((unsigned long)s->slot << 40) ^ (s->spawn * 0x2545F4914F6CDD1Dul) ^ 1;
    c.n[C_THREADS] = 1;
    calls = s->churned ? 1 + (long)rnd(&c, (unsigned)lifetime) : -1;
    while (!atomic_load(&stopping) && calls != 0) {
        one_op(&c);
        if (calls > 0)
            calls--;
        if (c.n[C_CALLS] > 4096)
            flush(&c);
    }
    flush(&c);
    return NULL;
}

/* A slot keeps one worker alive: it starts one, joins it, starts the next. It never calls the library. */
static void *slot_keeper(void *arg)
{
    slot_arg *s = (slot_arg *)arg;
    do {
        pthread_t th;
        if (pthread_create(&th, NULL, worker, s) != 0) {
            fprintf(stderr, "stress: pthread_create failed\n");
            break;
        }
        pthread_join(th, NULL);
        s->spawn++;
    } while (s->churned && !atomic_load(&stopping));
    return NULL;
}

/* --------------------------------------------------------------- the main thread ---- */

/* Destroy `gw` (retrying while a worker's dispatch is out) and check it is refused afterwards. */
static void retire_gateway(ctx *c, KelpieBrowserGatewayRef gw)
{
    int32_t rc;
    kj_node *step;
    c->op = "main destroy";
    for (;;) {
        rc = kelpie_browser_gateway_destroy(gw);
        c->n[C_CALLS]++;
        if (rc != KELPIE_GATEWAY_PENDING)
            break;
        c->n[C_PENDING]++;
        sched_yield();
    }
    if (rc != KELPIE_GATEWAY_OK) {
        BAD(c, "destroy returned %d", rc);
        return;
    }
    c->n[C_DESTROYS]++;
    c->op = "main after destroy";
    rc = kelpie_browser_gateway_destroy(gw);
    c->n[C_CALLS]++;
    if (rc != KELPIE_GATEWAY_INVALID)
        BAD(c, "second destroy returned %d", rc);
    step = take(c, kelpie_browser_gateway_next(gw, NULL));
    expect(c, step, "rejected", "INVALID_REQUEST");
    kj_free(step);
    rc = kelpie_browser_gateway_invalidate_refs(gw, NULL);
    c->n[C_CALLS]++;
    if (rc != KELPIE_GATEWAY_INVALID)
        BAD(c, "invalidate_refs after destroy returned %d", rc);
    c->n[C_STALE_CHECKS]++;
    atomic_store(&stale[atomic_fetch_add(&stale_next, 1) % STALE_RING], (uintptr_t)gw);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    pthread_t keepers[MAX_WORKERS];
    slot_arg slots[MAX_WORKERS];
    ctx c = {{0}, 0, "main", NULL, 0};
    KelpieBrowserGatewayRef gw, old;
    char *err = NULL;
    double t0, t1;
    long rotations = 0;
    int ok;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--workers")) n_workers = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--churn")) n_churn = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--lifetime")) lifetime = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--hold-us")) hold_us = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sticky")) sticky = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed")) seed = strtoul(argv[i + 1], NULL, 0);
        else {
            fprintf(stderr, "stress: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (n_workers < 1 || n_workers > MAX_WORKERS || n_churn < 0 || n_churn > n_workers || lifetime < 1 || sticky < 1 ||
        seconds <= 0) {
        fprintf(stderr, "usage: %s [--seconds S] [--workers N<=64] [--churn K<=N] [--lifetime L>=1] [--sticky M>=1] "
                        "[--hold-us U] [--seed X]\n", argv[0]);
        return 2;
    }
    c.rng = seed | 1;
    version = kelpie_browser_gateway_version();
    /* The main thread starts the runtime (as a C host's would): it owns the interpreter's first thread state. */
    gw = kelpie_browser_gateway_create(CONFIG, &err);
    if (gw == NULL) {
        fprintf(stderr, "stress: create failed: %s\n", err ? err : "?");
        return 1;
    }
    c.n[C_CREATES]++;
    atomic_store(&current, (uintptr_t)gw);
    t0 = now();
    for (int i = 0; i < n_workers; i++) {
        slots[i] = (slot_arg){i, i < n_churn, 0};
        pthread_create(&keepers[i], NULL, slot_keeper, &slots[i]);
    }
    while (now() - t0 < seconds) {
        old = gw;
        c.op = "main create";
        gw = kelpie_browser_gateway_create(CONFIG, &err);
        c.n[C_CALLS]++;
        if (gw == NULL) {
            BAD(&c, "create failed: %s", err ? err : "?");
            kelpie_mcp_free_string(err);
            gw = old;
            continue;
        }
        c.n[C_CREATES]++;
        atomic_store(&current, (uintptr_t)gw);
        if (hold_us > 0)
            usleep((useconds_t)hold_us);
        retire_gateway(&c, old);
        rotations++;
        if (c.n[C_CALLS] > 4096)
            flush(&c);
    }
    atomic_store(&stopping, 1);
    for (int i = 0; i < n_workers; i++)
        pthread_join(keepers[i], NULL);
    retire_gateway(&c, gw);
    t1 = now();
    flush(&c);
    ok = atomic_load(&totals[C_UNEXPECTED]) == 0;
    printf("stress: workers=%d churn=%d lifetime=%d sticky=%d hold_us=%d seed=%lu rotations=%ld", n_workers, n_churn,
           lifetime, sticky, hold_us, seed, rotations);
    for (int i = 0; i < C_N; i++)
        printf(" %s=%ld", counter_name[i], atomic_load(&totals[i]));
    printf(" seconds=%.2f calls_per_s=%.0f result=%s\n", t1 - t0, (double)atomic_load(&totals[C_CALLS]) / (t1 - t0),
           ok ? "OK" : "FAIL");
    return ok ? 0 : 1;
}
