/* The JSON answer check (see lf_json_answer.h). */
#include "lf_json_answer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lf_json_read.h"
#include "lf_utf8.h"

#include "lf_banned.h"

/* Deeper schemas (or $ref chains, which is how a loop ends) are refused. */
#define LF_JA_DEPTH 64

/* why = path + ": " + message, as valid UTF-8 (a key quoted back may hold
 * anything). */
static int lf_ja_fail(lf_buf *why, const lf_buf *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int lf_ja_fail(lf_buf *why, const lf_buf *path, const char *fmt, ...)
{
    char tmp[200];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof tmp) n = (int)sizeof tmp - 1;
    lf_buf_clear(why);
    if (path && (lf_utf8_append_sanitized(why, path->ptr ? path->ptr : "$", path->len ? path->len : 1) != 0 ||
                 lf_buf_append(why, ": ", 2) != 0))
        return -1;
    if (lf_utf8_append_sanitized(why, tmp, (size_t)n) != 0) return -1;
    return LF_JSON_ANSWER_BAD;
}

/* Whether a schema's "type" names +name+ (a name, or an array holding it). */
static int lf_ja_names_type(json_object *type, const char *name)
{
    size_t i, n;

    if (json_object_is_type(type, json_type_string)) return strcmp(json_object_get_string(type), name) == 0;
    if (!json_object_is_type(type, json_type_array)) return 0;
    n = json_object_array_length(type);
    for (i = 0; i < n; i++) {
        json_object *t = json_object_array_get_idx(type, i);

        if (json_object_is_type(t, json_type_string) && strcmp(json_object_get_string(t), name) == 0) return 1;
    }
    return 0;
}

static int lf_ja_strict_node(json_object *node, lf_buf *path, lf_buf *why, int depth);

/* Each schema under keyword +kw+ of +node+: a map of them (properties, $defs),
 * a list (anyOf, items as a list) or one (items, additionalProperties, not). */
static int lf_ja_strict_under(json_object *node, const char *kw, int map, lf_buf *path, lf_buf *why, int depth)
{
    json_object *sub = NULL;
    size_t mark = path->len, i, n;
    char idx[32];
    int rc = 0;

    if (!json_object_object_get_ex(node, kw, &sub)) return 0;
    if (lf_buf_append_char(path, '.') != 0 || lf_buf_append_str(path, kw) != 0) return -1;
    if (map && json_object_is_type(sub, json_type_object)) {
        json_object_object_foreach(sub, key, val) {
            size_t m2 = path->len;

            if (lf_buf_append_char(path, '.') != 0 || lf_buf_append_str(path, key) != 0) return -1;
            rc = lf_ja_strict_node(val, path, why, depth + 1);
            if (rc != 0) return rc;
            path->len = m2;
            path->ptr[m2] = '\0';
        }
    } else if (json_object_is_type(sub, json_type_array)) {
        n = json_object_array_length(sub);
        for (i = 0; i < n && rc == 0; i++) {
            size_t m2 = path->len;
            int len = snprintf(idx, sizeof idx, "[%zu]", i);

            if (lf_buf_append(path, idx, (size_t)len) != 0) return -1;
            rc = lf_ja_strict_node(json_object_array_get_idx(sub, i), path, why, depth + 1);
            path->len = m2;
            path->ptr[m2] = '\0';
        }
    } else if (!map) {
        rc = lf_ja_strict_node(sub, path, why, depth + 1);
    }
    if (rc == 0) {
        path->len = mark;
        path->ptr[mark] = '\0';
    }
    return rc;
}

/* What OpenAI's strict mode refuses in a schema and no more: an object that
 * allows other keys or leaves a property out of "required". Only the
 * keywords that hold schemas are walked, so a property or a $defs entry named
 * "properties" is a name, not a keyword. */
static int lf_ja_strict_node(json_object *node, lf_buf *path, lf_buf *why, int depth)
{
    static const char *const maps[] = {"properties", "$defs", "definitions"};
    static const char *const lists[] = {"anyOf", "allOf", "oneOf", "items", "prefixItems", "additionalProperties",
                                        "not"};
    json_object *type = NULL, *props = NULL, *additional = NULL, *required = NULL;
    size_t i;
    int rc;

    if (depth > LF_JA_DEPTH) return lf_ja_fail(why, NULL, "schema %.*s: nests deeper than %d", (int)path->len, path->ptr,
                                               LF_JA_DEPTH);
    if (!json_object_is_type(node, json_type_object)) return 0;
    json_object_object_get_ex(node, "type", &type);
    json_object_object_get_ex(node, "properties", &props);
    if (lf_ja_names_type(type, "object") || (!type && json_object_is_type(props, json_type_object))) {
        json_object_object_get_ex(node, "additionalProperties", &additional);
        if (!json_object_is_type(additional, json_type_boolean) || json_object_get_boolean(additional))
            return lf_ja_fail(why, NULL, "schema %.*s: strict mode needs \"additionalProperties\": false on every object",
                              (int)path->len, path->ptr);
        json_object_object_get_ex(node, "required", &required);
        if (json_object_is_type(props, json_type_object)) {
            json_object_object_foreach(props, key, val) {
                size_t k, n = json_object_is_type(required, json_type_array) ? json_object_array_length(required) : 0;
                int found = 0;

                (void)val;
                for (k = 0; k < n && !found; k++) {
                    json_object *r = json_object_array_get_idx(required, k);

                    found = json_object_is_type(r, json_type_string) && strcmp(json_object_get_string(r), key) == 0;
                }
                if (!found)
                    return lf_ja_fail(why, NULL,
                                      "schema %.*s: strict mode needs every property in \"required\" (missing %.60s; "
                                      "make a value optional with \"type\": [..., \"null\"])",
                                      (int)path->len, path->ptr, key);
            }
        }
    }
    for (i = 0; i < sizeof maps / sizeof maps[0]; i++)
        if ((rc = lf_ja_strict_under(node, maps[i], 1, path, why, depth)) != 0) return rc;
    for (i = 0; i < sizeof lists / sizeof lists[0]; i++)
        if ((rc = lf_ja_strict_under(node, lists[i], 0, path, why, depth)) != 0) return rc;
    return 0;
}

/* The root both providers take: an object schema ("type": "object"), not an
 * array, a string, an anyOf or {} (OpenAI's strict mode and Anthropic's
 * input_schema refuse those), then every object in it strict. */
static int lf_ja_strict_schema(json_object *schema, lf_buf *why)
{
    json_object *type = NULL;
    lf_buf path;
    int rc;

    json_object_object_get_ex(schema, "type", &type);
    if (!json_object_is_type(type, json_type_string) || strcmp(json_object_get_string(type), "object") != 0 ||
        json_object_object_get_ex(schema, "anyOf", NULL))
        return lf_ja_fail(why, NULL, "schema $: the root must be one object schema (\"type\": \"object\", no "
                                     "anyOf): OpenAI's strict mode and Anthropic refuse any other");
    lf_buf_init(&path);
    rc = lf_buf_append_char(&path, '$') != 0 ? -1 : lf_ja_strict_node(schema, &path, why, 0);
    lf_buf_free(&path);
    return rc;
}

json_object *lf_json_schema_parse(const char *text, size_t len, lf_buf *why)
{
    json_object *schema = text ? lf_json_parse(text, len) : NULL;
    lf_buf scratch;

    if (!schema || !json_object_is_type(schema, json_type_object)) {
        json_object_put(schema);
        if (why) (void)lf_ja_fail(why, NULL, "the schema is not a JSON object");
        return NULL;
    }
    lf_buf_init(&scratch);
    if (lf_ja_strict_schema(schema, why ? why : &scratch) != 0) {
        json_object_put(schema);
        schema = NULL;
    }
    lf_buf_free(&scratch);
    return schema;
}

/* The span of text that should be the object: trimmed, and the inside of a
 * Markdown code fence (```json ... ```) when the whole answer is one. */
static void lf_ja_unfence(const char *text, size_t len, size_t *start, size_t *n)
{
    size_t a = 0, b = len, nl;

    while (a < b && lf_wire_is_ws(text[a])) a++;
    while (b > a && lf_wire_is_ws(text[b - 1])) b--;
    if (b - a >= 6 && memcmp(text + a, "```", 3) == 0 && memcmp(text + b - 3, "```", 3) == 0) {
        for (nl = a + 3; nl < b - 3 && text[nl] != '\n'; nl++) {}
        if (nl < b - 3) { /* the info string ("json") ends at the first newline */
            a = nl + 1;
            b -= 3;
            while (a < b && lf_wire_is_ws(text[a])) a++;
            while (b > a && lf_wire_is_ws(text[b - 1])) b--;
        }
    }
    *start = a;
    *n = b - a;
}

typedef struct lf_ja_ctx {
    json_object *root;   /* the whole schema, for $ref */
    lf_buf path;         /* $.a.b[2] of the value being checked */
    lf_buf *why;
} lf_ja_ctx;

static int lf_ja_value(lf_ja_ctx *x, json_object *schema, json_object *v, int depth);

static const char *lf_ja_type_of(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null: return "null";
    case json_type_boolean: return "boolean";
    case json_type_double: return "number";
    case json_type_int: return "integer";
    case json_type_object: return "object";
    case json_type_array: return "array";
    case json_type_string: return "string";
    default: return "unknown";
    }
}

static int lf_ja_is_type(json_object *v, const char *type)
{
    json_type t = json_object_get_type(v);

    if (strcmp(type, "object") == 0) return t == json_type_object;
    if (strcmp(type, "array") == 0) return t == json_type_array;
    if (strcmp(type, "string") == 0) return t == json_type_string;
    if (strcmp(type, "boolean") == 0) return t == json_type_boolean;
    if (strcmp(type, "null") == 0) return t == json_type_null;
    if (strcmp(type, "number") == 0) return t == json_type_int || t == json_type_double;
    if (strcmp(type, "integer") == 0) {
        double d;

        if (t == json_type_int) return 1;
        if (t != json_type_double) return 0;
        d = json_object_get_double(v);
        return isfinite(d) && floor(d) == d;
    }
    return 1; /* a type name the subset does not know is not checked */
}

static int lf_ja_type(lf_ja_ctx *x, json_object *type, json_object *v)
{
    size_t i, n;

    if (json_object_is_type(type, json_type_string)) {
        if (lf_ja_is_type(v, json_object_get_string(type))) return 0;
        return lf_ja_fail(x->why, &x->path, "expected %.40s, got %s", json_object_get_string(type),
                          lf_ja_type_of(v));
    }
    if (!json_object_is_type(type, json_type_array)) return 0;
    n = json_object_array_length(type);
    for (i = 0; i < n; i++) {
        json_object *t = json_object_array_get_idx(type, i);

        if (json_object_is_type(t, json_type_string) && lf_ja_is_type(v, json_object_get_string(t))) return 0;
    }
    return lf_ja_fail(x->why, &x->path, "%s is none of the allowed types", lf_ja_type_of(v));
}

static int lf_ja_enum(lf_ja_ctx *x, json_object *choices, json_object *v)
{
    size_t i, n;

    if (!json_object_is_type(choices, json_type_array)) return 0;
    n = json_object_array_length(choices);
    for (i = 0; i < n; i++)
        if (json_object_equal(json_object_array_get_idx(choices, i), v)) return 0;
    return lf_ja_fail(x->why, &x->path, "not one of the enum values");
}

/* path += ".key" (or ["key"] when the key is not a plain name); returns the
 * length to restore. */
static int lf_ja_push_key(lf_ja_ctx *x, const char *key, size_t *mark)
{
    size_t i, n = strlen(key);
    int plain = n > 0;

    *mark = x->path.len;
    for (i = 0; i < n && plain; i++) {
        char c = key[i];

        plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    }
    if (plain) return lf_buf_append_char(&x->path, '.') || lf_buf_append(&x->path, key, n) ? -1 : 0;
    return lf_buf_append(&x->path, "[\"", 2) || lf_buf_append(&x->path, key, n) ||
                   lf_buf_append(&x->path, "\"]", 2)
               ? -1
               : 0;
}

static void lf_ja_pop(lf_ja_ctx *x, size_t mark)
{
    x->path.len = mark;
    if (x->path.ptr) x->path.ptr[mark] = '\0';
}

static int lf_ja_object(lf_ja_ctx *x, json_object *schema, json_object *v, int depth)
{
    json_object *props = NULL, *required = NULL, *additional = NULL;
    size_t i, n, mark;
    int rc;

    json_object_object_get_ex(schema, "properties", &props);
    json_object_object_get_ex(schema, "required", &required);
    json_object_object_get_ex(schema, "additionalProperties", &additional);
    if (!json_object_is_type(props, json_type_object)) props = NULL;

    if (json_object_is_type(required, json_type_array)) {
        n = json_object_array_length(required);
        for (i = 0; i < n; i++) {
            json_object *name = json_object_array_get_idx(required, i);

            if (!json_object_is_type(name, json_type_string)) continue;
            if (!json_object_object_get_ex(v, json_object_get_string(name), NULL))
                return lf_ja_fail(x->why, &x->path, "missing required key \"%.60s\"",
                                  json_object_get_string(name));
        }
    }
    json_object_object_foreach(v, key, val) {
        json_object *sub = NULL;

        if (props && json_object_object_get_ex(props, key, &sub)) {
            /* checked below */
        } else if (json_object_is_type(additional, json_type_boolean)) {
            if (!json_object_get_boolean(additional))
                return lf_ja_fail(x->why, &x->path, "unexpected key \"%.60s\"", key);
            continue;
        } else if (json_object_is_type(additional, json_type_object)) {
            sub = additional;
        } else {
            continue;
        }
        if (lf_ja_push_key(x, key, &mark) != 0) return -1;
        rc = lf_ja_value(x, sub, val, depth + 1);
        if (rc != 0) return rc;
        lf_ja_pop(x, mark);
    }
    return 0;
}

static int lf_ja_array(lf_ja_ctx *x, json_object *schema, json_object *v, int depth)
{
    json_object *items = NULL;
    size_t i, n, mark;
    char idx[32];
    int rc;

    if (!json_object_object_get_ex(schema, "items", &items) || !json_object_is_type(items, json_type_object))
        return 0;
    n = json_object_array_length(v);
    for (i = 0; i < n; i++) {
        int len = snprintf(idx, sizeof idx, "[%zu]", i);

        mark = x->path.len;
        if (lf_buf_append(&x->path, idx, (size_t)len) != 0) return -1;
        rc = lf_ja_value(x, items, json_object_array_get_idx(v, i), depth + 1);
        if (rc != 0) return rc;
        lf_ja_pop(x, mark);
    }
    return 0;
}

/* "#/$defs/NAME" or "#/definitions/NAME" of the root schema; NULL otherwise. */
static json_object *lf_ja_ref(lf_ja_ctx *x, const char *ref)
{
    json_object *defs = NULL, *target = NULL;
    const char *name;

    if (strncmp(ref, "#/$defs/", 8) == 0) {
        json_object_object_get_ex(x->root, "$defs", &defs);
        name = ref + 8;
    } else if (strncmp(ref, "#/definitions/", 14) == 0) {
        json_object_object_get_ex(x->root, "definitions", &defs);
        name = ref + 14;
    } else if (strcmp(ref, "#") == 0) {
        return x->root;
    } else {
        return NULL;
    }
    if (!json_object_is_type(defs, json_type_object) || strchr(name, '/')) return NULL;
    json_object_object_get_ex(defs, name, &target);
    return json_object_is_type(target, json_type_object) ? target : NULL;
}

static int lf_ja_value(lf_ja_ctx *x, json_object *schema, json_object *v, int depth)
{
    json_object *kw = NULL;
    int rc;

    if (depth > LF_JA_DEPTH) return lf_ja_fail(x->why, &x->path, "the schema nests deeper than %d", LF_JA_DEPTH);
    if (!json_object_is_type(schema, json_type_object)) return 0; /* true, or not a schema: anything goes */
    if (json_object_object_get_ex(schema, "$ref", &kw) && json_object_is_type(kw, json_type_string)) {
        json_object *target = lf_ja_ref(x, json_object_get_string(kw));

        if (!target) return 0; /* a reference the subset cannot follow is not checked */
        return lf_ja_value(x, target, v, depth + 1);
    }
    if (json_object_object_get_ex(schema, "anyOf", &kw) && json_object_is_type(kw, json_type_array)) {
        size_t i, n = json_object_array_length(kw), mark = x->path.len;

        for (i = 0; i < n; i++) {
            rc = lf_ja_value(x, json_object_array_get_idx(kw, i), v, depth + 1);
            if (rc < 0) return rc;
            lf_ja_pop(x, mark);
            if (rc == 0) break;
        }
        if (n && i == n) return lf_ja_fail(x->why, &x->path, "matches none of anyOf");
    }
    if (json_object_object_get_ex(schema, "type", &kw) && (rc = lf_ja_type(x, kw, v)) != 0) return rc;
    if (json_object_object_get_ex(schema, "enum", &kw) && (rc = lf_ja_enum(x, kw, v)) != 0) return rc;
    if (json_object_object_get_ex(schema, "const", &kw) && !json_object_equal(kw, v))
        return lf_ja_fail(x->why, &x->path, "not the const value");
    if (json_object_is_type(v, json_type_object)) return lf_ja_object(x, schema, v, depth);
    if (json_object_is_type(v, json_type_array)) return lf_ja_array(x, schema, v, depth);
    return 0;
}

int lf_json_answer_check(const char *text, size_t len, json_object *schema,
                         lf_buf *json_out, lf_buf *why)
{
    lf_ja_ctx x;
    json_object *v;
    size_t start, n, bad;
    int rc;

    lf_buf_clear(json_out);
    lf_buf_clear(why);
    if (!text) text = "";
    lf_ja_unfence(text, len, &start, &n);
    if (!n) return lf_ja_fail(why, NULL, "the answer is empty, not a JSON object");
    bad = lf_json_nonstandard_at(text + start, n, 1);
    /* Refused at its first byte, it is prose; further in, JSON-like text
     * (NaN, single quotes, a raw control character) a strict reader refuses. */
    if (bad == 1) return lf_ja_fail(why, NULL, "the answer is not JSON");
    if (bad)
        return lf_ja_fail(why, NULL, "the answer is not standard JSON (RFC 8259) at byte %zu: NaN, Infinity, "
                                     "single quotes, a raw control character or a bad escape or number",
                          start + bad - 1);
    v = lf_json_parse(text + start, n);
    if (!v) return -1;   /* a standard text json-c could not hold: out of memory */
    if (!json_object_is_type(v, json_type_object)) {
        rc = lf_ja_fail(why, NULL, "the answer is a JSON %s, not an object", lf_ja_type_of(v));
        json_object_put(v);
        return rc;
    }
    rc = 0;
    if (schema) {
        x.root = schema;
        x.why = why;
        lf_buf_init(&x.path);
        rc = lf_buf_append_char(&x.path, '$');
        if (rc == 0) rc = lf_ja_value(&x, schema, v, 0);
        if (rc == LF_JSON_ANSWER_BAD) {
            /* "$.city: expected string" reads better as "the answer does not match the schema: ..." */
            lf_buf msg;

            lf_buf_init(&msg);
            if (lf_buf_append_str(&msg, "the answer does not match the schema: ") != 0 ||
                lf_buf_append(&msg, lf_buf_cstr(why), why->len) != 0)
                rc = -1;
            else
                lf_buf_move(why, &msg);
            lf_buf_free(&msg);
        }
        lf_buf_free(&x.path);
    }
    /* The object as the answer wrote it (a fence and surrounding whitespace
     * gone), not json-c's writing of it: json-c holds integers in 64 bits and
     * would clamp a bigger one. */
    if (rc == 0 && lf_buf_append(json_out, text + start, n) != 0) rc = -1;
    json_object_put(v);
    return rc;
}
