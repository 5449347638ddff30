/* Reserve, agree, report (nomem.h). */
#include "shm/nomem.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include "base/errors.h"
#include "shm/layout.h"
#include "shm/mpi_error.h"
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

int pc_shm_window_fits(MPI_Comm node_comm, uint64_t part_bytes, const char *what)
{
    int node_rank = 0, node_size = 1;
    MPI_Comm_rank(node_comm, &node_rank);
    MPI_Comm_size(node_comm, &node_size);
    /* node rank 0's view alone, so that every node rank decides alike (another process may be filling /dev/shm) */
    uint64_t mine[2] = {part_bytes, 0}, node[2];
    struct statvfs fs;
    if (node_rank == 0) mine[1] = statvfs("/dev/shm", &fs) == 0 ? (uint64_t)fs.f_bavail * fs.f_frsize : UINT64_MAX;
    PC_MPI_CHECK(MPI_Allreduce(mine, node, 2, MPI_UINT64_T, MPI_SUM, node_comm));
    long page = sysconf(_SC_PAGESIZE);
    uint64_t margin = (uint64_t)(node_size + 16) * (uint64_t)(page > 0 ? page : 4096);
    if (node[1] >= margin && node[0] <= node[1] - margin) return PLANCOLL_SUCCESS;
    return pc_shm_nomem(what, true, node[0], -1);
}
