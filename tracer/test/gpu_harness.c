/*
 * GPU check of g2gtrace's CUDA code without MPI: links src/cuda.c alone, loads the real
 * libcuda.so.1 / libcudart / libcupti, and
 *   1. classifies malloc, cudaMallocHost, cudaMalloc and cudaMallocManaged pointers with
 *      g2g_mem_space (expect host, host, device, managed) and times it;
 *   2. records cudaMemcpy / cudaMemcpyAsync through CUPTI and writes them with g2g_cupti_write into
 *      a one-location OTF2 archive (argv[1], default ./gpu-trace) for otf2-print.
 * Exit status 0 when every classification is right and CUPTI delivered the 5 copies made.
 *
 *   make -C tracer gpu-harness && tracer/build/gpu_harness /tmp/gpu-trace && otf2-print /tmp/gpu-trace/traces.otf2
 *
 * Environment: G2G_LIBCUDA, G2G_LIBCUPTI as for the tracer; G2G_LIBCUDART for the runtime.
 */
#include "../src/g2g.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* the tracer state that cuda.c uses (core.c is not linked) */
G2G_INTERNAL g2g_state g2g;
G2G_INTERNAL __thread int g2g_depth;
G2G_INTERNAL __thread uint64_t g2g_ts_last;
G2G_INTERNAL __thread int g2g_ts_post;

typedef int (*malloc_t)(void **, size_t);
typedef int (*malloc_managed_t)(void **, size_t, unsigned);
typedef int (*memcpy_t)(void *, const void *, size_t, int);
typedef int (*memcpy_async_t)(void *, const void *, size_t, int, void *);
typedef int (*sync_t)(void);

static void *open_cudart(void)
{
    const char *env = getenv("G2G_LIBCUDART");
    if (env && *env) return dlopen(env, RTLD_NOW | RTLD_GLOBAL);
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                        "/usr/local/cuda/lib64/libcudart.so", NULL};
    for (int i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
        if (h) return h;
    }
    return NULL;
}

static OTF2_FlushType pre_flush(void *u, OTF2_FileType f, OTF2_LocationRef l, void *c, bool fin)
{
    (void)u; (void)f; (void)l; (void)c; (void)fin;
    return OTF2_FLUSH;
}
static OTF2_TimeStamp post_flush(void *u, OTF2_FileType f, OTF2_LocationRef l)
{
    (void)u; (void)f; (void)l;
    return g2g_now();
}

static const char *space_name(uint8_t s)
{
    static const char *const n[] = {"host", "device", "managed", "unknown", "pinned"};
    return s < 5 ? n[s] : "?";
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "gpu-trace";
    int bad = 0;
    g2g_cuda_init();
    void *rt = open_cudart();
    if (!rt) {
        fprintf(stderr, "gpu_harness: no libcudart (set G2G_LIBCUDART): %s\n", dlerror());
        return 2;
    }
    malloc_t cudaMalloc = (malloc_t)dlsym(rt, "cudaMalloc");
    malloc_t cudaMallocHost = (malloc_t)dlsym(rt, "cudaMallocHost");
    malloc_managed_t cudaMallocManaged = (malloc_managed_t)dlsym(rt, "cudaMallocManaged");
    memcpy_t cudaMemcpy = (memcpy_t)dlsym(rt, "cudaMemcpy");
    memcpy_async_t cudaMemcpyAsync = (memcpy_async_t)dlsym(rt, "cudaMemcpyAsync");
    sync_t cudaDeviceSynchronize = (sync_t)dlsym(rt, "cudaDeviceSynchronize");
    if (!cudaMalloc || !cudaMallocHost || !cudaMallocManaged || !cudaMemcpy || !cudaMemcpyAsync ||
        !cudaDeviceSynchronize) {
        fprintf(stderr, "gpu_harness: libcudart lacks a needed function\n");
        return 2;
    }

    const size_t n = 1 << 20;
    char *p = malloc(n);
    uint8_t before = g2g_mem_space(p, n);
    printf("malloc before CUDA init: %s\n", space_name(before));
    bad |= before != G2G_MEM_HOST;

    g2g_cupti_init();
    printf("CUPTI memcpy activity: %s\n", g2g_cupti_active() ? "on" : "OFF");

    void *d = NULL, *m = NULL, *h = NULL;
    int rc = cudaMalloc(&d, n) | cudaMallocManaged(&m, n, 1) | cudaMallocHost(&h, n);
    if (rc) {
        fprintf(stderr, "gpu_harness: CUDA allocation failed (%d)\n", rc);
        return 2;
    }
    struct {
        const char *what;
        const void *ptr;
        uint8_t want;
    } cases[] = {
        {"malloc", p, G2G_MEM_HOST},           {"cudaMallocHost", h, G2G_MEM_PINNED},
        {"cudaMalloc", d, G2G_MEM_DEVICE},     {"cudaMalloc+4096", (char *)d + 4096, G2G_MEM_DEVICE},
        {"cudaMallocManaged", m, G2G_MEM_MANAGED}, {"stack", &rc, G2G_MEM_HOST},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint8_t s = g2g_mem_space(cases[i].ptr, 8);
        printf("%-18s -> %-8s %s\n", cases[i].what, space_name(s), s == cases[i].want ? "ok" : "WRONG");
        bad |= s != cases[i].want;
    }
    const int reps = 100000;
    uint64_t t0 = g2g_raw_now();
    unsigned sink = 0;
    for (int i = 0; i < reps; i++) sink += g2g_mem_space(d, 8);
    uint64_t t1 = g2g_raw_now();
    for (int i = 0; i < reps; i++) sink += g2g_mem_space(p, 8);
    uint64_t t2 = g2g_raw_now();
    printf("g2g_mem_space: %.1f ns (device pointer), %.1f ns (host pointer) [%u]\n",
           (double)(t1 - t0) / reps, (double)(t2 - t1) / reps, sink);

    /* 5 copies: H2D, D2H, D2D (sync), H2D and D2H async from pinned memory on the default stream */
    rc = cudaMemcpy(d, p, n, 1) | cudaMemcpy(p, d, n, 2) | cudaMemcpy((char *)d + n / 2, d, n / 2, 3) |
         cudaMemcpyAsync(d, h, 4096, 1, NULL) | cudaMemcpyAsync(h, d, 8192, 2, NULL) | cudaDeviceSynchronize();
    if (rc) {
        fprintf(stderr, "gpu_harness: cudaMemcpy failed (%d)\n", rc);
        return 2;
    }

    g2g.t_first = UINT64_MAX;
    g2g.t_last = 0;
    OTF2_Archive *ar = OTF2_Archive_Open(dir, "traces", OTF2_FILEMODE_WRITE, 1 << 20, 4 << 20, OTF2_SUBSTRATE_POSIX,
                                         OTF2_COMPRESSION_NONE);
    OTF2_FlushCallbacks fc = {pre_flush, post_flush};
    OTF2_Archive_SetFlushCallbacks(ar, &fc, NULL);
    OTF2_Archive_SetSerialCollectiveCallbacks(ar);
    OTF2_Archive_OpenEvtFiles(ar);
    uint64_t nev = g2g_cupti_write(ar, 0, 0, &g2g.t_first, &g2g.t_last);
    OTF2_Archive_CloseEvtFiles(ar);
    OTF2_GlobalDefWriter *w = OTF2_Archive_GetGlobalDefWriter(ar);
    OTF2_GlobalDefWriter_WriteClockProperties(w, 1000000000ull, nev ? g2g.t_first : 0,
                                              nev ? g2g.t_last - g2g.t_first + 1 : 1, 0);
    OTF2_GlobalDefWriter_WriteString(w, 0, "");
    OTF2_GlobalDefWriter_WriteString(w, 1, "gpu_harness");
    OTF2_GlobalDefWriter_WriteString(w, 2, "CUDA memcpy");
    const char *an[] = {"g2g:copy_kind", "g2g:stream", "g2g:async"};
    const OTF2_Type at[] = {OTF2_TYPE_UINT8, OTF2_TYPE_UINT32, OTF2_TYPE_UINT8};
    for (int a = 0; a < 3; a++) {
        OTF2_GlobalDefWriter_WriteString(w, 3 + a, an[a]);
        OTF2_GlobalDefWriter_WriteAttribute(w, A_COPY_KIND + a, 3 + a, 0, at[a]);
    }
    OTF2_GlobalDefWriter_WriteSystemTreeNode(w, 0, 1, 1, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    OTF2_GlobalDefWriter_WriteLocationGroup(w, 0, 1, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0, OTF2_UNDEFINED_LOCATION_GROUP);
    OTF2_GlobalDefWriter_WriteLocation(w, 0, 2, OTF2_LOCATION_TYPE_ACCELERATOR_STREAM, nev, 0);
    OTF2_GlobalDefWriter_WriteRmaWin(w, 0, 2, OTF2_UNDEFINED_COMM, OTF2_RMA_WIN_FLAG_NONE);
    OTF2_Archive_Close(ar);
    printf("CUPTI copies written: %llu events (want 10) to %s/traces.otf2\n", (unsigned long long)nev, dir);
    bad |= nev != 10;
    return bad ? 1 : 0;
}
