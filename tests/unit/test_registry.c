/* The algorithm registry (src/exec/registry.c): names, collectives, lookup and the signature wisdom records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "exec/registry.h"
#include "base/algorithm.h"
#include "plancoll.h"

/* FNV-1a written out here, independently of pc_hash_bytes. */
static uint64_t fnv1a(uint64_t h, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* The signature of a list of names in the given order: each name with its terminating NUL. */
static uint64_t signature_of(const char *const *names, int n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (int i = 0; i < n; i++) h = fnv1a(h, names[i], strlen(names[i]) + 1);
    return h;
}

static void test_entries_complete(void **state)
{
    (void)state;
    int n = pc_registry_count();
    assert_true(n >= 7);
    for (int i = 0; i < n; i++) {
        const struct pc_algorithm *a = pc_registry_get(i);
        assert_non_null(a);
        assert_non_null(a->name);
        assert_non_null(a->summary);
        assert_true(strlen(a->summary) > 0);
        assert_true(a->collective >= 0 && a->collective < PC_NUM_COLLECTIVES);
        assert_non_null(a->estimate);
        assert_non_null(a->setup);
        assert_non_null(a->execute);
        assert_non_null(a->teardown);
        /* Wisdom keeps names in char[64]. */
        assert_true(strlen(a->name) < 64);
    }
    assert_null(pc_registry_get(-1));
    assert_null(pc_registry_get(n));
    assert_null(pc_registry_get(n + 100));
}

static void test_names_unique_and_prefixed(void **state)
{
    (void)state;
    int n = pc_registry_count();
    for (int i = 0; i < n; i++) {
        const struct pc_algorithm *a = pc_registry_get(i);
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%s.", pc_collective_name(a->collective));
        if (strncmp(a->name, prefix, strlen(prefix)) != 0)
            fail_msg("%s does not start with %s (its collective)", a->name, prefix);
        assert_true(strlen(a->name) > strlen(prefix));
        /* names are usable in PLANCOLL_ALGORITHM: no separators */
        assert_null(strchr(a->name, ','));
        assert_null(strchr(a->name, ' '));
        for (int j = i + 1; j < n; j++)
            if (strcmp(a->name, pc_registry_get(j)->name) == 0) fail_msg("name %s registered twice", a->name);
    }
    /* Every collective has at least one algorithm, and its native one. */
    for (int c = 0; c < PC_NUM_COLLECTIVES; c++) {
        char native[32];
        snprintf(native, sizeof native, "%s.native", pc_collective_name((enum pc_collective)c));
        int idx = pc_registry_find(native);
        assert_true(idx >= 0);
        assert_int_equal(pc_registry_get(idx)->collective, c);
    }
}

static void test_find_round_trip(void **state)
{
    (void)state;
    for (int i = 0; i < pc_registry_count(); i++) assert_int_equal(pc_registry_find(pc_registry_get(i)->name), i);
    assert_int_equal(pc_registry_find("alltoall.nonexistent"), -1);
    assert_int_equal(pc_registry_find(""), -1);
    assert_int_equal(pc_registry_find("alltoall"), -1);
    assert_int_equal(pc_registry_find("alltoall.pairwise "), -1);
    assert_int_equal(pc_registry_find("ALLTOALL.PAIRWISE"), -1);
}

/* The public view of the registry agrees with the internal one. */
static void test_public_names(void **state)
{
    (void)state;
    int i = 0;
    for (; i < pc_registry_count(); i++) {
        const char *coll = NULL;
        const char *name = plancoll_algorithm_name(i, &coll);
        assert_non_null(name);
        assert_string_equal(name, pc_registry_get(i)->name);
        assert_non_null(coll);
        assert_string_equal(coll, pc_collective_name(pc_registry_get(i)->collective));
        assert_string_equal(plancoll_algorithm_name(i, NULL), name);
    }
    assert_null(plancoll_algorithm_name(i, NULL));
    assert_null(plancoll_algorithm_name(-1, NULL));
}

static void test_signature(void **state)
{
    (void)state;
    int n = pc_registry_count();
    const char *names[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++) names[i] = pc_registry_get(i)->name;

    uint64_t sig = pc_registry_signature();
    assert_true(sig == pc_registry_signature()); /* stable across calls */
    assert_true(sig == signature_of(names, n));  /* FNV-1a over the names in order, NULs included */

    /* Any reordering (every adjacent swap) gives another signature, so wisdom from such a build is rejected. */
    for (int i = 0; i + 1 < n; i++) {
        const char *t = names[i];
        names[i] = names[i + 1];
        names[i + 1] = t;
        assert_true(signature_of(names, n) != sig);
        names[i + 1] = names[i];
        names[i] = t;
    }
    /* So does a removed or an appended algorithm. */
    assert_true(signature_of(names, n - 1) != sig);
    names[n] = "allreduce.appended";
    assert_true(signature_of(names, n + 1) != sig);
    /* The NUL separators matter: "ab","c" and "a","bc" differ. */
    const char *x[] = {"ab", "c"}, *y[] = {"a", "bc"};
    assert_true(signature_of(x, 2) != signature_of(y, 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entries_complete),
        cmocka_unit_test(test_names_unique_and_prefixed),
        cmocka_unit_test(test_find_round_trip),
        cmocka_unit_test(test_public_names),
        cmocka_unit_test(test_signature),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
