#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int cf_write_all(int fd, const void *buf, size_t len)
{
    int saved = errno, rc = 0;
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : -EIO;
            break;
        }
        p += n;
        len -= (size_t)n;
    }
    errno = saved;
    return rc;
}

static void vlog(const char *fmt, va_list ap)
{
    /* vsnprintf with plain %s/%d/%llu/%x conversions does not allocate in glibc. */
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "cudafrag: ");
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    if (m < 0) return;
    bool cut = (size_t)m >= sizeof buf - (size_t)n - 1;
    size_t len = (size_t)n + (cut ? sizeof buf - (size_t)n - 2 : (size_t)m);
    if (cut) memcpy(buf + len - 3, "...", 3); /* a cut message says so, on a whole line */
    if (len == 0 || buf[len - 1] != '\n') buf[len++] = '\n';
    cf_write_all(2, buf, len);
}

void cf_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

void cf_warn_once(const char *key, const char *fmt, ...)
{
    static const char *seen[64];
    static int nseen;
    for (int i = 0; i < __atomic_load_n(&nseen, __ATOMIC_ACQUIRE) && i < 64; i++)
        if (seen[i] && strcmp(seen[i], key) == 0) return;
    int slot = __atomic_fetch_add(&nseen, 1, __ATOMIC_ACQ_REL);
    if (slot < 64) seen[slot] = key;
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}
