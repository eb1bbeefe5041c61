/* Test program for the g2gtrace tests (tests/test_tracer.py); run with exactly 4 ranks.
 *
 * Per rank it makes: 1 MPI_Send + 1 MPI_Recv (ring), 3 MPI_Isend + 3 MPI_Irecv + 1 MPI_Waitall
 * (all-to-all exchange), MPI_Bcast + MPI_Allreduce on MPI_COMM_WORLD, MPI_Comm_split into
 * even/odd ranks + MPI_Allreduce on it + MPI_Comm_free, MPI_Ibcast + MPI_Wait, one MPI_Sendrecv
 * with a strided (non-contiguous) vector type, MPI_Finalize.
 *
 * With a fake libcuda (G2G_LIBCUDA) that exports g2gfake_set_device and g2gfake_set_pinned, the
 * Isend buffers are marked as device memory and the Irecv buffers as page-locked host memory; with a fake libcupti (G2G_LIBCUPTI) exporting g2gfake_memcpy, rank r records
 * r + 1 host-to-device copies of 4096 bytes.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) {
        if (rank == 0) fprintf(stderr, "run with 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    double isend_buf[3][16], irecv_buf[3][16];
    const char *fake_cuda = getenv("G2G_LIBCUDA");
    if (fake_cuda) {
        void *h = dlopen(fake_cuda, RTLD_NOW | RTLD_NOLOAD);
        void (*set_device)(const void *, size_t) = h ? (void (*)(const void *, size_t))dlsym(h, "g2gfake_set_device") : NULL;
        if (set_device) set_device(isend_buf, sizeof isend_buf);
        void (*set_pinned)(const void *, size_t) = h ? (void (*)(const void *, size_t))dlsym(h, "g2gfake_set_pinned") : NULL;
        if (set_pinned) set_pinned(irecv_buf, sizeof irecv_buf);
    }
    const char *fake_cupti = getenv("G2G_LIBCUPTI");
    if (fake_cupti) {
        void *h = dlopen(fake_cupti, RTLD_NOW | RTLD_NOLOAD);
        void (*memcpy_)(int, unsigned long) = h ? (void (*)(int, unsigned long))dlsym(h, "g2gfake_memcpy") : NULL;
        if (memcpy_)
            for (int i = 0; i <= rank; i++) memcpy_(1 /* HtoD */, 4096);
    }

    /* ring: even ranks send first */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[8] = {rank}, in[8];
    if (rank % 2 == 0) {
        MPI_Send(out, 8, MPI_INT, right, 1, MPI_COMM_WORLD);
        MPI_Recv(in, 8, MPI_INT, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(in, 8, MPI_INT, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(out, 8, MPI_INT, right, 1, MPI_COMM_WORLD);
    }

    /* all-to-all with Isend/Irecv/Waitall */
    MPI_Request reqs[6];
    int k = 0;
    for (int p = 0; p < size; p++) {
        if (p == rank) continue;
        MPI_Irecv(irecv_buf[k], 16, MPI_DOUBLE, p, 2, MPI_COMM_WORLD, &reqs[2 * k]);
        isend_buf[k][0] = rank;
        MPI_Isend(isend_buf[k], 16, MPI_DOUBLE, p, 2, MPI_COMM_WORLD, &reqs[2 * k + 1]);
        k++;
    }
    MPI_Waitall(6, reqs, MPI_STATUSES_IGNORE);

    long v = rank, sum = 0;
    MPI_Bcast(&v, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&rank, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    float f[4] = {1, 2, 3, 4}, g[4];
    MPI_Allreduce(f, g, 4, MPI_FLOAT, MPI_SUM, half);
    MPI_Comm_free(&half);

    MPI_Request r;
    double d[32] = {0};
    MPI_Ibcast(d, 32, MPI_DOUBLE, 1, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);

    /* strided vector: every other int of 8 */
    MPI_Datatype vec;
    MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Sendrecv(out, 1, vec, right, 3, in, 1, vec, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Type_free(&vec);

    MPI_Finalize();
    return 0;
}
