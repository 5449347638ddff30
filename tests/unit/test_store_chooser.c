/* stores=auto's chooser (src/exec/store_chooser.c) driven with made-up execution times: it must settle on the cheaper
 * mode, pay little for its probes where the host holds its state, follow a change of state either way, re-probe at
 * most once in PC_STORES_REPROBE executions when the host flickers, and stay off when disarmed. Pure: no plan, no clock, no MPI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "exec/store_chooser.h"

/* Runs executions [from, to) with these costs per mode (index 0 ordinary, 1 streaming), every one blocking
 * (timed when the chooser says so); counts executions run in each mode. */
static void drive(struct pc_store_chooser *c, long from, long to, const double cost[2], long ran[2])
{
    for (long i = from; i < to; i++) {
        const bool stream = pc_store_chooser_pick(c, true);
        ran[stream]++;
        pc_store_chooser_learn(c, cost[stream]);
    }
}

/* A fresh armed chooser run for executions [0, n) at these costs (ran counts from zero). */
static void settle(struct pc_store_chooser *c, const double cost[2], long n, long ran[2])
{
    pc_store_chooser_reset(c, true);
    ran[0] = ran[1] = 0;
    drive(c, 0, n, cost, ran);
}

/* Far apart (ordinary stores 7x dearer): streaming from the start, probes of ordinary stores only at waits that
 * grow to PC_STORES_PROBE_MAX, so under 0.3% of 20000 executions pay the dear mode. */
static void test_settles_on_streaming(void **state)
{
    (void)state;
    struct pc_store_chooser c;
    const double far[2] = {700, 100};
    long ran[2];
    settle(&c, far, 20000, ran);
    assert_true(c.best_stream);
    assert_int_equal(c.switches, 0);
    if (ran[0] < 1 || ran[0] > 60) fail_msg("%ld of 20000 executions in the dear mode", ran[0]);
}

/* Close (ordinary stores cheaper): switches to ordinary at the first probe (execution 2) and stays. */
static void test_switches_to_ordinary(void **state)
{
    (void)state;
    struct pc_store_chooser c;
    const double close[2] = {100, 150};
    long ran[2];
    settle(&c, close, 20000, ran);
    assert_false(c.best_stream);
    assert_int_equal(c.switches, 1);
    if (ran[1] > 3 + 60) fail_msg("%ld of 20000 executions in the dear mode", ran[1]);
}

/* Close, then far: ordinary stores become 7x dearer than they were and than streaming was; two slow samples bring a
 * probe forward and the chooser is back on streaming within a few dozen executions. */
static void test_follows_a_change(void **state)
{
    (void)state;
    struct pc_store_chooser c;
    const double close[2] = {100, 150}, far[2] = {700, 100};
    long ran[2];
    settle(&c, close, 5000, ran);
    assert_false(c.best_stream);
    long after[2] = {0, 0};
    drive(&c, 5000, 5040, far, after);
    assert_true(c.best_stream);
    if (after[0] > 30) fail_msg("%ld of the 40 executions after the change in the dear mode", after[0]);
}

/* Far -> close: streaming becomes 2.4x dearer while ordinary stores, last probed at 7x, become the cheaper. The
 * slow spell brings a probe forward though the stale figure says ordinary is dear, and the chooser switches. */
static void test_follows_a_change_to_close(void **state)
{
    (void)state;
    struct pc_store_chooser c;
    const double far[2] = {700, 100}, close[2] = {92, 243};
    long ran[2];
    settle(&c, far, 6000, ran);
    assert_true(c.best_stream);
    long after[2] = {0, 0};
    drive(&c, 6000, 6040, close, after);
    assert_false(c.best_stream);
}

/* A host that flickers: a slow spell of the mode (16 executions at 3x, the other mode still dearer) every 56,
 * each detected (two slow samples after the mean has come back), re-probes at most once in PC_STORES_REPROBE
 * executions (without the limit: once per spell, 178 times), so under 2% of executions pay the dear mode. */
static void test_reprobes_rate_limited(void **state)
{
    (void)state;
    struct pc_store_chooser c;
    const double far[2] = {700, 100}, slow[2] = {2100, 300};
    long ran[2];
    settle(&c, far, 2000, ran);
    long spell[2] = {0, 0};
    for (long i = 2000; i < 12000; i += 56) {
        drive(&c, i, i + 40, far, spell);
        drive(&c, i + 40, i + 56, slow, spell);
    }
    assert_true(c.best_stream);
    if (spell[0] > 10000 / PC_STORES_REPROBE + 2) fail_msg("%ld of 10000 flickering executions in the dear mode", spell[0]);
}

/* Started executions (untimed) run the current mode and never probe; a disarmed chooser never asks for a probe
 * either (the plan wrappers do not call it then: the mode is whatever set-up fixed). */
static void test_untimed_and_off(void **state)
{
    (void)state;
    struct pc_store_chooser c;
    pc_store_chooser_reset(&c, true);
    for (int i = 0; i < 100; i++) {
        assert_true(pc_store_chooser_pick(&c, false));
        assert_false(c.timed);
        pc_store_chooser_learn(&c, 1e9);
    }
    assert_true(c.mean_us[0] < 0 && c.mean_us[1] < 0);
    pc_store_chooser_reset(&c, false);
    assert_false(c.on);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settles_on_streaming),
        cmocka_unit_test(test_switches_to_ordinary),
        cmocka_unit_test(test_follows_a_change),
        cmocka_unit_test(test_follows_a_change_to_close),
        cmocka_unit_test(test_reprobes_rate_limited),
        cmocka_unit_test(test_untimed_and_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
