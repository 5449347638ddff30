! The drop-in layer seen from a Fortran program using `use mpi_f08` (issue 18, item 1): MPI_Alltoall,
! MPI_Alltoallv and MPI_Allreduce, each shape repeated past PLANCOLL_DROPIN_AFTER, new data every call, receive
! buffers filled with a sentinel before every call, results checked exactly; the verdict line of
! tests/mpi/run-mpi-test.sh. test_dropin_fortran.f90 does the same through `use mpi`.
!
! Why a second program: in MPICH 4.0.2 (libmpichfort.so.12, nm -D / objdump -d) the mpi_f08 bindings of calls
! with buffers (mpi_alltoall_f08ts_ and the like, through MPIR_*_cdesc) call the C MPI_Alltoall / MPI_Alltoallv /
! MPI_Allreduce, which a preloaded layer takes, but mpi_init_f08_, mpi_finalize_f08_, mpi_start_f08_ and the
! mpi_wait*_f08_ / mpi_test*_f08_ completions call PMPI_Init, PMPI_Finalize, PMPI_Start, PMPI_Wait... directly:
! a layer that does its set-up in MPI_Init and its report and clean-up in MPI_Finalize sees neither here unless it
! defines those Fortran entry points itself (src/dropin/fortran_f08.c does; test_dropin_persistent_f08.f90 tests
! the persistent collectives this makes possible).
! Under Open MPI 4.1.4 no mpi_f08 call reaches a C symbol of the layer (mpi_alltoall_f08_ -> ompi_alltoall_f ->
! PMPI_Alltoall): the layer defines mpi_alltoall_f08_ & co. itself (src/dropin/fortran.c). One call leaves the
! optional ierror out (the binding passes no address for it).
program test_dropin_fortran_f08
  use mpi_f08
  implicit none
  interface
    function c_alarm(seconds) bind(C, name='alarm')
      use, intrinsic :: iso_c_binding, only : c_int
      integer(c_int), value :: seconds
      integer(c_int) :: c_alarm
    end function c_alarm
  end interface
  integer, parameter :: repeats = 8, sentinel = -999999
  integer :: me, np, it, d, s, k, iter, failures, checks, pos, ierr
  integer :: local(2), total(2)
  integer, allocatable :: isend(:), irecv(:), sc(:), sd(:), rc(:), rd(:)
  double precision, allocatable :: dsend(:), drecv(:)
  character(len=64) :: cliques, emulate
  integer :: clen, cstat, dummy
  type(MPI_Comm) :: sub
  integer :: subsize

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, me)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  failures = 0
  checks = 0
  iter = 0
  allocate(isend(0:64*np), irecv(0:64*np), dsend(0:64*np), drecv(0:64*np))
  allocate(sc(0:np-1), sd(0:np-1), rc(0:np-1), rd(0:np-1))

  do it = 1, repeats
    iter = iter + 1
    do d = 0, np - 1
      do k = 0, 2
        isend(3*d + k) = val(me, d, k, iter)
      end do
    end do
    irecv = sentinel
    call MPI_Alltoall(isend, 3, MPI_INTEGER, irecv, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Alltoall integer returned an error')
    do s = 0, np - 1
      do k = 0, 2
        call check(irecv(3*s + k) == val(s, me, k, iter), 'MPI_Alltoall integer: wrong element')
      end do
    end do
    call check(irecv(3*np) == sentinel, 'MPI_Alltoall integer: wrote past the end')

    iter = iter + 1
    do d = 0, np - 1
      do k = 0, 1
        dsend(2*d + k) = dble(val(me, d, k, iter)) + 0.5d0
      end do
    end do
    drecv = dble(sentinel)
    call MPI_Alltoall(dsend, 2, MPI_DOUBLE_PRECISION, drecv, 2, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Alltoall double returned an error')
    do s = 0, np - 1
      do k = 0, 1
        call check(same_bits(drecv(2*s + k), dble(val(s, me, k, iter)) + 0.5d0), &
          'MPI_Alltoall double: wrong element')
      end do
    end do

    iter = iter + 1
    pos = 0
    do d = 0, np - 1
      sc(d) = mod(me + 2*d, 4)
      sd(d) = pos
      pos = pos + sc(d) + 1
    end do
    pos = 0
    do s = 0, np - 1
      rc(s) = mod(s + 2*me, 4)
      rd(s) = pos
      pos = pos + rc(s) + 1
    end do
    isend = sentinel + 1
    do d = 0, np - 1
      do k = 0, sc(d) - 1
        isend(sd(d) + k) = val(me, d, k, iter)
      end do
    end do
    irecv = sentinel
    call MPI_Alltoallv(isend, sc, sd, MPI_INTEGER, irecv, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Alltoallv returned an error')
    do s = 0, np - 1
      do k = 0, rc(s) - 1
        call check(irecv(rd(s) + k) == val(s, me, k, iter), 'MPI_Alltoallv: wrong element')
      end do
      call check(irecv(rd(s) + rc(s)) == sentinel, 'MPI_Alltoallv: wrote into a gap')
    end do

    iter = iter + 1
    do k = 0, 4
      isend(k) = val(me, -1, k, iter)
    end do
    irecv = sentinel
    call MPI_Allreduce(isend, irecv, 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Allreduce integer returned an error')
    do k = 0, 4
      call check(irecv(k) == sumval(k, iter), 'MPI_Allreduce integer sum: wrong element')
    end do
    call check(irecv(5) == sentinel, 'MPI_Allreduce integer: wrote past the end')

    iter = iter + 1
    do k = 0, 3
      irecv(k) = val(me, -1, k, iter)
    end do
    call MPI_Allreduce(MPI_IN_PLACE, irecv, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Allreduce in place returned an error')
    do k = 0, 3
      call check(irecv(k) == sumval(k, iter), 'MPI_Allreduce in place: wrong element')
    end do

    ! alltoall in place: the Fortran MPI_IN_PLACE is an MPI-specific sentinel address (Open MPI: its
    ! mpi_fortran_in_place_ common symbol), which a layer taking Fortran calls itself must recognise
    iter = iter + 1
    do s = 0, np - 1
      do k = 0, 1
        irecv(2*s + k) = val(me, s, k, iter)
      end do
    end do
    irecv(2*np) = sentinel
    call MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, irecv, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Alltoall in place returned an error')
    do s = 0, np - 1
      do k = 0, 1
        call check(irecv(2*s + k) == val(s, me, k, iter), 'MPI_Alltoall in place: wrong element')
      end do
    end do
    call check(irecv(2*np) == sentinel, 'MPI_Alltoall in place: wrote past the end')
  end do

  ! a sub-communicator planned on and freed: the layer releases its plans collectively inside MPI_Comm_free (from
  ! its attribute's delete callback where the Fortran MPI_Comm_free calls PMPI directly); ierror left out (the
  ! binding then passes no address for it)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(me, 2), me, sub)
  call MPI_Comm_size(sub, subsize)
  call check(subsize == (np - mod(me, 2) + 1) / 2, 'the sub-communicator has the wrong size')
  do it = 1, repeats
    iter = iter + 1
    do k = 0, 2
      irecv(k) = val(me, -1, k, iter)
    end do
    call MPI_Allreduce(MPI_IN_PLACE, irecv, 3, MPI_INTEGER, MPI_SUM, sub)
    do k = 0, 2
      call check(irecv(k) == subsum(k, iter), 'MPI_Allreduce on a sub-communicator: wrong element')
    end do
  end do
  call MPI_Comm_free(sub)

  local(1) = failures
  local(2) = checks
  call MPI_Reduce(local, total, 2, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (me == 0) then
    call get_environment_variable('MPIR_CVAR_NUM_CLIQUES', cliques, clen, cstat)
    if (cstat /= 0) cliques = '1'
    call get_environment_variable('PLANCOLL_EMULATE_NODES', emulate, clen, cstat)
    if (cstat == 0) cliques = trim(cliques) // ' emulate_nodes=' // trim(emulate)
    if (total(1) == 0) then
      write (*, '(a,i0,a,a,a,i0,a)') 'plancoll-test dropin-fortran-f08 P=', np, ' cliques=', trim(cliques), &
        ': PASS (', total(2), ' checks, 0 failed)'
    else
      write (*, '(a,i0,a,a,a,i0,a,i0,a)') 'plancoll-test dropin-fortran-f08 P=', np, ' cliques=', trim(cliques), &
        ': FAIL (', total(2), ' checks, ', total(1), ' failed)'
    end if
  end if
  flush(6)
  ! the finalize watchdog (tests/dropin/dropin_harness.h): SIGALRM's default action ends a hung MPI_Finalize
  dummy = c_alarm(3)
  call MPI_Finalize()
  if (total(1) /= 0 .and. me == 0) stop 1

contains

  ! exact comparison of doubles, bit for bit (what an alltoall must deliver)
  logical function same_bits(a, b)
    use, intrinsic :: iso_fortran_env, only : int64
    double precision, intent(in) :: a, b
    same_bits = transfer(a, 0_int64) == transfer(b, 0_int64)
  end function same_bits

  integer function val(src, dst, idx, itn)
    integer, intent(in) :: src, dst, idx, itn
    val = mod(src*7919 + (dst + 1)*104729 + idx*31 + itn*1299709, 999983)
  end function val

  ! the sum over the ranks of the sub-communicator of this rank's parity (ranks me mod 2, me mod 2 + 2, ...)
  integer function subsum(idx, itn)
    integer, intent(in) :: idx, itn
    integer :: r
    subsum = 0
    do r = mod(me, 2), np - 1, 2
      subsum = subsum + val(r, -1, idx, itn)
    end do
  end function subsum

  integer function sumval(idx, itn)
    integer, intent(in) :: idx, itn
    integer :: r
    sumval = 0
    do r = 0, np - 1
      sumval = sumval + val(r, -1, idx, itn)
    end do
  end function sumval

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (.not. ok) then
      failures = failures + 1
      if (failures <= 20) write (0, '(a,i0,a,a,a,i0,a)') '[rank ', me, '] FAIL ', what, ' (iteration ', iter, ')'
    end if
  end subroutine check
end program test_dropin_fortran_f08
