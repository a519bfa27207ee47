/* Two allocations left live, then exit(3); after_final_lib asks for a report
 * once the final one is written. */
#include "check.h"

#include <cuda_runtime_api.h>

int after_final_armed(void);

int main(void)
{
    CHECK(after_final_armed());
    void *p[2];
    CHECK_CU(cudaMalloc(&p[0], 1 << 20));
    CHECK_CU(cudaMalloc(&p[1], 1 << 20));
    exit(3);
}
