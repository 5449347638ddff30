/* stores=auto's chooser (src/exec/store_chooser.c) driven with made-up execution times: it must settle on the cheaper
 * mode, pay little for its probes where the host holds its state, follow a change of state that makes its mode
 * dear, not re-probe at the other mode's price when a slow spell leaves its mode still the cheaper, and stay off
 * when disarmed. Pure: no plan, no clock, no MPI. */
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

/* Far apart (ordinary stores 7x dearer): streaming from the start, probes of ordinary stores only at waits that
 * grow to PC_STORES_PROBE_MAX, so under 0.3% of 20000 executions pay the dear mode. */
static void test_settles_on_streaming(void **state)
{
    (void)state;
    struct pc_store_chooser c;
    pc_store_chooser_reset(&c, true);
    const double far[2] = {700, 100};
    long ran[2] = {0, 0};
    drive(&c, 0, 20000, far, ran);
    assert_true(c.best_stream);
    assert_int_equal(c.switches, 0);
    if (ran[0] < 1 || ran[0] > 60) fail_msg("%ld of 20000 executions in the dear mode", ran[0]);
}

/* Close (ordinary stores cheaper): switches to ordinary at the first probe (execution 2) and stays. */
static void test_switches_to_ordinary(void **state)
{
    (void)state;
    struct pc_store_chooser c;
    pc_store_chooser_reset(&c, true);
    const double close[2] = {100, 150};
    long ran[2] = {0, 0};
    drive(&c, 0, 20000, close, ran);
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
    pc_store_chooser_reset(&c, true);
    const double close[2] = {100, 150}, far[2] = {700, 100};
    long ran[2] = {0, 0};
    drive(&c, 0, 5000, close, ran);
    assert_false(c.best_stream);
    long after[2] = {0, 0};
    drive(&c, 5000, 5040, far, after);
    assert_true(c.best_stream);
    if (after[0] > 30) fail_msg("%ld of the 40 executions after the change in the dear mode", after[0]);
}

/* A slow spell (the mode at 3x, still far cheaper than the other mode's last probe): the mean follows, no probe. */
static void test_no_probe_when_still_cheaper(void **state)
{
    (void)state;
    struct pc_store_chooser c;
    pc_store_chooser_reset(&c, true);
    const double far[2] = {700, 100}, slow[2] = {2100, 300};
    long ran[2] = {0, 0};
    drive(&c, 0, 6000, far, ran); /* probes spaced out by now */
    const unsigned long long next = c.next_probe;
    long spell[2] = {0, 0};
    drive(&c, 6000, 6100, slow, spell);
    assert_int_equal(spell[0], next < 6100 ? 1 : 0); /* only a probe that was due anyway */
    assert_true(c.best_stream);
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
        cmocka_unit_test(test_no_probe_when_still_cheaper),
        cmocka_unit_test(test_untimed_and_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
