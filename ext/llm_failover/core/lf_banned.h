/* Unsafe string functions are compile errors in the core and the binding. */
#ifndef LF_BANNED_H
#define LF_BANNED_H

#undef strcpy
#define strcpy(a, b) LF_BANNED_strcpy_use_memcpy_with_a_length
#undef strcat
#define strcat(a, b) LF_BANNED_strcat_use_lf_buf
#undef sprintf
#define sprintf(...) LF_BANNED_sprintf_use_snprintf
#undef vsprintf
#define vsprintf(...) LF_BANNED_vsprintf_use_vsnprintf
#undef gets
#define gets(a) LF_BANNED_gets

#endif
