! plancoll's Fortran interface: module plancoll (docs/fortran.md).
!
! The C API of include/plancoll.h in FFTW's Fortran 2003 style: every function keeps its C name and argument
! order, plans are type(c_ptr), flags and error codes are integer(c_int) parameters generated from the C header
! at build time (plancoll_constants.inc, src/fortran/gen-constants.py), and the functions that return a code in
! C are integer functions here too. Strings come back as Fortran strings (deferred length).
!
! MPI handles: each function taking one is a generic name with two specific procedures, one for `use mpi`
! integer handles and one for `use mpi_f08` derived types (whose MPI_VAL is the same integer). Both reach the
! C shims of src/fortran/shims.c, which convert with MPI_Comm_f2c / MPI_Type_f2c / MPI_Op_f2c.
!
! Buffers are assumed-type, assumed-rank (type(*), dimension(..)): any type, scalar or array of any rank, no
! copy. plancoll keeps the buffers' addresses in the plan, so they must be contiguous (a non-contiguous section
! is refused: the call then fails on every rank with PLANCOLL_ERR_NULL_BUFFER, and plancoll_error_detail says
! why) and must stay where they are while the plan lives (give them TARGET, or ASYNCHRONOUS for started plans,
! so that the compiler knows plancoll_execute may write them).
!
! MPI_IN_PLACE: both MPI modules' MPI_IN_PLACE are recognised by address (in MPICH they are two different
! variables, in Open MPI one) and passed to the library as C's MPI_IN_PLACE.
module plancoll
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only : output_unit
  use mpi, only : mpi_in_place_of_mpi => MPI_IN_PLACE
  use mpi_f08, only : MPI_Comm, MPI_Datatype, MPI_Op, mpi_in_place_of_f08 => MPI_IN_PLACE
  implicit none
  private

  include 'plancoll_constants.inc'

  ! ---- Generic names over both kinds of MPI handles ----------------------------------------------------------
  public :: plancoll_plan_alltoall, plancoll_plan_alltoallv, plancoll_plan_allreduce
  public :: plancoll_local_size_transposed, plancoll_plan_transpose, plancoll_plan_transpose_pieces
  public :: plancoll_export_wisdom_to_filename, plancoll_import_wisdom_from_filename
  public :: plancoll_export_wisdom_to_string, plancoll_import_wisdom_from_string
  public :: plancoll_malloc
  ! ---- Plan calls, no MPI handle ------------------------------------------------------------------------------
  public :: plancoll_execute, plancoll_execute_buffers, plancoll_start, plancoll_start_buffers
  public :: plancoll_test, plancoll_wait, plancoll_waitall, plancoll_progress, plancoll_destroy_plan
  public :: plancoll_transpose_piece_rows, plancoll_start_piece
  public :: plancoll_fprint_plan, plancoll_sprint_plan, plancoll_plan_algorithm, plancoll_plan_spec
  public :: plancoll_algorithm_name
  ! ---- The rest ------------------------------------------------------------------------------------------------
  public :: plancoll_forget_wisdom, plancoll_set_timelimit, plancoll_free
  public :: plancoll_strerror, plancoll_error_detail, plancoll_version

  interface plancoll_plan_alltoall
    module procedure plan_alltoall_mpi, plan_alltoall_f08
  end interface
  interface plancoll_plan_alltoallv
    module procedure plan_alltoallv_mpi, plan_alltoallv_f08
  end interface
  interface plancoll_plan_allreduce
    module procedure plan_allreduce_mpi, plan_allreduce_f08
  end interface
  interface plancoll_local_size_transposed
    module procedure local_size_transposed_mpi, local_size_transposed_f08
  end interface
  interface plancoll_plan_transpose
    module procedure plan_transpose_mpi, plan_transpose_f08
  end interface
  interface plancoll_plan_transpose_pieces
    module procedure plan_transpose_pieces_mpi, plan_transpose_pieces_f08
  end interface
  interface plancoll_export_wisdom_to_filename
    module procedure export_wisdom_to_filename_mpi, export_wisdom_to_filename_f08
  end interface
  interface plancoll_import_wisdom_from_filename
    module procedure import_wisdom_from_filename_mpi, import_wisdom_from_filename_f08
  end interface
  interface plancoll_export_wisdom_to_string
    module procedure export_wisdom_to_string_mpi, export_wisdom_to_string_f08
  end interface
  interface plancoll_import_wisdom_from_string
    module procedure import_wisdom_from_string_mpi, import_wisdom_from_string_f08
  end interface
  interface plancoll_malloc
    module procedure malloc_mpi, malloc_f08
  end interface

  ! ---- The C library's functions without MPI handles, bound directly ---------------------------------------
  interface
    integer(c_int) function plancoll_execute(plan) bind(C, name='plancoll_execute')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
    end function
    integer(c_int) function plancoll_start(plan) bind(C, name='plancoll_start')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
    end function
    integer(c_int) function plancoll_test(plan, done) bind(C, name='plancoll_test')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      integer(c_int), intent(out) :: done
    end function
    integer(c_int) function plancoll_wait(plan) bind(C, name='plancoll_wait')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
    end function
    integer(c_int) function plancoll_progress(pending) bind(C, name='plancoll_progress')
      import :: c_int
      integer(c_int), intent(out) :: pending
    end function
    integer(c_int) function plancoll_waitall(n, plans) bind(C, name='plancoll_waitall')
      import :: c_int, c_ptr
      integer(c_int), value :: n
      type(c_ptr), intent(in) :: plans(*)
    end function
    integer(c_int) function plancoll_destroy_plan(plan) bind(C, name='plancoll_destroy_plan')
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: plan
    end function
    integer(c_int) function plancoll_transpose_piece_rows(plan, k, lo, count) &
        bind(C, name='plancoll_transpose_piece_rows')
      import :: c_int, c_ptr, c_intptr_t
      type(c_ptr), value :: plan
      integer(c_int), value :: k
      integer(c_intptr_t), intent(out) :: lo, count
    end function
    integer(c_int) function plancoll_start_piece(plan, k) bind(C, name='plancoll_start_piece')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      integer(c_int), value :: k
    end function
    integer(c_int) function plancoll_forget_wisdom() bind(C, name='plancoll_forget_wisdom')
      import :: c_int
    end function
    subroutine plancoll_set_timelimit(seconds) bind(C, name='plancoll_set_timelimit')
      import :: c_double
      real(c_double), value :: seconds
    end subroutine
    integer(c_int) function plancoll_free(ptr) bind(C, name='plancoll_free')
      import :: c_int, c_ptr
      type(c_ptr), value :: ptr
    end function
  end interface

  ! ---- The C library's functions wrapped below (strings, buffers), and the shims --------------------------
  interface
    integer(c_int) function c_execute_buffers(plan, sendbuf, recvbuf) bind(C, name='plancoll_execute_buffers')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan, sendbuf, recvbuf
    end function
    integer(c_int) function c_start_buffers(plan, sendbuf, recvbuf) bind(C, name='plancoll_start_buffers')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan, sendbuf, recvbuf
    end function
    type(c_ptr) function c_plan_algorithm(plan) bind(C, name='plancoll_plan_algorithm')
      import :: c_ptr
      type(c_ptr), value :: plan
    end function
    integer(c_int) function c_plan_spec(plan, buf, len) bind(C, name='plancoll_plan_spec')
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: plan
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: len
    end function
    type(c_ptr) function c_algorithm_name(index, collective) bind(C, name='plancoll_algorithm_name')
      import :: c_int, c_ptr
      integer(c_int), value :: index
      type(c_ptr), intent(out) :: collective
    end function
    type(c_ptr) function c_strerror(code) bind(C, name='plancoll_strerror')
      import :: c_int, c_ptr
      integer(c_int), value :: code
    end function
    type(c_ptr) function c_error_detail() bind(C, name='plancoll_error_detail')
      import :: c_ptr
    end function
    type(c_ptr) function c_version(major, minor, patch) bind(C, name='plancoll_version')
      import :: c_ptr, c_int
      integer(c_int), intent(out) :: major, minor, patch
    end function

    type(c_ptr) function f_mpi_in_place() bind(C, name='plancoll_f_mpi_in_place')
      import :: c_ptr
    end function
    integer(c_size_t) function f_strlen(s) bind(C, name='plancoll_f_strlen')
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function
    subroutine f_free_string(s) bind(C, name='plancoll_f_free_string')
      import :: c_ptr
      type(c_ptr), value :: s
    end subroutine
    integer(c_int) function f_sprint_plan(plan, text) bind(C, name='plancoll_f_sprint_plan')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      type(c_ptr), intent(out) :: text
    end function
    integer(c_int) function f_plan_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &
        flags, plan) bind(C, name='plancoll_f_plan_alltoall')
      import :: c_int, c_ptr
      type(c_ptr), value :: sendbuf, recvbuf
      integer(c_int), value :: sendcount, sendtype, recvcount, recvtype, comm, flags
      type(c_ptr), intent(out) :: plan
    end function
    integer(c_int) function f_plan_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, &
        rdispls, recvtype, comm, flags, plan) bind(C, name='plancoll_f_plan_alltoallv')
      import :: c_int, c_ptr
      type(c_ptr), value :: sendbuf, recvbuf, sendcounts, sdispls, recvcounts, rdispls
      integer(c_int), value :: sendtype, recvtype, comm, flags
      type(c_ptr), intent(out) :: plan
    end function
    integer(c_int) function f_plan_allreduce(sendbuf, recvbuf, count, datatype, op, comm, flags, plan) &
        bind(C, name='plancoll_f_plan_allreduce')
      import :: c_int, c_ptr
      type(c_ptr), value :: sendbuf, recvbuf
      integer(c_int), value :: count, datatype, op, comm, flags
      type(c_ptr), intent(out) :: plan
    end function
    integer(c_intptr_t) function f_local_size_transposed(n0, n1, comm, local_n0, local_0_start, local_n1, &
        local_1_start) bind(C, name='plancoll_f_local_size_transposed')
      import :: c_int, c_intptr_t
      integer(c_intptr_t), value :: n0, n1
      integer(c_int), value :: comm
      integer(c_intptr_t), intent(out) :: local_n0, local_0_start, local_n1, local_1_start
    end function
    integer(c_int) function f_plan_transpose(n0, n1, element, in, out, comm, flags, plan) &
        bind(C, name='plancoll_f_plan_transpose')
      import :: c_int, c_intptr_t, c_ptr
      integer(c_intptr_t), value :: n0, n1
      integer(c_int), value :: element, comm, flags
      type(c_ptr), value :: in, out
      type(c_ptr), intent(out) :: plan
    end function
    integer(c_int) function f_plan_transpose_pieces(n0, n1, element, in, out, comm, flags, pieces, plan) &
        bind(C, name='plancoll_f_plan_transpose_pieces')
      import :: c_int, c_intptr_t, c_ptr
      integer(c_intptr_t), value :: n0, n1
      integer(c_int), value :: element, comm, flags, pieces
      type(c_ptr), value :: in, out
      type(c_ptr), intent(out) :: plan
    end function
    integer(c_int) function f_export_wisdom_to_filename(path, comm) &
        bind(C, name='plancoll_f_export_wisdom_to_filename')
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: path(*)
      integer(c_int), value :: comm
    end function
    integer(c_int) function f_import_wisdom_from_filename(path, comm) &
        bind(C, name='plancoll_f_import_wisdom_from_filename')
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: path(*)
      integer(c_int), value :: comm
    end function
    integer(c_int) function f_export_wisdom_to_string(text, comm) bind(C, name='plancoll_f_export_wisdom_to_string')
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: text
      integer(c_int), value :: comm
    end function
    integer(c_int) function f_import_wisdom_from_string(text, comm) &
        bind(C, name='plancoll_f_import_wisdom_from_string')
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: text(*)
      integer(c_int), value :: comm
    end function
    integer(c_int) function f_malloc(size, comm, ptr) bind(C, name='plancoll_f_malloc')
      import :: c_int, c_size_t, c_ptr
      integer(c_size_t), value :: size
      integer(c_int), value :: comm
      type(c_ptr), intent(out) :: ptr
    end function
  end interface

  ! Why the last failure was the module's doing (a non-contiguous buffer), and the C detail it goes with: the note
  ! is shown by plancoll_error_detail only while the C library's detail is still that failure's.
  character(len=:), allocatable :: fortran_note, fortran_note_detail

contains

  ! ---- Buffers -------------------------------------------------------------------------------------------------

  ! The address of x as the dummy sees it: the actual argument itself (assumed rank passes a descriptor, no copy).
  function address_of(x) result(p)
    type(*), dimension(..), target, intent(in) :: x
    type(c_ptr) :: p
    p = c_loc(x)
  end function

  ! What the C library gets for the buffer argument `name`: C's MPI_IN_PLACE for either module's MPI_IN_PLACE, the
  ! address of a contiguous buffer, or NULL (the library then fails on every rank alike) with a note for
  ! plancoll_error_detail for a non-contiguous one, whose elements the library would not find where it looks.
  function buffer_address(buf, name) result(p)
    type(*), dimension(..), target, intent(in) :: buf
    character(len=*), intent(in) :: name
    type(c_ptr) :: p
    p = c_loc(buf)
    if (c_associated(p, address_of(mpi_in_place_of_mpi)) .or. c_associated(p, address_of(mpi_in_place_of_f08))) then
      p = f_mpi_in_place()
    else if (.not. is_contiguous(buf)) then
      p = c_null_ptr
      fortran_note = name // ' is a non-contiguous array section (plancoll needs contiguous storage)'
    end if
  end function

  ! Called by every wrapper after the C call: ties a note to this failure's detail, or forgets it.
  subroutine settle_note(rc)
    integer(c_int), intent(in) :: rc
    if (.not. allocated(fortran_note)) return
    if (rc /= PLANCOLL_SUCCESS .and. len(fortran_note) > 0) then
      fortran_note_detail = c_string(c_error_detail())
    else
      fortran_note = ''
    end if
  end subroutine

  subroutine clear_note()
    if (allocated(fortran_note)) fortran_note = ''
  end subroutine

  ! ---- Strings -------------------------------------------------------------------------------------------------

  ! A copy of the NUL-terminated C string at p ('' for NULL).
  function c_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer(c_size_t) :: n, i
    n = 0
    if (c_associated(p)) n = f_strlen(p)
    allocate(character(len=n) :: s)
    if (n == 0) return
    call c_f_pointer(p, chars, [n])
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

  ! A Fortran string as C wants it: trailing blanks trimmed, NUL-terminated.
  function c_chars(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=:), allocatable :: c
    c = trim(s) // c_null_char
  end function

  ! ---- Plans: alltoall, alltoallv, allreduce ----------------------------------------------------------------

  integer(c_int) function plan_alltoall_mpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &
      flags, plan) result(rc)
    type(*), dimension(..), target, intent(in) :: sendbuf
    type(*), dimension(..), target :: recvbuf
    integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, comm, flags
    type(c_ptr), intent(out) :: plan
    call clear_note()
    rc = f_plan_alltoall(buffer_address(sendbuf, 'sendbuf'), sendcount, sendtype, &
      buffer_address(recvbuf, 'recvbuf'), recvcount, recvtype, comm, flags, plan)
    call settle_note(rc)
  end function

  integer(c_int) function plan_alltoall_f08(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &
      flags, plan) result(rc)
    type(*), dimension(..), target, intent(in) :: sendbuf
    type(*), dimension(..), target :: recvbuf
    integer, intent(in) :: sendcount, recvcount, flags
    type(MPI_Datatype), intent(in) :: sendtype, recvtype
    type(MPI_Comm), intent(in) :: comm
    type(c_ptr), intent(out) :: plan
    rc = plan_alltoall_mpi(sendbuf, sendcount, sendtype%MPI_VAL, recvbuf, recvcount, recvtype%MPI_VAL, &
      comm%MPI_VAL, flags, plan)
  end function

  ! The count and displacement arrays are copied by the library at plan time: any integer arrays of P elements.
  integer(c_int) function plan_alltoallv_mpi(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, &
      rdispls, recvtype, comm, flags, plan) result(rc)
    type(*), dimension(..), target, intent(in) :: sendbuf
    integer(c_int), dimension(*), target, intent(in) :: sendcounts, sdispls, recvcounts, rdispls
    type(*), dimension(..), target :: recvbuf
    integer, intent(in) :: sendtype, recvtype, comm, flags
    type(c_ptr), intent(out) :: plan
    call clear_note()
    rc = f_plan_alltoallv(buffer_address(sendbuf, 'sendbuf'), c_loc(sendcounts), c_loc(sdispls), sendtype, &
      buffer_address(recvbuf, 'recvbuf'), c_loc(recvcounts), c_loc(rdispls), recvtype, comm, flags, plan)
    call settle_note(rc)
  end function

  integer(c_int) function plan_alltoallv_f08(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, &
      rdispls, recvtype, comm, flags, plan) result(rc)
    type(*), dimension(..), target, intent(in) :: sendbuf
    integer(c_int), dimension(*), target, intent(in) :: sendcounts, sdispls, recvcounts, rdispls
    type(*), dimension(..), target :: recvbuf
    type(MPI_Datatype), intent(in) :: sendtype, recvtype
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: flags
    type(c_ptr), intent(out) :: plan
    rc = plan_alltoallv_mpi(sendbuf, sendcounts, sdispls, sendtype%MPI_VAL, recvbuf, recvcounts, rdispls, &
      recvtype%MPI_VAL, comm%MPI_VAL, flags, plan)
  end function

  integer(c_int) function plan_allreduce_mpi(sendbuf, recvbuf, count, datatype, op, comm, flags, plan) result(rc)
    type(*), dimension(..), target, intent(in) :: sendbuf
    type(*), dimension(..), target :: recvbuf
    integer, intent(in) :: count, datatype, op, comm, flags
    type(c_ptr), intent(out) :: plan
    call clear_note()
    rc = f_plan_allreduce(buffer_address(sendbuf, 'sendbuf'), buffer_address(recvbuf, 'recvbuf'), count, &
      datatype, op, comm, flags, plan)
    call settle_note(rc)
  end function

  integer(c_int) function plan_allreduce_f08(sendbuf, recvbuf, count, datatype, op, comm, flags, plan) result(rc)
    type(*), dimension(..), target, intent(in) :: sendbuf
    type(*), dimension(..), target :: recvbuf
    integer, intent(in) :: count, flags
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Op), intent(in) :: op
    type(MPI_Comm), intent(in) :: comm
    type(c_ptr), intent(out) :: plan
    rc = plan_allreduce_mpi(sendbuf, recvbuf, count, datatype%MPI_VAL, op%MPI_VAL, comm%MPI_VAL, flags, plan)
  end function

  ! ---- Transposes ----------------------------------------------------------------------------------------------

  integer(c_intptr_t) function local_size_transposed_mpi(n0, n1, comm, local_n0, local_0_start, local_n1, &
      local_1_start) result(count)
    integer(c_intptr_t), intent(in) :: n0, n1
    integer, intent(in) :: comm
    integer(c_intptr_t), intent(out) :: local_n0, local_0_start, local_n1, local_1_start
    count = f_local_size_transposed(n0, n1, comm, local_n0, local_0_start, local_n1, local_1_start)
  end function

  integer(c_intptr_t) function local_size_transposed_f08(n0, n1, comm, local_n0, local_0_start, local_n1, &
      local_1_start) result(count)
    integer(c_intptr_t), intent(in) :: n0, n1
    type(MPI_Comm), intent(in) :: comm
    integer(c_intptr_t), intent(out) :: local_n0, local_0_start, local_n1, local_1_start
    count = f_local_size_transposed(n0, n1, comm%MPI_VAL, local_n0, local_0_start, local_n1, local_1_start)
  end function

  integer(c_int) function plan_transpose_mpi(n0, n1, element, in, out, comm, flags, plan) result(rc)
    integer(c_intptr_t), intent(in) :: n0, n1
    integer, intent(in) :: element, comm, flags
    type(*), dimension(..), target :: in, out
    type(c_ptr), intent(out) :: plan
    call clear_note()
    rc = f_plan_transpose(n0, n1, element, buffer_address(in, 'in'), buffer_address(out, 'out'), comm, flags, plan)
    call settle_note(rc)
  end function

  integer(c_int) function plan_transpose_f08(n0, n1, element, in, out, comm, flags, plan) result(rc)
    integer(c_intptr_t), intent(in) :: n0, n1
    type(MPI_Datatype), intent(in) :: element
    type(*), dimension(..), target :: in, out
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: flags
    type(c_ptr), intent(out) :: plan
    rc = plan_transpose_mpi(n0, n1, element%MPI_VAL, in, out, comm%MPI_VAL, flags, plan)
  end function

  integer(c_int) function plan_transpose_pieces_mpi(n0, n1, element, in, out, comm, flags, pieces, plan) result(rc)
    integer(c_intptr_t), intent(in) :: n0, n1
    integer, intent(in) :: element, comm, flags, pieces
    type(*), dimension(..), target :: in, out
    type(c_ptr), intent(out) :: plan
    call clear_note()
    rc = f_plan_transpose_pieces(n0, n1, element, buffer_address(in, 'in'), buffer_address(out, 'out'), comm, &
      flags, pieces, plan)
    call settle_note(rc)
  end function

  integer(c_int) function plan_transpose_pieces_f08(n0, n1, element, in, out, comm, flags, pieces, plan) result(rc)
    integer(c_intptr_t), intent(in) :: n0, n1
    type(MPI_Datatype), intent(in) :: element
    type(*), dimension(..), target :: in, out
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: flags, pieces
    type(c_ptr), intent(out) :: plan
    rc = plan_transpose_pieces_mpi(n0, n1, element%MPI_VAL, in, out, comm%MPI_VAL, flags, pieces, plan)
  end function

  ! ---- Executing on other buffers ------------------------------------------------------------------------------

  integer(c_int) function plancoll_execute_buffers(plan, sendbuf, recvbuf) result(rc)
    type(c_ptr), intent(in) :: plan
    type(*), dimension(..), target, intent(in) :: sendbuf
    type(*), dimension(..), target :: recvbuf
    call clear_note()
    rc = c_execute_buffers(plan, buffer_address(sendbuf, 'sendbuf'), buffer_address(recvbuf, 'recvbuf'))
    call settle_note(rc)
  end function

  integer(c_int) function plancoll_start_buffers(plan, sendbuf, recvbuf) result(rc)
    type(c_ptr), intent(in) :: plan
    type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
    type(*), dimension(..), target, asynchronous :: recvbuf
    call clear_note()
    rc = c_start_buffers(plan, buffer_address(sendbuf, 'sendbuf'), buffer_address(recvbuf, 'recvbuf'))
    call settle_note(rc)
  end function

  ! ---- Inspecting plans ----------------------------------------------------------------------------------------

  ! plancoll_fprint_plan's text, written line by line to unit (default: the standard output unit).
  integer(c_int) function plancoll_fprint_plan(plan, unit) result(rc)
    type(c_ptr), intent(in) :: plan
    integer, intent(in), optional :: unit
    character(len=:), allocatable :: text
    integer :: u, start, nl
    u = output_unit
    if (present(unit)) u = unit
    rc = plancoll_sprint_plan(plan, text)
    if (rc /= PLANCOLL_SUCCESS) return
    start = 1
    do while (start <= len(text))
      nl = index(text(start:), new_line('a'))
      if (nl == 0) then
        write(u, '(a)') text(start:)
        exit
      end if
      write(u, '(a)') text(start:start + nl - 2)
      start = start + nl
    end do
  end function

  ! Fortran only: plancoll_fprint_plan's text as a string (lines separated by new_line('a')).
  integer(c_int) function plancoll_sprint_plan(plan, text) result(rc)
    type(c_ptr), intent(in) :: plan
    character(len=:), allocatable, intent(out) :: text
    type(c_ptr) :: c_text
    rc = f_sprint_plan(plan, c_text)
    text = c_string(c_text)
    call f_free_string(c_text)
  end function

  ! The plan's algorithm ("alltoall.pairwise"), '' for an invalid plan (C: NULL).
  function plancoll_plan_algorithm(plan) result(name)
    type(c_ptr), intent(in) :: plan
    character(len=:), allocatable :: name
    name = c_string(c_plan_algorithm(plan))
  end function

  ! The plan's full spec (PLANCOLL_ALGORITHM syntax) in spec, sized to fit; the C function's codes.
  integer(c_int) function plancoll_plan_spec(plan, spec) result(rc)
    type(c_ptr), intent(in) :: plan
    character(len=:), allocatable, intent(out) :: spec
    character(kind=c_char), allocatable, target :: buf(:)
    integer(c_size_t) :: n
    n = 256
    do
      allocate(buf(n))
      rc = c_plan_spec(plan, buf, n)
      if (rc /= PLANCOLL_ERR_OVERFLOW .or. n >= 2**20) exit
      deallocate(buf)
      n = 4 * n
    end do
    if (rc == PLANCOLL_SUCCESS) then
      spec = c_string(c_loc(buf))
    else
      spec = ''
    end if
  end function

  ! The name of registered algorithm number index (0, 1, ...), '' past the last one; its collective in collective.
  function plancoll_algorithm_name(index, collective) result(name)
    integer, intent(in) :: index
    character(len=:), allocatable, intent(out), optional :: collective
    character(len=:), allocatable :: name
    type(c_ptr) :: c_coll
    name = c_string(c_algorithm_name(index, c_coll))
    if (present(collective)) then
      collective = ''
      if (len(name) > 0) collective = c_string(c_coll)
    end if
  end function

  ! ---- Wisdom --------------------------------------------------------------------------------------------------
  ! path and text matter on rank 0 only (as in C, where the others may pass NULL); trailing blanks are trimmed.

  integer(c_int) function export_wisdom_to_filename_mpi(path, comm) result(rc)
    character(len=*), intent(in) :: path
    integer, intent(in) :: comm
    rc = f_export_wisdom_to_filename(c_chars(path), comm)
  end function

  integer(c_int) function export_wisdom_to_filename_f08(path, comm) result(rc)
    character(len=*), intent(in) :: path
    type(MPI_Comm), intent(in) :: comm
    rc = f_export_wisdom_to_filename(c_chars(path), comm%MPI_VAL)
  end function

  integer(c_int) function import_wisdom_from_filename_mpi(path, comm) result(rc)
    character(len=*), intent(in) :: path
    integer, intent(in) :: comm
    rc = f_import_wisdom_from_filename(c_chars(path), comm)
  end function

  integer(c_int) function import_wisdom_from_filename_f08(path, comm) result(rc)
    character(len=*), intent(in) :: path
    type(MPI_Comm), intent(in) :: comm
    rc = f_import_wisdom_from_filename(c_chars(path), comm%MPI_VAL)
  end function

  integer(c_int) function export_wisdom_to_string_mpi(text, comm) result(rc)
    character(len=:), allocatable, intent(out) :: text
    integer, intent(in) :: comm
    type(c_ptr) :: c_text
    rc = f_export_wisdom_to_string(c_text, comm)
    text = c_string(c_text)
    call f_free_string(c_text)
  end function

  integer(c_int) function export_wisdom_to_string_f08(text, comm) result(rc)
    character(len=:), allocatable, intent(out) :: text
    type(MPI_Comm), intent(in) :: comm
    rc = export_wisdom_to_string_mpi(text, comm%MPI_VAL)
  end function

  integer(c_int) function import_wisdom_from_string_mpi(text, comm) result(rc)
    character(len=*), intent(in) :: text
    integer, intent(in) :: comm
    rc = f_import_wisdom_from_string(text // c_null_char, comm)
  end function

  integer(c_int) function import_wisdom_from_string_f08(text, comm) result(rc)
    character(len=*), intent(in) :: text
    type(MPI_Comm), intent(in) :: comm
    rc = f_import_wisdom_from_string(text // c_null_char, comm%MPI_VAL)
  end function

  ! ---- Node-shared memory: ptr as fftw_alloc gives it (c_f_pointer makes it an array) ------------------------

  integer(c_int) function malloc_mpi(size, comm, ptr) result(rc)
    integer(c_size_t), intent(in) :: size
    integer, intent(in) :: comm
    type(c_ptr), intent(out) :: ptr
    rc = f_malloc(size, comm, ptr)
  end function

  integer(c_int) function malloc_f08(size, comm, ptr) result(rc)
    integer(c_size_t), intent(in) :: size
    type(MPI_Comm), intent(in) :: comm
    type(c_ptr), intent(out) :: ptr
    rc = f_malloc(size, comm%MPI_VAL, ptr)
  end function

  ! ---- Errors and version --------------------------------------------------------------------------------------

  function plancoll_strerror(code) result(message)
    integer, intent(in) :: code
    character(len=:), allocatable :: message
    message = c_string(c_strerror(code))
  end function

  ! The last failure's detail; when the module refused a buffer for it, why, first.
  function plancoll_error_detail() result(detail)
    character(len=:), allocatable :: detail
    detail = c_string(c_error_detail())
    if (allocated(fortran_note) .and. allocated(fortran_note_detail)) then
      if (len(fortran_note) > 0 .and. detail == fortran_note_detail) detail = fortran_note // ': ' // detail
    end if
  end function

  ! The library's version as built ("0.1.0"), its parts in major, minor, patch when given.
  function plancoll_version(major, minor, patch) result(version)
    integer, intent(out), optional :: major, minor, patch
    character(len=:), allocatable :: version
    integer(c_int) :: ma, mi, pa
    version = c_string(c_version(ma, mi, pa))
    if (present(major)) major = ma
    if (present(minor)) minor = mi
    if (present(patch)) patch = pa
  end function

end module plancoll
