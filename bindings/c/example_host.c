/*
 * example_host.c — the smallest native host of the Kelpie browser gateway, loading the library at run time.
 *
 *   example_host [path/to/libkelpie_browser_gateway.so]
 *
 * It runs one canonical transaction (tabs.list) and one MCP tools/call against a fake renderer and prints
 * the responses. It uses only the header, dlopen and dlsym: it knows nothing about Python.
 *
 * RTLD_GLOBAL: the library embeds CPython, whose extension modules (loaded later by the interpreter) find
 * libpython's symbols in the global scope. Pass RTLD_NOW | RTLD_GLOBAL. (On Linux the library also
 * promotes libpython to global scope itself, so RTLD_LOCAL works too; other loaders may not.)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kelpie/browser_gateway_c_api.h>

#include "kjson.h"

static struct {
    KelpieBrowserGatewayRef (*create)(const char *, char **);
    int32_t (*destroy)(KelpieBrowserGatewayRef);
    char *(*begin)(KelpieBrowserGatewayRef, const char *);
    char *(*begin_mcp)(KelpieBrowserGatewayRef, const char *);
    char *(*advance)(KelpieBrowserGatewayRef, const char *);
    const char *(*version)(void);
    void (*free_string)(char *);
} k;

/* The host's renderer binding: here, canned answers. A real host calls its browser exactly once. */
static const char *renderer(const char *method)
{
    if (!strcmp(method, "get-tabs"))
        return "{\"success\":true,\"tabs\":[{\"tabId\":\"t1\",\"generation\":1,\"url\":\"https://example.test/\","
               "\"title\":\"Example\",\"active\":true}]}";
    return "{\"success\":false,\"error\":{\"code\":\"RENDERER_FAILED\",\"message\":\"not implemented here\"}}";
}

/* Carry a transaction from its first step to complete; returns the complete step's JSON (caller frees). */
static char *drive(KelpieBrowserGatewayRef gw, char *json)
{
    for (;;) {
        kj_node *step = kj_parse(json, (size_t)-1);
        const char *kind = kj_str(step, "step");
        char *t, *q, input[4096];
        const char *result;
        if (!kind || (strcmp(kind, "authorize") && strcmp(kind, "dispatch"))) {
            kj_free(step);
            return json; /* complete (or rejected) */
        }
        /* authorize: apply the host's policy (this example admits everything) */
        result = !strcmp(kind, "authorize") ? "{\"success\":true}" : renderer(kj_str(step, "method"));
        t = kj_write(kj_get(step, "transaction"));
        q = kj_write(kj_get(step, "seq"));
        snprintf(input, sizeof input, "{\"transaction\":%s,\"seq\":%s,\"result\":%s}", t, q, result);
        free(t);
        free(q);
        kj_free(step);
        k.free_string(json);
        json = k.advance(gw, input);
    }
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "libkelpie_browser_gateway.so";
    char *err = NULL, *out;
    KelpieBrowserGatewayRef gw;
    void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return 1;
    }
#define LOAD(field, name)                                                      \
    do {                                                                       \
        *(void **)(&k.field) = dlsym(lib, name);                               \
        if (!k.field) {                                                        \
            fprintf(stderr, "dlsym %s: %s\n", name, dlerror());                \
            return 1;                                                          \
        }                                                                      \
    } while (0)
    LOAD(create, "kelpie_browser_gateway_create");
    LOAD(destroy, "kelpie_browser_gateway_destroy");
    LOAD(begin, "kelpie_browser_gateway_begin");
    LOAD(begin_mcp, "kelpie_browser_gateway_begin_mcp");
    LOAD(advance, "kelpie_browser_gateway_advance");
    LOAD(version, "kelpie_browser_gateway_version");
    LOAD(free_string, "kelpie_mcp_free_string");

    printf("kelpie browser gateway %s\n", k.version());
    gw = k.create("{\"nativeMethods\":[\"get-tabs\"]}", &err);
    if (!gw) {
        fprintf(stderr, "create failed: %s\n", err ? err : "(no detail)");
        k.free_string(err);
        return 1;
    }
    out = drive(gw, k.begin(gw, "{\"version\":1,\"id\":1,\"method\":\"tabs.list\",\"params\":{}}"));
    printf("canonical: %s\n", out);
    k.free_string(out);
    out = drive(gw, k.begin_mcp(gw, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                                    "\"kelpie_browser_control\",\"arguments\":{\"method\":\"tabs.list\",\"params\":{}}}}"));
    printf("mcp: %s\n", out);
    k.free_string(out);
    if (k.destroy(gw) != KELPIE_GATEWAY_OK) {
        fprintf(stderr, "destroy refused\n");
        return 1;
    }
    /* Never dlclose: the embedded interpreter is never finalised (see docs/c-abi.md). */
    return 0;
}
