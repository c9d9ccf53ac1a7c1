/* Reading JSON with json-c, for the wire layer's readers of answers, stream
 * events and error bodies. Lookups take NULL and non-objects and answer NULL
 * or 0; strings taken out are sanitized to valid UTF-8. */
#ifndef LF_JSON_READ_H
#define LF_JSON_READ_H

#include <stddef.h>
#include <json-c/json.h>
#include "lf_buf.h"

/* JSON whitespace. */
int lf_wire_is_ws(char c);
/* One JSON document, with nothing but whitespace around it; NULL when the
 * text is not that. The length is explicit: NUL bytes are data here. */
json_object *lf_json_parse(const char *s, size_t n);
/* 0 when s is one standard (RFC 8259) JSON document with nothing but
 * whitespace around it; otherwise the offset + 1 of the first byte that is
 * not (n + 1 when the text ends inside the document). With
 * paired_surrogates, an escaped lone surrogate ("\ud800") is refused too: the
 * grammar allows it, strict readers (Ruby's JSON) do not. */
size_t lf_json_nonstandard_at(const char *s, size_t n, int paired_surrogates);
/* The member key of object o, or NULL when o is not an object, the key is
 * missing or its value is null. */
json_object *lf_json_get(json_object *o, const char *key);
json_object *lf_json_get_typed(json_object *o, const char *key, json_type type);
/* Sets out to the string member key when there is one; leaves it otherwise. */
int lf_json_take_string(json_object *o, const char *key, lf_buf *out);
/* Exact, length included: "text\u0000junk" is not "text". */
int lf_bytes_are(const char *s, size_t n, const char *want);
int lf_json_string_is(json_object *o, const char *key, const char *want);
/* A token count: a non-negative integer (or an integral double). Returns 1
 * and sets *out when the member is one. */
int lf_json_take_count(json_object *o, const char *key, long *out);
/* Any value as text: a string as itself, anything else as its JSON. */
int lf_json_value_text(json_object *v, lf_buf *out);
/* Appends v written back as JSON by json-c, sanitized: json-c writes a
 * string's bytes as they came, stray ones included. The one way a parsed
 * value goes back into text or a body. 0, or -1 when out of memory. */
int lf_json_append_written(lf_buf *out, json_object *v);

/* Walking a document lf_json_nonstandard_at accepted, without a tree: for a
 * reader that takes a few members of every event of a stream. Each span is
 * one value's text (a string's with its quotes), within the checked text. */
typedef struct lf_json_span {
    const char *s;
    size_t n;
} lf_json_span;
typedef struct lf_json_walk {
    const char *s;
    size_t n, at;
    char close;
} lf_json_walk;
/* The text without the whitespace around it. */
lf_json_span lf_json_span_of(const char *s, size_t n);
/* 1 with w at the first member or element when v opens with open ('{' or
 * '['); 0 when it is not such a value. */
int lf_json_walk_start(lf_json_walk *w, lf_json_span v, char open);
/* 1 with the next member (its key's span, quotes included, into *key) or
 * element; 0 after the last; -1 at a key spelled with an escape, which
 * matching by bytes would miss. A key that occurs twice comes twice (json-c
 * keeps the last). */
int lf_json_walk_next(lf_json_walk *w, lf_json_span *key, lf_json_span *value);
/* Exact bytes: lf_json_span_is(key, "\"text\"") matches no escaped spelling. */
int lf_json_span_is(lf_json_span v, const char *text);
/* 1 with *out when v is a plain integer of 1 to 18 digits (no sign, fraction
 * or exponent); 0 otherwise. */
int lf_json_span_count(lf_json_span v, long *out);
/* A string span's value, decoded as json-c decodes it, appended sanitized
 * to out: 0, or -1 when out of memory. */
int lf_json_span_append_string(lf_json_span v, lf_buf *out);

#endif
