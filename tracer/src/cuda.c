/*
 * g2gtrace CUDA support, all optional and all through dlopen:
 *   - buffer memory space (host / device / managed) with cuPointerGetAttributes from libcuda.so.1;
 *   - cudaMemcpy* activity from CUPTI (libcupti.so), written at MPI_Finalize onto one extra OTF2
 *     location per rank as RmaGet/RmaPut + RmaOpCompleteBlocking.
 * Without libcuda every buffer is "host"; without libcupti no memcpy is recorded.
 */
#include "g2g.h"
#include "cuda_api.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------------------------------
 * Memory space of a buffer
 * --------------------------------------------------------------------------------------------- */
static struct {
    void *lib;
    g2g_cuPointerGetAttributes_t get_attrs;
    g2g_cuPointerGetAttribute_t get_attr;
} cu;

static int env_off(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

G2G_INTERNAL void g2g_cuda_init(void)
{
    if (env_off("G2G_NO_CUDA")) return;
    const char *path = getenv("G2G_LIBCUDA");
    if (!path || !*path) path = "libcuda.so.1";
    cu.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) return;
    cu.get_attrs = (g2g_cuPointerGetAttributes_t)dlsym(cu.lib, "cuPointerGetAttributes");
    cu.get_attr = (g2g_cuPointerGetAttribute_t)dlsym(cu.lib, "cuPointerGetAttribute");
    if (!cu.get_attrs && !cu.get_attr) {
        dlclose(cu.lib);
        cu.lib = NULL;
    }
}

static uint8_t classify(uint64_t memtype, uint64_t managed)
{
    if (managed) return G2G_MEM_MANAGED;
    switch ((unsigned)memtype) {
    case 0:
    case G2G_CU_MEMORYTYPE_HOST: return G2G_MEM_HOST;
    case G2G_CU_MEMORYTYPE_DEVICE:
    case G2G_CU_MEMORYTYPE_ARRAY: return G2G_MEM_DEVICE;
    case G2G_CU_MEMORYTYPE_UNIFIED: return G2G_MEM_MANAGED;
    default: return G2G_MEM_UNKNOWN;
    }
}

G2G_INTERNAL uint8_t g2g_mem_space(const void *buf, uint64_t bytes)
{
    if (!cu.lib) return G2G_MEM_HOST;
    if (bytes == 0) return G2G_MEM_HOST;
    if (buf == NULL) return G2G_MEM_UNKNOWN; /* MPI_BOTTOM + absolute addresses */
    g2g_CUdeviceptr p = (g2g_CUdeviceptr)(uintptr_t)buf;
    uint64_t memtype = 0, managed = 0; /* wide enough for any of the driver's result types */
    g2g_CUresult rc;
    if (cu.get_attrs) {
        int attrs[2] = {G2G_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, G2G_CU_POINTER_ATTRIBUTE_IS_MANAGED};
        void *data[2] = {&memtype, &managed};
        rc = cu.get_attrs(2, attrs, data, p);
        if (rc == G2G_CUDA_SUCCESS) return classify(memtype, managed & 0xffffffffu);
    } else {
        rc = cu.get_attr(&memtype, G2G_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
        if (rc == G2G_CUDA_SUCCESS) {
            if (cu.get_attr(&managed, G2G_CU_POINTER_ATTRIBUTE_IS_MANAGED, p) != G2G_CUDA_SUCCESS) managed = 0;
            return classify(memtype & 0xffffffffu, managed & 0xffffffffu);
        }
        if (rc == G2G_CUDA_ERROR_INVALID_VALUE) return G2G_MEM_HOST; /* not a CUDA allocation */
    }
    /* The driver is not initialised: the program has no CUDA allocation yet. */
    if (rc == G2G_CUDA_ERROR_NOT_INITIALIZED) return G2G_MEM_HOST;
    return G2G_MEM_UNKNOWN;
}

/* ------------------------------------------------------------------------------------------------
 * CUPTI memcpy activity
 * --------------------------------------------------------------------------------------------- */
typedef struct {
    uint64_t start, end, bytes;
    uint32_t stream;
    uint8_t kind, async;
} g2g_copy;

static struct {
    void *lib;
    g2g_cuptiActivityRegisterCallbacks_t register_callbacks;
    g2g_cuptiActivityEnable_t enable;
    g2g_cuptiActivityDisable_t disable;
    g2g_cuptiActivityFlushAll_t flush_all;
    g2g_cuptiActivityGetNextRecord_t next_record;
    g2g_cuptiGetTimestamp_t timestamp;
    int active;
    int64_t offset; /* CUPTI timestamp + offset = g2g timestamp */
    pthread_mutex_t mu;
    g2g_copy *copies;
    size_t n, cap;
} cp = {.mu = PTHREAD_MUTEX_INITIALIZER};

#define CUPTI_BUFFER_SIZE (1u << 20)

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, CUPTI_BUFFER_SIZE);
    *size = *buffer ? CUPTI_BUFFER_SIZE : 0;
    *max_records = 0;
}

static uint8_t copy_kind(uint8_t k)
{
    switch (k) {
    case G2G_CUPTI_MEMCPY_HTOD:
    case G2G_CUPTI_MEMCPY_HTOA: return 0;
    case G2G_CUPTI_MEMCPY_DTOH:
    case G2G_CUPTI_MEMCPY_ATOH: return 1;
    case G2G_CUPTI_MEMCPY_DTOD:
    case G2G_CUPTI_MEMCPY_ATOA:
    case G2G_CUPTI_MEMCPY_ATOD:
    case G2G_CUPTI_MEMCPY_DTOA: return 2;
    case G2G_CUPTI_MEMCPY_HTOH: return 3;
    default: return 4; /* peer-to-peer, unknown */
    }
}

static void buffer_completed(g2g_CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size, size_t valid)
{
    (void)ctx; (void)stream_id; (void)size;
    g2g_cupti_activity *rec = NULL;
    pthread_mutex_lock(&cp.mu);
    while (buffer && valid && cp.next_record(buffer, valid, &rec) == G2G_CUPTI_SUCCESS && rec) {
        if (rec->kind != G2G_CUPTI_ACTIVITY_KIND_MEMCPY) continue;
        g2g_cupti_memcpy_prefix m;
        memcpy(&m, rec, sizeof m);
        if (cp.n == cp.cap) {
            size_t nc = cp.cap ? cp.cap * 2 : 1024;
            g2g_copy *p = realloc(cp.copies, nc * sizeof *p);
            if (!p) break;
            cp.copies = p;
            cp.cap = nc;
        }
        g2g_copy *c = &cp.copies[cp.n++];
        c->start = (uint64_t)((int64_t)m.start + cp.offset);
        c->end = (uint64_t)((int64_t)(m.end >= m.start ? m.end : m.start) + cp.offset);
        c->bytes = m.bytes;
        c->stream = m.streamId;
        c->kind = copy_kind(m.copyKind);
        c->async = (m.flags & G2G_CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0;
    }
    pthread_mutex_unlock(&cp.mu);
    free(buffer);
}

static void *open_cupti(void)
{
    const char *path = getenv("G2G_LIBCUPTI");
    if (path && *path) return dlopen(path, RTLD_NOW | RTLD_LOCAL);
    static const char *const names[] = {
        "libcupti.so", "libcupti.so.13", "libcupti.so.12", "libcupti.so.11.8", "libcupti.so.11.7",
        "libcupti.so.11.6", "libcupti.so.11.5", "libcupti.so.11.4", "libcupti.so.11.3", "libcupti.so.11.2",
        "libcupti.so.11.1", "libcupti.so.11.0", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
        "/usr/local/cuda/lib64/libcupti.so",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    return NULL;
}

static uint64_t cupti_clock(void) { return g2g_now(); }

G2G_INTERNAL void g2g_cupti_init(void)
{
    if (env_off("G2G_NO_CUPTI") || env_off("G2G_NO_CUDA")) return;
    cp.lib = open_cupti();
    if (!cp.lib) return;
    cp.register_callbacks = (g2g_cuptiActivityRegisterCallbacks_t)dlsym(cp.lib, "cuptiActivityRegisterCallbacks");
    cp.enable = (g2g_cuptiActivityEnable_t)dlsym(cp.lib, "cuptiActivityEnable");
    cp.disable = (g2g_cuptiActivityDisable_t)dlsym(cp.lib, "cuptiActivityDisable");
    cp.flush_all = (g2g_cuptiActivityFlushAll_t)dlsym(cp.lib, "cuptiActivityFlushAll");
    cp.next_record = (g2g_cuptiActivityGetNextRecord_t)dlsym(cp.lib, "cuptiActivityGetNextRecord");
    cp.timestamp = (g2g_cuptiGetTimestamp_t)dlsym(cp.lib, "cuptiGetTimestamp");
    if (!cp.register_callbacks || !cp.enable || !cp.disable || !cp.flush_all || !cp.next_record ||
        !cp.timestamp) {
        dlclose(cp.lib);
        cp.lib = NULL;
        return;
    }
    /* Records on our clock: hand CUPTI our timer where it takes one, else measure the offset. */
    g2g_cuptiActivityRegisterTimestampCallback_t reg_ts =
        (g2g_cuptiActivityRegisterTimestampCallback_t)dlsym(cp.lib, "cuptiActivityRegisterTimestampCallback");
    if (!env_off("G2G_CUPTI_OWN_CLOCK") && reg_ts && reg_ts(cupti_clock) == G2G_CUPTI_SUCCESS) {
        cp.offset = 0;
    } else {
        uint64_t ts = 0;
        if (cp.timestamp(&ts) != G2G_CUPTI_SUCCESS) return;
        cp.offset = (int64_t)g2g_now() - (int64_t)ts;
    }
    if (cp.register_callbacks(buffer_requested, buffer_completed) != G2G_CUPTI_SUCCESS) return;
    if (cp.enable(G2G_CUPTI_ACTIVITY_KIND_MEMCPY) != G2G_CUPTI_SUCCESS) {
        if (g2g.world_rank == 0 && getenv("G2G_TRACE_VERBOSE"))
            fprintf(stderr, "g2gtrace: CUPTI memcpy activity unavailable; no memcpy records\n");
        return;
    }
    cp.active = 1;
    if (g2g.world_rank == 0 && getenv("G2G_TRACE_VERBOSE")) {
        struct link_map *lm = NULL;
        if (dlinfo(cp.lib, RTLD_DI_LINKMAP, &lm) == 0 && lm)
            fprintf(stderr, "g2gtrace: recording CUDA memcpy activity with %s\n", lm->l_name);
    }
}

G2G_INTERNAL int g2g_cupti_active(void) { return cp.active; }

typedef struct {
    uint64_t t;
    uint32_t idx;
    uint8_t end;
} copy_event;

static int cmp_copy_event(const void *a, const void *b)
{
    const copy_event *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->end != y->end) return x->end - y->end; /* starts first */
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Flush CUPTI and write the collected copies onto `location`; returns the number of events. */
G2G_INTERNAL uint64_t g2g_cupti_write(OTF2_Archive *archive, uint64_t location, uint32_t win,
                                      uint64_t *t_first, uint64_t *t_last)
{
    if (!cp.active) return 0;
    cp.flush_all(G2G_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cp.disable(G2G_CUPTI_ACTIVITY_KIND_MEMCPY);
    cp.flush_all(G2G_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cp.active = 0;
    pthread_mutex_lock(&cp.mu);
    size_t n = cp.n;
    if (n == 0) {
        pthread_mutex_unlock(&cp.mu);
        return 0;
    }
    copy_event *ev = malloc(2 * n * sizeof *ev);
    OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(archive, location);
    OTF2_AttributeList *al = OTF2_AttributeList_New();
    if (!ev || !w || !al) {
        pthread_mutex_unlock(&cp.mu);
        free(ev);
        if (al) OTF2_AttributeList_Delete(al);
        if (w) OTF2_Archive_CloseEvtWriter(archive, w);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        ev[2 * i] = (copy_event){cp.copies[i].start, (uint32_t)i, 0};
        ev[2 * i + 1] = (copy_event){cp.copies[i].end, (uint32_t)i, 1};
    }
    qsort(ev, 2 * n, sizeof *ev, cmp_copy_event);
    for (size_t k = 0; k < 2 * n; k++) {
        const g2g_copy *c = &cp.copies[ev[k].idx];
        if (ev[k].end) {
            OTF2_EvtWriter_RmaOpCompleteBlocking(w, NULL, ev[k].t, win, ev[k].idx);
            continue;
        }
        OTF2_AttributeList_AddUint8(al, A_COPY_KIND, c->kind);
        OTF2_AttributeList_AddUint32(al, A_STREAM, c->stream);
        OTF2_AttributeList_AddUint8(al, A_ASYNC, c->async);
        /* window rank 0 = the rank's MPI location (host), 1 = this CUDA location */
        if (c->kind == 0) OTF2_EvtWriter_RmaGet(w, al, ev[k].t, win, 0, c->bytes, ev[k].idx);
        else OTF2_EvtWriter_RmaPut(w, al, ev[k].t, win, c->kind == 1 || c->kind == 3 ? 0 : 1, c->bytes, ev[k].idx);
    }
    if (ev[0].t < *t_first) *t_first = ev[0].t;
    if (ev[2 * n - 1].t > *t_last) *t_last = ev[2 * n - 1].t;
    free(ev);
    OTF2_AttributeList_Delete(al);
    uint64_t nev = 0;
    OTF2_EvtWriter_GetNumberOfEvents(w, &nev);
    OTF2_Archive_CloseEvtWriter(archive, w);
    free(cp.copies);
    cp.copies = NULL;
    cp.n = cp.cap = 0;
    pthread_mutex_unlock(&cp.mu);
    return nev;
}
