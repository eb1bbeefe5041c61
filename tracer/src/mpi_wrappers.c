/*
 * g2gtrace C bindings: every intercepted MPI_Xxx records Enter/Leave of region "MPI_Xxx" and the
 * Score-P-style communication records, then calls PMPI_Xxx.
 */
#include "g2g.h"

#include <stdlib.h>

/* ------------------------------------------------------------------------------------------------
 * Record helpers (callers hold no lock; these take it around writes)
 * --------------------------------------------------------------------------------------------- */
static inline void add_msg_attrs(uint8_t mem, uint8_t contig)
{
    OTF2_AttributeList_AddUint8(g2g.attrs, A_MEM_SPACE, mem);
    OTF2_AttributeList_AddUint8(g2g.attrs, A_CONTIG, contig);
}

static inline uint64_t next_req_id(void)
{
    g2g_lock();
    uint64_t id = ++g2g.next_req_id;
    g2g_unlock();
    return id;
}

/* MpiSend (reqid == 0) or MpiIsend, written before the PMPI call like Score-P does. */
static void ev_send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, uint64_t reqid)
{
    if (dest == MPI_PROC_NULL) return;
    uint32_t cid = g2g_comm_id(comm);
    uint64_t bytes = (uint64_t)(count > 0 ? count : 0) * g2g_type_size(dt);
    uint8_t mem = g2g_mem_space(buf, bytes), contig = g2g_contiguous(dt);
    g2g_lock();
    if (g2g.active) {
        add_msg_attrs(mem, contig);
        if (reqid)
            OTF2_EvtWriter_MpiIsend(g2g.evt, g2g.attrs, g2g_ts_pre(), (uint32_t)dest, cid, (uint32_t)tag, bytes, reqid);
        else
            OTF2_EvtWriter_MpiSend(g2g.evt, g2g.attrs, g2g_ts_pre(), (uint32_t)dest, cid, (uint32_t)tag, bytes);
    }
    g2g_unlock();
}

static uint64_t status_bytes(const MPI_Status *st, uint64_t fallback)
{
    int n = 0;
    if (PMPI_Get_count(st, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED || n < 0) return fallback;
    return (uint64_t)n;
}

/* MpiRecv after a completed blocking receive. */
static void ev_recv(const void *buf, int count, MPI_Datatype dt, MPI_Comm comm, const MPI_Status *st)
{
    if (st->MPI_SOURCE == MPI_PROC_NULL || st->MPI_SOURCE < 0) return;
    uint32_t cid = g2g_comm_id(comm);
    uint64_t posted = (uint64_t)(count > 0 ? count : 0) * g2g_type_size(dt);
    uint64_t bytes = status_bytes(st, posted);
    uint8_t mem = g2g_mem_space(buf, posted), contig = g2g_contiguous(dt);
    g2g_lock();
    if (g2g.active) {
        add_msg_attrs(mem, contig);
        OTF2_EvtWriter_MpiRecv(g2g.evt, g2g.attrs, g2g_ts_after(), (uint32_t)st->MPI_SOURCE, cid, (uint32_t)st->MPI_TAG,
                               bytes);
    }
    g2g_unlock();
}

static void track_isend(MPI_Request h, uint64_t reqid, const void *buf, int count, MPI_Datatype dt, MPI_Comm comm)
{
    uint32_t cid = g2g_comm_id(comm);
    uint64_t bytes = (uint64_t)(count > 0 ? count : 0) * g2g_type_size(dt);
    uint8_t mem = g2g_mem_space(buf, bytes), contig = g2g_contiguous(dt);
    g2g_lock();
    g2g_req *r = g2g_req_new(h, reqid);
    if (r) {
        r->kind = REQ_ISEND;
        r->comm = cid;
        r->bytes = bytes;
        r->mem = mem;
        r->contig = contig;
    }
    g2g_unlock();
}

static void track_null(MPI_Request h)
{
    g2g_lock();
    g2g_req *r = g2g_req_new(h, 0);
    if (r) r->kind = REQ_NULL;
    g2g_unlock();
}

static void track_irecv(MPI_Request h, const void *buf, int count, MPI_Datatype dt, MPI_Comm comm)
{
    uint32_t cid = g2g_comm_id(comm);
    uint64_t bytes = (uint64_t)(count > 0 ? count : 0) * g2g_type_size(dt);
    uint8_t mem = g2g_mem_space(buf, bytes), contig = g2g_contiguous(dt);
    g2g_lock();
    g2g_req *r = g2g_req_new(h, 0);
    if (r) {
        r->kind = REQ_IRECV;
        r->comm = cid;
        r->bytes = bytes;
        r->mem = mem;
        r->contig = contig;
        OTF2_EvtWriter_MpiIrecvRequest(g2g.evt, NULL, g2g_ts_after(), r->id);
    }
    g2g_unlock();
}

/* A tracked request completed (status is real, never MPI_STATUS_IGNORE). */
static void complete(MPI_Request h, const MPI_Status *st)
{
    g2g_lock();
    g2g_req *r = g2g.active ? g2g_req_find(h) : NULL;
    if (!r) {
        g2g_unlock();
        return;
    }
    uint64_t t = g2g_ts_after();
    int cancelled = 0;
    if (r->kind == REQ_ISEND || r->kind == REQ_IRECV) PMPI_Test_cancelled(st, &cancelled);
    if (r->kind == REQ_NULL) {
        /* nothing to record */
    } else if (cancelled) {
        OTF2_EvtWriter_MpiRequestCancelled(g2g.evt, NULL, t, r->id);
    } else if (r->kind == REQ_ISEND) {
        OTF2_EvtWriter_MpiIsendComplete(g2g.evt, NULL, t, r->id);
    } else if (r->kind == REQ_IRECV) {
        if (st->MPI_SOURCE >= 0) {
            add_msg_attrs(r->mem, r->contig);
            OTF2_EvtWriter_MpiIrecv(g2g.evt, g2g.attrs, t, (uint32_t)st->MPI_SOURCE, r->comm, (uint32_t)st->MPI_TAG,
                                    status_bytes(st, r->bytes), r->id);
        }
    } else if (r->kind == REQ_COLL) {
        add_msg_attrs(r->mem, r->contig);
        OTF2_AttributeList_AddUint64(g2g.attrs, A_BYTES, r->buf_bytes);
        OTF2_AttributeList_AddUint64(g2g.attrs, A_RECV_BYTES, r->buf_recv_bytes);
        OTF2_AttributeList_AddUint8(g2g.attrs, A_RECV_MEM_SPACE, r->recv_mem);
        OTF2_EvtWriter_NonBlockingCollectiveComplete(g2g.evt, g2g.attrs, t, r->op, r->comm, r->root, r->bytes,
                                                     r->recvd, r->id);
    }
    g2g_req_drop(h);
    g2g_unlock();
}

/* An unsuccessful test of a tracked request. */
static void test_failed(MPI_Request h)
{
    g2g_lock();
    g2g_req *r = g2g.active ? g2g_req_find(h) : NULL;
    if (r && r->kind != REQ_NULL) OTF2_EvtWriter_MpiRequestTest(g2g.evt, NULL, g2g_ts_after(), r->id);
    g2g_unlock();
}

/* ------------------------------------------------------------------------------------------------
 * Environment
 * --------------------------------------------------------------------------------------------- */
G2G_EXPORT int MPI_Init(int *argc, char ***argv)
{
    uint64_t t = g2g_raw_now();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        int provided = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&provided);
        g2g_start(R_MPI_Init, t, provided);
    }
    return rc;
}

G2G_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    uint64_t t = g2g_raw_now();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) g2g_start(R_MPI_Init_thread, t, *provided);
    return rc;
}

G2G_EXPORT int MPI_Finalize(void)
{
    if (g2g.active && !g2g_depth) {
        g2g_depth = 1;
        g2g_lock();
        OTF2_EvtWriter_Enter(g2g.evt, NULL, g2g_ts_enter(), (OTF2_RegionRef)R_MPI_Finalize);
        g2g_unlock();
        g2g_stop();
        g2g_depth = 0;
    }
    return PMPI_Finalize();
}

/* ------------------------------------------------------------------------------------------------
 * Point to point
 * --------------------------------------------------------------------------------------------- */
#define BLOCKING_SEND(NAME)                                                                        \
    G2G_EXPORT int MPI_##NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) \
    {                                                                                              \
        if (!g2g_enter(R_MPI_##NAME)) return PMPI_##NAME(buf, count, dt, dest, tag, comm);         \
        ev_send(buf, count, dt, dest, tag, comm, 0);                                               \
        int rc = PMPI_##NAME(buf, count, dt, dest, tag, comm);                                     \
        g2g_leave(R_MPI_##NAME);                                                                   \
        return rc;                                                                                 \
    }
BLOCKING_SEND(Send)
BLOCKING_SEND(Ssend)
BLOCKING_SEND(Bsend)
BLOCKING_SEND(Rsend)

#define NONBLOCKING_SEND(NAME)                                                                     \
    G2G_EXPORT int MPI_##NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, \
                              MPI_Request *req)                                                    \
    {                                                                                              \
        if (!g2g_enter(R_MPI_##NAME)) return PMPI_##NAME(buf, count, dt, dest, tag, comm, req);    \
        uint64_t id = dest == MPI_PROC_NULL ? 0 : next_req_id();                                   \
        ev_send(buf, count, dt, dest, tag, comm, id);                                              \
        int rc = PMPI_##NAME(buf, count, dt, dest, tag, comm, req);                                \
        if (rc == MPI_SUCCESS) {                                                                   \
            if (id) track_isend(*req, id, buf, count, dt, comm);                                   \
            else track_null(*req);                                                                 \
        }                                                                                          \
        g2g_leave(R_MPI_##NAME);                                                                   \
        return rc;                                                                                 \
    }
NONBLOCKING_SEND(Isend)
NONBLOCKING_SEND(Issend)
NONBLOCKING_SEND(Ibsend)
NONBLOCKING_SEND(Irsend)

G2G_EXPORT int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    if (!g2g_enter(R_MPI_Recv)) return PMPI_Recv(buf, count, dt, source, tag, comm, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = PMPI_Recv(buf, count, dt, source, tag, comm, st);
    if (rc == MPI_SUCCESS) ev_recv(buf, count, dt, comm, st);
    g2g_leave(R_MPI_Recv);
    return rc;
}

G2G_EXPORT int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request *req)
{
    if (!g2g_enter(R_MPI_Irecv)) return PMPI_Irecv(buf, count, dt, source, tag, comm, req);
    int rc = PMPI_Irecv(buf, count, dt, source, tag, comm, req);
    if (rc == MPI_SUCCESS) {
        if (source != MPI_PROC_NULL) track_irecv(*req, buf, count, dt, comm);
        else track_null(*req);
    }
    g2g_leave(R_MPI_Irecv);
    return rc;
}

G2G_EXPORT int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
                            int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
    if (!g2g_enter(R_MPI_Sendrecv))
        return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    ev_send(sbuf, scount, stype, dest, stag, comm, 0);
    int rc = PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, st);
    if (rc == MPI_SUCCESS) ev_recv(rbuf, rcount, rtype, comm, st);
    g2g_leave(R_MPI_Sendrecv);
    return rc;
}

G2G_EXPORT int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag, int source, int rtag,
                                    MPI_Comm comm, MPI_Status *status)
{
    if (!g2g_enter(R_MPI_Sendrecv_replace))
        return PMPI_Sendrecv_replace(buf, count, dt, dest, stag, source, rtag, comm, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    ev_send(buf, count, dt, dest, stag, comm, 0);
    int rc = PMPI_Sendrecv_replace(buf, count, dt, dest, stag, source, rtag, comm, st);
    if (rc == MPI_SUCCESS) ev_recv(buf, count, dt, comm, st);
    g2g_leave(R_MPI_Sendrecv_replace);
    return rc;
}

/* ------------------------------------------------------------------------------------------------
 * Completion
 * --------------------------------------------------------------------------------------------- */
#define SMALL 64

G2G_EXPORT int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    if (!g2g_enter(R_MPI_Wait)) return PMPI_Wait(req, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    MPI_Request h = *req;
    int rc = PMPI_Wait(req, st);
    complete(h, st);
    g2g_leave(R_MPI_Wait);
    return rc;
}

G2G_EXPORT int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    if (!g2g_enter(R_MPI_Test)) return PMPI_Test(req, flag, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    MPI_Request h = *req;
    int rc = PMPI_Test(req, flag, st);
    if (*flag) complete(h, st);
    else test_failed(h);
    g2g_leave(R_MPI_Test);
    return rc;
}

/* Copies of the handles (PMPI overwrites completed ones with MPI_REQUEST_NULL) and a real status
 * array when the caller passed MPI_STATUSES_IGNORE. */
typedef struct {
    MPI_Request hs[SMALL], *h;
    MPI_Status ss[SMALL], *s;
    int own_h, own_s;
} multi;

static void multi_begin(multi *m, int n, const MPI_Request *reqs, MPI_Status *statuses)
{
    size_t cnt = (size_t)(n > 0 ? n : 0);
    m->own_h = cnt > SMALL;
    m->h = m->own_h ? malloc(cnt * sizeof *m->h) : m->hs;
    if (!m->h) abort();
    if (cnt) memcpy(m->h, reqs, cnt * sizeof *m->h);
    m->own_s = 0;
    if (statuses == MPI_STATUSES_IGNORE) {
        m->own_s = cnt > SMALL;
        m->s = m->own_s ? malloc(cnt * sizeof *m->s) : m->ss;
        if (!m->s) abort();
    } else {
        m->s = statuses;
    }
}

static void multi_end(multi *m)
{
    if (m->own_h) free(m->h);
    if (m->own_s) free(m->s);
}

G2G_EXPORT int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    if (!g2g_enter(R_MPI_Waitall)) return PMPI_Waitall(n, reqs, statuses);
    multi m;
    multi_begin(&m, n, reqs, statuses);
    int rc = PMPI_Waitall(n, reqs, m.s);
    for (int i = 0; i < n; i++)
        if (rc == MPI_SUCCESS || m.s[i].MPI_ERROR == MPI_SUCCESS) complete(m.h[i], &m.s[i]);
    multi_end(&m);
    g2g_leave(R_MPI_Waitall);
    return rc;
}

G2G_EXPORT int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
    if (!g2g_enter(R_MPI_Waitany)) return PMPI_Waitany(n, reqs, index, status);
    multi m;
    multi_begin(&m, n, reqs, MPI_STATUSES_IGNORE);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = PMPI_Waitany(n, reqs, index, st);
    if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED && *index >= 0 && *index < n) complete(m.h[*index], st);
    multi_end(&m);
    g2g_leave(R_MPI_Waitany);
    return rc;
}

G2G_EXPORT int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    if (!g2g_enter(R_MPI_Waitsome)) return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
    multi m;
    multi_begin(&m, n, reqs, statuses);
    int rc = PMPI_Waitsome(n, reqs, outcount, indices, m.s);
    if (*outcount != MPI_UNDEFINED)
        for (int i = 0; i < *outcount; i++)
            if (indices[i] >= 0 && indices[i] < n) complete(m.h[indices[i]], &m.s[i]);
    multi_end(&m);
    g2g_leave(R_MPI_Waitsome);
    return rc;
}

G2G_EXPORT int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    if (!g2g_enter(R_MPI_Testall)) return PMPI_Testall(n, reqs, flag, statuses);
    multi m;
    multi_begin(&m, n, reqs, statuses);
    int rc = PMPI_Testall(n, reqs, flag, m.s);
    for (int i = 0; i < n; i++) {
        if (*flag) complete(m.h[i], &m.s[i]);
        else test_failed(m.h[i]);
    }
    multi_end(&m);
    g2g_leave(R_MPI_Testall);
    return rc;
}

G2G_EXPORT int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
    if (!g2g_enter(R_MPI_Testany)) return PMPI_Testany(n, reqs, index, flag, status);
    multi m;
    multi_begin(&m, n, reqs, MPI_STATUSES_IGNORE);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = PMPI_Testany(n, reqs, index, flag, st);
    if (*flag && *index != MPI_UNDEFINED && *index >= 0 && *index < n) complete(m.h[*index], st);
    else if (!*flag)
        for (int i = 0; i < n; i++) test_failed(m.h[i]);
    multi_end(&m);
    g2g_leave(R_MPI_Testany);
    return rc;
}

G2G_EXPORT int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    if (!g2g_enter(R_MPI_Testsome)) return PMPI_Testsome(n, reqs, outcount, indices, statuses);
    multi m;
    multi_begin(&m, n, reqs, statuses);
    int rc = PMPI_Testsome(n, reqs, outcount, indices, m.s);
    if (*outcount != MPI_UNDEFINED) {
        for (int i = 0; i < *outcount; i++)
            if (indices[i] >= 0 && indices[i] < n) {
                complete(m.h[indices[i]], &m.s[i]);
                m.h[indices[i]] = MPI_REQUEST_NULL;
            }
        for (int i = 0; i < n; i++) test_failed(m.h[i]);
    }
    multi_end(&m);
    g2g_leave(R_MPI_Testsome);
    return rc;
}

G2G_EXPORT int MPI_Request_free(MPI_Request *req)
{
    if (!g2g_enter(R_MPI_Request_free)) return PMPI_Request_free(req);
    MPI_Request h = *req;
    int rc = PMPI_Request_free(req);
    g2g_lock();
    g2g_req_drop(h);
    g2g_unlock();
    g2g_leave(R_MPI_Request_free);
    return rc;
}

G2G_EXPORT int MPI_Cancel(MPI_Request *req)
{
    if (!g2g_enter(R_MPI_Cancel)) return PMPI_Cancel(req);
    int rc = PMPI_Cancel(req);
    g2g_leave(R_MPI_Cancel);
    return rc;
}

/* ------------------------------------------------------------------------------------------------
 * Collectives
 * --------------------------------------------------------------------------------------------- */
typedef struct {
    OTF2_CollectiveOp op;
    uint32_t cid, root;
    int n, me, is_root;
    uint64_t sent, recvd;          /* Score-P conventions */
    uint64_t bytes, recv_bytes;    /* local buffer sizes (g2g:bytes / g2g:recv_bytes) */
    uint8_t mem, recv_mem, contig;
} coll_t;

static void ci_init(coll_t *c, OTF2_CollectiveOp op, MPI_Comm comm, int root)
{
    memset(c, 0, sizeof *c);
    c->op = op;
    c->cid = g2g_comm_id(comm);
    g2g_lock();
    g2g_comm *e = g2g_comm_get(c->cid);
    c->n = e ? e->size : 1;
    c->me = e ? e->rank : 0;
    g2g_unlock();
    c->root = root >= 0 ? (uint32_t)root : OTF2_UNDEFINED_UINT32;
    c->is_root = root >= 0 && root == c->me;
    if (root == MPI_ROOT) c->is_root = 1; /* intercommunicator root group */
    c->mem = c->recv_mem = G2G_MEM_HOST;
    c->contig = 1;
}

static inline uint64_t nb(int count, MPI_Datatype dt) { return (uint64_t)(count > 0 ? count : 0) * g2g_type_size(dt); }

static uint64_t sum_counts(const int *counts, int n, MPI_Datatype dt)
{
    uint64_t s = 0;
    if (!counts) return 0;
    for (int i = 0; i < n; i++) s += (uint64_t)(counts[i] > 0 ? counts[i] : 0);
    return s * g2g_type_size(dt);
}

static void coll_begin(void)
{
    g2g_lock();
    if (g2g.active) OTF2_EvtWriter_MpiCollectiveBegin(g2g.evt, NULL, g2g_ts_pre());
    g2g_unlock();
}

static void coll_attrs(const coll_t *c)
{
    add_msg_attrs(c->mem, c->contig);
    OTF2_AttributeList_AddUint64(g2g.attrs, A_BYTES, c->bytes);
    OTF2_AttributeList_AddUint64(g2g.attrs, A_RECV_BYTES, c->recv_bytes);
    OTF2_AttributeList_AddUint8(g2g.attrs, A_RECV_MEM_SPACE, c->recv_mem);
}

static void coll_end(const coll_t *c)
{
    g2g_lock();
    if (g2g.active) {
        coll_attrs(c);
        OTF2_EvtWriter_MpiCollectiveEnd(g2g.evt, g2g.attrs, g2g_ts_after(), c->op, c->cid, c->root, c->sent, c->recvd);
    }
    g2g_unlock();
}

static void coll_request(const coll_t *c, MPI_Request h)
{
    g2g_lock();
    g2g_req *r = g2g_req_new(h, 0);
    if (r) {
        r->kind = REQ_COLL;
        r->op = c->op;
        r->comm = c->cid;
        r->root = c->root;
        r->bytes = c->sent;
        r->recvd = c->recvd;
        r->buf_bytes = c->bytes;
        r->buf_recv_bytes = c->recv_bytes;
        r->mem = c->mem;
        r->recv_mem = c->recv_mem;
        r->contig = c->contig;
        OTF2_EvtWriter_NonBlockingCollectiveRequest(g2g.evt, NULL, g2g_ts_after(), r->id);
    }
    g2g_unlock();
}

/* ---- per-collective sizes ---- */
static void ci_barrier(coll_t *c, MPI_Comm comm) { ci_init(c, OTF2_COLLECTIVE_OP_BARRIER, comm, -1); }

static void ci_bcast(coll_t *c, void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    ci_init(c, OTF2_COLLECTIVE_OP_BCAST, comm, root);
    uint64_t b = nb(count, dt);
    c->sent = c->is_root ? (uint64_t)c->n * b : 0;
    c->recvd = root == MPI_ROOT ? 0 : b;
    c->bytes = b;
    c->mem = c->recv_mem = g2g_mem_space(buf, b);
    c->contig = g2g_contiguous(dt);
}

static void ci_reduce(coll_t *c, const void *sbuf, void *rbuf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    ci_init(c, OTF2_COLLECTIVE_OP_REDUCE, comm, root);
    uint64_t b = nb(count, dt);
    int inplace = sbuf == MPI_IN_PLACE;
    if (c->is_root) {
        c->sent = inplace ? 0 : b;
        c->recvd = inplace ? (uint64_t)(c->n - 1) * b : (uint64_t)c->n * b;
        c->recv_bytes = b;
    } else {
        c->sent = b;
    }
    c->bytes = b;
    c->mem = g2g_mem_space(inplace ? rbuf : sbuf, b);
    c->recv_mem = c->is_root ? g2g_mem_space(rbuf, b) : c->mem;
    c->contig = g2g_contiguous(dt);
}

static void ci_allreduce(coll_t *c, OTF2_CollectiveOp op, const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                         MPI_Comm comm)
{
    ci_init(c, op, comm, -1);
    uint64_t b = nb(count, dt);
    int inplace = sbuf == MPI_IN_PLACE;
    if (op == OTF2_COLLECTIVE_OP_ALLREDUCE) {
        c->sent = c->recvd = (uint64_t)(inplace ? c->n - 1 : c->n) * b;
    } else { /* scan / exscan */
        int ex = op == OTF2_COLLECTIVE_OP_EXSCAN || inplace;
        c->sent = (uint64_t)(c->n - c->me - (ex ? 1 : 0)) * b;
        c->recvd = (uint64_t)(c->me + (ex ? 0 : 1)) * b;
    }
    c->bytes = c->recv_bytes = b;
    c->mem = g2g_mem_space(inplace ? rbuf : sbuf, b);
    c->recv_mem = g2g_mem_space(rbuf, b);
    c->contig = g2g_contiguous(dt);
}

static void ci_gather(coll_t *c, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                      MPI_Datatype rtype, int root, MPI_Comm comm)
{
    ci_init(c, OTF2_COLLECTIVE_OP_GATHER, comm, root);
    int inplace = sbuf == MPI_IN_PLACE;
    if (c->is_root) {
        uint64_t rb = nb(rcount, rtype);
        c->sent = inplace ? 0 : rb;
        c->recvd = inplace ? (uint64_t)(c->n - 1) * rb : (uint64_t)c->n * rb;
        c->bytes = inplace ? rb : nb(scount, stype);
        c->recv_bytes = (uint64_t)c->n * rb;
        c->recv_mem = g2g_mem_space(rbuf, c->recv_bytes);
        c->mem = inplace ? c->recv_mem : g2g_mem_space(sbuf, c->bytes);
        c->contig = g2g_contiguous(rtype) && (inplace || g2g_contiguous(stype));
    } else {
        c->sent = c->bytes = nb(scount, stype);
        c->mem = c->recv_mem = g2g_mem_space(sbuf, c->bytes);
        c->contig = g2g_contiguous(stype);
    }
}

static void ci_gatherv(coll_t *c, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int *rcounts,
                       MPI_Datatype rtype, int root, MPI_Comm comm)
{
    ci_init(c, OTF2_COLLECTIVE_OP_GATHERV, comm, root);
    int inplace = sbuf == MPI_IN_PLACE;
    if (c->is_root) {
        uint64_t total = sum_counts(rcounts, c->n, rtype);
        uint64_t mine = rcounts ? nb(rcounts[c->me], rtype) : 0;
        c->sent = inplace ? 0 : mine;
        c->recvd = inplace ? total - mine : total;
        c->bytes = inplace ? mine : nb(scount, stype);
        c->recv_bytes = total;
        c->recv_mem = g2g_mem_space(rbuf, total);
        c->mem = inplace ? c->recv_mem : g2g_mem_space(sbuf, c->bytes);
        c->contig = g2g_contiguous(rtype) && (inplace || g2g_contiguous(stype));
    } else {
        c->sent = c->bytes = nb(scount, stype);
        c->mem = c->recv_mem = g2g_mem_space(sbuf, c->bytes);
        c->contig = g2g_contiguous(stype);
    }
}

static void ci_scatter(coll_t *c, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                       MPI_Datatype rtype, int root, MPI_Comm comm)
{
    ci_init(c, OTF2_COLLECTIVE_OP_SCATTER, comm, root);
    if (c->is_root) {
        int inplace = rbuf == MPI_IN_PLACE;
        uint64_t blk = nb(scount, stype);
        c->recvd = inplace ? 0 : blk;
        c->sent = inplace ? (uint64_t)(c->n - 1) * blk : (uint64_t)c->n * blk;
        c->bytes = (uint64_t)c->n * blk;
        c->recv_bytes = inplace ? blk : nb(rcount, rtype);
        c->mem = g2g_mem_space(sbuf, c->bytes);
        c->recv_mem = inplace ? c->mem : g2g_mem_space(rbuf, c->recv_bytes);
        c->contig = g2g_contiguous(stype) && (inplace || g2g_contiguous(rtype));
    } else {
        c->recvd = c->recv_bytes = nb(rcount, rtype);
        c->mem = c->recv_mem = g2g_mem_space(rbuf, c->recv_bytes);
        c->contig = g2g_contiguous(rtype);
    }
}

static void ci_scatterv(coll_t *c, const void *sbuf, const int *scounts, MPI_Datatype stype, void *rbuf, int rcount,
                        MPI_Datatype rtype, int root, MPI_Comm comm)
{
    ci_init(c, OTF2_COLLECTIVE_OP_SCATTERV, comm, root);
    if (c->is_root) {
        int inplace = rbuf == MPI_IN_PLACE;
        uint64_t total = sum_counts(scounts, c->n, stype);
        uint64_t mine = scounts ? nb(scounts[c->me], stype) : 0;
        c->recvd = inplace ? 0 : mine;
        c->sent = inplace ? total - mine : total;
        c->bytes = total;
        c->recv_bytes = inplace ? mine : nb(rcount, rtype);
        c->mem = g2g_mem_space(sbuf, total);
        c->recv_mem = inplace ? c->mem : g2g_mem_space(rbuf, c->recv_bytes);
        c->contig = g2g_contiguous(stype) && (inplace || g2g_contiguous(rtype));
    } else {
        c->recvd = c->recv_bytes = nb(rcount, rtype);
        c->mem = c->recv_mem = g2g_mem_space(rbuf, c->recv_bytes);
        c->contig = g2g_contiguous(rtype);
    }
}

static void ci_allgather(coll_t *c, OTF2_CollectiveOp op, const void *sbuf, int scount, MPI_Datatype stype,
                         void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    /* Allgather and Alltoall (same Score-P accounting) */
    ci_init(c, op, comm, -1);
    int inplace = sbuf == MPI_IN_PLACE;
    uint64_t rb = nb(rcount, rtype), sb = nb(scount, stype);
    if (inplace) c->sent = c->recvd = (uint64_t)(c->n - 1) * rb;
    else {
        c->sent = (uint64_t)c->n * sb;
        c->recvd = (uint64_t)c->n * rb;
    }
    if (op == OTF2_COLLECTIVE_OP_ALLGATHER) c->bytes = inplace ? rb : sb;
    else c->bytes = (uint64_t)c->n * (inplace ? rb : sb);
    c->recv_bytes = (uint64_t)c->n * rb;
    c->recv_mem = g2g_mem_space(rbuf, c->recv_bytes);
    c->mem = inplace ? c->recv_mem : g2g_mem_space(sbuf, c->bytes);
    c->contig = g2g_contiguous(rtype) && (inplace || g2g_contiguous(stype));
}

static void ci_allgatherv(coll_t *c, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                          const int *rcounts, MPI_Datatype rtype, MPI_Comm comm)
{
    ci_init(c, OTF2_COLLECTIVE_OP_ALLGATHERV, comm, -1);
    int inplace = sbuf == MPI_IN_PLACE;
    uint64_t total = sum_counts(rcounts, c->n, rtype);
    uint64_t mine = rcounts ? nb(rcounts[c->me], rtype) : 0;
    if (inplace) {
        c->recvd = total - mine;
        c->sent = (uint64_t)(c->n - 1) * mine;
    } else {
        c->sent = (uint64_t)c->n * nb(scount, stype);
        c->recvd = total;
    }
    c->bytes = inplace ? mine : nb(scount, stype);
    c->recv_bytes = total;
    c->recv_mem = g2g_mem_space(rbuf, total);
    c->mem = inplace ? c->recv_mem : g2g_mem_space(sbuf, c->bytes);
    c->contig = g2g_contiguous(rtype) && (inplace || g2g_contiguous(stype));
}

static void ci_alltoallv(coll_t *c, const void *sbuf, const int *scounts, MPI_Datatype stype, void *rbuf,
                         const int *rcounts, MPI_Datatype rtype, MPI_Comm comm)
{
    ci_init(c, OTF2_COLLECTIVE_OP_ALLTOALLV, comm, -1);
    int inplace = sbuf == MPI_IN_PLACE;
    uint64_t rtotal = sum_counts(rcounts, c->n, rtype);
    if (inplace) {
        uint64_t mine = rcounts ? nb(rcounts[c->me], rtype) : 0;
        c->sent = c->recvd = rtotal - mine;
        c->bytes = rtotal;
    } else {
        c->sent = c->bytes = sum_counts(scounts, c->n, stype);
        c->recvd = rtotal;
    }
    c->recv_bytes = rtotal;
    c->recv_mem = g2g_mem_space(rbuf, rtotal);
    c->mem = inplace ? c->recv_mem : g2g_mem_space(sbuf, c->bytes);
    c->contig = g2g_contiguous(rtype) && (inplace || g2g_contiguous(stype));
}

static void ci_reduce_scatter(coll_t *c, const void *sbuf, void *rbuf, const int *rcounts, MPI_Datatype dt,
                              MPI_Comm comm)
{
    ci_init(c, OTF2_COLLECTIVE_OP_REDUCE_SCATTER, comm, -1);
    int inplace = sbuf == MPI_IN_PLACE;
    uint64_t total = sum_counts(rcounts, c->n, dt);
    uint64_t mine = rcounts ? nb(rcounts[c->me], dt) : 0;
    c->sent = inplace ? total - mine : total;
    c->recvd = (uint64_t)(inplace ? c->n - 1 : c->n) * mine;
    c->bytes = total;
    c->recv_bytes = mine;
    c->mem = g2g_mem_space(inplace ? rbuf : sbuf, total);
    c->recv_mem = g2g_mem_space(rbuf, inplace ? total : mine);
    c->contig = g2g_contiguous(dt);
}

static void ci_reduce_scatter_block(coll_t *c, const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt,
                                    MPI_Comm comm)
{
    ci_init(c, OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK, comm, -1);
    int inplace = sbuf == MPI_IN_PLACE;
    uint64_t b = nb(rcount, dt);
    c->sent = c->recvd = (uint64_t)(inplace ? c->n - 1 : c->n) * b;
    c->bytes = (uint64_t)c->n * b;
    c->recv_bytes = b;
    c->mem = g2g_mem_space(inplace ? rbuf : sbuf, c->bytes);
    c->recv_mem = g2g_mem_space(rbuf, inplace ? c->bytes : b);
    c->contig = g2g_contiguous(dt);
}

/* Blocking collective: Enter, MpiCollectiveBegin, PMPI, MpiCollectiveEnd, Leave. */
#define BLOCKING_COLL(REGION, CALL, INFO)                                                          \
    if (!g2g_enter(REGION)) return CALL;                                                           \
    coll_t c;                                                                                      \
    INFO;                                                                                          \
    coll_begin();                                                                                  \
    int rc = CALL;                                                                                 \
    coll_end(&c);                                                                                  \
    g2g_leave(REGION);                                                                             \
    return rc;

/* Nonblocking collective: Enter, PMPI, NonBlockingCollectiveRequest, Leave; the matching
 * NonBlockingCollectiveComplete is written by the Wait/Test that completes the request. */
#define NONBLOCKING_COLL(REGION, CALL, INFO)                                                       \
    if (!g2g_enter(REGION)) return CALL;                                                           \
    coll_t c;                                                                                      \
    INFO;                                                                                          \
    int rc = CALL;                                                                                 \
    if (rc == MPI_SUCCESS) coll_request(&c, *req);                                                 \
    g2g_leave(REGION);                                                                             \
    return rc;

G2G_EXPORT int MPI_Barrier(MPI_Comm comm) { BLOCKING_COLL(R_MPI_Barrier, PMPI_Barrier(comm), ci_barrier(&c, comm)) }

G2G_EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Bcast, PMPI_Bcast(buf, count, dt, root, comm), ci_bcast(&c, buf, count, dt, root, comm))
}

G2G_EXPORT int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Reduce, PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm),
                  ci_reduce(&c, sbuf, rbuf, count, dt, root, comm))
}

G2G_EXPORT int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Allreduce, PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm),
                  ci_allreduce(&c, OTF2_COLLECTIVE_OP_ALLREDUCE, sbuf, rbuf, count, dt, comm))
}

G2G_EXPORT int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                          MPI_Datatype rtype, int root, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Gather, PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm),
                  ci_gather(&c, sbuf, scount, stype, rbuf, rcount, rtype, root, comm))
}

G2G_EXPORT int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                           const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Gatherv, PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm),
                  ci_gatherv(&c, sbuf, scount, stype, rbuf, rcounts, rtype, root, comm))
}

G2G_EXPORT int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                           MPI_Datatype rtype, int root, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Scatter, PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm),
                  ci_scatter(&c, sbuf, scount, stype, rbuf, rcount, rtype, root, comm))
}

G2G_EXPORT int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                            void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Scatterv, PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm),
                  ci_scatterv(&c, sbuf, scounts, stype, rbuf, rcount, rtype, root, comm))
}

G2G_EXPORT int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                             MPI_Datatype rtype, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Allgather, PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm),
                  ci_allgather(&c, OTF2_COLLECTIVE_OP_ALLGATHER, sbuf, scount, stype, rbuf, rcount, rtype, comm))
}

G2G_EXPORT int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                              const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Allgatherv, PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm),
                  ci_allgatherv(&c, sbuf, scount, stype, rbuf, rcounts, rtype, comm))
}

G2G_EXPORT int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                            MPI_Datatype rtype, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Alltoall, PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm),
                  ci_allgather(&c, OTF2_COLLECTIVE_OP_ALLTOALL, sbuf, scount, stype, rbuf, rcount, rtype, comm))
}

G2G_EXPORT int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                             void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Alltoallv,
                  PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm),
                  ci_alltoallv(&c, sbuf, scounts, stype, rbuf, rcounts, rtype, comm))
}

G2G_EXPORT int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt, MPI_Op op,
                                  MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Reduce_scatter, PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dt, op, comm),
                  ci_reduce_scatter(&c, sbuf, rbuf, rcounts, dt, comm))
}

G2G_EXPORT int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt, MPI_Op op,
                                        MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Reduce_scatter_block, PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, dt, op, comm),
                  ci_reduce_scatter_block(&c, sbuf, rbuf, rcount, dt, comm))
}

G2G_EXPORT int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Scan, PMPI_Scan(sbuf, rbuf, count, dt, op, comm),
                  ci_allreduce(&c, OTF2_COLLECTIVE_OP_SCAN, sbuf, rbuf, count, dt, comm))
}

G2G_EXPORT int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    BLOCKING_COLL(R_MPI_Exscan, PMPI_Exscan(sbuf, rbuf, count, dt, op, comm),
                  ci_allreduce(&c, OTF2_COLLECTIVE_OP_EXSCAN, sbuf, rbuf, count, dt, comm))
}

G2G_EXPORT int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Ibarrier, PMPI_Ibarrier(comm, req), ci_barrier(&c, comm))
}

G2G_EXPORT int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Ibcast, PMPI_Ibcast(buf, count, dt, root, comm, req),
                     ci_bcast(&c, buf, count, dt, root, comm))
}

G2G_EXPORT int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                           MPI_Comm comm, MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Ireduce, PMPI_Ireduce(sbuf, rbuf, count, dt, op, root, comm, req),
                     ci_reduce(&c, sbuf, rbuf, count, dt, root, comm))
}

G2G_EXPORT int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                              MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Iallreduce, PMPI_Iallreduce(sbuf, rbuf, count, dt, op, comm, req),
                     ci_allreduce(&c, OTF2_COLLECTIVE_OP_ALLREDUCE, sbuf, rbuf, count, dt, comm))
}

G2G_EXPORT int MPI_Igather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                           MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Igather, PMPI_Igather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req),
                     ci_gather(&c, sbuf, scount, stype, rbuf, rcount, rtype, root, comm))
}

G2G_EXPORT int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                            const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Igatherv,
                     PMPI_Igatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, req),
                     ci_gatherv(&c, sbuf, scount, stype, rbuf, rcounts, rtype, root, comm))
}

G2G_EXPORT int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                            MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Iscatter, PMPI_Iscatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req),
                     ci_scatter(&c, sbuf, scount, stype, rbuf, rcount, rtype, root, comm))
}

G2G_EXPORT int MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                             void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Iscatterv,
                     PMPI_Iscatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, req),
                     ci_scatterv(&c, sbuf, scounts, stype, rbuf, rcount, rtype, root, comm))
}

G2G_EXPORT int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                              MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Iallgather, PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req),
                     ci_allgather(&c, OTF2_COLLECTIVE_OP_ALLGATHER, sbuf, scount, stype, rbuf, rcount, rtype, comm))
}

G2G_EXPORT int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                               const int displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Iallgatherv,
                     PMPI_Iallgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req),
                     ci_allgatherv(&c, sbuf, scount, stype, rbuf, rcounts, rtype, comm))
}

G2G_EXPORT int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                             MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Ialltoall, PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req),
                     ci_allgather(&c, OTF2_COLLECTIVE_OP_ALLTOALL, sbuf, scount, stype, rbuf, rcount, rtype, comm))
}

G2G_EXPORT int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                              void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm,
                              MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Ialltoallv,
                     PMPI_Ialltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, req),
                     ci_alltoallv(&c, sbuf, scounts, stype, rbuf, rcounts, rtype, comm))
}

G2G_EXPORT int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt, MPI_Op op,
                                   MPI_Comm comm, MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Ireduce_scatter, PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, dt, op, comm, req),
                     ci_reduce_scatter(&c, sbuf, rbuf, rcounts, dt, comm))
}

G2G_EXPORT int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt, MPI_Op op,
                                         MPI_Comm comm, MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Ireduce_scatter_block,
                     PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, dt, op, comm, req),
                     ci_reduce_scatter_block(&c, sbuf, rbuf, rcount, dt, comm))
}

G2G_EXPORT int MPI_Iscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                         MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Iscan, PMPI_Iscan(sbuf, rbuf, count, dt, op, comm, req),
                     ci_allreduce(&c, OTF2_COLLECTIVE_OP_SCAN, sbuf, rbuf, count, dt, comm))
}

G2G_EXPORT int MPI_Iexscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                           MPI_Request *req)
{
    NONBLOCKING_COLL(R_MPI_Iexscan, PMPI_Iexscan(sbuf, rbuf, count, dt, op, comm, req),
                     ci_allreduce(&c, OTF2_COLLECTIVE_OP_EXSCAN, sbuf, rbuf, count, dt, comm))
}

/* ------------------------------------------------------------------------------------------------
 * Communicator management: a CREATE_HANDLE / DESTROY_HANDLE collective on the parent (as Score-P)
 * --------------------------------------------------------------------------------------------- */
#define COMM_CREATE(REGION, PARENT, CALL, NEWCOMM)                                                 \
    if (!g2g_enter(REGION)) return CALL;                                                           \
    coll_t c;                                                                                      \
    ci_init(&c, OTF2_COLLECTIVE_OP_CREATE_HANDLE, PARENT, -1);                                     \
    coll_begin();                                                                                  \
    int rc = CALL;                                                                                 \
    if (rc == MPI_SUCCESS) g2g_comm_created(*(NEWCOMM), PARENT, REGION);                           \
    coll_end(&c);                                                                                  \
    g2g_leave(REGION);                                                                             \
    return rc;

G2G_EXPORT int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    COMM_CREATE(R_MPI_Comm_split, comm, PMPI_Comm_split(comm, color, key, newcomm), newcomm)
}

G2G_EXPORT int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    COMM_CREATE(R_MPI_Comm_split_type, comm, PMPI_Comm_split_type(comm, split_type, key, info, newcomm), newcomm)
}

G2G_EXPORT int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    COMM_CREATE(R_MPI_Comm_dup, comm, PMPI_Comm_dup(comm, newcomm), newcomm)
}

G2G_EXPORT int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    COMM_CREATE(R_MPI_Comm_dup_with_info, comm, PMPI_Comm_dup_with_info(comm, info, newcomm), newcomm)
}

G2G_EXPORT int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    COMM_CREATE(R_MPI_Comm_create, comm, PMPI_Comm_create(comm, group, newcomm), newcomm)
}

G2G_EXPORT int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    COMM_CREATE(R_MPI_Comm_create_group, comm, PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm)
}

G2G_EXPORT int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                               MPI_Comm *newcomm)
{
    COMM_CREATE(R_MPI_Cart_create, comm, PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm), newcomm)
}

G2G_EXPORT int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    COMM_CREATE(R_MPI_Cart_sub, comm, PMPI_Cart_sub(comm, remain_dims, newcomm), newcomm)
}

G2G_EXPORT int MPI_Comm_free(MPI_Comm *comm)
{
    if (!g2g_enter(R_MPI_Comm_free)) return PMPI_Comm_free(comm);
    coll_t c;
    MPI_Comm old = *comm;
    ci_init(&c, OTF2_COLLECTIVE_OP_DESTROY_HANDLE, old, -1);
    coll_begin();
    int rc = PMPI_Comm_free(comm);
    if (rc == MPI_SUCCESS) g2g_comm_freed(old);
    coll_end(&c);
    g2g_leave(R_MPI_Comm_free);
    return rc;
}
