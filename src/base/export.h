/* The library is built with -fvisibility=hidden: only what is marked CF_EXPORT
 * (the interposed CUDA entry points and the public API) is visible to programs. */
#ifndef CF_UTIL_EXPORT_H
#define CF_UTIL_EXPORT_H
#define CF_EXPORT      __attribute__((visibility("default")))
#define CF_LIKELY(x)   __builtin_expect(!!(x), 1)
#define CF_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* A function the hot path calls only in rare cases (a thread's first event, a new
 * site, a failure): gcc moves it, and the branches that reach it, out of the hot
 * code, so that an intercepted call's code spans fewer cache lines. */
#define CF_COLD __attribute__((cold))
/* A function on an intercepted allocation's or free's path: gcc places all of them
 * in .text.hot, side by side, so that a stream-ordered pair runs code on 8 pages
 * instead of 15 spread over 200 KiB (counted: docs/performance.md). Between two
 * intercepted calls a real driver runs long enough to evict them from the
 * instruction TLB, and each page the path touches can then cost a page walk. */
#define CF_HOT __attribute__((hot))
/* For code that a sanitizer runtime reaches through our dlsym/dlopen entries while
 * it initializes itself, before its shadow memory exists (sanitizer builds only). */
#define CF_NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))
#endif
