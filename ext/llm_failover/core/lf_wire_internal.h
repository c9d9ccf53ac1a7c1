/* What the wire layer's files share and nobody else uses: the json-c
 * readers of protocol pieces that answers, streams and error bodies have in
 * common. */
#ifndef LF_WIRE_INTERNAL_H
#define LF_WIRE_INTERNAL_H

#include <json-c/json.h>
#include "lf_wire.h"

/* lf_wire_error.c: fills e from a parsed body; 1 when it has one of the
 * error shapes. */
int lf_wire_error_from_json(json_object *root, lf_wire_error *e);

/* lf_wire_answer.c: the choice with index 0, else the first; NULL for none. */
json_object *lf_wire_first_choice(json_object *choices);
/* lf_wire_answer.c: token counts of a usage object into a; 1 when seen. */
int lf_wire_openai_usage(json_object *usage, lf_answer *a);
int lf_wire_anthropic_usage(json_object *usage, lf_answer *a);

#endif
