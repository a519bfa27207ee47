/* UTF-8 checking for what the views read (JSON reports) and write (HTML,
 * pickles): names from binaries and paths need not be valid UTF-8. */
#ifndef CF_CLI_UTF8_H
#define CF_CLI_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length of the well-formed UTF-8 sequence at s (at most n bytes): 1 to 4,
 * or 0 when it is malformed (overlong, a surrogate, above U+10FFFF, cut
 * short). *cp receives the code point. */
size_t cf_utf8_seq(const unsigned char *s, size_t n, uint32_t *cp);
/* Copies s into out (n bytes, NUL-terminated), each malformed byte replaced by
 * '?'; returns out. */
char *cf_utf8_clean(const char *s, char *out, size_t n);

#endif
