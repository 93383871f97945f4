! Test program for llamp's tracer, Fortran ("use mpi"): non-blocking collectives on
! MPI_COMM_WORLD overlapped with computation, data checked (MPI_Abort with error code 3 on a
! mismatch). Any rank count >= 2. Per rank: Iallreduce (Wait); Ibcast, Ibarrier, Ialltoall,
! Igatherv (Waitall); Iscan (a Test loop): six collective instances.
program nonblocking
  use mpi
  implicit none
  integer :: rank, nranks, ierr, i, me, total, root_value, scanned
  integer :: req(4)
  integer, allocatable :: counts(:), displs(:), outbox(:), inbox(:), gathered(:)
  logical :: flag
  double precision :: x

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  allocate(counts(nranks), displs(nranks), outbox(nranks), inbox(nranks), gathered(nranks))
  do i = 1, nranks
    counts(i) = 1
    displs(i) = i - 1
    outbox(i) = rank
  end do
  me = rank
  x = 0.0d0

  call MPI_Iallreduce(me, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req(1), ierr)
  do i = 1, 100000
    x = x + 1.0d-9 * i
  end do
  call MPI_Wait(req(1), MPI_STATUS_IGNORE, ierr)
  if (total /= nranks * (nranks - 1) / 2) call MPI_Abort(MPI_COMM_WORLD, 3, ierr)

  root_value = -1
  if (rank == 0) root_value = 7
  call MPI_Ibcast(root_value, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Ibarrier(MPI_COMM_WORLD, req(2), ierr)
  call MPI_Ialltoall(outbox, 1, MPI_INTEGER, inbox, 1, MPI_INTEGER, MPI_COMM_WORLD, req(3), ierr)
  call MPI_Igatherv(me, 1, MPI_INTEGER, gathered, counts, displs, MPI_INTEGER, 0, &
                    MPI_COMM_WORLD, req(4), ierr)
  do i = 1, 50000
    x = x + 1.0d-9 * i
  end do
  call MPI_Waitall(4, req, MPI_STATUSES_IGNORE, ierr)
  if (root_value /= 7) call MPI_Abort(MPI_COMM_WORLD, 3, ierr)
  if (inbox(nranks) /= nranks - 1) call MPI_Abort(MPI_COMM_WORLD, 3, ierr)
  if (rank == 0 .and. gathered(nranks) /= nranks - 1) call MPI_Abort(MPI_COMM_WORLD, 3, ierr)

  call MPI_Iscan(me, scanned, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req(1), ierr)
  flag = .false.
  do while (.not. flag)
    x = x + 1.0d-9
    call MPI_Test(req(1), flag, MPI_STATUS_IGNORE, ierr)
  end do
  if (scanned /= rank * (rank + 1) / 2) call MPI_Abort(MPI_COMM_WORLD, 3, ierr)

  if (x < 0.0d0) print *, x
  call MPI_Finalize(ierr)
end program nonblocking
