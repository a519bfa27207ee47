/* Human-readable numbers for the text report and finding titles. */
#ifndef CF_REPORT_FORMAT_H
#define CF_REPORT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* "512 B", "1.5 KiB", "2.00 MiB", ...; returns out. */
const char *cf_fmt_bytes(uint64_t bytes, char *out, size_t n);
/* "850 ns", "12.3 us", "4.56 ms", "7.89 s". */
const char *cf_fmt_secs(double s, char *out, size_t n);

#endif
