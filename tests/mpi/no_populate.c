/* LD_PRELOAD shim for the shared-memory limit test: madvise(MADV_POPULATE_WRITE) fails with EINVAL, as on a
 * kernel before Linux 5.14, so that plancoll reserves shared memory by touching it under its SIGBUS guard (with
 * MPICH's and UCX's own SIGBUS handlers installed).  Every other advice goes to the C library. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int madvise(void *addr, size_t length, int advice)
{
    static int (*real)(void *, size_t, int);
    if (advice == MADV_POPULATE_WRITE) {
        errno = EINVAL;
        return -1;
    }
    if (!real) real = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "madvise");
    return real(addr, length, advice);
}
