/* Where the report goes: CUDAFRAG_OUTPUT expansion and safe creation of the files. */
#ifndef CF_REPORT_OUTPATH_H
#define CF_REPORT_OUTPATH_H

#include <stddef.h>

/* The rank of this process from RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID (the
 * first one set and non-empty); "0" when none is set: a lone process is rank 0. */
const char *cf_output_rank(void);

/* Expands %p (pid), %e (executable basename), %h (host name), %r (rank) and %% in
 * pattern, then appends suffix (".txt", ".1.json", ...). Returns 0, or -1 with a
 * message in err when the result does not fit in n bytes (n is PATH_MAX for real
 * reports). Unknown %-sequences are kept as written. */
int cf_output_expand(const char *pattern, const char *suffix, char *out, size_t n, char *err,
                     size_t errn);

/* Creates (truncating) a report file, never following a symbolic link at path.
 * Returns the descriptor or -1 with a message in err saying why. */
int cf_output_open(const char *path, char *err, size_t errn);

#endif
