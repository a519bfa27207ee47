/* Stream-order hazards: touching memory that another stream's pending work
 * uses, with no dependency, is counted; the same reuse ordered by an event
 * is not. */
#include "simtest.h"

#include <fcntl.h>
#include <unistd.h>

int main(void)
{
    char path[] = "/tmp/simcuda-hazards-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    int saved = dup(2);
    dup2(fd, 2);

    sim_setup(0);
    CUstream a, b;
    CHECK_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CUdeviceptr buf;
    CHECK_CU(cuMemAlloc(&buf, 8 * MiB));
    CUevent ev;
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));

    /* Correct: b reuses the range after waiting for a's event. */
    CHECK_CU(cuMemsetD8Async(buf, 1, 1 * MiB, a));
    CHECK_CU(cuEventRecord(ev, a));
    CHECK_CU(cuStreamWaitEvent(b, ev, 0));
    CHECK_CU(cuMemsetD8Async(buf, 2, 1 * MiB, b));
    CHECK_EQ(simcudaHazardCount(), 0);
    /* Disjoint ranges and two readers never conflict. */
    unsigned char host[16];
    CHECK_CU(cuMemsetD8Async(buf + 4 * MiB, 3, 1 * MiB, a));
    CHECK_CU(cuMemcpyDtoHAsync(host, buf + 2 * MiB, 16, b));
    CHECK_CU(cuMemcpyDtoHAsync(host, buf + 2 * MiB, 16, a));
    CHECK_EQ(simcudaHazardCount(), 0);
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(host, buf, 16));
    CHECK_EQ(host[0], 2);

    /* Premature: a's write is still pending when b reuses the range. */
    CHECK_CU(cuMemsetD8Async(buf, 3, 1 * MiB, a));
    CHECK_CU(cuMemsetD8Async(buf + 512 * KiB, 4, 16, b));
    CHECK_EQ(simcudaHazardCount(), 1);
    /* A read of memory with a pending write elsewhere is one too. */
    CHECK_CU(cuMemcpyDtoHAsync(host, buf, 16, b));
    CHECK_EQ(simcudaHazardCount(), 2);
    CHECK_CU(cuCtxSynchronize());

    /* Once a's work has completed the same reuse is safe. */
    CHECK_CU(cuMemsetD8Async(buf, 5, 1 * MiB, a));
    CHECK_CU(cuStreamSynchronize(a));
    CHECK_CU(cuMemsetD8Async(buf, 6, 1 * MiB, b));
    CHECK_EQ(simcudaHazardCount(), 2);
    CHECK_CU(cuStreamSynchronize(b));

    /* A stream-ordered free while another stream still uses the block. */
    CUdeviceptr p;
    CHECK_CU(cuMemAllocAsync(&p, 1 * MiB, a));
    CHECK_CU(cuStreamSynchronize(a));
    CHECK_CU(cuMemsetD8Async(p, 1, 1 * MiB, b));
    CHECK_CU(cuMemFreeAsync(p, a));
    CHECK_EQ(simcudaHazardCount(), 3);
    CHECK_CU(cuCtxSynchronize());

    fflush(stderr);
    dup2(saved, 2);
    char text[1024] = {0};
    CHECK(pread(fd, text, sizeof text - 1, 0) > 0);
    CHECK_STR(text, "simcuda: stream-order hazard:");
    /* Reported once, counted always. */
    CHECK(strstr(strstr(text, "hazard") + 1, "stream-order hazard") == NULL);
    return 0;
}
