/* Output files of the views: every write is checked once, at close, through the
 * stream's error flag, so a full disk is reported instead of a short file. */
#include <errno.h>
#include <string.h>

#include "cli/views.h"

FILE *cf_out_open(const char *path)
{
    if (strcmp(path, "-") == 0) return stdout;
    FILE *f = fopen(path, "wb");
    if (f == NULL) fprintf(stderr, "cudafrag: cannot create %s: %s\n", path, strerror(errno));
    return f;
}

int cf_out_close(FILE *f, const char *path)
{
    int bad = ferror(f);
    int rc = f == stdout ? fflush(f) : fclose(f);
    if (bad || rc != 0) {
        fprintf(stderr, "cudafrag: writing %s failed: %s\n", strcmp(path, "-") ? path : "stdout",
                errno ? strerror(errno) : "write error");
        return 1;
    }
    return 0;
}
