! Test program for llamp's tracer, Fortran ("use mpi"): known MPI calls per rank, data checked
! (MPI_Abort with error code 3 on a mismatch). Needs an even number of ranks >= 2.
!
! Point-to-point messages each rank sends (= receives), ITERS = 4:
!   ITERS x Send/Recv around a ring                                     1 each
!   ITERS x Irecv x2, Isend x2 (both neighbours), Waitall(4, statuses)  2 each
!   ITERS x Startall(2) + Waitall(2) on Send_init/Recv_init             1 each
!   Irecv + Isend completed by a Test loop and Wait                     1
!   Irecv x2 + Isend x2 completed by Waitany x2 and Waitall             2
!   Sendrecv with the neighbours                                        1
! Collectives: Allreduce (MPI_IN_PLACE) and Bcast on Comm_split(mod(rank, 2)), Barrier x2;
! on MPI_COMM_WORLD Alltoall, Gatherv (count arrays at the root only) and Reduce (MPI_IN_PLACE
! at the root).
program ring
  use mpi
  implicit none
  integer, parameter :: n = 32, iters = 4
  integer :: rank, nranks, left, right, ierr, it, r, half, hrank, idx, k, root_value
  integer :: req(4), preq(2)
  integer, allocatable :: counts(:), displs(:), gathered(:), spread(:), got(:)
  integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 4)
  double precision :: sbuf(n), rbuf(n), rbuf2(n), x, expect
  logical :: flag

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)

  do it = 1, iters
    sbuf = rank * 100 + it
    if (mod(rank, 2) == 0) then
      call MPI_Send(sbuf, n, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, ierr)
      call MPI_Recv(rbuf, n, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, status, ierr)
    else
      call MPI_Recv(rbuf, n, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, status, ierr)
      call MPI_Send(sbuf, n, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, ierr)
    end if
    call check(rbuf(1) == left * 100 + it .and. status(MPI_SOURCE) == left, 'Recv')
  end do

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  do it = 1, iters
    sbuf = rank
    call MPI_Irecv(rbuf, n, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, req(1), ierr)
    call MPI_Irecv(rbuf2, n, MPI_DOUBLE_PRECISION, right, 3, MPI_COMM_WORLD, req(2), ierr)
    call MPI_Isend(sbuf, n, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, req(3), ierr)
    call MPI_Isend(sbuf, n, MPI_DOUBLE_PRECISION, left, 3, MPI_COMM_WORLD, req(4), ierr)
    call MPI_Waitall(4, req, statuses, ierr)
    call check(rbuf(1) == left .and. rbuf2(1) == right .and. statuses(MPI_SOURCE, 1) == left &
               .and. statuses(MPI_TAG, 2) == 3 .and. req(1) == MPI_REQUEST_NULL, 'Waitall')
  end do

  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierr)
  call MPI_Comm_rank(half, hrank, ierr)
  x = rank
  call MPI_Allreduce(MPI_IN_PLACE, x, 1, MPI_DOUBLE_PRECISION, MPI_SUM, half, ierr)
  expect = 0
  do r = mod(rank, 2), nranks - 1, 2
    expect = expect + r
  end do
  call check(x == expect, 'Allreduce(MPI_IN_PLACE) on the split communicator')
  root_value = -1
  if (hrank == 0) root_value = 100 + rank
  call MPI_Bcast(root_value, 1, MPI_INTEGER, 0, half, ierr)
  call check(root_value == 100 + mod(rank, 2), 'Bcast on the split communicator')

  call MPI_Send_init(sbuf, n, MPI_DOUBLE_PRECISION, right, 4, MPI_COMM_WORLD, preq(1), ierr)
  call MPI_Recv_init(rbuf, n, MPI_DOUBLE_PRECISION, left, 4, MPI_COMM_WORLD, preq(2), ierr)
  do it = 1, iters
    sbuf = rank + it
    call MPI_Startall(2, preq, ierr)
    call MPI_Waitall(2, preq, MPI_STATUSES_IGNORE, ierr)
    call check(rbuf(1) == left + it, 'persistent Startall/Waitall')
  end do
  call MPI_Request_free(preq(1), ierr)
  call MPI_Request_free(preq(2), ierr)

  sbuf = -rank
  call MPI_Irecv(rbuf, n, MPI_DOUBLE_PRECISION, left, 5, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(sbuf, n, MPI_DOUBLE_PRECISION, right, 5, MPI_COMM_WORLD, req(2), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req(1), flag, status, ierr)
  end do
  call MPI_Wait(req(2), MPI_STATUS_IGNORE, ierr)
  call check(rbuf(1) == -left .and. status(MPI_SOURCE) == left, 'Test')

  call MPI_Irecv(rbuf, n, MPI_DOUBLE_PRECISION, left, 6, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Irecv(rbuf2, n, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Isend(sbuf, n, MPI_DOUBLE_PRECISION, right, 6, MPI_COMM_WORLD, req(3), ierr)
  call MPI_Isend(sbuf, n, MPI_DOUBLE_PRECISION, left, 7, MPI_COMM_WORLD, req(4), ierr)
  do k = 1, 2
    call MPI_Waitany(2, req, idx, status, ierr)
    call check(idx >= 1 .and. idx <= 2 .and. req(idx) == MPI_REQUEST_NULL, 'Waitany index')
  end do
  call MPI_Waitall(2, req(3:4), MPI_STATUSES_IGNORE, ierr)
  call check(rbuf(1) == -left .and. rbuf2(1) == -right, 'Waitany')

  call MPI_Sendrecv(sbuf, n, MPI_DOUBLE_PRECISION, right, 8, rbuf, n, MPI_DOUBLE_PRECISION, &
                    left, 8, MPI_COMM_WORLD, status, ierr)
  call check(rbuf(1) == -left .and. status(MPI_SOURCE) == left, 'Sendrecv')

  allocate (counts(nranks), displs(nranks), gathered(nranks), spread(nranks), got(nranks))
  do r = 1, nranks
    counts(r) = 1
    displs(r) = r - 1
    spread(r) = rank * 10 + r - 1
  end do
  call MPI_Alltoall(spread, 1, MPI_INTEGER, got, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(got(nranks) == (nranks - 1) * 10 + rank, 'Alltoall')
  call MPI_Gatherv(rank, 1, MPI_INTEGER, gathered, counts, displs, MPI_INTEGER, 0, &
                   MPI_COMM_WORLD, ierr)
  call check(rank /= 0 .or. gathered(nranks) == nranks - 1, 'Gatherv')
  x = rank
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, x, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    call check(x == nranks * (nranks - 1) / 2, 'Reduce(MPI_IN_PLACE)')
  else
    call MPI_Reduce(x, expect, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  end if

  call MPI_Comm_free(half, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: err
    if (.not. ok) then
      write (*, '(a,i0,2a)') 'rank ', rank, ': wrong data after ', what
      call MPI_Abort(MPI_COMM_WORLD, 3, err)
    end if
  end subroutine check

end program ring
