/*
 * g2gtrace core: tracer state, communicator and request tables, clock synchronisation, archive
 * creation in MPI_Init and unification of definitions + archive close in MPI_Finalize.
 */
#include "g2g.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <dirent.h>
#include <unistd.h>

#define OTF2_MPI_USE_PMPI
#include <otf2/OTF2_MPI_Collectives.h>

G2G_INTERNAL g2g_state g2g;
G2G_INTERNAL __thread int g2g_depth __attribute__((tls_model("initial-exec")));
G2G_INTERNAL __thread uint64_t g2g_ts_last __attribute__((tls_model("initial-exec")));
G2G_INTERNAL __thread int g2g_ts_post __attribute__((tls_model("initial-exec")));

static const char *const region_names[R_COUNT] = {
#define G2G_X(name, role) #name,
    G2G_REGIONS(G2G_X)
#undef G2G_X
};
static const OTF2_RegionRole region_roles[R_COUNT] = {
#define G2G_X(name, role) role,
    G2G_REGIONS(G2G_X)
#undef G2G_X
};

static void warn(const char *fmt, const char *arg)
{
    fprintf(stderr, "g2gtrace[rank %d]: ", g2g.world_rank);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
}

/* ------------------------------------------------------------------------------------------------
 * Open-addressing hash map: nonzero uint64 key -> uint32 value (linear probing, backward-shift
 * deletion).
 * --------------------------------------------------------------------------------------------- */
typedef struct {
    uint64_t *keys;
    uint32_t *vals;
    uint32_t cap, n;
} g2g_map;

static inline uint32_t map_slot(const g2g_map *m, uint64_t k)
{
    return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 32) & (m->cap - 1);
}

static uint32_t map_get(const g2g_map *m, uint64_t k)
{
    if (!m->cap || !k) return UINT32_MAX;
    for (uint32_t i = map_slot(m, k);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == k) return m->vals[i];
        if (!m->keys[i]) return UINT32_MAX;
    }
}

static void map_put(g2g_map *m, uint64_t k, uint32_t v);

static void map_grow(g2g_map *m)
{
    g2g_map old = *m;
    m->cap = old.cap ? old.cap * 2 : 256;
    m->n = 0;
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->vals = calloc(m->cap, sizeof *m->vals);
    if (!m->keys || !m->vals) {
        fprintf(stderr, "g2gtrace: out of memory\n");
        abort();
    }
    for (uint32_t i = 0; i < old.cap; i++)
        if (old.keys[i]) map_put(m, old.keys[i], old.vals[i]);
    free(old.keys);
    free(old.vals);
}

static void map_put(g2g_map *m, uint64_t k, uint32_t v)
{
    if (!k) return;
    if ((m->n + 1) * 2 > m->cap) map_grow(m);
    uint32_t i = map_slot(m, k);
    while (m->keys[i] && m->keys[i] != k) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->n++;
    m->keys[i] = k;
    m->vals[i] = v;
}

static void map_del(g2g_map *m, uint64_t k)
{
    if (!m->cap || !k) return;
    uint32_t i = map_slot(m, k);
    while (m->keys[i] != k) {
        if (!m->keys[i]) return;
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = 0;
    m->n--;
    /* backward-shift the following cluster */
    for (uint32_t j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        uint32_t home = map_slot(m, m->keys[j]);
        /* move j into the hole i if home is not cyclically in (i, j] */
        int in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            m->keys[j] = 0;
            i = j;
        }
    }
}

static inline uint64_t comm_key(MPI_Comm c)
{
    uint64_t k = 0;
    memcpy(&k, &c, sizeof c < sizeof k ? sizeof c : sizeof k);
    return k;
}
static inline uint64_t req_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k;
}

/* ------------------------------------------------------------------------------------------------
 * Communicators
 * --------------------------------------------------------------------------------------------- */
static g2g_comm *comms;
static uint32_t n_comms, cap_comms;
static g2g_map comm_map;

G2G_INTERNAL g2g_comm *g2g_comm_get(uint32_t id) { return id < n_comms ? &comms[id] : NULL; }

static uint32_t comm_add(MPI_Comm c, uint32_t key_root, uint32_t key_ctr_or_self, int use_self_ctr)
{
    if (n_comms == cap_comms) {
        cap_comms = cap_comms ? cap_comms * 2 : 16;
        comms = realloc(comms, cap_comms * sizeof *comms);
        if (!comms) {
            fprintf(stderr, "g2gtrace: out of memory\n");
            abort();
        }
    }
    uint32_t id = n_comms++;
    g2g_comm *e = &comms[id];
    memset(e, 0, sizeof *e);
    e->handle = comm_key(c);
    PMPI_Comm_size(c, &e->size);
    PMPI_Comm_rank(c, &e->rank);
    e->key_root = key_root;
    e->key_ctr = use_self_ctr ? id : key_ctr_or_self;
    e->parent = G2G_NO_COMM;
    e->creator = R_COUNT;
    map_put(&comm_map, e->handle, id);
    return id;
}

static int32_t *comm_members(MPI_Comm c, int size)
{
    MPI_Group grp;
    int32_t *out = malloc((size_t)(size > 0 ? size : 1) * sizeof *out);
    int *in = malloc((size_t)(size > 0 ? size : 1) * sizeof *in);
    int *tr = malloc((size_t)(size > 0 ? size : 1) * sizeof *tr);
    if (!out || !in || !tr) {
        fprintf(stderr, "g2gtrace: out of memory\n");
        abort();
    }
    for (int i = 0; i < size; i++) in[i] = i;
    PMPI_Comm_group(c, &grp);
    PMPI_Group_translate_ranks(grp, size, in, g2g.world_group, tr);
    PMPI_Group_free(&grp);
    for (int i = 0; i < size; i++) out[i] = tr[i] == MPI_UNDEFINED ? -1 : tr[i];
    free(in);
    free(tr);
    return out;
}

static uint32_t hash_members(const int32_t *m, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        h ^= (uint32_t)m[i];
        h *= 1099511628211ull;
    }
    h ^= (uint64_t)n;
    return (uint32_t)(h ^ (h >> 32));
}

/* A communicator seen for the first time outside an intercepted creator (e.g. made by
 * MPI_Comm_idup or MPI_Intercomm_merge): identify it by its members. */
static uint32_t comm_register_lazy(MPI_Comm c)
{
    int inter = 0;
    PMPI_Comm_test_inter(c, &inter);
    if (inter) {
        uint32_t id = comm_add(c, (uint32_t)g2g.world_rank, 0, 1);
        comms[id].key_ctr = G2G_KEY_PRIVATE | id;
        comms[id].members = comm_members(c, comms[id].size);
        return id;
    }
    uint32_t id = comm_add(c, 0, 0, 0);
    g2g_comm *e = &comms[id];
    e->members = comm_members(c, e->size);
    e->key_root = e->size > 0 ? (uint32_t)e->members[0] : 0;
    e->key_ctr = G2G_KEY_LAZY | (hash_members(e->members, e->size) & 0x7fffffffu);
    return id;
}

G2G_INTERNAL uint32_t g2g_comm_id(MPI_Comm c)
{
    if (c == MPI_COMM_WORLD) return G2G_COMM_WORLD;
    if (c == MPI_COMM_SELF) return G2G_COMM_SELF;
    if (c == MPI_COMM_NULL) return G2G_NO_COMM;
    g2g_lock();
    uint32_t id = map_get(&comm_map, comm_key(c));
    if (id == UINT32_MAX) id = comm_register_lazy(c);
    g2g_unlock();
    return id;
}

/* Called by every member of newcomm right after an intercepted creator returned: agree on a key
 * (world rank of comm rank 0, its local id) with one broadcast over the new communicator. */
G2G_INTERNAL void g2g_comm_created(MPI_Comm newcomm, MPI_Comm parent, enum g2g_region creator)
{
    if (newcomm == MPI_COMM_NULL || !g2g.active) return;
    int inter = 0;
    PMPI_Comm_test_inter(newcomm, &inter);
    uint32_t pid = g2g_comm_id(parent);
    g2g_lock();
    uint32_t id;
    if (inter) {
        id = comm_add(newcomm, (uint32_t)g2g.world_rank, 0, 1);
        comms[id].key_ctr = G2G_KEY_PRIVATE | id;
        comms[id].members = comm_members(newcomm, comms[id].size);
    } else {
        id = comm_add(newcomm, (uint32_t)g2g.world_rank, 0, 1);
    }
    g2g_unlock();
    if (!inter) {
        uint32_t key[2] = {comms[id].key_root, comms[id].key_ctr};
        PMPI_Bcast(key, 2, MPI_UINT32_T, 0, newcomm);
        g2g_lock();
        g2g_comm *e = &comms[id];
        e->key_root = key[0];
        e->key_ctr = key[1];
        if (e->rank == 0) e->members = comm_members(newcomm, e->size);
        g2g_unlock();
    }
    g2g_lock();
    comms[id].parent = pid;
    comms[id].creator = (uint32_t)creator;
    g2g_unlock();
}

G2G_INTERNAL void g2g_comm_freed(MPI_Comm c)
{
    g2g_lock();
    map_del(&comm_map, comm_key(c));
    g2g_unlock();
}

/* ------------------------------------------------------------------------------------------------
 * Requests
 * --------------------------------------------------------------------------------------------- */
static g2g_req *reqs;
static uint32_t cap_reqs, free_req = UINT32_MAX;
static g2g_map req_map;

/* Open MPI hands out one shared, already-completed request (ompi_request_empty) for every
 * MPI_Isend it completes inline, so several live requests can have the same handle: they are
 * chained in issue order and each completion of that handle retires the oldest. */
G2G_INTERNAL g2g_req *g2g_req_new(MPI_Request h, uint64_t id)
{
    uint64_t k = req_key(h);
    if (!g2g.active || h == MPI_REQUEST_NULL || !k) return NULL;
    if (free_req == UINT32_MAX) {
        uint32_t old = cap_reqs;
        cap_reqs = cap_reqs ? cap_reqs * 2 : 256;
        reqs = realloc(reqs, cap_reqs * sizeof *reqs);
        if (!reqs) {
            fprintf(stderr, "g2gtrace: out of memory\n");
            abort();
        }
        for (uint32_t i = cap_reqs; i-- > old;) {
            reqs[i].next_free = free_req;
            free_req = i;
        }
    }
    uint32_t idx = free_req;
    free_req = reqs[idx].next_free;
    uint32_t head = map_get(&req_map, k);
    if (head == UINT32_MAX) {
        map_put(&req_map, k, idx);
    } else {
        while (reqs[head].next_same != UINT32_MAX) head = reqs[head].next_same;
        reqs[head].next_same = idx;
    }
    g2g_req *r = &reqs[idx];
    memset(r, 0, sizeof *r);
    r->id = id ? id : ++g2g.next_req_id;
    r->root = OTF2_UNDEFINED_UINT32;
    r->next_free = UINT32_MAX;
    r->next_same = UINT32_MAX;
    return r;
}

G2G_INTERNAL g2g_req *g2g_req_find(MPI_Request h)
{
    uint32_t idx = map_get(&req_map, req_key(h));
    return idx == UINT32_MAX ? NULL : &reqs[idx];
}

G2G_INTERNAL void g2g_req_drop(MPI_Request h)
{
    uint64_t k = req_key(h);
    uint32_t idx = map_get(&req_map, k);
    if (idx == UINT32_MAX) return;
    if (reqs[idx].next_same != UINT32_MAX) map_put(&req_map, k, reqs[idx].next_same);
    else map_del(&req_map, k);
    reqs[idx].next_free = free_req;
    free_req = idx;
}

/* ------------------------------------------------------------------------------------------------
 * Enter / Leave
 * --------------------------------------------------------------------------------------------- */
G2G_INTERNAL int g2g_enter(enum g2g_region r)
{
    if (!g2g.active || g2g_depth) return 0;
    g2g_depth = 1;
    g2g_lock();
    if (g2g.active) OTF2_EvtWriter_Enter(g2g.evt, NULL, g2g_ts_enter(), (OTF2_RegionRef)r);
    g2g_unlock();
    return 1;
}

G2G_INTERNAL void g2g_leave(enum g2g_region r)
{
    g2g_lock();
    if (g2g.active) OTF2_EvtWriter_Leave(g2g.evt, NULL, g2g_ts_after(), (OTF2_RegionRef)r);
    g2g_unlock();
    g2g_depth = 0;
}

/* ------------------------------------------------------------------------------------------------
 * Datatypes
 * --------------------------------------------------------------------------------------------- */
static int contiguous_rec(MPI_Datatype dt, int depth)
{
    int ni, na, nd, comb;
    if (dt == MPI_DATATYPE_NULL) return 1;
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS) return 0;
    if (comb == MPI_COMBINER_NAMED) return 1;
    if (comb == MPI_COMBINER_DUP || comb == MPI_COMBINER_CONTIGUOUS) {
        if (depth > 16 || ni > 4 || na > 4 || nd != 1) return 0;
        int ints[4];
        MPI_Aint addrs[4];
        MPI_Datatype inner;
        if (PMPI_Type_get_contents(dt, ni, na, nd, ints, addrs, &inner) != MPI_SUCCESS) return 0;
        int res = contiguous_rec(inner, depth + 1);
        int ini, ina, ind, icomb;
        PMPI_Type_get_envelope(inner, &ini, &ina, &ind, &icomb);
        if (icomb != MPI_COMBINER_NAMED) PMPI_Type_free(&inner);
        return res;
    }
    /* Any other derived type: contiguous when its bytes fill its extent without gaps. */
    MPI_Aint lb, extent, tlb, textent;
    int size;
    PMPI_Type_size(dt, &size);
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_get_true_extent(dt, &tlb, &textent);
    return (MPI_Aint)size == textent && textent == extent;
}

G2G_INTERNAL uint8_t g2g_contiguous(MPI_Datatype dt) { return (uint8_t)contiguous_rec(dt, 0); }

/* ------------------------------------------------------------------------------------------------
 * Start (inside MPI_Init / MPI_Init_thread, after PMPI_Init)
 * --------------------------------------------------------------------------------------------- */
#define EVT_CHUNK (1024 * 1024)
#define DEF_CHUNK (4 * 1024 * 1024)

static OTF2_FlushType pre_flush(void *ud, OTF2_FileType ft, OTF2_LocationRef loc, void *cd, bool final)
{
    (void)ud; (void)ft; (void)loc; (void)cd; (void)final;
    return OTF2_FLUSH;
}
static OTF2_TimeStamp post_flush(void *ud, OTF2_FileType ft, OTF2_LocationRef loc)
{
    (void)ud; (void)ft; (void)loc;
    return g2g_now();
}
static OTF2_FlushCallbacks flush_callbacks = {.otf2_pre_flush = pre_flush, .otf2_post_flush = post_flush};

/* OTF2 chunk memory.  Event chunks come from a pool of G2G_TRACE_BUFFER_MB (default 16, like
 * Score-P's SCOREP_TOTAL_MEMORY) per rank that is mapped and pre-faulted in MPI_Init: events stay
 * in memory and are written to disk only when the pool is used up (OTF2 then flushes that buffer
 * and returns its chunks) or at MPI_Finalize.  This keeps file I/O and first-touch page faults
 * (expensive in virtual machines) out of the traced run.  Definition chunks and chunks of a
 * buffer that has none yet when the pool is empty come from malloc. */
typedef struct chunk_hdr {
    struct chunk_hdr *next;
    uint64_t size;
    int pooled;
    char pad[12];
} chunk_hdr; /* 32 bytes: keeps the chunk 16-byte aligned */

static char *pool_base;
static uint64_t pool_size, pool_chunk;
static chunk_hdr *pool_free;

static void pool_init(uint64_t bytes, uint64_t chunk)
{
    uint64_t stride = chunk + sizeof(chunk_hdr);
    uint64_t n = bytes / stride;
    if (n < 2) n = 2;
    pool_size = n * stride;
    pool_chunk = chunk;
    void *p = mmap(NULL, pool_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
        pool_size = 0;
        return;
    }
    pool_base = p;
    for (uint64_t i = n; i-- > 0;) {
        chunk_hdr *h = (chunk_hdr *)(pool_base + i * stride);
        h->next = pool_free;
        h->size = chunk;
        h->pooled = 1;
        pool_free = h;
    }
}

static void *mem_allocate(void *ud, OTF2_FileType ft, OTF2_LocationRef loc, void **per_buffer, uint64_t size)
{
    (void)ud; (void)loc;
    chunk_hdr *h = NULL;
    if (ft == OTF2_FILETYPE_EVENTS && size == pool_chunk && pool_free) {
        h = pool_free;
        pool_free = h->next;
    } else if (ft == OTF2_FILETYPE_EVENTS && *per_buffer && pool_size) {
        return NULL; /* pool used up: OTF2 flushes this buffer and frees its chunks */
    } else {
        h = malloc(sizeof *h + size);
        if (!h) return NULL;
        h->size = size;
        h->pooled = 0;
    }
    h->next = *per_buffer;
    *per_buffer = h;
    return h + 1;
}

static void mem_free_all(void *ud, OTF2_FileType ft, OTF2_LocationRef loc, void **per_buffer, bool final)
{
    (void)ud; (void)ft; (void)loc; (void)final;
    chunk_hdr *h = *per_buffer;
    while (h) {
        chunk_hdr *next = h->next;
        if (h->pooled) {
            h->next = pool_free;
            pool_free = h;
        } else {
            free(h);
        }
        h = next;
    }
    *per_buffer = NULL;
}
static OTF2_MemoryCallbacks memory_callbacks = {.otf2_allocate = mem_allocate, .otf2_free_all = mem_free_all};

static uint64_t host_hash(void)
{
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    uint64_t h = 1469598103934665603ull;
    for (const char *p = host; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ull;
    }
    return h;
}

/* Map every rank's CLOCK_MONOTONIC onto rank 0's.  Ranks on rank 0's host share its clock (offset
 * 0); others get the offset of the ping-pong with the smallest round trip (10 tries). */
static void clock_sync(void)
{
    int n = g2g.world_size, me = g2g.world_rank;
    uint64_t mine = host_hash();
    uint64_t *all = malloc((size_t)n * sizeof *all);
    if (!all) abort();
    PMPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, g2g.comm);
    g2g.clock_offset = 0;
    const int tag = 4242, tries = 10;
    for (int r = 1; r < n; r++) {
        if (all[r] == all[0]) continue;
        if (me == 0) {
            uint64_t best = UINT64_MAX;
            int64_t off = 0;
            for (int i = 0; i < tries; i++) {
                uint64_t t0 = g2g_raw_now(), tr;
                PMPI_Send(&t0, 1, MPI_UINT64_T, r, tag, g2g.comm);
                PMPI_Recv(&tr, 1, MPI_UINT64_T, r, tag, g2g.comm, MPI_STATUS_IGNORE);
                uint64_t t1 = g2g_raw_now();
                if (t1 - t0 < best) {
                    best = t1 - t0;
                    off = (int64_t)(t0 + (t1 - t0) / 2) - (int64_t)tr;
                }
            }
            PMPI_Send(&off, 1, MPI_INT64_T, r, tag, g2g.comm);
        } else if (me == r) {
            for (int i = 0; i < tries; i++) {
                uint64_t t0, tr;
                PMPI_Recv(&t0, 1, MPI_UINT64_T, 0, tag, g2g.comm, MPI_STATUS_IGNORE);
                tr = g2g_raw_now();
                PMPI_Send(&tr, 1, MPI_UINT64_T, 0, tag, g2g.comm);
            }
            int64_t off;
            PMPI_Recv(&off, 1, MPI_INT64_T, 0, tag, g2g.comm, MPI_STATUS_IGNORE);
            g2g.clock_offset = off;
        }
    }
    free(all);
}

static int mkdir_p(const char *path)
{
    char buf[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    return 0;
}

/* Remove the files of a previous g2gtrace archive in dir (and nothing else). */
static void remove_old_archive(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/traces.otf2", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/traces.def", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/traces", dir);
    DIR *d = opendir(p);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l > 4 && (!strcmp(de->d_name + l - 4, ".evt") || !strcmp(de->d_name + l - 4, ".def"))) {
            char f[4500];
            snprintf(f, sizeof f, "%s/%s", p, de->d_name);
            unlink(f);
        }
    }
    closedir(d);
    rmdir(p);
}

G2G_INTERNAL void g2g_start(enum g2g_region init_region, uint64_t t_enter_raw, int provided)
{
    const char *onoff = getenv("G2G_TRACE");
    if (onoff && (!strcmp(onoff, "0") || !strcmp(onoff, "off") || !strcmp(onoff, "no"))) return;
    if (g2g.initialized) return;
    g2g.initialized = 1;

    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&g2g.lock, &ma);
    pthread_mutexattr_destroy(&ma);
    g2g.thread_multiple = provided == MPI_THREAD_MULTIPLE;

    PMPI_Comm_rank(MPI_COMM_WORLD, &g2g.world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &g2g.world_size);
    PMPI_Comm_dup(MPI_COMM_WORLD, &g2g.comm);
    PMPI_Comm_group(MPI_COMM_WORLD, &g2g.world_group);

    comm_add(MPI_COMM_WORLD, G2G_KEY_SPECIAL, 0, 0);
    comm_add(MPI_COMM_SELF, G2G_KEY_SPECIAL, 1, 0);

    clock_sync();

    const char *dir = getenv("G2G_TRACE_DIR");
    if (!dir || !*dir) dir = "g2g-trace";
    snprintf(g2g.trace_dir, sizeof g2g.trace_dir, "%s", dir);

    int ok = 1;
    if (g2g.world_rank == 0) {
        if (mkdir_p(g2g.trace_dir) != 0) {
            warn("cannot create trace directory %s; tracing disabled", g2g.trace_dir);
            ok = 0;
        } else {
            remove_old_archive(g2g.trace_dir);
        }
    }
    PMPI_Bcast(&ok, 1, MPI_INT, 0, g2g.comm);
    if (!ok) return;

    g2g.archive = OTF2_Archive_Open(g2g.trace_dir, "traces", OTF2_FILEMODE_WRITE, EVT_CHUNK, DEF_CHUNK, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!g2g.archive) {
        warn("OTF2_Archive_Open(%s) failed; tracing disabled", g2g.trace_dir);
        return;
    }
    OTF2_Archive_SetFlushCallbacks(g2g.archive, &flush_callbacks, NULL);
    const char *mb = getenv("G2G_TRACE_BUFFER_MB");
    pool_init((uint64_t)(mb && atol(mb) > 0 ? atol(mb) : 16) << 20, EVT_CHUNK);
    OTF2_Archive_SetMemoryCallbacks(g2g.archive, &memory_callbacks, NULL);
    if (OTF2_MPI_Archive_SetCollectiveCallbacks(g2g.archive, g2g.comm, MPI_COMM_NULL) != OTF2_SUCCESS) {
        warn("%s", "OTF2 MPI collective callbacks failed; tracing disabled");
        return;
    }
    OTF2_Archive_SetCreator(g2g.archive, "g2gtrace " G2G_VERSION);
    OTF2_Archive_SetDescription(g2g.archive, "g2gsim PMPI trace");
    OTF2_Archive_SetProperty(g2g.archive, "G2G::TRACER", "g2gtrace " G2G_VERSION, true);
    OTF2_Archive_SetProperty(g2g.archive, "G2G::MEM_SPACE",
                             "uint8 attribute g2g:mem_space: 0=host 1=device 2=managed 3=unknown 4=pinned", true);
    OTF2_Archive_SetProperty(g2g.archive, "G2G::COLLECTIVE_BYTES",
                             "MpiCollectiveEnd sizeSent/sizeReceived follow Score-P; g2g:bytes and "
                             "g2g:recv_bytes are the local buffer sizes",
                             true);
    if (OTF2_Archive_OpenEvtFiles(g2g.archive) != OTF2_SUCCESS) {
        warn("%s", "OTF2_Archive_OpenEvtFiles failed; tracing disabled");
        return;
    }
    g2g.evt = OTF2_Archive_GetEvtWriter(g2g.archive, (OTF2_LocationRef)g2g.world_rank);
    g2g.attrs = OTF2_AttributeList_New();
    if (!g2g.evt || !g2g.attrs) {
        warn("%s", "cannot create the OTF2 event writer; tracing disabled");
        return;
    }

    g2g_cuda_init();
    g2g_cupti_init();

    g2g.t_first = (uint64_t)((int64_t)t_enter_raw + g2g.clock_offset);
    OTF2_EvtWriter_Enter(g2g.evt, NULL, g2g.t_first, (OTF2_RegionRef)init_region);
    OTF2_EvtWriter_Leave(g2g.evt, NULL, g2g_now(), (OTF2_RegionRef)init_region);
    g2g.active = 1;
}

/* ------------------------------------------------------------------------------------------------
 * Stop (inside MPI_Finalize, before PMPI_Finalize)
 * --------------------------------------------------------------------------------------------- */
typedef struct {
    uint64_t *v;
    size_t n, cap;
} u64vec;

static void vpush(u64vec *v, uint64_t x)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 256;
        v->v = realloc(v->v, v->cap * sizeof *v->v);
        if (!v->v) abort();
    }
    v->v[v->n++] = x;
}

/* Report layout (uint64 words) */
#define REP_NEV 0
#define REP_GPU 1
#define REP_T0 2
#define REP_T1 3
#define REP_HOST 4      /* 8 words = 64 bytes of hostname */
#define REP_NCOMM 12
#define REP_HDR 13
/* per communicator: key_root, key_ctr, parent_root, parent_ctr, creator, size, has_members, members */

typedef struct {
    uint32_t root, ctr, proot, pctr, creator;
    int32_t size;
    const uint64_t *members; /* NULL when unknown */
    int depth;
    uint32_t gid;
} comm_def;

static int cmp_key(const void *a, const void *b)
{
    const comm_def *x = a, *y = b;
    if (x->root != y->root) return x->root < y->root ? -1 : 1;
    if (x->ctr != y->ctr) return x->ctr < y->ctr ? -1 : 1;
    /* entries that know their members first */
    return (y->members != NULL) - (x->members != NULL);
}
static int cmp_order(const void *a, const void *b)
{
    const comm_def *x = a, *y = b;
    if (x->depth != y->depth) return x->depth - y->depth;
    return cmp_key(a, b);
}

static comm_def *find_def(comm_def *defs, size_t n, uint32_t root, uint32_t ctr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (defs[mid].root < root || (defs[mid].root == root && defs[mid].ctr < ctr)) lo = mid + 1;
        else hi = mid;
    }
    return (lo < n && defs[lo].root == root && defs[lo].ctr == ctr) ? &defs[lo] : NULL;
}

static int def_depth(comm_def *defs, size_t n, comm_def *d, int guard)
{
    if (d->depth >= 0) return d->depth;
    if (guard > 64) return 1;
    int dp = 1;
    if (d->proot != G2G_KEY_SPECIAL) {
        comm_def *p = find_def(defs, n, d->proot, d->pctr);
        if (p && p != d) dp = 1 + def_depth(defs, n, p, guard + 1);
    }
    d->depth = dp;
    return dp;
}

typedef struct {
    OTF2_GlobalDefWriter *w;
    uint32_t next;
} strtab;

static OTF2_StringRef defstr(strtab *s, const char *str)
{
    OTF2_StringRef id = s->next++;
    OTF2_GlobalDefWriter_WriteString(s->w, id, str);
    return id;
}

/* OTF2_REGION_ROLE_KERNEL of OTF2 >= 3.1 (the value is written as is by older libraries) */
#define G2G_REGION_ROLE_KERNEL ((OTF2_RegionRole)40)

/* Kernels of all ranks (rank 0, for the global definitions): the unified kernel names and, per
 * rank, where its stream list starts in the report (count, then stream id, device, events). */
typedef struct {
    const char *names; /* NUL-separated, global kernel index order */
    size_t names_len;
    uint32_t nnames;
    const uint64_t **streams; /* per rank */
} gpu_defs;

static void write_global_defs(const uint64_t *rep, const int *displs, comm_def *defs, size_t ndefs,
                              uint64_t t0, uint64_t t1, const gpu_defs *gd)
{
    int n = g2g.world_size;
    OTF2_GlobalDefWriter *w = OTF2_Archive_GetGlobalDefWriter(g2g.archive);
    if (!w) {
        warn("%s", "cannot get the OTF2 global definition writer");
        return;
    }
    strtab s = {w, 0};

    /* clock: ns timer; realtime of t0 from rank 0's clocks */
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t real_now = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
    uint64_t mono_now = g2g_now();
    uint64_t realtime = real_now - (mono_now - t0);
    OTF2_GlobalDefWriter_WriteClockProperties(w, 1000000000ull, t0, t1 - t0 + 1, realtime);

    OTF2_StringRef empty = defstr(&s, "");

    static const struct {
        const char *name, *desc;
        OTF2_Type type;
    } attrs[A_COUNT] = {
        [A_MEM_SPACE] = {"g2g:mem_space", "buffer memory: 0=host 1=device 2=managed 3=unknown 4=pinned", OTF2_TYPE_UINT8},
        [A_CONTIG] = {"g2g:contiguous", "1 when the MPI datatype(s) are contiguous", OTF2_TYPE_UINT8},
        [A_BYTES] = {"g2g:bytes", "collective: this rank's send-buffer bytes", OTF2_TYPE_UINT64},
        [A_RECV_BYTES] = {"g2g:recv_bytes", "collective: this rank's receive-buffer bytes", OTF2_TYPE_UINT64},
        [A_RECV_MEM_SPACE] = {"g2g:recv_mem_space", "collective: receive-buffer memory (as g2g:mem_space)", OTF2_TYPE_UINT8},
        [A_COPY_KIND] = {"g2g:copy_kind", "CUDA memcpy: 0=h2d 1=d2h 2=d2d 3=h2h 4=other", OTF2_TYPE_UINT8},
        [A_STREAM] = {"g2g:stream", "CUDA memcpy, kernel, stream call: CUPTI stream id", OTF2_TYPE_UINT32},
        [A_ASYNC] = {"g2g:async", "CUDA memcpy: 1 when asynchronous", OTF2_TYPE_UINT8},
        [A_EVENT] = {"g2g:event", "CUDA event call: per-rank event id (1, 2, ...)", OTF2_TYPE_UINT64},
        [A_CORR] = {"g2g:corr", "CUPTI correlation id joining a launch/memcpy call to its GPU work", OTF2_TYPE_UINT32},
        [A_PRIORITY] = {"g2g:priority", "CUDA stream priority (lower runs first)", OTF2_TYPE_INT32},
    };
    for (int a = 0; a < A_COUNT; a++)
        OTF2_GlobalDefWriter_WriteAttribute(w, (OTF2_AttributeRef)a, defstr(&s, attrs[a].name),
                                            defstr(&s, attrs[a].desc), attrs[a].type);

    /* system tree: machine -> one node per host name -> location groups */
    OTF2_GlobalDefWriter_WriteSystemTreeNode(w, 0, defstr(&s, "machine"), defstr(&s, "machine"),
                                             OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    OTF2_StringRef node_class = defstr(&s, "node");
    uint32_t *node_of = malloc((size_t)n * sizeof *node_of);
    if (!node_of) abort();
    uint32_t n_nodes = 0;
    for (int r = 0; r < n; r++) {
        const char *host = (const char *)(rep + displs[r] + REP_HOST);
        node_of[r] = UINT32_MAX;
        for (int q = 0; q < r; q++)
            if (!strncmp(host, (const char *)(rep + displs[q] + REP_HOST), 64)) {
                node_of[r] = node_of[q];
                break;
            }
        if (node_of[r] == UINT32_MAX) {
            char name[65];
            memcpy(name, host, 64);
            name[64] = 0;
            node_of[r] = ++n_nodes;
            OTF2_GlobalDefWriter_WriteSystemTreeNode(w, node_of[r], defstr(&s, name), node_class, 0);
        }
    }

    char buf[256];
    int n_gpu = 0;
    for (int r = 0; r < n; r++) {
        snprintf(buf, sizeof buf, "MPI Rank %d", r);
        OTF2_GlobalDefWriter_WriteLocationGroup(w, (OTF2_LocationGroupRef)r, defstr(&s, buf),
                                                OTF2_LOCATION_GROUP_TYPE_PROCESS, node_of[r],
                                                OTF2_UNDEFINED_LOCATION_GROUP);
        if (rep[displs[r] + REP_GPU]) n_gpu++;
    }
    for (int r = 0; r < n; r++) {
        if (!rep[displs[r] + REP_GPU] && !gd->streams[r][0]) continue;
        snprintf(buf, sizeof buf, "CUDA (rank %d)", r);
        OTF2_GlobalDefWriter_WriteLocationGroup(w, (OTF2_LocationGroupRef)(n + r), defstr(&s, buf),
                                                OTF2_LOCATION_GROUP_TYPE_ACCELERATOR, node_of[r],
                                                (OTF2_LocationGroupRef)r);
    }
    for (int r = 0; r < n; r++) {
        snprintf(buf, sizeof buf, "MPI rank %d", r);
        OTF2_GlobalDefWriter_WriteLocation(w, (OTF2_LocationRef)r, defstr(&s, buf), OTF2_LOCATION_TYPE_CPU_THREAD,
                                           rep[displs[r] + REP_NEV], (OTF2_LocationGroupRef)r);
    }
    for (int r = 0; r < n; r++) {
        if (!rep[displs[r] + REP_GPU]) continue;
        snprintf(buf, sizeof buf, "CUDA memcpy (rank %d)", r);
        OTF2_GlobalDefWriter_WriteLocation(w, g2g_gpu_location(r, n), defstr(&s, buf),
                                           OTF2_LOCATION_TYPE_ACCELERATOR_STREAM, rep[displs[r] + REP_GPU],
                                           (OTF2_LocationGroupRef)(n + r));
    }
    /* kernel streams, named like Score-P's CUDA streams: CUDA[device:stream] */
    for (int r = 0; r < n; r++) {
        const uint64_t *st = gd->streams[r];
        for (uint64_t k = 0; k < st[0]; k++) {
            snprintf(buf, sizeof buf, "CUDA[%llu:%llu] (rank %d)", (unsigned long long)st[1 + 3 * k + 1],
                     (unsigned long long)st[1 + 3 * k], r);
            OTF2_GlobalDefWriter_WriteLocation(w, g2g_stream_location(r, (uint32_t)k), defstr(&s, buf),
                                               OTF2_LOCATION_TYPE_ACCELERATOR_STREAM, st[1 + 3 * k + 2],
                                               (OTF2_LocationGroupRef)(n + r));
        }
    }
    free(node_of);

    for (int r = 0; r < R_COUNT; r++) {
        OTF2_StringRef nm = defstr(&s, region_names[r]);
        OTF2_GlobalDefWriter_WriteRegion(w, (OTF2_RegionRef)r, nm, nm, empty, region_roles[r], OTF2_PARADIGM_MPI,
                                         OTF2_REGION_FLAG_NONE, OTF2_UNDEFINED_STRING, 0, 0);
    }
    /* CUDA API calls (cuda.c) and kernels */
    OTF2_StringRef cuda_file = defstr(&s, "CUDA");
    for (int i = 0; i < g2g_n_cuda_api; i++) {
        OTF2_StringRef nm = defstr(&s, g2g_cuda_api[i].name);
        OTF2_GlobalDefWriter_WriteRegion(w, (OTF2_RegionRef)(R_COUNT + i), nm, nm, empty, OTF2_REGION_ROLE_WRAPPER,
                                         OTF2_PARADIGM_CUDA, OTF2_REGION_FLAG_NONE, cuda_file, 0, 0);
    }
    const char *kn = gd->names;
    for (uint32_t g = 0; g < gd->nnames && kn; g++) {
        OTF2_StringRef nm = defstr(&s, kn);
        OTF2_GlobalDefWriter_WriteRegion(w, (OTF2_RegionRef)(G2G_KERNEL_REGION0 + g), nm, nm, empty,
                                         G2G_REGION_ROLE_KERNEL, OTF2_PARADIGM_CUDA, OTF2_REGION_FLAG_NONE,
                                         cuda_file, 0, 0);
        kn += strlen(kn) + 1;
    }

    /* groups: 0 = MPI locations, 1 = world, 2 = self, comm g >= 2 uses group g + 1 */
    uint64_t *mem = malloc((size_t)(n > 0 ? n : 1) * 2 * sizeof *mem);
    if (!mem) abort();
    for (int r = 0; r < n; r++) mem[r] = (uint64_t)r;
    OTF2_GlobalDefWriter_WriteGroup(w, 0, empty, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, (uint32_t)n, mem);
    OTF2_GlobalDefWriter_WriteGroup(w, 1, empty, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, (uint32_t)n, mem);
    OTF2_GlobalDefWriter_WriteGroup(w, 2, empty, OTF2_GROUP_TYPE_COMM_SELF, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, 0, NULL);
    for (size_t i = 0; i < ndefs; i++) {
        comm_def *d = &defs[i];
        uint64_t *m = malloc((size_t)(d->size > 0 ? d->size : 1) * sizeof *m);
        if (!m) abort();
        uint32_t nm = 0;
        if (d->members)
            for (int k = 0; k < d->size; k++) m[nm++] = d->members[k];
        OTF2_GlobalDefWriter_WriteGroup(w, d->gid + 1, empty, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                        OTF2_GROUP_FLAG_NONE, nm, m);
        free(m);
    }
    OTF2_GlobalDefWriter_WriteComm(w, 0, defstr(&s, "MPI_COMM_WORLD"), 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
    OTF2_GlobalDefWriter_WriteComm(w, 1, defstr(&s, "MPI_COMM_SELF"), 2, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
    for (size_t i = 0; i < ndefs; i++) {
        comm_def *d = &defs[i];
        OTF2_CommRef parent = OTF2_UNDEFINED_COMM;
        if (d->proot == G2G_KEY_SPECIAL && d->pctr <= 1) parent = d->pctr;
        else if (d->proot != G2G_KEY_SPECIAL) {
            comm_def *p = NULL;
            for (size_t j = 0; j < ndefs; j++)
                if (defs[j].root == d->proot && defs[j].ctr == d->pctr) p = &defs[j];
            if (p) parent = p->gid;
        }
        const char *how = d->creator < R_COUNT ? region_names[d->creator]
                          : (d->ctr & G2G_KEY_PRIVATE) && !(d->ctr & G2G_KEY_LAZY) ? "intercommunicator"
                                                                                   : "first use";
        snprintf(buf, sizeof buf, "Comm %u (%s)", d->gid, how);
        OTF2_GlobalDefWriter_WriteComm(w, d->gid, defstr(&s, buf), d->gid + 1, parent, OTF2_COMM_FLAG_NONE);
    }

    /* CUDA memcpy locations: a CUDA comm-locations group, one comm + RMA window per rank (the window
     * id is the world rank; window rank 0 = the rank's MPI location, 1 = its CUDA location). */
    if (n_gpu) {
        uint32_t next_group = (uint32_t)ndefs + 3, next_comm = (uint32_t)ndefs + 2;
        uint32_t k = 0;
        for (int r = 0; r < n; r++)
            if (rep[displs[r] + REP_GPU]) {
                mem[k++] = (uint64_t)r;
                mem[k++] = g2g_gpu_location(r, n);
            }
        uint32_t locs_group = next_group++;
        OTF2_GlobalDefWriter_WriteGroup(w, locs_group, defstr(&s, "CUDA"), OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                        OTF2_PARADIGM_CUDA, OTF2_GROUP_FLAG_NONE, k, mem);
        uint32_t first_group = next_group, first_comm = next_comm, i = 0;
        for (int r = 0; r < n; r++) {
            if (!rep[displs[r] + REP_GPU]) continue;
            uint64_t pair[2] = {2 * i, 2 * i + 1};
            i++;
            OTF2_GlobalDefWriter_WriteGroup(w, next_group++, empty, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_CUDA,
                                            OTF2_GROUP_FLAG_NONE, 2, pair);
        }
        OTF2_StringRef *names = malloc((size_t)n_gpu * sizeof *names);
        if (!names) abort();
        i = 0;
        for (int r = 0; r < n; r++) {
            if (!rep[displs[r] + REP_GPU]) continue;
            snprintf(buf, sizeof buf, "CUDA memcpy (rank %d)", r);
            names[i] = defstr(&s, buf);
            OTF2_GlobalDefWriter_WriteComm(w, next_comm++, names[i], first_group + i, OTF2_UNDEFINED_COMM,
                                           OTF2_COMM_FLAG_NONE);
            i++;
        }
        i = 0;
        for (int r = 0; r < n; r++) {
            if (!rep[displs[r] + REP_GPU]) continue;
            OTF2_GlobalDefWriter_WriteRmaWin(w, (OTF2_RmaWinRef)r, names[i], first_comm + i, OTF2_RMA_WIN_FLAG_NONE);
            i++;
        }
        free(names);
    }
    free(mem);
}

G2G_INTERNAL void g2g_stop(void)
{
    if (!g2g.active) return;
    g2g_lock();
    uint64_t t = g2g_now();
    OTF2_EvtWriter_Leave(g2g.evt, NULL, t, (OTF2_RegionRef)R_MPI_Finalize);
    g2g.active = 0;
    g2g.t_last = t;
    g2g_unlock();

    int n = g2g.world_size, me = g2g.world_rank;
    uint64_t gpu_events = 0;
    g2g_cupti_flush();
    if (g2g_cupti_active())
        gpu_events = g2g_cupti_write(g2g.archive, g2g_gpu_location(me, n), (uint32_t)me, &g2g.t_first, &g2g.t_last);
    /* kernels: names unified over the ranks (collective), then one location per stream */
    char *knames = NULL;
    size_t knames_len = 0;
    uint32_t nknames = g2g_kernel_names_unify(&knames, &knames_len);
    uint64_t *sinfo = NULL;
    uint32_t nstreams = g2g_kernels_write(g2g.archive, me, &g2g.t_first, &g2g.t_last, &sinfo);

    uint64_t nev = 0;
    OTF2_EvtWriter_GetNumberOfEvents(g2g.evt, &nev);
    OTF2_Archive_CloseEvtWriter(g2g.archive, g2g.evt);
    g2g.evt = NULL;
    OTF2_Archive_CloseEvtFiles(g2g.archive);

    /* ---- report this rank's locations and communicators to rank 0 ---- */
    u64vec rep = {0};
    vpush(&rep, nev);
    vpush(&rep, gpu_events);
    vpush(&rep, g2g.t_first);
    vpush(&rep, g2g.t_last);
    char host[64] = {0};
    gethostname(host, sizeof host - 1);
    for (int i = 0; i < 8; i++) {
        uint64_t wd;
        memcpy(&wd, host + 8 * i, 8);
        vpush(&rep, wd);
    }
    vpush(&rep, n_comms > 2 ? n_comms - 2 : 0);
    for (uint32_t c = 2; c < n_comms; c++) {
        g2g_comm *e = &comms[c];
        vpush(&rep, e->key_root);
        vpush(&rep, e->key_ctr);
        if (e->parent != G2G_NO_COMM) {
            vpush(&rep, comms[e->parent].key_root);
            vpush(&rep, comms[e->parent].key_ctr);
        } else {
            vpush(&rep, G2G_KEY_SPECIAL);
            vpush(&rep, UINT32_MAX);
        }
        vpush(&rep, e->creator);
        vpush(&rep, (uint64_t)(uint32_t)e->size);
        vpush(&rep, e->members ? 1 : 0);
        if (e->members)
            for (int k = 0; k < e->size; k++) vpush(&rep, (uint64_t)(uint32_t)e->members[k]);
    }
    /* after the communicators: the kernel streams (count, then stream id, device, events each) */
    vpush(&rep, nstreams);
    for (uint32_t k = 0; k < 3 * nstreams; k++) vpush(&rep, sinfo[k]);

    int cnt = (int)rep.n;
    int *counts = NULL, *displs = NULL;
    uint64_t *all = NULL;
    if (me == 0) {
        counts = malloc((size_t)n * sizeof *counts);
        displs = malloc((size_t)n * sizeof *displs);
        if (!counts || !displs) abort();
    }
    PMPI_Gather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, 0, g2g.comm);
    if (me == 0) {
        long total = 0;
        for (int r = 0; r < n; r++) {
            displs[r] = (int)total;
            total += counts[r];
        }
        all = malloc((size_t)(total > 0 ? total : 1) * sizeof *all);
        if (!all) abort();
    }
    PMPI_Gatherv(rep.v, cnt, MPI_UINT64_T, all, counts, displs, MPI_UINT64_T, 0, g2g.comm);

    /* ---- rank 0: unify communicators, order parents first, assign global ids ---- */
    comm_def *defs = NULL;
    size_t ndefs = 0;
    uint64_t t0 = UINT64_MAX, t1 = 0;
    const uint64_t **streams_of = NULL;
    if (me == 0) {
        streams_of = malloc((size_t)n * sizeof *streams_of);
        if (!streams_of) abort();
        size_t cap = 0;
        for (int r = 0; r < n; r++) {
            const uint64_t *p = all + displs[r];
            if (p[REP_T0] < t0) t0 = p[REP_T0];
            if (p[REP_T1] > t1) t1 = p[REP_T1];
            cap += p[REP_NCOMM];
        }
        defs = calloc(cap ? cap : 1, sizeof *defs);
        if (!defs) abort();
        for (int r = 0; r < n; r++) {
            const uint64_t *p = all + displs[r];
            uint64_t nc = p[REP_NCOMM];
            p += REP_HDR;
            for (uint64_t c = 0; c < nc; c++) {
                comm_def *d = &defs[ndefs++];
                d->root = (uint32_t)p[0];
                d->ctr = (uint32_t)p[1];
                d->proot = (uint32_t)p[2];
                d->pctr = (uint32_t)p[3];
                d->creator = (uint32_t)p[4];
                d->size = (int32_t)(uint32_t)p[5];
                d->members = p[6] ? p + 7 : NULL;
                d->depth = -1;
                p += 7 + (p[6] ? (uint64_t)(uint32_t)d->size : 0);
            }
            streams_of[r] = p;
        }
        qsort(defs, ndefs, sizeof *defs, cmp_key);
        size_t u = 0;
        for (size_t i = 0; i < ndefs; i++)
            if (u == 0 || defs[i].root != defs[u - 1].root || defs[i].ctr != defs[u - 1].ctr) defs[u++] = defs[i];
            else if (!defs[u - 1].members && defs[i].members) defs[u - 1] = defs[i];
        ndefs = u;
        for (size_t i = 0; i < ndefs; i++) def_depth(defs, ndefs, &defs[i], 0);
        qsort(defs, ndefs, sizeof *defs, cmp_order);
        for (size_t i = 0; i < ndefs; i++) defs[i].gid = (uint32_t)(i + 2);
    }

    /* ---- everyone learns the global order of keys and builds its local->global comm map ---- */
    uint64_t nkeys = ndefs;
    PMPI_Bcast(&nkeys, 1, MPI_UINT64_T, 0, g2g.comm);
    uint64_t *keys = malloc((size_t)(nkeys ? nkeys : 1) * sizeof *keys);
    if (!keys) abort();
    if (me == 0)
        for (size_t i = 0; i < ndefs; i++) keys[i] = ((uint64_t)defs[i].root << 32) | defs[i].ctr;
    PMPI_Bcast(keys, (int)nkeys, MPI_UINT64_T, 0, g2g.comm);
    uint32_t *map = malloc((size_t)n_comms * sizeof *map);
    if (!map) abort();
    for (uint32_t c = 0; c < n_comms; c++) {
        if (c < 2) {
            map[c] = c;
            continue;
        }
        uint64_t k = ((uint64_t)comms[c].key_root << 32) | comms[c].key_ctr;
        map[c] = OTF2_UNDEFINED_COMM;
        for (uint64_t i = 0; i < nkeys; i++)
            if (keys[i] == k) {
                map[c] = (uint32_t)(i + 2);
                break;
            }
    }

    OTF2_Archive_OpenDefFiles(g2g.archive);
    OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(g2g.archive, (OTF2_LocationRef)me);
    if (dw) {
        OTF2_IdMap *idmap = OTF2_IdMap_CreateFromUint32Array(n_comms, map, false);
        if (idmap) {
            OTF2_DefWriter_WriteMappingTable(dw, OTF2_MAPPING_COMM, idmap);
            OTF2_IdMap_Free(idmap);
        }
        OTF2_Archive_CloseDefWriter(g2g.archive, dw);
    }
    if (gpu_events) {
        OTF2_DefWriter *gw = OTF2_Archive_GetDefWriter(g2g.archive, g2g_gpu_location(me, n));
        if (gw) OTF2_Archive_CloseDefWriter(g2g.archive, gw);
    }
    for (uint32_t k = 0; k < nstreams; k++) {
        OTF2_DefWriter *gw = OTF2_Archive_GetDefWriter(g2g.archive, g2g_stream_location(me, k));
        if (gw) OTF2_Archive_CloseDefWriter(g2g.archive, gw);
    }
    OTF2_Archive_CloseDefFiles(g2g.archive);

    if (me == 0) {
        gpu_defs gd = {knames, knames_len, nknames, streams_of};
        write_global_defs(all, displs, defs, ndefs, t0, t1, &gd);
    }

    if (OTF2_Archive_Close(g2g.archive) != OTF2_SUCCESS) warn("%s", "OTF2_Archive_Close failed");
    g2g.archive = NULL;
    if (me == 0 && getenv("G2G_TRACE_VERBOSE"))
        fprintf(stderr, "g2gtrace: wrote %s/traces.otf2\n", g2g.trace_dir);

    OTF2_AttributeList_Delete(g2g.attrs);
    g2g.attrs = NULL;
    free(map);
    free(keys);
    free(knames);
    free(sinfo);
    free(streams_of);
    free(defs);
    free(all);
    free(counts);
    free(displs);
    free(rep.v);
    PMPI_Group_free(&g2g.world_group);
    PMPI_Comm_free(&g2g.comm);
}
