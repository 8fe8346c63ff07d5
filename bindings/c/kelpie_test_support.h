/*
 * Shared helpers for the Kelpie C programs (contract test, hammer, benchmark): a check counter,
 * step parsing, a fake renderer and a transaction driver. Header-only, not part of the ABI.
 */
#ifndef KELPIE_TEST_SUPPORT_H
#define KELPIE_TEST_SUPPORT_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kelpie/browser_gateway_c_api.h>

#include "kjson.h"

static int kt_checks __attribute__((unused)) = 0, kt_failures __attribute__((unused)) = 0;
static const char *kt_test __attribute__((unused)) = "";

#define KT_CHECK(cond, ...)                                                                  \
    do {                                                                                     \
        kt_checks++;                                                                         \
        if (!(cond)) {                                                                       \
            kt_failures++;                                                                   \
            fprintf(stderr, "FAIL %s (%s:%d): %s: ", kt_test, __FILE__, __LINE__, #cond);    \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fputc('\n', stderr);                                                             \
        }                                                                                    \
    } while (0)

/* Take ownership of a returned string: parse it, free it. Aborts the test program on NULL/unparsable
   output, which would be an ABI contract violation (every output is JSON). */
static inline kj_node *kt_take(char *s, const char *what)
{
    kj_node *n;
    if (s == NULL) {
        fprintf(stderr, "FATAL %s: %s returned NULL\n", kt_test, what);
        exit(99);
    }
    n = kj_parse(s, (size_t)-1);
    if (n == NULL) {
        fprintf(stderr, "FATAL %s: %s returned unparsable JSON: %.300s\n", kt_test, what, s);
        exit(99);
    }
    kelpie_mcp_free_string(s);
    return n;
}

static inline int kt_is(const kj_node *n, const char *path, const char *value)
{
    const char *s = kj_str(n, path);
    return s != NULL && strcmp(s, value) == 0;
}

static inline const char *kt_step(const kj_node *n) { return kj_str(n, "step") ? kj_str(n, "step") : "?"; }

/* Transaction identifier of a step as text for _next (string as is, number in decimal). */
static inline void kt_txn_text(const kj_node *step, char *buf, size_t cap)
{
    const kj_node *t = kj_get(step, "transaction");
    if (t && t->type == KJ_STRING) snprintf(buf, cap, "%s", t->str);
    else if (t && t->type == KJ_NUMBER) snprintf(buf, cap, "%.0f", t->number);
    else buf[0] = '\0';
}

/* {"transaction":T,"seq":n,"result":<result_json>} for the step (malloc'd). */
static inline char *kt_result_for(const kj_node *step, const char *result_json)
{
    char *t = kj_write(kj_get(step, "transaction"));
    char *q = kj_write(kj_get(step, "seq"));
    size_t n = strlen(t) + strlen(q) + strlen(result_json) + 64;
    char *out = (char *)malloc(n);
    snprintf(out, n, "{\"transaction\":%s,\"seq\":%s,\"result\":%s}", t, q, result_json);
    free(t);
    free(q);
    return out;
}

/* {"transaction":T, <extra>} (malloc'd), e.g. extra = "\"reason\":\"timeout\"". */
static inline char *kt_txn_obj(const kj_node *step, const char *extra)
{
    char *t = kj_write(kj_get(step, "transaction"));
    size_t n = strlen(t) + strlen(extra) + 32;
    char *out = (char *)malloc(n);
    snprintf(out, n, "{\"transaction\":%s,%s}", t, extra);
    free(t);
    return out;
}

static inline kj_node *kt_advance(KelpieBrowserGatewayRef gw, const kj_node *step, const char *result_json)
{
    char *in = kt_result_for(step, result_json);
    kj_node *r = kt_take(kelpie_browser_gateway_advance(gw, in), "advance");
    free(in);
    return r;
}

static inline kj_node *kt_cancel(KelpieBrowserGatewayRef gw, const kj_node *step, const char *reason)
{
    char extra[96], *in;
    kj_node *r;
    snprintf(extra, sizeof extra, "\"reason\":\"%s\"", reason);
    in = kt_txn_obj(step, extra);
    r = kt_take(kelpie_browser_gateway_cancel(gw, in), "cancel");
    free(in);
    return r;
}

/* The fake renderer: the {success:...} result a native endpoint would return for a dispatch step. */
static inline char *kt_fake_renderer(const kj_node *dispatch, const char *evaluate_value)
{
    const char *method = kj_str(dispatch, "method");
    const char *tab = kj_str(dispatch, "params.tabId");
    char buf[1024];
    if (!tab) tab = "t1";
    if (!method) method = "";
    if (!strcmp(method, "get-tabs"))
        snprintf(buf, sizeof buf,
                 "{\"success\":true,\"tabs\":[{\"tabId\":\"t1\",\"generation\":1,\"url\":\"https://example.test/\","
                 "\"title\":\"Example\",\"active\":true},{\"tabId\":\"t2\",\"generation\":1,\"url\":\"about:blank\","
                 "\"title\":\"\",\"active\":false}]}");
    else if (!strcmp(method, "switch-tab"))
        snprintf(buf, sizeof buf, "{\"success\":true,\"tabId\":\"%s\",\"generation\":1}", tab);
    else if (!strcmp(method, "new-tab"))
        snprintf(buf, sizeof buf, "{\"success\":true,\"tabId\":\"t9\",\"generation\":1}");
    else if (!strcmp(method, "close-tab"))
        snprintf(buf, sizeof buf, "{\"success\":true}");
    else if (!strcmp(method, "navigate"))
        snprintf(buf, sizeof buf, "{\"success\":true,\"tabId\":\"%s\",\"generation\":2,\"url\":\"https://example.test/next\"}",
                 tab);
    else if (!strcmp(method, "browser-control-evaluate"))
        snprintf(buf, sizeof buf, "{\"success\":true,\"value\":%s}", evaluate_value ? evaluate_value : "null");
    else
        snprintf(buf, sizeof buf, "{\"success\":true,\"echo\":\"%s\"}", method);
    return strdup(buf);
}

typedef struct {
    int authorizations;
    int dispatches;
    char methods[8][48]; /* native methods dispatched, in order */
} kt_trace;

/* Drive one transaction to its complete step: authorize -> admit, dispatch -> fake renderer.
   Returns the complete step (caller kj_free's), or the first unexpected step. */
static inline kj_node *kt_drive(KelpieBrowserGatewayRef gw, kj_node *step, const char *evaluate_value, kt_trace *trace)
{
    for (int guard = 0; guard < 16; guard++) {
        const char *kind = kt_step(step);
        kj_node *next;
        if (!strcmp(kind, "authorize")) {
            if (trace) trace->authorizations++;
            next = kt_advance(gw, step, "{\"success\":true}");
        } else if (!strcmp(kind, "dispatch")) {
            char *result = kt_fake_renderer(step, evaluate_value);
            if (trace) {
                if (trace->dispatches < 8)
                    snprintf(trace->methods[trace->dispatches], sizeof trace->methods[0], "%s",
                             kj_str(step, "method") ? kj_str(step, "method") : "?");
                trace->dispatches++;
            }
            next = kt_advance(gw, step, result);
            free(result);
        } else {
            return step;
        }
        kj_free(step);
        step = next;
    }
    return step;
}

static inline kj_node *kt_run(KelpieBrowserGatewayRef gw, const char *request, const char *evaluate_value, kt_trace *trace)
{
    return kt_drive(gw, kt_take(kelpie_browser_gateway_begin(gw, request), "begin"), evaluate_value, trace);
}

static inline kj_node *kt_run_mcp(KelpieBrowserGatewayRef gw, const char *message, const char *evaluate_value,
                           kt_trace *trace)
{
    return kt_drive(gw, kt_take(kelpie_browser_gateway_begin_mcp(gw, message), "begin_mcp"), evaluate_value, trace);
}

#endif /* KELPIE_TEST_SUPPORT_H */
