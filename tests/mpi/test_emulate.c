/* PLANCOLL_EMULATE_NODES=K: the layout plancoll sees (nodes, node ranks, node communicator) on MPI_COMM_WORLD, a
 * reordered communicator, a sub-communicator and a duplicate, against blocks of each host's consecutive world
 * ranks computed here (testlib: tl_emulated_node, host position from processor names). Run under MPICH's
 * MPIR_CVAR_NUM_CLIQUES=K with MPIR_CVAR_CLIQUES_BY_BLOCK=1 and no emulation, the same expectation is MPICH's
 * clique layout: the two runs together show that the emulation and MPICH's cliques give the same layouts.
 *
 *   test_emulate                      layouts; the first plan is on a reordered communicator (the launcher's
 *                                     host positions)
 *   test_emulate --no-launcher-env    the launcher's variables removed: a first plan on a sub-communicator must
 *                                     fail (PLANCOLL_ERR_ENV) on each of its ranks, then MPI_COMM_WORLD's survey
 *                                     counts the positions itself and every layout is as expected
 *   test_emulate --bad TEXT           PLANCOLL_EMULATE_NODES is set (by the caller) to a bad value: every rank's
 *                                     plan fails with PLANCOLL_ERR_ENV, a detail naming the variable and holding
 *                                     TEXT, the receive buffer untouched; twice
 *   test_emulate --differ TEXT        the same with the variable unset on rank 0 and 2 on the others */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/layout.h"
#include "testlib.h"

static int expected_k;   /* blocks per host expected (1: none) */
static int *key_of_world; /* [world rank] the expected node: host's first world rank * tl_size + block */

static void expectation(void)
{
    const char *emulate = getenv("PLANCOLL_EMULATE_NODES"), *cliques = getenv("MPIR_CVAR_NUM_CLIQUES"),
               *by_block = getenv("MPIR_CVAR_CLIQUES_BY_BLOCK");
    expected_k = 1;
    if (emulate && *emulate) expected_k = atoi(emulate);
    else if (cliques && atoi(cliques) > 1 && by_block && atoi(by_block) == 1) expected_k = atoi(cliques);
    tl_find_host_position();
    int host_first = tl_rank - tl_host_rank; /* launchers place a host's ranks consecutively here (one host) */
    int mine = host_first * tl_size + tl_emulated_node(tl_host_rank, tl_host_size, expected_k);
    key_of_world = malloc(sizeof(int) * (size_t)tl_size);
    tl_allgather(&mine, 1, MPI_INT, key_of_world, MPI_COMM_WORLD);
}

/* comm's layout against the expectation: nodes numbered by their lowest rank of comm, node ranks in comm order, the
 * node communicator holding exactly the node's ranks in that order. */
static void check_layout(MPI_Comm comm, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Group group, world;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int *ranks = malloc(sizeof(int) * (size_t)size), *wr = malloc(sizeof(int) * (size_t)size);
    int *node = malloc(sizeof(int) * (size_t)size), *local = malloc(sizeof(int) * (size_t)size);
    int *first_key = malloc(sizeof(int) * (size_t)size), *count = calloc((size_t)size, sizeof(int));
    for (int r = 0; r < size; r++) ranks[r] = r;
    MPI_Group_translate_ranks(group, size, ranks, world, wr);
    int nnodes = 0;
    for (int r = 0; r < size; r++) {
        int k = key_of_world[wr[r]], n = 0;
        while (n < nnodes && first_key[n] != k) n++;
        if (n == nnodes) first_key[nnodes++] = k;
        node[r] = n;
        local[r] = count[n]++;
    }
    struct pc_layout *L = NULL;
    TL_CHECK(pc_layout_get(comm, &L) == PLANCOLL_SUCCESS && L, "%s: pc_layout_get: %s", what, plancoll_error_detail());
    if (L) {
        TL_CHECK(L->nnodes == nnodes, "%s: %d nodes, expected %d", what, L->nnodes, nnodes);
        for (int r = 0; r < size && L->nnodes == nnodes; r++)
            TL_CHECK(L->node_of[r] == node[r] && L->local_rank_of[r] == local[r],
                     "%s: rank %d (world %d) on node %d as node rank %d, expected node %d rank %d", what, r, wr[r],
                     L->node_of[r], L->local_rank_of[r], node[r], local[r]);
        TL_CHECK(L->node_size == count[node[rank]] && L->node_rank == local[rank], "%s: node size/rank %d/%d, expected %d/%d",
                 what, L->node_size, L->node_rank, count[node[rank]], local[rank]);
        TL_CHECK(pc_layout_comms(L) == PLANCOLL_SUCCESS, "%s: pc_layout_comms: %s", what, plancoll_error_detail());
        int nsize = 0;
        MPI_Comm_size(L->node_comm, &nsize);
        TL_CHECK(nsize == count[node[rank]], "%s: node communicator of %d ranks, expected %d", what, nsize, count[node[rank]]);
        if (nsize == count[node[rank]]) {
            MPI_Group ng;
            MPI_Comm_group(L->node_comm, &ng);
            int *nr = malloc(sizeof(int) * (size_t)nsize), *cr = malloc(sizeof(int) * (size_t)nsize);
            for (int i = 0; i < nsize; i++) nr[i] = i;
            MPI_Group_translate_ranks(ng, nsize, nr, group, cr);
            for (int i = 0, j = 0; i < size; i++)
                if (node[i] == node[rank]) {
                    TL_CHECK(cr[j] == i, "%s: node communicator rank %d is rank %d, expected %d", what, j, cr[j], i);
                    j++;
                }
            free(nr);
            free(cr);
            MPI_Group_free(&ng);
        }
        pc_layout_release(L);
    }
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    free(ranks);
    free(wr);
    free(node);
    free(local);
    free(first_key);
    free(count);
}

/* A plan on comm (which makes its layout), executed once and checked: the emulated nodes carry real data. */
static int plan_and_run(MPI_Comm comm, const char *what, bool must_succeed)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *send = malloc(sizeof(int) * 2 * (size_t)size), *recv = malloc(sizeof(int) * 2 * (size_t)size);
    for (int i = 0; i < 2 * size; i++) {
        send[i] = rank * 1000 + i;
        recv[i] = -7;
    }
    plancoll_plan p = NULL;
    int rc = plancoll_plan_alltoall(send, 2, MPI_INT, recv, 2, MPI_INT, comm, PLANCOLL_ESTIMATE, &p);
    if (must_succeed) TL_CHECK(rc == PLANCOLL_SUCCESS, "%s: plan: %s: %s", what, plancoll_strerror(rc), plancoll_error_detail());
    if (rc == PLANCOLL_SUCCESS) {
        TL_OK(plancoll_execute(p));
        for (int s = 0; s < size; s++)
            for (int j = 0; j < 2; j++)
                TL_CHECK(recv[2 * s + j] == s * 1000 + 2 * rank + j, "%s: from rank %d element %d: %d", what, s, j,
                         recv[2 * s + j]);
        TL_OK(plancoll_destroy_plan(&p));
    } else {
        TL_CHECK(p == NULL, "%s: a failed plan left a handle", what);
        for (int i = 0; i < 2 * size; i++) TL_CHECK(recv[i] == -7, "%s: a failed plan wrote recv[%d]", what, i);
    }
    free(send);
    free(recv);
    return rc;
}

static void layouts(bool no_launcher_env)
{
    expectation();
    /* a reordered communicator (ranks reversed), its odd ranks, and a duplicate */
    MPI_Comm reversed, odd, dup;
    MPI_Comm_split(MPI_COMM_WORLD, 0, tl_size - 1 - tl_rank, &reversed);
    MPI_Comm_split(MPI_COMM_WORLD, tl_rank % 2, tl_rank, &odd);
    if (no_launcher_env) {
        unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
        unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        unsetenv("MPI_LOCALRANKID");
        unsetenv("MPI_LOCALNRANKS");
        /* surveyed first, a sub-communicator cannot know where its ranks sit among their host's world ranks */
        int rc = plan_and_run(odd, "odd ranks without the launcher's positions", false);
        TL_CHECK(rc == PLANCOLL_ERR_ENV && strstr(plancoll_error_detail(), "PLANCOLL_EMULATE_NODES"),
                 "a first plan on a sub-communicator without the launcher's positions: %d (%s), expected PLANCOLL_ERR_ENV", rc,
                 plancoll_error_detail());
        plan_and_run(MPI_COMM_WORLD, "MPI_COMM_WORLD", true);
        check_layout(MPI_COMM_WORLD, "MPI_COMM_WORLD");
        plan_and_run(reversed, "reversed", true);
    } else {
        plan_and_run(reversed, "reversed", true);
        plan_and_run(MPI_COMM_WORLD, "MPI_COMM_WORLD", true);
        check_layout(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    }
    check_layout(reversed, "reversed");
    plan_and_run(odd, "odd/even ranks", true);
    check_layout(odd, "odd/even ranks");
    MPI_Comm_dup(reversed, &dup);
    plan_and_run(dup, "dup of reversed", true);
    check_layout(dup, "dup of reversed");
    MPI_Comm_free(&dup);
    MPI_Comm_free(&odd);
    MPI_Comm_free(&reversed);
    free(key_of_world);
}

/* Every rank's plan fails alike (the same code everywhere), with a detail naming the variable and the reason. */
static void refused(const char *reason)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        int rc = plan_and_run(MPI_COMM_WORLD, "bad PLANCOLL_EMULATE_NODES", false);
        int lo = rc, hi = rc;
        tl_allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        tl_allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        TL_CHECK(rc == PLANCOLL_ERR_ENV, "attempt %d: plan returned %d (%s), expected PLANCOLL_ERR_ENV", attempt, rc,
                 plancoll_strerror(rc));
        TL_CHECK(lo == hi, "attempt %d: ranks returned different codes (%d .. %d)", attempt, lo, hi);
        const char *detail = plancoll_error_detail();
        TL_CHECK(strstr(detail, "PLANCOLL_EMULATE_NODES") && strstr(detail, reason),
                 "attempt %d: detail '%s' does not name PLANCOLL_EMULATE_NODES and '%s'", attempt, detail, reason);
        if (tl_rank == 0 && attempt == 0) printf("  refused on every rank: %s\n", detail);
    }
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "emulate");
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "--bad") == 0 && argc > 2) {
        refused(argv[2]);
    } else if (strcmp(mode, "--differ") == 0 && argc > 2) {
        if (tl_rank == 0) unsetenv("PLANCOLL_EMULATE_NODES");
        else setenv("PLANCOLL_EMULATE_NODES", "2", 1);
        refused(argv[2]);
    } else if (strcmp(mode, "--no-launcher-env") == 0 || !*mode) {
        layouts(*mode != 0);
    } else {
        TL_CHECK(0, "usage: test_emulate [--no-launcher-env | --bad TEXT | --differ TEXT]");
    }
    return tl_finish();
}
