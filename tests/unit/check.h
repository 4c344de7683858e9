/* A minimal assertion kit for the unit tests: each failed check prints where
 * and what, and the test's exit status is the number of failures. */
#ifndef MGPU_TEST_CHECK_H
#define MGPU_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {                                     \
            fprintf(stderr, "%s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__, a_ ? a_ : "(null)",   \
                    b_ ? b_ : "(null)");                                                           \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

#define CHECK_CONTAINS(haystack, needle)                                                           \
    do {                                                                                           \
        const char *h_ = (haystack), *n_ = (needle);                                               \
        if (h_ == NULL || strstr(h_, n_) == NULL) {                                                \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,         \
                    h_ ? h_ : "(null)", n_);                                                       \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

#define CHECK_DONE()                                                                               \
    do {                                                                                           \
        if (check_failures)                                                                        \
            fprintf(stderr, "%d check(s) failed\n", check_failures);                               \
        return check_failures ? 1 : 0;                                                             \
    } while (0)

#endif
