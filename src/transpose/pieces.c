/* The bookkeeping of a transpose plan in pieces (plancoll_plan_transpose_pieces): which piece comes next, and what
 * the caller may ask of it. The data movement is fused.c's ("Pieces"); the plan's start and advance
 * (transpose.c) hand it the pieces started so far. Internal to src/transpose, called by the API. */
#include "transpose/local.h"
#include "transpose/state.h"
#include "transpose/transpose.h"

static int not_in_pieces(const char *what)
{
    return pc_error(PLANCOLL_ERR_ARGUMENT, "%s: the plan is not a transpose in pieces (plancoll_plan_transpose_pieces)",
                    what);
}

int pc_transpose_pieces(const struct plancoll_plan_s *p)
{
    const struct pc_transpose *t = pc_transpose_of(p);
    return t ? t->pieces : 0;
}

int pc_transpose_piece_rows(const struct plancoll_plan_s *p, int k, ptrdiff_t *lo, ptrdiff_t *count)
{
    const struct pc_transpose *t = pc_transpose_of(p);
    if (!t || t->pieces == 0) return not_in_pieces("plancoll_transpose_piece_rows");
    if (k < 0 || k >= t->pieces)
        return pc_error(PLANCOLL_ERR_ARGUMENT, "plancoll_transpose_piece_rows: piece %d of a plan in %d pieces (0 .. %d)",
                        k, t->pieces, t->pieces - 1);
    if (!lo || !count) return pc_error(PLANCOLL_ERR_ARGUMENT, "plancoll_transpose_piece_rows: lo or count is NULL");
    pc_piece_bounds(t->ln0, t->pieces, k, lo, count);
    return PLANCOLL_SUCCESS;
}

void pc_transpose_first_start_pieces(struct plancoll_plan_s *p, bool one)
{
    struct pc_transpose *t = pc_transpose_of(p);
    if (t && t->pieces > 0) t->pieces_at_start = one ? 1 : t->pieces;
}

int pc_transpose_start_next_piece(struct plancoll_plan_s *p, int k)
{
    struct pc_transpose *t = pc_transpose_of(p);
    if (!t || t->pieces == 0) return not_in_pieces("plancoll_start_piece");
    if (t->pieces_started == t->pieces)
        return pc_error(PLANCOLL_ERR_ARGUMENT,
                        "plancoll_start_piece: piece %d again: all %d pieces of this execution are started (complete it "
                        "with plancoll_wait or plancoll_test, then start piece 0)",
                        k, t->pieces);
    if (k != t->pieces_started)
        return pc_error(PLANCOLL_ERR_ARGUMENT,
                        "plancoll_start_piece: piece %d out of order: pieces 0 .. %d of this execution are started, the "
                        "next is %d",
                        k, t->pieces_started - 1, t->pieces_started);
    t->pieces_started++;
    return PLANCOLL_SUCCESS;
}

int pc_transpose_pieces_unstarted(const struct plancoll_plan_s *p)
{
    const struct pc_transpose *t = pc_transpose_of(p);
    return t && t->pieces > 0 && p->active ? t->pieces - t->pieces_started : 0;
}
