/* The wait policy (src/shm/wait.c): PLANCOLL_WAIT parsing and the spin-then-yield waiter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>

#include "shm/wait.h"

static void test_parse(void **state)
{
    (void)state;
    assert_int_equal(pc_wait_mode_parse("spin"), PC_WAIT_SPIN);
    assert_int_equal(pc_wait_mode_parse("yield"), PC_WAIT_YIELD);
    assert_int_equal(pc_wait_mode_parse("auto"), PC_WAIT_AUTO);
    assert_int_equal(pc_wait_mode_parse(""), PC_WAIT_AUTO);
    assert_int_equal(pc_wait_mode_parse(NULL), PC_WAIT_AUTO);
    assert_int_equal(pc_wait_mode_parse("garbage"), -1);
    assert_int_equal(pc_wait_mode_parse("SPIN"), -1);
    assert_int_equal(pc_wait_mode_parse("spin "), -1);
    assert_int_equal(pc_wait_mode_parse("yieldx"), -1);
    assert_int_equal(pc_wait_mode_parse("1"), -1);
}

static void test_from_env(void **state)
{
    (void)state;
    unsetenv("PLANCOLL_WAIT");
    assert_int_equal(pc_wait_mode_from_env(), PC_WAIT_AUTO);
    setenv("PLANCOLL_WAIT", "yield", 1);
    assert_int_equal(pc_wait_mode_from_env(), PC_WAIT_YIELD);
    setenv("PLANCOLL_WAIT", "spin", 1);
    assert_int_equal(pc_wait_mode_from_env(), PC_WAIT_SPIN);
    setenv("PLANCOLL_WAIT", "sometimes", 1);
    assert_int_equal(pc_wait_mode_from_env(), -1);
    unsetenv("PLANCOLL_WAIT");
}

static void test_waiter_oversubscribed_yields_at_once(void **state)
{
    (void)state;
    struct pc_waiter w;
    pc_waiter_init(&w, PC_WAIT_AUTO, true);
    assert_true(w.yield_now);
    pc_waiter_pause(&w);
    assert_true(w.yield_now);
    pc_waiter_init(&w, PC_WAIT_YIELD, false);
    assert_true(w.yield_now);
    /* spin overrides oversubscription: never yields */
    pc_waiter_init(&w, PC_WAIT_SPIN, true);
    assert_false(w.yield_now);
    for (int i = 0; i < 3 * PC_WAIT_SPIN_BUDGET; i++) pc_waiter_pause(&w);
    assert_false(w.yield_now);
}

static void test_waiter_spins_then_yields(void **state)
{
    (void)state;
    struct pc_waiter w;
    pc_waiter_init(&w, PC_WAIT_AUTO, false);
    assert_false(w.yield_now);
    for (int i = 0; i < PC_WAIT_SPIN_BUDGET - 1; i++) pc_waiter_pause(&w);
    assert_false(w.yield_now);
    pc_waiter_pause(&w);
    assert_true(w.yield_now);
    /* a new wait starts spinning again */
    pc_waiter_init(&w, PC_WAIT_AUTO, false);
    assert_false(w.yield_now);
    assert_int_equal(w.spins, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_from_env),
        cmocka_unit_test(test_waiter_oversubscribed_yields_at_once),
        cmocka_unit_test(test_waiter_spins_then_yields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
