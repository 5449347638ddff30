/* The native candidates' persistent or nonblocking request (native_request.h). */
#include "exec/native_request.h"

#include <stdlib.h>

int pc_native_setup(struct plancoll_plan_s *plan, pc_native_init_fn init)
{
    MPI_Request *req = malloc(sizeof *req);
    if (!req) return pc_error(PLANCOLL_ERR_NOMEM, "native state");
    *req = MPI_REQUEST_NULL;
    plan->impl = req;
    return init(plan, req);
}

void pc_native_teardown(struct plancoll_plan_s *plan)
{
    MPI_Request *req = plan->impl;
    if (req && *req != MPI_REQUEST_NULL) MPI_Request_free(req);
    free(req);
    plan->impl = NULL;
}

int pc_native_execute(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf, pc_native_post_fn post)
{
    MPI_Request *req = plan->impl;
    if (plan->planned_buffers) {
        PC_MPI_CHECK(MPI_Start(req));
        return pc_wait_all(plan, 1, req);
    }
    MPI_Request once = MPI_REQUEST_NULL;
    int err = post(plan, sbuf, rbuf, &once);
    if (err) return err;
    return pc_wait_all(plan, 1, &once);
}
