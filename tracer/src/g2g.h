/*
 * g2gtrace: a PMPI / LD_PRELOAD tracer that writes OTF2 archives with the same record kinds as
 * Score-P, plus g2g attributes (buffer memory space, datatype contiguity, buffer sizes).
 *
 * Internal header shared by the translation units of libg2gtrace.so.
 */
#ifndef G2G_H
#define G2G_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <mpi.h>
#include <otf2/otf2.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define G2G_VERSION "0.1.0"

/* Visibility: everything internal is hidden; only the MPI_* / mpi_*_ wrappers are exported. */
#define G2G_INTERNAL __attribute__((visibility("hidden")))
#define G2G_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------------------------------------
 * Regions.  X(name, OTF2 region role).  The region ref of MPI_xxx is R_MPI_xxx (its index here);
 * all ranks use the same fixed refs, so regions need no local->global mapping.
 * --------------------------------------------------------------------------------------------- */
#define G2G_REGIONS(X)                                                                             \
    X(MPI_Init, OTF2_REGION_ROLE_FUNCTION)                                                         \
    X(MPI_Init_thread, OTF2_REGION_ROLE_FUNCTION)                                                  \
    X(MPI_Finalize, OTF2_REGION_ROLE_FUNCTION)                                                     \
    X(MPI_Send, OTF2_REGION_ROLE_POINT2POINT)                                                      \
    X(MPI_Ssend, OTF2_REGION_ROLE_POINT2POINT)                                                     \
    X(MPI_Bsend, OTF2_REGION_ROLE_POINT2POINT)                                                     \
    X(MPI_Rsend, OTF2_REGION_ROLE_POINT2POINT)                                                     \
    X(MPI_Isend, OTF2_REGION_ROLE_POINT2POINT)                                                     \
    X(MPI_Issend, OTF2_REGION_ROLE_POINT2POINT)                                                    \
    X(MPI_Ibsend, OTF2_REGION_ROLE_POINT2POINT)                                                    \
    X(MPI_Irsend, OTF2_REGION_ROLE_POINT2POINT)                                                    \
    X(MPI_Recv, OTF2_REGION_ROLE_POINT2POINT)                                                      \
    X(MPI_Irecv, OTF2_REGION_ROLE_POINT2POINT)                                                     \
    X(MPI_Sendrecv, OTF2_REGION_ROLE_POINT2POINT)                                                  \
    X(MPI_Sendrecv_replace, OTF2_REGION_ROLE_POINT2POINT)                                          \
    X(MPI_Wait, OTF2_REGION_ROLE_POINT2POINT)                                                      \
    X(MPI_Waitall, OTF2_REGION_ROLE_POINT2POINT)                                                   \
    X(MPI_Waitany, OTF2_REGION_ROLE_POINT2POINT)                                                   \
    X(MPI_Waitsome, OTF2_REGION_ROLE_POINT2POINT)                                                  \
    X(MPI_Test, OTF2_REGION_ROLE_POINT2POINT)                                                      \
    X(MPI_Testall, OTF2_REGION_ROLE_POINT2POINT)                                                   \
    X(MPI_Testany, OTF2_REGION_ROLE_POINT2POINT)                                                   \
    X(MPI_Testsome, OTF2_REGION_ROLE_POINT2POINT)                                                  \
    X(MPI_Request_free, OTF2_REGION_ROLE_POINT2POINT)                                              \
    X(MPI_Cancel, OTF2_REGION_ROLE_POINT2POINT)                                                    \
    X(MPI_Barrier, OTF2_REGION_ROLE_BARRIER)                                                       \
    X(MPI_Bcast, OTF2_REGION_ROLE_COLL_ONE2ALL)                                                    \
    X(MPI_Reduce, OTF2_REGION_ROLE_COLL_ALL2ONE)                                                   \
    X(MPI_Allreduce, OTF2_REGION_ROLE_COLL_ALL2ALL)                                                \
    X(MPI_Gather, OTF2_REGION_ROLE_COLL_ALL2ONE)                                                   \
    X(MPI_Gatherv, OTF2_REGION_ROLE_COLL_ALL2ONE)                                                  \
    X(MPI_Scatter, OTF2_REGION_ROLE_COLL_ONE2ALL)                                                  \
    X(MPI_Scatterv, OTF2_REGION_ROLE_COLL_ONE2ALL)                                                 \
    X(MPI_Allgather, OTF2_REGION_ROLE_COLL_ALL2ALL)                                                \
    X(MPI_Allgatherv, OTF2_REGION_ROLE_COLL_ALL2ALL)                                               \
    X(MPI_Alltoall, OTF2_REGION_ROLE_COLL_ALL2ALL)                                                 \
    X(MPI_Alltoallv, OTF2_REGION_ROLE_COLL_ALL2ALL)                                                \
    X(MPI_Reduce_scatter, OTF2_REGION_ROLE_COLL_ALL2ALL)                                           \
    X(MPI_Reduce_scatter_block, OTF2_REGION_ROLE_COLL_ALL2ALL)                                     \
    X(MPI_Scan, OTF2_REGION_ROLE_COLL_OTHER)                                                       \
    X(MPI_Exscan, OTF2_REGION_ROLE_COLL_OTHER)                                                     \
    X(MPI_Ibarrier, OTF2_REGION_ROLE_BARRIER)                                                      \
    X(MPI_Ibcast, OTF2_REGION_ROLE_COLL_ONE2ALL)                                                   \
    X(MPI_Ireduce, OTF2_REGION_ROLE_COLL_ALL2ONE)                                                  \
    X(MPI_Iallreduce, OTF2_REGION_ROLE_COLL_ALL2ALL)                                               \
    X(MPI_Igather, OTF2_REGION_ROLE_COLL_ALL2ONE)                                                  \
    X(MPI_Igatherv, OTF2_REGION_ROLE_COLL_ALL2ONE)                                                 \
    X(MPI_Iscatter, OTF2_REGION_ROLE_COLL_ONE2ALL)                                                 \
    X(MPI_Iscatterv, OTF2_REGION_ROLE_COLL_ONE2ALL)                                                \
    X(MPI_Iallgather, OTF2_REGION_ROLE_COLL_ALL2ALL)                                               \
    X(MPI_Iallgatherv, OTF2_REGION_ROLE_COLL_ALL2ALL)                                              \
    X(MPI_Ialltoall, OTF2_REGION_ROLE_COLL_ALL2ALL)                                                \
    X(MPI_Ialltoallv, OTF2_REGION_ROLE_COLL_ALL2ALL)                                               \
    X(MPI_Ireduce_scatter, OTF2_REGION_ROLE_COLL_ALL2ALL)                                          \
    X(MPI_Ireduce_scatter_block, OTF2_REGION_ROLE_COLL_ALL2ALL)                                    \
    X(MPI_Iscan, OTF2_REGION_ROLE_COLL_OTHER)                                                      \
    X(MPI_Iexscan, OTF2_REGION_ROLE_COLL_OTHER)                                                    \
    X(MPI_Comm_split, OTF2_REGION_ROLE_FUNCTION)                                                   \
    X(MPI_Comm_split_type, OTF2_REGION_ROLE_FUNCTION)                                              \
    X(MPI_Comm_dup, OTF2_REGION_ROLE_FUNCTION)                                                     \
    X(MPI_Comm_dup_with_info, OTF2_REGION_ROLE_FUNCTION)                                           \
    X(MPI_Comm_create, OTF2_REGION_ROLE_FUNCTION)                                                  \
    X(MPI_Comm_create_group, OTF2_REGION_ROLE_FUNCTION)                                            \
    X(MPI_Cart_create, OTF2_REGION_ROLE_FUNCTION)                                                  \
    X(MPI_Cart_sub, OTF2_REGION_ROLE_FUNCTION)                                                     \
    X(MPI_Comm_free, OTF2_REGION_ROLE_FUNCTION)

enum g2g_region {
#define G2G_X(name, role) R_##name,
    G2G_REGIONS(G2G_X)
#undef G2G_X
    R_COUNT
};

/* Attributes (fixed refs, identical on all ranks). */
enum g2g_attr {
    A_MEM_SPACE = 0,  /* uint8: 0 host, 1 device, 2 managed, 3 unknown (send / primary buffer) */
    A_CONTIG,         /* uint8: 1 when the datatype(s) are contiguous */
    A_BYTES,          /* uint64: collective: this rank's send-buffer bytes (docs/trace-format.md) */
    A_RECV_BYTES,     /* uint64: collective: this rank's receive-buffer bytes */
    A_RECV_MEM_SPACE, /* uint8: collective: memory space of the receive buffer */
    A_COPY_KIND,      /* uint8: CUDA memcpy: 0 h2d, 1 d2h, 2 d2d, 3 h2h, 4 other */
    A_STREAM,         /* uint32: CUDA memcpy, kernel, stream sync/record/wait/create: CUPTI stream id */
    A_ASYNC,          /* uint8: CUDA memcpy: 1 when issued by an async API (cudaMemcpyAsync) */
    A_EVENT,          /* uint64: cudaEventRecord/Synchronize, cudaStreamWaitEvent: per-rank event id */
    A_CORR,           /* uint32: CUPTI correlation id joining a host launch/memcpy call to its GPU work */
    A_PRIORITY,       /* int32: stream priority (cudaStreamCreateWithPriority, kernels) */
    A_COUNT
};

/* CUDA runtime / driver API calls recorded on the rank's location (cuda.c), region refs
 * R_COUNT + index; kernel regions follow at G2G_KERNEL_REGION0 + global kernel index. */
enum g2g_api_kind {
    API_LAUNCH = 1, API_STREAM_SYNC, API_DEVICE_SYNC, API_EVENT_SYNC, API_EVENT_RECORD,
    API_STREAM_WAIT, API_STREAM_CREATE, API_MEMCPY, API_MEMCPY_ASYNC
};
typedef struct {
    const char *name;
    uint8_t kind;
} g2g_api_def;
extern G2G_INTERNAL const g2g_api_def g2g_cuda_api[];
extern G2G_INTERNAL const int g2g_n_cuda_api;
#define G2G_MAX_CUDA_API 64
#define G2G_KERNEL_REGION0 ((uint32_t)R_COUNT + (uint32_t)g2g_n_cuda_api)

/* memory spaces of a buffer (the g2g:mem_space attribute; the trace vocabulary's codes): pinned is
   page-locked host memory (cudaMallocHost, cudaHostRegister) */
enum { G2G_MEM_HOST = 0, G2G_MEM_DEVICE = 1, G2G_MEM_MANAGED = 2, G2G_MEM_UNKNOWN = 3, G2G_MEM_PINNED = 4 };

/* Local communicator ids: 0 = MPI_COMM_WORLD, 1 = MPI_COMM_SELF, then one per communicator
 * this rank learns about, never reused.  Rewritten to global ids by an OTF2 mapping table. */
#define G2G_COMM_WORLD 0u
#define G2G_COMM_SELF 1u
#define G2G_NO_COMM UINT32_MAX

/* Keys that identify a communicator across ranks. */
#define G2G_KEY_SPECIAL UINT32_MAX /* root of WORLD (ctr 0) and SELF (ctr 1) */
#define G2G_KEY_LAZY 0x80000000u   /* ctr flag: found on first use; ctr = hash of members */
#define G2G_KEY_PRIVATE 0x40000000u /* ctr flag: intercommunicator, private to one rank */

typedef struct g2g_comm {
    uint64_t handle;   /* MPI_Comm bits while alive, 0 after MPI_Comm_free */
    int32_t size, rank;
    uint32_t key_root, key_ctr;
    uint32_t parent;   /* local id of the parent or G2G_NO_COMM */
    uint32_t creator;  /* region that created it, or R_COUNT when unknown */
    int32_t *members;  /* world ranks in comm-rank order, when this rank knows them (or NULL) */
} g2g_comm;

/* REQ_NULL: a request to/from MPI_PROC_NULL, kept only so that requests sharing one handle retire
 * in order; it writes nothing. */
enum { REQ_ISEND = 1, REQ_IRECV = 2, REQ_COLL = 3, REQ_NULL = 4 };

typedef struct g2g_req {
    uint64_t id;
    uint64_t bytes;     /* isend: message length; coll: Score-P sizeSent */
    uint64_t recvd;     /* coll: Score-P sizeReceived */
    uint64_t buf_bytes, buf_recv_bytes; /* coll: g2g:bytes / g2g:recv_bytes */
    uint32_t comm;      /* local comm id */
    uint32_t root;      /* coll: root (comm rank) or OTF2_UNDEFINED_UINT32 */
    uint8_t kind, mem, recv_mem, contig, op;
    uint32_t next_free;  /* free list */
    uint32_t next_same;  /* next live request with the same handle */
} g2g_req;

typedef struct g2g_state {
    volatile int active;   /* events are being recorded */
    int initialized;       /* g2g_start ran */
    int world_rank, world_size;
    int thread_multiple;
    MPI_Comm comm;         /* private duplicate of MPI_COMM_WORLD */
    MPI_Group world_group;
    int64_t clock_offset;  /* added to CLOCK_MONOTONIC to get rank 0's clock */
    uint64_t t_first, t_last;
    OTF2_Archive *archive;
    OTF2_EvtWriter *evt;
    OTF2_AttributeList *attrs;
    char trace_dir[4096];
    pthread_mutex_t lock;
    uint64_t next_req_id;
} g2g_state;

extern G2G_INTERNAL g2g_state g2g;
extern G2G_INTERNAL __thread int g2g_depth;

/* ---- clock ---- */
static inline uint64_t g2g_raw_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static inline uint64_t g2g_now(void) { return (uint64_t)((int64_t)g2g_raw_now() + g2g.clock_offset); }

/* Like Score-P, a wrapper reads the clock twice: at Enter (records written before the PMPI call
 * reuse that time) and once after the PMPI call (records written after it and the Leave reuse
 * it).  Under MPI_THREAD_MULTIPLE every record reads the clock. */
extern G2G_INTERNAL __thread uint64_t g2g_ts_last;
extern G2G_INTERNAL __thread int g2g_ts_post;
static inline uint64_t g2g_ts_enter(void)
{
    g2g_ts_post = 0;
    return g2g_ts_last = g2g_now();
}
static inline uint64_t g2g_ts_pre(void) { return g2g.thread_multiple ? g2g_now() : g2g_ts_last; }
static inline uint64_t g2g_ts_after(void)
{
    if (g2g.thread_multiple) return g2g_now();
    if (!g2g_ts_post) {
        g2g_ts_post = 1;
        g2g_ts_last = g2g_now();
    }
    return g2g_ts_last;
}

/* ---- locking (only when MPI_THREAD_MULTIPLE was granted) ---- */
static inline void g2g_lock(void)
{
    if (g2g.thread_multiple) pthread_mutex_lock(&g2g.lock);
}
static inline void g2g_unlock(void)
{
    if (g2g.thread_multiple) pthread_mutex_unlock(&g2g.lock);
}

/* ---- core (core.c) ---- */
G2G_INTERNAL void g2g_start(enum g2g_region init_region, uint64_t t_enter_raw, int provided);
G2G_INTERNAL void g2g_stop(void);
G2G_INTERNAL int g2g_enter(enum g2g_region r);  /* returns 1 when tracing this call */
G2G_INTERNAL void g2g_leave(enum g2g_region r);

G2G_INTERNAL uint32_t g2g_comm_id(MPI_Comm comm); /* local id, registering lazily if unknown */
G2G_INTERNAL g2g_comm *g2g_comm_get(uint32_t id);
G2G_INTERNAL void g2g_comm_created(MPI_Comm newcomm, MPI_Comm parent, enum g2g_region creator);
G2G_INTERNAL void g2g_comm_freed(MPI_Comm comm);

/* Track a new request under id (0: allocate one); NULL when not tracing.  Caller holds the lock. */
G2G_INTERNAL g2g_req *g2g_req_new(MPI_Request handle, uint64_t id);
G2G_INTERNAL g2g_req *g2g_req_find(MPI_Request handle);
G2G_INTERNAL void g2g_req_drop(MPI_Request handle);

/* ---- buffers (cuda.c) ---- */
G2G_INTERNAL void g2g_cuda_init(void);
G2G_INTERNAL uint8_t g2g_mem_space(const void *buf, uint64_t bytes);
G2G_INTERNAL void g2g_cupti_init(void);
G2G_INTERNAL uint64_t g2g_cupti_write(OTF2_Archive *archive, uint64_t location, uint32_t win,
                                      uint64_t *t_first, uint64_t *t_last);
G2G_INTERNAL int g2g_cupti_active(void);
/* GPU streams (kernels through CUPTI): stop collecting (idempotent) */
G2G_INTERNAL void g2g_cupti_flush(void);
/* Kernel names of all ranks, unified over g2g.comm (collective).  Returns the global count; on
 * rank 0 *names gets the NUL-separated global list (malloc'ed, caller frees). */
G2G_INTERNAL uint32_t g2g_kernel_names_unify(char **names, size_t *names_len);
/* Write this rank's kernels, one OTF2 location per stream (ids g2g_stream_location); appends
 * per stream (stream id, device id, number of events) to *info (3 * count words, malloc'ed). */
G2G_INTERNAL uint32_t g2g_kernels_write(OTF2_Archive *archive, int rank, uint64_t *t_first, uint64_t *t_last,
                                        uint64_t **info);

/* ---- datatypes ---- */
G2G_INTERNAL uint8_t g2g_contiguous(MPI_Datatype dt);
static inline uint64_t g2g_type_size(MPI_Datatype dt)
{
    int s = 0;
    if (dt == MPI_DATATYPE_NULL) return 0;
    PMPI_Type_size(dt, &s);
    return s > 0 ? (uint64_t)s : 0;
}

/* Location ids: rank r is location r; its CUDA memcpy location is world_size + r; its k-th kernel
 * stream (k = 0, 1, ... in stream id order) is (k + 1) << 32 | r. */
static inline uint64_t g2g_gpu_location(int rank, int size) { return (uint64_t)size + (uint64_t)rank; }
static inline uint64_t g2g_stream_location(int rank, uint32_t k) { return ((uint64_t)(k + 1) << 32) | (uint32_t)rank; }

#endif
