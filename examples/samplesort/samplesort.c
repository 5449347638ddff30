/* samplesort: a parallel sample sort of 64-bit keys whose exchange runs on a plancoll alltoallv plan.
 *
 * Each rank sorts its keys, contributes P-1 regular samples, and every rank picks the same P-1 splitters from all
 * samples; rank r then sends the keys between splitter d-1 and splitter d to rank d in one alltoallv, and merges
 * what it receives. Every key travels with its origin (rank, index) so the result can be checked.
 *
 * Three rounds show when a plan is reused and when it is remade:
 *   round 0: new keys. The counts are new: plan the alltoallv (keys), execute it; the origins have exactly the
 *            same counts and type, so the same plan moves them with plancoll_execute_buffers.
 *   round 1: the same keys again, now carrying a payload (the key's square). The counts repeat, which every rank
 *            confirms with one allreduce, so the round-0 plan runs again on new buffers: no planning at all.
 *   round 2: new keys, new counts: the old plan is destroyed and a new one made.
 * Checks, every round: each rank's output is sorted and the ranks' ranges are in order (globally sorted); every
 * key equals the key its origin generates; and the origins are a permutation of the input: they are sent back
 * to their origin ranks (a second alltoallv plan, counts from the data) and each rank sees each of its indices
 * exactly once.
 *
 *   mpiexec -n P samplesort [KEYS_PER_RANK] [-v]      (default 5000; ranks hold KEYS +- 30%)
 */
#include <mpi.h>
#include <plancoll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../example_verdict.h"

struct item {
    uint64_t key, origin; /* origin = rank << 32 | index */
};

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* The key of (rank, index) in a data set: a pure function, so any rank can verify any key. Keys repeat on
 * purpose (values below 2^20 in data set 1) so equal keys must be handled. */
static uint64_t key_of(uint64_t origin, int dataset)
{
    uint64_t k = mix(origin * UINT64_C(0x9E3779B97F4A7C15) + (uint64_t)dataset * UINT64_C(0x632BE59BD9B4E019));
    return dataset == 1 ? k & 0xFFFFF : k;
}

static int cmp_item(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->origin > y->origin) - (x->origin < y->origin);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void check_rc(int rc, const char *what, int *ok)
{
    if (rc == PLANCOLL_SUCCESS) return;
    fprintf(stderr, "samplesort: %s: %s: %s\n", what, plancoll_strerror(rc), plancoll_error_detail());
    *ok = 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    long base = 5000;
    int verbose = 0;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-v") == 0) verbose = 1;
        else base = atol(argv[a]);
    }
    if (base < 1 || base > 100000000) {
        if (rank == 0) fprintf(stderr, "usage: samplesort [KEYS_PER_RANK] [-v]   (1 .. 1e8)\n");
        return example_finish("samplesort", 0, comm);
    }
    int ok = 1;
    int *scounts = malloc(sizeof(int) * 4 * (size_t)P), *sdispls = scounts + P, *rcounts = sdispls + P,
        *rdispls = rcounts + P;
    int *prev_scounts = calloc((size_t)P, sizeof(int));
    int *bcounts = malloc(sizeof(int) * 4 * (size_t)P), *bsdispls = bcounts + P, *brcounts = bsdispls + P,
        *brdispls = brcounts + P;
    uint64_t *samples = malloc(sizeof(uint64_t) * (size_t)P * (size_t)P), *splitters = malloc(sizeof(uint64_t) * (size_t)P);
    uint64_t *sample_mine = malloc(sizeof(uint64_t) * (size_t)P);
    plancoll_plan plan = NULL;
    int datasets[3] = {0, 0, 1};
    for (int round = 0; round < 3 && ok; round++) {
        const int ds = datasets[round];
        /* this rank's keys: KEYS +- 30%, depending on rank and data set */
        long n = base + (long)(mix((uint64_t)rank * 7 + (uint64_t)ds) % (uint64_t)(base * 6 / 10 + 1)) - base * 3 / 10;
        if (n < 0) n = 0;
        struct item *items = malloc(sizeof(struct item) * (size_t)(n ? n : 1));
        for (long i = 0; i < n; i++) {
            items[i].origin = (uint64_t)rank << 32 | (uint64_t)i;
            items[i].key = key_of(items[i].origin, ds);
        }
        double t0 = MPI_Wtime();
        qsort(items, (size_t)n, sizeof *items, cmp_item);
        /* P-1 regular samples per rank (the largest key when a rank has few), P-1 splitters from all of them */
        for (int s = 0; s + 1 < P; s++) {
            long at = (long)(s + 1) * n / P;
            sample_mine[s] = n ? items[at < n ? at : n - 1].key : UINT64_MAX;
        }
        if (P > 1) MPI_Allgather(sample_mine, P - 1, MPI_UINT64_T, samples, P - 1, MPI_UINT64_T, comm);
        qsort(samples, (size_t)(P - 1) * (size_t)P, sizeof(uint64_t), cmp_u64);
        for (int s = 0; s + 1 < P; s++) splitters[s] = samples[(size_t)(s + 1) * (size_t)(P - 1)];
        /* bucket d gets keys k with splitters[d-1] < k <= splitters[d] (items are sorted: one pass) */
        long pos = 0;
        for (int d = 0; d < P; d++) {
            long start = pos;
            if (d == P - 1) pos = n;
            else
                while (pos < n && items[pos].key <= splitters[d]) pos++;
            scounts[d] = (int)(pos - start);
            sdispls[d] = (int)start;
        }
        MPI_Alltoall(scounts, 1, MPI_INT, rcounts, 1, MPI_INT, comm);
        long total = 0;
        for (int q = 0; q < P; q++) {
            rdispls[q] = (int)total;
            total += rcounts[q];
        }
        uint64_t *keys = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1)), *origins = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
        uint64_t *rkeys = malloc(sizeof(uint64_t) * (size_t)(total ? total : 1)), *rorigins = malloc(sizeof(uint64_t) * (size_t)(total ? total : 1));
        for (long i = 0; i < n; i++) {
            keys[i] = items[i].key;
            origins[i] = items[i].origin;
        }
        /* Same counts as the plan was made for (on every rank)? Then reuse it on these buffers; else plan anew. */
        int same = plan != NULL && memcmp(scounts, prev_scounts, sizeof(int) * (size_t)P) == 0, all_same = 0;
        MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_MIN, comm);
        double t_plan = 0;
        const char *how;
        if (all_same) {
            how = "plan reused (execute_buffers)";
            check_rc(plancoll_execute_buffers(plan, keys, rkeys), "execute_buffers keys", &ok);
        } else {
            if (plan) plancoll_destroy_plan(&plan);
            double tp = MPI_Wtime();
            check_rc(plancoll_plan_alltoallv(keys, scounts, sdispls, MPI_UINT64_T, rkeys, rcounts, rdispls, MPI_UINT64_T,
                                             comm, PLANCOLL_ESTIMATE, &plan),
                     "plan alltoallv", &ok);
            t_plan = MPI_Wtime() - tp;
            how = round == 0 ? "planned" : "re-planned (counts changed)";
            if (ok) check_rc(plancoll_execute(plan), "execute keys", &ok);
            memcpy(prev_scounts, scounts, sizeof(int) * (size_t)P);
        }
        if (!ok) break;
        /* the origins follow with the same plan: same counts, same type, other buffers */
        check_rc(plancoll_execute_buffers(plan, origins, rorigins), "execute_buffers origins", &ok);
        if (round == 1) {
            /* the payload of round 1: the key's square, again the same shape */
            uint64_t *payload = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1)), *rpayload = malloc(sizeof(uint64_t) * (size_t)(total ? total : 1));
            for (long i = 0; i < n; i++) payload[i] = keys[i] * keys[i];
            check_rc(plancoll_execute_buffers(plan, payload, rpayload), "execute_buffers payload", &ok);
            for (long i = 0; i < total && ok; i++)
                if (rpayload[i] != rkeys[i] * rkeys[i]) {
                    fprintf(stderr, "[rank %d] round 1: payload %ld does not follow its key\n", rank, i);
                    ok = 0;
                }
            free(payload), free(rpayload);
        }
        /* merge: the P received runs are each sorted; sorting the pairs merges them */
        struct item *out = malloc(sizeof(struct item) * (size_t)(total ? total : 1));
        for (long i = 0; i < total; i++) out[i] = (struct item){rkeys[i], rorigins[i]};
        qsort(out, (size_t)total, sizeof *out, cmp_item);
        double t_sort = MPI_Wtime() - t0;

        /* check 1: sorted here, and ordered across ranks (first and last key of every non-empty rank) */
        for (long i = 1; i < total; i++)
            if (out[i - 1].key > out[i].key) ok = 0;
        uint64_t ends[3] = {(uint64_t)total, total ? out[0].key : 0, total ? out[total - 1].key : 0};
        uint64_t *all_ends = malloc(sizeof(uint64_t) * 3 * (size_t)P);
        MPI_Allgather(ends, 3, MPI_UINT64_T, all_ends, 3, MPI_UINT64_T, comm);
        uint64_t last = 0, count = 0;
        int seen_any = 0;
        for (int q = 0; q < P; q++) {
            count += all_ends[3 * q];
            if (!all_ends[3 * q]) continue;
            if (seen_any && all_ends[3 * q + 1] < last) ok = 0;
            last = all_ends[3 * q + 2];
            seen_any = 1;
        }
        long n_all = 0;
        MPI_Allreduce(&n, &n_all, 1, MPI_LONG, MPI_SUM, comm);
        if (count != (uint64_t)n_all) ok = 0;
        /* check 2: every key is its origin's key */
        for (long i = 0; i < total; i++)
            if (out[i].key != key_of(out[i].origin, ds)) ok = 0;
        /* check 3: origins are a permutation: send each back to its rank (counts from the data: a new plan) */
        for (int q = 0; q < P; q++) bcounts[q] = 0;
        for (long i = 0; i < total; i++) {
            uint64_t r = out[i].origin >> 32;
            if (r < (uint64_t)P) bcounts[r]++;
            else ok = 0;
        }
        uint64_t *back = malloc(sizeof(uint64_t) * (size_t)(total ? total : 1)), *mine_back = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
        int *fill = malloc(sizeof(int) * (size_t)P);
        for (int q = 0, off = 0; q < P; q++) {
            bsdispls[q] = fill[q] = off;
            off += bcounts[q];
        }
        for (long i = 0; i < total; i++) {
            uint64_t r = out[i].origin >> 32;
            if (r < (uint64_t)P) back[fill[r]++] = out[i].origin;
        }
        MPI_Alltoall(bcounts, 1, MPI_INT, brcounts, 1, MPI_INT, comm);
        long nback = 0;
        for (int q = 0; q < P; q++) {
            brdispls[q] = (int)nback;
            nback += brcounts[q];
        }
        if (nback != n) ok = 0;
        plancoll_plan home = NULL;
        int ok_all = 0;
        MPI_Allreduce(&ok, &ok_all, 1, MPI_INT, MPI_MIN, comm);
        if (ok_all && nback == n) {
            check_rc(plancoll_plan_alltoallv(back, bcounts, bsdispls, MPI_UINT64_T, mine_back, brcounts, brdispls,
                                             MPI_UINT64_T, comm, PLANCOLL_ESTIMATE, &home),
                     "plan the return alltoallv", &ok);
            if (home) check_rc(plancoll_execute(home), "execute the return", &ok);
            unsigned char *seen = calloc((size_t)(n ? n : 1), 1);
            for (long i = 0; i < nback && ok; i++) {
                uint64_t o = mine_back[i];
                if (o >> 32 != (uint64_t)rank || (o & 0xFFFFFFFFu) >= (uint64_t)n || seen[o & 0xFFFFFFFFu]++) ok = 0;
            }
            free(seen);
            if (home) plancoll_destroy_plan(&home);
        }
        if (rank == 0) {
            printf("samplesort round %d: %ld keys on %d ranks (data set %d), alltoallv %s [%s], sort %.1f ms", round,
                   n_all, P, ds, how, plancoll_plan_algorithm(plan), t_sort * 1e3);
            if (t_plan > 0) printf(", planning %.1f ms", t_plan * 1e3);
            printf("\n");
            if (verbose) plancoll_fprint_plan(plan, stdout);
        }
        free(items), free(keys), free(origins), free(rkeys), free(rorigins), free(out), free(all_ends), free(back),
            free(mine_back), free(fill);
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
        if (!ok && rank == 0) fprintf(stderr, "samplesort round %d: the output is not a sorted permutation of the input\n", round);
    }
    if (plan) plancoll_destroy_plan(&plan);
    free(scounts), free(prev_scounts), free(bcounts), free(samples), free(splitters), free(sample_mine);
    return example_finish("samplesort", ok, comm);
}
