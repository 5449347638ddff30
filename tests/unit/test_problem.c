/* Problem signatures: the canonical key (wisdom's name for a problem), FNV-1a, and the agreement hash that
 * plan_finish compares across ranks in one allreduce (src/base/problem.c); and the checked byte arithmetic the
 * plan's sizes and offsets are computed with (src/base/sizes.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "base/problem.h"
#include "exec/datatype.h"
#include "base/sizes.h"
#include "plancoll.h"

static struct pc_problem base(enum pc_collective coll)
{
    struct pc_problem p;
    memset(&p, 0, sizeof p);
    p.coll = coll;
    p.shape = (struct pc_shape){.nranks = 8, .nnodes = 2, .min_ppn = 4, .max_ppn = 4, .oversubscribed = true};
    p.flags = PLANCOLL_MEASURE;
    p.block_bytes = 64;
    p.send_total_bytes = 1000;
    p.recv_total_bytes = 900;
    p.max_block_bytes = 200;
    p.pattern_hash = UINT64_C(0x0123456789abcdef);
    p.nonzero_sends = 5;
    p.count = 1024;
    p.elem_bytes = 8;
    p.type_id = 3;
    p.op_id = 2;
    p.commutative = true;
    return p;
}

static void test_fnv1a_vectors(void **state)
{
    (void)state;
    /* Published FNV-1a 64-bit test vectors. */
    assert_true(PC_HASH_SEED == UINT64_C(0xcbf29ce484222325));
    assert_true(pc_hash_bytes(PC_HASH_SEED, "", 0) == UINT64_C(0xcbf29ce484222325));
    assert_true(pc_hash_bytes(PC_HASH_SEED, "a", 1) == UINT64_C(0xaf63dc4c8601ec8c));
    assert_true(pc_hash_bytes(PC_HASH_SEED, "foobar", 6) == UINT64_C(0x85944171f73967e8));
    /* Incremental hashing equals hashing the concatenation. */
    assert_true(pc_hash_bytes(pc_hash_bytes(PC_HASH_SEED, "foo", 3), "bar", 3) ==
                pc_hash_bytes(PC_HASH_SEED, "foobar", 6));
}

static void test_collective_names(void **state)
{
    (void)state;
    assert_string_equal(pc_collective_name(PC_ALLTOALL), "alltoall");
    assert_string_equal(pc_collective_name(PC_ALLTOALLV), "alltoallv");
    assert_string_equal(pc_collective_name(PC_ALLREDUCE), "allreduce");
    assert_string_equal(pc_collective_name(PC_NUM_COLLECTIVES), "unknown");
}

static void test_keys(void **state)
{
    (void)state;
    char buf[200];
    struct pc_problem p = base(PC_ALLTOALL);
    assert_int_equal(pc_problem_key(&p, buf, sizeof buf), strlen("alltoall:P=8:nodes=2:ppn=4-4:block=64:inplace=0"));
    assert_string_equal(buf, "alltoall:P=8:nodes=2:ppn=4-4:block=64:inplace=0");
    p = base(PC_ALLTOALLV);
    pc_problem_key(&p, buf, sizeof buf);
    assert_string_equal(buf, "alltoallv:P=8:nodes=2:ppn=4-4:pattern=0123456789abcdef:inplace=0");
    p = base(PC_ALLREDUCE);
    pc_problem_key(&p, buf, sizeof buf);
    assert_string_equal(buf, "allreduce:P=8:nodes=2:ppn=4-4:count=1024:elem=8:type=3:op=2:comm=1");
    p.commutative = false;
    p.type_id = -1;
    p.op_id = -1;
    p.shape.min_ppn = 3;
    pc_problem_key(&p, buf, sizeof buf);
    assert_string_equal(buf, "allreduce:P=8:nodes=2:ppn=3-4:count=1024:elem=8:type=-1:op=-1:comm=0");

    /* Truncation: the returned length is the full key's, the buffer stays terminated. */
    char small[10];
    size_t full = pc_problem_key(&p, small, sizeof small);
    assert_true(full > sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_int_equal(strncmp(small, "allreduce", 9), 0);

    /* Per-rank or derived fields are not part of the key; the flags are not either (rigor lives in wisdom). */
    char k1[200], k2[200];
    p = base(PC_ALLREDUCE);
    pc_problem_key(&p, k1, sizeof k1);
    p.in_place = true;
    p.flags = PLANCOLL_EXHAUSTIVE;
    p.shape.oversubscribed = false;
    pc_problem_key(&p, k2, sizeof k2);
    assert_string_equal(k1, k2);
}

/* Equal problems hash equal; changing any field that must agree changes the hash. */
static void test_agreement_hash_fields(void **state)
{
    (void)state;
    for (int c = 0; c < PC_NUM_COLLECTIVES; c++) {
        struct pc_problem a = base((enum pc_collective)c), b = base((enum pc_collective)c);
        uint64_t h = pc_problem_agreement_hash(&a, 0);
        assert_true(h == pc_problem_agreement_hash(&b, 0));
        assert_true(h == pc_problem_agreement_hash(&a, 0)); /* stable */

        b = a;
        b.coll = (enum pc_collective)((c + 1) % PC_NUM_COLLECTIVES);
        assert_true(h != pc_problem_agreement_hash(&b, 0));
        b = a;
        b.flags = PLANCOLL_PATIENT;
        assert_true(h != pc_problem_agreement_hash(&b, 0));
        b = a;
        b.flags = PLANCOLL_MEASURE | PLANCOLL_WISDOM_ONLY;
        assert_true(h != pc_problem_agreement_hash(&b, 0));
        b = a;
        b.shape.nranks = 9;
        assert_true(h != pc_problem_agreement_hash(&b, 0));
        /* extra (a hash of PLANCOLL_ALGORITHM) */
        assert_true(h != pc_problem_agreement_hash(&a, 1));
        assert_true(pc_problem_agreement_hash(&a, 1) != pc_problem_agreement_hash(&a, 2));
    }

    struct pc_problem a = base(PC_ALLTOALL), b;
    uint64_t h = pc_problem_agreement_hash(&a, 0);
    b = a;
    b.block_bytes = 65;
    assert_true(h != pc_problem_agreement_hash(&b, 0));

    a = base(PC_ALLTOALLV);
    h = pc_problem_agreement_hash(&a, 0);
    b = a;
    b.pattern_hash ^= 1;
    assert_true(h != pc_problem_agreement_hash(&b, 0));
    /* A rank's own totals differ between ranks of a valid call: they must not enter the hash. */
    b = a;
    b.send_total_bytes = 5;
    b.recv_total_bytes = 7;
    b.max_block_bytes = 3;
    b.nonzero_sends = 1;
    assert_true(h == pc_problem_agreement_hash(&b, 0));

    a = base(PC_ALLREDUCE);
    h = pc_problem_agreement_hash(&a, 0);
    b = a;
    b.count = 1025;
    assert_true(h != pc_problem_agreement_hash(&b, 0));
    b = a;
    b.elem_bytes = 4;
    assert_true(h != pc_problem_agreement_hash(&b, 0));
    b = a;
    b.type_id = -1;
    assert_true(h != pc_problem_agreement_hash(&b, 0));
    b = a;
    b.op_id = 0;
    assert_true(h != pc_problem_agreement_hash(&b, 0));
    b = a;
    b.op_id = -1;
    assert_true(h != pc_problem_agreement_hash(&b, 0));
    b = a;
    b.commutative = false;
    assert_true(h != pc_problem_agreement_hash(&b, 0));
    /* Fields of other collectives do not matter for allreduce. */
    b = a;
    b.block_bytes = 1;
    b.pattern_hash = 2;
    assert_true(h == pc_problem_agreement_hash(&b, 0));
}

/* MPI_IN_PLACE on allreduce is a per-rank choice (MPI allows it on any subset of ranks): it must not enter
 * the hash. */
static void test_agreement_hash_allreduce_in_place(void **state)
{
    (void)state;
    struct pc_problem a = base(PC_ALLREDUCE), b = a;
    b.in_place = true;
    assert_true(pc_problem_agreement_hash(&a, 0) == pc_problem_agreement_hash(&b, 0));
    assert_true(pc_problem_agreement_hash(&a, 42) == pc_problem_agreement_hash(&b, 42));
    /* Whether a host is oversubscribed is the layout's business, not an argument. */
    b = a;
    b.shape.oversubscribed = !a.shape.oversubscribed;
    assert_true(pc_problem_agreement_hash(&a, 0) == pc_problem_agreement_hash(&b, 0));
}

/* MPI_IN_PLACE on alltoall and alltoallv is not per-rank: MPI specifies it at all processes, and
 * alltoall.pairwise runs a different schedule in place (the symmetric pairing) than out of place (the shift), so
 * a rank in place and a rank out of place do not exchange in the same order. The agreement hash is the only
 * plan-time check that the ranks agree, so in_place must change it for these two collectives. */
static void test_agreement_hash_alltoall_in_place(void **state)
{
    (void)state;
    for (int c = PC_ALLTOALL; c <= PC_ALLTOALLV; c++) {
        struct pc_problem a = base((enum pc_collective)c), b = a;
        b.in_place = true;
        if (pc_problem_agreement_hash(&a, 0) == pc_problem_agreement_hash(&b, 0))
            fail_msg("%s: MPI_IN_PLACE on some ranks only is not detected (in_place is not in the agreement hash)",
                     pc_collective_name((enum pc_collective)c));
    }
}

static struct pc_typeinfo type_of(int64_t size, MPI_Aint extent, MPI_Aint true_lb, MPI_Aint true_extent)
{
    struct pc_typeinfo t;
    memset(&t, 0, sizeof t);
    t.size = size;
    t.extent = extent;
    t.true_lb = true_lb;
    t.true_extent = true_extent;
    return t;
}

/* Products and spans against values worked out by hand; everything at or past 2^60 bytes, or that would wrap 64
 * bits, is refused instead of computed. */
static void test_sizes(void **state)
{
    (void)state;
    const int64_t lim = PC_MAX_BYTES;
    int64_t v = -1, lo = -1, hi = -1;
    assert_true(pc_bytes_mul(INT32_MAX, 8, &v) && v == INT64_C(17179869176));
    assert_true(pc_bytes_mul(0, lim - 1, &v) && v == 0);
    assert_true(pc_bytes_mul(1, lim - 1, &v) && v == lim - 1);
    assert_false(pc_bytes_mul(1, lim, &v));
    assert_false(pc_bytes_mul(INT64_C(1) << 30, INT64_C(1) << 34, &v)); /* 2^64: wraps to 0 unchecked */
    assert_false(pc_bytes_mul(INT64_C(3), INT64_C(1) << 62, &v));
    assert_false(pc_bytes_mul(-1, 8, &v));
    int64_t sum = lim - 10;
    assert_true(pc_bytes_add(&sum, 9) && sum == lim - 1);
    assert_false(pc_bytes_add(&sum, 1));
    assert_false(pc_bytes_add(&sum, -1));

    /* a dense 8-byte type: elements [3, 3 + 5) are bytes [24, 64) */
    struct pc_typeinfo dbl = type_of(8, 8, 0, 8);
    assert_true(pc_type_span(&dbl, 3, 5, &lo, &hi) && lo == 24 && hi == 64);
    assert_true(pc_type_span(&dbl, 7, 0, &lo, &hi) && lo == 0 && hi == 0);
    assert_false(pc_type_span(&dbl, 0, -1, &lo, &hi));
    /* an alltoall's receive buffer of 2 x (2^30 + 3) bytes: past INT_MAX, far below the limit */
    struct pc_typeinfo byte = type_of(1, 1, 0, 1);
    assert_true(pc_type_span(&byte, 0, 2 * ((INT64_C(1) << 30) + 3), &lo, &hi) && lo == 0 &&
                hi == (INT64_C(1) << 31) + 6);
    /* displacement INT_MAX of doubles: 16 GiB away */
    assert_true(pc_type_span(&dbl, INT32_MAX, 1, &lo, &hi) && lo == INT64_C(8) * INT32_MAX && hi == lo + 8);
    /* a 4-byte value every 2^31 + 72 bytes, lower bound 16: element k at k (2^31 + 72) + 16 */
    const int64_t far = (INT64_C(1) << 31) + 72;
    struct pc_typeinfo sparse = type_of(4, far, 16, 4);
    assert_true(pc_type_span(&sparse, 1, 3, &lo, &hi) && lo == far + 16 && hi == 3 * far + 20);
    /* a negative extent: elements run downwards, the span is [last, first + true extent) */
    struct pc_typeinfo down = type_of(4, -8, 0, 4);
    assert_true(pc_type_span(&down, 0, 4, &lo, &hi) && lo == -24 && hi == 4);
    /* INT_MAX elements of extent 2^40 (2^71), and 2^30 of 2^34 (2^64 exactly): refused */
    struct pc_typeinfo tib = type_of(4, (MPI_Aint)1 << 40, 0, 4), big = type_of(4, (MPI_Aint)1 << 34, 0, 4);
    assert_false(pc_type_span(&tib, INT32_MAX, 1, &lo, &hi));
    assert_false(pc_type_span(&big, 0, INT64_C(1) << 30, &lo, &hi));
    assert_false(pc_type_span(&big, -(INT64_C(1) << 30), 1, &lo, &hi));
    /* the last byte one below the limit is fine, the limit itself is not */
    struct pc_typeinfo one = type_of(1, 1, 0, 1);
    assert_true(pc_type_span(&one, lim - 2, 1, &lo, &hi) && hi == lim - 1);
    assert_false(pc_type_span(&one, lim - 1, 1, &lo, &hi));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fnv1a_vectors),
        cmocka_unit_test(test_collective_names),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_agreement_hash_fields),
        cmocka_unit_test(test_agreement_hash_allreduce_in_place),
        cmocka_unit_test(test_agreement_hash_alltoall_in_place),
        cmocka_unit_test(test_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
