/* What JSON mode and a schema ask of an answer's text: one standard JSON
 * object (alone, or inside one Markdown code fence), and for a schema, that it
 * fits (lf_json_schema.h: the subset of JSON Schema the gem checks, and the
 * strict schemas it sends). */
#ifndef LF_JSON_ANSWER_H
#define LF_JSON_ANSWER_H

#include <stddef.h>
#include <json-c/json.h>
#include "lf_buf.h"
#include "lf_json_schema.h"

#define LF_JSON_ANSWER_OK 0
#define LF_JSON_ANSWER_BAD 1   /* not one object, or it breaks the schema: why says what */

/* Checks an answer's text. On LF_JSON_ANSWER_OK json_out holds the object
 * as the answer wrote it (a fence and surrounding whitespace gone): standard
 * JSON (RFC 8259: no NaN, Infinity, single quotes, raw control characters or
 * unpaired surrogates), so any strict reader reads it, big integers intact; on
 * LF_JSON_ANSWER_BAD why says what is wrong (lf_json_schema_check's problems,
 * with their paths).
 * schema may be NULL (JSON mode). Returns -1 when out of memory. */
int lf_json_answer_check(const char *text, size_t len, json_object *schema,
                         lf_buf *json_out, lf_buf *why);

#endif
