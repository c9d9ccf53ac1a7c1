/* What every protocol's request builder uses: the one way the wire layer
 * words a failure, roles, the naming rule, and the pieces of a body that are
 * the same in every protocol. */
#include "lf_wire.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <string.h>

#include "lf_json_read.h"
#include "lf_json_write.h"
#include "lf_utf8.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

/* Formatted, cut to a bounded length, and kept valid UTF-8 (lf_utf8_vsetf). */
void lf_wire_vfail(lf_buf *errmsg, const char *fmt, va_list ap)
{
    if (errmsg) (void)lf_utf8_vsetf(errmsg, fmt, ap);
}

void lf_wire_fail(lf_buf *errmsg, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    lf_wire_vfail(errmsg, fmt, ap);
    va_end(ap);
}

lf_role lf_wire_role(const char *role)
{
    if (strcmp(role, "system") == 0) return LF_ROLE_SYSTEM;
    if (strcmp(role, "developer") == 0) return LF_ROLE_DEVELOPER;
    if (strcmp(role, "user") == 0) return LF_ROLE_USER;
    if (strcmp(role, "assistant") == 0) return LF_ROLE_ASSISTANT;
    if (strcmp(role, "tool") == 0) return LF_ROLE_TOOL;
    return LF_ROLE_UNKNOWN;
}

/* The one owner of the naming rule (lf_wire.h): schemas, tools, and Ruby's
 * AnswerFormat and Tool before any call. */
int lf_wire_name_ok(const char *name, size_t len)
{
    size_t i;

    if (!name || len < 1 || len > 64) return 0;
    for (i = 0; i < len; i++) {
        char c = name[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

const char *lf_wire_content(const lf_message *m)
{
    return m->content ? m->content : "";
}

int lf_wire_put_message(lf_buf *out, const char *role, const char *content, size_t len, int first)
{
    if (!first && lf_buf_append_char(out, ',') != 0) return -1;
    if (lf_buf_append_str(out, "{\"role\":") != 0 ||
        lf_json_put_cstring(out, role) != 0 ||
        lf_buf_append_str(out, ",\"content\":") != 0 ||
        lf_json_put_string(out, content, len) != 0)
        return -1;
    return lf_buf_append_char(out, '}');
}

int lf_wire_json_instruction(const lf_request_params *p)
{
    return p->json_mode && !p->schema;
}

int lf_wire_put_object(lf_buf *out, const char *text, size_t len)
{
    json_object *o = text && len ? lf_json_parse(text, len) : NULL;
    const char *s;
    size_t n = 0;
    int rc = 1;

    if (o && json_object_is_type(o, json_type_object)) {
        s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        rc = s ? lf_utf8_append_sanitized(out, s, n) : -1;
    }
    json_object_put(o);
    return rc;
}

int lf_wire_put_parameters(lf_buf *out, const lf_tool *t)
{
    int rc = t->parameters ? lf_wire_put_object(out, t->parameters, strlen(t->parameters)) : 1;

    if (rc > 0) return lf_buf_append_str(out, "{\"type\":\"object\",\"properties\":{}}");
    return rc;
}

int lf_wire_uri_escape(lf_buf *out, const char *s, size_t n, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                         c == '.' || c == '_' || c == '~' || (keep_slash && c == '/');
        char esc[3] = { '%', hex[c >> 4], hex[c & 15] };

        if (unreserved ? lf_buf_append_char(out, (char)c) != 0 : lf_buf_append(out, esc, 3) != 0) return -1;
    }
    return 0;
}
