/* Fake libcupti.so for the g2gtrace tests (no GPU needed): implements the activity-API calls the
 * tracer uses; g2gfake_memcpy(kind, bytes) queues one memcpy activity record (1 us long) that is
 * delivered through the buffer callbacks on cuptiActivityFlushAll.  Timestamps run on
 * CLOCK_MONOTONIC + 500 s so that the tracer's clock conversion is exercised. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef struct __attribute__((packed, aligned(8))) {
    uint32_t kind;
    uint8_t copyKind, srcKind, dstKind, flags;
    uint64_t bytes, start, end;
    uint32_t deviceId, contextId, streamId, correlationId;
    uint8_t pad[64 - 48];
} rec_t;

typedef void (*req_t)(uint8_t **, size_t *, size_t *);
typedef void (*done_t)(void *, uint32_t, uint8_t *, size_t, size_t);
static req_t on_request;
static done_t on_done;
static int enabled;
static rec_t pending[1024];
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
    return 0;
}
int cuptiActivityDisable(int kind)
{
    if (kind == 1) enabled = 0;
    return 0;
}
int cuptiGetTimestamp(uint64_t *t)
{
    *t = now();
    return 0;
}

void g2gfake_memcpy(int copy_kind, unsigned long bytes)
{
    if (!enabled || n_pending == 1024) return;
    rec_t *r = &pending[n_pending++];
    memset(r, 0, sizeof *r);
    r->kind = 1;
    r->copyKind = (uint8_t)copy_kind;
    r->flags = 0;
    r->bytes = bytes;
    r->start = now();
    r->end = r->start + 1000;
    r->streamId = 7;
}

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
