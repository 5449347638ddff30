! The Fortran interface (module plancoll) end to end, built twice: with `use mpi` integer handles and, with
! -DPLANCOLL_TEST_F08, with `use mpi_f08` handles, so both specific procedures of every generic name run.
! Every result is checked exactly against values computed here from the ranks' formulas (no MPI collective
! computes an expected value); receive buffers carry sentinels past the end. Bad input must give the documented
! code on every rank (or PLANCOLL_ERR_REMOTE on the ranks whose own arguments were fine) and write nothing.
! Verdict line of tests/mpi/run-mpi-test.sh, printed by rank 0 before MPI_Finalize (under a 2 s alarm: the MPICH
! 4.0.2 / UCX tcp finalize hang of tests/mpi/testlib.h).
#ifdef PLANCOLL_TEST_F08
#define MPI_MODULE mpi_f08
#define COMM_T type(MPI_Comm)
#define TEST_NAME 'fortran-f08'
#else
#define MPI_MODULE mpi
#define COMM_T integer
#define TEST_NAME 'fortran-mpi'
#endif
program test_fortran
  use, intrinsic :: iso_c_binding
  use MPI_MODULE
  use plancoll
  implicit none
  interface
    function c_alarm(seconds) bind(C, name='alarm')
      import :: c_int
      integer(c_int), value :: seconds
      integer(c_int) :: c_alarm
    end function
  end interface
  integer, parameter :: sentinel = -777, n = 3
  integer :: me, np, ierr, failures, checks, local(2), total(2), dummy
  COMM_T :: comm
  character(len=32) :: cliques
  integer :: clen, cstat

  failures = 0
  checks = 0
  call MPI_Init(ierr)
  comm = MPI_COMM_WORLD
  call MPI_Comm_rank(comm, me, ierr)
  call MPI_Comm_size(comm, np, ierr)

  call test_constants()
  call test_alltoall()
  call test_alltoall_in_place()
  call test_alltoallv()
  call test_allreduce()
  call test_nonblocking()
  call test_transpose()
  call test_inspect()
  call test_wisdom()
  call test_malloc()
  call test_bad_input()

  local = [failures, checks]
  call MPI_Allreduce(local, total, 2, MPI_INTEGER, MPI_SUM, comm, ierr)
  call get_environment_variable('MPIR_CVAR_NUM_CLIQUES', cliques, clen, cstat)
  if (cstat /= 0) cliques = '1'
  if (me == 0) then
    write(*, '(*(g0))') 'plancoll-test ', TEST_NAME, ' P=', np, ' cliques=', &
      trim(cliques), ': ', merge('PASS', 'FAIL', total(1) == 0), ' (', total(2), ' checks, ', total(1), ' failed)'
  end if
  flush(6)
  flush(0)
  dummy = c_alarm(2)
  call MPI_Finalize(ierr)
  if (total(1) /= 0) error stop 1

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (.not. ok) then
      failures = failures + 1
      if (failures <= 20) write(0, '(a, i0, a, a, a, a)') '[rank ', me, '] FAIL ', what, ': ', plancoll_error_detail()
    end if
  end subroutine

  ! A plancoll call that must succeed.
  subroutine ok(rc, what)
    integer, intent(in) :: rc
    character(len=*), intent(in) :: what
    call check(rc == PLANCOLL_SUCCESS, what // ' returned ' // plancoll_strerror(rc))
  end subroutine

  ! A collective call with bad arguments on the ranks where `mine`: `expected` there, `expected` or
  ! PLANCOLL_ERR_REMOTE elsewhere, and a detail on every rank.
  subroutine expect(rc, expected, mine, what)
    integer, intent(in) :: rc, expected
    logical, intent(in) :: mine
    character(len=*), intent(in) :: what
    if (mine) then
      call check(rc == expected, what // ': got ' // plancoll_strerror(rc))
    else
      call check(rc == expected .or. rc == PLANCOLL_ERR_REMOTE, what // ' (other rank): got ' // plancoll_strerror(rc))
    end if
    call check(len(plancoll_error_detail()) > 0, what // ': no detail')
  end subroutine

  ! The value rank s sends to rank d as element k in round it.
  integer function val(s, d, k, it)
    integer, intent(in) :: s, d, k, it
    val = 1000000 * it + 10000 * s + 100 * d + k
  end function

  subroutine test_constants()
    integer :: code, major, minor, patch
    character(len=:), allocatable :: unknown, message
    call check(PLANCOLL_SUCCESS == 0 .and. PLANCOLL_ESTIMATE == 0 .and. PLANCOLL_MEASURE == 1, 'flag values')
    call check(PLANCOLL_ERR_THREAD_LEVEL + 1 == PLANCOLL_ERR_COUNT_OF_CODES, 'last code')
    unknown = plancoll_strerror(PLANCOLL_ERR_COUNT_OF_CODES + 7)
    do code = 0, PLANCOLL_ERR_COUNT_OF_CODES - 1
      message = plancoll_strerror(code)
      call check(len(message) > 0 .and. message /= unknown, 'strerror of a code')
    end do
    call check(plancoll_version(major, minor, patch) == PLANCOLL_VERSION_STRING, 'version string')
    call check(major == PLANCOLL_VERSION_MAJOR .and. minor == PLANCOLL_VERSION_MINOR .and. &
      patch == PLANCOLL_VERSION_PATCH, 'version numbers')
    call check(PLANCOLL_VERSION_NUMBER == 10000 * major + 100 * minor + patch, 'PLANCOLL_VERSION_NUMBER')
  end subroutine

  ! Out of place, integer, a rank-2 buffer (n elements per rank), executed twice with new data, then on other
  ! buffers (execute_buffers).
  subroutine test_alltoall()
    integer, target :: send(n, 0:np - 1), recv(n, 0:np), send2(n, 0:np - 1), recv2(n, 0:np)
    type(c_ptr) :: plan
    integer :: it, s, d, k
    logical :: good
    call ok(plancoll_plan_alltoall(send, n, MPI_INTEGER, recv, n, MPI_INTEGER, comm, PLANCOLL_ESTIMATE, plan), &
      'plan_alltoall')
    do it = 1, 3
      do d = 0, np - 1
        do k = 1, n
          send(k, d) = val(me, d, k, it)
          send2(k, d) = -val(me, d, k, it)
        end do
      end do
      recv = sentinel
      recv2 = sentinel
      if (it < 3) then
        call ok(plancoll_execute(plan), 'execute alltoall')
      else
        call ok(plancoll_execute_buffers(plan, send2, recv2), 'execute_buffers alltoall')
      end if
      good = .true.
      do s = 0, np - 1
        do k = 1, n
          if (it < 3) good = good .and. recv(k, s) == val(s, me, k, it)
          if (it == 3) good = good .and. recv2(k, s) == -val(s, me, k, it)
        end do
      end do
      call check(good, 'alltoall values')
      call check(all(recv(:, np) == sentinel) .and. all(recv2(:, np) == sentinel), 'alltoall wrote past the end')
      if (it == 3) call check(all(recv == sentinel), 'execute_buffers wrote into the planned buffer')
    end do
    ! An out-of-place plan on MPI_IN_PLACE: refused, nothing written.
    recv = sentinel
    call check(plancoll_execute_buffers(plan, MPI_IN_PLACE, recv) == PLANCOLL_ERR_BUFFER, &
      'execute_buffers in place on an out-of-place plan')
    call check(all(recv == sentinel), 'refused execute_buffers wrote')
    call ok(plancoll_destroy_plan(plan), 'destroy alltoall')
    call check(.not. c_associated(plan), 'destroy sets the plan to NULL')
  end subroutine

  ! MPI_IN_PLACE from this program's MPI module, double precision.
  subroutine test_alltoall_in_place()
    double precision, target :: buf(2, 0:np)
    type(c_ptr) :: plan
    integer :: s, d, k
    logical :: good
    call ok(plancoll_plan_alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, 2, MPI_DOUBLE_PRECISION, comm, &
      PLANCOLL_ESTIMATE, plan), 'plan_alltoall in place')
    do d = 0, np - 1
      do k = 1, 2
        buf(k, d) = dble(val(me, d, k, 7)) + 0.25d0
      end do
    end do
    buf(:, np) = sentinel
    call ok(plancoll_execute(plan), 'execute alltoall in place')
    good = .true.
    do s = 0, np - 1
      do k = 1, 2
        good = good .and. buf(k, s) == dble(val(s, me, k, 7)) + 0.25d0
      end do
    end do
    call check(good, 'alltoall in place values')
    call check(all(buf(:, np) == sentinel), 'alltoall in place wrote past the end')
    call ok(plancoll_destroy_plan(plan), 'destroy alltoall in place')
  end subroutine

  ! Rank s sends cnt(s, d) = mod(s + d, 3) + 1 integers to rank d, packed in rank order.
  subroutine test_alltoallv()
    integer(c_int), target :: scounts(0:np - 1), sdispls(0:np - 1), rcounts(0:np - 1), rdispls(0:np - 1)
    integer, target, allocatable :: send(:), recv(:)
    type(c_ptr) :: plan
    integer :: s, d, k, total_s, total_r
    logical :: good
    total_s = 0
    total_r = 0
    do d = 0, np - 1
      scounts(d) = mod(me + d, 3) + 1
      sdispls(d) = total_s
      total_s = total_s + scounts(d)
      rcounts(d) = mod(d + me, 3) + 1
      rdispls(d) = total_r
      total_r = total_r + rcounts(d)
    end do
    allocate(send(0:total_s - 1), recv(0:total_r))
    do d = 0, np - 1
      do k = 0, scounts(d) - 1
        send(sdispls(d) + k) = val(me, d, k, 2)
      end do
    end do
    recv = sentinel
    call ok(plancoll_plan_alltoallv(send, scounts, sdispls, MPI_INTEGER, recv, rcounts, rdispls, MPI_INTEGER, comm, &
      PLANCOLL_ESTIMATE, plan), 'plan_alltoallv')
    scounts = -1 ! the library copied them
    call ok(plancoll_execute(plan), 'execute alltoallv')
    good = .true.
    do s = 0, np - 1
      do k = 0, rcounts(s) - 1
        good = good .and. recv(rdispls(s) + k) == val(s, me, k, 2)
      end do
    end do
    call check(good, 'alltoallv values')
    call check(recv(total_r) == sentinel, 'alltoallv wrote past the end')
    call ok(plancoll_destroy_plan(plan), 'destroy alltoallv')
  end subroutine

  ! Integer SUM out of place; double MAX in place (MPI_IN_PLACE), then in place on other buffers.
  subroutine test_allreduce()
    integer, parameter :: m = 5
    integer, target :: x(m), y(m + 1)
    double precision, target :: z(m), w(m)
    double precision :: expected
    type(c_ptr) :: plan
    integer :: i, r
    do i = 1, m
      x(i) = 100 * me + i
    end do
    y = sentinel
    call ok(plancoll_plan_allreduce(x, y, m, MPI_INTEGER, MPI_SUM, comm, PLANCOLL_ESTIMATE, plan), 'plan_allreduce')
    call ok(plancoll_execute(plan), 'execute allreduce')
    do i = 1, m
      call check(y(i) == 100 * (np * (np - 1) / 2) + np * i, 'allreduce sum value')
    end do
    call check(y(m + 1) == sentinel, 'allreduce wrote past the end')
    call check(all(x == [(100 * me + i, i = 1, m)]), 'allreduce changed its send buffer')
    call ok(plancoll_destroy_plan(plan), 'destroy allreduce')

    call ok(plancoll_plan_allreduce(MPI_IN_PLACE, z, m, MPI_DOUBLE_PRECISION, MPI_MAX, comm, PLANCOLL_ESTIMATE, &
      plan), 'plan_allreduce in place')
    do i = 1, m
      z(i) = dble(mod(7 * me + 3 * i, 11)) - 0.5d0 * me
      w(i) = -z(i)
    end do
    call ok(plancoll_execute(plan), 'execute allreduce in place')
    call ok(plancoll_execute_buffers(plan, MPI_IN_PLACE, w), 'execute_buffers allreduce in place')
    do i = 1, m
      expected = -huge(1d0)
      do r = 0, np - 1
        expected = max(expected, dble(mod(7 * r + 3 * i, 11)) - 0.5d0 * r)
      end do
      call check(z(i) == expected, 'allreduce max in place value')
      expected = -huge(1d0)
      do r = 0, np - 1
        expected = max(expected, -(dble(mod(7 * r + 3 * i, 11)) - 0.5d0 * r))
      end do
      call check(w(i) == expected, 'allreduce max execute_buffers value')
    end do
    call ok(plancoll_destroy_plan(plan), 'destroy allreduce in place')
  end subroutine

  ! A started plan (PLANCOLL_NONBLOCKING): start, test until done (or wait), twice.
  subroutine test_nonblocking()
    integer, target, asynchronous :: x(4), y(4)
    type(c_ptr) :: plan
    integer :: it, done, rc, i, pending
    call ok(plancoll_plan_allreduce(x, y, 4, MPI_INTEGER, MPI_SUM, comm, PLANCOLL_NONBLOCKING, plan), &
      'plan_allreduce nonblocking')
    do it = 1, 2
      x = [(it * (me + 1) * i, i = 1, 4)]
      y = sentinel
      call ok(plancoll_start(plan), 'start')
      if (it == 1) then
        done = 0
        do while (done == 0)
          rc = plancoll_test(plan, done)
          if (rc /= PLANCOLL_SUCCESS) exit
        end do
        call ok(rc, 'test')
      else
        call ok(plancoll_wait(plan), 'wait')
      end if
      call check(all(y == [(it * i * (np * (np + 1) / 2), i = 1, 4)]), 'nonblocking allreduce values')
    end do
    call ok(plancoll_waitall(1, [plan]), 'waitall on a complete plan')
    call ok(plancoll_progress(pending), 'progress')
    call check(pending == 0, 'progress: nothing pending once every plan is complete')
    call ok(plancoll_destroy_plan(plan), 'destroy nonblocking')
  end subroutine

  ! An n0 x n1 = 7 x 5 matrix of doubles (neither a multiple of 2 or 3 ranks), rows distributed by blocks. Element
  ! (r, c) is 1000 r + c; in Fortran's column-major order a C row of n1 elements is a column: in(c, r), out(r, c).
  subroutine test_transpose()
    integer(c_intptr_t), parameter :: n0 = 7, n1 = 5
    integer(c_intptr_t) :: ln0, l0, ln1, l1, count, r, c
    double precision, allocatable, target :: in(:, :), out(:, :)
    type(c_ptr) :: plan
    logical :: good
    count = plancoll_local_size_transposed(n0, n1, comm, ln0, l0, ln1, l1)
    call check(count >= max(1_c_intptr_t, ln0 * n1, ln1 * n0), 'local_size_transposed count')
    call check(ln0 == max(0_c_intptr_t, min((n0 + np - 1) / np, n0 - me * ((n0 + np - 1) / np))), 'local_n0')
    call check(ln1 == max(0_c_intptr_t, min((n1 + np - 1) / np, n1 - me * ((n1 + np - 1) / np))), 'local_n1')
    allocate(in(0:n1 - 1, 0:max(ln0, 1_c_intptr_t) - 1), out(0:n0 - 1, 0:max(ln1, 1_c_intptr_t) - 1))
    do r = 0, ln0 - 1
      do c = 0, n1 - 1
        in(c, r) = 1000d0 * (l0 + r) + c
      end do
    end do
    out = sentinel
    call ok(plancoll_plan_transpose(n0, n1, MPI_DOUBLE_PRECISION, in, out, comm, PLANCOLL_ESTIMATE, plan), &
      'plan_transpose')
    call ok(plancoll_execute(plan), 'execute transpose')
    good = .true.
    do c = 0, ln1 - 1
      do r = 0, n0 - 1
        good = good .and. out(r, c) == 1000d0 * r + (l1 + c)
      end do
    end do
    call check(good, 'transpose values')
    call ok(plancoll_destroy_plan(plan), 'destroy transpose')
    call check(plancoll_local_size_transposed(-1_c_intptr_t, n1, comm, ln0, l0, ln1, l1) == -PLANCOLL_ERR_COUNT, &
      'local_size_transposed of a negative size')
  end subroutine

  ! The plan's algorithm, spec and printout name the same algorithm; the registry lists it.
  subroutine test_inspect()
    double precision, target :: x(2), y(2)
    type(c_ptr) :: plan
    character(len=:), allocatable :: name, spec, text, coll
    character(len=200) :: line
    integer :: u, ios, i
    logical :: listed
    call ok(plancoll_plan_allreduce(x, y, 2, MPI_DOUBLE_PRECISION, MPI_SUM, comm, PLANCOLL_ESTIMATE, plan), &
      'plan_allreduce for inspection')
    name = plancoll_plan_algorithm(plan)
    call check(index(name, 'allreduce.') == 1, 'plan_algorithm is an allreduce algorithm: ' // name)
    call ok(plancoll_plan_spec(plan, spec), 'plan_spec')
    call check(index(spec, name) == 1, 'plan_spec starts with the algorithm: ' // spec)
    call ok(plancoll_sprint_plan(plan, text), 'sprint_plan')
    call check(index(text, name) > 0, 'sprint_plan names the algorithm')
    open(newunit=u, status='scratch', action='readwrite')
    call ok(plancoll_fprint_plan(plan, u), 'fprint_plan')
    rewind(u)
    listed = .false.
    do
      read(u, '(a)', iostat=ios) line
      if (ios /= 0) exit
      listed = listed .or. index(line, name) > 0
    end do
    close(u)
    call check(listed, 'fprint_plan wrote the algorithm to the unit')
    listed = .false.
    do i = 0, 1000
      if (len(plancoll_algorithm_name(i)) == 0) exit
      if (plancoll_algorithm_name(i, coll) == name) listed = coll == 'allreduce'
    end do
    call check(listed, 'algorithm_name lists the plan''s algorithm under allreduce')
    call check(plancoll_algorithm_name(100000) == '', 'algorithm_name past the last one')
    call ok(plancoll_destroy_plan(plan), 'destroy inspected plan')
  end subroutine

  subroutine test_wisdom()
    character(len=:), allocatable :: text, again
    character(len=256) :: path
    integer :: u
    write(path, '(a, a, a, i0, a)') '/tmp/plancoll-', TEST_NAME, '-P', np, '.wisdom'
    call plancoll_set_timelimit(PLANCOLL_NO_TIMELIMIT)
    call ok(plancoll_export_wisdom_to_filename(path, comm), 'export_wisdom_to_filename')
    call ok(plancoll_import_wisdom_from_filename(path, comm), 'import_wisdom_from_filename')
    call expect(plancoll_import_wisdom_from_filename('/nonexistent-dir/w', comm), PLANCOLL_ERR_IO, me == 0, &
      'import from a missing file')
    call ok(plancoll_export_wisdom_to_string(text, comm), 'export_wisdom_to_string')
    call check(len(text) > 0, 'wisdom text is empty')
    call ok(plancoll_import_wisdom_from_string(text, comm), 'import_wisdom_from_string')
    call ok(plancoll_export_wisdom_to_string(again, comm), 'export_wisdom_to_string again')
    call check(again == text, 'wisdom text changed by its own import')
    call expect(plancoll_import_wisdom_from_string('this is not wisdom', comm), PLANCOLL_ERR_WISDOM_FORMAT, &
      me == 0, 'import of malformed text')
    call ok(plancoll_forget_wisdom(), 'forget_wisdom')
    if (me == 0) then
      open(newunit=u, file=trim(path), status='old')
      close(u, status='delete')
      open(newunit=u, file=trim(path) // '.lock', status='unknown')
      close(u, status='delete')
    end if
  end subroutine

  ! Node-shared memory as a Fortran array: an allreduce planned on it.
  subroutine test_malloc()
    type(c_ptr) :: p
    double precision, pointer :: a(:)
    double precision, target :: b(3)
    type(c_ptr) :: plan
    call ok(plancoll_malloc(int(3 * 8, c_size_t), comm, p), 'malloc')
    call check(c_associated(p), 'malloc gave NULL')
    call c_f_pointer(p, a, [3])
    a = [1d0, 2d0, 3d0] * (me + 1)
    call ok(plancoll_plan_allreduce(a, b, 3, MPI_DOUBLE_PRECISION, MPI_SUM, comm, PLANCOLL_ESTIMATE, plan), &
      'plan_allreduce on malloc memory')
    call ok(plancoll_execute(plan), 'execute on malloc memory')
    call check(all(b == [1d0, 2d0, 3d0] * (np * (np + 1) / 2)), 'allreduce on malloc memory values')
    call ok(plancoll_destroy_plan(plan), 'destroy plan on malloc memory')
    call ok(plancoll_free(p), 'free')
    call ok(plancoll_free(c_null_ptr), 'free(NULL)')
  end subroutine

  subroutine test_bad_input()
    integer, target :: send(2, 0:np - 1), recv(2, 0:np - 1), big(4, 0:np - 1)
    type(c_ptr) :: plan, copy
    integer :: rc
    COMM_T :: null_comm
    null_comm = MPI_COMM_NULL
    send = 1
    ! No plan, a destroyed plan.
    call check(plancoll_execute(c_null_ptr) == PLANCOLL_ERR_NULL_PLAN, 'execute(NULL)')
    call check(len(plancoll_error_detail()) > 0, 'execute(NULL): no detail')
    call ok(plancoll_plan_alltoall(send, 2, MPI_INTEGER, recv, 2, MPI_INTEGER, comm, PLANCOLL_ESTIMATE, plan), &
      'plan for destroying')
    copy = plan
    call ok(plancoll_destroy_plan(plan), 'destroy')
    call check(plancoll_execute(copy) == PLANCOLL_ERR_INVALID_PLAN, 'execute of a destroyed plan')
    call check(plancoll_destroy_plan(copy) == PLANCOLL_ERR_INVALID_PLAN, 'destroy of a destroyed plan')
    call check(plancoll_plan_algorithm(copy) == '', 'plan_algorithm of a destroyed plan')
    plan = c_null_ptr
    call check(plancoll_destroy_plan(plan) == PLANCOLL_ERR_NULL_PLAN, 'destroy(NULL)')

    ! A negative count on the last rank only: every rank fails, nothing written.
    recv = sentinel
    rc = plancoll_plan_alltoall(send, merge(-1, 2, me == np - 1), MPI_INTEGER, recv, 2, MPI_INTEGER, comm, &
      PLANCOLL_ESTIMATE, plan)
    call expect(rc, PLANCOLL_ERR_COUNT, me == np - 1, 'negative sendcount')
    call check(all(recv == sentinel), 'negative sendcount: recv written')

    ! MPI_COMM_NULL, MPI_OP_NULL, a bad flag.
    call expect(plancoll_plan_alltoall(send, 2, MPI_INTEGER, recv, 2, MPI_INTEGER, null_comm, PLANCOLL_ESTIMATE, &
      plan), PLANCOLL_ERR_COMM, .true., 'MPI_COMM_NULL')
    call expect(plancoll_plan_allreduce(send, recv, 2, MPI_INTEGER, MPI_OP_NULL, comm, PLANCOLL_ESTIMATE, plan), &
      PLANCOLL_ERR_OP, .true., 'MPI_OP_NULL')
    call expect(plancoll_plan_allreduce(send, recv, 2, MPI_INTEGER, MPI_SUM, comm, -1, plan), PLANCOLL_ERR_FLAGS, &
      .true., 'flags -1')

    ! A non-contiguous section as the send buffer on rank 0 only: the module refuses it, the ranks agree.
    big = 3
    if (me == 0) then
      rc = plancoll_plan_alltoall(big(1:4:2, :), 2, MPI_INTEGER, recv, 2, MPI_INTEGER, comm, PLANCOLL_ESTIMATE, plan)
    else
      rc = plancoll_plan_alltoall(send, 2, MPI_INTEGER, recv, 2, MPI_INTEGER, comm, PLANCOLL_ESTIMATE, plan)
    end if
    call expect(rc, PLANCOLL_ERR_NULL_BUFFER, me == 0, 'non-contiguous send buffer')
    if (me == 0) call check(index(plancoll_error_detail(), 'non-contiguous') > 0, &
      'non-contiguous: the detail does not say so')
    call check(all(recv == sentinel), 'non-contiguous: recv written')
    ! The note belongs to that failure only.
    call check(plancoll_execute(c_null_ptr) == PLANCOLL_ERR_NULL_PLAN, 'execute(NULL) again')
    call check(index(plancoll_error_detail(), 'non-contiguous') == 0, 'a later failure still shows the note')
  end subroutine

end program test_fortran
