/* The one table of tags of plancoll's point-to-point traffic. Internal.
 * Every message plancoll sends goes over its own duplicate of the user's communicator (so no user message can
 * match it); within it each algorithm family has its own range, and each algorithm (or each kind of exchange)
 * its own tag or sub-range, so two exchanges in flight at once (a plan's set-up exchange and another plan's
 * execution, two sub-partitions of one execution) never match each other.  Every tag plancoll sends with comes
 * from here: a new one takes a free value in its family's range. */
#ifndef PC_TAGS_H
#define PC_TAGS_H

enum {
    /* 1000..1999: copies and measurements outside the collectives */
    PC_TAG_COPY = 1000,             /* datatype.c: a rank's copy between two datatypes, a Sendrecv to itself */
    /* PC_TAG_COPY + 7 .. + 11:        calibrate.c's probes (+7 ping-pong, +8 many small messages, +9 one byte,
                                       +10 an exchange, +11 the next size of the protocol switch's search, +12 the MPI ring) */

    /* 2000..2999: alltoall */
    PC_TAG_ALLTOALL = 2000,         /* alltoall.pairwise's exchanges */
    PC_TAG_ALLTOALL_BRUCK = 2001,   /* alltoall.bruck's steps (bruck_common.c) */
    PC_TAG_NODE_AWARE = 2010,       /* the node-aware family (node_aware.c: leader, mpml, onmpml), point-to-point */
    PC_TAG_PAP = 2070,              /* alltoall.pap's direct messages */

    /* 3000..3999: alltoallv */
    PC_TAG_ALLTOALLV = 3000,        /* alltoallv.spreadout's messages */
    PC_TAG_PADDED_BRUCK = 3001,     /* alltoallv.padded_bruck's steps (bruck_common.c) */
    PC_TAG_TWOPHASE_DATA = 3002,    /* alltoallv.twophase_bruck's data steps */
    PC_TAG_TWOPHASE_META = 3003,    /* alltoallv.twophase_bruck's set-up pass over the block sizes */
    PC_TAG_AGGREGATED = 3020,       /* alltoallv.aggregated's node-pair messages */

    /* 4000..4999: allreduce */
    PC_TAG_ALLREDUCE = 4000,        /* the flat exchanges of allreduce/common.c (recursive doubling, rabenseifner) */
    PC_TAG_DPML = 4100,             /* 4100 + sub-partition: the DPML leaders' exchanges (dpml_common.c), one tag per
                                       sub-partition so that concurrent ones never match each other */

    /* 4900..4999: the transpose kind (src/transpose) */
    PC_TAG_TRANSPOSE = 4900,        /* the fused transpose's blocks between nodes (fused.c) */
    PC_TAG_TRANSPOSE_PIECES = 4901, /* a transpose in pieces: every piece's blocks between nodes, one tag, matched in
                                       piece order by MPI's non-overtaking rule (fused.c, "Pieces") */
};

/* Each plan adds its slot's offset, slot x PC_TAG_STRIDE (exec/plan.h, pc_tag), so that plans active at once on one
 * communicator keep their messages apart; every tag above is below the stride. Slot 0 is shared by the plans beyond
 * the layout's last slot (PC_TAG_MAX_SLOTS or MPI_TAG_UB's bound), which therefore must not run at once. */
#define PC_TAG_STRIDE 5000
#define PC_TAG_MAX_SLOTS 1024

#endif
