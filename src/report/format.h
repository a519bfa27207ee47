/* Human-readable numbers for the text report and finding titles. */
#ifndef CF_REPORT_FORMAT_H
#define CF_REPORT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* "512 B", "1.5 KiB", "2.00 MiB", ...; returns out. */
const char *cf_fmt_bytes(uint64_t bytes, char *out, size_t n);
/* "free 1.00 MiB of 80.0 GiB" for an out-of-memory failure, "free 1.00 MiB of
 * an unknown total" (an imported run's: a snapshot does not say the device's
 * size), "free memory unknown" when neither was read (0: unknown). */
const char *cf_fmt_free_of(uint64_t free_bytes, uint64_t total, char *out, size_t n);
/* "850 ns", "12.3 us", "4.56 ms", "7.89 s". */
const char *cf_fmt_secs(double s, char *out, size_t n);

#endif
