! Fortran test program for the g2gtrace tests (tests/test_tracer.py); run with exactly 4 ranks.
! Per rank: 1 MPI_SEND + 1 MPI_RECV (ring), 1 MPI_ISEND + 1 MPI_IRECV + MPI_WAITALL, MPI_BCAST,
! MPI_ALLREDUCE with MPI_IN_PLACE, MPI_COMM_SPLIT + MPI_BARRIER on it + MPI_COMM_FREE.
program ping
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, left, right, sub, i
  integer :: reqs(2), stats(MPI_STATUS_SIZE, 2), st(MPI_STATUS_SIZE)
  double precision :: a(10), b(10), c(4)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  a = rank
  if (mod(rank, 2) == 0) then
    call MPI_SEND(a, 10, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, ierr)
    call MPI_RECV(b, 10, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, st, ierr)
  else
    call MPI_RECV(b, 10, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_SEND(a, 10, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, ierr)
  end if
  call MPI_IRECV(b, 10, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_ISEND(a, 10, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_WAITALL(2, reqs, stats, ierr)
  if (b(1) /= left) stop 3
  call MPI_BCAST(c, 4, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  c = 1
  call MPI_ALLREDUCE(MPI_IN_PLACE, c, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, 4
    if (c(i) /= nprocs) stop 4
  end do
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(rank, 2), rank, sub, ierr)
  call MPI_BARRIER(sub, ierr)
  call MPI_COMM_FREE(sub, ierr)
  call MPI_FINALIZE(ierr)
end program ping
