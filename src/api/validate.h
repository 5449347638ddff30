/* Local argument checks and the filling of a plan's problem from the caller's arguments. Each returns a
 * plancoll code with the detail set; nothing here communicates. */
#ifndef PC_VALIDATE_H
#define PC_VALIDATE_H

#include "exec/plan.h"

/* The check every public function taking a communicator starts with: clears the last error's detail, then
 * PLANCOLL_ERR_NOT_INITIALIZED outside MPI_Init..MPI_Finalize, PLANCOLL_ERR_COMM / _INTERCOMM for comm. */
int pc_api_entry(MPI_Comm comm);
int pc_check_comm(MPI_Comm comm);
/* (pc_check_flags is in exec/plan.h: every kind of plan checks its flags.) */
int pc_fill_alltoall(struct plancoll_plan_s *p, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     void *recvbuf, int recvcount, MPI_Datatype recvtype);
int pc_fill_alltoallv(struct plancoll_plan_s *p, const void *sendbuf, const int sendcounts[], const int sdispls[],
                      MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                      MPI_Datatype recvtype);
int pc_fill_allreduce(struct plancoll_plan_s *p, const void *sendbuf, void *recvbuf, int count,
                      MPI_Datatype datatype, MPI_Op op);

#endif
