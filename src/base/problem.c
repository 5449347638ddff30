#include "base/problem.h"

#include <stdio.h>

#include "plancoll_codes.h"

const char *pc_collective_name(enum pc_collective c)
{
    switch (c) {
    case PC_ALLTOALL: return "alltoall";
    case PC_ALLTOALLV: return "alltoallv";
    case PC_ALLREDUCE: return "allreduce";
    default: return "unknown";
    }
}

uint64_t pc_hash_bytes(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

static uint64_t hash_u64(uint64_t h, uint64_t v) { return pc_hash_bytes(h, &v, sizeof v); }

size_t pc_problem_key(const struct pc_problem *p, char *buf, size_t len)
{
    const struct pc_shape *s = &p->shape;
    int n = 0;
    switch (p->coll) {
    case PC_ALLTOALL:
        n = snprintf(buf, len, "alltoall:P=%d:nodes=%d:ppn=%d-%d:block=%llu:inplace=%d", s->nranks, s->nnodes,
                     s->min_ppn, s->max_ppn, (unsigned long long)p->block_bytes, p->in_place ? 1 : 0);
        break;
    case PC_ALLTOALLV:
        n = snprintf(buf, len, "alltoallv:P=%d:nodes=%d:ppn=%d-%d:pattern=%016llx:inplace=%d", s->nranks, s->nnodes,
                     s->min_ppn, s->max_ppn, (unsigned long long)p->pattern_hash, p->in_place ? 1 : 0);
        break;
    case PC_ALLREDUCE:
        n = snprintf(buf, len, "allreduce:P=%d:nodes=%d:ppn=%d-%d:count=%d:elem=%llu:type=%d:op=%d:comm=%d",
                     s->nranks, s->nnodes, s->min_ppn, s->max_ppn, p->count, (unsigned long long)p->elem_bytes,
                     p->type_id, p->op_id, p->commutative ? 1 : 0);
        break;
    default: n = snprintf(buf, len, "unknown"); break;
    }
    /* A plan made for overlap is another problem (another choice): its wisdom must not answer a plain request nor
     * the reverse. The suffix is added only with the flag, so every key written before it existed still reads as
     * the plain problem's. */
    if (n >= 0 && (p->flags & PLANCOLL_OVERLAP)) {
        size_t used = (size_t)n < len ? (size_t)n : (len > 0 ? len - 1 : 0);
        int more = snprintf(buf + used, len > used ? len - used : 0, ":overlap=1");
        n = more < 0 ? n : n + more;
    }
    return n < 0 ? 0 : (size_t)n;
}

uint64_t pc_problem_agreement_hash(const struct pc_problem *p, uint64_t extra)
{
    uint64_t h = PC_HASH_SEED;
    h = hash_u64(h, (uint64_t)p->coll);
    h = hash_u64(h, p->flags);
    h = hash_u64(h, (uint64_t)p->shape.nranks);
    switch (p->coll) {
    /* MPI requires MPI_IN_PLACE on all ranks or none for alltoall(v); the schedules differ, so a mix would hang. */
    case PC_ALLTOALL:
        h = hash_u64(h, p->block_bytes);
        h = hash_u64(h, p->in_place);
        break;
    case PC_ALLTOALLV:
        h = hash_u64(h, p->pattern_hash);
        h = hash_u64(h, p->in_place);
        break;
    case PC_ALLREDUCE:
        h = hash_u64(h, (uint64_t)p->count);
        h = hash_u64(h, p->elem_bytes);
        h = hash_u64(h, (uint64_t)(int64_t)p->type_id);
        h = hash_u64(h, (uint64_t)(int64_t)p->op_id);
        h = hash_u64(h, p->commutative);
        break;
    default: break;
    }
    return hash_u64(h, extra);
}
