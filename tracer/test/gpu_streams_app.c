/* Test program for GPU streams in g2gtrace (tests/test_gpu_streams.py): a 1D Jacobi on a ring of
 * ranks with the kernels on two streams of the fake GPU of tracer/test/fake_cupti.c (seed 004).
 *
 *   gpu_streams_app overlap|serial [iterations]
 *
 * Setup (after MPI_Init): boundary stream (priority -1), interior stream (priority 0), one event.
 * Per iteration: launch "boundary" (100 us) on the boundary stream, cudaEventRecord(ev, boundary),
 * launch "interior" (1000 us) on the interior stream, then
 *   overlap: cudaEventSynchronize(ev), halo exchange (Irecv x2, Isend x2, Waitall),
 *            cudaStreamSynchronize(interior);
 *   serial:  cudaStreamSynchronize(boundary), cudaStreamSynchronize(interior), halo exchange.
 * After the loop: cudaStreamWaitEvent(interior, ev), launch "final" (50 us) on the interior
 * stream, an async 4 KiB D2H copy on the boundary stream, cudaDeviceSynchronize, and a call the
 * tracer does not record.  Halo messages are 8 KiB, tags 1 (to the right) and 2 (to the left).
 *
 * Without the fake CUPTI (G2G_LIBCUPTI unset or another library) it only exchanges halos. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *(*stream_create_t)(int);
typedef void (*launch_t)(const char *, void *, unsigned long);
typedef void (*stream_t)(void *);
typedef void (*void_t)(void);
typedef void *(*event_create_t)(void);
typedef void (*event_stream_t)(void *, void *);
typedef void (*memcpy_async_t)(int, unsigned long, void *);

static void *sym(void *h, const char *name) { return h ? dlsym(h, name) : NULL; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int overlap = argc > 1 && !strcmp(argv[1], "overlap");
    int iters = argc > 2 ? atoi(argv[2]) : 3;

    const char *lib = getenv("G2G_LIBCUPTI");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    stream_create_t stream_create = (stream_create_t)sym(h, "g2gfake_stream_create");
    launch_t launch = (launch_t)sym(h, "g2gfake_launch");
    stream_t stream_sync = (stream_t)sym(h, "g2gfake_stream_sync");
    void_t device_sync = (void_t)sym(h, "g2gfake_device_sync");
    event_create_t event_create = (event_create_t)sym(h, "g2gfake_event_create");
    event_stream_t event_record = (event_stream_t)sym(h, "g2gfake_event_record");
    stream_t event_sync = (stream_t)sym(h, "g2gfake_event_sync");
    event_stream_t stream_wait_event = (event_stream_t)sym(h, "g2gfake_stream_wait_event");
    memcpy_async_t memcpy_async = (memcpy_async_t)sym(h, "g2gfake_memcpy_async");
    void_t get_device = (void_t)sym(h, "g2gfake_get_device");
    int gpu = stream_create && launch && stream_sync && device_sync && event_create && event_record &&
              event_sync && stream_wait_event && memcpy_async && get_device;

    void *boundary = gpu ? stream_create(-1) : NULL;
    void *interior = gpu ? stream_create(0) : NULL;
    void *ev = gpu ? event_create() : NULL;

    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    static double send_r[1024], send_l[1024], recv_r[1024], recv_l[1024];
    for (int it = 0; it < iters; it++) {
        if (gpu) {
            launch("boundary", boundary, 100000);
            event_record(ev, boundary);
            launch("interior", interior, 1000000);
            if (overlap) {
                event_sync(ev);
            } else {
                stream_sync(boundary);
                stream_sync(interior);
            }
        }
        MPI_Request req[4];
        MPI_Irecv(recv_l, 1024, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(recv_r, 1024, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(send_r, 1024, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(send_l, 1024, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        if (gpu && overlap) stream_sync(interior);
    }
    if (gpu) {
        stream_wait_event(interior, ev);
        launch("final", interior, 50000);
        memcpy_async(2 /* DtoH */, 4096, boundary);
        device_sync();
        get_device();
    }
    MPI_Finalize();
    return 0;
}
