/* In-process wisdom (src/planner/wisdom.c): store, lookup by rigor, replacement, clear. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "planner/planner.h"
#include "plancoll.h"

static struct pc_wisdom_entry entry(const char *key, const char *alg, unsigned rigor, double us)
{
    struct pc_wisdom_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.key, sizeof e.key, "%s", key);
    snprintf(e.algorithm, sizeof e.algorithm, "%s", alg);
    e.params.segments = (int)us;
    e.measured_us = us;
    e.rigor = rigor;
    return e;
}

static int reset(void **state)
{
    (void)state;
    pc_wisdom_clear();
    return 0;
}

static void test_store_lookup(void **state)
{
    (void)state;
    assert_int_equal(pc_wisdom_count(), 0);
    assert_null(pc_wisdom_lookup("allreduce:P=4", PLANCOLL_MEASURE));
    struct pc_wisdom_entry e = entry("allreduce:P=4", "allreduce.rabenseifner", PLANCOLL_MEASURE, 12.5);
    assert_int_equal(pc_wisdom_store(&e), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_count(), 1);
    const struct pc_wisdom_entry *w = pc_wisdom_lookup("allreduce:P=4", PLANCOLL_MEASURE);
    assert_non_null(w);
    assert_string_equal(w->key, "allreduce:P=4");
    assert_string_equal(w->algorithm, "allreduce.rabenseifner");
    assert_true(w->measured_us == 12.5);
    assert_int_equal(w->params.segments, 12);
    assert_int_equal(w->rigor, PLANCOLL_MEASURE);
    /* the store keeps its own copy */
    e.measured_us = 99;
    assert_true(pc_wisdom_lookup("allreduce:P=4", PLANCOLL_MEASURE)->measured_us == 12.5);
    /* keys are exact */
    assert_null(pc_wisdom_lookup("allreduce:P=40", PLANCOLL_MEASURE));
    assert_null(pc_wisdom_lookup("allreduce:P=", PLANCOLL_MEASURE));
    assert_null(pc_wisdom_lookup("", PLANCOLL_MEASURE));
}

static void test_rigor(void **state)
{
    (void)state;
    struct pc_wisdom_entry m = entry("k-measure", "alltoall.pairwise", PLANCOLL_MEASURE, 1);
    struct pc_wisdom_entry p = entry("k-patient", "alltoall.pairwise", PLANCOLL_PATIENT, 2);
    struct pc_wisdom_entry x = entry("k-exhaustive", "alltoall.pairwise", PLANCOLL_EXHAUSTIVE, 3);
    assert_int_equal(pc_wisdom_store(&m), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_store(&p), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_store(&x), PLANCOLL_SUCCESS);

    /* a MEASURE decision satisfies MEASURE only */
    assert_non_null(pc_wisdom_lookup("k-measure", PLANCOLL_MEASURE));
    assert_null(pc_wisdom_lookup("k-measure", PLANCOLL_PATIENT));
    assert_null(pc_wisdom_lookup("k-measure", PLANCOLL_EXHAUSTIVE));
    /* PATIENT satisfies MEASURE and PATIENT */
    assert_non_null(pc_wisdom_lookup("k-patient", PLANCOLL_MEASURE));
    assert_non_null(pc_wisdom_lookup("k-patient", PLANCOLL_PATIENT));
    assert_null(pc_wisdom_lookup("k-patient", PLANCOLL_EXHAUSTIVE));
    /* EXHAUSTIVE satisfies all */
    assert_non_null(pc_wisdom_lookup("k-exhaustive", PLANCOLL_MEASURE));
    assert_non_null(pc_wisdom_lookup("k-exhaustive", PLANCOLL_PATIENT));
    assert_non_null(pc_wisdom_lookup("k-exhaustive", PLANCOLL_EXHAUSTIVE));
    /* combined flags count at their highest rigor */
    assert_null(pc_wisdom_lookup("k-measure", PLANCOLL_MEASURE | PLANCOLL_PATIENT));
    assert_non_null(pc_wisdom_lookup("k-patient", PLANCOLL_MEASURE | PLANCOLL_PATIENT));
    /* WISDOM_ONLY accepts any rigor, alone or with a rigor flag */
    assert_non_null(pc_wisdom_lookup("k-measure", PLANCOLL_WISDOM_ONLY));
    assert_non_null(pc_wisdom_lookup("k-measure", PLANCOLL_WISDOM_ONLY | PLANCOLL_EXHAUSTIVE));
    assert_null(pc_wisdom_lookup("k-missing", PLANCOLL_WISDOM_ONLY));
    /* ESTIMATE asks for no rigor: anything recorded will do */
    assert_non_null(pc_wisdom_lookup("k-measure", PLANCOLL_ESTIMATE));
}

static void test_replacement(void **state)
{
    (void)state;
    struct pc_wisdom_entry a = entry("key", "allreduce.native", PLANCOLL_PATIENT, 10);
    assert_int_equal(pc_wisdom_store(&a), PLANCOLL_SUCCESS);
    /* the same rigor replaces (a newer decision) */
    struct pc_wisdom_entry b = entry("key", "allreduce.recursive_doubling", PLANCOLL_PATIENT, 8);
    assert_int_equal(pc_wisdom_store(&b), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_count(), 1);
    assert_string_equal(pc_wisdom_lookup("key", PLANCOLL_PATIENT)->algorithm, "allreduce.recursive_doubling");
    /* a less rigorous decision does not displace a more rigorous one */
    struct pc_wisdom_entry c = entry("key", "allreduce.rabenseifner", PLANCOLL_MEASURE, 5);
    assert_int_equal(pc_wisdom_store(&c), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_count(), 1);
    assert_string_equal(pc_wisdom_lookup("key", PLANCOLL_MEASURE)->algorithm, "allreduce.recursive_doubling");
    assert_non_null(pc_wisdom_lookup("key", PLANCOLL_PATIENT));
    /* a more rigorous one does */
    struct pc_wisdom_entry d = entry("key", "allreduce.rabenseifner", PLANCOLL_EXHAUSTIVE, 4);
    assert_int_equal(pc_wisdom_store(&d), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_count(), 1);
    const struct pc_wisdom_entry *w = pc_wisdom_lookup("key", PLANCOLL_EXHAUSTIVE);
    assert_non_null(w);
    assert_string_equal(w->algorithm, "allreduce.rabenseifner");
    assert_true(w->measured_us == 4);
}

static void test_many_and_clear(void **state)
{
    (void)state;
    char key[64];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "alltoall:P=%d", i);
        struct pc_wisdom_entry e = entry(key, "alltoall.pairwise", PLANCOLL_MEASURE, i);
        assert_int_equal(pc_wisdom_store(&e), PLANCOLL_SUCCESS);
    }
    assert_int_equal(pc_wisdom_count(), 200);
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "alltoall:P=%d", i);
        const struct pc_wisdom_entry *w = pc_wisdom_lookup(key, PLANCOLL_MEASURE);
        assert_non_null(w);
        assert_true(w->measured_us == i);
    }
    pc_wisdom_clear();
    assert_int_equal(pc_wisdom_count(), 0);
    assert_null(pc_wisdom_lookup("alltoall:P=7", PLANCOLL_WISDOM_ONLY));
    /* usable again after a clear, and clearing twice is harmless */
    pc_wisdom_clear();
    struct pc_wisdom_entry e = entry("again", "alltoall.native", PLANCOLL_MEASURE, 1);
    assert_int_equal(pc_wisdom_store(&e), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_count(), 1);
    assert_non_null(pc_wisdom_lookup("again", PLANCOLL_MEASURE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_store_lookup, reset, reset),
        cmocka_unit_test_setup_teardown(test_rigor, reset, reset),
        cmocka_unit_test_setup_teardown(test_replacement, reset, reset),
        cmocka_unit_test_setup_teardown(test_many_and_clear, reset, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
