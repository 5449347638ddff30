/* The machine model: interpolation, the cost primitives on hand-set tables, the text form round trip and the
 * rejection of malformed lines. Expected values are worked out by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/model.h"

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-9 * (1 + fabs((double)(b))))

static void test_interp(void **state)
{
    (void)state;
    double t[PC_MODEL_NSIZES] = {1, 2, 4, 8, 16, 32, 64}; /* doubling per factor 8 of size */
    NEAR(pc_model_interp(t, 8), 1);
    NEAR(pc_model_interp(t, 1), 1);             /* below the table: the first value */
    NEAR(pc_model_interp(t, 4096), 8);
    NEAR(pc_model_interp(t, 64.0 * 8.0 / 8.0 * sqrt(8.0)), 2 * sqrt(2.0)); /* log-log midpoint of 64 and 512 */
    /* beyond 2 MiB: slope of the last interval, (64-32)/(2097152-262144) per byte */
    NEAR(pc_model_interp(t, 2097152.0 + 1835008.0), 96);
}

static void test_primitives(void **state)
{
    (void)state;
    struct pc_machine_model m;
    memset(&m, 0, sizeof m);
    m.L_us = 10;
    m.o_us = 1;
    m.g_us = 2;
    m.G_us_per_b = 0.001;
    /* no tables: LogGP closed forms */
    NEAR(pc_cost_net(&m, 1001), 10 + 2 + 1000 * 0.001);
    NEAR(pc_cost_net_concurrent(&m, 3, 1000), 10 + 2 + 999 * 0.001 + 2 * (2 + 1000 * 0.001));
    /* tables: two port levels measured, the third extrapolates by the last step */
    m.net_ports = 2;
    for (int s = 0; s < PC_MODEL_NSIZES; s++) {
        m.net_time[0][s] = 10;
        m.net_time[1][s] = 15;
    }
    NEAR(pc_cost_net(&m, 100), 10);
    NEAR(pc_cost_net_concurrent(&m, 2, 100), 15);
    NEAR(pc_cost_net_concurrent(&m, 4, 100), 25);
    m.shm_taus = 1;
    for (int s = 0; s < PC_MODEL_NSIZES; s++) m.shm_time[0][0][s] = m.shm_time[1][0][s] = 4;
    m.shm_time[1][0][3] = 6;
    NEAR(pc_cost_shm_copy(&m, 1, 1, 4096), 4);
    NEAR(pc_cost_shm_copy(&m, 1, 3, 4096), 12); /* one level measured: proportional to tau */
    NEAR(pc_cost_shm_copy(&m, 2, 1, 4096), 6);
    NEAR(pc_cost_shm_copy(&m, 3, 1, 4096), 10); /* two copies, then one more */
    NEAR(pc_cost_shm_copy(&m, 1, 1, 0), 0);
    m.reduce_default_us_per_b = 0.01;
    m.reduce_us_per_b[2][5] = 0.001;
    NEAR(pc_cost_reduce(&m, 2, 5, 1000), 1);
    NEAR(pc_cost_reduce(&m, -1, -1, 1000), 10);
    NEAR(pc_cost_reduce(&m, 99, 5, 1000), 10);
}

static void test_round_trip(void **state)
{
    (void)state;
    struct pc_machine_model a, b;
    pc_model_default(&a);
    a.calibrated = true;
    snprintf(a.shape, sizeof a.shape, "P=8:N=2:ppn=4-4:oversub=1");
    a.reduce_us_per_b[2][7] = 0.000123;
    a.net_ports = 3;
    a.net_time[2][4] = 123.5;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    assert_int_equal(pc_model_format(&a, &buf, &len, &cap), 0);
    memset(&b, 0, sizeof b);
    char err[128];
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        if (pc_model_parse_line(&b, line, err, sizeof err)) fail_msg("line '%s' rejected: %s", line, err);
    free(buf);
    pc_model_derive(&b, 2);
    assert_string_equal(b.shape, a.shape);
    assert_true(b.calibrated);
    assert_int_equal(b.net_ports, 3);
    assert_int_equal(b.shm_taus, a.shm_taus);
    NEAR(b.net_time[2][4], 123.5);
    NEAR(b.reduce_us_per_b[2][7], 0.000123);
    NEAR(b.L_us, a.L_us);
    NEAR(b.G_us_per_b, a.G_us_per_b);
    NEAR(b.shm_time[1][1][6], a.shm_time[1][1][6]);
}

static void test_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "bogus 1", "loggp 1 2 3", "loggp 1 2 3 x", "loggp 1 2 3 -4", "loggp 1 2 3 nan", "loggp 1 2 3 4 5",
        "net 0 1,2,3,4,5,6,7", "net 9 1,2,3,4,5,6,7", "net 1 1,2,3", "taulop 3 1 1,2,3,4,5,6,7",
        "taulop 1 9 1,2,3,4,5,6,7", "reduce 16 0 1", "reduce 0 48 1", "reduce -1 0 1", "shape", "calibrated 2 1",
        "sync inf", "transpose 1e300", "",
    };
    struct pc_machine_model m;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&m, 0, sizeof m);
        char err[128] = "";
        if (pc_model_parse_line(&m, bad[i], err, sizeof err) == 0) fail_msg("accepted '%s'", bad[i]);
        assert_true(err[0] != '\0');
    }
}

static void test_store(void **state)
{
    (void)state;
    struct pc_machine_model m;
    pc_model_default(&m);
    struct pc_shape sh = {.nranks = 8, .nnodes = 2, .min_ppn = 4, .max_ppn = 4, .oversubscribed = true};
    pc_model_shape_key(&sh, m.shape, sizeof m.shape);
    assert_string_equal(m.shape, "P=8:N=2:ppn=4-4:oversub=1");
    assert_null(pc_model_lookup(m.shape));
    assert_int_equal(pc_model_remember(&m), 0);
    m.L_us = 99;
    assert_int_equal(pc_model_remember(&m), 0);
    assert_int_equal(pc_model_count(), 1);
    NEAR(pc_model_lookup(m.shape)->L_us, 99);
    pc_model_forget_all();
    assert_int_equal(pc_model_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interp),    cmocka_unit_test(test_primitives), cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_malformed), cmocka_unit_test(test_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
