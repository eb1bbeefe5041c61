/*
 * g2gtrace Fortran (mpif.h / "use mpi") bindings.  Open MPI's and MPICH's Fortran symbols call
 * PMPI_* directly, so the C wrappers never see Fortran calls; these replacements convert the
 * arguments (MPI_Fint handles, 1-based indices, LOGICALs, MPI_BOTTOM / MPI_IN_PLACE /
 * MPI_STATUS(ES)_IGNORE) and call the C wrappers.  Each is exported under the four usual
 * name-manglings: mpi_send_, mpi_send__, mpi_send and MPI_SEND.
 *
 * Not covered: the mpi_f08 module (Open MPI calls its own ompi_*_f entry points), and Fortran
 * INTEGER sizes other than C int (-fdefault-integer-8).
 */
#include "g2g.h"

#include <dlfcn.h>
#include <stdlib.h>

typedef char g2g_fint_is_int[sizeof(MPI_Fint) == sizeof(int) ? 1 : -1];

#define FDEF(l, U, params)                                                                         \
    G2G_EXPORT void l##_ params;                                                                   \
    G2G_EXPORT void l params __attribute__((alias(#l "_")));                                       \
    G2G_EXPORT void l##__ params __attribute__((alias(#l "_")));                                   \
    G2G_EXPORT void U params __attribute__((alias(#l "_")));                                       \
    void l##_ params

/* ---- MPI_BOTTOM / MPI_IN_PLACE as seen from Fortran ---- */
static void *f_bottom, *f_in_place;   /* Open MPI: address of the common block */
static void **f_bottom_p, **f_in_place_p; /* MPICH: variables holding the address */
static pthread_once_t f_once = PTHREAD_ONCE_INIT;

static void *first_sym(const char *const *names)
{
    for (; *names; names++) {
        void *p = dlsym(RTLD_DEFAULT, *names);
        if (p) return p;
    }
    return NULL;
}

static void f_resolve(void)
{
    static const char *const bottom[] = {"mpi_fortran_bottom_", "mpi_fortran_bottom", "mpi_fortran_bottom__",
                                         "MPI_FORTRAN_BOTTOM", NULL};
    static const char *const in_place[] = {"mpi_fortran_in_place_", "mpi_fortran_in_place",
                                           "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE", NULL};
    static const char *const mpich_bottom[] = {"MPIR_F_MPI_BOTTOM", NULL};
    static const char *const mpich_in_place[] = {"MPIR_F_MPI_IN_PLACE", NULL};
    f_bottom = first_sym(bottom);
    f_in_place = first_sym(in_place);
    f_bottom_p = first_sym(mpich_bottom);
    f_in_place_p = first_sym(mpich_in_place);
}

static void *fbuf(void *p)
{
    pthread_once(&f_once, f_resolve);
    if (!p) return p;
    if (p == f_bottom || (f_bottom_p && p == *f_bottom_p)) return MPI_BOTTOM;
    if (p == f_in_place || (f_in_place_p && p == *f_in_place_p)) return MPI_IN_PLACE;
    return p;
}

#define F_STATUS_INTS ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))

static int f_status_ignored(const MPI_Fint *s) { return s == MPI_F_STATUS_IGNORE; }
static int f_statuses_ignored(const MPI_Fint *s) { return s == MPI_F_STATUSES_IGNORE; }

static void status_out(const MPI_Status *c, MPI_Fint *f)
{
    if (!f_status_ignored(f)) PMPI_Status_c2f(c, f);
}

/* Fortran request arrays */
typedef struct {
    MPI_Request small[64], *r;
    MPI_Status ssmall[64], *s;
} freqs;

static void freqs_in(freqs *q, int n, const MPI_Fint *f, int want_status)
{
    size_t cnt = (size_t)(n > 0 ? n : 0);
    q->r = cnt > 64 ? malloc(cnt * sizeof *q->r) : q->small;
    q->s = NULL;
    if (want_status) q->s = cnt > 64 ? malloc(cnt * sizeof *q->s) : q->ssmall;
    if (!q->r || (want_status && !q->s)) abort();
    for (int i = 0; i < n; i++) q->r[i] = PMPI_Request_f2c(f[i]);
}

static void freqs_out(freqs *q, int n, MPI_Fint *f)
{
    for (int i = 0; i < n; i++) f[i] = PMPI_Request_c2f(q->r[i]);
    if (q->r != q->small) free(q->r);
    if (q->s && q->s != q->ssmall) free(q->s);
}

#define COMM(c) PMPI_Comm_f2c(*(c))
#define TYPE(t) PMPI_Type_f2c(*(t))
#define OP(o) PMPI_Op_f2c(*(o))

/* ------------------------------------------------------------------------------------------------
 * Environment
 * --------------------------------------------------------------------------------------------- */
FDEF(mpi_init, MPI_INIT, (MPI_Fint * ierr)) { *ierr = MPI_Init(NULL, NULL); }

FDEF(mpi_init_thread, MPI_INIT_THREAD, (MPI_Fint * required, MPI_Fint *provided, MPI_Fint *ierr))
{
    int p = 0;
    *ierr = MPI_Init_thread(NULL, NULL, *required, &p);
    *provided = p;
}

FDEF(mpi_finalize, MPI_FINALIZE, (MPI_Fint * ierr)) { *ierr = MPI_Finalize(); }

/* ------------------------------------------------------------------------------------------------
 * Point to point
 * --------------------------------------------------------------------------------------------- */
#define F_BLOCKING_SEND(l, U, C)                                                                   \
    FDEF(l, U, (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *dest, MPI_Fint *tag, MPI_Fint *comm, \
                MPI_Fint *ierr))                                                                   \
    {                                                                                              \
        *ierr = C(fbuf(buf), *count, TYPE(dt), *dest, *tag, COMM(comm));                           \
    }
F_BLOCKING_SEND(mpi_send, MPI_SEND, MPI_Send)
F_BLOCKING_SEND(mpi_ssend, MPI_SSEND, MPI_Ssend)
F_BLOCKING_SEND(mpi_bsend, MPI_BSEND, MPI_Bsend)
F_BLOCKING_SEND(mpi_rsend, MPI_RSEND, MPI_Rsend)

#define F_NONBLOCKING_SEND(l, U, C)                                                                \
    FDEF(l, U, (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *dest, MPI_Fint *tag, MPI_Fint *comm, \
                MPI_Fint *req, MPI_Fint *ierr))                                                    \
    {                                                                                              \
        MPI_Request r = MPI_REQUEST_NULL;                                                          \
        *ierr = C(fbuf(buf), *count, TYPE(dt), *dest, *tag, COMM(comm), &r);                       \
        if (*ierr == MPI_SUCCESS) *req = PMPI_Request_c2f(r);                                      \
    }
F_NONBLOCKING_SEND(mpi_isend, MPI_ISEND, MPI_Isend)
F_NONBLOCKING_SEND(mpi_issend, MPI_ISSEND, MPI_Issend)
F_NONBLOCKING_SEND(mpi_ibsend, MPI_IBSEND, MPI_Ibsend)
F_NONBLOCKING_SEND(mpi_irsend, MPI_IRSEND, MPI_Irsend)

FDEF(mpi_recv, MPI_RECV, (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *src, MPI_Fint *tag, MPI_Fint *comm,
                          MPI_Fint *status, MPI_Fint *ierr))
{
    MPI_Status s;
    *ierr = MPI_Recv(fbuf(buf), *count, TYPE(dt), *src, *tag, COMM(comm), &s);
    if (*ierr == MPI_SUCCESS) status_out(&s, status);
}

FDEF(mpi_irecv, MPI_IRECV, (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *src, MPI_Fint *tag, MPI_Fint *comm,
                            MPI_Fint *req, MPI_Fint *ierr))
{
    MPI_Request r = MPI_REQUEST_NULL;
    *ierr = MPI_Irecv(fbuf(buf), *count, TYPE(dt), *src, *tag, COMM(comm), &r);
    if (*ierr == MPI_SUCCESS) *req = PMPI_Request_c2f(r);
}

FDEF(mpi_sendrecv, MPI_SENDRECV, (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, MPI_Fint *dest, MPI_Fint *stag,
                                  void *rbuf, MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *src, MPI_Fint *rtag,
                                  MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr))
{
    MPI_Status s;
    *ierr = MPI_Sendrecv(fbuf(sbuf), *scount, TYPE(stype), *dest, *stag, fbuf(rbuf), *rcount, TYPE(rtype), *src,
                         *rtag, COMM(comm), &s);
    if (*ierr == MPI_SUCCESS) status_out(&s, status);
}

FDEF(mpi_sendrecv_replace, MPI_SENDRECV_REPLACE,
     (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *dest, MPI_Fint *stag, MPI_Fint *src, MPI_Fint *rtag,
      MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr))
{
    MPI_Status s;
    *ierr = MPI_Sendrecv_replace(fbuf(buf), *count, TYPE(dt), *dest, *stag, *src, *rtag, COMM(comm), &s);
    if (*ierr == MPI_SUCCESS) status_out(&s, status);
}

/* ------------------------------------------------------------------------------------------------
 * Completion
 * --------------------------------------------------------------------------------------------- */
FDEF(mpi_wait, MPI_WAIT, (MPI_Fint * req, MPI_Fint *status, MPI_Fint *ierr))
{
    MPI_Request r = PMPI_Request_f2c(*req);
    MPI_Status s;
    *ierr = MPI_Wait(&r, &s);
    *req = PMPI_Request_c2f(r);
    if (*ierr == MPI_SUCCESS) status_out(&s, status);
}

FDEF(mpi_test, MPI_TEST, (MPI_Fint * req, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr))
{
    MPI_Request r = PMPI_Request_f2c(*req);
    MPI_Status s;
    int f = 0;
    *ierr = MPI_Test(&r, &f, &s);
    *req = PMPI_Request_c2f(r);
    *flag = f;
    if (*ierr == MPI_SUCCESS && f) status_out(&s, status);
}

static void statuses_out(const MPI_Status *s, MPI_Fint *f, int n)
{
    if (f_statuses_ignored(f)) return;
    for (int i = 0; i < n; i++) PMPI_Status_c2f(&s[i], f + (size_t)i * F_STATUS_INTS);
}

FDEF(mpi_waitall, MPI_WAITALL, (MPI_Fint * count, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr))
{
    freqs q;
    freqs_in(&q, *count, reqs, 1);
    *ierr = MPI_Waitall(*count, q.r, q.s);
    statuses_out(q.s, statuses, *count);
    freqs_out(&q, *count, reqs);
}

FDEF(mpi_waitany, MPI_WAITANY, (MPI_Fint * count, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *status, MPI_Fint *ierr))
{
    freqs q;
    freqs_in(&q, *count, reqs, 0);
    MPI_Status s;
    int idx = MPI_UNDEFINED;
    *ierr = MPI_Waitany(*count, q.r, &idx, &s);
    freqs_out(&q, *count, reqs);
    *index = idx == MPI_UNDEFINED ? MPI_UNDEFINED : idx + 1;
    if (*ierr == MPI_SUCCESS) status_out(&s, status);
}

FDEF(mpi_waitsome, MPI_WAITSOME, (MPI_Fint * count, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices,
                                  MPI_Fint *statuses, MPI_Fint *ierr))
{
    freqs q;
    freqs_in(&q, *count, reqs, 1);
    int out = 0;
    *ierr = MPI_Waitsome(*count, q.r, &out, indices, q.s);
    *outcount = out;
    if (out != MPI_UNDEFINED) {
        statuses_out(q.s, statuses, out);
        for (int i = 0; i < out; i++) indices[i] += 1;
    }
    freqs_out(&q, *count, reqs);
}

FDEF(mpi_testall, MPI_TESTALL, (MPI_Fint * count, MPI_Fint *reqs, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr))
{
    freqs q;
    freqs_in(&q, *count, reqs, 1);
    int f = 0;
    *ierr = MPI_Testall(*count, q.r, &f, q.s);
    *flag = f;
    if (f) statuses_out(q.s, statuses, *count);
    freqs_out(&q, *count, reqs);
}

FDEF(mpi_testany, MPI_TESTANY, (MPI_Fint * count, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status,
                                MPI_Fint *ierr))
{
    freqs q;
    freqs_in(&q, *count, reqs, 0);
    MPI_Status s;
    int idx = MPI_UNDEFINED, f = 0;
    *ierr = MPI_Testany(*count, q.r, &idx, &f, &s);
    freqs_out(&q, *count, reqs);
    *flag = f;
    *index = idx == MPI_UNDEFINED ? MPI_UNDEFINED : idx + 1;
    if (*ierr == MPI_SUCCESS && f) status_out(&s, status);
}

FDEF(mpi_testsome, MPI_TESTSOME, (MPI_Fint * count, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices,
                                  MPI_Fint *statuses, MPI_Fint *ierr))
{
    freqs q;
    freqs_in(&q, *count, reqs, 1);
    int out = 0;
    *ierr = MPI_Testsome(*count, q.r, &out, indices, q.s);
    *outcount = out;
    if (out != MPI_UNDEFINED) {
        statuses_out(q.s, statuses, out);
        for (int i = 0; i < out; i++) indices[i] += 1;
    }
    freqs_out(&q, *count, reqs);
}

FDEF(mpi_request_free, MPI_REQUEST_FREE, (MPI_Fint * req, MPI_Fint *ierr))
{
    MPI_Request r = PMPI_Request_f2c(*req);
    *ierr = MPI_Request_free(&r);
    *req = PMPI_Request_c2f(r);
}

FDEF(mpi_cancel, MPI_CANCEL, (MPI_Fint * req, MPI_Fint *ierr))
{
    MPI_Request r = PMPI_Request_f2c(*req);
    *ierr = MPI_Cancel(&r);
}

/* ------------------------------------------------------------------------------------------------
 * Collectives
 * --------------------------------------------------------------------------------------------- */
#define REQ_OUT                                                                                    \
    if (*ierr == MPI_SUCCESS) *req = PMPI_Request_c2f(r);

FDEF(mpi_barrier, MPI_BARRIER, (MPI_Fint * comm, MPI_Fint *ierr)) { *ierr = MPI_Barrier(COMM(comm)); }

FDEF(mpi_ibarrier, MPI_IBARRIER, (MPI_Fint * comm, MPI_Fint *req, MPI_Fint *ierr))
{
    MPI_Request r = MPI_REQUEST_NULL;
    *ierr = MPI_Ibarrier(COMM(comm), &r);
    REQ_OUT
}

FDEF(mpi_bcast, MPI_BCAST, (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr))
{
    *ierr = MPI_Bcast(fbuf(buf), *count, TYPE(dt), *root, COMM(comm));
}

FDEF(mpi_ibcast, MPI_IBCAST, (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req,
                              MPI_Fint *ierr))
{
    MPI_Request r = MPI_REQUEST_NULL;
    *ierr = MPI_Ibcast(fbuf(buf), *count, TYPE(dt), *root, COMM(comm), &r);
    REQ_OUT
}

FDEF(mpi_reduce, MPI_REDUCE, (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root,
                              MPI_Fint *comm, MPI_Fint *ierr))
{
    *ierr = MPI_Reduce(fbuf(sbuf), fbuf(rbuf), *count, TYPE(dt), OP(op), *root, COMM(comm));
}

FDEF(mpi_ireduce, MPI_IREDUCE, (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root,
                                MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr))
{
    MPI_Request r = MPI_REQUEST_NULL;
    *ierr = MPI_Ireduce(fbuf(sbuf), fbuf(rbuf), *count, TYPE(dt), OP(op), *root, COMM(comm), &r);
    REQ_OUT
}

#define F_ALLREDUCE_LIKE(l, U, C)                                                                  \
    FDEF(l, U, (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm, \
                MPI_Fint *ierr))                                                                   \
    {                                                                                              \
        *ierr = C(fbuf(sbuf), fbuf(rbuf), *count, TYPE(dt), OP(op), COMM(comm));                   \
    }
#define F_IALLREDUCE_LIKE(l, U, C)                                                                 \
    FDEF(l, U, (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm, \
                MPI_Fint *req, MPI_Fint *ierr))                                                    \
    {                                                                                              \
        MPI_Request r = MPI_REQUEST_NULL;                                                          \
        *ierr = C(fbuf(sbuf), fbuf(rbuf), *count, TYPE(dt), OP(op), COMM(comm), &r);               \
        REQ_OUT                                                                                    \
    }
F_ALLREDUCE_LIKE(mpi_allreduce, MPI_ALLREDUCE, MPI_Allreduce)
F_ALLREDUCE_LIKE(mpi_scan, MPI_SCAN, MPI_Scan)
F_ALLREDUCE_LIKE(mpi_exscan, MPI_EXSCAN, MPI_Exscan)
F_ALLREDUCE_LIKE(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, MPI_Reduce_scatter_block)
F_IALLREDUCE_LIKE(mpi_iallreduce, MPI_IALLREDUCE, MPI_Iallreduce)
F_IALLREDUCE_LIKE(mpi_iscan, MPI_ISCAN, MPI_Iscan)
F_IALLREDUCE_LIKE(mpi_iexscan, MPI_IEXSCAN, MPI_Iexscan)
F_IALLREDUCE_LIKE(mpi_ireduce_scatter_block, MPI_IREDUCE_SCATTER_BLOCK, MPI_Ireduce_scatter_block)

FDEF(mpi_reduce_scatter, MPI_REDUCE_SCATTER, (void *sbuf, void *rbuf, MPI_Fint *rcounts, MPI_Fint *dt, MPI_Fint *op,
                                              MPI_Fint *comm, MPI_Fint *ierr))
{
    *ierr = MPI_Reduce_scatter(fbuf(sbuf), fbuf(rbuf), rcounts, TYPE(dt), OP(op), COMM(comm));
}

FDEF(mpi_ireduce_scatter, MPI_IREDUCE_SCATTER, (void *sbuf, void *rbuf, MPI_Fint *rcounts, MPI_Fint *dt, MPI_Fint *op,
                                                MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr))
{
    MPI_Request r = MPI_REQUEST_NULL;
    *ierr = MPI_Ireduce_scatter(fbuf(sbuf), fbuf(rbuf), rcounts, TYPE(dt), OP(op), COMM(comm), &r);
    REQ_OUT
}

/* gather / scatter / allgather / alltoall with (sbuf, scount, stype, rbuf, rcount, rtype [, root]) */
#define F_ROOTED(l, U, C)                                                                          \
    FDEF(l, U, (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount, MPI_Fint *rtype, \
                MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr))                                   \
    {                                                                                              \
        *ierr = C(fbuf(sbuf), *scount, TYPE(stype), fbuf(rbuf), *rcount, TYPE(rtype), *root, COMM(comm)); \
    }
#define F_IROOTED(l, U, C)                                                                         \
    FDEF(l, U, (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount, MPI_Fint *rtype, \
                MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr))                    \
    {                                                                                              \
        MPI_Request r = MPI_REQUEST_NULL;                                                          \
        *ierr = C(fbuf(sbuf), *scount, TYPE(stype), fbuf(rbuf), *rcount, TYPE(rtype), *root, COMM(comm), &r); \
        REQ_OUT                                                                                    \
    }
#define F_ALL(l, U, C)                                                                             \
    FDEF(l, U, (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount, MPI_Fint *rtype, \
                MPI_Fint *comm, MPI_Fint *ierr))                                                   \
    {                                                                                              \
        *ierr = C(fbuf(sbuf), *scount, TYPE(stype), fbuf(rbuf), *rcount, TYPE(rtype), COMM(comm)); \
    }
#define F_IALL(l, U, C)                                                                            \
    FDEF(l, U, (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount, MPI_Fint *rtype, \
                MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr))                                    \
    {                                                                                              \
        MPI_Request r = MPI_REQUEST_NULL;                                                          \
        *ierr = C(fbuf(sbuf), *scount, TYPE(stype), fbuf(rbuf), *rcount, TYPE(rtype), COMM(comm), &r); \
        REQ_OUT                                                                                    \
    }
F_ROOTED(mpi_gather, MPI_GATHER, MPI_Gather)
F_ROOTED(mpi_scatter, MPI_SCATTER, MPI_Scatter)
F_IROOTED(mpi_igather, MPI_IGATHER, MPI_Igather)
F_IROOTED(mpi_iscatter, MPI_ISCATTER, MPI_Iscatter)
F_ALL(mpi_allgather, MPI_ALLGATHER, MPI_Allgather)
F_ALL(mpi_alltoall, MPI_ALLTOALL, MPI_Alltoall)
F_IALL(mpi_iallgather, MPI_IALLGATHER, MPI_Iallgather)
F_IALL(mpi_ialltoall, MPI_IALLTOALL, MPI_Ialltoall)

FDEF(mpi_gatherv, MPI_GATHERV, (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcounts,
                                MPI_Fint *displs, MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr))
{
    *ierr = MPI_Gatherv(fbuf(sbuf), *scount, TYPE(stype), fbuf(rbuf), rcounts, displs, TYPE(rtype), *root,
                        COMM(comm));
}

FDEF(mpi_igatherv, MPI_IGATHERV, (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcounts,
                                  MPI_Fint *displs, MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req,
                                  MPI_Fint *ierr))
{
    MPI_Request r = MPI_REQUEST_NULL;
    *ierr = MPI_Igatherv(fbuf(sbuf), *scount, TYPE(stype), fbuf(rbuf), rcounts, displs, TYPE(rtype), *root,
                         COMM(comm), &r);
    REQ_OUT
}

FDEF(mpi_scatterv, MPI_SCATTERV, (void *sbuf, MPI_Fint *scounts, MPI_Fint *displs, MPI_Fint *stype, void *rbuf,
                                  MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr))
{
    *ierr = MPI_Scatterv(fbuf(sbuf), scounts, displs, TYPE(stype), fbuf(rbuf), *rcount, TYPE(rtype), *root,
                         COMM(comm));
}

FDEF(mpi_iscatterv, MPI_ISCATTERV, (void *sbuf, MPI_Fint *scounts, MPI_Fint *displs, MPI_Fint *stype, void *rbuf,
                                    MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req,
                                    MPI_Fint *ierr))
{
    MPI_Request r = MPI_REQUEST_NULL;
    *ierr = MPI_Iscatterv(fbuf(sbuf), scounts, displs, TYPE(stype), fbuf(rbuf), *rcount, TYPE(rtype), *root,
                          COMM(comm), &r);
    REQ_OUT
}

FDEF(mpi_allgatherv, MPI_ALLGATHERV, (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcounts,
                                      MPI_Fint *displs, MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *ierr))
{
    *ierr = MPI_Allgatherv(fbuf(sbuf), *scount, TYPE(stype), fbuf(rbuf), rcounts, displs, TYPE(rtype), COMM(comm));
}

FDEF(mpi_iallgatherv, MPI_IALLGATHERV, (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcounts,
                                        MPI_Fint *displs, MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *req,
                                        MPI_Fint *ierr))
{
    MPI_Request r = MPI_REQUEST_NULL;
    *ierr = MPI_Iallgatherv(fbuf(sbuf), *scount, TYPE(stype), fbuf(rbuf), rcounts, displs, TYPE(rtype), COMM(comm),
                            &r);
    REQ_OUT
}

FDEF(mpi_alltoallv, MPI_ALLTOALLV, (void *sbuf, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *stype, void *rbuf,
                                    MPI_Fint *rcounts, MPI_Fint *rdispls, MPI_Fint *rtype, MPI_Fint *comm,
                                    MPI_Fint *ierr))
{
    *ierr = MPI_Alltoallv(fbuf(sbuf), scounts, sdispls, TYPE(stype), fbuf(rbuf), rcounts, rdispls, TYPE(rtype),
                          COMM(comm));
}

FDEF(mpi_ialltoallv, MPI_IALLTOALLV, (void *sbuf, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *stype, void *rbuf,
                                      MPI_Fint *rcounts, MPI_Fint *rdispls, MPI_Fint *rtype, MPI_Fint *comm,
                                      MPI_Fint *req, MPI_Fint *ierr))
{
    MPI_Request r = MPI_REQUEST_NULL;
    *ierr = MPI_Ialltoallv(fbuf(sbuf), scounts, sdispls, TYPE(stype), fbuf(rbuf), rcounts, rdispls, TYPE(rtype),
                           COMM(comm), &r);
    REQ_OUT
}

/* ------------------------------------------------------------------------------------------------
 * Communicators
 * --------------------------------------------------------------------------------------------- */
#define NEWCOMM_OUT                                                                                \
    if (*ierr == MPI_SUCCESS) *newcomm = PMPI_Comm_c2f(nc);

FDEF(mpi_comm_split, MPI_COMM_SPLIT, (MPI_Fint * comm, MPI_Fint *color, MPI_Fint *key, MPI_Fint *newcomm,
                                      MPI_Fint *ierr))
{
    MPI_Comm nc = MPI_COMM_NULL;
    *ierr = MPI_Comm_split(COMM(comm), *color, *key, &nc);
    NEWCOMM_OUT
}

FDEF(mpi_comm_split_type, MPI_COMM_SPLIT_TYPE, (MPI_Fint * comm, MPI_Fint *type, MPI_Fint *key, MPI_Fint *info,
                                                MPI_Fint *newcomm, MPI_Fint *ierr))
{
    MPI_Comm nc = MPI_COMM_NULL;
    *ierr = MPI_Comm_split_type(COMM(comm), *type, *key, PMPI_Info_f2c(*info), &nc);
    NEWCOMM_OUT
}

FDEF(mpi_comm_dup, MPI_COMM_DUP, (MPI_Fint * comm, MPI_Fint *newcomm, MPI_Fint *ierr))
{
    MPI_Comm nc = MPI_COMM_NULL;
    *ierr = MPI_Comm_dup(COMM(comm), &nc);
    NEWCOMM_OUT
}

FDEF(mpi_comm_dup_with_info, MPI_COMM_DUP_WITH_INFO, (MPI_Fint * comm, MPI_Fint *info, MPI_Fint *newcomm,
                                                      MPI_Fint *ierr))
{
    MPI_Comm nc = MPI_COMM_NULL;
    *ierr = MPI_Comm_dup_with_info(COMM(comm), PMPI_Info_f2c(*info), &nc);
    NEWCOMM_OUT
}

FDEF(mpi_comm_create, MPI_COMM_CREATE, (MPI_Fint * comm, MPI_Fint *group, MPI_Fint *newcomm, MPI_Fint *ierr))
{
    MPI_Comm nc = MPI_COMM_NULL;
    *ierr = MPI_Comm_create(COMM(comm), PMPI_Group_f2c(*group), &nc);
    NEWCOMM_OUT
}

FDEF(mpi_comm_create_group, MPI_COMM_CREATE_GROUP, (MPI_Fint * comm, MPI_Fint *group, MPI_Fint *tag,
                                                    MPI_Fint *newcomm, MPI_Fint *ierr))
{
    MPI_Comm nc = MPI_COMM_NULL;
    *ierr = MPI_Comm_create_group(COMM(comm), PMPI_Group_f2c(*group), *tag, &nc);
    NEWCOMM_OUT
}

FDEF(mpi_cart_create, MPI_CART_CREATE, (MPI_Fint * comm, MPI_Fint *ndims, MPI_Fint *dims, MPI_Fint *periods,
                                        MPI_Fint *reorder, MPI_Fint *newcomm, MPI_Fint *ierr))
{
    MPI_Comm nc = MPI_COMM_NULL;
    int n = *ndims > 0 ? *ndims : 0;
    int *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    if (!p) abort();
    for (int i = 0; i < n; i++) p[i] = periods[i] != 0;
    *ierr = MPI_Cart_create(COMM(comm), n, dims, p, *reorder != 0, &nc);
    free(p);
    NEWCOMM_OUT
}

FDEF(mpi_cart_sub, MPI_CART_SUB, (MPI_Fint * comm, MPI_Fint *remain, MPI_Fint *newcomm, MPI_Fint *ierr))
{
    MPI_Comm nc = MPI_COMM_NULL, c = COMM(comm);
    int n = 0;
    PMPI_Cartdim_get(c, &n);
    int *r = malloc((size_t)(n > 0 ? n : 1) * sizeof *r);
    if (!r) abort();
    for (int i = 0; i < n; i++) r[i] = remain[i] != 0;
    *ierr = MPI_Cart_sub(c, r, &nc);
    free(r);
    NEWCOMM_OUT
}

FDEF(mpi_comm_free, MPI_COMM_FREE, (MPI_Fint * comm, MPI_Fint *ierr))
{
    MPI_Comm c = COMM(comm);
    *ierr = MPI_Comm_free(&c);
    if (*ierr == MPI_SUCCESS) *comm = PMPI_Comm_c2f(c);
}
