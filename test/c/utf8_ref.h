/* A reference UTF-8 validator for tests and fuzz targets: it decodes each code
 * point and tests its range, a different method from the sanitizer's byte
 * table (lf_utf8.c), so the two cannot share a mistake. */
#ifndef LF_UTF8_REF_H
#define LF_UTF8_REF_H

#include <stddef.h>
#include <stdint.h>

static int utf8_valid(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0, k, len;
    uint32_t cp, min;

    while (i < n) {
        if (s[i] < 0x80) { i++; continue; }
        if ((s[i] & 0xE0) == 0xC0) { len = 2; cp = s[i] & 0x1F; min = 0x80; }
        else if ((s[i] & 0xF0) == 0xE0) { len = 3; cp = s[i] & 0x0F; min = 0x800; }
        else if ((s[i] & 0xF8) == 0xF0) { len = 4; cp = s[i] & 0x07; min = 0x10000; }
        else return 0;
        if (i + len > n) return 0;
        for (k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}

#endif
