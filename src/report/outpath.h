/* Where the report goes: CUDAFRAG_OUTPUT expansion and safe creation of the files. */
#ifndef CF_REPORT_OUTPATH_H
#define CF_REPORT_OUTPATH_H

#include <limits.h>
#include <stddef.h>

/* The rank of this process from RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID (the
 * first one set and non-empty); "0" when none is set: a lone process is rank 0. */
const char *cf_output_rank(void);

/* What %e gives for an executable name: the name, or when it is longer than
 * CF_OUTPUT_EXE_MAX bytes, its first bytes, '~' and 8 hex digits of a hash of the
 * whole name (into out, which must hold CF_OUTPUT_EXE_MAX + 1 bytes). */
#define CF_OUTPUT_EXE_MAX 64
const char *cf_output_exe_name(const char *name, char *out, size_t n);

/* path as messages show it: whole when shorter than CF_OUTPUT_SHOWN_MAX bytes,
 * else its start, "..." and its end (into out, of CF_OUTPUT_SHOWN_MAX bytes), so
 * that a message about a path of any length is one whole line. */
#define CF_OUTPUT_SHOWN_MAX 200
const char *cf_output_shown(const char *path, char *out, size_t n);

/* Expands %p (pid), %e (executable basename), %h (host name), %r (rank) and %% in
 * pattern, then appends suffix (".txt", ".1.json", ...). Returns 0, or -1 with a
 * message in err when the result does not fit in n bytes (n is PATH_MAX for real
 * reports). Unknown %-sequences are kept as written. */
int cf_output_expand(const char *pattern, const char *suffix, char *out, size_t n, char *err,
                     size_t errn);

/* A report file is written to a new temporary file in its directory, then renamed
 * over the path: an existing file is replaced, never written through, and a write
 * that fails (full disk) leaves nothing behind. */
struct cf_outfile {
    int fd; /* the temporary file */
    char path[PATH_MAX], tmp[PATH_MAX];
};
/* Refuses a path that holds anything but a regular file without other hard links:
 * a symbolic link or a hard link (writing would change someone else's file), a
 * FIFO (opening it could wait forever for a reader), a directory, a device.
 * Returns 0 with f ready to write, or -1 with a message in err saying why. */
int cf_output_begin(struct cf_outfile *f, const char *path, char *err, size_t errn);
/* Closes the temporary file and renames it over the path: 0, or -errno after
 * removing it. */
int cf_output_commit(struct cf_outfile *f);
/* Closes and removes the temporary file. */
void cf_output_abort(struct cf_outfile *f);
/* Removes the temporary file of a write still in progress (in another thread
 * that will not finish it: the process is ending). */
void cf_output_remove_pending(void);

#endif
