/* Writing JSON text into an lf_buf. Each returns 0, or -1 when out of memory. */
#ifndef LF_JSON_WRITE_H
#define LF_JSON_WRITE_H

#include <stddef.h>
#include "lf_buf.h"

/* s[0..n) as a JSON string literal: invalid UTF-8 becomes U+FFFD, quotes,
 * backslashes and control characters are escaped. */
int lf_json_put_string(lf_buf *out, const char *s, size_t n);
int lf_json_put_cstring(lf_buf *out, const char *s);
/* The shortest text that reads back as d; d must be finite. */
int lf_json_put_double(lf_buf *out, double d);
int lf_json_put_long(lf_buf *out, long v);

#endif
