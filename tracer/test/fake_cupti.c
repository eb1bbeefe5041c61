/* Fake libcupti.so for the g2gtrace tests (no GPU needed).
 *
 * Activity API: the calls the tracer uses.  g2gfake_memcpy(kind, bytes) queues one memcpy activity
 * record (1 us long) without any API callback (like a copy the tracer did not see issued); records
 * are delivered through the buffer callbacks on cuptiActivityFlushAll.  Timestamps run on
 * CLOCK_MONOTONIC + 500 s so that the tracer's clock conversion is exercised.
 *
 * Callback API and a fake GPU (tests/test_gpu_streams.py): g2gfake_stream_create, _launch,
 * _stream_sync, _device_sync, _event_create, _event_record, _event_sync, _stream_wait_event and
 * _memcpy_async play the CUDA runtime: each calls the subscriber's callback at API enter and exit
 * with the runtime's parameter structs (a launch and an async copy also make a nested driver-API
 * call whose correlation id the GPU record carries, as the real runtime does), and queues kernel
 * (CONCURRENT_KERNEL) and memcpy records.  The fake GPU runs each stream in order, streams
 * independently; synchronising calls busy-wait until the awaited work has "run".  Callback ids
 * and names are this file's own (cuptiGetCallbackName gives them).  Stream ids start at 13; the
 * NULL stream is 7. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REC_SIZE 160

typedef struct __attribute__((packed, aligned(8))) {
    uint32_t kind;
    uint8_t copyKind, srcKind, dstKind, flags;
    uint64_t bytes, start, end;
    uint32_t deviceId, contextId, streamId, correlationId;
} memcpy_rec;

typedef struct __attribute__((packed, aligned(8))) {
    uint32_t kind;
    uint8_t cacheConfig, sharedMemoryConfig;
    uint16_t registersPerThread;
    int32_t pgcRequested, pgcExecuted;
    uint64_t start, end, completed;
    uint32_t deviceId, contextId, streamId;
    int32_t grid[3], block[3];
    int32_t staticShared, dynamicShared;
    uint32_t localPerThread, localTotal;
    uint32_t correlationId;
    int64_t gridId;
    const char *name;
    void *reserved0;
} kernel_rec;

typedef union {
    uint32_t kind;
    memcpy_rec m;
    kernel_rec k;
    uint8_t bytes[REC_SIZE];
} rec_t;

typedef void (*req_t)(uint8_t **, size_t *, size_t *);
typedef void (*done_t)(void *, uint32_t, uint8_t *, size_t, size_t);
static req_t on_request;
static done_t on_done;
static int enabled, kernels_enabled;
#define MAX_PENDING 4096
static rec_t pending[MAX_PENDING];
static size_t n_pending;

static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 500000000000ull;
}

int cuptiActivityRegisterCallbacks(req_t r, done_t d)
{
    on_request = r;
    on_done = d;
    return 0;
}
int cuptiActivityEnable(int kind)
{
    if (kind == 1) enabled = 1;
    if (kind == 10) kernels_enabled = 1;
    return 0;
}
int cuptiActivityDisable(int kind)
{
    if (kind == 1) enabled = 0;
    if (kind == 10) kernels_enabled = 0;
    return 0;
}
int cuptiGetTimestamp(uint64_t *t)
{
    *t = now();
    return 0;
}

static rec_t *new_rec(void)
{
    if (n_pending == MAX_PENDING) return NULL;
    rec_t *r = &pending[n_pending++];
    memset(r, 0, sizeof *r);
    return r;
}

static void queue_memcpy(int copy_kind, unsigned long bytes, uint64_t start, uint32_t stream, uint8_t flags,
                         uint32_t corr)
{
    if (!enabled) return;
    rec_t *r = new_rec();
    if (!r) return;
    r->m.kind = 1;
    r->m.copyKind = (uint8_t)copy_kind;
    r->m.flags = flags;
    r->m.bytes = bytes;
    r->m.start = start;
    r->m.end = start + 1000;
    r->m.streamId = stream;
    r->m.correlationId = corr;
}

void g2gfake_memcpy(int copy_kind, unsigned long bytes) { queue_memcpy(copy_kind, bytes, now(), 7, 0, 0); }

int cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    if (!n_pending || !on_request || !on_done) return 0;
    uint8_t *buf = NULL;
    size_t size = 0, max = 0;
    on_request(&buf, &size, &max);
    size_t valid = n_pending * sizeof(rec_t);
    if (!buf || valid > size) return 1;
    memcpy(buf, pending, valid);
    n_pending = 0;
    on_done(NULL, 0, buf, size, valid);
    return 0;
}

int cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, void **rec)
{
    uint8_t *next = *rec ? (uint8_t *)*rec + sizeof(rec_t) : buf;
    if (next + sizeof(rec_t) > buf + valid) return 3; /* CUPTI_ERROR_MAX_LIMIT_REACHED */
    *rec = next;
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Callback API
 * --------------------------------------------------------------------------------------------- */
typedef struct {
    int callbackSite;
    const char *functionName;
    const void *functionParams;
    void *functionReturnValue;
    const char *symbolName;
    void *context;
    uint32_t contextUid;
    uint64_t *correlationData;
    uint32_t correlationId;
} cbdata_t;

typedef void (*cb_t)(void *, int, uint32_t, const void *);
static cb_t api_cb;
static void *api_ud;
enum { DRV = 1, RT = 2, NCB = 16 };
static unsigned char cb_on[3][NCB];
static const char *const cb_names[3][NCB] = {
    [RT] = {NULL, "cudaLaunchKernel_v7000", "cudaStreamSynchronize_v3020", "cudaDeviceSynchronize_v3020",
            "cudaEventSynchronize_v3020", "cudaEventRecord_v3020", "cudaStreamWaitEvent_v3020",
            "cudaStreamCreateWithPriority_v5050", "cudaMemcpyAsync_v3020", "cudaGetDevice_v3020",
            "cudaStreamSynchronize_ptsz_v7000"},
    [DRV] = {NULL, "cuLaunchKernel", "cuMemcpyDtoHAsync_v2", "cuCtxGetDevice"},
};
enum { CB_LAUNCH = 1, CB_SSYNC, CB_DSYNC, CB_ESYNC, CB_ERECORD, CB_SWAIT, CB_SCREATE, CB_MEMCPY_ASYNC };
enum { CBD_LAUNCH = 1, CBD_MEMCPY = 2 };

int cuptiSubscribe(void **sub, cb_t cb, void *ud)
{
    if (api_cb) return 39; /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
    api_cb = cb;
    api_ud = ud;
    *sub = (void *)&api_cb;
    return 0;
}
int cuptiUnsubscribe(void *sub)
{
    (void)sub;
    api_cb = NULL;
    memset(cb_on, 0, sizeof cb_on);
    return 0;
}
int cuptiEnableCallback(uint32_t enable, void *sub, int domain, uint32_t cbid)
{
    (void)sub;
    if (domain < 1 || domain > 2 || cbid >= NCB || !cb_names[domain][cbid]) return 1;
    cb_on[domain][cbid] = (unsigned char)(enable != 0);
    return 0;
}
int cuptiEnableDomain(uint32_t enable, void *sub, int domain)
{
    (void)sub;
    if (domain < 1 || domain > 2) return 1;
    for (int i = 0; i < NCB; i++) cb_on[domain][i] = (unsigned char)(enable != 0 && cb_names[domain][i]);
    return 0;
}
int cuptiGetCallbackName(int domain, uint32_t cbid, const char **name)
{
    if (domain < 1 || domain > 2 || cbid >= NCB || !cb_names[domain][cbid]) return 1;
    *name = cb_names[domain][cbid];
    return 0;
}

typedef struct fake_stream {
    uint32_t id;
    int prio;
    uint64_t busy; /* when the last queued work ends */
    struct fake_stream *next;
} fake_stream;
typedef struct {
    uint64_t when;
} fake_event;
static fake_stream *streams;
static fake_stream null_stream = {7, 0, 0, NULL};
static uint32_t next_stream = 13, next_corr = 100;

int cuptiGetStreamId(void *ctx, void *stream, uint32_t *id)
{
    (void)ctx;
    *id = stream ? ((fake_stream *)stream)->id : 7;
    return 0;
}

static void call(int domain, uint32_t cbid, int site, const void *params, uint32_t corr)
{
    if (!api_cb || !cb_on[domain][cbid]) return;
    static uint64_t cdata;
    cbdata_t d = {site, cb_names[domain][cbid], params, NULL, NULL, (void *)0x1234, 1, &cdata, corr};
    api_cb(api_ud, domain, cbid, &d);
}

static fake_stream *S(void *s) { return s ? (fake_stream *)s : &null_stream; }

static void wait_until(uint64_t t)
{
    while (now() < t) {
    }
}

void *g2gfake_stream_create(int priority)
{
    fake_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->id = next_stream++;
    s->prio = priority;
    s->next = streams;
    streams = s;
    void *handle = NULL;
    struct {
        void **pStream;
        unsigned int flags;
        int priority;
    } p = {&handle, 1, priority};
    uint32_t c = ++next_corr;
    call(RT, CB_SCREATE, 0, &p, c);
    handle = s;
    call(RT, CB_SCREATE, 1, &p, c);
    return s;
}

void g2gfake_launch(const char *name, void *stream, unsigned long dur_ns)
{
    fake_stream *s = S(stream);
    struct {
        const void *func;
        unsigned int grid[3], block[3];
        void **args;
        size_t shared;
        void *stream;
    } p = {name, {1, 1, 1}, {32, 1, 1}, NULL, 0, stream};
    uint32_t c = ++next_corr, c2 = ++next_corr;
    call(RT, CB_LAUNCH, 0, &p, c);
    call(DRV, CBD_LAUNCH, 0, NULL, c2);
    uint64_t t = now() + 1000, start = t > s->busy ? t : s->busy;
    s->busy = start + dur_ns;
    if (kernels_enabled) {
        rec_t *r = new_rec();
        if (r) {
            r->k.kind = 10;
            r->k.start = start;
            r->k.end = start + dur_ns;
            r->k.completed = start + dur_ns;
            r->k.streamId = s->id;
            r->k.correlationId = c2;
            r->k.name = name;
        }
    }
    call(DRV, CBD_LAUNCH, 1, NULL, c2);
    call(RT, CB_LAUNCH, 1, &p, c);
}

void g2gfake_memcpy_async(int copy_kind, unsigned long bytes, void *stream)
{
    fake_stream *s = S(stream);
    struct {
        void *dst;
        const void *src;
        size_t count;
        int kind;
        void *stream;
    } p = {NULL, NULL, bytes, copy_kind, stream};
    uint32_t c = ++next_corr, c2 = ++next_corr;
    call(RT, CB_MEMCPY_ASYNC, 0, &p, c);
    call(DRV, CBD_MEMCPY, 0, NULL, c2);
    uint64_t t = now() + 1000, start = t > s->busy ? t : s->busy;
    queue_memcpy(copy_kind, bytes, start, s->id, 1 /* async */, c2);
    s->busy = start + 1000;
    call(DRV, CBD_MEMCPY, 1, NULL, c2);
    call(RT, CB_MEMCPY_ASYNC, 1, &p, c);
}

void g2gfake_stream_sync(void *stream)
{
    struct {
        void *stream;
    } p = {stream};
    uint32_t c = ++next_corr;
    call(RT, CB_SSYNC, 0, &p, c);
    wait_until(S(stream)->busy);
    call(RT, CB_SSYNC, 1, &p, c);
}

void g2gfake_device_sync(void)
{
    uint32_t c = ++next_corr;
    call(RT, CB_DSYNC, 0, NULL, c);
    uint64_t t = null_stream.busy;
    for (fake_stream *s = streams; s; s = s->next)
        if (s->busy > t) t = s->busy;
    wait_until(t);
    call(RT, CB_DSYNC, 1, NULL, c);
}

void *g2gfake_event_create(void) { return calloc(1, sizeof(fake_event)); }

void g2gfake_event_record(void *event, void *stream)
{
    struct {
        void *event, *stream;
    } p = {event, stream};
    uint32_t c = ++next_corr;
    call(RT, CB_ERECORD, 0, &p, c);
    ((fake_event *)event)->when = S(stream)->busy;
    call(RT, CB_ERECORD, 1, &p, c);
}

void g2gfake_event_sync(void *event)
{
    struct {
        void *event;
    } p = {event};
    uint32_t c = ++next_corr;
    call(RT, CB_ESYNC, 0, &p, c);
    wait_until(((fake_event *)event)->when);
    call(RT, CB_ESYNC, 1, &p, c);
}

void g2gfake_stream_wait_event(void *stream, void *event)
{
    struct {
        void *stream, *event;
        unsigned int flags;
    } p = {stream, event, 0};
    uint32_t c = ++next_corr;
    call(RT, CB_SWAIT, 0, &p, c);
    fake_stream *s = S(stream);
    uint64_t w = ((fake_event *)event)->when;
    if (w > s->busy) s->busy = w;
    call(RT, CB_SWAIT, 1, &p, c);
}

/* a runtime call the tracer does not record (its callback is never enabled) */
void g2gfake_get_device(void)
{
    uint32_t c = ++next_corr;
    call(RT, 9, 0, NULL, c);
    call(RT, 9, 1, NULL, c);
}
