/* MPI_Put into node peers' shared segments (seg_window.h). */
#include "exec/seg_window.h"

#include <stdlib.h>

#include "shm/wait.h"

/* Put windows open in this process: while there is one, every wait's pause calls into MPI (shm/wait.h). */
static int open_windows;

static void poke_mpi(void)
{
    int flag;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

void pc_segwin_init(struct pc_seg_window *w)
{
    w->win = MPI_WIN_NULL;
    w->comm = MPI_COMM_NULL;
    w->data_disp = w->flag_disp = NULL;
    w->out = 0;
}

int pc_segwin_open(struct pc_seg_window *w, const struct pc_layout *L, struct pc_segment *seg, size_t data_offset,
                   int first_flag)
{
    char *base = (char *)seg->flags;
    MPI_Aint bytes = (MPI_Aint)((size_t)seg->nflags * PC_CACHELINE + seg->size);
    PC_MPI_CHECK(MPI_Win_create(base, bytes, 1, MPI_INFO_NULL, L->comm, &w->win));
    w->comm = L->comm;
    if (open_windows++ == 0) pc_progress_poke = poke_mpi;
    PC_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win));
    w->data_disp = malloc(sizeof(MPI_Aint) * 2 * (size_t)L->size);
    MPI_Aint *all = malloc(sizeof(MPI_Aint) * 2 * (size_t)L->size);
    if (!w->data_disp || !all) {
        free(all);
        return pc_error(PLANCOLL_ERR_NOMEM, "window displacements");
    }
    w->flag_disp = w->data_disp + L->size;
    MPI_Aint mine[2] = {(MPI_Aint)(seg->base + data_offset - base),
                        (MPI_Aint)((char *)pc_segment_flag(seg, first_flag) - base)};
    int err = pc_allgather_wait(L, mine, all, 2, MPI_AINT, "MPI_Iallgather (window)");
    for (int r = 0; !err && r < L->size; r++) {
        w->data_disp[r] = all[2 * r];
        w->flag_disp[r] = all[2 * r + 1];
    }
    free(all);
    return err;
}

void pc_segwin_close(struct pc_seg_window *w)
{
    if (w->win != MPI_WIN_NULL) {
        MPI_Win_unlock_all(w->win);
        MPI_Win_free(&w->win);
        if (--open_windows == 0) pc_progress_poke = NULL;
    }
    free(w->data_disp);
    w->data_disp = w->flag_disp = NULL;
}

int pc_segwin_put_flag(struct pc_seg_window *w, int target, int index, uint64_t value)
{
    w->out = value;
    PC_MPI_CHECK(MPI_Put(&w->out, 1, MPI_UINT64_T, target, w->flag_disp[target] + (MPI_Aint)index * PC_CACHELINE, 1,
                         MPI_UINT64_T, w->win));
    PC_MPI_CHECK(MPI_Win_flush(target, w->win));
    return PLANCOLL_SUCCESS;
}

void pc_segwin_progress(const struct pc_seg_window *w)
{
    int flag;
    MPI_Win_sync(w->win);
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, w->comm, &flag, MPI_STATUS_IGNORE);
}

static void poke(void *arg) { pc_segwin_progress(arg); }

void pc_segwin_poke_begin(struct pc_layout *L, struct pc_seg_window *w)
{
    if (w->win == MPI_WIN_NULL) return;
    L->poke = poke;
    L->poke_ctx = w;
}

void pc_segwin_poke_end(struct pc_layout *L)
{
    L->poke = NULL;
    L->poke_ctx = NULL;
}
