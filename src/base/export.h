/* The library is built with -fvisibility=hidden: only what is marked CF_EXPORT
 * (the interposed CUDA entry points and the public API) is visible to programs. */
#ifndef CF_UTIL_EXPORT_H
#define CF_UTIL_EXPORT_H
#define CF_EXPORT      __attribute__((visibility("default")))
#define CF_LIKELY(x)   __builtin_expect(!!(x), 1)
#define CF_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* For code that a sanitizer runtime reaches through our dlsym/dlopen entries while
 * it initializes itself, before its shadow memory exists (sanitizer builds only). */
#define CF_NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))
#endif
