/*
 * llamp latency injector, core (see llamp_inject.h): configuration, clock, communicator
 * shadows, message headers, receive records and their release times, the per-rank report.
 *
 * Environment (set by `llamp inject`):
 *   LLAMP_INJECT_DELTA_NS   ΔL in ns (default 0: headers still travel, nothing is delayed)
 *   LLAMP_INJECT_PASSIVE    1: headers travel and receives are tracked, but no release time
 *                           is computed (every message is released when MPI completes it):
 *                           the injector's cost without its delay path (llamp overhead)
 *   LLAMP_INJECT_L_NS, LLAMP_INJECT_O_NS, LLAMP_INJECT_G_NS
 *                           base LogGP of this machine (llamp calibrate), used only to estimate
 *                           when a message arrived while its receiver was busy (li_release_time)
 *   LLAMP_INJECT_S          rendezvous threshold S of the emulated network in bytes (default:
 *                           none, every message eager)
 *   LLAMP_INJECT_RENDEZVOUS "polled": a receiver answers a rendezvous request only inside MPI
 *                           (docs/model.md, --rendezvous polled); else on arrival (handshake)
 *   LLAMP_INJECT_TIMES      this machine's measured times by size, "bytes:one_way:send,..." in
 *                           ns (llamp calibrate's ping-pong: half round trip, MPI_Send duration),
 *                           used instead of the LogGP formulas below where given
 *   LLAMP_INJECT_REPORT     directory for inject-rank-<N>.json (runtime and counters)
 *   LLAMP_INJECT_YIELD      1/0: sched_yield() while spinning (default: 1 when this node runs
 *                           more ranks than it has online CPUs)
 *
 * Eager messages (≤ S bytes). The receiver sees a receive complete at local time c; the header
 * says the send started at t_s (global clock; one host shares CLOCK_MONOTONIC, several hosts
 * are aligned at MPI_Init by ping-pong). Without injection the message would have been complete
 * at a ≈ t_s + one_way(s): half the measured ping-pong round trip of that size (interpolated in
 * LLAMP_INJECT_TIMES), else 2o + L + (s−1)G; a is clamped to the interval the
 * receiver itself observed, (t_incomplete, c], so a receiver that was waiting (polling) uses its
 * own observation and a receiver that was computing uses the estimate. The completion is
 * released at a + ΔL: a computing receiver that comes back after a + ΔL is not delayed at all.
 * The sender is never delayed.
 *
 * Rendezvous messages (> S bytes) get the increments of the LogGPS handshake (docs/model.md §Cost semantics:
 * h = max(t_s + o + L, t_post), receive done at h + 3o + 2L + (s−1)G, send at h + 2o + L) when
 * L grows by ΔL. The receiver knows t_s and its own post time, so it adds exactly
 * (h' − h) + 2ΔL to the estimated completion a = h + one_way(s) − (o + L) (h' with L + ΔL).
 * Polled (LLAMP_INJECT_RENDEZVOUS=polled, an MPI library without a progress thread): a request
 * that arrives after the post is answered at its arrival if the receiver is inside an MPI call
 * that can wait (a send, receive, wait, test, probe or blocking collective: LI_IN_MPI), else
 * when the receiver next enters one (answered()); h is that time in both the base network and
 * the one ΔL slower.
 * The sender does not know t_post; it infers how late the receiver was from how long its own
 * send took beyond the measured MPI_Send duration of that size (else 3o + 2L + (s−1)G; a send
 * blocks until the receiver takes the data) and adds
 * ΔL + max(0, ΔL − lateness): 2ΔL for a receiver that was waiting, ΔL for one late by ΔL or
 * more. No control message is added, so no new waiting between ranks.
  */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "llamp_inject.h"

LI_HIDDEN li_config li_cfg;
LI_HIDDEN li_stats li_st;

static int keyval = MPI_KEYVAL_INVALID;
static char report_dir[4096];

/* ------------------------------------------------------------------ clock */
LI_HIDDEN int64_t li_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

LI_HIDDEN void li_relax(void)
{
    if (li_cfg.yield)
        sched_yield();
#if defined(__x86_64__) || defined(__i386__)
    else
        __builtin_ia32_pause();
#endif
}

LI_HIDDEN void li_note_passthrough(const char *what)
{
    static int told = 0;
    li_st.passthrough_calls++;
    if (!told && li_cfg.world_rank == 0 && getenv("LLAMP_INJECT_VERBOSE")) {
        fprintf(stderr, "llamp inject: not delayed: %s (counted in the report)\n", what);
        told = 1;
    }
}

static double env_double(const char *name, double fallback)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return fallback;
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || x < 0) {
        fprintf(stderr, "llamp inject: ignoring %s=%s (not a number ≥ 0)\n", name, v);
        return fallback;
    }
    return x;
}

/* ------------------------------------------------------------------ communicators */
struct li_prefetch {
    int source, tag;
    li_header h;
    li_prefetch *next;
};

static int delete_fn(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm;
    (void)key;
    (void)extra;
    li_comm_release((li_comm *)value);
    return MPI_SUCCESS;
}

LI_HIDDEN li_comm *li_comm_get(MPI_Comm comm)
{
    if (!li_cfg.active || comm == MPI_COMM_NULL)
        return NULL;
    void *value = NULL;
    int flag = 0;
    PMPI_Comm_get_attr(comm, keyval, &value, &flag);
    return flag ? (li_comm *)value : NULL;
}

LI_HIDDEN void li_comm_register(MPI_Comm comm)
{
    int inter = 0;
    if (comm == MPI_COMM_NULL || keyval == MPI_KEYVAL_INVALID)
        return;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        return; /* intercommunicators pass through (counted when used) */
    li_comm *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    PMPI_Comm_dup(comm, &c->hdr);
    PMPI_Comm_dup(comm, &c->coll);
    PMPI_Comm_rank(comm, &c->rank);
    PMPI_Comm_size(comm, &c->size);
    c->refs = 1;
    PMPI_Comm_set_attr(comm, keyval, c);
}

LI_HIDDEN void li_comm_release(li_comm *c)
{
    if (c == NULL || --c->refs > 0)
        return;
    while (c->prefetched) {
        li_prefetch *p = c->prefetched;
        c->prefetched = p->next;
        free(p);
    }
    PMPI_Comm_free(&c->hdr);
    PMPI_Comm_free(&c->coll);
    free(c);
}

LI_HIDDEN void li_comms_init(void)
{
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &keyval, NULL);
    li_comm_register(MPI_COMM_WORLD);
    li_comm_register(MPI_COMM_SELF);
}

LI_HIDDEN void li_comms_finish(void)
{
    PMPI_Comm_delete_attr(MPI_COMM_SELF, keyval);
    PMPI_Comm_delete_attr(MPI_COMM_WORLD, keyval);
    PMPI_Comm_free_keyval(&keyval);
}

/* ------------------------------------------------------------------ headers and release */
LI_HIDDEN void li_send_header(li_comm *c, int dest, int tag, int count, MPI_Datatype type,
                              int64_t t_send)
{
    if (dest == MPI_PROC_NULL)
        return;
    li_header h = {t_send + li_cfg.offset_ns, li_type_bytes(count, type)};
    PMPI_Send(&h, (int)sizeof h, MPI_BYTE, dest, tag, c->hdr);
    li_st.messages_sent++;
    li_st.bytes_sent += (uint64_t)h.bytes;
}

LI_HIDDEN int64_t li_type_bytes(int count, MPI_Datatype type)
{
    int size = 0;
    PMPI_Type_size(type, &size);
    return (int64_t)count * size;
}

static double wire(int64_t bytes)
{
    return (bytes > 1 ? (double)(bytes - 1) : 0.0) * li_cfg.G_ns;
}

/* linear interpolation of a measured column at `bytes` (extrapolated with the end slopes) */
static double measured(const double *column, int64_t bytes)
{
    const int n = li_cfg.ntable;
    const double x = (double)bytes, *xs = li_cfg.table_bytes;
    if (n == 1)
        return column[0];
    int k = 1;
    while (k < n - 1 && xs[k] < x)
        k++;
    double f = (x - xs[k - 1]) / (xs[k] - xs[k - 1]);
    double v = column[k - 1] + f * (column[k] - column[k - 1]);
    return v > 0.0 ? v : 0.0;
}

/* time from the start of a send to the complete receive, receiver waiting */
static double one_way(int64_t bytes)
{
    if (li_cfg.ntable > 0)
        return measured(li_cfg.table_oneway, bytes);
    if (bytes <= li_cfg.S)
        return li_cfg.L_ns + 2.0 * li_cfg.o_ns + wire(bytes);
    return 3.0 * li_cfg.L_ns + 4.0 * li_cfg.o_ns + wire(bytes);
}

/* duration of a blocking send, receiver waiting */
static double send_time(int64_t bytes)
{
    if (li_cfg.ntable > 0)
        return measured(li_cfg.table_send, bytes);
    return 3.0 * li_cfg.o_ns + 2.0 * li_cfg.L_ns + wire(bytes);
}

/* The rank's last calls inside MPI (LI_IN_MPI), oldest first in a ring, and the call under
 * way (depth > 0, since cur_entry). */
#define LI_CALLS 256
static int64_t call_entry[LI_CALLS], call_exit[LI_CALLS];
static unsigned calls_kept, call_depth;
static int64_t cur_entry;

LI_HIDDEN int64_t li_enter(void)
{
    if (li_cfg.polled && call_depth++ == 0)
        cur_entry = li_now();
    return 0;
}

LI_HIDDEN void li_leave(int64_t *entered)
{
    (void)entered;
    if (!li_cfg.polled || call_depth == 0 || --call_depth > 0)
        return;
    unsigned k = calls_kept++ % LI_CALLS;
    call_entry[k] = cur_entry;
    call_exit[k] = li_now();
}

/* When the receiver answers a rendezvous request that arrives at local time x: at its post if
 * the request was there first; else, polled, at x if it was inside MPI then, else when it
 * next entered MPI (a call it left since, or the call under way: every check of a receive
 * runs inside one); on arrival (x) otherwise. */
static int64_t answered(int64_t x, int64_t t_post)
{
    if (x <= t_post)
        return t_post;
    if (!li_cfg.polled)
        return x;
    int64_t best = INT64_MAX;
    if (call_depth > 0)
        best = cur_entry > x ? cur_entry : x;
    unsigned n = calls_kept < LI_CALLS ? calls_kept : LI_CALLS;
    for (unsigned i = 1; i <= n; i++) { /* newest first, while they end after x */
        unsigned k = (calls_kept - i) % LI_CALLS;
        if (call_exit[k] < x)
            break;
        int64_t at = call_entry[k] > x ? call_entry[k] : x;
        if (at < best)
            best = at;
    }
    return best == INT64_MAX ? x : best;
}

LI_HIDDEN int64_t li_release_time(int64_t t_send, int64_t bytes, int64_t t_post,
                                  int64_t t_incomplete, int64_t c_time)
{
    if (li_cfg.passive)
        return c_time;
    const double L = li_cfg.L_ns, o = li_cfg.o_ns;
    int64_t ts = t_send - li_cfg.offset_ns, a, extra;
    if (bytes <= li_cfg.S) {
        a = ts + (int64_t)one_way(bytes);
        extra = li_cfg.delta_ns;
    } else {
        int64_t rts = ts + (int64_t)(o + L);
        int64_t h = answered(rts, t_post);
        int64_t h2 = answered(rts + li_cfg.delta_ns, t_post);
        double rest = one_way(bytes) - (o + L);
        a = h + (int64_t)(rest > 0.0 ? rest : 0.0);
        extra = (h2 - h) + 2 * li_cfg.delta_ns;
    }
    if (t_incomplete != LI_NEVER && a < t_incomplete)
        a = t_incomplete;
    if (a > c_time)
        a = c_time;
    return a + extra;
}

LI_HIDDEN int64_t li_send_release(int64_t t_send, int64_t bytes, int64_t t_incomplete,
                                  int64_t c_time)
{
    if (li_cfg.passive || bytes <= li_cfg.S)
        return c_time;
    int64_t expect = t_send + (int64_t)send_time(bytes);
    int64_t p = expect;
    if (t_incomplete != LI_NEVER && p < t_incomplete)
        p = t_incomplete;
    if (p > c_time)
        p = c_time;
    int64_t late = p > expect ? p - expect : 0;
    int64_t extra = li_cfg.delta_ns + (late < li_cfg.delta_ns ? li_cfg.delta_ns - late : 0);
    return p + extra;
}

LI_HIDDEN void li_wait_until(int64_t release)
{
    while (li_now() < release) {
        if (li_nbc_active())
            li_nbc_progress_all();
        li_relax();
    }
}

/* ------------------------------------------------------------------ request tables */
#define LI_BUCKETS 4096

static uint64_t req_key(MPI_Request req)
{
    uint64_t k = 0;
    memcpy(&k, &req, sizeof req < sizeof k ? sizeof req : sizeof k);
    return k;
}

static unsigned bucket(MPI_Request req)
{
    return (unsigned)((req_key(req) * 0x9E3779B97F4A7C15ULL) >> 52) & (LI_BUCKETS - 1);
}

static li_recv *recv_table[LI_BUCKETS];

LI_HIDDEN li_recv *li_recv_find(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        return NULL;
    for (li_recv *r = recv_table[bucket(req)]; r; r = r->hnext)
        if (r->req == req)
            return r;
    return NULL;
}

static void pending_append(li_recv *r)
{
    li_comm *c = r->c;
    r->next = NULL;
    r->prev = c->pending_tail;
    if (c->pending_tail)
        c->pending_tail->next = r;
    else
        c->pending_head = r;
    c->pending_tail = r;
}

static void pending_remove(li_recv *r)
{
    li_comm *c = r->c;
    if (r->prev)
        r->prev->next = r->next;
    else if (c->pending_head == r)
        c->pending_head = r->next;
    else
        return; /* not in the list */
    if (r->next)
        r->next->prev = r->prev;
    else
        c->pending_tail = r->prev;
    r->prev = r->next = NULL;
}

LI_HIDDEN li_recv *li_recv_post(MPI_Request req, li_comm *c, int source, int tag, int persistent)
{
    li_recv *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->req = req;
    r->c = c;
    r->source = source;
    r->tag = tag;
    r->persistent = persistent;
    c->refs++;
    unsigned b = bucket(req);
    r->hnext = recv_table[b];
    recv_table[b] = r;
    if (persistent) {
        r->state = LI_IDLE;
    } else {
        li_recv_start(r);
    }
    return r;
}

LI_HIDDEN void li_recv_start(li_recv *r)
{
    r->state = LI_POSTED;
    r->t_post = li_now();
    r->t_incomplete = LI_NEVER;
    r->release = LI_NEVER;
    pending_append(r);
}

static void unhash(li_recv *r)
{
    li_recv **pp = &recv_table[bucket(r->req)];
    for (; *pp; pp = &(*pp)->hnext)
        if (*pp == r) {
            *pp = r->hnext;
            break;
        }
    pending_remove(r);
    li_comm_release(r->c);
    free(r);
}

LI_HIDDEN void li_recv_finished(li_recv *r)
{
    if (r->persistent)
        r->state = LI_IDLE;
    else
        unhash(r);
}

LI_HIDDEN void li_recv_forget(li_recv *r)
{
    if (r->state == LI_POSTED)
        li_st.orphaned_receives++;
    unhash(r);
}

static int admits(const li_recv *p, int source, int tag)
{
    return (p->source == MPI_ANY_SOURCE || p->source == source) &&
           (p->tag == MPI_ANY_TAG || p->tag == tag);
}

/*
 * Headers pair with messages in matching order, which per (source, tag) is FIFO. A receive
 * posted before `stop` that admits (source, tag) and is still pending must already be matched
 * (else MPI would have matched the later message to it), possibly to an earlier message from
 * (source, tag): it is waited for and paired first. Without such receives, the next header of
 * (source, tag) belongs to the message at hand.
 */
static void settle_earlier(li_comm *c, li_recv *stop, int source, int tag)
{
restart:
    for (li_recv *p = c->pending_head; p && p != stop; p = p->next) {
        if (p->state != LI_POSTED || !admits(p, source, tag))
            continue;
        MPI_Status st;
        int flag = 0;
        for (;;) {
            int64_t t0 = li_now();
            PMPI_Request_get_status(p->req, &flag, &st);
            if (flag)
                break;
            p->t_incomplete = t0;
            if (li_nbc_active())
                li_nbc_progress_all();
            li_relax();
        }
        li_recv_found(p, &st, li_now());
        goto restart;
    }
}

static li_prefetch *prefetched(li_comm *c, int source, int tag, li_prefetch ***link)
{
    li_prefetch **pp = &c->prefetched;
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->source == source && (*pp)->tag == tag) {
            if (link)
                *link = pp;
            return *pp;
        }
    if (link)
        *link = pp;
    return NULL;
}

static void take_header(li_comm *c, int source, int tag, li_header *h)
{
    li_prefetch **link = NULL;
    li_prefetch *p = prefetched(c, source, tag, &link);
    if (p != NULL) {
        *h = p->h;
        *link = p->next;
        free(p);
        return;
    }
    PMPI_Recv(h, (int)sizeof *h, MPI_BYTE, source, tag, c->hdr, MPI_STATUS_IGNORE);
}

LI_HIDDEN void li_recv_found(li_recv *r, const MPI_Status *st, int64_t c_time)
{
    int cancelled = 0;
    r->status = *st;
    PMPI_Test_cancelled(st, &cancelled);
    int source = st->MPI_SOURCE, tag = st->MPI_TAG;
    r->release = c_time;
    if (!cancelled && source >= 0) {
        settle_earlier(r->c, r, source, tag);
        li_header h;
        take_header(r->c, source, tag, &h);
        int n = 0;
        PMPI_Get_count(st, MPI_BYTE, &n);
        if ((int64_t)n != h.bytes && n != MPI_UNDEFINED)
            li_st.header_mismatches++;
        r->release =
            li_release_time(h.t_send, h.bytes, r->t_post, r->t_incomplete, c_time);
        li_st.messages_received++;
        if (r->release > c_time) {
            li_st.messages_delayed++;
            li_st.delay_added_ns += (double)(r->release - c_time);
        }
    }
    pending_remove(r);
    r->state = LI_FOUND;
}

LI_HIDDEN int li_recv_check(li_recv *r)
{
    if (r->state != LI_POSTED)
        return 1;
    MPI_Status st;
    int flag = 0;
    int64_t t0 = li_now();
    PMPI_Request_get_status(r->req, &flag, &st);
    if (!flag) {
        r->t_incomplete = t0;
        return 0;
    }
    li_recv_found(r, &st, li_now());
    return 1;
}

LI_HIDDEN int64_t li_probe_release(li_comm *c, int source, int tag, int64_t seen)
{
    if (source < 0)
        return LI_NEVER;
    settle_earlier(c, NULL, source, tag);
    li_prefetch **link = NULL;
    li_prefetch *p = prefetched(c, source, tag, &link);
    if (p == NULL) {
        p = calloc(1, sizeof *p);
        if (p == NULL)
            return LI_NEVER;
        p->source = source;
        p->tag = tag;
        PMPI_Recv(&p->h, (int)sizeof p->h, MPI_BYTE, source, tag, c->hdr, MPI_STATUS_IGNORE);
        *link = p; /* appended: FIFO per (source, tag) */
    }
    return li_release_time(p->h.t_send, p->h.bytes, LI_NEVER, LI_NEVER, seen);
}

/* ------------------------------------------------------------------ rendezvous sends */
struct li_send {
    MPI_Request req;
    int64_t t_send, bytes, t_incomplete, release;
    int found;
    struct li_send *hnext;
};

static li_send *send_table[LI_BUCKETS];

LI_HIDDEN void li_send_track(MPI_Request req, int64_t t_send, int64_t bytes)
{
    if (req == MPI_REQUEST_NULL || bytes <= li_cfg.S)
        return;
    li_send *s = calloc(1, sizeof *s);
    if (s == NULL)
        return;
    s->req = req;
    s->t_send = t_send;
    s->bytes = bytes;
    s->t_incomplete = LI_NEVER;
    unsigned b = bucket(req);
    s->hnext = send_table[b];
    send_table[b] = s;
}

LI_HIDDEN li_send *li_send_find(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        return NULL;
    for (li_send *s = send_table[bucket(req)]; s; s = s->hnext)
        if (s->req == req)
            return s;
    return NULL;
}

LI_HIDDEN int li_send_check(li_send *s)
{
    if (!s->found) {
        int flag = 0;
        int64_t t0 = li_now();
        PMPI_Request_get_status(s->req, &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            s->t_incomplete = t0;
            return 0;
        }
        s->release = li_send_release(s->t_send, s->bytes, s->t_incomplete, li_now());
        s->found = 1;
    }
    return li_now() >= s->release;
}

LI_HIDDEN void li_send_finished(li_send *s)
{
    li_send **pp = &send_table[bucket(s->req)];
    for (; *pp; pp = &(*pp)->hnext)
        if (*pp == s) {
            *pp = s->hnext;
            break;
        }
    free(s);
}

/* ------------------------------------------------------------------ persistent sends */
typedef struct li_psend {
    MPI_Request req;
    MPI_Comm comm;
    int dest, tag, count;
    MPI_Datatype type;
    int64_t t_start;
    struct li_psend *hnext;
} li_psend;

static li_psend *psend_table[LI_BUCKETS];

static li_psend *psend_find(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        return NULL;
    for (li_psend *p = psend_table[bucket(req)]; p; p = p->hnext)
        if (p->req == req)
            return p;
    return NULL;
}

LI_HIDDEN void li_psend_add(MPI_Request req, MPI_Comm comm, int dest, int tag, int count,
                            MPI_Datatype type)
{
    li_psend *p = calloc(1, sizeof *p);
    if (p == NULL)
        return;
    p->req = req;
    p->comm = comm;
    p->dest = dest;
    p->tag = tag;
    p->count = count;
    p->type = type;
    unsigned b = bucket(req);
    p->hnext = psend_table[b];
    psend_table[b] = p;
}

LI_HIDDEN int li_psend_start(MPI_Request req)
{
    li_psend *p = psend_find(req);
    if (p == NULL)
        return 0;
    li_comm *c = li_comm_get(p->comm);
    p->t_start = li_now();
    if (c)
        li_send_header(c, p->dest, p->tag, p->count, p->type, p->t_start);
    else
        li_note_passthrough("MPI_Start of a send on an unshadowed communicator");
    return 1;
}

LI_HIDDEN void li_psend_started(MPI_Request req)
{
    li_psend *p = psend_find(req);
    if (p != NULL && p->dest != MPI_PROC_NULL && li_comm_get(p->comm) != NULL)
        li_send_track(req, p->t_start, li_type_bytes(p->count, p->type));
}

LI_HIDDEN void li_psend_forget(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        return;
    li_psend **pp = &psend_table[bucket(req)];
    for (; *pp; pp = &(*pp)->hnext)
        if ((*pp)->req == req) {
            li_psend *p = *pp;
            *pp = p->hnext;
            free(p);
            return;
        }
}

/* ------------------------------------------------------------------ life cycle */
/* global - local clock in ns, measured against world rank 0 (round trip with the least delay
 * of several wins); 0 when every rank runs on one host, which shares CLOCK_MONOTONIC. */
static int64_t clock_offset(MPI_Comm comm)
{
    MPI_Comm node;
    int node_size = 0, local_ranks = 0;
    PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    PMPI_Comm_size(node, &node_size);
    local_ranks = node_size;
    PMPI_Comm_free(&node);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const char *y = getenv("LLAMP_INJECT_YIELD");
    li_cfg.yield = (y && *y) ? atoi(y) != 0 : (cpus > 0 && local_ranks > cpus);
    if (node_size == li_cfg.world_size)
        return 0;
    int64_t mine = 0, *all = NULL;
    const int tag = 7;
    if (li_cfg.world_rank == 0) {
        all = calloc((size_t)li_cfg.world_size, sizeof *all);
        for (int r = 1; r < li_cfg.world_size; r++) {
            int64_t best = INT64_MAX, offset = 0;
            for (int k = 0; k < 16; k++) {
                int64_t remote = 0, t0 = li_now();
                PMPI_Send(NULL, 0, MPI_BYTE, r, tag, comm);
                PMPI_Recv(&remote, 1, MPI_INT64_T, r, tag, comm, MPI_STATUS_IGNORE);
                int64_t t1 = li_now();
                if (t1 - t0 < best) {
                    best = t1 - t0;
                    offset = (t0 + t1) / 2 - remote;
                }
            }
            if (all)
                all[r] = offset;
        }
    } else {
        for (int k = 0; k < 16; k++) {
            PMPI_Recv(NULL, 0, MPI_BYTE, 0, tag, comm, MPI_STATUS_IGNORE);
            int64_t now = li_now();
            PMPI_Send(&now, 1, MPI_INT64_T, 0, tag, comm);
        }
    }
    PMPI_Scatter(all, 1, MPI_INT64_T, &mine, 1, MPI_INT64_T, 0, comm);
    free(all);
    return mine;
}

/* "bytes:one_way:send,..." with increasing sizes; ignored (with a message) if malformed */
static void parse_times(const char *text)
{
    li_cfg.ntable = 0;
    if (text == NULL || *text == '\0')
        return;
    const char *p = text;
    int n = 0;
    while (*p && n < 64) {
        char *end;
        double b = strtod(p, &end);
        if (end == p || *end != ':')
            break;
        double w = strtod(end + 1, &end);
        if (*end != ':')
            break;
        double snd = strtod(end + 1, &end);
        if (b < 0 || w < 0 || snd < 0 || (n > 0 && b <= li_cfg.table_bytes[n - 1]))
            break;
        li_cfg.table_bytes[n] = b;
        li_cfg.table_oneway[n] = w;
        li_cfg.table_send[n] = snd;
        n++;
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            break;
    }
    if (*p != '\0' || n == 0) {
        fprintf(stderr, "llamp inject: ignoring malformed LLAMP_INJECT_TIMES (want "
                        "bytes:one_way_ns:send_ns,... by increasing size)\n");
        return;
    }
    li_cfg.ntable = n;
}

LI_HIDDEN void li_start(void)
{
    memset(&li_st, 0, sizeof li_st);
    li_cfg.delta_ns = (int64_t)env_double("LLAMP_INJECT_DELTA_NS", 0.0);
    li_cfg.passive = env_double("LLAMP_INJECT_PASSIVE", 0.0) != 0.0;
    if (li_cfg.passive)
        li_cfg.delta_ns = 0;
    li_cfg.L_ns = env_double("LLAMP_INJECT_L_NS", 500.0);
    li_cfg.o_ns = env_double("LLAMP_INJECT_O_NS", 200.0);
    li_cfg.G_ns = env_double("LLAMP_INJECT_G_NS", 0.1);
    parse_times(getenv("LLAMP_INJECT_TIMES"));
    double S = env_double("LLAMP_INJECT_S", -1.0);
    li_cfg.S = S < 0 || S >= 9.2e18 ? INT64_MAX : (int64_t)S;
    const char *rendezvous = getenv("LLAMP_INJECT_RENDEZVOUS");
    li_cfg.polled = rendezvous != NULL && strcmp(rendezvous, "polled") == 0;
    const char *dir = getenv("LLAMP_INJECT_REPORT");
    snprintf(report_dir, sizeof report_dir, "%s", dir ? dir : "");
    PMPI_Comm_rank(MPI_COMM_WORLD, &li_cfg.world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &li_cfg.world_size);
    li_comms_init();
    li_cfg.active = 1;
    li_comm *world = li_comm_get(MPI_COMM_WORLD);
    li_cfg.offset_ns = clock_offset(world->coll);
    PMPI_Barrier(world->coll);
    li_cfg.t_init_end = li_now();
}

static void write_report(int64_t t_fin)
{
    char path[4200];
    if (report_dir[0] == '\0')
        return;
    mkdir(report_dir, 0755);
    snprintf(path, sizeof path, "%s/inject-rank-%d.json", report_dir, li_cfg.world_rank);
    FILE *fh = fopen(path, "w");
    if (fh == NULL) {
        fprintf(stderr, "llamp inject: rank %d: cannot write %s: %s\n", li_cfg.world_rank, path,
                strerror(errno));
        return;
    }
    fprintf(fh,
            "{\"rank\": %d, \"ranks\": %d, \"runtime_ns\": %lld, \"delta_ns\": %lld,\n"
            " \"base_L_ns\": %.3f, \"base_o_ns\": %.3f, \"base_G_ns_per_byte\": %.6f,\n"
            " \"rendezvous_S_bytes\": %lld, \"measured_times\": %d,\n"
            " \"clock_offset_ns\": %lld, \"yield\": %d,\n"
            " \"messages_sent\": %llu, \"bytes_sent\": %llu, \"messages_received\": %llu,\n"
            " \"messages_delayed\": %llu, \"delay_added_ns\": %.0f,\n"
            " \"collectives\": %llu, \"collective_messages\": %llu,\n"
            " \"passthrough_calls\": %llu, \"header_mismatches\": %llu,\n"
            " \"orphaned_receives\": %llu, \"probes_delayed\": %llu}\n",
            li_cfg.world_rank, li_cfg.world_size, (long long)(t_fin - li_cfg.t_init_end),
            (long long)li_cfg.delta_ns, li_cfg.L_ns, li_cfg.o_ns, li_cfg.G_ns,
            (long long)(li_cfg.S == INT64_MAX ? -1 : li_cfg.S), li_cfg.ntable,
            (long long)li_cfg.offset_ns, li_cfg.yield,
            (unsigned long long)li_st.messages_sent, (unsigned long long)li_st.bytes_sent,
            (unsigned long long)li_st.messages_received,
            (unsigned long long)li_st.messages_delayed, li_st.delay_added_ns,
            (unsigned long long)li_st.collectives, (unsigned long long)li_st.collective_messages,
            (unsigned long long)li_st.passthrough_calls,
            (unsigned long long)li_st.header_mismatches,
            (unsigned long long)li_st.orphaned_receives,
            (unsigned long long)li_st.probes_delayed);
    fclose(fh);
}

LI_HIDDEN void li_finish(void)
{
    int64_t t_fin = li_now();
    if (!li_cfg.active)
        return;
    write_report(t_fin);
    li_cfg.active = 0;
    li_comms_finish();
}
