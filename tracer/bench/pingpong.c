/* Overhead benchmark for g2gtrace: a ping-pong of small messages between ranks 0 and 1.
 *
 *   mpirun -np 2 ./build/pingpong [iterations=100000] [bytes=8]
 *   mpirun -np 2 -x LD_PRELOAD=$PWD/build/libg2gtrace.so ./build/pingpong ...
 *
 * Prints the mean round-trip time.  Every round trip puts four MPI calls on the critical path
 * (Send, Recv on the other rank, its Send, Recv back), so the tracer's cost per call is
 * (traced round trip - plain round trip) / 4.  The run is repeated five times; the best is kept. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = argc > 1 ? atol(argv[1]) : 100000;
    int bytes = argc > 2 ? atoi(argv[2]) : 8;
    char *buf = calloc((size_t)(bytes > 0 ? bytes : 1), 1);
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rank == 0) {
            for (long i = 0; i < iters; i++) {
                MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else if (rank == 1) {
            for (long i = 0; i < iters; i++) {
                MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        double t = (MPI_Wtime() - t0) / (double)iters;
        if (t < best) best = t;
    }
    if (rank == 0) printf("pingpong: %ld iterations x 5, %d bytes, best round trip %.1f ns\n", iters, bytes, best * 1e9);
    free(buf);
    MPI_Finalize();
    return 0;
}
