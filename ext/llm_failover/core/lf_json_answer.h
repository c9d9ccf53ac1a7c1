/* What JSON mode and a schema ask of an answer's text: one standard JSON
 * object (alone, or inside one Markdown code fence), and for a schema, the checked
 * subset of JSON Schema that OpenAI's strict mode allows:
 *   type (a name or an array of names), properties, required,
 *   additionalProperties (false, or a schema), items, enum, const, anyOf,
 *   $ref to "#/$defs/NAME" or "#/definitions/NAME".
 * Other keywords (minimum, pattern, format, ...) go to the provider but are
 * not checked here. */
#ifndef LF_JSON_ANSWER_H
#define LF_JSON_ANSWER_H

#include <stddef.h>
#include <json-c/json.h>
#include "lf_buf.h"

#define LF_JSON_ANSWER_OK 0
#define LF_JSON_ANSWER_BAD 1   /* not one object, or it breaks the schema: why says what */

/* Parses a schema given as JSON text; NULL with why filled when the text is
 * not one JSON object or not a schema both providers take: the root an object
 * schema ("type": "object", no anyOf), every object schema in it with
 * "additionalProperties": false and every property in "required" (what
 * OpenAI's strict mode refuses; Anthropic's input_schema needs the root).
 * The caller puts the result with json_object_put. */
json_object *lf_json_schema_parse(const char *text, size_t len, lf_buf *why);

/* Checks an answer's text. On LF_JSON_ANSWER_OK json_out holds the object
 * as the answer wrote it (a fence and surrounding whitespace gone): standard
 * JSON (RFC 8259: no NaN, Infinity, single quotes, raw control characters or
 * unpaired surrogates), so any strict reader reads it, big integers intact; on
 * LF_JSON_ANSWER_BAD why says what is wrong, with a path like $.items[2].id.
 * schema may be NULL (JSON mode). Returns -1 when out of memory. */
int lf_json_answer_check(const char *text, size_t len, json_object *schema,
                         lf_buf *json_out, lf_buf *why);

#endif
