/* Output files of the views: every write is checked once, at close, through the
 * stream's error flag, so a full disk is reported instead of a short file. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/views.h"

/* The file cf_out_open made (it did not exist before): a failed command removes it. */
static FILE *created;

FILE *cf_out_open(const char *path)
{
    if (strcmp(path, "-") == 0) return stdout;
    struct stat st;
    bool existed = stat(path, &st) == 0;
    FILE *f = fopen(path, "wb");
    if (f == NULL) fprintf(stderr, "cudafrag: cannot create %s: %s\n", path, strerror(errno));
    created = existed ? NULL : f;
    return f;
}

void cf_out_discard(FILE *f, const char *path)
{
    if (f == stdout) {
        fflush(f);
        return;
    }
    bool ours = f == created;
    fclose(f);
    if (ours) remove(path);
    created = NULL;
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
