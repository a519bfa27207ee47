/* Assertions for the test programs: print both sides, the expression and the
 * line, then exit 1 (abort would look like a crash of the code under test).
 * The folder carries its own copy so that it builds inside any project. */
#ifndef SIMCUDA_TESTS_CHECK_H
#define SIMCUDA_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_OP(a, op, b)                                                                         \
    do {                                                                                           \
        long long _a = (long long)(a), _b = (long long)(b);                                        \
        if (!(_a op _b)) {                                                                         \
            fprintf(stderr, "%s:%d: CHECK(%s %s %s) failed: %lld vs %lld\n", __FILE__, __LINE__,   \
                    #a, #op, #b, _a, _b);                                                          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CHECK_EQ(a, b) CHECK_OP(a, ==, b)
#define CHECK_NE(a, b) CHECK_OP(a, !=, b)
#define CHECK_LE(a, b) CHECK_OP(a, <=, b)
#define CHECK_LT(a, b) CHECK_OP(a, <, b)
#define CHECK_GE(a, b) CHECK_OP(a, >=, b)

#define CHECK_STR(hay, needle)                                                                     \
    do {                                                                                           \
        if (!strstr((hay), (needle))) {                                                            \
            fprintf(stderr, "%s:%d: expected to find \"%s\"\n", __FILE__, __LINE__, (needle));     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* CUDA calls that must succeed. */
#define CHECK_CU(call) CHECK_EQ((call), 0)

#endif
