/* The two wire protocols over json-c: request bodies out, answers, stream
 * events and error bodies in. Everything a provider sends is untrusted: every
 * string taken from it is sanitized to valid UTF-8 before it leaves here. */
#include "lf_wire.h"

#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lf_jscan.h"

#include "lf_banned.h"

/* Deeper than any real answer (usage.cache_creation is at depth 4), shallow
 * enough that a hostile body cannot make json-c recurse far. */
#define LF_WIRE_JSON_DEPTH 64
/* json_tokener_parse_ex takes an int length: longer bodies go in slices. */
#define LF_WIRE_JSON_SLICE ((size_t)1 << 30)

/* ---------------------------------------------------------------- UTF-8 */

static const char lf_utf8_replacement[3] = { (char)0xEF, (char)0xBF, (char)0xBD };

/* Length of the well-formed sequence at s (1 to 4 bytes), or 0 when it is
 * ill-formed; then *bad is the length of its maximal subpart (at least 1):
 * the lead byte plus the continuation bytes that were still acceptable, so a
 * truncated sequence becomes one U+FFFD and the byte that broke it is looked
 * at again (Unicode 15, 3.9 "U+FFFD Substitution of Maximal Subparts"). */
static size_t lf_utf8_sequence(const unsigned char *s, size_t n, size_t *bad)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t need, i;

    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c == 0xE0) {
        need = 2; lo = 0xA0;          /* below is overlong */
    } else if (c == 0xED) {
        need = 2; hi = 0x9F;          /* above are the surrogates D800-DFFF */
    } else if (c >= 0xE1 && c <= 0xEF) {
        need = 2;
    } else if (c == 0xF0) {
        need = 3; lo = 0x90;          /* below is overlong */
    } else if (c == 0xF4) {
        need = 3; hi = 0x8F;          /* above is past U+10FFFF */
    } else if (c >= 0xF1 && c <= 0xF3) {
        need = 3;
    } else {
        *bad = 1;                     /* 80-BF alone, C0, C1, F5-FF */
        return 0;
    }
    for (i = 1; i <= need; i++) {
        if (i >= n || s[i] < lo || s[i] > hi) {
            *bad = i;
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return need + 1;
}

int lf_utf8_append_sanitized(lf_buf *out, const char *bytes, size_t n)
{
    const unsigned char *s = (const unsigned char *)bytes;
    size_t old_len = out->len, i = 0, run = 0, len, bad = 0;

    while (i < n) {
        if (n - i >= 8) {
            uint64_t w;

            /* Eight ASCII bytes at a time: most text is ASCII. */
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        len = lf_utf8_sequence(s + i, n - i, &bad);
        if (len) {
            i += len;
            continue;
        }
        if (lf_buf_append(out, bytes + run, i - run) != 0 ||
            lf_buf_append(out, lf_utf8_replacement, sizeof lf_utf8_replacement) != 0)
            goto nomem;
        i += bad;
        run = i;
    }
    if (lf_buf_append(out, bytes + run, n - run) != 0) goto nomem;
    return 0;

nomem:
    /* Leave the buffer as it was, like lf_buf_append does. */
    out->len = old_len;
    if (out->ptr) out->ptr[old_len] = '\0';
    return -1;
}

static int lf_utf8_set_sanitized(lf_buf *out, const char *bytes, size_t n)
{
    lf_buf_clear(out);
    return lf_utf8_append_sanitized(out, bytes, n);
}

/* ------------------------------------------------------- writing JSON */

/* Whether any of the eight bytes of w needs a look of its own inside a JSON
 * string: not ASCII, a control character, '"' or '\\'. */
static inline int lf_json_word_is_special(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');

    return ((w | ((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs) != 0;
}

/* Appends s as a JSON string literal: each invalid UTF-8 sequence becomes
 * U+FFFD (as lf_utf8_append_sanitized replaces it), quotes, backslashes and
 * every control character are escaped. One pass over s, copying runs of
 * plain bytes straight into out. */
static int lf_json_put_string(lf_buf *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0, len, bad = 0;
    char esc[7];

    if (lf_buf_reserve(out, n + 2) != 0 || lf_buf_append_char(out, '"') != 0) return -1;
    while (i < n) {
        unsigned char c;
        size_t elen = 2;

        if (n - i >= 8) {
            uint64_t w;

            /* Eight plain bytes at a time: most text is plain ASCII. */
            memcpy(&w, p + i, 8);
            if (!lf_json_word_is_special(w)) {
                i += 8;
                continue;
            }
        }
        c = p[i];
        if (c >= 0x80) {
            len = lf_utf8_sequence(p + i, n - i, &bad);
            if (len) {
                i += len;
                continue;
            }
            if (lf_buf_append(out, s + run, i - run) != 0 ||
                lf_buf_append(out, lf_utf8_replacement, sizeof lf_utf8_replacement) != 0)
                return -1;
            i += bad;
            run = i;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
            esc[4] = hex[c >> 4]; esc[5] = hex[c & 0xF];
            elen = 6;
            break;
        }
        if (lf_buf_append(out, s + run, i - run) != 0 || lf_buf_append(out, esc, elen) != 0)
            return -1;
        i++;
        run = i;
    }
    if (lf_buf_append(out, s + run, n - run) != 0) return -1;
    return lf_buf_append_char(out, '"');
}

static int lf_json_put_cstring(lf_buf *out, const char *s)
{
    return lf_json_put_string(out, s, strlen(s));
}

/* The shortest "%g" text that reads back as the same double, so 0.7 goes
 * out as 0.7 and not 0.69999999999999996. The caller rejects NaN/inf. */
static int lf_json_put_double(lf_buf *out, double d)
{
    char tmp[40];
    int prec, n = 0;
    char *c;

    for (prec = 15; prec <= 17; prec++) {
        n = snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (n <= 0 || (size_t)n >= sizeof tmp) return -1;
        if (strtod(tmp, NULL) == d) break;
    }
    /* A locale with a decimal comma wrote one; JSON wants a point. */
    for (c = tmp; *c; c++)
        if (*c == ',') *c = '.';
    return lf_buf_append(out, tmp, (size_t)n);
}

static int lf_json_put_long(lf_buf *out, long v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%ld", v);

    if (n <= 0 || (size_t)n >= sizeof tmp) return -1;
    return lf_buf_append(out, tmp, (size_t)n);
}

/* ---------------------------------------------------- building requests */

const char *lf_wire_path(lf_api api)
{
    return api == LF_API_ANTHROPIC ? "/v1/messages" : "/chat/completions";
}

static void lf_wire_fail(lf_buf *errmsg, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    int n;

    if (!errmsg) return;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof tmp) n = (int)sizeof tmp - 1;
    /* A role quoted back may hold any bytes, and truncation may split a
     * character: the message itself must stay valid UTF-8. */
    (void)lf_utf8_set_sanitized(errmsg, tmp, (size_t)n);
}

typedef enum lf_role {
    LF_ROLE_UNKNOWN = 0,
    LF_ROLE_SYSTEM,
    LF_ROLE_DEVELOPER,
    LF_ROLE_USER,
    LF_ROLE_ASSISTANT,
    LF_ROLE_TOOL
} lf_role;

static lf_role lf_wire_role(const char *role)
{
    if (strcmp(role, "system") == 0) return LF_ROLE_SYSTEM;
    if (strcmp(role, "developer") == 0) return LF_ROLE_DEVELOPER;
    if (strcmp(role, "user") == 0) return LF_ROLE_USER;
    if (strcmp(role, "assistant") == 0) return LF_ROLE_ASSISTANT;
    if (strcmp(role, "tool") == 0) return LF_ROLE_TOOL;
    return LF_ROLE_UNKNOWN;
}

/* Checks what both protocols require; counts the messages that go into the
 * "messages" array of an Anthropic request. */
static int lf_wire_check_params(const lf_request_params *p, lf_buf *errmsg, size_t *n_chat)
{
    size_t i;

    *n_chat = 0;
    if (p->api != LF_API_OPENAI && p->api != LF_API_ANTHROPIC) {
        lf_wire_fail(errmsg, "unknown API %d", (int)p->api);
        return -1;
    }
    if (!p->model || !p->model[0]) {
        lf_wire_fail(errmsg, "model is missing");
        return -1;
    }
    if (p->n_messages && !p->messages) {
        lf_wire_fail(errmsg, "messages is NULL but n_messages is %zu", p->n_messages);
        return -1;
    }
    if (p->has_temperature && !isfinite(p->temperature)) {
        lf_wire_fail(errmsg, "temperature is not a finite number");
        return -1;
    }
    for (i = 0; i < p->n_messages; i++) {
        const lf_message *m = &p->messages[i];
        lf_role role;

        if (!m->role) {
            lf_wire_fail(errmsg, "message %zu has no role", i);
            return -1;
        }
        if (!m->content) {
            lf_wire_fail(errmsg, "message %zu has no content", i);
            return -1;
        }
        role = lf_wire_role(m->role);
        if (role == LF_ROLE_UNKNOWN) {
            lf_wire_fail(errmsg, "message %zu has an unknown role \"%.64s\"", i, m->role);
            return -1;
        }
        if (p->api == LF_API_ANTHROPIC && role == LF_ROLE_TOOL) {
            /* Anthropic carries tool results as user content blocks, which
             * this plain-text interface cannot express. */
            lf_wire_fail(errmsg, "message %zu: role \"tool\" is not supported by the Anthropic API", i);
            return -1;
        }
        if (role == LF_ROLE_USER || role == LF_ROLE_ASSISTANT) (*n_chat)++;
    }
    if (p->api == LF_API_ANTHROPIC && *n_chat == 0) {
        lf_wire_fail(errmsg, "an Anthropic request needs at least one user or assistant message");
        return -1;
    }
    if (p->api == LF_API_OPENAI && p->n_messages == 0 && !(p->system && p->system[0])) {
        lf_wire_fail(errmsg, "the request has no messages");
        return -1;
    }
    return 0;
}

static int lf_wire_put_message(lf_buf *out, const char *role, const char *content, int first)
{
    if (!first && lf_buf_append_char(out, ',') != 0) return -1;
    if (lf_buf_append_str(out, "{\"role\":") != 0 ||
        lf_json_put_cstring(out, role) != 0 ||
        lf_buf_append_str(out, ",\"content\":") != 0 ||
        lf_json_put_cstring(out, content) != 0)
        return -1;
    return lf_buf_append_char(out, '}');
}

static int lf_wire_build_openai(const lf_request_params *p, lf_buf *out)
{
    size_t i;
    int first = 1;

    if (lf_buf_append_str(out, "{\"model\":") != 0 ||
        lf_json_put_cstring(out, p->model) != 0 ||
        lf_buf_append_str(out, ",\"messages\":[") != 0)
        return -1;
    if (p->system && p->system[0]) {
        if (lf_wire_put_message(out, "system", p->system, first) != 0) return -1;
        first = 0;
    }
    for (i = 0; i < p->n_messages; i++) {
        if (lf_wire_put_message(out, p->messages[i].role, p->messages[i].content, first) != 0)
            return -1;
        first = 0;
    }
    if (lf_buf_append_char(out, ']') != 0) return -1;
    if (p->has_temperature &&
        (lf_buf_append_str(out, ",\"temperature\":") != 0 ||
         lf_json_put_double(out, p->temperature) != 0))
        return -1;
    /* max_tokens, not max_completion_tokens: every compatible server takes
     * it, and OpenAI still accepts it for chat models. */
    if (p->max_tokens > 0 &&
        (lf_buf_append_str(out, ",\"max_tokens\":") != 0 ||
         lf_json_put_long(out, p->max_tokens) != 0))
        return -1;
    if (p->stream)
        return lf_buf_append_str(out,
                                 ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
    return lf_buf_append_str(out, ",\"stream\":false}");
}

static int lf_wire_build_anthropic(const lf_request_params *p, lf_buf *out)
{
    lf_buf system;
    size_t i;
    int first = 1, rc = -1;

    lf_buf_init(&system);
    if (p->system && p->system[0] && lf_buf_append_str(&system, p->system) != 0) goto done;
    for (i = 0; i < p->n_messages; i++) {
        lf_role role = lf_wire_role(p->messages[i].role);
        const char *c = p->messages[i].content;

        if ((role != LF_ROLE_SYSTEM && role != LF_ROLE_DEVELOPER) || !c[0]) continue;
        if (system.len && lf_buf_append(&system, "\n\n", 2) != 0) goto done;
        if (lf_buf_append_str(&system, c) != 0) goto done;
    }

    if (lf_buf_append_str(out, "{\"model\":") != 0 ||
        lf_json_put_cstring(out, p->model) != 0 ||
        lf_buf_append_str(out, ",\"max_tokens\":") != 0 ||
        lf_json_put_long(out, p->max_tokens > 0 ? p->max_tokens
                                                : LF_ANTHROPIC_DEFAULT_MAX_TOKENS) != 0 ||
        lf_buf_append_str(out, ",\"messages\":[") != 0)
        goto done;
    for (i = 0; i < p->n_messages; i++) {
        lf_role role = lf_wire_role(p->messages[i].role);

        if (role != LF_ROLE_USER && role != LF_ROLE_ASSISTANT) continue;
        if (lf_wire_put_message(out, p->messages[i].role, p->messages[i].content, first) != 0)
            goto done;
        first = 0;
    }
    if (lf_buf_append_char(out, ']') != 0) goto done;
    if (system.len &&
        (lf_buf_append_str(out, ",\"system\":") != 0 ||
         lf_json_put_string(out, system.ptr, system.len) != 0))
        goto done;
    if (p->has_temperature &&
        (lf_buf_append_str(out, ",\"temperature\":") != 0 ||
         lf_json_put_double(out, p->temperature) != 0))
        goto done;
    if (lf_buf_append_str(out, p->stream ? ",\"stream\":true}" : ",\"stream\":false}") != 0)
        goto done;
    rc = 0;
done:
    lf_buf_free(&system);
    return rc;
}

int lf_wire_build_request(const lf_request_params *p, lf_buf *out, lf_buf *errmsg)
{
    size_t n_chat, size, i;
    int rc;

    lf_buf_clear(out);
    if (errmsg) lf_buf_clear(errmsg);
    if (!p) {
        lf_wire_fail(errmsg, "no request parameters");
        return -1;
    }
    if (lf_wire_check_params(p, errmsg, &n_chat) != 0) return -1;
    /* The body's size when nothing needs escaping, allocated at once. */
    size = 128 + strlen(p->model) + (p->system ? strlen(p->system) : 0);
    for (i = 0; i < p->n_messages; i++)
        size += 32 + strlen(p->messages[i].role) + strlen(p->messages[i].content);
    rc = lf_buf_reserve(out, size);
    if (rc == 0)
        rc = p->api == LF_API_ANTHROPIC ? lf_wire_build_anthropic(p, out) : lf_wire_build_openai(p, out);
    if (rc != 0) {
        lf_buf_clear(out);
        lf_wire_fail(errmsg, "out of memory building the request");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------- reading JSON */

static int lf_wire_is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One JSON document, with nothing but whitespace around it; NULL when the
 * text is not that. The length is explicit: NUL bytes are data here. */
static json_object *lf_json_parse(const char *s, size_t n)
{
    struct json_tokener *tok;
    json_object *obj = NULL;
    size_t start = 0, slice, end;

    if (!s) return NULL;
    tok = json_tokener_new_ex(LF_WIRE_JSON_DEPTH);
    if (!tok) return NULL;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    for (;;) {
        slice = n - start;
        if (slice > LF_WIRE_JSON_SLICE) slice = LF_WIRE_JSON_SLICE;
        obj = json_tokener_parse_ex(tok, s + start, (int)slice);
        if (obj) break;
        if (json_tokener_get_error(tok) != json_tokener_continue) break;
        start += slice;
        if (start >= n) break;   /* the text ended inside the document */
    }
    if (obj) {
        end = start + json_tokener_get_parse_end(tok);
        for (; end < n; end++) {
            if (!lf_wire_is_ws(s[end])) {
                json_object_put(obj);
                obj = NULL;
                break;
            }
        }
    }
    json_tokener_free(tok);
    return obj;
}

/* The member key of object o, or NULL when o is not an object, the key is
 * missing or its value is null. */
static json_object *lf_json_get(json_object *o, const char *key)
{
    json_object *v = NULL;

    if (!o || !json_object_is_type(o, json_type_object)) return NULL;
    if (!json_object_object_get_ex(o, key, &v)) return NULL;
    return v;
}

static json_object *lf_json_get_typed(json_object *o, const char *key, json_type type)
{
    json_object *v = lf_json_get(o, key);

    return v && json_object_is_type(v, type) ? v : NULL;
}

/* Sets out to the string member key when there is one; leaves it otherwise. */
static int lf_json_take_string(json_object *o, const char *key, lf_buf *out)
{
    json_object *v = lf_json_get_typed(o, key, json_type_string);

    if (!v) return 0;
    return lf_utf8_set_sanitized(out, json_object_get_string(v),
                                 (size_t)json_object_get_string_len(v));
}

/* Exact, length included: "text\u0000junk" is not "text". */
static int lf_bytes_are(const char *s, size_t n, const char *want)
{
    size_t wn = strlen(want);

    return n == wn && memcmp(s, want, n) == 0;
}

static int lf_json_string_is(json_object *o, const char *key, const char *want)
{
    json_object *v = lf_json_get_typed(o, key, json_type_string);

    return v && lf_bytes_are(json_object_get_string(v), (size_t)json_object_get_string_len(v), want);
}

/* A token count: a non-negative integer (or an integral double). Returns 1
 * and sets *out when the member is one. */
static int lf_json_take_count(json_object *o, const char *key, long *out)
{
    json_object *v = lf_json_get(o, key);
    double d;
    int64_t i;

    if (!v) return 0;
    if (json_object_is_type(v, json_type_int)) {
        i = json_object_get_int64(v);
        if (i < 0 || (uint64_t)i > (uint64_t)LONG_MAX) return 0;
        *out = (long)i;
        return 1;
    }
    if (json_object_is_type(v, json_type_double)) {
        d = json_object_get_double(v);
        if (!(d >= 0.0 && d < (double)LONG_MAX) || d != floor(d)) return 0;
        *out = (long)d;
        return 1;
    }
    return 0;
}

/* Any value as text: a string as itself, anything else as its JSON. */
static int lf_json_value_text(json_object *v, lf_buf *out)
{
    const char *s;
    size_t n = 0;

    lf_buf_clear(out);
    if (!v) return 0;
    if (json_object_is_type(v, json_type_string))
        return lf_utf8_append_sanitized(out, json_object_get_string(v),
                                        (size_t)json_object_get_string_len(v));
    s = json_object_to_json_string_length(v, JSON_C_TO_STRING_PLAIN |
                                                 JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    if (!s) return -1;
    return lf_utf8_append_sanitized(out, s, n);
}

/* ------------------------------------------------------- error bodies */

void lf_wire_error_init(lf_wire_error *e)
{
    lf_buf_init(&e->type);
    lf_buf_init(&e->code);
    lf_buf_init(&e->message);
}

void lf_wire_error_clear(lf_wire_error *e)
{
    lf_buf_clear(&e->type);
    lf_buf_clear(&e->code);
    lf_buf_clear(&e->message);
}

void lf_wire_error_free(lf_wire_error *e)
{
    lf_buf_free(&e->type);
    lf_buf_free(&e->code);
    lf_buf_free(&e->message);
}

static int lf_wire_error_empty(const lf_wire_error *e)
{
    return !e->type.len && !e->code.len && !e->message.len;
}

/* FastAPI's validation errors: [{"loc": [...], "msg": "...", ...}, ...]. */
static int lf_wire_detail_list(json_object *detail, lf_buf *out)
{
    size_t i, n = json_object_array_length(detail);

    lf_buf_clear(out);
    for (i = 0; i < n; i++) {
        json_object *item = json_object_array_get_idx(detail, i);
        json_object *msg = json_object_is_type(item, json_type_string)
                               ? item : lf_json_get_typed(item, "msg", json_type_string);

        if (!msg) continue;
        if (out->len && lf_buf_append(out, "; ", 2) != 0) return -1;
        if (lf_utf8_append_sanitized(out, json_object_get_string(msg),
                                     (size_t)json_object_get_string_len(msg)) != 0)
            return -1;
    }
    return 0;
}

/* Fills e from a parsed body; 1 when it has one of the error shapes. */
static int lf_wire_error_from_json(json_object *root, lf_wire_error *e)
{
    json_object *err, *detail, *msg;
    size_t i, n;

    lf_wire_error_clear(e);
    if (!root) return 0;
    if (json_object_is_type(root, json_type_array)) {
        /* Gemini's compat endpoint: [{"error": {...}}]. */
        n = json_object_array_length(root);
        for (i = 0; i < n; i++) {
            json_object *item = json_object_array_get_idx(root, i);

            if (lf_json_get(item, "error") && lf_wire_error_from_json(item, e)) return 1;
        }
        return 0;
    }
    if (!json_object_is_type(root, json_type_object)) return 0;

    err = lf_json_get(root, "error");
    if (err) {
        if (json_object_is_type(err, json_type_object)) {
            /* OpenAI and Anthropic name the kind "type"; Gemini "status". */
            if (lf_json_take_string(err, "type", &e->type) != 0 ||
                (!e->type.len && lf_json_take_string(err, "status", &e->type) != 0) ||
                lf_json_value_text(lf_json_get(err, "code"), &e->code) != 0 ||
                lf_json_value_text(lf_json_get(err, "message"), &e->message) != 0)
                goto nomem;
            /* Some servers omit every field we know: keep what they said. */
            if (lf_wire_error_empty(e) && lf_json_value_text(err, &e->message) != 0) goto nomem;
        } else if (lf_json_value_text(err, &e->message) != 0) {
            goto nomem;   /* {"error": "some string"} */
        }
        return 1;
    }

    detail = lf_json_get(root, "detail");
    if (detail) {
        if (json_object_is_type(detail, json_type_array)) {
            if (lf_wire_detail_list(detail, &e->message) != 0) goto nomem;
        } else if (json_object_is_type(detail, json_type_object)) {
            msg = lf_json_get(detail, "message");
            if (!msg) msg = lf_json_get(detail, "msg");
            if (lf_json_value_text(msg ? msg : detail, &e->message) != 0) goto nomem;
        } else if (lf_json_value_text(detail, &e->message) != 0) {
            goto nomem;
        }
        if (!e->message.len && lf_json_value_text(detail, &e->message) != 0) goto nomem;
        return 1;
    }

    msg = lf_json_get_typed(root, "message", json_type_string);
    if (msg) {
        /* {"message": "..."}; vLLM-style servers put type and code beside it. */
        if (lf_json_value_text(msg, &e->message) != 0 ||
            lf_json_take_string(root, "type", &e->type) != 0 ||
            lf_json_value_text(lf_json_get(root, "code"), &e->code) != 0)
            goto nomem;
        return 1;
    }
    return 0;

nomem:
    /* Still an error body; what could be kept is kept. */
    return 1;
}

int lf_wire_parse_error(const char *body, size_t len, lf_wire_error *e)
{
    json_object *root = lf_json_parse(body, len);
    int found;

    lf_wire_error_clear(e);
    if (!root) return 0;
    found = lf_wire_error_from_json(root, e);
    json_object_put(root);
    if (!found) lf_wire_error_clear(e);
    return found;
}

/* ------------------------------------------------------------ answers */

void lf_answer_init(lf_answer *a)
{
    lf_buf_init(&a->text);
    lf_buf_init(&a->model);
    lf_buf_init(&a->finish_reason);
    lf_buf_init(&a->id);
    a->input_tokens = -1;
    a->output_tokens = -1;
}

void lf_answer_clear(lf_answer *a)
{
    lf_buf_clear(&a->text);
    lf_buf_clear(&a->model);
    lf_buf_clear(&a->finish_reason);
    lf_buf_clear(&a->id);
    a->input_tokens = -1;
    a->output_tokens = -1;
}

void lf_answer_free(lf_answer *a)
{
    lf_buf_free(&a->text);
    lf_buf_free(&a->model);
    lf_buf_free(&a->finish_reason);
    lf_buf_free(&a->id);
    a->input_tokens = -1;
    a->output_tokens = -1;
}

/* The choice with index 0 (servers that stream n > 1 interleave choices),
 * else the first one; NULL when there is none. */
static json_object *lf_wire_first_choice(json_object *choices)
{
    size_t i, n = json_object_array_length(choices);
    json_object *idx;

    for (i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(choices, i);

        if (!json_object_is_type(c, json_type_object)) continue;
        idx = lf_json_get(c, "index");
        if (!idx || (json_object_is_type(idx, json_type_int) && json_object_get_int64(idx) == 0))
            return c;
    }
    return n ? json_object_array_get_idx(choices, 0) : NULL;
}

/* Appends content that is a string, or an array of parts of which the
 * {"type":"text","text":...} ones count (Anthropic's content blocks, and the
 * content arrays some OpenAI-compatible servers answer with). Other values
 * and other parts (tool_use, thinking, ...) carry no text. */
static int lf_wire_append_content(lf_buf *text, json_object *content)
{
    size_t i, n;

    if (!content) return 0;
    if (json_object_is_type(content, json_type_string))
        return lf_utf8_append_sanitized(text, json_object_get_string(content),
                                        (size_t)json_object_get_string_len(content));
    if (!json_object_is_type(content, json_type_array)) return 0;
    n = json_object_array_length(content);
    for (i = 0; i < n; i++) {
        json_object *part = json_object_array_get_idx(content, i);
        json_object *t = lf_json_get_typed(part, "text", json_type_string);

        if (!t || !lf_json_string_is(part, "type", "text")) continue;
        if (lf_utf8_append_sanitized(text, json_object_get_string(t),
                                     (size_t)json_object_get_string_len(t)) != 0)
            return -1;
    }
    return 0;
}

static int lf_wire_openai_usage(json_object *usage, lf_answer *a)
{
    int seen = 0;

    if (!usage || !json_object_is_type(usage, json_type_object)) return 0;
    seen |= lf_json_take_count(usage, "prompt_tokens", &a->input_tokens);
    seen |= lf_json_take_count(usage, "completion_tokens", &a->output_tokens);
    return seen;
}

static int lf_wire_anthropic_usage(json_object *usage, lf_answer *a)
{
    int seen = 0;

    if (!usage || !json_object_is_type(usage, json_type_object)) return 0;
    seen |= lf_json_take_count(usage, "input_tokens", &a->input_tokens);
    seen |= lf_json_take_count(usage, "output_tokens", &a->output_tokens);
    return seen;
}

static int lf_wire_openai_answer(json_object *root, lf_answer *out, lf_wire_error *err)
{
    json_object *choices, *choice, *message;

    if (lf_json_get(root, "error") || json_object_is_type(root, json_type_array))
        return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    choices = lf_json_get_typed(root, "choices", json_type_array);
    if (!choices)
        return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    choice = lf_wire_first_choice(choices);
    message = lf_json_get_typed(choice, "message", json_type_object);
    if (!message) return LF_WIRE_INVALID;
    /* content is null for a refusal or a tool call: that is an empty text. */
    if (lf_wire_append_content(&out->text, lf_json_get(message, "content")) != 0 ||
        lf_json_take_string(choice, "finish_reason", &out->finish_reason) != 0 ||
        lf_json_take_string(root, "model", &out->model) != 0 ||
        lf_json_take_string(root, "id", &out->id) != 0)
        return LF_WIRE_INVALID;
    lf_wire_openai_usage(lf_json_get(root, "usage"), out);
    return LF_WIRE_OK;
}

static int lf_wire_anthropic_answer(json_object *root, lf_answer *out, lf_wire_error *err)
{
    json_object *content;

    if (lf_json_string_is(root, "type", "error") || lf_json_get(root, "error") ||
        json_object_is_type(root, json_type_array))
        return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    content = lf_json_get_typed(root, "content", json_type_array);
    if (!content)
        return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    if (lf_wire_append_content(&out->text, content) != 0 ||
        lf_json_take_string(root, "stop_reason", &out->finish_reason) != 0 ||
        lf_json_take_string(root, "model", &out->model) != 0 ||
        lf_json_take_string(root, "id", &out->id) != 0)
        return LF_WIRE_INVALID;
    lf_wire_anthropic_usage(lf_json_get(root, "usage"), out);
    return LF_WIRE_OK;
}

/* ------------------------------------------------- lf_jscan fast paths */

/* The everyday answer and stream event, read in place with lf_jscan instead
 * of json-c (a tree of hash tables, a tokener and a locale switch per parse).
 * Each fast path takes the same steps as its json-c twin for the shapes it
 * knows; for anything else (a text outside lf_jscan's subset, an error body,
 * an odd shape, more values than its node array holds) it returns 0 before
 * writing anything, and json-c reads the text. test/c/test_jscan.c and
 * fuzz/fuzz_jscan.c compare the two paths. */

/* An everyday stream event has about 20 values, an everyday answer about 30;
 * bigger ones (logprobs, many tool calls) go to json-c. */
#define LF_WIRE_EVENT_NODES 128
#define LF_WIRE_ANSWER_NODES 512

static const lf_jkey lf_key_content = LF_JKEY("content");
static const lf_jkey lf_key_text = LF_JKEY("text");

/* A string node into out (sanitized), replacing it, as lf_json_take_string.
 * When out already holds exactly these bytes there is nothing to do: out is
 * valid UTF-8, so the bytes would sanitize to themselves (a stream repeats
 * model and id on every event). */
static int lf_jdoc_take_string(const lf_jdoc *d, uint32_t i, lf_buf *out)
{
    lf_js v = lf_jdoc_value(d, i);
    lf_buf raw;
    int rc;

    if (v.type != LF_JS_STRING) return 0;
    if (!(d->nodes[i].flags & LF_JNODE_ESCAPES)) {
        if (out->len == v.n - 2 && (out->len == 0 || memcmp(out->ptr, v.p + 1, out->len) == 0)) return 0;
        return lf_utf8_set_sanitized(out, v.p + 1, v.n - 2);
    }
    lf_buf_init(&raw);
    rc = lf_jscan_string_append(v, &raw);
    if (rc == 0) rc = lf_utf8_set_sanitized(out, raw.ptr ? raw.ptr : "", raw.len);
    lf_buf_free(&raw);
    return rc;
}

/* A string node appended to out (sanitized), as lf_stream_add_text and
 * lf_wire_append_content do with a string. */
static int lf_jdoc_add_text(const lf_jdoc *d, uint32_t i, lf_buf *out)
{
    lf_js v = lf_jdoc_value(d, i);
    lf_buf raw;
    int rc;

    if (v.type != LF_JS_STRING) return 0;
    if (!(d->nodes[i].flags & LF_JNODE_ESCAPES)) return lf_utf8_append_sanitized(out, v.p + 1, v.n - 2);
    lf_buf_init(&raw);
    rc = lf_jscan_string_append(v, &raw);
    if (rc == 0) rc = lf_utf8_append_sanitized(out, raw.ptr ? raw.ptr : "", raw.len);
    lf_buf_free(&raw);
    return rc;
}

/* Token counts read ahead of time, so that a path can give up before it
 * writes anything. */
typedef struct lf_fast_usage {
    int seen_in, seen_out;
    long in, out;
} lf_fast_usage;

/* lf_json_take_count over a node: 1 and *out set for a count, 0 for no count
 * (absent, null, negative, not a number), -1 for a number with a point:
 * json-c makes it a double, and whether strtod's rounding makes it integral
 * is left to json-c. */
static int lf_jdoc_count(const lf_jdoc *d, uint32_t i, long *out)
{
    int64_t v;

    if (lf_jdoc_type(d, i) != LF_JS_NUMBER) return 0;
    if (!lf_jscan_int(lf_jdoc_value(d, i), &v)) return -1;
    if (v < 0 || (uint64_t)v > (uint64_t)LONG_MAX) return 0;
    *out = (long)v;
    return 1;
}

/* lf_wire_openai_usage / lf_wire_anthropic_usage, read into u: 0, or -1
 * when json-c has to decide. keys: the input count's name, the output's. */
static int lf_fast_usage_read(const lf_jdoc *d, uint32_t usage, const lf_jkey *keys, lf_fast_usage *u)
{
    uint32_t m[2];

    memset(u, 0, sizeof *u);
    if (lf_jdoc_type(d, usage) != LF_JS_OBJECT) return 0;
    lf_jdoc_members(d, usage, keys, 2, m);
    if ((u->seen_in = lf_jdoc_count(d, m[0], &u->in)) < 0) return -1;
    if ((u->seen_out = lf_jdoc_count(d, m[1], &u->out)) < 0) return -1;
    return 0;
}

/* Writes what lf_fast_usage_read found; 1 when there was a count. */
static int lf_fast_usage_apply(const lf_fast_usage *u, lf_answer *a)
{
    if (u->seen_in) a->input_tokens = u->in;
    if (u->seen_out) a->output_tokens = u->out;
    return u->seen_in || u->seen_out;
}

static const lf_jkey lf_openai_usage_keys[] = { LF_JKEY("prompt_tokens"), LF_JKEY("completion_tokens") };
static const lf_jkey lf_anthropic_usage_keys[] = { LF_JKEY("input_tokens"), LF_JKEY("output_tokens") };

/* lf_wire_first_choice: the object whose index is 0 or missing, else the
 * first element; NONE for no array or an empty one. The chosen choice's
 * members keys[] are read on the way into out[] (NONE when it is not an
 * object); keys[0] must be "index". */
static inline __attribute__((always_inline)) uint32_t
lf_jdoc_first_choice(const lf_jdoc *d, uint32_t choices, const lf_jkey *keys, size_t n_keys,
                     uint32_t *out)
{
    uint32_t el, first = lf_jdoc_first(d, choices);

    for (el = first; el != LF_JNODE_NONE; el = lf_jdoc_next(d, choices, el)) {
        if (d->nodes[el].type != LF_JS_OBJECT) continue;
        lf_jdoc_members(d, el, keys, n_keys, out);
        if (lf_jdoc_type(d, out[0]) <= LF_JS_NULL || lf_jscan_is_zero_int(lf_jdoc_value(d, out[0]))) return el;
    }
    lf_jdoc_members(d, first, keys, n_keys, out);
    return first;
}

/* lf_wire_openai_answer for a successful answer whose content is a string or
 * null: 1 done, 0 left to json-c, -1 out of memory. */
static int lf_wire_openai_fast(const char *body, size_t len, lf_answer *out)
{
    enum { K_ERROR, K_CHOICES, K_MODEL, K_ID, K_USAGE, K_N };
    static const lf_jkey keys[K_N] = { LF_JKEY("error"), LF_JKEY("choices"), LF_JKEY("model"),
                                       LF_JKEY("id"), LF_JKEY("usage") };
    static const lf_jkey choice_keys[3] = { LF_JKEY("index"), LF_JKEY("message"), LF_JKEY("finish_reason") };
    lf_jnode nodes[LF_WIRE_ANSWER_NODES];
    lf_jdoc d;
    uint32_t m[K_N], c[3], choice, content;
    lf_fast_usage u;

    lf_jdoc_init(&d, nodes, LF_WIRE_ANSWER_NODES);
    if (lf_jscan_index(&d, body, len) != 0 || d.nodes[0].type != LF_JS_OBJECT) return 0;
    lf_jdoc_members(&d, 0, keys, K_N, m);
    if (lf_jdoc_type(&d, m[K_ERROR]) > LF_JS_NULL || lf_jdoc_type(&d, m[K_CHOICES]) != LF_JS_ARRAY) return 0;
    choice = lf_jdoc_first_choice(&d, m[K_CHOICES], choice_keys, 3, c);
    if (lf_jdoc_type(&d, choice) != LF_JS_OBJECT || lf_jdoc_type(&d, c[1]) != LF_JS_OBJECT) return 0;
    content = lf_jdoc_member(&d, c[1], lf_key_content);
    if (lf_jdoc_type(&d, content) == LF_JS_ARRAY) return 0; /* content parts: json-c's */
    if (lf_fast_usage_read(&d, m[K_USAGE], lf_openai_usage_keys, &u) != 0) return 0;

    if (lf_jdoc_add_text(&d, content, &out->text) != 0 ||
        lf_jdoc_take_string(&d, c[2], &out->finish_reason) != 0 ||
        lf_jdoc_take_string(&d, m[K_MODEL], &out->model) != 0 ||
        lf_jdoc_take_string(&d, m[K_ID], &out->id) != 0)
        return -1;
    lf_fast_usage_apply(&u, out);
    return 1;
}

/* lf_wire_anthropic_answer for a successful message: 1 done, 0 left to
 * json-c, -1 out of memory. */
static int lf_wire_anthropic_fast(const char *body, size_t len, lf_answer *out)
{
    enum { K_TYPE, K_ERROR, K_CONTENT, K_STOP, K_MODEL, K_ID, K_USAGE, K_N };
    static const lf_jkey keys[K_N] = { LF_JKEY("type"), LF_JKEY("error"), LF_JKEY("content"),
                                       LF_JKEY("stop_reason"), LF_JKEY("model"), LF_JKEY("id"),
                                       LF_JKEY("usage") };
    static const lf_jkey part_keys[2] = { LF_JKEY("type"), LF_JKEY("text") };
    static const lf_jkey error_type = LF_JKEY("error");
    lf_jnode nodes[LF_WIRE_ANSWER_NODES];
    lf_jdoc d;
    uint32_t m[K_N], part;
    lf_fast_usage u;

    lf_jdoc_init(&d, nodes, LF_WIRE_ANSWER_NODES);
    if (lf_jscan_index(&d, body, len) != 0 || d.nodes[0].type != LF_JS_OBJECT) return 0;
    lf_jdoc_members(&d, 0, keys, K_N, m);
    if (lf_jdoc_string_is(&d, m[K_TYPE], error_type) || lf_jdoc_type(&d, m[K_ERROR]) > LF_JS_NULL ||
        lf_jdoc_type(&d, m[K_CONTENT]) != LF_JS_ARRAY)
        return 0;
    if (lf_fast_usage_read(&d, m[K_USAGE], lf_anthropic_usage_keys, &u) != 0) return 0;

    /* Text blocks count; tool_use, thinking and the rest carry no text. */
    for (part = lf_jdoc_first(&d, m[K_CONTENT]); part != LF_JNODE_NONE;
         part = lf_jdoc_next(&d, m[K_CONTENT], part)) {
        uint32_t p[2];

        lf_jdoc_members(&d, part, part_keys, 2, p);
        if (lf_jdoc_type(&d, p[1]) != LF_JS_STRING || !lf_jdoc_string_is(&d, p[0], lf_key_text)) continue;
        if (lf_jdoc_add_text(&d, p[1], &out->text) != 0) return -1;
    }
    if (lf_jdoc_take_string(&d, m[K_STOP], &out->finish_reason) != 0 ||
        lf_jdoc_take_string(&d, m[K_MODEL], &out->model) != 0 ||
        lf_jdoc_take_string(&d, m[K_ID], &out->id) != 0)
        return -1;
    lf_fast_usage_apply(&u, out);
    return 1;
}

/* lf_stream_openai for an object without "error" whose "choices" is absent,
 * null or an array: 1 done, 0 left to json-c (s untouched), -1 out of
 * memory. */
static int lf_stream_openai_fast(lf_stream_state *s, const char *data, size_t n)
{
    enum { K_ERROR, K_USAGE, K_CHOICES, K_MODEL, K_ID, K_N };
    static const lf_jkey keys[K_N] = { LF_JKEY("error"), LF_JKEY("usage"), LF_JKEY("choices"),
                                       LF_JKEY("model"), LF_JKEY("id") };
    static const lf_jkey choice_keys[3] = { LF_JKEY("index"), LF_JKEY("delta"), LF_JKEY("finish_reason") };
    lf_jnode nodes[LF_WIRE_EVENT_NODES];
    lf_jdoc d;
    uint32_t m[K_N], c[3], choice;
    lf_js_type choices;
    lf_fast_usage u;

    lf_jdoc_init(&d, nodes, LF_WIRE_EVENT_NODES);
    if (lf_jscan_index(&d, data, n) != 0 || d.nodes[0].type != LF_JS_OBJECT) return 0;
    lf_jdoc_members(&d, 0, keys, K_N, m);
    /* json-c reads a null member as no member. */
    if (lf_jdoc_type(&d, m[K_ERROR]) > LF_JS_NULL) return 0;
    choices = lf_jdoc_type(&d, m[K_CHOICES]);
    if (choices > LF_JS_NULL && choices != LF_JS_ARRAY) return 0;
    if (lf_fast_usage_read(&d, m[K_USAGE], lf_openai_usage_keys, &u) != 0) return 0;
    choice = lf_jdoc_first_choice(&d, m[K_CHOICES], choice_keys, 3, c);

    if (lf_jdoc_take_string(&d, m[K_MODEL], &s->answer.model) != 0 ||
        lf_jdoc_take_string(&d, m[K_ID], &s->answer.id) != 0)
        return -1;
    if (lf_jdoc_type(&d, choice) == LF_JS_OBJECT) {
        if (lf_jdoc_add_text(&d, lf_jdoc_member(&d, c[1], lf_key_content), &s->answer.text) != 0) return -1;
        if (lf_jdoc_type(&d, c[2]) == LF_JS_STRING) {
            if (lf_jdoc_take_string(&d, c[2], &s->answer.finish_reason) != 0) return -1;
            s->finished = 1;
        }
    }
    /* DeepSeek and Mistral put usage on the finish_reason chunk, OpenAI on a
     * last chunk of its own. */
    if (lf_fast_usage_apply(&u, &s->answer)) s->has_usage = 1;
    return 1;
}

int lf_stream_fast_reads(const char *data, size_t n)
{
    lf_stream_state s;
    int rc;

    lf_stream_init(&s, LF_API_OPENAI);
    rc = lf_stream_openai_fast(&s, data, n);
    lf_stream_free(&s);
    return rc > 0;
}

/* The fast path alone (see lf_wire.h). */
int lf_wire_parse_response_jscan(lf_api api, const char *body, size_t len, lf_answer *out)
{
    int rc;

    lf_answer_clear(out);
    rc = api == LF_API_ANTHROPIC ? lf_wire_anthropic_fast(body, len, out) : lf_wire_openai_fast(body, len, out);
    if (rc > 0) return LF_WIRE_OK;
    lf_answer_clear(out);
    return rc < 0 ? LF_WIRE_INVALID : -1;
}

static int lf_wire_parse_response_with(lf_api api, const char *body, size_t len,
                                       lf_answer *out, lf_wire_error *err, int fast)
{
    lf_wire_error scratch;
    json_object *root;
    int rc;

    if (err) lf_wire_error_clear(err);
    if (fast) {
        rc = lf_wire_parse_response_jscan(api, body, len, out);
        if (rc >= 0) return rc;
    }
    lf_answer_clear(out);
    lf_wire_error_init(&scratch);
    if (!err) err = &scratch;
    root = lf_json_parse(body, len);
    if (!root) {
        rc = LF_WIRE_INVALID;
    } else {
        rc = api == LF_API_ANTHROPIC ? lf_wire_anthropic_answer(root, out, err)
                                     : lf_wire_openai_answer(root, out, err);
        json_object_put(root);
    }
    if (rc != LF_WIRE_OK) lf_answer_clear(out);
    if (rc != LF_WIRE_ERROR_BODY) lf_wire_error_clear(err);
    lf_wire_error_free(&scratch);
    return rc;
}

int lf_wire_parse_response(lf_api api, const char *body, size_t len,
                           lf_answer *out, lf_wire_error *err)
{
    return lf_wire_parse_response_with(api, body, len, out, err, 1);
}

int lf_wire_parse_response_json_c(lf_api api, const char *body, size_t len,
                                  lf_answer *out, lf_wire_error *err)
{
    return lf_wire_parse_response_with(api, body, len, out, err, 0);
}

/* ------------------------------------------------------------ streams */

void lf_stream_init(lf_stream_state *s, lf_api api)
{
    s->api = api;
    lf_answer_init(&s->answer);
    lf_wire_error_init(&s->error);
    s->done = 0;
    s->finished = 0;
    s->has_usage = 0;
    s->delta_at = 0;
    s->json_c_only = 0;
}

void lf_stream_free(lf_stream_state *s)
{
    lf_answer_free(&s->answer);
    lf_wire_error_free(&s->error);
}

int lf_stream_complete(const lf_stream_state *s)
{
    return s->done || s->finished;
}

/* New text, sanitized, straight onto the answer (lf_stream_took takes it
 * back off when the event fails). */
static int lf_stream_add_text(lf_stream_state *s, json_object *text)
{
    if (!text || !json_object_is_type(text, json_type_string)) return 0;
    if (lf_utf8_append_sanitized(&s->answer.text, json_object_get_string(text),
                                 (size_t)json_object_get_string_len(text)) != 0)
        return -1;
    return 0;
}

static int lf_stream_openai(lf_stream_state *s, json_object *root)
{
    json_object *choices, *choice, *usage;

    if (json_object_is_type(root, json_type_array) || lf_json_get(root, "error")) {
        /* {"error": {...}} inside a 200 stream (Gemini may wrap it in []). */
        if (!lf_wire_error_from_json(root, &s->error)) return LF_STREAM_INVALID;
        return LF_STREAM_ERROR;
    }
    if (lf_json_take_string(root, "model", &s->answer.model) != 0 ||
        lf_json_take_string(root, "id", &s->answer.id) != 0)
        return LF_STREAM_INVALID;
    choices = lf_json_get(root, "choices");
    if (choices && !json_object_is_type(choices, json_type_array)) return LF_STREAM_INVALID;
    /* The include_usage chunk has "choices": [] and nothing to take from it. */
    choice = choices ? lf_wire_first_choice(choices) : NULL;
    if (choice && json_object_is_type(choice, json_type_object)) {
        if (lf_stream_add_text(s, lf_json_get(lf_json_get(choice, "delta"), "content")) != 0)
            return LF_STREAM_INVALID;
        if (lf_json_get_typed(choice, "finish_reason", json_type_string)) {
            if (lf_json_take_string(choice, "finish_reason", &s->answer.finish_reason) != 0)
                return LF_STREAM_INVALID;
            s->finished = 1;
        }
    }
    /* DeepSeek and Mistral put usage on the finish_reason chunk, OpenAI on
     * a last chunk of its own; "usage": null elsewhere. */
    usage = lf_json_get(root, "usage");
    if (lf_wire_openai_usage(usage, &s->answer)) s->has_usage = 1;
    return LF_STREAM_CONTINUE;
}

static int lf_stream_anthropic(lf_stream_state *s, json_object *root, const lf_sse_event *ev)
{
    json_object *type, *msg, *delta, *block;
    const char *t;
    size_t tn;

    if (!json_object_is_type(root, json_type_object)) {
        if (lf_wire_error_from_json(root, &s->error)) return LF_STREAM_ERROR;
        return LF_STREAM_INVALID;
    }
    /* The data's own "type" is what the event is; the SSE name only helps
     * when a proxy dropped it. */
    type = lf_json_get_typed(root, "type", json_type_string);
    if (type) {
        t = json_object_get_string(type);
        tn = (size_t)json_object_get_string_len(type);
    } else if (ev->event && ev->event_len) {
        t = ev->event;
        tn = ev->event_len;
    } else if (lf_json_get(root, "error")) {
        t = "error";
        tn = 5;
    } else {
        return LF_STREAM_INVALID;
    }

    if (lf_bytes_are(t, tn, "message_start")) {
        msg = lf_json_get_typed(root, "message", json_type_object);
        if (lf_json_take_string(msg, "model", &s->answer.model) != 0 ||
            lf_json_take_string(msg, "id", &s->answer.id) != 0)
            return LF_STREAM_INVALID;
        if (lf_wire_anthropic_usage(lf_json_get(msg, "usage"), &s->answer)) s->has_usage = 1;
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "content_block_start")) {
        /* A text block starts with "text": "" in practice; take it anyway. */
        block = lf_json_get(root, "content_block");
        if (lf_json_string_is(block, "type", "text") &&
            lf_stream_add_text(s, lf_json_get(block, "text")) != 0)
            return LF_STREAM_INVALID;
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "content_block_delta")) {
        /* input_json_delta, thinking_delta, signature_delta: not text. */
        delta = lf_json_get(root, "delta");
        if (lf_json_string_is(delta, "type", "text_delta") &&
            lf_stream_add_text(s, lf_json_get(delta, "text")) != 0)
            return LF_STREAM_INVALID;
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "message_delta")) {
        delta = lf_json_get(root, "delta");
        if (lf_json_get_typed(delta, "stop_reason", json_type_string)) {
            if (lf_json_take_string(delta, "stop_reason", &s->answer.finish_reason) != 0)
                return LF_STREAM_INVALID;
            s->finished = 1;
        }
        /* Cumulative counts: the last one is the total. */
        if (lf_wire_anthropic_usage(lf_json_get(root, "usage"), &s->answer)) s->has_usage = 1;
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "message_stop")) {
        s->done = 1;
        return LF_STREAM_DONE;
    }
    if (lf_bytes_are(t, tn, "error")) {
        if (!lf_wire_error_from_json(root, &s->error))
            (void)lf_json_value_text(root, &s->error.message);
        return LF_STREAM_ERROR;
    }
    /* ping, content_block_stop, and whatever Anthropic adds later. */
    return LF_STREAM_CONTINUE;
}

static int lf_stream_blank(const char *d, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!lf_wire_is_ws(d[i])) return 0;
    return 1;
}

static int lf_stream_is_done_marker(const char *d, size_t n)
{
    while (n && lf_wire_is_ws(d[0])) { d++; n--; }
    while (n && lf_wire_is_ws(d[n - 1])) n--;
    return n == 6 && memcmp(d, "[DONE]", 6) == 0;
}

/* The end of an event: the text it added to the answer goes out to the
 * caller, or, when the event failed, comes off the answer again. */
static int lf_stream_took(lf_stream_state *s, int rc, const char **delta, size_t *delta_len)
{
    lf_buf *t = &s->answer.text;

    if (t->len > s->delta_at && rc != LF_STREAM_CONTINUE) {
        t->len = s->delta_at;
        t->ptr[t->len] = '\0';
    }
    if (delta) *delta = lf_buf_cstr(t) + s->delta_at;
    if (delta_len) *delta_len = t->len - s->delta_at;
    return rc;
}

int lf_stream_event(lf_stream_state *s, const lf_sse_event *ev,
                    const char **delta, size_t *delta_len)
{
    json_object *root;
    int rc;

    s->delta_at = s->answer.text.len;
    if (delta) *delta = lf_buf_cstr(&s->answer.text) + s->delta_at;
    if (delta_len) *delta_len = 0;
    if (s->done) return LF_STREAM_CONTINUE;   /* after the end: ignored */
    if (!ev) return LF_STREAM_INVALID;
    if (!ev->data || lf_stream_blank(ev->data, ev->data_len)) return LF_STREAM_CONTINUE;
    if (s->api == LF_API_OPENAI && lf_stream_is_done_marker(ev->data, ev->data_len)) {
        s->done = 1;
        return LF_STREAM_DONE;
    }
    if (s->api == LF_API_OPENAI && !s->json_c_only) {
        rc = lf_stream_openai_fast(s, ev->data, ev->data_len);
        if (rc < 0) return lf_stream_took(s, LF_STREAM_INVALID, delta, delta_len);
        if (rc > 0) return lf_stream_took(s, LF_STREAM_CONTINUE, delta, delta_len);
    }
    root = lf_json_parse(ev->data, ev->data_len);
    if (!root) return LF_STREAM_INVALID;
    if (s->api == LF_API_ANTHROPIC) {
        rc = lf_stream_anthropic(s, root, ev);
    } else if (!json_object_is_type(root, json_type_object) &&
               !json_object_is_type(root, json_type_array)) {
        rc = LF_STREAM_INVALID;
    } else {
        rc = lf_stream_openai(s, root);
    }
    json_object_put(root);
    return lf_stream_took(s, rc, delta, delta_len);
}
