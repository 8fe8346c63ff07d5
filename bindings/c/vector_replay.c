/*
 * vector_replay.c — replays request/response vectors through the C ABI (fixtures/vectors/README.md).
 *
 *   vector_replay PLAN OUT [PLAN OUT ...]
 *
 * Each PLAN is the output of `tools/vectors.py plan VECTOR`: one call per line, `CALL KIND PAYLOAD`
 * (KIND J = JSON text, S = plain string, N = NULL). The first line creates a gateway; for every later
 * line OUT receives exactly what the ABI returned (one line; `null` for invalidate_refs), which
 * `tools/vectors.py check VECTOR OUT` compares with the vector's expectations. Each plan gets its own
 * gateway, destroyed at the end (a refused destroy is reported on stderr and retried never). No JSON is
 * parsed here: the replayer is a plain host of the ABI. Exit status 0 when every plan could be replayed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kelpie/browser_gateway_c_api.h>

static int replay(const char *plan_path, const char *out_path)
{
    FILE *plan = fopen(plan_path, "rb"), *out = fopen(out_path, "wb");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, status = 0;
    KelpieBrowserGatewayRef gw = NULL;
    if (!plan || !out) {
        fprintf(stderr, "vector_replay: cannot open %s or %s\n", plan_path, out_path);
        if (plan) fclose(plan);
        if (out) fclose(out);
        return 1;
    }
    while ((len = getline(&line, &cap, plan)) > 0) {
        char *call = line, *kind, *payload, *result = NULL;
        const char *arg;
        lineno++;
        if (line[len - 1] == '\n') line[--len] = '\0';
        kind = strchr(call, ' ');
        if (!kind) { status = 1; fprintf(stderr, "%s:%d: malformed line\n", plan_path, lineno); break; }
        *kind++ = '\0';
        payload = strchr(kind, ' ');
        if (payload) *payload++ = '\0';
        else payload = kind + strlen(kind);
        arg = !strcmp(kind, "N") ? NULL : payload;
        if (lineno == 1) {
            char *err = NULL;
            if (strcmp(call, "create")) { status = 1; fprintf(stderr, "%s: first line is not create\n", plan_path); break; }
            gw = kelpie_browser_gateway_create(arg, &err);
            if (!gw) {
                fprintf(out, "%s\n", err ? err : "null");
                kelpie_mcp_free_string(err);
                break;
            }
            continue;
        }
        if (!strcmp(call, "begin")) result = kelpie_browser_gateway_begin(gw, arg);
        else if (!strcmp(call, "begin_mcp")) result = kelpie_browser_gateway_begin_mcp(gw, arg);
        else if (!strcmp(call, "advance")) result = kelpie_browser_gateway_advance(gw, arg);
        else if (!strcmp(call, "cancel")) result = kelpie_browser_gateway_cancel(gw, arg);
        else if (!strcmp(call, "next")) result = kelpie_browser_gateway_next(gw, arg);
        else if (!strcmp(call, "invalidate_refs")) {
            int32_t rc = kelpie_browser_gateway_invalidate_refs(gw, arg);
            if (rc != KELPIE_GATEWAY_OK) fprintf(stderr, "%s:%d: invalidate_refs returned %d\n", plan_path, lineno, rc);
            fputs("null\n", out);
            continue;
        } else {
            status = 1;
            fprintf(stderr, "%s:%d: unknown call %s\n", plan_path, lineno, call);
            fputs("null\n", out);
            continue;
        }
        fprintf(out, "%s\n", result ? result : "null");
        kelpie_mcp_free_string(result);
    }
    if (gw) {
        int32_t rc = kelpie_browser_gateway_destroy(gw);
        if (rc != KELPIE_GATEWAY_OK) fprintf(stderr, "%s: destroy returned %d\n", plan_path, rc);
    }
    free(line);
    fclose(plan);
    fclose(out);
    return status;
}

int main(int argc, char **argv)
{
    int status = 0;
    if (argc < 3 || (argc - 1) % 2) {
        fprintf(stderr, "usage: %s PLAN OUT [PLAN OUT ...]\n", argv[0]);
        return 2;
    }
    for (int i = 1; i + 1 < argc; i += 2) status |= replay(argv[i], argv[i + 1]);
    return status;
}
