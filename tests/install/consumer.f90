! A Fortran program built against an installed plancoll through pkg-config alone (tests/install/one-prefix.sh):
! an allreduce plan of one rank's numbers, executed and checked.
program consumer
  use mpi
  use plancoll
  use, intrinsic :: iso_c_binding
  implicit none
  integer :: ierr, rank, rc
  type(c_ptr) :: plan
  real(c_double), target :: x(4), y(4)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  x = [1d0, 2d0, 3d0, 4d0]
  rc = plancoll_plan_allreduce(x, y, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_SELF, PLANCOLL_ESTIMATE, plan)
  if (rc == PLANCOLL_SUCCESS) rc = plancoll_execute(plan)
  if (rc == PLANCOLL_SUCCESS .and. all(y == x)) then
    print '(a)', 'consumer_f: PASS'
  else
    print '(a, i0)', 'consumer_f: FAIL ', rc
  end if
  if (rc == PLANCOLL_SUCCESS) rc = plancoll_destroy_plan(plan)
  call MPI_Finalize(ierr)
end program consumer
