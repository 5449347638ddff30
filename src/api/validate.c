#include "api/validate.h"

#include <stdlib.h>
#include <string.h>

#include "exec/reduce.h"
#include "base/sizes.h"

/* Bytes of count elements of t, or -1 when they reach 2^60 (sizes.h). */
static int64_t data_bytes(const struct pc_typeinfo *t, int count)
{
    int64_t bytes;
    return pc_bytes_mul(count, t->size, &bytes) ? bytes : -1;
}

/* Whether elements [first, first + count) of t lie within 2^60 bytes of the buffer's address. */
static bool span_fits(const struct pc_typeinfo *t, int64_t first, int64_t count)
{
    int64_t lo, hi;
    return pc_type_span(t, first, count, &lo, &hi);
}

int pc_api_entry(MPI_Comm comm)
{
    pc_clear_error();
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return pc_error(PLANCOLL_ERR_NOT_INITIALIZED, "call plancoll between MPI_Init and MPI_Finalize");
    return pc_check_comm(comm);
}

int pc_check_comm(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return pc_error(PLANCOLL_ERR_COMM, "the communicator is MPI_COMM_NULL");
    /* A handle that names no communicator (a copy of one the caller freed) has no error handler of its own: MPICH
     * raises the error on MPI_COMM_WORLD's handler, MPI-4 says MPI_COMM_SELF's, and either is MPI_ERRORS_ARE_FATAL
     * by default. Both return codes for this one call, then get the caller's handlers back, so an invalid handle
     * is PLANCOLL_ERR_COMM instead of an abort. (A handle MPI has already reused for a new communicator names
     * that one: nothing can tell it from a valid argument.) */
    MPI_Errhandler world_eh = MPI_ERRHANDLER_NULL, self_eh = MPI_ERRHANDLER_NULL;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_eh);
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &self_eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int inter = 0;
    int rc = MPI_Comm_test_inter(comm, &inter);
    if (world_eh != MPI_ERRHANDLER_NULL) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, world_eh);
        MPI_Errhandler_free(&world_eh);
    }
    if (self_eh != MPI_ERRHANDLER_NULL) {
        MPI_Comm_set_errhandler(MPI_COMM_SELF, self_eh);
        MPI_Errhandler_free(&self_eh);
    }
    if (rc != MPI_SUCCESS)
        return pc_error(PLANCOLL_ERR_COMM, "the communicator handle is not a valid communicator (freed already?)");
    if (inter) return pc_error(PLANCOLL_ERR_INTERCOMM, "an intercommunicator was passed; plancoll needs an intracommunicator");
    return PLANCOLL_SUCCESS;
}

static int check_type(MPI_Datatype t, const char *which)
{
    if (t == MPI_DATATYPE_NULL) return pc_error(PLANCOLL_ERR_DATATYPE, "%s is MPI_DATATYPE_NULL", which);
    return PLANCOLL_SUCCESS;
}

/* In place the send side is the receive side: share the plan's own receive type (never the caller's handle,
 * which may be freed after planning), without taking ownership twice. */
static int init_send_type(struct plancoll_plan_s *p, MPI_Datatype sendtype)
{
    if (!p->in_place) return pc_typeinfo_init(&p->stype, sendtype, true);
    p->stype = p->rtype;
    p->stype.owned = false;
    return PLANCOLL_SUCCESS;
}

int pc_fill_alltoall(struct plancoll_plan_s *p, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     void *recvbuf, int recvcount, MPI_Datatype recvtype)
{
    p->in_place = sendbuf == MPI_IN_PLACE;
    if (recvbuf == MPI_IN_PLACE) return pc_error(PLANCOLL_ERR_IN_PLACE, "recvbuf cannot be MPI_IN_PLACE");
    if (recvcount < 0) return pc_error(PLANCOLL_ERR_COUNT, "recvcount is %d", recvcount);
    int err = check_type(recvtype, "recvtype");
    if (err) return err;
    if (p->in_place) {
        sendcount = recvcount;
        sendtype = recvtype;
    } else {
        if (sendcount < 0) return pc_error(PLANCOLL_ERR_COUNT, "sendcount is %d", sendcount);
        if ((err = check_type(sendtype, "sendtype"))) return err;
    }
    if ((err = pc_typeinfo_init(&p->rtype, recvtype, true))) return err;
    if ((err = init_send_type(p, sendtype))) return err;
    int64_t sbytes = data_bytes(&p->stype, sendcount), rbytes = data_bytes(&p->rtype, recvcount);
    if (sbytes < 0 || rbytes < 0)
        return pc_error(PLANCOLL_ERR_OVERFLOW, "a %s block of %d elements of %lld bytes reaches 2^60 bytes",
                        sbytes < 0 ? "send" : "receive", sbytes < 0 ? sendcount : recvcount,
                        (long long)(sbytes < 0 ? p->stype.size : p->rtype.size));
    if (sbytes != rbytes)
        return pc_error(PLANCOLL_ERR_TYPE_MISMATCH, "a send block is %lld bytes but a receive block is %lld bytes",
                        (long long)sbytes, (long long)rbytes);
    /* P blocks side by side: element P count - 1 is the farthest from the buffer's address */
    if (!span_fits(&p->rtype, 0, (int64_t)p->size * recvcount))
        return pc_error(PLANCOLL_ERR_OVERFLOW, "the receive buffer (%d blocks of %d elements of extent %lld) reaches 2^60 bytes",
                        p->size, recvcount, (long long)p->rtype.extent);
    if (!p->in_place && !span_fits(&p->stype, 0, (int64_t)p->size * sendcount))
        return pc_error(PLANCOLL_ERR_OVERFLOW, "the send buffer (%d blocks of %d elements of extent %lld) reaches 2^60 bytes",
                        p->size, sendcount, (long long)p->stype.extent);
    if (rbytes > 0 && !recvbuf) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "recvbuf is NULL with recvcount %d", recvcount);
    if (sbytes > 0 && !sendbuf) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "sendbuf is NULL with sendcount %d", sendcount);
    p->sendbuf = sendbuf;
    p->recvbuf = recvbuf;
    p->sendcount = sendcount;
    p->recvcount = recvcount;
    p->prob.block_bytes = (uint64_t)rbytes;
    p->prob.in_place = p->in_place;
    p->prob.contiguous = p->stype.contiguous && p->rtype.contiguous;
    return PLANCOLL_SUCCESS;
}

static int check_vector(const int *counts, const int *displs, int n, const char *cname, const char *dname)
{
    if (!counts) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "%s is NULL", cname);
    if (!displs) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "%s is NULL", dname);
    for (int i = 0; i < n; i++) {
        if (counts[i] < 0) return pc_error(PLANCOLL_ERR_COUNT, "%s[%d] is %d", cname, i, counts[i]);
        if (displs[i] < 0) return pc_error(PLANCOLL_ERR_DISPL, "%s[%d] is %d", dname, i, displs[i]);
    }
    return PLANCOLL_SUCCESS;
}

static int *copy_ints(const int *src, int n)
{
    int *dst = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (dst) memcpy(dst, src, sizeof(int) * (size_t)n);
    return dst;
}

int pc_fill_alltoallv(struct plancoll_plan_s *p, const void *sendbuf, const int sendcounts[], const int sdispls[],
                      MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                      MPI_Datatype recvtype)
{
    const int P = p->size;
    p->in_place = sendbuf == MPI_IN_PLACE;
    if (recvbuf == MPI_IN_PLACE) return pc_error(PLANCOLL_ERR_IN_PLACE, "recvbuf cannot be MPI_IN_PLACE");
    int err = check_vector(recvcounts, rdispls, P, "recvcounts", "rdispls");
    if (!err) err = check_type(recvtype, "recvtype");
    if (err) return err;
    if (p->in_place) {
        sendcounts = recvcounts;
        sdispls = rdispls;
        sendtype = recvtype;
    } else {
        if ((err = check_vector(sendcounts, sdispls, P, "sendcounts", "sdispls"))) return err;
        if ((err = check_type(sendtype, "sendtype"))) return err;
    }
    if ((err = pc_typeinfo_init(&p->rtype, recvtype, true))) return err;
    if ((err = init_send_type(p, sendtype))) return err;
    int64_t stotal = 0, rtotal = 0, maxblock = 0;
    int nonzero = 0;
    bool one_way = false;
    for (int i = 0; i < P; i++) {
        int64_t sb = data_bytes(&p->stype, sendcounts[i]), rb = data_bytes(&p->rtype, recvcounts[i]);
        if (sb < 0 || rb < 0 || !pc_bytes_add(&stotal, sb) || !pc_bytes_add(&rtotal, rb))
            return pc_error(PLANCOLL_ERR_OVERFLOW, "the exchange would move 2^60 bytes or more (block %d)", i);
        /* displacement x extent: where each block lies, checked before any algorithm computes it */
        if (!span_fits(&p->rtype, rdispls[i], recvcounts[i]))
            return pc_error(PLANCOLL_ERR_OVERFLOW, "receive block %d (displacement %d, %d elements of extent %lld) reaches 2^60 bytes",
                            i, rdispls[i], recvcounts[i], (long long)p->rtype.extent);
        if (!p->in_place && !span_fits(&p->stype, sdispls[i], sendcounts[i]))
            return pc_error(PLANCOLL_ERR_OVERFLOW, "send block %d (displacement %d, %d elements of extent %lld) reaches 2^60 bytes",
                            i, sdispls[i], sendcounts[i], (long long)p->stype.extent);
        if (sb > maxblock) maxblock = sb;
        if (rb > maxblock) maxblock = rb;
        if (sb > 0 && i != p->rank) nonzero++;
        if (sb > 0 && rb == 0 && i != p->rank) one_way = true;
    }
    if (rtotal > 0 && !recvbuf) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "recvbuf is NULL but recvcounts are not all 0");
    if (!p->in_place && stotal > 0 && !sendbuf)
        return pc_error(PLANCOLL_ERR_NULL_BUFFER, "sendbuf is NULL but sendcounts are not all 0");
    p->sendcounts = copy_ints(sendcounts, P);
    p->sdispls = copy_ints(sdispls, P);
    p->recvcounts = copy_ints(recvcounts, P);
    p->rdispls = copy_ints(rdispls, P);
    if (!p->sendcounts || !p->sdispls || !p->recvcounts || !p->rdispls)
        return pc_error(PLANCOLL_ERR_NOMEM, "copies of the count arrays");
    p->sendbuf = sendbuf;
    p->recvbuf = recvbuf;
    p->prob.send_total_bytes = (uint64_t)stotal;
    p->prob.recv_total_bytes = (uint64_t)rtotal;
    p->prob.max_block_bytes = (uint64_t)maxblock;
    p->prob.nonzero_sends = nonzero;
    p->prob.one_way = one_way; /* this rank's; plan creation agrees the maximum */
    p->prob.in_place = p->in_place;
    p->prob.contiguous = p->stype.contiguous && p->rtype.contiguous;
    return PLANCOLL_SUCCESS;
}

int pc_fill_allreduce(struct plancoll_plan_s *p, const void *sendbuf, void *recvbuf, int count,
                      MPI_Datatype datatype, MPI_Op op)
{
    p->in_place = sendbuf == MPI_IN_PLACE;
    if (recvbuf == MPI_IN_PLACE) return pc_error(PLANCOLL_ERR_IN_PLACE, "recvbuf cannot be MPI_IN_PLACE");
    if (count < 0) return pc_error(PLANCOLL_ERR_COUNT, "count is %d", count);
    int err = check_type(datatype, "datatype");
    if (err) return err;
    bool commutative = true;
    if ((err = pc_reduction_init(&p->red, op, datatype, &commutative))) return err;
    if ((err = pc_typeinfo_init(&p->rtype, datatype, true))) return err;
    p->red.type = p->rtype.type;
    int64_t bytes = data_bytes(&p->rtype, count);
    if (bytes < 0 || !span_fits(&p->rtype, 0, count))
        return pc_error(PLANCOLL_ERR_OVERFLOW, "the vector (%d elements of size %lld, extent %lld) reaches 2^60 bytes",
                        count, (long long)p->rtype.size, (long long)p->rtype.extent);
    if (bytes > 0 && !recvbuf) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "recvbuf is NULL with count %d", count);
    if (bytes > 0 && !sendbuf) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "sendbuf is NULL with count %d", count);
    if (bytes > 0 && sendbuf == recvbuf)
        return pc_error(PLANCOLL_ERR_IN_PLACE, "sendbuf and recvbuf are the same buffer: pass MPI_IN_PLACE instead");
    p->sendbuf = sendbuf;
    p->recvbuf = recvbuf;
    p->count = count;
    p->prob.count = count;
    p->prob.elem_bytes = (uint64_t)p->rtype.size;
    p->prob.type_id = pc_predefined_type_id(datatype);
    p->prob.op_id = pc_predefined_op_id(op);
    p->prob.commutative = commutative;
    if ((err = pc_reduction_mpi_differs(&p->red, &p->prob.mpi_op_differs))) return err;
    p->prob.in_place = p->in_place;
    p->prob.contiguous = p->rtype.contiguous;
    return PLANCOLL_SUCCESS;
}
