/*
 * llamp latency injector: collectives over delayed point-to-point messages.
 *
 * Each collective is built as a schedule with the algorithm the execution graph expands it to
 * (llamp.ingest.collectives.DEFAULTS): dissemination barrier, binomial bcast/reduce/gather/
 * scatter (Schedgen's tree: v ≥ 1 is a child of v − 2^⌊log2 v⌋, rooted algorithms on
 * v = (rank − root) mod P), recursive-doubling allreduce and scan (MPICH's, with the
 * non-power-of-two fold), Bruck dissemination allgather, ring allgatherv, linear alltoall(v)/
 * gatherv/scatterv (zero blocks skipped), recursive-halving reduce_scatter. A schedule is a list
 * of rounds; all sends and receives of a round are posted together once the previous round has
 * finished (the graph's round semantics), and its local steps (reductions, copies) run when its
 * messages are done. Messages go over the communicator's `coll` shadow with tag 2k (instance k)
 * after a header with tag 2k+1, and each receive is released at arrival + ΔL like any other.
 * Blocking collectives run their schedule to the end; non-blocking ones return a generalised
 * request that MPI_Wait/Test (and every other polling loop of the library) progress.
 * Non-commutative reduce/reduce_scatter, intercommunicators, alltoallw and neighbourhood
 * collectives pass through to MPI undelayed (counted in the report).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "llamp_inject.h"

enum { ST_SEND, ST_RECV, ST_REDUCE, ST_COPY };

typedef struct {
    int kind, peer, count, dcount;
    const void *src;
    void *dst;
    MPI_Datatype type, dtype;
    MPI_Op op;
    MPI_Request req, hreq;
    li_header hdr;
    int64_t t_post, t_incomplete, release;
    int state; /* 0 not posted, 1 posted, 2 arrived (release known), 3 done */
} li_step;

struct li_sched {
    li_comm *c;
    int tag;
    li_step *steps;
    int nsteps, cap;
    int *rend; /* round k = steps [rend[k-1], rend[k]) */
    int nrounds, rcap;
    void **mem;
    int nmem, memcap;
    int cur, posted, done;
    MPI_Request greq;
    li_sched *next;
};

/* ------------------------------------------------------------------ building */
static li_sched *sched_new(li_comm *c)
{
    li_sched *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->c = c;
    c->refs++;
    s->tag = (int)((c->coll_seq++ & 0x3FFFu) << 1);
    s->greq = MPI_REQUEST_NULL;
    return s;
}

static li_step *add_step(li_sched *s, int kind)
{
    if (s->nsteps == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        li_step *steps = realloc(s->steps, (size_t)cap * sizeof *steps);
        if (steps == NULL)
            PMPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
        s->steps = steps;
        s->cap = cap;
    }
    li_step *st = &s->steps[s->nsteps++];
    memset(st, 0, sizeof *st);
    st->kind = kind;
    st->req = st->hreq = MPI_REQUEST_NULL;
    return st;
}

static void add_send(li_sched *s, int peer, const void *buf, int count, MPI_Datatype type)
{
    li_step *st = add_step(s, ST_SEND);
    st->peer = peer;
    st->src = buf;
    st->count = count;
    st->type = type;
}

static void add_recv(li_sched *s, int peer, void *buf, int count, MPI_Datatype type)
{
    li_step *st = add_step(s, ST_RECV);
    st->peer = peer;
    st->dst = buf;
    st->count = count;
    st->type = type;
}

/* inout = in op inout */
static void add_reduce(li_sched *s, const void *in, void *inout, int count, MPI_Datatype type,
                       MPI_Op op)
{
    li_step *st = add_step(s, ST_REDUCE);
    st->src = in;
    st->dst = inout;
    st->count = count;
    st->type = type;
    st->op = op;
}

static void add_copy(li_sched *s, const void *src, int scount, MPI_Datatype stype, void *dst,
                     int dcount, MPI_Datatype dtype)
{
    li_step *st = add_step(s, ST_COPY);
    st->src = src;
    st->count = scount;
    st->type = stype;
    st->dst = dst;
    st->dcount = dcount;
    st->dtype = dtype;
}

static void end_round(li_sched *s)
{
    int start = s->nrounds ? s->rend[s->nrounds - 1] : 0;
    if (s->nsteps == start)
        return; /* empty rounds are never emitted */
    if (s->nrounds == s->rcap) {
        int cap = s->rcap ? 2 * s->rcap : 8;
        int *rend = realloc(s->rend, (size_t)cap * sizeof *rend);
        if (rend == NULL)
            PMPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
        s->rend = rend;
        s->rcap = cap;
    }
    s->rend[s->nrounds++] = s->nsteps;
}

static void *sched_alloc(li_sched *s, size_t bytes)
{
    if (s->nmem == s->memcap) {
        int cap = s->memcap ? 2 * s->memcap : 8;
        void **mem = realloc(s->mem, (size_t)cap * sizeof *mem);
        if (mem == NULL)
            PMPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
        s->mem = mem;
        s->memcap = cap;
    }
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL)
        PMPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    s->mem[s->nmem++] = p;
    return p;
}

/* a buffer for `count` elements of `type`, laid out as the type says */
static char *typed_alloc(li_sched *s, int count, MPI_Datatype type)
{
    MPI_Aint lb, ext, tlb, text;
    PMPI_Type_get_extent(type, &lb, &ext);
    PMPI_Type_get_true_extent(type, &tlb, &text);
    size_t span = count > 0 ? (size_t)(text + (MPI_Aint)(count - 1) * ext) : 1;
    return (char *)sched_alloc(s, span) - tlb;
}

static void sched_free(li_sched *s)
{
    for (int i = 0; i < s->nmem; i++)
        free(s->mem[i]);
    free(s->mem);
    free(s->steps);
    free(s->rend);
    li_comm_release(s->c);
    free(s);
}

/* ------------------------------------------------------------------ local steps */
static int contiguous(MPI_Datatype t, int *size)
{
    MPI_Aint lb, ext, tlb, text;
    PMPI_Type_size(t, size);
    PMPI_Type_get_extent(t, &lb, &ext);
    PMPI_Type_get_true_extent(t, &tlb, &text);
    return lb == 0 && tlb == 0 && ext == *size && text == *size;
}

static void local_copy(const void *src, int scount, MPI_Datatype stype, void *dst, int dcount,
                       MPI_Datatype dtype)
{
    int ss = 0, ds = 0, pos = 0;
    if (src == dst && stype == dtype && scount == dcount)
        return;
    if (contiguous(stype, &ss) && contiguous(dtype, &ds)) {
        size_t a = (size_t)scount * (size_t)ss, b = (size_t)dcount * (size_t)ds;
        memmove(dst, src, a < b ? a : b);
        return;
    }
    if (dtype == MPI_BYTE) {
        PMPI_Pack(src, scount, stype, dst, dcount, &pos, MPI_COMM_SELF);
        return;
    }
    if (stype == MPI_BYTE) {
        PMPI_Unpack(src, scount, &pos, dst, dcount, dtype, MPI_COMM_SELF);
        return;
    }
    int size = 0, pos2 = 0;
    PMPI_Pack_size(scount, stype, MPI_COMM_SELF, &size);
    void *tmp = malloc(size > 0 ? (size_t)size : 1);
    if (tmp == NULL)
        PMPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    PMPI_Pack(src, scount, stype, tmp, size, &pos, MPI_COMM_SELF);
    PMPI_Unpack(tmp, pos, &pos2, dst, dcount, dtype, MPI_COMM_SELF);
    free(tmp);
}

/* ------------------------------------------------------------------ execution */
static void round_bounds(const li_sched *s, int *lo, int *hi)
{
    *lo = s->cur ? s->rend[s->cur - 1] : 0;
    *hi = s->rend[s->cur];
}

static void post_round(li_sched *s)
{
    int lo, hi;
    round_bounds(s, &lo, &hi);
    for (int i = lo; i < hi; i++) {
        li_step *st = &s->steps[i];
        st->t_post = li_now();
        st->t_incomplete = LI_NEVER;
        if (st->kind == ST_SEND) {
            li_header h = {st->t_post + li_cfg.offset_ns, li_type_bytes(st->count, st->type)};
            PMPI_Send(&h, (int)sizeof h, MPI_BYTE, st->peer, s->tag | 1, s->c->coll);
            PMPI_Isend(st->src, st->count, st->type, st->peer, s->tag, s->c->coll, &st->req);
            li_st.collective_messages++;
            st->state = 1;
        } else if (st->kind == ST_RECV) {
            PMPI_Irecv(&st->hdr, (int)sizeof st->hdr, MPI_BYTE, st->peer, s->tag | 1,
                       s->c->coll, &st->hreq);
            PMPI_Irecv(st->dst, st->count, st->type, st->peer, s->tag, s->c->coll, &st->req);
            st->state = 1;
        }
    }
    s->posted = 1;
}

static int round_done(li_sched *s)
{
    int lo, hi, all = 1;
    round_bounds(s, &lo, &hi);
    for (int i = lo; i < hi; i++) {
        li_step *st = &s->steps[i];
        if (st->kind > ST_RECV || st->state == 3)
            continue;
        int flag = 0;
        if (st->state == 1) {
            int64_t t0 = li_now();
            PMPI_Test(&st->req, &flag, MPI_STATUS_IGNORE);
            if (!flag) {
                st->t_incomplete = t0;
                all = 0;
                continue;
            }
            int64_t found = li_now();
            if (st->kind == ST_SEND) {
                st->release = li_send_release(st->t_post, li_type_bytes(st->count, st->type),
                                              st->t_incomplete, found);
            } else {
                PMPI_Wait(&st->hreq, MPI_STATUS_IGNORE); /* sent before the data */
                /* a round progresses inside MPI calls (LI_IN_MPI): polled, its requests are
                 * answered by the calls the rank was in or entered next */
                st->release = li_release_time(st->hdr.t_send, st->hdr.bytes, st->t_post,
                                              st->t_incomplete, found);
            }
            st->state = 2;
        }
        if (li_now() >= st->release)
            st->state = 3;
        else
            all = 0;
    }
    return all;
}

static void run_locals(li_sched *s)
{
    int lo, hi;
    round_bounds(s, &lo, &hi);
    for (int i = lo; i < hi; i++) {
        li_step *st = &s->steps[i];
        if (st->kind == ST_REDUCE)
            PMPI_Reduce_local(st->src, st->dst, st->count, st->type, st->op);
        else if (st->kind == ST_COPY)
            local_copy(st->src, st->count, st->type, st->dst, st->dcount, st->dtype);
    }
}

/* advance as far as possible without blocking; 1 when the schedule is complete */
static int sched_step(li_sched *s)
{
    while (s->cur < s->nrounds) {
        if (!s->posted)
            post_round(s);
        if (!round_done(s))
            return 0;
        run_locals(s);
        s->cur++;
        s->posted = 0;
    }
    s->done = 1;
    return 1;
}

static int sched_run(li_sched *s)
{
    LI_IN_MPI;
    li_st.collectives++;
    while (!sched_step(s)) {
        if (li_nbc_active())
            li_nbc_progress_all();
        li_relax();
    }
    sched_free(s);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------ non-blocking */
static li_sched *active = NULL; /* started, not yet freed by MPI_Wait/Test */
static int running = 0;         /* of which not complete */

static int query_fn(void *extra, MPI_Status *status)
{
    (void)extra;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    return MPI_SUCCESS;
}

static int free_fn(void *extra)
{
    (void)extra;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

static void complete(li_sched *s)
{
    running--;
    PMPI_Grequest_complete(s->greq);
}

static int sched_start(li_sched *s, MPI_Request *request)
{
    li_st.collectives++;
    int rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, s, &s->greq);
    if (rc != MPI_SUCCESS) {
        sched_free(s);
        return rc;
    }
    s->next = active;
    active = s;
    running++;
    if (sched_step(s))
        complete(s);
    *request = s->greq;
    return MPI_SUCCESS;
}

LI_HIDDEN li_sched *li_nbc_find(MPI_Request req)
{
    if (active == NULL || req == MPI_REQUEST_NULL)
        return NULL;
    for (li_sched *s = active; s; s = s->next)
        if (s->greq == req)
            return s;
    return NULL;
}

LI_HIDDEN int li_nbc_check(li_sched *s)
{
    if (!s->done && sched_step(s))
        complete(s);
    return s->done;
}

LI_HIDDEN void li_nbc_finished(li_sched *s)
{
    for (li_sched **pp = &active; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    sched_free(s);
}

LI_HIDDEN void li_nbc_progress_all(void)
{
    for (li_sched *s = active; s; s = s->next)
        if (!s->done && sched_step(s))
            complete(s);
}

LI_HIDDEN int li_nbc_active(void) { return running > 0; }

/* ------------------------------------------------------------------ algorithms */
static int bitlen(int v)
{
    int n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
}

static int pof2(int P)
{
    int p = 1;
    while (2 * p <= P)
        p *= 2;
    return p;
}

static int old_rank(int newrank, int rem) { return newrank < rem ? 2 * newrank + 1 : newrank + rem; }

static int parent(int v) { return v - (1 << (bitlen(v) - 1)); }

static int subtree(int v, int P)
{
    if (v == 0)
        return P;
    int stride = 1 << bitlen(v);
    return (P - v + stride - 1) / stride;
}

static MPI_Aint extent(MPI_Datatype t)
{
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(t, &lb, &ext);
    return ext;
}

static int type_size(MPI_Datatype t)
{
    int size = 0;
    PMPI_Type_size(t, &size);
    return size;
}

static int commutes(MPI_Op op)
{
    int c = 1;
    PMPI_Op_commutative(op, &c);
    return c;
}

#define AT(buf, index, ext) ((char *)(buf) + (MPI_Aint)(index) * (ext))

static void build_barrier(li_sched *s)
{
    int P = s->c->size, i = s->c->rank;
    for (int d = 1; d < P; d <<= 1) {
        add_send(s, (i + d) % P, NULL, 0, MPI_BYTE);
        add_recv(s, (i - d + P) % P, NULL, 0, MPI_BYTE);
        end_round(s);
    }
}

static void build_bcast(li_sched *s, void *buf, int count, MPI_Datatype type, int root)
{
    int P = s->c->size, v = (s->c->rank - root + P) % P;
    if (v) {
        add_recv(s, (parent(v) + root) % P, buf, count, type);
        end_round(s);
    }
    for (int j = bitlen(v); v + (1 << j) < P; j++)
        add_send(s, (v + (1 << j) + root) % P, buf, count, type);
    end_round(s);
}

static void build_reduce(li_sched *s, const void *sbuf, void *rbuf, int count,
                         MPI_Datatype type, MPI_Op op, int root)
{
    int P = s->c->size, v = (s->c->rank - root + P) % P;
    char *acc = v == 0 ? (char *)rbuf : typed_alloc(s, count, type);
    if (sbuf != MPI_IN_PLACE)
        add_copy(s, sbuf, count, type, acc, count, type);
    end_round(s);
    for (int j = bitlen(v); v + (1 << j) < P; j++) {
        char *tmp = typed_alloc(s, count, type);
        add_recv(s, (v + (1 << j) + root) % P, tmp, count, type);
        add_reduce(s, tmp, acc, count, type, op);
    }
    end_round(s);
    if (v) {
        add_send(s, (parent(v) + root) % P, acc, count, type);
        end_round(s);
    }
}

static void build_allreduce(li_sched *s, const void *sbuf, void *rbuf, int count,
                            MPI_Datatype type, MPI_Op op)
{
    int P = s->c->size, i = s->c->rank;
    int p2 = pof2(P), rem = P - p2, newrank, commute = commutes(op);
    char *acc = rbuf, *tmp = typed_alloc(s, count, type);
    if (sbuf != MPI_IN_PLACE)
        add_copy(s, sbuf, count, type, acc, count, type);
    end_round(s);
    if (i < 2 * rem) {
        if (i % 2 == 0) {
            add_send(s, i + 1, acc, count, type);
            end_round(s);
            newrank = -1;
        } else {
            add_recv(s, i - 1, tmp, count, type);
            add_reduce(s, tmp, acc, count, type, op); /* lower rank's data first */
            end_round(s);
            newrank = i / 2;
        }
    } else {
        newrank = i - rem;
    }
    if (newrank >= 0)
        for (int mask = 1; mask < p2; mask <<= 1) {
            int dst = old_rank(newrank ^ mask, rem);
            add_send(s, dst, acc, count, type);
            add_recv(s, dst, tmp, count, type);
            if (commute || dst < i) {
                add_reduce(s, tmp, acc, count, type, op);
            } else {
                add_reduce(s, acc, tmp, count, type, op);
                add_copy(s, tmp, count, type, acc, count, type);
            }
            end_round(s);
        }
    if (i < 2 * rem) {
        if (i % 2 == 0)
            add_recv(s, i + 1, acc, count, type);
        else
            add_send(s, i - 1, acc, count, type);
        end_round(s);
    }
}

static void build_allgather(li_sched *s, const void *sbuf, int scount, MPI_Datatype stype,
                            void *rbuf, int rcount, MPI_Datatype rtype)
{
    int P = s->c->size, i = s->c->rank;
    int b = rcount * type_size(rtype);
    MPI_Aint rext = extent(rtype);
    char *W = sched_alloc(s, (size_t)P * (size_t)b); /* W[d] = block (i − d) mod P */
    if (sbuf == MPI_IN_PLACE)
        add_copy(s, AT(rbuf, i * rcount, rext), rcount, rtype, W, b, MPI_BYTE);
    else
        add_copy(s, sbuf, scount, stype, W, b, MPI_BYTE);
    end_round(s);
    for (int dist = 1; dist < P; dist <<= 1) {
        int m = dist < P - dist ? dist : P - dist;
        add_send(s, (i + dist) % P, W, m * b, MPI_BYTE);
        add_recv(s, (i - dist + P) % P, W + (size_t)dist * b, m * b, MPI_BYTE);
        end_round(s);
    }
    for (int d = 0; d < P; d++) {
        if (d == 0 && sbuf == MPI_IN_PLACE)
            continue;
        int j = (i - d + P) % P;
        add_copy(s, W + (size_t)d * b, b, MPI_BYTE, AT(rbuf, j * rcount, rext), rcount, rtype);
    }
    end_round(s);
}

static void build_allgatherv(li_sched *s, const void *sbuf, int scount, MPI_Datatype stype,
                             void *rbuf, const int rcounts[], const int displs[],
                             MPI_Datatype rtype)
{
    int P = s->c->size, i = s->c->rank;
    MPI_Aint rext = extent(rtype);
    if (sbuf != MPI_IN_PLACE)
        add_copy(s, sbuf, scount, stype, AT(rbuf, displs[i], rext), rcounts[i], rtype);
    end_round(s);
    for (int t = 0; t < P - 1; t++) {
        int sb = (i - t + P) % P, rb = (i - t - 1 + 2 * P) % P;
        add_send(s, (i + 1) % P, AT(rbuf, displs[sb], rext), rcounts[sb], rtype);
        add_recv(s, (i - 1 + P) % P, AT(rbuf, displs[rb], rext), rcounts[rb], rtype);
        end_round(s);
    }
}

static void build_alltoallv(li_sched *s, const void *sbuf, const int scounts[],
                            const int sdispls[], MPI_Datatype stype, void *rbuf,
                            const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                            int skip_zero)
{
    int P = s->c->size, i = s->c->rank;
    MPI_Aint rext = extent(rtype), sext;
    int ssize, rsize = type_size(rtype);
    if (sbuf == MPI_IN_PLACE) { /* send from a copy of the receive buffer */
        int n = 0;
        for (int k = 0; k < P; k++)
            if (rdispls[k] + rcounts[k] > n)
                n = rdispls[k] + rcounts[k];
        char *copy = typed_alloc(s, n, rtype);
        add_copy(s, rbuf, n, rtype, copy, n, rtype);
        sbuf = copy;
        scounts = rcounts;
        sdispls = rdispls;
        stype = rtype;
    } else {
        add_copy(s, AT(sbuf, sdispls[i], extent(stype)), scounts[i], stype,
                 AT(rbuf, rdispls[i], rext), rcounts[i], rtype);
    }
    end_round(s);
    sext = extent(stype);
    ssize = type_size(stype);
    for (int t = 1; t < P; t++) {
        int dst = (i + t) % P, src = (i - t + P) % P;
        if (!(skip_zero && scounts[dst] * ssize == 0))
            add_send(s, dst, AT(sbuf, sdispls[dst], sext), scounts[dst], stype);
        if (!(skip_zero && rcounts[src] * rsize == 0))
            add_recv(s, src, AT(rbuf, rdispls[src], rext), rcounts[src], rtype);
    }
    end_round(s);
}

static void build_alltoall(li_sched *s, const void *sbuf, int scount, MPI_Datatype stype,
                           void *rbuf, int rcount, MPI_Datatype rtype)
{
    int P = s->c->size;
    int *sc = sched_alloc(s, 4 * (size_t)P * sizeof(int));
    int *sd = sc + P, *rc = sc + 2 * P, *rd = sc + 3 * P;
    for (int k = 0; k < P; k++) {
        sc[k] = scount;
        sd[k] = k * scount;
        rc[k] = rcount;
        rd[k] = k * rcount;
    }
    build_alltoallv(s, sbuf, sc, sd, stype, rbuf, rc, rd, rtype, 0);
}

/* binomial gather: block b bytes per member, W indexed by relative rank */
static void build_gather(li_sched *s, const void *sbuf, int scount, MPI_Datatype stype,
                         void *rbuf, int rcount, MPI_Datatype rtype, int root)
{
    int P = s->c->size, v = (s->c->rank - root + P) % P;
    int b = v == 0 ? rcount * type_size(rtype) : scount * type_size(stype);
    MPI_Aint rext = v == 0 ? extent(rtype) : 0;
    char *W = sched_alloc(s, (size_t)P * (size_t)b);
    if (v == 0 && sbuf == MPI_IN_PLACE)
        add_copy(s, AT(rbuf, root * rcount, rext), rcount, rtype, W, b, MPI_BYTE);
    else
        add_copy(s, sbuf, scount, stype, W + (size_t)v * b, b, MPI_BYTE);
    end_round(s);
    for (int j = bitlen(v); v + (1 << j) < P; j++) {
        int c = v + (1 << j), n = subtree(c, P);
        char *S = sched_alloc(s, (size_t)n * b);
        add_recv(s, (c + root) % P, S, n * b, MPI_BYTE);
        for (int m = 0; m < n; m++)
            add_copy(s, S + (size_t)m * b, b, MPI_BYTE, W + (size_t)(c + m * (2 << j)) * b, b,
                     MPI_BYTE);
    }
    if (v) {
        int n = subtree(v, P), stride = 1 << bitlen(v);
        char *T = sched_alloc(s, (size_t)n * b);
        for (int m = 0; m < n; m++)
            add_copy(s, W + (size_t)(v + m * stride) * b, b, MPI_BYTE, T + (size_t)m * b, b,
                     MPI_BYTE);
        end_round(s);
        add_send(s, (parent(v) + root) % P, T, n * b, MPI_BYTE);
        end_round(s);
        return;
    }
    for (int u = 0; u < P; u++) {
        if (u == 0 && sbuf == MPI_IN_PLACE)
            continue;
        add_copy(s, W + (size_t)u * b, b, MPI_BYTE, AT(rbuf, ((u + root) % P) * rcount, rext),
                 rcount, rtype);
    }
    end_round(s);
}

static void build_scatter(li_sched *s, const void *sbuf, int scount, MPI_Datatype stype,
                          void *rbuf, int rcount, MPI_Datatype rtype, int root)
{
    int P = s->c->size, v = (s->c->rank - root + P) % P;
    int b = v == 0 ? scount * type_size(stype) : rcount * type_size(rtype);
    char *W = sched_alloc(s, (size_t)P * (size_t)b);
    if (v == 0) {
        MPI_Aint sext = extent(stype);
        for (int u = 0; u < P; u++)
            add_copy(s, AT(sbuf, ((u + root) % P) * scount, sext), scount, stype,
                     W + (size_t)u * b, b, MPI_BYTE);
    } else {
        int n = subtree(v, P), stride = 1 << bitlen(v);
        char *S = sched_alloc(s, (size_t)n * b);
        add_recv(s, (parent(v) + root) % P, S, n * b, MPI_BYTE);
        for (int m = 0; m < n; m++)
            add_copy(s, S + (size_t)m * b, b, MPI_BYTE, W + (size_t)(v + m * stride) * b, b,
                     MPI_BYTE);
    }
    /* pack each child's subtree, then send them all in one round */
    char *packs[32];
    int sizes[32], kids[32], nk = 0;
    for (int j = bitlen(v); v + (1 << j) < P && nk < 32; j++) {
        int c = v + (1 << j), n = subtree(c, P);
        char *T = sched_alloc(s, (size_t)n * b);
        for (int m = 0; m < n; m++)
            add_copy(s, W + (size_t)(c + m * (2 << j)) * b, b, MPI_BYTE, T + (size_t)m * b, b,
                     MPI_BYTE);
        packs[nk] = T;
        sizes[nk] = n * b;
        kids[nk++] = (c + root) % P;
    }
    end_round(s);
    for (int k = 0; k < nk; k++)
        add_send(s, kids[k], packs[k], sizes[k], MPI_BYTE);
    end_round(s);
    if (!(v == 0 && rbuf == MPI_IN_PLACE))
        add_copy(s, W + (size_t)v * b, b, MPI_BYTE, rbuf, rcount, rtype);
    end_round(s);
}

static void build_gatherv(li_sched *s, const void *sbuf, int scount, MPI_Datatype stype,
                          void *rbuf, const int rcounts[], const int displs[],
                          MPI_Datatype rtype, int root)
{
    int P = s->c->size, i = s->c->rank;
    if (i != root) {
        if (scount * type_size(stype) > 0)
            add_send(s, root, sbuf, scount, stype);
        end_round(s);
        return;
    }
    MPI_Aint rext = extent(rtype);
    int rsize = type_size(rtype);
    if (sbuf != MPI_IN_PLACE)
        add_copy(s, sbuf, scount, stype, AT(rbuf, displs[root], rext), rcounts[root], rtype);
    end_round(s);
    for (int v = 1; v < P; v++) {
        int k = (v + root) % P;
        if (rcounts[k] * rsize > 0)
            add_recv(s, k, AT(rbuf, displs[k], rext), rcounts[k], rtype);
    }
    end_round(s);
}

static void build_scatterv(li_sched *s, const void *sbuf, const int scounts[],
                           const int displs[], MPI_Datatype stype, void *rbuf, int rcount,
                           MPI_Datatype rtype, int root)
{
    int P = s->c->size, i = s->c->rank;
    if (i != root) {
        if (rcount * type_size(rtype) > 0)
            add_recv(s, root, rbuf, rcount, rtype);
        end_round(s);
        return;
    }
    MPI_Aint sext = extent(stype);
    int ssize = type_size(stype);
    for (int v = 1; v < P; v++) {
        int k = (v + root) % P;
        if (scounts[k] * ssize > 0)
            add_send(s, k, AT(sbuf, displs[k], sext), scounts[k], stype);
    }
    if (rbuf != MPI_IN_PLACE)
        add_copy(s, AT(sbuf, displs[root], sext), scounts[root], stype, rbuf, rcount, rtype);
    end_round(s);
}

/* MPICH's recursive halving (commutative ops); counts in elements of `type` */
static void build_reduce_scatter(li_sched *s, const void *sbuf, void *rbuf, const int counts[],
                                 MPI_Datatype type, MPI_Op op)
{
    int P = s->c->size, i = s->c->rank;
    int p2 = pof2(P), rem = P - p2, newrank, total = 0;
    MPI_Aint ext = extent(type);
    int *disp = sched_alloc(s, (size_t)(P + 2 * p2) * sizeof(int));
    int *ncnt = disp + P, *ndisp = ncnt + p2;
    for (int k = 0; k < P; k++) {
        disp[k] = total;
        total += counts[k];
    }
    char *acc = typed_alloc(s, total, type), *tmp = typed_alloc(s, total, type);
    add_copy(s, sbuf == MPI_IN_PLACE ? rbuf : sbuf, total, type, acc, total, type);
    end_round(s);
    if (i < 2 * rem) {
        if (i % 2 == 0) {
            add_send(s, i + 1, acc, total, type);
            end_round(s);
            newrank = -1;
        } else {
            add_recv(s, i - 1, tmp, total, type);
            add_reduce(s, tmp, acc, total, type, op);
            end_round(s);
            newrank = i / 2;
        }
    } else {
        newrank = i - rem;
    }
    if (newrank >= 0) {
        for (int j = 0; j < p2; j++) {
            int old = old_rank(j, rem);
            ncnt[j] = old < 2 * rem ? counts[old] + counts[old - 1] : counts[old];
            ndisp[j] = old < 2 * rem ? disp[old - 1] : disp[old];
        }
        int lo = 0;
        for (int mask = p2 >> 1; mask > 0; mask >>= 1) {
            int nd = newrank ^ mask, dst = old_rank(nd, rem);
            int nl = 0, nu = 0;
            for (int j = lo; j < lo + mask; j++)
                nl += ncnt[j];
            for (int j = lo + mask; j < lo + 2 * mask; j++)
                nu += ncnt[j];
            int ol = ndisp[lo], ou = ndisp[lo + mask];
            if (newrank < nd) {
                add_send(s, dst, AT(acc, ou, ext), nu, type);
                add_recv(s, dst, AT(tmp, ol, ext), nl, type);
                add_reduce(s, AT(tmp, ol, ext), AT(acc, ol, ext), nl, type, op);
            } else {
                add_send(s, dst, AT(acc, ol, ext), nl, type);
                add_recv(s, dst, AT(tmp, ou, ext), nu, type);
                add_reduce(s, AT(tmp, ou, ext), AT(acc, ou, ext), nu, type, op);
                lo += mask;
            }
            end_round(s);
        }
    }
    if (i < 2 * rem && i % 2 == 0) {
        add_recv(s, i + 1, rbuf, counts[i], type);
    } else {
        if (i < 2 * rem)
            add_send(s, i - 1, AT(acc, disp[i - 1], ext), counts[i - 1], type);
        add_copy(s, AT(acc, disp[i], ext), counts[i], type, rbuf, counts[i], type);
    }
    end_round(s);
}

/* MPICH's recursive-doubling (ex)scan */
static void build_scan(li_sched *s, const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                       MPI_Op op, int exclusive)
{
    int P = s->c->size, i = s->c->rank, commute = commutes(op), have = 0;
    char *partial = typed_alloc(s, count, type), *tmp = typed_alloc(s, count, type);
    add_copy(s, sbuf == MPI_IN_PLACE ? rbuf : sbuf, count, type, partial, count, type);
    if (!exclusive && sbuf != MPI_IN_PLACE)
        add_copy(s, sbuf, count, type, rbuf, count, type);
    end_round(s);
    for (int mask = 1; mask < P; mask <<= 1) {
        int dst = i ^ mask;
        if (dst >= P)
            continue;
        add_send(s, dst, partial, count, type);
        add_recv(s, dst, tmp, count, type);
        if (i > dst) {
            add_reduce(s, tmp, partial, count, type, op);
            if (!exclusive || have) {
                add_reduce(s, tmp, rbuf, count, type, op);
            } else {
                add_copy(s, tmp, count, type, rbuf, count, type);
                have = 1;
            }
        } else if (commute) {
            add_reduce(s, tmp, partial, count, type, op);
        } else {
            add_reduce(s, partial, tmp, count, type, op);
            add_copy(s, tmp, count, type, partial, count, type);
        }
        end_round(s);
    }
}

/* ------------------------------------------------------------------ wrappers */
static li_comm *coll_comm(MPI_Comm comm, const char *what)
{
    li_comm *c = li_comm_get(comm);
    if (c == NULL && li_cfg.active)
        li_note_passthrough(what);
    return c;
}

#define RUN_OR_START(s, request) ((request) ? sched_start((s), (request)) : sched_run(s))

static int do_barrier(MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "barrier on an unshadowed communicator");
    if (c == NULL)
        return request ? PMPI_Ibarrier(comm, request) : PMPI_Barrier(comm);
    li_sched *s = sched_new(c);
    build_barrier(s);
    return RUN_OR_START(s, request);
}

int MPI_Barrier(MPI_Comm comm) { return do_barrier(comm, NULL); }
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) { return do_barrier(comm, request); }

static int do_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                    MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "bcast on an unshadowed communicator");
    if (c == NULL)
        return request ? PMPI_Ibcast(buf, count, type, root, comm, request)
                       : PMPI_Bcast(buf, count, type, root, comm);
    li_sched *s = sched_new(c);
    build_bcast(s, buf, count, type, root);
    return RUN_OR_START(s, request);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    return do_bcast(buf, count, type, root, comm, NULL);
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request *request)
{
    return do_bcast(buf, count, type, root, comm, request);
}

static int do_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                     int root, MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "reduce on an unshadowed communicator");
    if (c != NULL && !commutes(op)) {
        li_note_passthrough("reduce with a non-commutative operation");
        c = NULL;
    }
    if (c == NULL)
        return request ? PMPI_Ireduce(sbuf, rbuf, count, type, op, root, comm, request)
                       : PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
    li_sched *s = sched_new(c);
    build_reduce(s, sbuf, rbuf, count, type, op, root);
    return RUN_OR_START(s, request);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm)
{
    return do_reduce(sbuf, rbuf, count, type, op, root, comm, NULL);
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *request)
{
    return do_reduce(sbuf, rbuf, count, type, op, root, comm, request);
}

static int do_allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "allreduce on an unshadowed communicator");
    if (c == NULL)
        return request ? PMPI_Iallreduce(sbuf, rbuf, count, type, op, comm, request)
                       : PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
    li_sched *s = sched_new(c);
    build_allreduce(s, sbuf, rbuf, count, type, op);
    return RUN_OR_START(s, request);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    return do_allreduce(sbuf, rbuf, count, type, op, comm, NULL);
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request)
{
    return do_allreduce(sbuf, rbuf, count, type, op, comm, request);
}

static int do_allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                        int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "allgather on an unshadowed communicator");
    if (c == NULL)
        return request
                   ? PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, request)
                   : PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    li_sched *s = sched_new(c);
    build_allgather(s, sbuf, scount, stype, rbuf, rcount, rtype);
    return RUN_OR_START(s, request);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm)
{
    return do_allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, NULL);
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *request)
{
    return do_allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, request);
}

static int do_allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                         const int rcounts[], const int displs[], MPI_Datatype rtype,
                         MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "allgatherv on an unshadowed communicator");
    if (c == NULL)
        return request ? PMPI_Iallgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype,
                                          comm, request)
                       : PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype,
                                         comm);
    li_sched *s = sched_new(c);
    build_allgatherv(s, sbuf, scount, stype, rbuf, rcounts, displs, rtype);
    return RUN_OR_START(s, request);
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    return do_allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, NULL);
}

int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                    const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm,
                    MPI_Request *request)
{
    return do_allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, request);
}

static int do_alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                       MPI_Datatype rtype, MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "alltoall on an unshadowed communicator");
    if (c == NULL)
        return request
                   ? PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, request)
                   : PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    li_sched *s = sched_new(c);
    build_alltoall(s, sbuf, scount, stype, rbuf, rcount, rtype);
    return RUN_OR_START(s, request);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm)
{
    return do_alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, NULL);
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm, MPI_Request *request)
{
    return do_alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, request);
}

static int do_alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
                        MPI_Datatype stype, void *rbuf, const int rcounts[], const int rdispls[],
                        MPI_Datatype rtype, MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "alltoallv on an unshadowed communicator");
    if (c == NULL)
        return request ? PMPI_Ialltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls,
                                         rtype, comm, request)
                       : PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls,
                                        rtype, comm);
    li_sched *s = sched_new(c);
    build_alltoallv(s, sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, 1);
    return RUN_OR_START(s, request);
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                  MPI_Comm comm)
{
    return do_alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, NULL);
}

int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[],
                   MPI_Datatype stype, void *rbuf, const int rcounts[], const int rdispls[],
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *request)
{
    return do_alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm,
                        request);
}

static int do_gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                     MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "gather on an unshadowed communicator");
    if (c == NULL)
        return request ? PMPI_Igather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm,
                                      request)
                       : PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    li_sched *s = sched_new(c);
    build_gather(s, sbuf, scount, stype, rbuf, rcount, rtype, root);
    return RUN_OR_START(s, request);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm)
{
    return do_gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, NULL);
}

int MPI_Igather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return do_gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, request);
}

static int do_scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                      MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "scatter on an unshadowed communicator");
    if (c == NULL)
        return request ? PMPI_Iscatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm,
                                       request)
                       : PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    li_sched *s = sched_new(c);
    build_scatter(s, sbuf, scount, stype, rbuf, rcount, rtype, root);
    return RUN_OR_START(s, request);
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm)
{
    return do_scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, NULL);
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return do_scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, request);
}

static int do_gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                      const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                      MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "gatherv on an unshadowed communicator");
    if (c == NULL)
        return request ? PMPI_Igatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root,
                                       comm, request)
                       : PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root,
                                      comm);
    li_sched *s = sched_new(c);
    build_gatherv(s, sbuf, scount, stype, rbuf, rcounts, displs, rtype, root);
    return RUN_OR_START(s, request);
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                MPI_Comm comm)
{
    return do_gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, NULL);
}

int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                 const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                 MPI_Comm comm, MPI_Request *request)
{
    return do_gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, request);
}

static int do_scatterv(const void *sbuf, const int scounts[], const int displs[],
                       MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root,
                       MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "scatterv on an unshadowed communicator");
    if (c == NULL)
        return request ? PMPI_Iscatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root,
                                        comm, request)
                       : PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root,
                                       comm);
    li_sched *s = sched_new(c);
    build_scatterv(s, sbuf, scounts, displs, stype, rbuf, rcount, rtype, root);
    return RUN_OR_START(s, request);
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                 void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    return do_scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, NULL);
}

int MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                  void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
                  MPI_Request *request)
{
    return do_scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, request);
}

static int do_reduce_scatter(const void *sbuf, void *rbuf, const int counts[], MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "reduce_scatter on an unshadowed communicator");
    if (c != NULL && !commutes(op)) {
        li_note_passthrough("reduce_scatter with a non-commutative operation");
        c = NULL;
    }
    if (c == NULL)
        return request ? PMPI_Ireduce_scatter(sbuf, rbuf, counts, type, op, comm, request)
                       : PMPI_Reduce_scatter(sbuf, rbuf, counts, type, op, comm);
    li_sched *s = sched_new(c);
    build_reduce_scatter(s, sbuf, rbuf, counts, type, op);
    return RUN_OR_START(s, request);
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int counts[], MPI_Datatype type,
                       MPI_Op op, MPI_Comm comm)
{
    return do_reduce_scatter(sbuf, rbuf, counts, type, op, comm, NULL);
}

int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int counts[], MPI_Datatype type,
                        MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return do_reduce_scatter(sbuf, rbuf, counts, type, op, comm, request);
}

static int do_reduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                                   MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "reduce_scatter_block on an unshadowed communicator");
    if (c != NULL && !commutes(op)) {
        li_note_passthrough("reduce_scatter_block with a non-commutative operation");
        c = NULL;
    }
    if (c == NULL)
        return request
                   ? PMPI_Ireduce_scatter_block(sbuf, rbuf, count, type, op, comm, request)
                   : PMPI_Reduce_scatter_block(sbuf, rbuf, count, type, op, comm);
    li_sched *s = sched_new(c);
    int *counts = sched_alloc(s, (size_t)c->size * sizeof(int));
    for (int k = 0; k < c->size; k++)
        counts[k] = count;
    build_reduce_scatter(s, sbuf, rbuf, counts, type, op);
    return RUN_OR_START(s, request);
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm)
{
    return do_reduce_scatter_block(sbuf, rbuf, count, type, op, comm, NULL);
}

int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return do_reduce_scatter_block(sbuf, rbuf, count, type, op, comm, request);
}

static int do_scan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, int exclusive, MPI_Request *request)
{
    li_comm *c = coll_comm(comm, "scan on an unshadowed communicator");
    if (c == NULL) {
        if (exclusive)
            return request ? PMPI_Iexscan(sbuf, rbuf, count, type, op, comm, request)
                           : PMPI_Exscan(sbuf, rbuf, count, type, op, comm);
        return request ? PMPI_Iscan(sbuf, rbuf, count, type, op, comm, request)
                       : PMPI_Scan(sbuf, rbuf, count, type, op, comm);
    }
    li_sched *s = sched_new(c);
    build_scan(s, sbuf, rbuf, count, type, op, exclusive);
    return RUN_OR_START(s, request);
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
             MPI_Comm comm)
{
    return do_scan(sbuf, rbuf, count, type, op, comm, 0, NULL);
}

int MPI_Iscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm, MPI_Request *request)
{
    return do_scan(sbuf, rbuf, count, type, op, comm, 0, request);
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm)
{
    return do_scan(sbuf, rbuf, count, type, op, comm, 1, NULL);
}

int MPI_Iexscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                MPI_Comm comm, MPI_Request *request)
{
    return do_scan(sbuf, rbuf, count, type, op, comm, 1, request);
}

/* not modelled by the graph either: executed by MPI, undelayed, and counted */
int MPI_Alltoallw(const void *sbuf, const int scounts[], const int sdispls[],
                  const MPI_Datatype stypes[], void *rbuf, const int rcounts[],
                  const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm)
{
    if (li_cfg.active)
        li_note_passthrough("MPI_Alltoallw");
    return PMPI_Alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm);
}
