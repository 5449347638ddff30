/* Progress of the layer's started plans while the application blocks in point-to-point calls (issue 18).
 *
 * MPI requires a started persistent collective to progress while its process is blocked in any MPI call. The
 * layer runs the persistent collectives it plans as started plancoll plans, which move only inside plancoll calls
 * (and the layer's MPI_Wait* / MPI_Test* of persistent.c, which advance them). Without this file a legal program
 * such as
 *     rank 0: MPI_Start(coll); MPI_Wait(coll); MPI_Send(to 1)
 *     rank 1: MPI_Start(coll); MPI_Recv(from 0); MPI_Wait(coll)
 * deadlocks under the layer: rank 1 blocks in PMPI_Recv while its plan stands still, so rank 0 never leaves its wait.
 *
 * While at least one of the layer's plans is active in the process (pcd_plans_active), each blocking call below
 * is run as its nonblocking form (MPI_Irecv, MPI_Isend, MPI_Iprobe, ...) and a loop that tests it and advances the
 * plans, yielding when nothing moved (more ranks than cores is common); once no plan is active any more, the rest
 * of the wait is MPI's own blocking wait. Blocking and nonblocking point-to-point calls match each other, and the
 * nonblocking forms give the same statuses and errors, so the choice is each process's own. Otherwise (the common
 * case), a call is one test and the PMPI call. Calls made from inside plancoll go straight to PMPI.
 *
 * Blocking COLLECTIVES (MPI_Barrier, MPI_Bcast, ...) are not converted, on purpose: a nonblocking collective does
 * not match a blocking one (MPI-4.0 6.12), and whether a plan is active is one process's state, not agreed over the
 * collective's communicator. Under MPICH 4.0.2 a rank in MPI_Ibarrier and one in MPI_Barrier deadlock. The guard
 * thread (guard.c) moves the plans there instead; docs/dropin.md, "Progress in blocking calls", has the whole
 * argument. MPI_Bsend is local: not converted. */
#include "dropin.h"

#include <sched.h>
#include <stdlib.h>

/* Whether this call should advance the layer's plans while it waits. */
static inline bool converting(void) { return __builtin_expect(pcd_plans_active(), 0) && pcd_inside == 0; }

/* Completes *r (a request of the application's call, made here) while advancing the layer's plans. */
static int progress_wait(MPI_Request *r, MPI_Status *status) {
    for (;;) {
        int flag = 0;
        int rc = PMPI_Test(r, &flag, status);
        if (rc != MPI_SUCCESS || flag) return rc;
        if (!pcd_plans_active()) return PMPI_Wait(r, status); /* nothing of the layer left to move */
        if (!pcd_advance_plans()) sched_yield();
    }
}

/* ---- Receives ------------------------------------------------------------------------------------ */

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status) {
    if (!converting()) return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
    MPI_Request r;
    int rc = PMPI_Irecv(buf, count, datatype, source, tag, comm, &r);
    return rc == MPI_SUCCESS ? progress_wait(&r, status) : rc;
}

#if PC_HAVE_MPI_LARGE_COUNT /* the MPI-4 large-count forms, where the MPI has them */
int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
               MPI_Status *status) {
    if (!converting()) return PMPI_Recv_c(buf, count, datatype, source, tag, comm, status);
    MPI_Request r;
    int rc = PMPI_Irecv_c(buf, count, datatype, source, tag, comm, &r);
    return rc == MPI_SUCCESS ? progress_wait(&r, status) : rc;
}
#endif

int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status) {
    if (!converting()) return PMPI_Mrecv(buf, count, datatype, message, status);
    MPI_Request r;
    int rc = PMPI_Imrecv(buf, count, datatype, message, &r);
    return rc == MPI_SUCCESS ? progress_wait(&r, status) : rc;
}

#if PC_HAVE_MPI_LARGE_COUNT /* the MPI-4 large-count forms, where the MPI has them */
int MPI_Mrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status) {
    if (!converting()) return PMPI_Mrecv_c(buf, count, datatype, message, status);
    MPI_Request r;
    int rc = PMPI_Imrecv_c(buf, count, datatype, message, &r);
    return rc == MPI_SUCCESS ? progress_wait(&r, status) : rc;
}
#endif

/* ---- Probes: MPI_Iprobe / MPI_Improbe until a message is there ------------------------------------ */

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
    if (!converting()) return PMPI_Probe(source, tag, comm, status);
    for (;;) {
        int flag = 0;
        int rc = PMPI_Iprobe(source, tag, comm, &flag, status);
        if (rc != MPI_SUCCESS || flag) return rc;
        if (!pcd_plans_active()) return PMPI_Probe(source, tag, comm, status);
        if (!pcd_advance_plans()) sched_yield();
    }
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) {
    if (!converting()) return PMPI_Mprobe(source, tag, comm, message, status);
    for (;;) {
        int flag = 0;
        int rc = PMPI_Improbe(source, tag, comm, &flag, message, status);
        if (rc != MPI_SUCCESS || flag) return rc;
        if (!pcd_plans_active()) return PMPI_Mprobe(source, tag, comm, message, status);
        if (!pcd_advance_plans()) sched_yield();
    }
}

/* ---- Sends (standard, synchronous, ready; buffered ones are local) ---------------------------------- */

#define SEND_FORMS(NAME, INAME, COUNT_T)                                                                          \
    int NAME(const void *buf, COUNT_T count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {          \
        if (!converting()) return P##NAME(buf, count, datatype, dest, tag, comm);                                 \
        MPI_Request r;                                                                                            \
        int rc = P##INAME(buf, count, datatype, dest, tag, comm, &r);                                             \
        return rc == MPI_SUCCESS ? progress_wait(&r, MPI_STATUS_IGNORE) : rc;                                     \
    }

SEND_FORMS(MPI_Send, MPI_Isend, int)
SEND_FORMS(MPI_Ssend, MPI_Issend, int)
SEND_FORMS(MPI_Rsend, MPI_Irsend, int)
#if PC_HAVE_MPI_LARGE_COUNT
SEND_FORMS(MPI_Send_c, MPI_Isend_c, MPI_Count)
SEND_FORMS(MPI_Ssend_c, MPI_Issend_c, MPI_Count)
SEND_FORMS(MPI_Rsend_c, MPI_Irsend_c, MPI_Count)
#endif
#undef SEND_FORMS

/* ---- Send-receive: an MPI_Irecv and an MPI_Isend, waited together ------------------------------------ *
 * Not MPI-4.0's MPI_Isendrecv: under MPICH 4.0.2 its request's status is not the receive's (the test program saw
 * the source, tag and count of other messages of the process). */

/* Completes r[0] (the receive) and r[1] (the send) while advancing the layer's plans; *status is the receive's,
 * its MPI_ERROR field left as it was (a single-completion call does not set it); the code is the first error. */
static int progress_wait_pair(MPI_Request r[2], MPI_Status *status) {
    MPI_Status sts[2];
    int error_field = status != MPI_STATUS_IGNORE ? status->MPI_ERROR : MPI_SUCCESS;
    int rc;
    for (;;) {
        int flag = 0;
        rc = PMPI_Testall(2, r, &flag, sts);
        if (rc != MPI_SUCCESS || flag) break;
        if (!pcd_plans_active()) {
            rc = PMPI_Waitall(2, r, sts);
            break;
        }
        if (!pcd_advance_plans()) sched_yield();
    }
    if (rc == MPI_ERR_IN_STATUS) rc = sts[0].MPI_ERROR != MPI_SUCCESS ? sts[0].MPI_ERROR : sts[1].MPI_ERROR;
    if (status != MPI_STATUS_IGNORE) {
        *status = sts[0];
        status->MPI_ERROR = error_field;
    }
    return rc;
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
    if (!converting())
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                             recvtag, comm, status);
    MPI_Request r[2];
    int rc = PMPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &r[0]);
    if (rc != MPI_SUCCESS) return rc;
    if ((rc = PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &r[1])) != MPI_SUCCESS) {
        PMPI_Cancel(&r[0]);
        PMPI_Request_free(&r[0]);
        return rc;
    }
    return progress_wait_pair(r, status);
}

#if PC_HAVE_MPI_LARGE_COUNT
int MPI_Sendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                   void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                   MPI_Status *status) {
    if (!converting())
        return PMPI_Sendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                               recvtag, comm, status);
    MPI_Request r[2];
    int rc = PMPI_Irecv_c(recvbuf, recvcount, recvtype, source, recvtag, comm, &r[0]);
    if (rc != MPI_SUCCESS) return rc;
    if ((rc = PMPI_Isend_c(sendbuf, sendcount, sendtype, dest, sendtag, comm, &r[1])) != MPI_SUCCESS) {
        PMPI_Cancel(&r[0]);
        PMPI_Request_free(&r[0]);
        return rc;
    }
    return progress_wait_pair(r, status);
}
#endif

/* The outgoing message is packed into a buffer of its own (as MPI does internally), sent as MPI_PACKED (which
 * matches any receive of the same type signature), and the receive goes into the application's buffer. Without
 * memory for the copy, or for counts the packing interface cannot take, the call goes to MPI unchanged (and does
 * not advance the plans). */
static int sendrecv_replace(void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag, int source,
                            int recvtag, MPI_Comm comm, MPI_Status *status, bool large) {
    MPI_Count bytes = 0, position = 0;
    void *copy = NULL;
    if (count < 0 || pcd_pack_size(count, datatype, comm, &bytes) != MPI_SUCCESS ||
        (copy = malloc(bytes > 0 ? (size_t)bytes : 1)) == NULL ||
        pcd_pack(buf, count, datatype, copy, bytes, &position, comm) != MPI_SUCCESS) {
        free(copy);
#if PC_HAVE_MPI_LARGE_COUNT
        if (large) return PMPI_Sendrecv_replace_c(buf, count, datatype, dest, sendtag, source, recvtag, comm, status);
#endif
        (void)large;
        return PMPI_Sendrecv_replace(buf, (int)count, datatype, dest, sendtag, source, recvtag, comm, status);
    }
    MPI_Request r[2];
    int rc = pcd_irecv(buf, count, datatype, source, recvtag, comm, &r[0]);
    if (rc == MPI_SUCCESS && (rc = pcd_isend(copy, position, MPI_PACKED, dest, sendtag, comm, &r[1])) != MPI_SUCCESS) {
        PMPI_Cancel(&r[0]);
        PMPI_Request_free(&r[0]);
    }
    if (rc == MPI_SUCCESS) rc = progress_wait_pair(r, status);
    free(copy);
    return rc;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source,
                         int recvtag, MPI_Comm comm, MPI_Status *status) {
    if (!converting())
        return PMPI_Sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, comm, status);
    return sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, comm, status, false);
}

#if PC_HAVE_MPI_LARGE_COUNT
int MPI_Sendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag, int source,
                           int recvtag, MPI_Comm comm, MPI_Status *status) {
    if (!converting())
        return PMPI_Sendrecv_replace_c(buf, count, datatype, dest, sendtag, source, recvtag, comm, status);
    return sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, comm, status, true);
}
#endif
