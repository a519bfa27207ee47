/* Shared by the libFuzzer targets: the input as a file the readers can open by
 * name (a memfd, rewritten for every input), and quiet stdout/stderr around the
 * code under test -- unless CF_FUZZ_VERBOSE=1, for re-running a crash input.
 * Sanitizer reports keep going to the real stderr either way. */
#ifndef CF_FUZZ_COMMON_H
#define CF_FUZZ_COMMON_H

#include <fcntl.h>
#include <sanitizer/common_interface_defs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static int fuzz_fd = -1, fuzz_null = -1, fuzz_saved[2] = {-1, -1};
static char fuzz_path[64];

__attribute__((unused)) static const char *fuzz_file(const uint8_t *data, size_t size)
{
    if (fuzz_fd < 0) {
        fuzz_fd = memfd_create("cudafrag-fuzz", MFD_CLOEXEC);
        if (fuzz_fd < 0) abort();
        snprintf(fuzz_path, sizeof fuzz_path, "/proc/self/fd/%d", fuzz_fd);
    }
    if (ftruncate(fuzz_fd, 0) != 0) abort();
    for (size_t done = 0; done < size;) {
        ssize_t w = pwrite(fuzz_fd, data + done, size - done, (off_t)done);
        if (w <= 0) abort();
        done += (size_t)w;
    }
    return fuzz_path;
}

__attribute__((unused)) static void fuzz_quiet(void)
{
    const char *v = getenv("CF_FUZZ_VERBOSE");
    if (v && *v == '1') return;
    if (fuzz_null < 0) {
        fuzz_null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        /* A sanitizer report raised while stderr is /dev/null must still reach
         * the log, or a failing run shows no reason when its input passes alone. */
        static int report_fd = -1;
        report_fd = dup(2);
        if (report_fd >= 0) __sanitizer_set_report_fd((void *)(intptr_t)report_fd);
    }
    fflush(stdout);
    fflush(stderr);
    for (int fd = 1; fd <= 2; fd++) {
        fuzz_saved[fd - 1] = dup(fd);
        dup2(fuzz_null, fd);
    }
}

__attribute__((unused)) static void fuzz_loud(void)
{
    fflush(stdout);
    fflush(stderr);
    for (int fd = 1; fd <= 2; fd++) {
        if (fuzz_saved[fd - 1] < 0) continue;
        dup2(fuzz_saved[fd - 1], fd);
        close(fuzz_saved[fd - 1]);
        fuzz_saved[fd - 1] = -1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
