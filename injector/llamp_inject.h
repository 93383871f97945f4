/*
 * llamp latency injector: a PMPI library (LD_PRELOAD) that adds ΔL to every point-to-point
 * message at flow level on the receiver side (LLAMP paper §III-A, Fig. 8D).
 *
 * Every message carries the time its send started (a 16-byte header sent just before it on a
 * shadow communicator, same destination and tag). When the receiver finds the receive complete
 * it estimates the arrival time a (li_release_time) and releases the completion to the
 * application only at a + ΔL. Each receive has its own release time, so back-to-back messages
 * are delayed concurrently, not one after another, and the sender of an eager message is never
 * delayed. Messages above the emulated network's S get the LogGPS rendezvous increments
 * (inject_core.c).
 * Collectives run inside the library over the same delayed point-to-point messages, with the
 * algorithms the execution graph uses (llamp.ingest.collectives.DEFAULTS).
 *
 * Design choices:
 * - Piggyback: a separate 16-byte header message {send start, bytes} on a duplicate ("shadow")
 *   of the application's communicator, same destination and tag, sent just before the data.
 *   The data message is untouched (no copy, no derived datatype, statuses and probes stay
 *   exact). Pairing: headers and messages are both FIFO per (source, tag); the receiver pairs
 *   them in matching order, settling earlier-posted receives that could have matched first
 *   (see settle_earlier in inject_core.c), which also covers MPI_ANY_SOURCE/MPI_ANY_TAG.
 *   Cost: one extra small eager message per message (measured by benchmarks/bench_injector.py,
 *   a few hundred ns on shared memory here), paid at every ΔL including 0.
 * - Delay: no separate delay thread. A receive's completion is visible to the application
 *   only inside an MPI call (Recv, Wait*, Test*, Request_get_status, Probe), so each of them
 *   compares the receive's own release time with the clock and keeps it "incomplete" until
 *   then. Every message has its own release time, which is what the paper's delay thread
 *   provides (Fig. 8D: no serialisation of back-to-back messages, sender never delayed), with
 *   no thread wake-up jitter and no MPI_THREAD_MULTIPLE requirement.
 * - Collectives: rebuilt over the library's own delayed point-to-point messages with the
 *   graph's algorithms (inject_coll.c).
 * Limits: C bindings only (Fortran calls pass through undelayed); one thread calling MPI at a
 * time (MPI_THREAD_MULTIPLE programs calling MPI concurrently are not supported);
 * intercommunicators, MPI_Alltoallw, neighbourhood collectives and non-commutative
 * reduce/reduce_scatter pass through (counted in the report as passthrough_calls).
 *
 * Files: inject_core.c (clock, configuration, communicator shadows, receive records, release
 * logic, report), inject_p2p.c (point-to-point, completion and probe wrappers), inject_coll.c
 * (collective schedules, blocking and non-blocking collectives).
 */
#ifndef LLAMP_INJECT_H
#define LLAMP_INJECT_H

#include <mpi.h>
#include <stdint.h>

#if defined(__GNUC__)
#define LI_HIDDEN __attribute__((visibility("hidden")))
#else
#define LI_HIDDEN
#endif

#define LI_NEVER INT64_MIN

/* ------------------------------------------------------------------ configuration, clock */
typedef struct {
    int64_t delta_ns;     /* ΔL added to every message */
    int passive;          /* 1: release every message when MPI completes it (no delay arithmetic) */
    double L_ns, o_ns, G_ns; /* base LogGP of this machine (arrival estimates) */
    int64_t S;            /* rendezvous threshold of the emulated LogGPS network (bytes) */
    int polled;           /* 1: a receiver answers a rendezvous request only inside MPI */
    int ntable;           /* measured times by size (llamp calibrate), 0 if none given: */
    double table_bytes[64], table_oneway[64], table_send[64]; /* one-way, MPI_Send duration */
    int yield;            /* sched_yield() while spinning (more ranks than cores here) */
    int world_rank, world_size;
    int64_t offset_ns;    /* global clock = local clock + offset_ns (0 on one host) */
    int64_t t_init_end;   /* local clock, end of MPI_Init (after a barrier) */
    int active;           /* between MPI_Init and MPI_Finalize */
} li_config;

extern LI_HIDDEN li_config li_cfg;

typedef struct {
    uint64_t messages_sent, bytes_sent;
    uint64_t messages_received, messages_delayed;
    double delay_added_ns;    /* Σ (release − time the completion was found), where positive */
    uint64_t collectives, collective_messages;
    uint64_t passthrough_calls; /* calls executed without delay (see li_note_passthrough) */
    uint64_t header_mismatches; /* header size ≠ received size: pairing lost (see README) */
    uint64_t orphaned_receives; /* active receives freed with MPI_Request_free */
    uint64_t probes_delayed;
} li_stats;

extern LI_HIDDEN li_stats li_st;

LI_HIDDEN int64_t li_now(void); /* CLOCK_MONOTONIC, ns */
LI_HIDDEN void li_relax(void);  /* one iteration of a spin-wait */
LI_HIDDEN void li_note_passthrough(const char *what);

/* ------------------------------------------------------------------ communicators */
typedef struct li_recv li_recv;
typedef struct li_prefetch li_prefetch;

typedef struct li_comm {
    MPI_Comm hdr;   /* headers of the application's point-to-point messages */
    MPI_Comm coll;  /* the library's collective messages and their headers */
    int rank, size;
    int commutes_checked;
    uint32_t coll_seq;             /* collective instance counter (same order at all members) */
    li_recv *pending_head, *pending_tail; /* posted receives, not yet found complete */
    li_prefetch *prefetched;       /* headers read ahead by a probe, FIFO per (source, tag) */
    int refs;                      /* the attribute + live receive records */
} li_comm;

LI_HIDDEN li_comm *li_comm_get(MPI_Comm comm); /* NULL: not shadowed (inter, unknown) */
LI_HIDDEN void li_comm_register(MPI_Comm comm);
LI_HIDDEN void li_comm_release(li_comm *c);
LI_HIDDEN void li_comms_init(void);
LI_HIDDEN void li_comms_finish(void);

/* ------------------------------------------------------------------ messages */
typedef struct {
    int64_t t_send; /* global clock, start of the send call */
    int64_t bytes;  /* payload */
} li_header;

LI_HIDDEN void li_send_header(li_comm *c, int dest, int tag, int count, MPI_Datatype type,
                              int64_t t_send);
/* Local time a receive is released: a message of `bytes` whose send started at global time
 * t_send, posted at local time t_post, found complete at c_time and last seen incomplete at
 * t_incomplete (LI_NEVER if never). See inject_core.c. */
LI_HIDDEN int64_t li_release_time(int64_t t_send, int64_t bytes, int64_t t_post,
                                  int64_t t_incomplete, int64_t c_time);
/* Local time a send of `bytes` (started at local t_send) is released; c_time if eager. */
LI_HIDDEN int64_t li_send_release(int64_t t_send, int64_t bytes, int64_t t_incomplete,
                                  int64_t c_time);
LI_HIDDEN int64_t li_type_bytes(int count, MPI_Datatype type);
/* The rank's time inside MPI calls that can wait (sends, receives, waits, tests, probes,
 * blocking collectives), kept under the polled rendezvous only: when a receiver answers a
 * request (inject_core.c answered()). LI_IN_MPI at the top of such a wrapper marks the call
 * from there to every return (nested calls count once). */
LI_HIDDEN int64_t li_enter(void);
LI_HIDDEN void li_leave(int64_t *entered);
#define LI_IN_MPI int64_t li_in_mpi_ __attribute__((cleanup(li_leave), unused)) = li_enter()
LI_HIDDEN void li_wait_until(int64_t release); /* spin (progressing collectives) until then */

/* ------------------------------------------------------------------ receive records */
enum { LI_POSTED = 1, LI_FOUND = 2, LI_IDLE = 3 };

struct li_recv {
    MPI_Request req;   /* the MPI request the application holds */
    li_comm *c;
    int source, tag;   /* as posted (may be wildcards) */
    int persistent;
    int state;         /* LI_POSTED, LI_FOUND (complete, release known), LI_IDLE (inactive) */
    int64_t t_post;    /* local time it was posted (started) */
    int64_t t_incomplete; /* last local time a check found it incomplete */
    int64_t release;   /* local time the completion is released */
    MPI_Status status; /* the completed receive's status */
    li_recv *prev, *next;   /* pending list of the communicator (posting order) */
    li_recv *hnext;         /* hash chain */
};

LI_HIDDEN li_recv *li_recv_find(MPI_Request req);
LI_HIDDEN li_recv *li_recv_post(MPI_Request req, li_comm *c, int source, int tag, int persistent);
LI_HIDDEN void li_recv_start(li_recv *r);   /* a persistent receive (re)started */
LI_HIDDEN void li_recv_finished(li_recv *r); /* after PMPI_Wait released it */
LI_HIDDEN void li_recv_forget(li_recv *r);   /* MPI_Request_free */
/* Check once; 1 when the receive is complete (r->release then holds its release time). */
LI_HIDDEN int li_recv_check(li_recv *r);
/* Found complete with status st at local time c_time: pair it with its header, in matching
 * order, and compute the release time. */
LI_HIDDEN void li_recv_found(li_recv *r, const MPI_Status *st, int64_t c_time);
/* Release time of a message visible to a probe from (source, tag) on c (reads its header
 * ahead). Returns LI_NEVER for MPI_PROC_NULL or a message without header. */
LI_HIDDEN int64_t li_probe_release(li_comm *c, int source, int tag, int64_t seen);

/* rendezvous sends (bytes > S): held back like the LogGPS handshake would (inject_core.c) */
typedef struct li_send li_send;
LI_HIDDEN void li_send_track(MPI_Request req, int64_t t_send, int64_t bytes);
LI_HIDDEN li_send *li_send_find(MPI_Request req);
LI_HIDDEN int li_send_check(li_send *s); /* 1 when complete and released */
LI_HIDDEN void li_send_finished(li_send *s);

/* persistent sends: dest/tag/comm remembered for the header sent at each MPI_Start */
LI_HIDDEN void li_psend_add(MPI_Request req, MPI_Comm comm, int dest, int tag, int count,
                            MPI_Datatype type);
LI_HIDDEN int li_psend_start(MPI_Request req); /* 1 if it was a persistent send */
LI_HIDDEN void li_psend_started(MPI_Request req); /* after PMPI_Start: track if rendezvous */
LI_HIDDEN void li_psend_forget(MPI_Request req);

/* ------------------------------------------------------------------ collectives (inject_coll.c) */
typedef struct li_sched li_sched;
LI_HIDDEN li_sched *li_nbc_find(MPI_Request req);
LI_HIDDEN int li_nbc_check(li_sched *s);  /* progress; 1 when complete */
LI_HIDDEN void li_nbc_finished(li_sched *s); /* after PMPI_Wait freed its generalised request */
LI_HIDDEN void li_nbc_progress_all(void);
LI_HIDDEN int li_nbc_active(void);

/* ------------------------------------------------------------------ life cycle */
LI_HIDDEN void li_start(void);
LI_HIDDEN void li_finish(void);

#endif /* LLAMP_INJECT_H */
