/* The JSON Schema subset (see lf_json_schema.h): a schema checked for what
 * both providers take, and a value checked against a schema. */
#include "lf_json_schema.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lf_json_read.h"
#include "lf_json_write.h"
#include "lf_utf8.h"

#include "lf_banned.h"

/* Deeper schemas (or $ref chains, which is how a loop ends) are refused. */
#define LF_JS_DEPTH 64

/* ------------------------------------------- a schema both providers take */

/* why = the message (lf_utf8_vsetf: a key quoted back may hold anything);
 * returns 1, or -1 when out of memory. */
static int lf_js_refuse(lf_buf *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int lf_js_refuse(lf_buf *why, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = lf_utf8_vsetf(why, fmt, ap);
    va_end(ap);
    return rc != 0 ? -1 : 1;
}

/* Whether a schema's "type" names +name+ (a name, or an array holding it). */
static int lf_js_names_type(json_object *type, const char *name)
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

static int lf_js_strict_node(json_object *node, lf_buf *path, lf_buf *why, int depth);

/* Each schema under keyword +kw+ of +node+: a map of them (properties, $defs),
 * a list (anyOf, items as a list) or one (items, additionalProperties, not). */
static int lf_js_strict_under(json_object *node, const char *kw, int map, lf_buf *path, lf_buf *why, int depth)
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
            rc = lf_js_strict_node(val, path, why, depth + 1);
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
            rc = lf_js_strict_node(json_object_array_get_idx(sub, i), path, why, depth + 1);
            path->len = m2;
            path->ptr[m2] = '\0';
        }
    } else if (!map) {
        rc = lf_js_strict_node(sub, path, why, depth + 1);
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
static int lf_js_strict_node(json_object *node, lf_buf *path, lf_buf *why, int depth)
{
    static const char *const maps[] = {"properties", "$defs", "definitions"};
    static const char *const lists[] = {"anyOf", "allOf", "oneOf", "items", "prefixItems", "additionalProperties",
                                        "not"};
    json_object *type = NULL, *props = NULL, *additional = NULL, *required = NULL;
    size_t i;
    int rc;

    if (depth > LF_JS_DEPTH)
        return lf_js_refuse(why, "schema %.*s: nests deeper than %d", (int)path->len, path->ptr, LF_JS_DEPTH);
    if (!json_object_is_type(node, json_type_object)) return 0;
    json_object_object_get_ex(node, "type", &type);
    json_object_object_get_ex(node, "properties", &props);
    if (lf_js_names_type(type, "object") || (!type && json_object_is_type(props, json_type_object))) {
        json_object_object_get_ex(node, "additionalProperties", &additional);
        if (!json_object_is_type(additional, json_type_boolean) || json_object_get_boolean(additional))
            return lf_js_refuse(why, "schema %.*s: strict mode needs \"additionalProperties\": false on every object",
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
                    return lf_js_refuse(why,
                                        "schema %.*s: strict mode needs every property in \"required\" (missing %.60s; "
                                        "make a value optional with \"type\": [..., \"null\"])",
                                        (int)path->len, path->ptr, key);
            }
        }
    }
    for (i = 0; i < sizeof maps / sizeof maps[0]; i++)
        if ((rc = lf_js_strict_under(node, maps[i], 1, path, why, depth)) != 0) return rc;
    for (i = 0; i < sizeof lists / sizeof lists[0]; i++)
        if ((rc = lf_js_strict_under(node, lists[i], 0, path, why, depth)) != 0) return rc;
    return 0;
}

/* The root both providers take: an object schema ("type": "object"), not an
 * array, a string, an anyOf or {} (OpenAI's strict mode and Anthropic's
 * input_schema refuse those), then every object in it strict. */
static int lf_js_strict_schema(json_object *schema, lf_buf *why)
{
    json_object *type = NULL;
    lf_buf path;
    int rc;

    json_object_object_get_ex(schema, "type", &type);
    if (!json_object_is_type(type, json_type_string) || strcmp(json_object_get_string(type), "object") != 0 ||
        json_object_object_get_ex(schema, "anyOf", NULL))
        return lf_js_refuse(why, "schema $: the root must be one object schema (\"type\": \"object\", no "
                                 "anyOf): OpenAI's strict mode and Anthropic refuse any other");
    lf_buf_init(&path);
    rc = lf_buf_append_char(&path, '$') != 0 ? -1 : lf_js_strict_node(schema, &path, why, 0);
    lf_buf_free(&path);
    return rc;
}

json_object *lf_json_schema_parse(const char *text, size_t len, lf_buf *why)
{
    json_object *schema = text ? lf_json_parse(text, len) : NULL;
    lf_buf scratch;

    if (!schema || !json_object_is_type(schema, json_type_object)) {
        json_object_put(schema);
        if (why) (void)lf_js_refuse(why, "the schema is not a JSON object");
        return NULL;
    }
    lf_buf_init(&scratch);
    if (lf_js_strict_schema(schema, why ? why : &scratch) != 0) {
        json_object_put(schema);
        schema = NULL;
    }
    lf_buf_free(&scratch);
    return schema;
}


/* ------------------------------------------- a value against a schema */

typedef struct lf_js_ctx {
    json_object *root;  /* the whole schema, for $ref */
    lf_buf *path;       /* $.a.b[2] of the value being checked */
    lf_buf *why;        /* the problems said so far, "; " between them */
    int found;          /* problems found, said or not */
    int oom;
} lf_js_ctx;

/* One problem at the current path: "path: " + what. */
static void lf_js_say(lf_js_ctx *x, const lf_buf *what)
{
    if (++x->found > LF_JSON_SCHEMA_MAX_PROBLEMS || x->oom) return;
    if ((x->why->len && lf_buf_append(x->why, "; ", 2) != 0) ||
        lf_utf8_append_sanitized(x->why, x->path->ptr, x->path->len) != 0 || lf_buf_append(x->why, ": ", 2) != 0 ||
        lf_utf8_append_sanitized(x->why, lf_buf_cstr(what), what->len) != 0)
        x->oom = 1;
}

static void lf_js_sayf(lf_js_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void lf_js_sayf(lf_js_ctx *x, const char *fmt, ...)
{
    lf_buf what;
    va_list ap;

    lf_buf_init(&what);
    va_start(ap, fmt);
    if (lf_utf8_vsetf(&what, fmt, ap) != 0) x->oom = 1;
    va_end(ap);
    lf_js_say(x, &what);
    lf_buf_free(&what);
}

/* The JSON text of v, cut after max bytes (at a character's start) with
 * "..." after it. */
static int lf_js_put_json(lf_buf *out, json_object *v, size_t max)
{
    size_t n = 0;
    const char *s = json_object_to_json_string_length(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);

    if (!s) return -1;
    if (n <= max) return lf_utf8_append_sanitized(out, s, n);
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80) max--;
    return lf_utf8_append_sanitized(out, s, max) != 0 || lf_buf_append_str(out, "...") != 0 ? -1 : 0;
}

/* What a value is, as a message says it: its type, and a short rendering
 * (a string's first 40 characters, a number, a boolean). */
static int lf_js_put_value(lf_buf *out, json_object *v)
{
    char num[48];
    const char *s;
    size_t i, chars = 0;

    switch (json_object_get_type(v)) {
    case json_type_null: return lf_buf_append_str(out, "null");
    case json_type_boolean: return lf_buf_append_str(out, json_object_get_boolean(v) ? "boolean true" : "boolean false");
    case json_type_object: return lf_buf_append_str(out, "object");
    case json_type_array: return lf_buf_append_str(out, "array");
    case json_type_int:
        (void)snprintf(num, sizeof num, "integer %" PRId64, json_object_get_int64(v));
        return lf_buf_append_str(out, num);
    case json_type_double:
        if (lf_buf_append_str(out, "number") != 0) return -1;
        return isfinite(json_object_get_double(v)) &&
                       (lf_buf_append_char(out, ' ') != 0 || lf_json_put_double(out, json_object_get_double(v)) != 0)
                   ? -1
                   : 0;
    case json_type_string:
        s = json_object_get_string(v);
        for (i = 0; i < (size_t)json_object_get_string_len(v); i++)
            if (((unsigned char)s[i] & 0xC0) != 0x80 && ++chars > 40) break;
        return lf_buf_append_str(out, "string ") != 0 || lf_json_put_string(out, s, i) != 0 ? -1 : 0;
    default: return lf_buf_append_str(out, "unknown");
    }
}

static int lf_js_is_type(json_object *v, const char *type)
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
    return 1; /* a type name the subset does not know is the provider's to judge */
}

/* Equal as JSON Schema compares: 1 and 1.0 are one number. */
static int lf_js_equal(json_object *a, json_object *b)
{
    json_type ta = json_object_get_type(a), tb = json_object_get_type(b);

    if (ta == json_type_int && tb == json_type_int) return json_object_get_int64(a) == json_object_get_int64(b);
    if ((ta == json_type_int || ta == json_type_double) && (tb == json_type_int || tb == json_type_double))
        return json_object_get_double(a) == json_object_get_double(b);
    return json_object_equal(a, b);
}

/* The names in type (one, or an array of them) joined with " or ". */
static int lf_js_put_types(lf_buf *out, json_object *type)
{
    size_t i, n;
    int any = 0;

    if (json_object_is_type(type, json_type_string)) return lf_utf8_append_sanitized(out, json_object_get_string(type),
                                                                                    (size_t)json_object_get_string_len(type));
    n = json_object_array_length(type);
    for (i = 0; i < n; i++) {
        json_object *t = json_object_array_get_idx(type, i);

        if (!json_object_is_type(t, json_type_string)) continue;
        if ((any++ && lf_buf_append_str(out, " or ") != 0) ||
            lf_utf8_append_sanitized(out, json_object_get_string(t), (size_t)json_object_get_string_len(t)) != 0)
            return -1;
    }
    return 0;
}

/* 1 when v has one of the types (or none is asked), else a problem and 0. */
static int lf_js_type(lf_js_ctx *x, json_object *type, json_object *v)
{
    lf_buf what;
    size_t i, n;

    if (json_object_is_type(type, json_type_string)) {
        if (lf_js_is_type(v, json_object_get_string(type))) return 1;
    } else if (json_object_is_type(type, json_type_array)) {
        n = json_object_array_length(type);
        for (i = 0; i < n; i++) {
            json_object *t = json_object_array_get_idx(type, i);

            if (json_object_is_type(t, json_type_string) && lf_js_is_type(v, json_object_get_string(t))) return 1;
        }
    } else {
        return 1;
    }
    lf_buf_init(&what);
    if (lf_buf_append_str(&what, "expected ") != 0 || lf_js_put_types(&what, type) != 0 ||
        lf_buf_append_str(&what, ", got ") != 0 || lf_js_put_value(&what, v) != 0)
        x->oom = 1;
    lf_js_say(x, &what);
    lf_buf_free(&what);
    return 0;
}

/* Values listed in a message: each cut at 40 bytes, the list at about 200. */
static int lf_js_put_list(lf_buf *out, json_object *values)
{
    size_t i, n = json_object_array_length(values), start = out->len;

    for (i = 0; i < n; i++) {
        if (i && lf_buf_append_str(out, ", ") != 0) return -1;
        if (out->len - start > 200) return lf_buf_append_str(out, "...");
        if (lf_js_put_json(out, json_object_array_get_idx(values, i), 40) != 0) return -1;
    }
    return 0;
}

static int lf_js_enum(lf_js_ctx *x, json_object *choices, json_object *v)
{
    lf_buf what;
    size_t i, n;

    if (!json_object_is_type(choices, json_type_array)) return 1;
    n = json_object_array_length(choices);
    for (i = 0; i < n; i++)
        if (lf_js_equal(json_object_array_get_idx(choices, i), v)) return 1;
    lf_buf_init(&what);
    if (lf_js_put_json(&what, v, 60) != 0 || lf_buf_append_str(&what, " is not one of ") != 0 ||
        lf_js_put_list(&what, choices) != 0)
        x->oom = 1;
    lf_js_say(x, &what);
    lf_buf_free(&what);
    return 0;
}

static int lf_js_const(lf_js_ctx *x, json_object *want, json_object *v)
{
    lf_buf what;

    if (lf_js_equal(want, v)) return 1;
    lf_buf_init(&what);
    if (lf_js_put_json(&what, v, 60) != 0 || lf_buf_append_str(&what, " is not ") != 0 ||
        lf_js_put_json(&what, want, 60) != 0 || lf_buf_append_str(&what, " (const)") != 0)
        x->oom = 1;
    lf_js_say(x, &what);
    lf_buf_free(&what);
    return 0;
}

/* path += ".key" (or ["key"] when the key is not a plain name); returns the
 * length to restore. */
static size_t lf_js_push_key(lf_js_ctx *x, const char *key)
{
    size_t i, n = strlen(key), mark = x->path->len;
    int plain = n > 0;

    for (i = 0; i < n && plain; i++) {
        char c = key[i];

        plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    }
    if (plain ? lf_buf_append_char(x->path, '.') || lf_buf_append(x->path, key, n)
              : lf_buf_append(x->path, "[\"", 2) || lf_buf_append(x->path, key, n) || lf_buf_append(x->path, "\"]", 2))
        x->oom = 1;
    return mark;
}

static size_t lf_js_push_index(lf_js_ctx *x, size_t i)
{
    char idx[32];
    size_t mark = x->path->len;
    int len = snprintf(idx, sizeof idx, "[%zu]", i);

    if (lf_buf_append(x->path, idx, (size_t)len) != 0) x->oom = 1;
    return mark;
}

static void lf_js_pop(lf_js_ctx *x, size_t mark)
{
    x->path->len = mark;
    if (x->path->ptr) x->path->ptr[mark] = '\0';
}

static void lf_js_value(lf_js_ctx *x, json_object *schema, json_object *v, int depth);

/* additionalProperties false: the key and the ones the schema names. */
static void lf_js_unknown(lf_js_ctx *x, json_object *props)
{
    lf_buf what;
    int any = 0;

    lf_buf_init(&what);
    if (lf_buf_append_str(&what, "unknown property (") != 0) x->oom = 1;
    if (props) {
        json_object_object_foreach(props, key, val) {
            (void)val;
            if (what.len > 220) {
                if (lf_buf_append_str(&what, ", ...") != 0) x->oom = 1;
                break;
            }
            if (lf_buf_append_str(&what, any++ ? ", " : "known: ") != 0 || lf_buf_append_str(&what, key) != 0)
                x->oom = 1;
        }
    }
    if (lf_buf_append_str(&what, any ? ")" : "none are allowed)") != 0) x->oom = 1;
    lf_js_say(x, &what);
    lf_buf_free(&what);
}

static void lf_js_object(lf_js_ctx *x, json_object *schema, json_object *v, int depth)
{
    json_object *props = NULL, *required = NULL, *additional = NULL;
    size_t i, n, mark;

    json_object_object_get_ex(schema, "properties", &props);
    json_object_object_get_ex(schema, "required", &required);
    json_object_object_get_ex(schema, "additionalProperties", &additional);
    if (!json_object_is_type(props, json_type_object)) props = NULL;

    if (json_object_is_type(required, json_type_array)) {
        n = json_object_array_length(required);
        for (i = 0; i < n; i++) {
            json_object *name = json_object_array_get_idx(required, i);

            if (!json_object_is_type(name, json_type_string) ||
                json_object_object_get_ex(v, json_object_get_string(name), NULL))
                continue;
            mark = lf_js_push_key(x, json_object_get_string(name));
            lf_js_sayf(x, "missing required property");
            lf_js_pop(x, mark);
        }
    }
    json_object_object_foreach(v, key, val) {
        json_object *sub = NULL;

        if (props && json_object_object_get_ex(props, key, &sub)) {
            /* checked below */
        } else if (json_object_is_type(additional, json_type_object)) {
            sub = additional;
        } else if (json_object_is_type(additional, json_type_boolean) && !json_object_get_boolean(additional)) {
            mark = lf_js_push_key(x, key);
            lf_js_unknown(x, props);
            lf_js_pop(x, mark);
            continue;
        } else {
            continue;
        }
        mark = lf_js_push_key(x, key);
        lf_js_value(x, sub, val, depth + 1);
        lf_js_pop(x, mark);
    }
}

static void lf_js_array(lf_js_ctx *x, json_object *schema, json_object *v, int depth)
{
    json_object *items = NULL;
    size_t i, n, mark;

    if (!json_object_object_get_ex(schema, "items", &items) || !json_object_is_type(items, json_type_object)) return;
    n = json_object_array_length(v);
    for (i = 0; i < n; i++) {
        mark = lf_js_push_index(x, i);
        lf_js_value(x, items, json_object_array_get_idx(v, i), depth + 1);
        lf_js_pop(x, mark);
    }
}

/* Fits when one branch fits (1); otherwise one problem with the problems of
 * the branch that came closest (fewest), so that what to change is said. */
static int lf_js_any_of(lf_js_ctx *x, json_object *branches, json_object *v, int depth)
{
    size_t i, n = json_object_array_length(branches);
    lf_buf mine, best, what;
    int best_found = -1, fits = 0;

    lf_buf_init(&mine);
    lf_buf_init(&best);
    for (i = 0; i < n && !fits && !x->oom; i++) {
        lf_js_ctx branch = { x->root, x->path, &mine, 0, 0 };

        lf_buf_clear(&mine);
        lf_js_value(&branch, json_object_array_get_idx(branches, i), v, depth + 1);
        x->oom |= branch.oom;
        fits = branch.found == 0;
        if (best_found < 0 || branch.found < best_found) {
            best_found = branch.found;
            if (lf_buf_copy(&best, &mine) != 0) x->oom = 1;
        }
    }
    if (!fits) {
        char head[96];

        (void)snprintf(head, sizeof head, "matches none of the %zu allowed shapes (anyOf); closest: ", n);
        lf_buf_init(&what);
        /* The closest branch's problems carry their paths: said after this one's. */
        if (lf_buf_append_str(&what, head) != 0 || lf_buf_append(&what, lf_buf_cstr(&best), best.len) != 0)
            x->oom = 1;
        lf_js_say(x, &what);
        lf_buf_free(&what);
    }
    lf_buf_free(&mine);
    lf_buf_free(&best);
    return fits;
}

/* "#", "#/$defs/NAME" or "#/definitions/NAME" of the root schema; NULL
 * otherwise. */
static json_object *lf_js_ref(lf_js_ctx *x, const char *ref)
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

static void lf_js_value(lf_js_ctx *x, json_object *schema, json_object *v, int depth)
{
    json_object *kw = NULL;

    if (x->oom) return;
    if (depth > LF_JS_DEPTH) {
        lf_js_sayf(x, "the schema nests deeper than %d", LF_JS_DEPTH);
        return;
    }
    if (!json_object_is_type(schema, json_type_object)) return; /* true, or not a schema: anything goes */
    if (json_object_object_get_ex(schema, "$ref", &kw) && json_object_is_type(kw, json_type_string)) {
        json_object *target = lf_js_ref(x, json_object_get_string(kw));

        /* A reference the subset cannot follow is not checked. */
        if (target) lf_js_value(x, target, v, depth + 1);
        return;
    }
    if (json_object_object_get_ex(schema, "anyOf", &kw) && json_object_is_type(kw, json_type_array) &&
        json_object_array_length(kw) > 0 && !lf_js_any_of(x, kw, v, depth))
        return;
    if (json_object_object_get_ex(schema, "type", &kw) && !lf_js_type(x, kw, v)) return;
    if (json_object_object_get_ex(schema, "enum", &kw) && !lf_js_enum(x, kw, v)) return;
    if (json_object_object_get_ex(schema, "const", &kw) && !lf_js_const(x, kw, v)) return;
    if (json_object_is_type(v, json_type_object)) lf_js_object(x, schema, v, depth);
    else if (json_object_is_type(v, json_type_array)) lf_js_array(x, schema, v, depth);
}

int lf_json_schema_check(json_object *schema, json_object *value, lf_buf *why)
{
    lf_buf path;
    lf_js_ctx x = { schema, &path, why, 0, 0 };

    lf_buf_clear(why);
    lf_buf_init(&path);
    if (lf_buf_append_char(&path, '$') != 0) x.oom = 1;
    lf_js_value(&x, schema, value, 0);
    lf_buf_free(&path);
    return x.oom ? -1 : x.found;
}
