/* A small MPI(+CUDA) halo exchange for docs/tutorial.md.
 *
 * Each rank owns N doubles of a 1D ring; per iteration it sends its edges to both neighbours
 * (MPI_Irecv / MPI_Isend / MPI_Waitall), updates its interior (the "kernel") and every 10th
 * iteration reduces a residual (MPI_Allreduce).
 *
 *   CPU only:          mpicc -O2 -o halo examples/halo/halo.c
 *   MPI + CUDA:        nvcc -x cu -O2 -DUSE_CUDA -ccbin mpicxx -o halo examples/halo/halo.c
 *
 * With USE_CUDA the field lives on the GPU and the program stages every halo through host memory
 * (cudaMemcpy device -> host, MPI, host -> device): the HostCopy pattern that GPU-aware MPI removes.
 * Arguments: [N doubles per rank, default 262144] [iterations, default 50].
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef USE_CUDA
#include <cuda_runtime.h>
__global__ void relax(double *u, const double *v, long n)
{
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x + 1;
    if (i < n - 1) u[i] = 0.5 * v[i] + 0.25 * (v[i - 1] + v[i + 1]);
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long n = argc > 1 ? atol(argv[1]) : 262144;
    int iters = argc > 2 ? atoi(argv[2]) : 50;
    long halo = n / 16;                        /* doubles per edge message */
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    size_t bytes = (size_t)(n + 2 * halo) * sizeof(double);
    double *u = (double *)malloc(bytes), *v = (double *)malloc(bytes);
    double *sl = (double *)malloc(halo * sizeof(double)), *sr = (double *)malloc(halo * sizeof(double));
    double *rl = (double *)malloc(halo * sizeof(double)), *rr = (double *)malloc(halo * sizeof(double));
    for (long i = 0; i < n + 2 * halo; i++) u[i] = v[i] = rank + i * 1e-6;
#ifdef USE_CUDA
    int ndev = 1;
    cudaGetDeviceCount(&ndev);
    cudaSetDevice(rank % ndev);
    double *du, *dv;
    cudaMalloc((void **)&du, bytes);
    cudaMalloc((void **)&dv, bytes);
    cudaMemcpy(du, u, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dv, v, bytes, cudaMemcpyHostToDevice);
#endif
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        MPI_Request req[4];
#ifdef USE_CUDA   /* stage the edges through the host */
        cudaMemcpy(sl, du + halo, halo * sizeof(double), cudaMemcpyDeviceToHost);
        cudaMemcpy(sr, du + n, halo * sizeof(double), cudaMemcpyDeviceToHost);
#else
        memcpy(sl, u + halo, halo * sizeof(double));
        memcpy(sr, u + n, halo * sizeof(double));
#endif
        MPI_Irecv(rl, (int)halo, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(rr, (int)halo, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(sl, (int)halo, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(sr, (int)halo, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
#ifdef USE_CUDA
        cudaMemcpy(du, rl, halo * sizeof(double), cudaMemcpyHostToDevice);
        cudaMemcpy(du + n + halo, rr, halo * sizeof(double), cudaMemcpyHostToDevice);
        relax<<<(unsigned)((n + 2 * halo + 255) / 256), 256>>>(dv, du, n + 2 * halo);
        double *t = du; du = dv; dv = t;
        cudaDeviceSynchronize();
#else
        memcpy(u, rl, halo * sizeof(double));
        memcpy(u + n + halo, rr, halo * sizeof(double));
        for (long i = 1; i < n + 2 * halo - 1; i++) v[i] = 0.5 * u[i] + 0.25 * (u[i - 1] + u[i + 1]);
        double *t = u; u = v; v = t;
#endif
        if (it % 10 == 9) {
            double local = u[halo], global = 0;
            MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
    }
    if (rank == 0)
        printf("halo: %d ranks, %ld doubles per rank, %d iterations, %.3f s\n", size, n, iters, MPI_Wtime() - t0);
    MPI_Finalize();
    return 0;
}
