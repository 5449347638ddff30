/* What the in-process schedule simulations share: a check that says which P, rank or step failed (cmocka's own
 * asserts would not), and a calloc that fails the test instead of returning NULL. Include after cmocka.h. */
#ifndef PC_SIM_CHECK_H
#define PC_SIM_CHECK_H

#include <stdlib.h>

#define CHECK(cond, ...)                                                                                          \
    do {                                                                                                          \
        if (!(cond)) {                                                                                            \
            print_error(__VA_ARGS__);                                                                             \
            print_error("\n");                                                                                    \
            fail_msg("check failed: %s", #cond);                                                                  \
        }                                                                                                         \
    } while (0)

static inline void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    assert_non_null(p);
    return p;
}

#endif
