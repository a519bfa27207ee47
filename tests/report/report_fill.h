/* Fills the record through the cf_rec_* entry points the hooks use, from named
 * functions so the report has call sites to name. No CUDA is involved. */
#ifndef CF_TESTS_REPORT_FILL_H
#define CF_TESTS_REPORT_FILL_H

#include <stdint.h>

#define FILL_LOOP_CALLS  2000
#define FILL_SIZES       40
#define FILL_OOM_REQUEST (3ull << 30)

/* 2000 cudaMalloc/cudaFree pairs of 1 MiB at one site, back to back. */
void fill_hot_loop(void);
/* 40 distinct sizes from one site, left live (leaks). */
void fill_many_sizes(void);
/* A cudaMalloc of 3 GiB that fails with out-of-memory; the record's OOM event is
 * then given free = 8 GiB of 16 GiB, as cuMemGetInfo would have reported. */
void fill_oom_with_free_memory(void);
/* Reads a whole file into a malloc'ed string (NULL if it cannot be read). */
char *slurp(const char *path);
/* A fresh temporary directory, removed when the test exits; aborts the test on
 * failure. Call it once per test. */
const char *temp_dir(void);

#endif
