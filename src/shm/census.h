/* The node census: which processes share a node (MPI_COMM_TYPE_SHARED), a host, and which NUMA domain each is
 * bound to. These are facts about processes, not about communicators, so this process keeps what it has
 * surveyed, and a communicator whose processes were all surveyed gets its layout from the census with no
 * MPI_Comm_split_type and no communication at all.
 *
 * Why it matters: MPI_Comm_split_type, MPI_Comm_split and MPI_Comm_dup are blocking collectives, and a
 * blocking MPI call spins; with more ranks than cores each costs tens to hundreds of milliseconds (70 ms for a
 * split_type at 3 ranks on 2 cores, 500 ms at 8), which made every plan on a fresh communicator cost 0.2-0.6 s.
 *
 * Consistency (every rank of a communicator must reach the same decision, or some would call a collective the
 * others skip): a census of group S is recorded by every process of S when a layout over S is created, and a
 * record is dropped only when a census of a superset of S is recorded, which every process of S records too.
 * A process finds a census covering group C exactly when some layout over S containing C was created before,
 * and every process of C took part in that layout before this one (collective calls over communicators
 * sharing processes come in the same order on all of them, or the program deadlocks, as in MPI), so every rank
 * of C finds one or none alike, without a vote.
 *
 * The census of MPI_COMM_WORLD's group (in its order) also keeps, for the life of the process, its node
 * communicator and (made when first needed) its leader communicator: a communicator over the same processes
 * gets its own node and leader communicators by MPI_Comm_idup of those (nonblocking) instead of
 * MPI_Comm_split. They are templates only: nothing but MPI_Comm_idup is ever called on them, each idup happens
 * inside a layout's collective creation, in the order those come on every process, and they are freed at
 * MPI_Finalize. No communicator, window or segment is shared between the layouts of two communicators. */
#ifndef PC_CENSUS_H
#define PC_CENSUS_H

#include <mpi.h>
#include <stdbool.h>

struct pc_layout;

struct pc_census_member {
    int node;         /* node number within the census (numbered by first appearance) */
    int host;         /* host number within the census */
    int host_cores;   /* online CPUs of that host */
    int numa_domains; /* NUMA domains of its node as hwloc sees them (>= 1) */
    int numa_domain;  /* the domain its CPU binding lies in, -1 when the binding does not tell */
};

struct pc_census {
    MPI_Group group; /* the processes described, in the order of member[] */
    int size, nnodes;
    struct pc_census_member *member; /* [size] */
    int *node_count;                 /* [nnodes] processes of each node */
    bool world;                      /* group is MPI_COMM_WORLD's group, in its order */
    struct pc_census *next;
};

/* A census covering every process of group (size processes; ranks[r] = r); index[r] receives the census
 * position of the group's rank r. The world's census first when it covers. NULL when none does. Local. */
const struct pc_census *pc_census_find(MPI_Group group, int size, const int *ranks, int *index);

/* Surveys L->comm (collective: MPI_Comm_split_type and one MPI_Iallgather), records the census of group (the
 * group of L->comm) and fills index like pc_census_find. The node communicator made on the way becomes
 * L->node_comm, or the world's template when L->comm is over MPI_COMM_WORLD's group. */
int pc_census_take(struct pc_layout *L, MPI_Group group, int *index, const struct pc_census **out);

/* The world's node template (MPI_COMM_NULL when no census of the world was taken). */
MPI_Comm pc_census_node_template(void);
/* The world's leader template, made at the first call (collective over L->comm, which must be over
 * MPI_COMM_WORLD's group in its order). */
int pc_census_leader_template(struct pc_layout *L, MPI_Comm *out);

/* Censuses recorded and communicators held by the census (for tests: neither may grow with communicators
 * over processes already surveyed). */
void pc_census_counts(int *censuses, int *communicators);

#endif
