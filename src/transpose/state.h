/* The transpose plan's state, shared by its two executions: the composite one (transpose.c: pack, an inner
 * alltoall(v) plan, unpack) and the fused one (fused.c: node peers read each other's data in shared memory, only
 * other nodes' blocks travel as messages). Internal to src/transpose. */
#ifndef PC_TRANSPOSE_STATE_H
#define PC_TRANSPOSE_STATE_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

struct plancoll_plan_s;
struct pc_transpose_fused;

/* How a transpose plan runs (the choice shows in plancoll_plan_spec, plancoll_plan_algorithm and fprint). */
enum pc_transpose_strategy {
    PC_TRANSPOSE_COMPOSITE, /* pack into S, the inner exchange S -> R, unpack R into out: three passes */
    PC_TRANSPOSE_FUSED,     /* node peers read each other's S (or input, when it is node-shared) into out: one or
                               two passes; other nodes' blocks go straight from S and are unpacked as they land */
};

struct pc_transpose {
    ptrdiff_t n0, n1;
    size_t es;       /* bytes of one element */
    MPI_Aint lb;     /* an element's data starts lb bytes after its address */
    int P, rank;
    ptrdiff_t b0, b1, ln0, start0, ln1, start1;
    size_t in_elems, out_elems; /* ln0 n1, ln1 n0 */
    bool uniform;
    ptrdiff_t *offsets, *counts, *starts; /* [P] the unpack: source q's block in R, its row length, its column */
    int *vcounts;                         /* [4P] alltoallv arguments, until the inner plan is made */
    char *S, *R;
    bool S_in_heap;                /* S came from the node-shared heap */
    struct plancoll_plan_s *inner; /* the composite's exchange (owned, not live); NULL: one rank, nothing to move,
                                      or the fused strategy was chosen */
    struct pc_transpose_fused *fused; /* the fused strategy's state; NULL when not built or not chosen */
    enum pc_transpose_strategy strategy;
    double local_us;               /* model cost of the composite's two local passes */
    double composite_us, fused_us; /* predictions of both strategies (< 0: not a candidate) */
    double composite_measured_us, fused_measured_us; /* MEASURE's medians (< 0: not timed) */
    const char *strategy_by;       /* what decided the strategy: "forced", "model", "measured", "only candidate" */
    bool stream_out;               /* the passes that write out use streaming stores (choose_stores) */
    double probe_cached_us, probe_stream_us; /* what decided it: a probe pass each way (< 0: not probed) */
    char *run_out;                 /* the started composite execution's output (start, advance) */
    /* A plan in pieces (plancoll_plan_transpose_pieces): pieces > 0 is its K, 0 an ordinary plan. The execution in
     * progress has had pieces_started of them started by the caller (fused.c packs and sends those); the next
     * start begins with pieces_at_start of them (plancoll_start_piece(0): 1; any other start: all). */
    int pieces, pieces_started, pieces_at_start;
    char name[96];
};

#endif
