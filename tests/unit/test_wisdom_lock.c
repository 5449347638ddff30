/* The lock of a wisdom file (src/api/wisdom_io.c): held across every read-merge-write of the file, with a
 * bounded wait. Other processes are forked children; a pipe tells when a child holds the lock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/wisdom_io.h"
#include "plancoll.h"

static char dir[64], path[128];

static int make_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/plancoll-lock-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    snprintf(path, sizeof path, "%s/w.wisdom", dir);
    return 0;
}

static int remove_dir(void **state)
{
    (void)state;
    char lock[160];
    snprintf(lock, sizeof lock, "%s.lock", path);
    unlink(lock);
    unlink(path);
    return rmdir(dir);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A child that takes the lock, says so through the pipe, holds it for hold_s seconds and exits without
 * unlocking: the kernel releases the lock of a process that ends. Returns its pid once it holds. (Bounded, so
 * that a failed assertion before the parent kills it leaves no process behind for long.) */
static pid_t child_holding(double hold_s)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        int fd;
        char msg[256];
        char ok = pc_wisdom_lock(path, 5.0, &fd, msg, sizeof msg) == PLANCOLL_SUCCESS ? 'y' : 'n';
        if (write(p[1], &ok, 1) != 1) _exit(2);
        struct timespec ts = {(time_t)hold_s, (long)((hold_s - (double)(time_t)hold_s) * 1e9)};
        nanosleep(&ts, NULL);
        _exit(0);
    }
    close(p[1]);
    char ok = 0;
    assert_int_equal(read(p[0], &ok, 1), 1);
    close(p[0]);
    assert_int_equal(ok, 'y');
    return pid;
}

static void test_lock_unlock(void **state)
{
    (void)state;
    int fd = -1;
    char msg[256];
    assert_int_equal(pc_wisdom_lock(path, 1.0, &fd, msg, sizeof msg), PLANCOLL_SUCCESS);
    assert_true(fd >= 0);
    char lock[160];
    snprintf(lock, sizeof lock, "%s.lock", path);
    struct stat st;
    assert_int_equal(stat(lock, &st), 0); /* beside the wisdom file, which is not created */
    assert_true(S_ISREG(st.st_mode));
    assert_int_not_equal(stat(path, &st), 0);
    pc_wisdom_unlock(fd);
    /* again: the lock file stays and is reused */
    assert_int_equal(pc_wisdom_lock(path, 1.0, &fd, msg, sizeof msg), PLANCOLL_SUCCESS);
    pc_wisdom_unlock(fd);
    pc_wisdom_unlock(-1); /* nothing to release */
}

static void test_held_elsewhere_times_out(void **state)
{
    (void)state;
    pid_t pid = child_holding(10.0);
    int fd = 7;
    char msg[256];
    double t0 = now();
    assert_int_equal(pc_wisdom_lock(path, 0.3, &fd, msg, sizeof msg), PLANCOLL_ERR_IO);
    double waited = now() - t0;
    assert_int_equal(fd, -1);
    assert_true(waited >= 0.3 && waited < 3.0);
    assert_non_null(strstr(msg, "w.wisdom.lock"));
    assert_non_null(strstr(msg, "stayed locked"));
    /* the holder dies without unlocking: the lock is free at once */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    t0 = now();
    assert_int_equal(pc_wisdom_lock(path, 5.0, &fd, msg, sizeof msg), PLANCOLL_SUCCESS);
    assert_true(now() - t0 < 0.5);
    pc_wisdom_unlock(fd);
}

static void test_waits_for_holder(void **state)
{
    (void)state;
    pid_t pid = child_holding(0.3);
    int fd;
    char msg[256];
    double t0 = now();
    assert_int_equal(pc_wisdom_lock(path, 10.0, &fd, msg, sizeof msg), PLANCOLL_SUCCESS);
    double waited = now() - t0;
    assert_true(waited >= 0.2 && waited < 3.0); /* it waited for the holder, and not much longer */
    pc_wisdom_unlock(fd);
    waitpid(pid, NULL, 0);
}

/* Two holders in one process exclude each other too (open file description locks; threads of one process). */
static void test_excludes_within_process(void **state)
{
    (void)state;
#ifdef F_OFD_SETLK
    int a, b;
    char msg[256];
    assert_int_equal(pc_wisdom_lock(path, 1.0, &a, msg, sizeof msg), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_lock(path, 0.1, &b, msg, sizeof msg), PLANCOLL_ERR_IO);
    pc_wisdom_unlock(a);
    assert_int_equal(pc_wisdom_lock(path, 1.0, &b, msg, sizeof msg), PLANCOLL_SUCCESS);
    pc_wisdom_unlock(b);
#else
    skip();
#endif
}

static void test_no_directory(void **state)
{
    (void)state;
    int fd = 7;
    char msg[256];
    assert_int_equal(pc_wisdom_lock("/nonexistent-plancoll-dir/w.wisdom", 1.0, &fd, msg, sizeof msg), PLANCOLL_ERR_IO);
    assert_int_equal(fd, -1);
    assert_non_null(strstr(msg, "cannot create the lock file '/nonexistent-plancoll-dir/w.wisdom.lock'"));
    assert_int_equal(pc_wisdom_lock_for_write("/nonexistent-plancoll-dir/w.wisdom", &fd, msg, sizeof msg),
                     PLANCOLL_ERR_IO);
}

/* A directory (or device, FIFO) where the wisdom file should be is refused, and no lock file appears beside it. */
static void test_not_a_file(void **state)
{
    (void)state;
    assert_int_equal(mkdir(path, 0700), 0);
    int fd = 7;
    char msg[256], lock[160];
    assert_int_equal(pc_wisdom_lock(path, 1.0, &fd, msg, sizeof msg), PLANCOLL_ERR_IO);
    assert_int_equal(fd, -1);
    assert_non_null(strstr(msg, "is not a regular file"));
    snprintf(lock, sizeof lock, "%s.lock", path);
    struct stat st;
    assert_int_not_equal(stat(lock, &st), 0);
    assert_int_equal(rmdir(path), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lock_unlock, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_held_elsewhere_times_out, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_waits_for_holder, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_excludes_within_process, make_dir, remove_dir),
        cmocka_unit_test(test_no_directory),
        cmocka_unit_test_setup_teardown(test_not_a_file, make_dir, remove_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
