/* An input file read whole, once: a pipe or FIFO (cudafrag diff <(...) ...)
 * can be read only once, so what a command sniffs and what it then parses
 * are the same bytes. */
#ifndef CF_CLI_INPUT_H
#define CF_CLI_INPUT_H

#include <stddef.h>

/* Reads path into *data (malloc'd, *len bytes, a NUL after them). Reading stops
 * one byte past limit (the caller tells a too-large input by *len > limit),
 * unless the input begins with the 8 bytes of unlimited_if (NULL: none).
 * 0, or -1 after "cudafrag: cannot read PATH: why" on stderr. */
int cf_input_read(const char *path, size_t limit, const char *unlimited_if, char **data,
                  size_t *len);

#endif
