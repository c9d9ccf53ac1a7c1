/* The subset of JSON Schema the gem checks, the one checker for answers (JSON
 * mode with a schema, lf_json_answer.h) and tool arguments (Ruby's
 * Tools::Runner asks it through LlmFailover::JsonSchema):
 *   type (a name or an array of names), properties, required,
 *   additionalProperties (false, or a schema), items, enum, const, anyOf,
 *   $ref to "#", "#/$defs/NAME" or "#/definitions/NAME".
 * Other keywords (minimum, pattern, format, ...) go to the provider but are
 * not checked here: a tool that depends on them checks them itself. */
#ifndef LF_JSON_SCHEMA_H
#define LF_JSON_SCHEMA_H

#include <stddef.h>
#include <json-c/json.h>
#include "lf_buf.h"

/* At most this many problems are said: enough to fix a value, short enough
 * for a model to read. */
#define LF_JSON_SCHEMA_MAX_PROBLEMS 10

/* Parses a schema given as JSON text; NULL with why filled when the text is
 * not one JSON object or not a schema both providers take: the root an object
 * schema ("type": "object", no anyOf), every object schema in it with
 * "additionalProperties": false and every property in "required" (what
 * OpenAI's strict mode refuses; Anthropic's input_schema needs the root).
 * The caller puts the result with json_object_put. */
json_object *lf_json_schema_parse(const char *text, size_t len, lf_buf *why);

/* Checks value against schema. Returns how many problems it has (0: it fits),
 * -1 when out of memory; why gets the first LF_JSON_SCHEMA_MAX_PROBLEMS of
 * them, each "path: what" (the path like $.items[2].id, the value's type and
 * a short rendering of it), joined by "; ". */
int lf_json_schema_check(json_object *schema, json_object *value, lf_buf *why);

#endif
