/* Reserve, agree, report (nomem.h). */
#include "shm/nomem.h"

#include "base/errors.h"
#include "shm/layout.h"
#include "shm/requests.h"
#include "shm/reserve.h"

int pc_shm_nomem(const char *what, bool mine, uint64_t bytes, int rank)
{
    if (mine)
        return pc_error(PLANCOLL_ERR_NOMEM, "%s: no shared memory for %llu bytes (this node's /dev/shm is full or too "
                        "small)", what, (unsigned long long)bytes);
    if (rank < 0)
        return pc_error(PLANCOLL_ERR_NOMEM, "%s: no shared memory for %llu bytes on another rank's node (its /dev/shm "
                        "is full or too small)", what, (unsigned long long)bytes);
    return pc_error(PLANCOLL_ERR_NOMEM, "%s: no shared memory for %llu bytes on rank %d's node (its /dev/shm is full "
                    "or too small)", what, (unsigned long long)bytes, rank);
}

int pc_shm_agree_reserved(const struct pc_layout *L, int err, uint64_t failed_bytes, const char *what)
{
    /* the largest failed reservation, and the highest rank that had one */
    uint64_t v[2] = {failed_bytes, failed_bytes ? (uint64_t)L->rank + 1 : 0};
    err = pc_agree_failure_max(L, err, v, 2, NULL, "%s: another rank failed (see its plancoll_error_detail)", what);
    if (err || !v[0]) return err;
    return pc_shm_nomem(what, failed_bytes != 0, failed_bytes ? failed_bytes : v[0], (int)v[1] - 1);
}

int pc_shm_reserve_agreed(const struct pc_layout *L, int err, void *addr, size_t bytes, const char *what)
{
    uint64_t failed = !err && bytes && pc_shm_reserve(addr, bytes) != 0 ? (uint64_t)bytes : 0;
    return pc_shm_agree_reserved(L, err, failed, what);
}
