/* UTF-8 checking and sanitizing: every string the wire layer takes from a
 * provider, and every message it writes, is made valid UTF-8 here. */
#ifndef LF_UTF8_H
#define LF_UTF8_H

#include <stdarg.h>
#include <stddef.h>
#include "lf_buf.h"

/* U+FFFD, as UTF-8. */
extern const char lf_utf8_replacement[3];

/* Length of the well-formed sequence at s (1 to 4 bytes, n >= 1), or 0 when
 * it is ill-formed; then *bad is the length of its maximal subpart. */
size_t lf_utf8_sequence(const unsigned char *s, size_t n, size_t *bad);

/* 1 when all n bytes are well-formed UTF-8. */
int lf_utf8_is_valid(const char *bytes, size_t n);

/* Appends bytes to out, replacing each invalid UTF-8 sequence with U+FFFD.
 * 0, or -1 when out of memory (out is then as it was). */
int lf_utf8_append_sanitized(lf_buf *out, const char *bytes, size_t n);

/* The same into an emptied out. */
int lf_utf8_set_sanitized(lf_buf *out, const char *bytes, size_t n);

/* out becomes the printf-formatted text, cut at 319 bytes and sanitized: the
 * one way the wire layer and the JSON checks word a message (one may quote a
 * name, an id or a key back, which may hold any bytes, and the cut may split a
 * character). 0, or -1 when out of memory. */
int lf_utf8_setf(lf_buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int lf_utf8_vsetf(lf_buf *out, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#endif
