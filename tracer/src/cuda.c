/*
 * g2gtrace CUDA support, all optional and all through dlopen:
 *   - buffer memory space (host / device / managed) with cuPointerGetAttributes from libcuda.so.1;
 *   - cudaMemcpy* activity from CUPTI (libcupti.so), written at MPI_Finalize onto one extra OTF2
 *     location per rank as RmaGet/RmaPut + RmaOpCompleteBlocking;
 *   - GPU streams: the CUPTI callback API records the host's kernel launches, stream/event/device
 *     synchronisations, event records, stream waits, stream creations with a priority and memcpy
 *     calls as Enter/Leave regions on the rank's location (live, with g2g:stream / g2g:event /
 *     g2g:corr / g2g:priority attributes), and the activity API the kernels that ran
 *     (CONCURRENT_KERNEL), written at MPI_Finalize as Enter/Leave of a region named after the
 *     kernel on one location per CUDA stream.
 * Without libcuda every buffer is "host"; without libcupti no GPU work is recorded.
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
    g2g_cuStreamGetPriority_t stream_priority;
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
    cu.stream_priority = (g2g_cuStreamGetPriority_t)dlsym(cu.lib, "cuStreamGetPriority");
    if (!cu.get_attrs && !cu.get_attr) {
        dlclose(cu.lib);
        cu.lib = NULL;
    }
}

static uint8_t classify(uint64_t memtype, uint64_t managed)
{
    if (managed) return G2G_MEM_MANAGED;
    switch ((unsigned)memtype) {
    case 0: return G2G_MEM_HOST; /* not a CUDA allocation: ordinary (pageable) host memory */
    case G2G_CU_MEMORYTYPE_HOST: return G2G_MEM_PINNED; /* page-locked by CUDA */
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
 * Small hash map: nonzero uint64 key -> uint64 value (open addressing, linear probing, no deletion)
 * --------------------------------------------------------------------------------------------- */
typedef struct {
    uint64_t *k, *v;
    size_t cap, n;
} u64map;

static size_t m_slot(const u64map *m, uint64_t k) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & (m->cap - 1); }

static int m_get(const u64map *m, uint64_t k, uint64_t *v)
{
    if (!m->cap || !k) return 0;
    for (size_t i = m_slot(m, k);; i = (i + 1) & (m->cap - 1)) {
        if (m->k[i] == k) {
            *v = m->v[i];
            return 1;
        }
        if (!m->k[i]) return 0;
    }
}

static void m_put(u64map *m, uint64_t k, uint64_t v)
{
    if (!k) return;
    if ((m->n + 1) * 2 > m->cap) {
        u64map o = *m;
        size_t cap = o.cap ? o.cap * 2 : 256;
        uint64_t *nk = calloc(cap, sizeof *nk), *nv = calloc(cap, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return; /* out of memory: the entry is lost, the trace only less precise */
        }
        m->k = nk;
        m->v = nv;
        m->cap = cap;
        m->n = 0;
        for (size_t i = 0; i < o.cap; i++)
            if (o.k[i]) m_put(m, o.k[i], o.v[i]);
        free(o.k);
        free(o.v);
    }
    size_t i = m_slot(m, k);
    while (m->k[i] && m->k[i] != k) i = (i + 1) & (m->cap - 1);
    if (!m->k[i]) m->n++;
    m->k[i] = k;
    m->v[i] = v;
}

/* ------------------------------------------------------------------------------------------------
 * CUPTI activity: memory copies and kernels
 * --------------------------------------------------------------------------------------------- */
typedef struct {
    uint64_t start, end, bytes;
    uint32_t stream, corr;
    uint8_t kind, async;
} g2g_copy;

typedef struct {
    uint64_t start, end;
    uint32_t stream, device, corr, name; /* name: index into cp.names */
} g2g_kernel;

static struct {
    void *lib;
    g2g_cuptiActivityRegisterCallbacks_t register_callbacks;
    g2g_cuptiActivityEnable_t enable;
    g2g_cuptiActivityDisable_t disable;
    g2g_cuptiActivityFlushAll_t flush_all;
    g2g_cuptiActivityGetNextRecord_t next_record;
    g2g_cuptiGetTimestamp_t timestamp;
    int active;      /* memcpy activity enabled */
    int kernels_on;  /* kernel activity enabled */
    int flushed;
    int64_t offset; /* CUPTI timestamp + offset = g2g timestamp */
    pthread_mutex_t mu; /* copies, kernels, names: filled by CUPTI's buffer thread */
    g2g_copy *copies;
    size_t n, cap;
    g2g_kernel *kernels;
    size_t nk, capk;
    char **names;
    size_t nnames, capnames;
    uint32_t *gname; /* local name index -> global index (after g2g_kernel_names_unify) */
    u64map name_ptr; /* CUPTI's name pointer -> local index + 1 */
    /* callback API */
    void *subscriber;
    g2g_cuptiUnsubscribe_t unsubscribe;
    g2g_cuptiGetStreamId_t stream_id;
    g2g_cuptiGetStreamIdEx_t stream_id_ex;
    int callbacks;
    pthread_mutex_t cbmu; /* the maps below, filled by the application's threads */
    u64map corr;          /* correlation id of a recorded launch/memcpy (or its nested driver call) -> host one */
    u64map events;        /* CUevent handle -> event id (1, 2, ...) */
    uint64_t next_event;
    u64map prio;          /* stream id + 1 -> priority + 2^32 */
    OTF2_AttributeList *al;
} cp = {.mu = PTHREAD_MUTEX_INITIALIZER, .cbmu = PTHREAD_MUTEX_INITIALIZER};

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

/* local index of a kernel name (cp.mu held) */
static uint32_t kernel_name(const char *name)
{
    uint64_t v;
    if (!name) name = "(unnamed kernel)";
    if (m_get(&cp.name_ptr, (uint64_t)(uintptr_t)name, &v)) return (uint32_t)(v - 1);
    size_t i;
    for (i = 0; i < cp.nnames; i++)
        if (!strcmp(cp.names[i], name)) break;
    if (i == cp.nnames) {
        if (cp.nnames == cp.capnames) {
            size_t nc = cp.capnames ? cp.capnames * 2 : 64;
            char **p = realloc(cp.names, nc * sizeof *p);
            if (!p) return 0;
            cp.names = p;
            cp.capnames = nc;
        }
        char *d = strdup(name);
        if (!d) return 0;
        cp.names[cp.nnames++] = d;
    }
    m_put(&cp.name_ptr, (uint64_t)(uintptr_t)name, i + 1);
    return (uint32_t)i;
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap) return 1;
    size_t nc = *cap ? *cap * 2 : 1024;
    void *p = realloc(*arr, nc * elem);
    if (!p) return 0;
    *arr = p;
    *cap = nc;
    return 1;
}

static void buffer_completed(g2g_CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size, size_t valid)
{
    (void)ctx; (void)stream_id; (void)size;
    g2g_cupti_activity *rec = NULL;
    pthread_mutex_lock(&cp.mu);
    while (buffer && valid && cp.next_record(buffer, valid, &rec) == G2G_CUPTI_SUCCESS && rec) {
        if (rec->kind == G2G_CUPTI_ACTIVITY_KIND_MEMCPY) {
            g2g_cupti_memcpy_prefix m;
            memcpy(&m, rec, sizeof m);
            if (!grow((void **)&cp.copies, &cp.cap, cp.n, sizeof *cp.copies)) break;
            g2g_copy *c = &cp.copies[cp.n++];
            c->start = (uint64_t)((int64_t)m.start + cp.offset);
            c->end = (uint64_t)((int64_t)(m.end >= m.start ? m.end : m.start) + cp.offset);
            c->bytes = m.bytes;
            c->stream = m.streamId;
            c->corr = m.correlationId;
            c->kind = copy_kind(m.copyKind);
            c->async = (m.flags & G2G_CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0;
        } else if (rec->kind == G2G_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
                   rec->kind == G2G_CUPTI_ACTIVITY_KIND_KERNEL) {
            g2g_cupti_kernel_prefix k;
            memcpy(&k, rec, sizeof k);
            if (!grow((void **)&cp.kernels, &cp.capk, cp.nk, sizeof *cp.kernels)) break;
            g2g_kernel *e = &cp.kernels[cp.nk++];
            e->start = (uint64_t)((int64_t)k.start + cp.offset);
            e->end = (uint64_t)((int64_t)(k.end >= k.start ? k.end : k.start) + cp.offset);
            e->stream = k.streamId;
            e->device = k.deviceId;
            e->corr = k.correlationId;
            e->name = kernel_name(k.name);
        }
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

/* ------------------------------------------------------------------------------------------------
 * CUPTI callbacks: the host's GPU API calls
 * --------------------------------------------------------------------------------------------- */
G2G_INTERNAL const g2g_api_def g2g_cuda_api[] = {
    {"cudaLaunchKernel", API_LAUNCH},           {"cudaLaunchKernelExC", API_LAUNCH},
    {"cudaLaunchCooperativeKernel", API_LAUNCH}, {"cuLaunchKernel", API_LAUNCH},
    {"cuLaunchKernelEx", API_LAUNCH},           {"cuLaunchCooperativeKernel", API_LAUNCH},
    {"cudaStreamSynchronize", API_STREAM_SYNC}, {"cuStreamSynchronize", API_STREAM_SYNC},
    {"cudaDeviceSynchronize", API_DEVICE_SYNC}, {"cuCtxSynchronize", API_DEVICE_SYNC},
    {"cudaEventSynchronize", API_EVENT_SYNC},   {"cuEventSynchronize", API_EVENT_SYNC},
    {"cudaEventRecord", API_EVENT_RECORD},      {"cudaEventRecordWithFlags", API_EVENT_RECORD},
    {"cuEventRecord", API_EVENT_RECORD},        {"cuEventRecordWithFlags", API_EVENT_RECORD},
    {"cudaStreamWaitEvent", API_STREAM_WAIT},   {"cuStreamWaitEvent", API_STREAM_WAIT},
    {"cudaStreamCreateWithPriority", API_STREAM_CREATE}, {"cuStreamCreateWithPriority", API_STREAM_CREATE},
    {"cudaMemcpy", API_MEMCPY},                 {"cudaMemcpy2D", API_MEMCPY},
    {"cudaMemcpy3D", API_MEMCPY},               {"cudaMemcpyPeer", API_MEMCPY},
    {"cudaMemcpyAsync", API_MEMCPY_ASYNC},      {"cudaMemcpy2DAsync", API_MEMCPY_ASYNC},
    {"cudaMemcpy3DAsync", API_MEMCPY_ASYNC},    {"cudaMemcpyPeerAsync", API_MEMCPY_ASYNC},
    {"cuMemcpy", API_MEMCPY},                   {"cuMemcpyHtoD", API_MEMCPY},
    {"cuMemcpyDtoH", API_MEMCPY},               {"cuMemcpyDtoD", API_MEMCPY},
    {"cuMemcpy2D", API_MEMCPY},                 {"cuMemcpy3D", API_MEMCPY},
    {"cuMemcpyPeer", API_MEMCPY},               {"cuMemcpyAsync", API_MEMCPY_ASYNC},
    {"cuMemcpyHtoDAsync", API_MEMCPY_ASYNC},    {"cuMemcpyDtoHAsync", API_MEMCPY_ASYNC},
    {"cuMemcpyDtoDAsync", API_MEMCPY_ASYNC},    {"cuMemcpy2DAsync", API_MEMCPY_ASYNC},
    {"cuMemcpy3DAsync", API_MEMCPY_ASYNC},      {"cuMemcpyPeerAsync", API_MEMCPY_ASYNC},
};
G2G_INTERNAL const int g2g_n_cuda_api = (int)(sizeof g2g_cuda_api / sizeof *g2g_cuda_api);
_Static_assert(sizeof g2g_cuda_api / sizeof *g2g_cuda_api <= G2G_MAX_CUDA_API, "G2G_MAX_CUDA_API too small");

/* Index in g2g_cuda_api of an API function name as CUPTI gives it ("cudaLaunchKernel_v7000",
 * "cuStreamSynchronize_ptsz", "cuMemcpyHtoD_v2"), -1 when not recorded; *per_thread is set for
 * the per-thread default stream variants (_ptsz/_ptds). */
static int api_index(const char *name, uint8_t *per_thread)
{
    char b[128];
    size_t l = strlen(name);
    if (l >= sizeof b) return -1;
    memcpy(b, name, l + 1);
    *per_thread = 0;
    for (;;) {
        if (l > 5 && (!strcmp(b + l - 5, "_ptsz") || !strcmp(b + l - 5, "_ptds"))) {
            *per_thread = 1;
            b[l -= 5] = 0;
            continue;
        }
        size_t j = l;
        while (j > 0 && b[j - 1] >= '0' && b[j - 1] <= '9') j--;
        if (j < l && j >= 2 && b[j - 1] == 'v' && b[j - 2] == '_') {
            b[l = j - 2] = 0;
            continue;
        }
        break;
    }
    for (int i = 0; i < g2g_n_cuda_api; i++)
        if (!strcmp(b, g2g_cuda_api[i].name)) return i;
    return -1;
}

#define MAX_CBID 4096
/* per domain and callback id: 0 not seen, 1 not recorded, 2 + index in g2g_cuda_api */
static uint16_t cb_class[3][MAX_CBID];
static uint8_t cb_ptsz[3][MAX_CBID];

static int api_class(int domain, uint32_t cbid, const char *fname, uint8_t *per_thread)
{
    if (domain < 1 || domain > 2 || cbid >= MAX_CBID) {
        *per_thread = 0;
        return fname ? api_index(fname, per_thread) : -1;
    }
    uint16_t c = cb_class[domain][cbid];
    if (!c) {
        uint8_t pt = 0;
        int i = fname ? api_index(fname, &pt) : -1;
        cb_ptsz[domain][cbid] = pt;
        cb_class[domain][cbid] = c = (uint16_t)(i < 0 ? 1 : 2 + i);
    }
    *per_thread = cb_ptsz[domain][cbid];
    return c == 1 ? -1 : c - 2;
}

static __thread int cu_mpi_thread;    /* this thread initialised MPI: its CUDA calls are recorded */
static int cu_all_threads;            /* G2G_CUDA_ALL_THREADS=1: record every thread's calls */
static __thread int cu_depth;         /* recorded API calls open on this thread (runtime -> driver) */
static __thread int cu_open;          /* index + 1 of the outermost one when its Enter was written */
static __thread uint32_t cu_open_corr;

static int64_t stream_id(g2g_CUcontext ctx, void *stream, uint8_t per_thread)
{
    uint32_t id = 0;
    if (cp.stream_id_ex && cp.stream_id_ex(ctx, stream, per_thread, &id) == G2G_CUPTI_SUCCESS) return id;
    if (cp.stream_id && cp.stream_id(ctx, stream, &id) == G2G_CUPTI_SUCCESS) return id;
    return -1;
}

/* remember a stream's priority (cbmu held); from the driver when `known` is 0 */
static void note_priority(int64_t sid, void *stream, int known, int prio)
{
    uint64_t v;
    if (sid < 0) return;
    if (!known) {
        if (m_get(&cp.prio, (uint64_t)sid + 1, &v) || !cu.stream_priority || !stream) return;
        if (cu.stream_priority(stream, &prio) != G2G_CUDA_SUCCESS) return;
    }
    m_put(&cp.prio, (uint64_t)sid + 1, (uint64_t)((int64_t)prio + ((int64_t)1 << 32)));
}

static int priority_of(uint32_t sid, int32_t *prio)
{
    uint64_t v;
    if (!m_get(&cp.prio, (uint64_t)sid + 1, &v)) return 0;
    *prio = (int32_t)((int64_t)v - ((int64_t)1 << 32));
    return 1;
}

static uint64_t event_id(void *ev)
{
    uint64_t v;
    if (!ev) return 0;
    if (m_get(&cp.events, (uint64_t)(uintptr_t)ev, &v)) return v;
    v = ++cp.next_event;
    m_put(&cp.events, (uint64_t)(uintptr_t)ev, v);
    return v;
}

static void on_api(void *userdata, int domain, uint32_t cbid, const void *data)
{
    (void)userdata;
    const g2g_cupti_cbdata *cb = data;
    uint8_t pt;
    int i = api_class(domain, cbid, cb->functionName, &pt);
    if (i < 0) return;
    uint8_t kind = g2g_cuda_api[i].kind;
    if (cb->callbackSite == G2G_CUPTI_API_ENTER) {
        if (cu_depth++ > 0) {
            /* the runtime's own driver call: its correlation id stands for the outer call's */
            if (cu_open && cu_open_corr && (kind == API_LAUNCH || kind == API_MEMCPY || kind == API_MEMCPY_ASYNC)) {
                pthread_mutex_lock(&cp.cbmu);
                m_put(&cp.corr, cb->correlationId, cu_open_corr);
                pthread_mutex_unlock(&cp.cbmu);
            }
            return;
        }
        cu_open = 0;
        /* not tracing, inside an MPI call (the MPI library's own CUDA work is part of it), or on
         * another thread than the one that initialised MPI (an MPI library's progress thread) */
        if (!g2g.active || g2g_depth || (!cu_mpi_thread && !cu_all_threads)) return;
        OTF2_AttributeList *al = cp.al;
        int64_t sid = -1;
        uint64_t ev = 0;
        const void *prm = cb->functionParams;
        pthread_mutex_lock(&cp.cbmu);
        switch (kind) {
        case API_LAUNCH:
        case API_MEMCPY:
        case API_MEMCPY_ASYNC: m_put(&cp.corr, cb->correlationId, cb->correlationId); break;
        case API_STREAM_SYNC: {
            void *s = prm ? ((const g2g_p_stream *)prm)->stream : NULL;
            sid = stream_id(cb->context, s, pt);
            note_priority(sid, s, 0, 0);
            break;
        }
        case API_EVENT_SYNC: ev = event_id(prm ? ((const g2g_p_event *)prm)->event : NULL); break;
        case API_EVENT_RECORD: {
            void *s = prm ? ((const g2g_p_event_stream *)prm)->stream : NULL;
            ev = event_id(prm ? ((const g2g_p_event_stream *)prm)->event : NULL);
            sid = stream_id(cb->context, s, pt);
            note_priority(sid, s, 0, 0);
            break;
        }
        case API_STREAM_WAIT: {
            void *s = prm ? ((const g2g_p_stream_event *)prm)->stream : NULL;
            ev = event_id(prm ? ((const g2g_p_stream_event *)prm)->event : NULL);
            sid = stream_id(cb->context, s, pt);
            note_priority(sid, s, 0, 0);
            break;
        }
        default: break;
        }
        pthread_mutex_unlock(&cp.cbmu);
        g2g_lock();
        if (g2g.active) {
            if (kind == API_LAUNCH || kind == API_MEMCPY || kind == API_MEMCPY_ASYNC)
                OTF2_AttributeList_AddUint32(al, A_CORR, cb->correlationId);
            if (sid >= 0) OTF2_AttributeList_AddUint32(al, A_STREAM, (uint32_t)sid);
            if (ev) OTF2_AttributeList_AddUint64(al, A_EVENT, ev);
            OTF2_EvtWriter_Enter(g2g.evt, al, g2g_now(), (OTF2_RegionRef)(R_COUNT + i));
            cu_open = i + 1;
            cu_open_corr = cb->correlationId;
        }
        g2g_unlock();
        return;
    }
    /* exit */
    if (cu_depth == 0 || --cu_depth > 0) return;
    if (!cu_open) return;
    int j = cu_open - 1;
    cu_open = 0;
    cu_open_corr = 0;
    int64_t sid = -1;
    int prio = 0;
    if (g2g_cuda_api[j].kind == API_STREAM_CREATE && cb->functionParams) {
        const g2g_p_stream_create *p = cb->functionParams;
        void *s = p->pStream ? *p->pStream : NULL;
        sid = s ? stream_id(cb->context, s, 0) : -1;
        prio = p->priority;
        if (cu.stream_priority && s) cu.stream_priority(s, &prio); /* as clamped by CUDA */
        pthread_mutex_lock(&cp.cbmu);
        note_priority(sid, s, 1, prio);
        pthread_mutex_unlock(&cp.cbmu);
    }
    g2g_lock();
    if (g2g.active) {
        OTF2_AttributeList *al = NULL;
        if (sid >= 0) {
            al = cp.al;
            OTF2_AttributeList_AddUint32(al, A_STREAM, (uint32_t)sid);
            OTF2_AttributeList_AddInt32(al, A_PRIORITY, prio);
        }
        OTF2_EvtWriter_Leave(g2g.evt, al, g2g_now(), (OTF2_RegionRef)(R_COUNT + j));
    }
    g2g_unlock();
}

static void init_callbacks(void)
{
    g2g_cuptiSubscribe_t subscribe = (g2g_cuptiSubscribe_t)dlsym(cp.lib, "cuptiSubscribe");
    g2g_cuptiEnableCallback_t enable_cb = (g2g_cuptiEnableCallback_t)dlsym(cp.lib, "cuptiEnableCallback");
    g2g_cuptiEnableDomain_t enable_domain = (g2g_cuptiEnableDomain_t)dlsym(cp.lib, "cuptiEnableDomain");
    g2g_cuptiGetCallbackName_t cb_name = (g2g_cuptiGetCallbackName_t)dlsym(cp.lib, "cuptiGetCallbackName");
    cp.unsubscribe = (g2g_cuptiUnsubscribe_t)dlsym(cp.lib, "cuptiUnsubscribe");
    cp.stream_id = (g2g_cuptiGetStreamId_t)dlsym(cp.lib, "cuptiGetStreamId");
    cp.stream_id_ex = (g2g_cuptiGetStreamIdEx_t)dlsym(cp.lib, "cuptiGetStreamIdEx");
    if (!subscribe || (!enable_cb && !enable_domain)) return;
    cp.al = OTF2_AttributeList_New();
    if (!cp.al) return;
    if (subscribe(&cp.subscriber, on_api, NULL) != G2G_CUPTI_SUCCESS) {
        cp.subscriber = NULL;
        if (g2g.world_rank == 0 && getenv("G2G_TRACE_VERBOSE"))
            fprintf(stderr, "g2gtrace: cuptiSubscribe failed (another CUPTI subscriber?); no CUDA API records\n");
        return;
    }
    int n = 0;
    if (cb_name && enable_cb) {
        /* enable just the recorded calls, found by name */
        for (int d = G2G_CUPTI_CB_DOMAIN_DRIVER_API; d <= G2G_CUPTI_CB_DOMAIN_RUNTIME_API; d++)
            for (uint32_t id = 1; id < MAX_CBID; id++) {
                const char *name = NULL;
                if (cb_name(d, id, &name) != G2G_CUPTI_SUCCESS || !name) continue;
                uint8_t pt = 0;
                int i = api_index(name, &pt);
                cb_ptsz[d][id] = pt;
                cb_class[d][id] = (uint16_t)(i < 0 ? 1 : 2 + i);
                if (i >= 0 && enable_cb(1, cp.subscriber, d, id) == G2G_CUPTI_SUCCESS) n++;
            }
    }
    cu_mpi_thread = 1;
    cu_all_threads = env_off("G2G_CUDA_ALL_THREADS");
    if (!n && enable_domain) {
        /* no names to look up: every call comes, classified by name on first sight */
        memset(cb_class, 0, sizeof cb_class);
        if (enable_domain(1, cp.subscriber, G2G_CUPTI_CB_DOMAIN_DRIVER_API) == G2G_CUPTI_SUCCESS) n++;
        if (enable_domain(1, cp.subscriber, G2G_CUPTI_CB_DOMAIN_RUNTIME_API) == G2G_CUPTI_SUCCESS) n++;
    }
    cp.callbacks = n > 0;
}

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
    int verbose = g2g.world_rank == 0 && getenv("G2G_TRACE_VERBOSE");
    if (cp.enable(G2G_CUPTI_ACTIVITY_KIND_MEMCPY) != G2G_CUPTI_SUCCESS) {
        if (verbose) fprintf(stderr, "g2gtrace: CUPTI memcpy activity unavailable; no memcpy records\n");
        return;
    }
    cp.active = 1;
    if (!env_off("G2G_NO_GPU_STREAMS")) {
        cp.kernels_on = cp.enable(G2G_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == G2G_CUPTI_SUCCESS;
        init_callbacks();
    }
    if (verbose) {
        struct link_map *lm = NULL;
        if (dlinfo(cp.lib, RTLD_DI_LINKMAP, &lm) == 0 && lm)
            fprintf(stderr, "g2gtrace: recording CUDA memcpy activity%s%s with %s\n",
                    cp.kernels_on ? ", kernels" : "", cp.callbacks ? ", CUDA API calls" : "", lm->l_name);
    }
}

G2G_INTERNAL int g2g_cupti_active(void) { return cp.active; }

G2G_INTERNAL void g2g_cupti_flush(void)
{
    if (!cp.lib || cp.flushed || !cp.active) return;
    cp.flushed = 1;
    if (cp.subscriber && cp.unsubscribe) cp.unsubscribe(cp.subscriber);
    cp.subscriber = NULL;
    cp.flush_all(G2G_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cp.disable(G2G_CUPTI_ACTIVITY_KIND_MEMCPY);
    if (cp.kernels_on) cp.disable(G2G_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cp.flush_all(G2G_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

/* the host call's correlation id for a GPU activity's (0: no recorded call issued it) */
static uint32_t host_corr(uint32_t c)
{
    uint64_t v;
    return m_get(&cp.corr, c, &v) ? (uint32_t)v : 0;
}

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
    g2g_cupti_flush();
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
        uint32_t hc = host_corr(c->corr);
        if (hc) OTF2_AttributeList_AddUint32(al, A_CORR, hc);
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

/* ------------------------------------------------------------------------------------------------
 * Kernels at MPI_Finalize: names unified over the ranks, one location per stream
 * --------------------------------------------------------------------------------------------- */
G2G_INTERNAL uint32_t g2g_kernel_names_unify(char **names, size_t *names_len)
{
    g2g_cupti_flush();
    int n = g2g.world_size, me = g2g.world_rank;
    pthread_mutex_lock(&cp.mu);
    size_t len = 0;
    for (size_t i = 0; i < cp.nnames; i++) len += strlen(cp.names[i]) + 1;
    char *mine = malloc(len ? len : 1);
    if (!mine) abort();
    for (size_t i = 0, o = 0; i < cp.nnames; i++) {
        size_t l = strlen(cp.names[i]) + 1;
        memcpy(mine + o, cp.names[i], l);
        o += l;
    }
    int ilen = (int)len, *lens = NULL, *displs = NULL;
    char *all = NULL;
    if (me == 0) {
        lens = malloc((size_t)n * sizeof *lens);
        displs = malloc((size_t)n * sizeof *displs);
        if (!lens || !displs) abort();
    }
    PMPI_Gather(&ilen, 1, MPI_INT, lens, 1, MPI_INT, 0, g2g.comm);
    size_t total = 0;
    if (me == 0) {
        for (int r = 0; r < n; r++) {
            displs[r] = (int)total;
            total += (size_t)lens[r];
        }
        all = malloc(total ? total : 1);
        if (!all) abort();
    }
    PMPI_Gatherv(mine, ilen, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, g2g.comm);
    /* rank 0: the distinct names in order of first appearance (rank 0's first) */
    uint64_t hdr[2] = {0, 0};
    char *uni = NULL;
    if (me == 0) {
        uni = malloc(total ? total : 1);
        if (!uni) abort();
        size_t ulen = 0;
        for (size_t o = 0; o < total;) {
            const char *s = all + o;
            size_t l = strlen(s) + 1;
            int seen = 0;
            for (size_t u = 0; u < ulen && !seen; u += strlen(uni + u) + 1) seen = !strcmp(uni + u, s);
            if (!seen) {
                memcpy(uni + ulen, s, l);
                ulen += l;
                hdr[1]++;
            }
            o += l;
        }
        hdr[0] = ulen;
    }
    PMPI_Bcast(hdr, 2, MPI_UINT64_T, 0, g2g.comm);
    if (me != 0) {
        uni = malloc(hdr[0] ? hdr[0] : 1);
        if (!uni) abort();
    }
    PMPI_Bcast(uni, (int)hdr[0], MPI_CHAR, 0, g2g.comm);
    free(cp.gname);
    cp.gname = malloc((cp.nnames ? cp.nnames : 1) * sizeof *cp.gname);
    if (!cp.gname) abort();
    for (size_t i = 0; i < cp.nnames; i++) {
        uint32_t g = 0;
        for (size_t u = 0; u < hdr[0]; u += strlen(uni + u) + 1, g++)
            if (!strcmp(uni + u, cp.names[i])) break;
        cp.gname[i] = g;
    }
    pthread_mutex_unlock(&cp.mu);
    free(mine);
    free(all);
    free(lens);
    free(displs);
    if (me == 0) {
        *names = uni;
        *names_len = (size_t)hdr[0];
    } else {
        free(uni);
    }
    return (uint32_t)hdr[1];
}

static int cmp_kernel(const void *a, const void *b)
{
    const g2g_kernel *x = a, *y = b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

G2G_INTERNAL uint32_t g2g_kernels_write(OTF2_Archive *archive, int rank, uint64_t *t_first, uint64_t *t_last,
                                        uint64_t **info)
{
    *info = NULL;
    pthread_mutex_lock(&cp.mu);
    size_t n = cp.nk;
    if (!n || !cp.gname) {
        pthread_mutex_unlock(&cp.mu);
        return 0;
    }
    qsort(cp.kernels, n, sizeof *cp.kernels, cmp_kernel);
    size_t nstreams = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || cp.kernels[i].stream != cp.kernels[i - 1].stream) nstreams++;
    uint64_t *out = malloc(3 * nstreams * sizeof *out);
    OTF2_AttributeList *al = OTF2_AttributeList_New();
    if (!out || !al) abort();
    uint32_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && cp.kernels[j].stream == cp.kernels[i].stream) j++;
        uint32_t sid = cp.kernels[i].stream;
        int32_t prio = 0;
        int has_prio = priority_of(sid, &prio);
        OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(archive, g2g_stream_location(rank, k));
        uint64_t prev = 0;
        for (size_t q = i; w && q < j; q++) {
            const g2g_kernel *e = &cp.kernels[q];
            uint64_t t0 = e->start > prev ? e->start : prev; /* a stream runs its kernels in order */
            uint64_t t1 = e->end > t0 ? e->end : t0;
            OTF2_RegionRef reg = (OTF2_RegionRef)(G2G_KERNEL_REGION0 + cp.gname[e->name]);
            uint32_t hc = host_corr(e->corr);
            if (hc) OTF2_AttributeList_AddUint32(al, A_CORR, hc);
            OTF2_AttributeList_AddUint32(al, A_STREAM, sid);
            if (has_prio) OTF2_AttributeList_AddInt32(al, A_PRIORITY, prio);
            OTF2_EvtWriter_Enter(w, al, t0, reg);
            OTF2_EvtWriter_Leave(w, NULL, t1, reg);
            prev = t1;
            if (t0 < *t_first) *t_first = t0;
            if (t1 > *t_last) *t_last = t1;
        }
        uint64_t nev = 0;
        if (w) {
            OTF2_EvtWriter_GetNumberOfEvents(w, &nev);
            OTF2_Archive_CloseEvtWriter(archive, w);
        }
        out[3 * k] = sid;
        out[3 * k + 1] = cp.kernels[i].device;
        out[3 * k + 2] = nev;
        k++;
        i = j;
    }
    OTF2_AttributeList_Delete(al);
    free(cp.kernels);
    cp.kernels = NULL;
    cp.nk = cp.capk = 0;
    pthread_mutex_unlock(&cp.mu);
    *info = out;
    return k;
}
