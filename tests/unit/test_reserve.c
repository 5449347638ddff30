/* Reserving and returning the memory behind shared mappings (src/shm/reserve.h), without MPI and without
 * root: a memfd (a tmpfs file, as /dev/shm's) mapped past its end stands for a full /dev/shm, since a page past
 * the end of a file raises SIGBUS at its first touch exactly as a page a full tmpfs cannot back.  Checked: both
 * ways of reserving (MADV_POPULATE_WRITE and the touch under a SIGBUS guard) succeed on a good mapping without
 * changing a byte, fail with ENOSPC on a mapping without memory and give back what they reserved before the
 * failure, the caller's SIGBUS handler is restored (and still receives a SIGBUS afterwards), and returning
 * pages frees exactly the whole pages of a range (mincore). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "shm/reserve.h"

static size_t page;

/* A tmpfs file of file_pages pages mapped over map_pages pages (shared); the mapping is the return value. */
static char *map_file(size_t file_pages, size_t map_pages)
{
    int fd = memfd_create("plancoll-reserve-test", 0);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)(file_pages * page)), 0);
    void *m = mmap(NULL, map_pages * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    assert_true(m != MAP_FAILED);
    return m;
}

typedef int (*reserve_fn)(void *, size_t);

static void good_mapping(reserve_fn reserve)
{
    char *m = map_file(8, 8);
    assert_int_equal(pc_shm_resident(m, 8 * page), 0);
    /* bytes already there are kept: the reservation only faults pages in */
    memset(m + 3 * page, 0x5a, 100);
    assert_int_equal(reserve(m + 10, 6 * page), 0); /* pages 0 .. 6 hold a byte of the range */
    assert_int_equal(pc_shm_resident(m, 8 * page), 7 * page);
    for (int i = 0; i < 100; i++) assert_int_equal((unsigned char)m[3 * page + (size_t)i], 0x5a);
    assert_int_equal(m[10], 0);
    assert_int_equal(reserve(m, 0), 0);
    munmap(m, 8 * page);
}

static void test_populate_good(void **state)
{
    (void)state;
    good_mapping(pc_shm_reserve);
}

static void test_touch_good(void **state)
{
    (void)state;
    good_mapping(pc_shm_reserve_by_touch);
}

/* The caller's own SIGBUS handler, to check that it is back in place after a guarded touch. */
static volatile sig_atomic_t caller_handler_ran;
static sigjmp_buf caller_jump;
static void caller_handler(int sig)
{
    (void)sig;
    caller_handler_ran = 1;
    siglongjmp(caller_jump, 1);
}

static void missing_memory(reserve_fn reserve)
{
    struct sigaction mine, seen, original;
    memset(&mine, 0, sizeof mine);
    mine.sa_handler = caller_handler;
    sigemptyset(&mine.sa_mask);
    assert_int_equal(sigaction(SIGBUS, &mine, &original), 0);

    /* 2 pages of file under 6 pages of mapping: pages 2 .. 5 have no memory and never will */
    char *m = map_file(2, 6);
    assert_int_equal(reserve(m, 6 * page), ENOSPC);
    /* what was reserved before the failure went back */
    assert_int_equal(pc_shm_resident(m, 2 * page), 0);
    /* a range with memory still reserves */
    assert_int_equal(reserve(m, 2 * page), 0);
    assert_int_equal(pc_shm_resident(m, 2 * page), 2 * page);
    /* part of a range without memory fails too, and gives back only the range's own whole pages */
    assert_int_equal(reserve(m + page + 8, 2 * page), ENOSPC);
    assert_int_equal(pc_shm_resident(m, page), page);
    assert_int_equal(pc_shm_resident(m + page, page), page);

    /* the caller's handler is back, and a real SIGBUS (a store past the file's end) reaches it */
    assert_int_equal(sigaction(SIGBUS, NULL, &seen), 0);
    assert_ptr_equal((void *)seen.sa_handler, (void *)caller_handler);
    caller_handler_ran = 0;
    if (sigsetjmp(caller_jump, 1) == 0) {
        volatile char *q = m + 4 * page;
        *q = 1;
    }
    assert_int_equal(caller_handler_ran, 1);
    munmap(m, 6 * page);
    sigaction(SIGBUS, &original, NULL);
}

static void test_populate_missing(void **state)
{
    (void)state;
    missing_memory(pc_shm_reserve);
}

static void test_touch_missing(void **state)
{
    (void)state;
    missing_memory(pc_shm_reserve_by_touch);
}

static void test_unreserve(void **state)
{
    (void)state;
    char *m = map_file(8, 8);
    memset(m, 0x77, 8 * page);
    assert_int_equal(pc_shm_resident(m, 8 * page), 8 * page);
    /* only pages wholly inside go: [page + 1, 5 page + 1) holds pages 2, 3, 4 wholly */
    assert_true(pc_shm_unreserve(m + page + 1, 4 * page));
    assert_int_equal(pc_shm_resident(m, 8 * page), 5 * page);
    assert_int_equal(pc_shm_resident(m + 2 * page, 3 * page), 0);
    assert_int_equal((unsigned char)m[page + 1], 0x77);      /* the edge pages keep their bytes */
    assert_int_equal((unsigned char)m[5 * page], 0x77);
    assert_int_equal(m[3 * page], 0);                          /* a returned page reads zero (tmpfs) */
    assert_true(pc_shm_unreserve(m + 10, page - 20));          /* no whole page: nothing to do */
    /* private memory is dropped instead of punched */
    char *anon = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(anon != MAP_FAILED);
    assert_int_equal(pc_shm_reserve(anon, 4 * page), 0);
    assert_int_equal(pc_shm_resident(anon, 4 * page), 4 * page);
    assert_true(pc_shm_unreserve(anon, 4 * page));
    assert_int_equal(pc_shm_resident(anon, 4 * page), 0);
    munmap(anon, 4 * page);
    munmap(m, 8 * page);
}

int main(void)
{
    page = (size_t)sysconf(_SC_PAGESIZE);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_populate_good),    cmocka_unit_test(test_touch_good),
        cmocka_unit_test(test_populate_missing), cmocka_unit_test(test_touch_missing),
        cmocka_unit_test(test_unreserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
