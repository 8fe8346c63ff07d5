/*
 * kjson.h — a tiny JSON reader/writer for the Kelpie C tests and examples (not part of the ABI).
 * Single header, static functions, no dependencies. Parses UTF-8 JSON into a tree of kj_node,
 * looks members up, compares trees (object member order ignored) and writes a tree back as compact JSON.
 * Strings keep their decoded UTF-8 bytes (\u escapes decoded, surrogate pairs joined).
 * A parsed tree lives in one arena (a few large blocks, not one malloc per node and string), so parsing
 * and freeing a step cost what a host's JSON library would, not glibc's per-object work; kj_free takes
 * the tree kj_parse returned (never a subtree of it) and frees it whole.
 */
#ifndef KELPIE_KJSON_H
#define KELPIE_KJSON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { KJ_NULL, KJ_FALSE, KJ_TRUE, KJ_NUMBER, KJ_STRING, KJ_ARRAY, KJ_OBJECT } kj_type;

typedef struct kj_node {
    kj_type type;
    double number;
    char *str;             /* KJ_STRING: value; members of KJ_OBJECT: the key (in `key`) */
    size_t len;            /* string length in bytes */
    char *key;             /* set when this node is an object member */
    size_t key_len;
    struct kj_node *child; /* first element / member */
    struct kj_node *next;  /* next sibling */
    size_t count;          /* number of children */
    struct kj_block *arena; /* the root of a parsed tree: every block its nodes and strings live in */
} kj_node;

typedef struct kj_block {
    struct kj_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} kj_block;

typedef struct { const char *p, *end; int depth; kj_block *arena; } kj_parser;

/* `size` bytes from the parser's arena (16-byte aligned); NULL if malloc failed. */
static inline void *kj_alloc(kj_parser *ps, size_t size)
{
    kj_block *b = ps->arena;
    size = (size + 15) & ~(size_t)15;
    if (b == NULL || b->cap - b->used < size) {
        size_t cap = size > 4096 ? size : 4096;
        kj_block *nb = (kj_block *)malloc(sizeof *nb + cap);
        if (!nb) return NULL;
        nb->next = b;
        nb->used = 0;
        nb->cap = cap;
        ps->arena = b = nb;
    }
    b->used += size;
    return b->data + b->used - size;
}

static inline void kj_free_blocks(kj_block *b)
{
    while (b) {
        kj_block *next = b->next;
        free(b);
        b = next;
    }
}

/* Free a tree returned by kj_parse (NULL is fine). */
static inline void kj_free(kj_node *n)
{
    if (n) kj_free_blocks(n->arena);
}

static inline void kj_ws(kj_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static inline int kj_hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static inline size_t kj_put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 63)); o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63)); o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

/* Parses a string literal at ps->p (on the opening quote). One allocation: the decoded text is never
   longer than the literal (an escape decodes to fewer bytes than it is written with), so the buffer is
   sized by a scan to the closing quote first; text without escapes is copied at once. */
static inline int kj_string(kj_parser *ps, char **out, size_t *out_len)
{
    const char *start = ps->p + 1, *p = start, *close;
    size_t len = 0;
    int escaped = 0;
    char *buf;
    while (p < ps->end && *p != '"') {
        if (*p == '\\') {
            escaped = 1;
            p++;
        }
        p++;
    }
    if (p >= ps->end) return -1;
    close = p;
    buf = (char *)kj_alloc(ps, (size_t)(close - start) + 1);
    if (!buf) return -1;
    if (!escaped) {
        len = (size_t)(close - start);
        memcpy(buf, start, len);
    } else {
        for (p = start; p < close;) {
            if (*p != '\\') {
                buf[len++] = *p++;
                continue;
            }
            p++;
            switch (*p) {
            case '"': buf[len++] = '"'; break;
            case '\\': buf[len++] = '\\'; break;
            case '/': buf[len++] = '/'; break;
            case 'b': buf[len++] = '\b'; break;
            case 'f': buf[len++] = '\f'; break;
            case 'n': buf[len++] = '\n'; break;
            case 'r': buf[len++] = '\r'; break;
            case 't': buf[len++] = '\t'; break;
            case 'u': {
                unsigned cp, lo;
                if (close - p < 5 || kj_hex4(p + 1, &cp)) return -1;
                p += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && close - p >= 7 && p[1] == '\\' && p[2] == 'u' &&
                    !kj_hex4(p + 3, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                }
                len += kj_put_utf8(buf + len, cp);
                break;
            }
            default: return -1;
            }
            p++;
        }
    }
    buf[len] = '\0';
    ps->p = close + 1;
    *out = buf;
    *out_len = len;
    return 0;
}

static inline kj_node *kj_value(kj_parser *ps);

static inline kj_node *kj_new(kj_parser *ps, kj_type t)
{
    kj_node *n = (kj_node *)kj_alloc(ps, sizeof *n);
    if (n) {
        memset(n, 0, sizeof *n);
        n->type = t;
    }
    return n;
}

static inline kj_node *kj_value(kj_parser *ps)
{
    kj_node *n = NULL;
    kj_ws(ps);
    if (ps->p >= ps->end || ps->depth > 200) return NULL;
    switch (*ps->p) {
    case '{': case '[': {
        int obj = *ps->p == '{';
        kj_node **tail;
        n = kj_new(ps, obj ? KJ_OBJECT : KJ_ARRAY);
        if (!n) return NULL;
        tail = &n->child;
        ps->p++;
        ps->depth++;
        kj_ws(ps);
        if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) { ps->p++; ps->depth--; return n; }
        for (;;) {
            char *key = NULL;
            size_t key_len = 0;
            kj_node *c;
            kj_ws(ps);
            if (obj) {
                if (ps->p >= ps->end || *ps->p != '"' || kj_string(ps, &key, &key_len)) goto fail;
                kj_ws(ps);
                if (ps->p >= ps->end || *ps->p != ':') goto fail;
                ps->p++;
            }
            c = kj_value(ps);
            if (!c) goto fail;
            c->key = key;
            c->key_len = key_len;
            *tail = c;
            tail = &c->next;
            n->count++;
            kj_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
            if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) { ps->p++; ps->depth--; return n; }
            goto fail;
        }
    }
    case '"':
        n = kj_new(ps, KJ_STRING);
        if (!n || kj_string(ps, &n->str, &n->len)) goto fail;
        return n;
    case 't':
        if (ps->end - ps->p >= 4 && !memcmp(ps->p, "true", 4)) { ps->p += 4; return kj_new(ps, KJ_TRUE); }
        return NULL;
    case 'f':
        if (ps->end - ps->p >= 5 && !memcmp(ps->p, "false", 5)) { ps->p += 5; return kj_new(ps, KJ_FALSE); }
        return NULL;
    case 'n':
        if (ps->end - ps->p >= 4 && !memcmp(ps->p, "null", 4)) { ps->p += 4; return kj_new(ps, KJ_NULL); }
        return NULL;
    default: {
        char *endp;
        double d;
        /* A plain integer of at most 15 digits (every step's seq, generation, dispatches) is exact as a
           double: read it without strtod. Anything else (fraction, exponent, longer) goes to strtod. */
        const char *q = ps->p + (*ps->p == '-');
        long long v = 0;
        int digits = 0;
        while (q < ps->end && *q >= '0' && *q <= '9' && digits < 16) {
            v = v * 10 + (*q++ - '0');
            digits++;
        }
        if (digits > 0 && digits <= 15 && (q >= ps->end || (*q != '.' && *q != 'e' && *q != 'E' && !(*q >= '0' && *q <= '9')))) {
            n = kj_new(ps, KJ_NUMBER);
            if (!n) return NULL;
            n->number = *ps->p == '-' ? -(double)v : (double)v;
            ps->p = q;
            return n;
        }
        d = strtod(ps->p, &endp);
        if (endp == ps->p) return NULL;
        n = kj_new(ps, KJ_NUMBER);
        if (!n) return NULL;
        n->number = d;
        ps->p = endp;
        return n;
    }
    }
fail: /* what was allocated stays in the arena, which kj_parse frees */
    return NULL;
}

/* Parse `len` bytes (or strlen when len == (size_t)-1). NULL on any syntax error. Free with kj_free. */
static inline kj_node *kj_parse(const char *text, size_t len)
{
    kj_parser ps;
    kj_node *n;
    if (!text) return NULL;
    ps.p = text;
    ps.end = text + (len == (size_t)-1 ? strlen(text) : len);
    ps.depth = 0;
    ps.arena = NULL;
    n = kj_value(&ps);
    kj_ws(&ps);
    if (!n || ps.p != ps.end) {
        kj_free_blocks(ps.arena);
        return NULL;
    }
    n->arena = ps.arena;
    return n;
}

static inline kj_node *kj_get(const kj_node *obj, const char *key)
{
    size_t kl = strlen(key);
    if (!obj || obj->type != KJ_OBJECT) return NULL;
    for (kj_node *c = obj->child; c; c = c->next)
        if (c->key_len == kl && !memcmp(c->key, key, kl)) return c;
    return NULL;
}

static inline kj_node *kj_at(const kj_node *arr, size_t i)
{
    if (!arr || arr->type != KJ_ARRAY) return NULL;
    for (kj_node *c = arr->child; c; c = c->next, i--)
        if (i == 0) return c;
    return NULL;
}

/* Dotted path lookup: "response.error.code" (array indexes as numbers: "tabs.0.tabId"). */
static inline kj_node *kj_path(const kj_node *n, const char *path)
{
    char part[128];
    while (n && *path) {
        size_t i = 0;
        while (*path && *path != '.' && i + 1 < sizeof part) part[i++] = *path++;
        part[i] = '\0';
        if (*path == '.') path++;
        if (n->type == KJ_ARRAY) n = kj_at(n, (size_t)strtoul(part, NULL, 10));
        else n = kj_get(n, part);
    }
    return (kj_node *)n;
}

/* String value at path, or NULL if absent / not a string. */
static inline const char *kj_str(const kj_node *n, const char *path)
{
    const kj_node *v = kj_path(n, path);
    return v && v->type == KJ_STRING ? v->str : NULL;
}

static inline int kj_equal(const kj_node *a, const kj_node *b)
{
    if (!a || !b) return a == b;
    if (a->type != b->type) return 0;
    switch (a->type) {
    case KJ_NUMBER: return a->number == b->number;
    case KJ_STRING: return a->len == b->len && !memcmp(a->str, b->str, a->len);
    case KJ_ARRAY: {
        const kj_node *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next)
            if (!kj_equal(x, y)) return 0;
        return !x && !y;
    }
    case KJ_OBJECT:
        if (a->count != b->count) return 0;
        for (const kj_node *x = a->child; x; x = x->next) {
            const kj_node *y = NULL;
            for (const kj_node *c = b->child; c; c = c->next)
                if (c->key_len == x->key_len && !memcmp(c->key, x->key, x->key_len)) { y = c; break; }
            if (!y || !kj_equal(x, y)) return 0;
        }
        return 1;
    default: return 1;
    }
}

typedef struct { char *buf; size_t len, cap; } kj_buf;

static inline void kj_emit(kj_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        char *nb;
        while (cap < b->len + n + 1) cap *= 2;
        nb = (char *)realloc(b->buf, cap);
        if (!nb) abort();
        b->buf = nb;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

static inline void kj_emit_str(kj_buf *b, const char *s, size_t n)
{
    kj_emit(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') { esc[0] = '\\'; esc[1] = (char)c; kj_emit(b, esc, 2); }
        else if (c < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", c); kj_emit(b, esc, 6); }
        else kj_emit(b, (const char *)&s[i], 1);
    }
    kj_emit(b, "\"", 1);
}

static inline void kj_write_to(kj_buf *b, const kj_node *n)
{
    char num[64];
    switch (n->type) {
    case KJ_NULL: kj_emit(b, "null", 4); break;
    case KJ_TRUE: kj_emit(b, "true", 4); break;
    case KJ_FALSE: kj_emit(b, "false", 5); break;
    case KJ_NUMBER:
        if (n->number == floor(n->number) && fabs(n->number) < 9e15) snprintf(num, sizeof num, "%.0f", n->number);
        else snprintf(num, sizeof num, "%.17g", n->number);
        kj_emit(b, num, strlen(num));
        break;
    case KJ_STRING: kj_emit_str(b, n->str, n->len); break;
    case KJ_ARRAY: case KJ_OBJECT:
        kj_emit(b, n->type == KJ_ARRAY ? "[" : "{", 1);
        for (const kj_node *c = n->child; c; c = c->next) {
            if (c != n->child) kj_emit(b, ",", 1);
            if (n->type == KJ_OBJECT) { kj_emit_str(b, c->key, c->key_len); kj_emit(b, ":", 1); }
            kj_write_to(b, c);
        }
        kj_emit(b, n->type == KJ_ARRAY ? "]" : "}", 1);
        break;
    }
}

/* Compact JSON text of a tree (malloc'd; free with free()). */
static inline char *kj_write(const kj_node *n)
{
    kj_buf b = {NULL, 0, 0};
    if (!n) return NULL;
    kj_write_to(&b, n);
    return b.buf;
}

#endif /* KELPIE_KJSON_H */
