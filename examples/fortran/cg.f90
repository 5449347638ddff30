! cg (Fortran): conjugate gradients on the 3D Poisson equation (7-point stencil, zero Dirichlet boundary) on an n^3
! grid split into slabs of z-planes over the ranks, the halo planes exchanged with MPI_Sendrecv: examples/cg/cg.c's
! solver through module plancoll and `use mpi_f08`.
!
! Each iteration needs two global sums (p.q and r.r). They run on one plancoll allreduce plan, made once before the
! loop on the same one-double buffers and executed every iteration. The same solver then runs with MPI_Allreduce.
! The example fails unless both converge (relative residual below 1e-8), take the same number of iterations within
! 2, and their solutions are as close to the known exact one as the residual allows (the right-hand side is A x*
! for a chosen x*: relative error <= cond(A) x relative residual).
!
!   mpiexec -n P cg_fortran [N [-v]]   (default N = 16; -v prints the plan)
program cg_fortran
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use plancoll
  implicit none
  interface
    function c_alarm(seconds) bind(C, name='alarm')
      import :: c_int
      integer(c_int), value :: seconds
      integer(c_int) :: c_alarm
    end function
  end interface
  double precision, parameter :: tol = 1d-8, pi = 3.14159265358979d0
  integer :: n, me, np, nz, z0, up, down, dummy, rc, mine, bad
  integer :: iters(2)
  double precision :: err(2), res(2), h, lmin, lmax
  double precision, allocatable :: b(:, :, :), xs(:, :, :), x(:, :, :, :)
  ! The planned sum: its buffers must stay put while the plan lives (target, module-independent storage).
  double precision, target :: dot_in, dot_out
  type(c_ptr) :: plan
  character(len=32) :: arg, cliques
  logical :: verbose, good
  integer :: clen, cstat

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, me)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  n = 16
  verbose = .false.
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read(arg, *) n
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    verbose = arg == '-v'
  end if
  n = max(n, np) ! every rank holds at least one plane
  ! Slabs: rank r holds planes [z0, z0 + nz), the first n mod P ranks one more.
  nz = n / np + merge(1, 0, me < mod(n, np))
  z0 = me * (n / np) + min(me, mod(n, np))
  up = merge(me + 1, MPI_PROC_NULL, me + 1 < np)
  down = merge(me - 1, MPI_PROC_NULL, me > 0)
  h = 1d0 / (n + 1)

  ! Fields hold nz + 2 planes of (n + 2)^2 points: the halo planes 0 and nz + 1 and a zero border in x and y.
  allocate(b(-1:n, -1:n, 0:nz + 1), xs(-1:n, -1:n, 0:nz + 1), x(-1:n, -1:n, 0:nz + 1, 2))
  call exact_solution(xs)
  call apply(xs, b)

  rc = plancoll_plan_allreduce(dot_in, dot_out, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, &
    PLANCOLL_MEASURE, plan)
  if (rc /= PLANCOLL_SUCCESS) then
    write(0, '(a, i0, 4a)') '[rank ', me, '] allreduce plan: ', plancoll_strerror(rc), ': ', plancoll_error_detail()
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end if
  if (me == 0) write(*, '(a, i0, a, i0, 2a)') 'cg_fortran: n = ', n, ', P = ', np, ', sum plan ', &
    plancoll_plan_algorithm(plan)
  if (me == 0 .and. verbose) rc = plancoll_fprint_plan(plan)

  call solve(.true., x(:, :, :, 1), iters(1), res(1))
  call solve(.false., x(:, :, :, 2), iters(2), res(2))
  rc = plancoll_destroy_plan(plan)

  ! cond(A) of the 7-point Laplacian on n^3 points: lmax / lmin.
  lmin = 6d0 * (1d0 - cos(pi * h))
  lmax = 6d0 * (1d0 + cos(pi * h))
  err(1) = rel_error(x(:, :, :, 1))
  err(2) = rel_error(x(:, :, :, 2))
  good = all(res < tol) .and. abs(iters(1) - iters(2)) <= 2 .and. all(err <= (lmax / lmin) * res * 1.01d0) &
    .and. rc == PLANCOLL_SUCCESS
  if (me == 0) then
    write(*, '(a, i0, a, es9.2, a, es9.2)') 'cg_fortran: plancoll: ', iters(1), ' iterations, residual ', res(1), &
      ', error ', err(1)
    write(*, '(a, i0, a, es9.2, a, es9.2)') 'cg_fortran: MPI:      ', iters(2), ' iterations, residual ', res(2), &
      ', error ', err(2)
  end if

  ! The verdict line of tests/mpi/run-mpi-test.sh, then MPI_Finalize under a 2 s alarm (examples/example_verdict.h).
  mine = merge(0, 1, good)
  call MPI_Allreduce(mine, bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call get_environment_variable('MPIR_CVAR_NUM_CLIQUES', cliques, clen, cstat)
  if (cstat /= 0) cliques = '1'
  if (me == 0) write(*, '(*(g0))') 'plancoll-test cg_fortran P=', np, ' cliques=', trim(cliques), ': ', &
    merge('PASS', 'FAIL', bad == 0), ' (', bad, ' ranks failed)'
  flush(6)
  flush(0)
  dummy = c_alarm(2)
  call MPI_Finalize()
  if (bad /= 0) error stop 1

contains

  subroutine exact_solution(u)
    double precision, intent(out) :: u(-1:, -1:, 0:)
    integer :: i, j, k
    u = 0
    do k = 1, nz
      do j = 0, n - 1
        do i = 0, n - 1
          u(i, j, k) = sin(pi * (i + 1) * h) * (j + 1) * h * (1d0 - (j + 1) * h) + 0.25d0 * cos(2d0 * (z0 + k) * h)
        end do
      end do
    end do
  end subroutine

  ! q = A u on this rank's planes (u's halo planes exchanged first; points outside the grid are zero).
  subroutine apply(u, q)
    double precision, intent(inout) :: u(-1:, -1:, 0:)
    double precision, intent(out) :: q(-1:, -1:, 0:)
    integer :: i, j, k
    u(:, :, 0) = 0
    u(:, :, nz + 1) = 0
    call MPI_Sendrecv(u(:, :, nz), (n + 2)**2, MPI_DOUBLE_PRECISION, up, 1, u(:, :, 0), (n + 2)**2, &
      MPI_DOUBLE_PRECISION, down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call MPI_Sendrecv(u(:, :, 1), (n + 2)**2, MPI_DOUBLE_PRECISION, down, 2, u(:, :, nz + 1), (n + 2)**2, &
      MPI_DOUBLE_PRECISION, up, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    q = 0
    do k = 1, nz
      do j = 0, n - 1
        do i = 0, n - 1
          q(i, j, k) = 6d0 * u(i, j, k) - u(i, j, k - 1) - u(i, j, k + 1) - u(i - 1, j, k) - u(i + 1, j, k) &
            - u(i, j - 1, k) - u(i, j + 1, k)
        end do
      end do
    end do
  end subroutine

  ! The global sum of a.b over the interior planes: on the plan, or with MPI_Allreduce.
  double precision function dot(a, c, planned)
    double precision, intent(in) :: a(-1:, -1:, 0:), c(-1:, -1:, 0:)
    logical, intent(in) :: planned
    integer :: rc
    dot_in = sum(a(0:n - 1, 0:n - 1, 1:nz) * c(0:n - 1, 0:n - 1, 1:nz))
    if (planned) then
      rc = plancoll_execute(plan)
      if (rc /= PLANCOLL_SUCCESS) then
        write(0, '(4a)') 'allreduce plan: ', plancoll_strerror(rc), ': ', plancoll_error_detail()
        call MPI_Abort(MPI_COMM_WORLD, 1)
      end if
    else
      call MPI_Allreduce(dot_in, dot_out, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    end if
    dot = dot_out
  end function

  subroutine solve(planned, x, iters, relres)
    logical, intent(in) :: planned
    double precision, intent(out) :: x(-1:, -1:, 0:)
    integer, intent(out) :: iters
    double precision, intent(out) :: relres
    double precision, allocatable :: r(:, :, :), p(:, :, :), q(:, :, :)
    double precision :: rr, rr_new, alpha, bnorm
    allocate(r, mold=x)
    allocate(p, mold=x)
    allocate(q, mold=x)
    x = 0
    r = b
    p = r
    rr = dot(r, r, planned)
    bnorm = sqrt(rr)
    do iters = 1, 10 * n
      call apply(p, q)
      alpha = rr / dot(p, q, planned)
      x = x + alpha * p
      r = r - alpha * q
      rr_new = dot(r, r, planned)
      if (sqrt(rr_new) < tol * bnorm) exit
      p = r + (rr_new / rr) * p
      rr = rr_new
    end do
    ! The true residual b - A x, not the recurrence's.
    call apply(x, q)
    r = b - q
    relres = sqrt(dot(r, r, .false.)) / bnorm
  end subroutine

  double precision function rel_error(u)
    double precision, intent(in) :: u(-1:, -1:, 0:)
    double precision :: d(-1:n, -1:n, 0:nz + 1)
    d = u - xs
    rel_error = sqrt(dot(d, d, .false.) / dot(xs, xs, .false.))
  end function

end program cg_fortran
