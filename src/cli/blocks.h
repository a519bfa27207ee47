/* `cudafrag run --blocks`: the frameworks' documented switches that make them
 * allocate each tensor (array, buffer) from the driver instead of carving it out
 * of their own cached segments, so cudafrag sees the blocks. */
#ifndef CF_CLI_BLOCKS_H
#define CF_CLI_BLOCKS_H

#include <stddef.h>

struct cf_blocks {
    char record[2048]; /* CUDAFRAG_BLOCKS: the switches in effect, '; '-separated */
    char line[4096];   /* the one line the command prints */
    char notes[2048];  /* settings of the user's that the switches make moot, or "" */
};

/* Sets the switches the user has not set (PYTORCH_NO_CUDA_MEMORY_CACHING=1,
 * XLA_PYTHON_CLIENT_ALLOCATOR=platform, the CuPy hook's folder first on
 * PYTHONPATH, CUDAFRAG_ARENA=1) and CUDAFRAG_BLOCKS, keeping every one the user
 * set; describes what it did in out. pydir: the folder of the CuPy hook, NULL
 * when it cannot be found. */
void cf_blocks_setup(const char *pydir, struct cf_blocks *out);

#endif
