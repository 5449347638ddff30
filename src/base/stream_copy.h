/* Streaming (non-temporal) copies, shared by the writes into node-shared areas (exec/reduce_stream.h: the
 * stores=stream parameter) and the transpose's output passes (transpose/local.c). A streaming store writes its line to
 * memory without reading it first; x86-64 SSE2 only (MOVNTDQ on 16-byte aligned addresses, the unaligned head and
 * tail with ordinary stores). Streaming stores are weakly ordered even on x86: a writer calls pc_stream_fence
 * (SFENCE) after them and before the flag or return that lets anyone read them. Elsewhere PC_STREAM_STORES is 0 and
 * both functions use ordinary stores. No MPI (part of the pure core). */
#ifndef PC_STREAM_COPY_H
#define PC_STREAM_COPY_H

#include <stddef.h>

#if defined(__x86_64__) && defined(__SSE2__)
#define PC_STREAM_STORES 1
#else
#define PC_STREAM_STORES 0
#endif

/* Orders every streaming store of this thread before the stores that follow (SFENCE); a compiler barrier where
 * there are no streaming stores. */
void pc_stream_fence(void);

/* memcpy(dst, src, bytes) with streaming stores into dst (ordinary ones for the part before dst's first 16-byte
 * boundary and after its last). dst and src do not overlap. Not fenced. */
void pc_stream_copy(void *restrict dst, const void *restrict src, size_t bytes);

#endif
