/* Inputs read whole, once (input.h). */
#include "cli/input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return true;
    size_t cap2 = *cap ? *cap : 1u << 16;
    while (cap2 < need)
        cap2 *= 2;
    char *b = realloc(*buf, cap2);
    if (b == NULL) return false;
    *buf = b;
    *cap = cap2;
    return true;
}

/* 0 at the end of the input, errno otherwise. */
static int read_rest(int fd, size_t limit, const char *unlimited_if, char **buf, size_t *n)
{
    size_t cap = 0;
    bool unlimited = false;
    for (;;) {
        if (!unlimited && *n > limit) return 0;
        if (!grow(buf, &cap, *n + (1u << 16) + 1)) return ENOMEM;
        ssize_t k = read(fd, *buf + *n, cap - *n - 1);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return errno;
        if (k == 0) return 0;
        *n += (size_t)k;
        if (unlimited_if && *n >= 8 && !unlimited) unlimited = memcmp(*buf, unlimited_if, 8) == 0;
    }
}

int cf_input_read(const char *path, size_t limit, const char *unlimited_if, char **data,
                  size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    int err = fd < 0 ? errno : fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (err == 0) err = read_rest(fd, limit, unlimited_if, data, len);
    if (fd >= 0) close(fd);
    if (err == 0 && *data == NULL) err = ENOMEM;
    if (err) {
        fprintf(stderr, "cudafrag: cannot read %s: %s\n", path, strerror(err));
        free(*data);
        *data = NULL;
        return -1;
    }
    (*data)[*len] = '\0';
    return 0;
}
