/* Reserving and returning the memory behind node-shared mappings (reserve.h). */
#include "shm/reserve.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

static size_t page_size(void)
{
    static size_t page;
    if (!page) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : 4096;
    }
    return page;
}

/* The fallback's guard: set only while this thread runs the touch loop. */
static _Thread_local sigjmp_buf *touch_guard;
static struct sigaction previous_bus; /* the handler installed before the guard, restored after it */

static void on_sigbus(int sig, siginfo_t *info, void *context)
{
    (void)context;
    if (touch_guard) siglongjmp(*touch_guard, 1);
    /* Not the guarded loop's fault (another thread, or a SIGBUS sent with kill): give it to the previous
     * handler.  A fault re-executes the access on return and meets that handler; a sent signal is raised again. */
    sigaction(SIGBUS, &previous_bus, NULL);
    if (info->si_code <= 0) raise(sig);
}

/* One store per page, at the page's first byte inside the range: bytes outside it may be a neighbour's. */
static void touch_pages(char *start, char *end)
{
    const size_t page = page_size();
    for (char *p = start; p < end; p = (char *)(((uintptr_t)p / page + 1) * page)) {
        volatile char *q = p;
        *q = *q;
    }
}

int pc_shm_reserve_by_touch(void *addr, size_t bytes)
{
    if (!bytes) return 0;
    struct sigaction guard, before;
    memset(&guard, 0, sizeof guard);
    guard.sa_sigaction = on_sigbus;
    guard.sa_flags = SA_SIGINFO;
    sigemptyset(&guard.sa_mask);
    if (sigaction(SIGBUS, &guard, &before) != 0) return errno;
    previous_bus = before;
    sigjmp_buf jump;
    volatile int failed = 0;
    if (sigsetjmp(jump, 1) == 0) {
        touch_guard = &jump;
        touch_pages(addr, (char *)addr + bytes);
    } else {
        failed = 1;
    }
    touch_guard = NULL;
    sigaction(SIGBUS, &before, NULL);
    if (failed) {
        pc_shm_unreserve(addr, bytes);
        return ENOSPC;
    }
    return 0;
}

int pc_shm_reserve(void *addr, size_t bytes)
{
    if (!bytes) return 0;
    const size_t page = page_size();
    uintptr_t lo = (uintptr_t)addr / page * page, hi = ((uintptr_t)addr + bytes + page - 1) / page * page;
    for (int attempt = 0; attempt < 8; attempt++) {
        if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) == 0) return 0;
        switch (errno) {
        case EAGAIN:
        case EINTR: continue; /* a transient failure: try again */
        case EINVAL:
        case ENOSYS: return pc_shm_reserve_by_touch(addr, bytes); /* no MADV_POPULATE_WRITE here */
        case EFAULT: /* a page would raise SIGBUS: the file system is full */
        case ENOMEM:
        case EHWPOISON:
            pc_shm_unreserve(addr, bytes);
            return ENOSPC;
        default: {
            int e = errno;
            pc_shm_unreserve(addr, bytes);
            return e;
        }
        }
    }
    return pc_shm_reserve_by_touch(addr, bytes);
}

bool pc_shm_unreserve(void *addr, size_t bytes)
{
    const size_t page = page_size();
    uintptr_t lo = ((uintptr_t)addr + page - 1) / page * page, hi = ((uintptr_t)addr + bytes) / page * page;
    if (hi <= lo) return true;
    /* MADV_REMOVE punches a hole in a shared file (tmpfs); private memory refuses it and is dropped instead. */
    if (madvise((void *)lo, hi - lo, MADV_REMOVE) == 0) return true;
    return madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0;
}

size_t pc_shm_resident(const void *addr, size_t bytes)
{
    if (!bytes) return 0;
    const size_t page = page_size();
    uintptr_t lo = (uintptr_t)addr / page * page, hi = ((uintptr_t)addr + bytes + page - 1) / page * page;
    size_t pages = (hi - lo) / page, resident = 0;
    unsigned char vec[256];
    for (size_t done = 0; done < pages;) {
        size_t n = pages - done < sizeof vec ? pages - done : sizeof vec;
        if (mincore((void *)(lo + done * page), n * page, vec) != 0) return 0;
        for (size_t i = 0; i < n; i++) resident += vec[i] & 1;
        done += n;
    }
    return resident * page;
}
