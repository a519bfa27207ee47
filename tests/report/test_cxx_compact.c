/* C++ names as findings mention them: without parameters, qualifiers, clone
 * suffixes and long template arguments; short template arguments, operators and
 * "(anonymous namespace)" kept; names cut short by the report's field handled. */
#include <stdio.h>
#include <string.h>

#include "report/snapshot.h"

static int failed;

static void expect(const char *in, const char *want)
{
    char out[160];
    cf_cxx_compact(in, out, sizeof out);
    if (strcmp(out, want) == 0) return;
    fprintf(stderr, "FAIL: \"%s\"\n  gave \"%s\"\n  want \"%s\"\n", in, out, want);
    failed++;
}

int main(void)
{
    expect("at::(anonymous namespace)::create_out(c10::ArrayRef<long>, c10::ArrayRef<long>, "
           "c10::TensorOptions const&)",
           "at::(anonymous namespace)::create_out");
    expect("pipeline::scratch<float>(unsigned int)", "pipeline::scratch<float>");
    expect("void at::native::gpu_reduce_kernel<float, float, 4, 4, "
           "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float> > >"
           "(at::TensorIterator&, at::native::func_wrapper_t<float, float> const&)",
           "void at::native::gpu_reduce_kernel<...>");
    expect("engine::workspace(unsigned int) const [clone .constprop.0]", "engine::workspace");
    expect("std::vector<int, std::allocator<int> >::operator[](unsigned long) &&",
           "std::vector<...>::operator[]");
    expect("cv::Mat::operator<(cv::Mat const&) const", "cv::Mat::operator<");
    expect("ns::f<std::map<std::string, std::vector<std::pair<std::string, double> > > >"
           "::run(int)",
           "ns::f<...>::run");
    /* Cut short by the report's 160-byte field (symbolize.c ends it with "..."). */
    expect("at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::Mean...",
           "at::native::reduce_kernel<...>");
    expect("c10::cuda::CUDACachingAllocator::Native::allocate(unsigned long, int, long...",
           "c10::cuda::CUDACachingAllocator::Native::allocate");
    expect("main", "main");
    expect("cudaMalloc", "cudaMalloc");
    expect("", "");
    /* A field too small for the result ends it, terminated. */
    char tiny[8];
    cf_cxx_compact("namespace::function_name<float>(int)", tiny, sizeof tiny);
    if (strlen(tiny) != 7 || strncmp(tiny, "namespa", 7) != 0) {
        fprintf(stderr, "FAIL: tiny field gave \"%s\"\n", tiny);
        failed++;
    }
    if (failed == 0) printf("cxx_compact: all passed\n");
    return failed != 0;
}
