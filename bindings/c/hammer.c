/*
 * hammer.c — threaded stress of libkelpie_browser_gateway (issue 4).
 *
 *   hammer [--threads 8] [--gateways 4] [--transactions 100000]
 *
 * Host threads share gateways (thread i drives gateway i % gateways, so lanes are contended and BUSY is
 * real). Every thread completes its share of full tabs.list transactions (authorize -> dispatch get-tabs
 * -> complete) with a fake renderer, retrying BUSY refusals; between transactions it also reads another
 * gateway's lane (next) and invalidates refs. At the end every transaction must be accounted for:
 * completed successfully == requested, one dispatch per completed transaction, no (gateway, transaction)
 * dispatched twice, the same transaction id on its authorize, dispatch and complete steps, and no step of
 * any other kind. Prints a summary; exit status 0 only when all of that holds.
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "kelpie_test_support.h"

#define MAX_THREADS 64
#define MAX_GATEWAYS 64

static KelpieBrowserGatewayRef gateways[MAX_GATEWAYS];
static int n_threads = 8, n_gateways = 4;
static long n_transactions = 100000;

typedef struct { int gateway; char txn[24]; } dispatch_key;

typedef struct {
    int index;
    long quota, completed, busy, dispatches, unexpected, mismatched, nexts, invalidations;
    dispatch_key *keys;
} worker;

static void *work(void *arg)
{
    worker *w = (worker *)arg;
    int g = w->index % n_gateways;
    KelpieBrowserGatewayRef gw = gateways[g];
    const char *req = "{\"version\":1,\"method\":\"tabs.list\",\"params\":{}}";
    while (w->completed < w->quota) {
        kj_node *step = kt_take(kelpie_browser_gateway_begin(gw, req), "begin"), *next;
        char txn[24], t2[24];
        const char *kind = kt_step(step);
        if (!strcmp(kind, "complete") && kt_is(step, "response.error.code", "BUSY")) {
            w->busy++;
            kj_free(step);
            sched_yield();
            continue;
        }
        if (strcmp(kind, "authorize")) {
            w->unexpected++;
            fprintf(stderr, "thread %d: begin gave %s\n", w->index, kind);
            kj_free(step);
            continue;
        }
        kt_txn_text(step, txn, sizeof txn);
        next = kt_advance(gw, step, "{\"success\":true}");
        kj_free(step);
        step = next;
        kt_txn_text(step, t2, sizeof t2);
        if (strcmp(kt_step(step), "dispatch") || strcmp(txn, t2)) {
            w->unexpected++;
            fprintf(stderr, "thread %d: after authorize %s (%s)\n", w->index, kt_step(step), t2);
            kj_free(step);
            continue;
        }
        w->keys[w->dispatches].gateway = g;
        memcpy(w->keys[w->dispatches].txn, txn, sizeof txn);
        w->dispatches++;
        next = kt_advance(gw, step,
                          "{\"success\":true,\"tabs\":[{\"tabId\":\"t1\",\"generation\":1,\"url\":\"about:blank\","
                          "\"title\":\"\",\"active\":true}]}");
        kj_free(step);
        step = next;
        kt_txn_text(step, t2, sizeof t2);
        if (strcmp(kt_step(step), "complete") || !kj_path(step, "response.success") ||
            kj_path(step, "response.success")->type != KJ_TRUE) {
            w->unexpected++;
            fprintf(stderr, "thread %d: after dispatch %s\n", w->index, kt_step(step));
        } else if (strcmp(txn, t2)) {
            w->mismatched++;
        } else {
            w->completed++;
        }
        kj_free(step);
        if (w->completed % 64 == 0) {
            /* read another gateway's lane and invalidate refs: neither may disturb a transaction */
            kj_node *peek = kt_take(kelpie_browser_gateway_next(gateways[(g + 1) % n_gateways], NULL), "next");
            if (!strcmp(kt_step(peek), "rejected")) w->unexpected++;
            kj_free(peek);
            w->nexts++;
            if (kelpie_browser_gateway_invalidate_refs(gateways[(g + 2) % n_gateways], "t1") == KELPIE_GATEWAY_OK)
                w->invalidations++;
            else
                w->unexpected++;
        }
    }
    return NULL;
}

static int key_cmp(const void *a, const void *b)
{
    const dispatch_key *x = (const dispatch_key *)a, *y = (const dispatch_key *)b;
    if (x->gateway != y->gateway) return x->gateway - y->gateway;
    return strcmp(x->txn, y->txn);
}

int main(int argc, char **argv)
{
    pthread_t th[MAX_THREADS];
    worker w[MAX_THREADS];
    long completed = 0, busy = 0, dispatches = 0, unexpected = 0, mismatched = 0, duplicates = 0, nexts = 0;
    long invalidations = 0, k = 0;
    dispatch_key *all;
    struct timespec t0, t1;
    double secs;
    int ok;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) n_threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--gateways")) n_gateways = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--transactions")) n_transactions = atol(argv[i + 1]);
    }
    if (n_threads < 1 || n_threads > MAX_THREADS || n_gateways < 1 || n_gateways > MAX_GATEWAYS || n_transactions < 1) {
        fprintf(stderr, "usage: %s [--threads N<=64] [--gateways N<=64] [--transactions N]\n", argv[0]);
        return 2;
    }
    for (int g = 0; g < n_gateways; g++) {
        char *err = NULL;
        gateways[g] = kelpie_browser_gateway_create("{\"nativeMethods\":[\"get-tabs\"]}", &err);
        if (!gateways[g]) {
            fprintf(stderr, "create: %s\n", err ? err : "?");
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n_threads; i++) {
        w[i] = (worker){0};
        w[i].index = i;
        w[i].quota = n_transactions / n_threads + (i < n_transactions % n_threads ? 1 : 0);
        w[i].keys = (dispatch_key *)calloc((size_t)w[i].quota + 1, sizeof(dispatch_key));
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < n_threads; i++) pthread_join(th[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

    all = (dispatch_key *)calloc((size_t)n_transactions + (size_t)n_threads, sizeof(dispatch_key));
    for (int i = 0; i < n_threads; i++) {
        completed += w[i].completed;
        busy += w[i].busy;
        dispatches += w[i].dispatches;
        unexpected += w[i].unexpected;
        mismatched += w[i].mismatched;
        nexts += w[i].nexts;
        invalidations += w[i].invalidations;
        for (long j = 0; j < w[i].dispatches && k < n_transactions + n_threads; j++) all[k++] = w[i].keys[j];
        free(w[i].keys);
    }
    qsort(all, (size_t)k, sizeof *all, key_cmp);
    for (long j = 1; j < k; j++)
        if (!key_cmp(&all[j - 1], &all[j])) duplicates++;
    free(all);
    for (int g = 0; g < n_gateways; g++) {
        kj_node *idle = kt_take(kelpie_browser_gateway_next(gateways[g], NULL), "next");
        if (strcmp(kt_step(idle), "idle")) unexpected++;
        kj_free(idle);
        if (kelpie_browser_gateway_destroy(gateways[g]) != KELPIE_GATEWAY_OK) unexpected++;
    }
    ok = completed == n_transactions && dispatches == n_transactions && duplicates == 0 && unexpected == 0 &&
         mismatched == 0;
    printf("hammer: threads=%d gateways=%d transactions=%ld completed=%ld dispatches=%ld duplicate_dispatches=%ld "
           "busy_refusals=%ld unexpected_steps=%ld mismatched_ids=%ld nexts=%ld invalidations=%ld "
           "seconds=%.2f tx_per_s=%.0f result=%s\n",
           n_threads, n_gateways, n_transactions, completed, dispatches, duplicates, busy, unexpected, mismatched,
           nexts, invalidations, secs, (double)completed / secs, ok ? "OK" : "FAIL");
    return ok ? 0 : 1;
}
