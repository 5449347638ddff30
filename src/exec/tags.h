/* The one table of tags of plancoll's point-to-point traffic. Internal.
 * Every message plancoll sends goes over its own duplicate of the user's communicator (so no user message can
 * match it); within it each algorithm family has its own range, so two families' messages in flight at once
 * (a plan's set-up exchange and another plan's execution) never match each other. */
#ifndef PC_TAGS_H
#define PC_TAGS_H

/* Tags of plancoll's point-to-point traffic, one range per algorithm family. */
enum {
    PC_TAG_COPY = 1000,
    PC_TAG_ALLTOALL = 2000,
    PC_TAG_ALLTOALLV = 3000,
    PC_TAG_ALLREDUCE = 4000,
};

#endif
