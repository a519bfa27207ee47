/* The library is built with -fvisibility=hidden: only what is marked CF_EXPORT
 * (the interposed CUDA entry points and the public API) is visible to programs. */
#ifndef CF_UTIL_EXPORT_H
#define CF_UTIL_EXPORT_H
#define CF_EXPORT __attribute__((visibility("default")))
#define CF_LIKELY(x) __builtin_expect(!!(x), 1)
#define CF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif
