/* plancoll_malloc and plancoll_free: the public entries of the node-shared heap (src/shm/heap.c). */
#include <stddef.h>

#include "api/validate.h"
#include "base/errors.h"
#include "plancoll.h"
#include "shm/heap.h"

int plancoll_malloc(size_t size, MPI_Comm comm, void **ptr)
{
    int err = pc_api_entry(comm);
    if (ptr) *ptr = NULL;
    if (err) return err;
    return pc_heap_malloc(size, comm, ptr);
}

int plancoll_free(void *ptr)
{
    pc_clear_error();
    return pc_heap_free(ptr);
}
