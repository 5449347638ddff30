/* Helpers for the MPI test programs: failure counting with rank-tagged messages, a verdict that rank 0
 * prints before MPI_Finalize, and a finalize watchdog.
 *
 * Why the watchdog: MPICH 4.0.2 with UCX 1.13 over UCX_TLS=tcp,self (the emulated multi-node set-up)
 * sometimes hangs inside MPI_Finalize after inter-clique traffic (reproduced without plancoll: an
 * MPI_Alltoall then MPI_Finalize hangs in about half the runs at 5 ranks on 2 cliques). The verdict is
 * computed and printed before finalize; run-mpi-test.sh judges by it and tolerates only a hang that starts
 * after a PASS verdict. */
#ifndef PC_TESTLIB_H
#define PC_TESTLIB_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "plancoll.h"

extern int tl_rank, tl_size;
extern long tl_failures, tl_checks;

/* MPI_Init, or MPI_Init_thread(MPI_THREAD_MULTIPLE) when PLANCOLL_PROGRESS_THREAD=1 is set. */
void tl_init(int *argc, char ***argv, const char *test_name);
/* Reduces failures over ranks; rank 0 prints "plancoll-test <name> P=<n>: PASS|FAIL (...)"; finalizes.
 * Returns the process exit code. */
int tl_finish(void);

void tl_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define TL_CHECK(cond, ...)                                                                      \
    do {                                                                                         \
        tl_checks++;                                                                             \
        if (!(cond)) tl_fail(__FILE__, __LINE__, __VA_ARGS__);                                   \
    } while (0)
/* A plancoll call that must succeed. */
#define TL_OK(call)                                                                              \
    do {                                                                                         \
        int tl_rc_ = (call);                                                                     \
        TL_CHECK(tl_rc_ == PLANCOLL_SUCCESS, "%s returned %d (%s): %s", #call, tl_rc_,           \
                 plancoll_strerror(tl_rc_), plancoll_error_detail());                            \
    } while (0)

/* Collectives for the tests themselves, nonblocking and yield-waited: a blocking MPI collective costs a
 * scheduler slice per call when ranks outnumber cores (about 100 ms at 7 ranks on 2 cores). */
int tl_allreduce(const void *in, void *out, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm);
int tl_allgather(const void *in, int n, MPI_Datatype t, void *out, MPI_Comm comm);
int tl_barrier(MPI_Comm comm);

/* Nodes as the tests expect plancoll to see them: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) (MPICH's cliques
 * included), each node further split into PLANCOLL_EMULATE_NODES blocks of its host's consecutive world ranks
 * when that is set (computed here independently of plancoll). Collective over comm; ranks ordered by key. */
int tl_split_node(MPI_Comm comm, int key, MPI_Comm *node);
/* The emulated node (block) of the rank at host_rank among host_size ranks, k blocks: the first host_size % k
 * blocks hold one rank more. */
int tl_emulated_node(int host_rank, int host_size, int k);
/* This rank's place among the world ranks of its host (by processor name), found at tl_init when
 * PLANCOLL_EMULATE_NODES is set (else 0 of 1). */
extern int tl_host_rank, tl_host_size;
/* Finds them now (collective over MPI_COMM_WORLD). */
void tl_find_host_position(void);

/* Names of the registered algorithms of a collective ("alltoall", ...); returns how many. */
int tl_algorithms(const char *collective, const char **names, int max);
/* (MPI's blocking forms, *.native_blocking, are left out where the ranks outnumber the host's cores: testlib.c.) */
/* Sets PLANCOLL_ALGORITHM (NULL unsets). */
void tl_force(const char *name);
/* Deterministic pseudo-random numbers shared by all ranks given the same seed. */
uint64_t tl_rand(uint64_t *state);

#endif
