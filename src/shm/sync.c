/* Node barrier and sequence-numbered flags: the node's synchronisation (node-shared memory and segments:
 * segment.c). */
#include "shm/layout.h"
#include "shm/wait.h"

void pc_flag_wait(const struct pc_layout *L, _Atomic uint64_t *flag, uint64_t seq)
{
    if (atomic_load_explicit(flag, memory_order_acquire) >= seq) return;
    struct pc_waiter w;
    pc_waiter_init(&w, L->wait_mode, L->oversubscribed);
    while (atomic_load_explicit(flag, memory_order_acquire) < seq) {
        if (L->poke) L->poke(L->poke_ctx);
        pc_waiter_pause(&w);
    }
}

void pc_node_barrier(struct pc_layout *L)
{
    uint64_t seq = ++L->barrier_seq;
    pc_flag_post(&L->ctl[L->node_rank].barrier_seq, seq);
    for (int i = 0; i < L->node_size; i++) pc_flag_wait(L, &L->ctl[i].barrier_seq, seq);
}
