/* GPU test program for the g2gtrace tests (tests/test_tracer.py::test_real_gpu, run with --rungpu on
 * a machine with an NVIDIA GPU); exactly 2 ranks.  libcudart is dlopen'ed (G2G_LIBCUDART or the usual
 * names), so it builds with plain mpicc; the MPI need not be CUDA-aware: device buffers only go to
 * MPI_Bcast on MPI_COMM_SELF, which moves no data.
 *
 * Per rank: cudaMemcpy H2D; MPI_Bcast(device buffer, MPI_COMM_SELF) -> g2g:mem_space device;
 * rank 0 cudaMemcpy D2H + MPI_Send(host) / rank 1 MPI_Recv(host) + cudaMemcpy H2D -> host;
 * MPI_Allreduce(MPI_IN_PLACE, managed buffer) -> managed; one cudaMemcpyAsync D2D.  So CUPTI sees
 * 3 copies per rank. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*malloc_t)(void **, size_t);
typedef int (*malloc_managed_t)(void **, size_t, unsigned);
typedef int (*memcpy_t)(void *, const void *, size_t, int);
typedef int (*memcpy_async_t)(void *, const void *, size_t, int, void *);
typedef int (*sync_t)(void);

int main(int argc, char **argv)
{
    const char *names[] = {getenv("G2G_LIBCUDART"), "libcudart.so", "libcudart.so.13", "libcudart.so.12",
                           "/usr/local/cuda/lib64/libcudart.so"};
    void *rt = NULL;
    for (int i = 0; i < 5 && !rt; i++)
        if (names[i] && *names[i]) rt = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    if (!rt) {
        fprintf(stderr, "gpu_ping: no libcudart\n");
        return 2;
    }
    malloc_t cudaMalloc = (malloc_t)dlsym(rt, "cudaMalloc");
    malloc_managed_t cudaMallocManaged = (malloc_managed_t)dlsym(rt, "cudaMallocManaged");
    memcpy_t cudaMemcpy = (memcpy_t)dlsym(rt, "cudaMemcpy");
    memcpy_async_t cudaMemcpyAsync = (memcpy_async_t)dlsym(rt, "cudaMemcpyAsync");
    sync_t cudaDeviceSynchronize = (sync_t)dlsym(rt, "cudaDeviceSynchronize");

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) MPI_Abort(MPI_COMM_WORLD, 2);

    const size_t n = 1024 * sizeof(int);
    int *h = calloc(1024, sizeof(int));
    void *d = NULL, *m = NULL;
    if (cudaMalloc(&d, 2 * n) || cudaMallocManaged(&m, n, 1)) {
        fprintf(stderr, "gpu_ping: CUDA allocation failed\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    for (int i = 0; i < 1024; i++) ((int *)m)[i] = rank;
    cudaMemcpy(d, h, n, 1);                                  /* H2D */
    MPI_Bcast(d, 1024, MPI_INT, 0, MPI_COMM_SELF);           /* device buffer, no data moved */
    if (rank == 0) {
        cudaMemcpy(h, d, n, 2);                              /* D2H */
        MPI_Send(h, 1024, MPI_INT, 1, 5, MPI_COMM_WORLD);
    } else {
        MPI_Recv(h, 1024, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        cudaMemcpy(d, h, n, 1);                              /* H2D */
    }
    MPI_Allreduce(MPI_IN_PLACE, m, 1024, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* managed buffer */
    cudaMemcpyAsync((char *)d + n, d, n, 3, NULL);           /* D2D */
    cudaDeviceSynchronize();
    int ok = ((int *)m)[7] == 1;
    MPI_Finalize();
    return ok ? 0 : 4;
}
