"""mpi4py test program for the g2gtrace tests (tests/test_tracer.py); run with exactly 4 ranks.

Per rank: 1 Send + 1 Recv (ring, buffer interface), 1 Isend + 1 Irecv + Waitall, Bcast,
Allreduce, Comm.Split + Allreduce on it + Free.
"""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
assert size == 4, "run with 4 ranks"
right, left = (rank + 1) % size, (rank - 1) % size
a = np.full(16, rank, dtype=np.float64)
b = np.empty(16, dtype=np.float64)
if rank % 2 == 0:
    comm.Send(a, dest=right, tag=1)
    comm.Recv(b, source=left, tag=1)
else:
    comm.Recv(b, source=left, tag=1)
    comm.Send(a, dest=right, tag=1)
assert b[0] == left
reqs = [comm.Irecv(b, source=left, tag=2), comm.Isend(a, dest=right, tag=2)]
MPI.Request.Waitall(reqs)
c = np.arange(8, dtype=np.int64)
comm.Bcast(c, root=0)
d = np.empty_like(c)
comm.Allreduce(c, d, op=MPI.SUM)
assert d[1] == size
sub = comm.Split(rank % 2, rank)
e = np.ones(4, dtype=np.float32)
f = np.empty_like(e)
sub.Allreduce(e, f, op=MPI.SUM)
assert f[0] == 2
sub.Free()
