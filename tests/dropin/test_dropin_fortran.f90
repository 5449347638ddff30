! The drop-in layer seen from a Fortran program (issue 18, item 1): MPI_ALLTOALL, MPI_ALLTOALLV and
! MPI_ALLREDUCE through MPICH's Fortran bindings (`use mpi`, compiled by mpifort), each shape repeated past
! PLANCOLL_DROPIN_AFTER, new data every call, receive buffers filled with a sentinel before every call, results
! checked exactly against closed-form values. Prints the verdict line of tests/mpi/run-mpi-test.sh.
!
! Which symbols MPICH 4.0.2's Fortran layer reaches (nm -D and objdump -d of libmpichfort.so.12, Debian
! package): the mpif.h / `use mpi` bindings (mpi_alltoall_, mpi_alltoallv_, mpi_allreduce_, their _init forms,
! mpi_start(all)_, mpi_wait*_, mpi_test*_, mpi_request_free_, mpi_init_, mpi_finalize_) call the C MPI_*
! symbols through the PLT (MPI_Alltoall@plt, MPI_Start@plt, MPI_Init@plt, ...), even under their PMPI_ALLTOALL
! / pmpi_alltoall_ aliases, so a library preloaded or linked before libmpich that defines MPI_* takes Fortran
! calls with no Fortran code of its own. The `use mpi_f08` bindings differ: the buffer-taking calls
! (mpi_alltoall_f08ts_ -> MPIR_Alltoall_cdesc) also call the C MPI_Alltoall / MPI_Alltoall_init /
! MPI_Allreduce..., but the calls without buffers go straight to PMPI_*: mpi_init_f08_ calls PMPI_Init,
! mpi_finalize_f08_ PMPI_Finalize, mpi_start_f08_ PMPI_Start / PMPI_Startall, mpi_wait_f08_ PMPI_Wait,
! mpi_waitall_f08_ PMPI_Waitall (and the other completion calls likewise). Under mpi_f08 a C-level layer
! therefore sees the collectives but neither MPI_Init/MPI_Finalize nor the starts and completions of its
! persistent requests.
! Open MPI 4.1.4 differs again (nm -D / objdump -d of libmpi_mpifh.so and libmpi_usempif08.so): mpi_alltoall_ (and
! mpi_alltoall_f08_ through ompi_alltoall_f) convert the handles and call PMPI_Alltoall directly, as its
! mpi_init_, mpi_finalize_, mpi_comm_free_, mpix_*_init_, mpi_start_ and mpi_wait_ call their PMPI_ functions:
! there the layer defines the Fortran collectives itself (src/dropin/fortran.c) and sees no other Fortran call.
! Both MPIs: the in-place alltoall and allreduce check the Fortran MPI_IN_PLACE, and the sub-communicator part
! that plans are released when MPI_COMM_FREE does not pass through the layer.
program test_dropin_fortran
  use mpi
  implicit none
  interface
    function c_alarm(seconds) bind(C, name='alarm')
      use, intrinsic :: iso_c_binding, only : c_int
      integer(c_int), value :: seconds
      integer(c_int) :: c_alarm
    end function c_alarm
  end interface
  integer, parameter :: repeats = 8, sentinel = -999999
  integer :: ierr, me, np, it, d, s, k, iter, failures, checks, pos, n
  integer :: local(2), total(2)
  integer, allocatable :: isend(:), irecv(:), sc(:), sd(:), rc(:), rd(:)
  double precision, allocatable :: dsend(:), drecv(:)
  character(len=64) :: cliques, emulate
  integer :: clen, cstat, dummy
  integer :: sub, subsize

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, me, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  failures = 0
  checks = 0
  iter = 0
  allocate(isend(0:64*np), irecv(0:64*np), dsend(0:64*np), drecv(0:64*np))
  allocate(sc(0:np-1), sd(0:np-1), rc(0:np-1), rd(0:np-1))

  do it = 1, repeats
    ! alltoall: 3 integers per block, then 2 doubles per block (alternating shapes)
    iter = iter + 1
    do d = 0, np - 1
      do k = 0, 2
        isend(3*d + k) = val(me, d, k, iter)
      end do
    end do
    irecv = sentinel
    call MPI_ALLTOALL(isend, 3, MPI_INTEGER, irecv, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_ALLTOALL integer returned an error')
    do s = 0, np - 1
      do k = 0, 2
        call check(irecv(3*s + k) == val(s, me, k, iter), 'MPI_ALLTOALL integer: wrong element')
      end do
    end do
    call check(irecv(3*np) == sentinel, 'MPI_ALLTOALL integer: wrote past the end')

    iter = iter + 1
    do d = 0, np - 1
      do k = 0, 1
        dsend(2*d + k) = dble(val(me, d, k, iter)) + 0.5d0
      end do
    end do
    drecv = dble(sentinel)
    call MPI_ALLTOALL(dsend, 2, MPI_DOUBLE_PRECISION, drecv, 2, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_ALLTOALL double returned an error')
    do s = 0, np - 1
      do k = 0, 1
        call check(drecv(2*s + k) == dble(val(s, me, k, iter)) + 0.5d0, 'MPI_ALLTOALL double: wrong element')
      end do
    end do
    call check(drecv(2*np) == dble(sentinel), 'MPI_ALLTOALL double: wrote past the end')

    ! alltoallv: counts (src + 2 dst) mod 4 (zeros included), a gap of one element after each block
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
    n = pos
    isend = sentinel + 1
    do d = 0, np - 1
      do k = 0, sc(d) - 1
        isend(sd(d) + k) = val(me, d, k, iter)
      end do
    end do
    irecv = sentinel
    call MPI_ALLTOALLV(isend, sc, sd, MPI_INTEGER, irecv, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_ALLTOALLV returned an error')
    do s = 0, np - 1
      do k = 0, rc(s) - 1
        call check(irecv(rd(s) + k) == val(s, me, k, iter), 'MPI_ALLTOALLV: wrong element')
      end do
      call check(irecv(rd(s) + rc(s)) == sentinel, 'MPI_ALLTOALLV: wrote into a gap')
    end do

    ! allreduce: integer sum, double sum (integers in doubles: exact in any order), in place
    iter = iter + 1
    do k = 0, 4
      isend(k) = val(me, -1, k, iter)
    end do
    irecv = sentinel
    call MPI_ALLREDUCE(isend, irecv, 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_ALLREDUCE integer returned an error')
    do k = 0, 4
      call check(irecv(k) == sumval(k, iter), 'MPI_ALLREDUCE integer sum: wrong element')
    end do
    call check(irecv(5) == sentinel, 'MPI_ALLREDUCE integer: wrote past the end')

    iter = iter + 1
    do k = 0, 6
      dsend(k) = dble(val(me, -1, k, iter))
    end do
    drecv = dble(sentinel)
    call MPI_ALLREDUCE(dsend, drecv, 7, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_ALLREDUCE double returned an error')
    do k = 0, 6
      call check(drecv(k) == dble(sumval(k, iter)), 'MPI_ALLREDUCE double sum: wrong element')
    end do

    iter = iter + 1
    do k = 0, 3
      irecv(k) = val(me, -1, k, iter)
    end do
    call MPI_ALLREDUCE(MPI_IN_PLACE, irecv, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_ALLREDUCE in place returned an error')
    do k = 0, 3
      call check(irecv(k) == sumval(k, iter), 'MPI_ALLREDUCE in place: wrong element')
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
    call MPI_ALLTOALL(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, irecv, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_ALLTOALL in place returned an error')
    do s = 0, np - 1
      do k = 0, 1
        call check(irecv(2*s + k) == val(s, me, k, iter), 'MPI_ALLTOALL in place: wrong element')
      end do
    end do
    call check(irecv(2*np) == sentinel, 'MPI_ALLTOALL in place: wrote past the end')
  end do

  ! the verdict (MPI_REDUCE: not a call the layer takes), then finalize under a watchdog: MPICH 4.0.2 over
  ! UCX tcp sometimes hangs in MPI_Finalize (tests/dropin/dropin_harness.h); SIGALRM's default action ends it
  ! a sub-communicator planned on and freed: the layer releases its plans collectively inside MPI_COMM_FREE (from
  ! its attribute's delete callback where the Fortran MPI_COMM_FREE calls PMPI directly)
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(me, 2), me, sub, ierr)
  call MPI_COMM_SIZE(sub, subsize, ierr)
  call check(subsize == (np - mod(me, 2) + 1) / 2, 'the sub-communicator has the wrong size')
  do it = 1, repeats
    iter = iter + 1
    do k = 0, 2
      irecv(k) = val(me, -1, k, iter)
    end do
    call MPI_ALLREDUCE(MPI_IN_PLACE, irecv, 3, MPI_INTEGER, MPI_SUM, sub, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_ALLREDUCE on a sub-communicator returned an error')
    do k = 0, 2
      call check(irecv(k) == subsum(k, iter), 'MPI_ALLREDUCE on a sub-communicator: wrong element')
    end do
  end do
  call MPI_COMM_FREE(sub, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_COMM_FREE returned an error')

  local(1) = failures
  local(2) = checks
  call MPI_REDUCE(local, total, 2, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (me == 0) then
    call get_environment_variable('MPIR_CVAR_NUM_CLIQUES', cliques, clen, cstat)
    if (cstat /= 0) cliques = '1'
    call get_environment_variable('PLANCOLL_EMULATE_NODES', emulate, clen, cstat)
    if (cstat == 0) cliques = trim(cliques) // ' emulate_nodes=' // trim(emulate)
    if (total(1) == 0) then
      write (*, '(a,i0,a,a,a,i0,a)') 'plancoll-test dropin-fortran P=', np, ' cliques=', trim(cliques), &
        ': PASS (', total(2), ' checks, 0 failed)'
    else
      write (*, '(a,i0,a,a,a,i0,a,i0,a)') 'plancoll-test dropin-fortran P=', np, ' cliques=', trim(cliques), &
        ': FAIL (', total(2), ' checks, ', total(1), ' failed)'
    end if
  end if
  flush(6)
  dummy = c_alarm(3)
  call MPI_FINALIZE(ierr)
  if (total(1) /= 0 .and. me == 0) stop 1

contains

  ! the pattern: a value in 0 .. 999982 for (source, destination, index, iteration)
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
end program test_dropin_fortran
