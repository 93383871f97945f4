/*
 * llamp PMPI tracer: traced cores (shared with the Fortran wrappers) and the C entry points.
 *
 * Each core times the PMPI call and writes one liballprof record with the arguments in C
 * prototype order (docs/formats.md). Conventions beyond liballprof:
 *
 * - Arguments that MPI declares not significant at this rank (the receive side of Gather at a
 *   non-root, the send side of Scatter at a non-root, the send count/type with MPI_IN_PLACE)
 *   are printed as count 0 and datatype 0,0,0: they may be garbage, and their datatype must
 *   not be queried. Count arrays that are not significant are printed as the pointer alone.
 *   MPI_Alltoallv with MPI_IN_PLACE prints the receive counts for the send side (what moves).
 * - Out-arguments that say which requests completed are printed after their address, as
 *   count arrays are: Waitany/Testany "index*:<i>", Waitsome/Testsome "outcount*:<n>" and
 *   "indices*:<i0>,...,<i_{n-1}>" (0-based, also from Fortran), Test/Testall/Testany
 *   "flag*:<f>" (one field more than liballprof prints; the reader takes both layouts).
 *
 * Recorded: Init, Init_thread, Finalize (Abort: no record, the buffer is written out); Send,
 * Ssend, Rsend, Bsend, Recv, Isend, Issend, Irsend, Ibsend, Irecv, the five *_init, Start,
 * Startall, Request_free, Cancel, Sendrecv, Sendrecv_replace, Probe, Iprobe; Wait, Waitall,
 * Waitany, Waitsome, Test, Testall, Testany, Testsome; Barrier, Bcast, Reduce, Allreduce, Scan,
 * Exscan, Allgather(v), Alltoall(v), Gather(v), Scatter(v), Reduce_scatter(_block), and the
 * non-blocking version of each (Ibarrier, Ibcast, …, Ireduce_scatter_block: the blocking record
 * plus the request); Comm_rank, Comm_size, Comm_split, Comm_split_type, Comm_dup,
 * Comm_dup_with_info, Comm_idup, Comm_create, Comm_create_group, Comm_free, Cart_create,
 * Cart_sub, Graph_create, Dist_graph_create(_adjacent), Intercomm_merge.
 * Fortran (wrap_f.c, Open MPI): the same without Comm_idup, Comm_dup_with_info,
 * Comm_create_group, the graph topologies and Intercomm_merge.
 */
#include <stdlib.h>

#include "llamp_trace.h"

#define TIMED(call)               \
    double t0 = lt_now();         \
    int rc = (call);              \
    double t1 = lt_now()

static int comm_rank(MPI_Comm comm)
{
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    return rank;
}

static int comm_size(MPI_Comm comm)
{
    int size = 0;
    PMPI_Comm_size(comm, &size);
    return size;
}

static int is_root(MPI_Comm comm, int root)
{
    return root == MPI_ROOT || comm_rank(comm) == root;
}

static void p2p_args(const void *buf, int count, MPI_Datatype type, int peer, int tag,
                     MPI_Comm comm)
{
    lt_ptr(buf);
    lt_int(count);
    lt_dtype(type);
    lt_int(peer);
    lt_int(tag);
    lt_comm(comm);
}

/* count and type of a buffer that MPI_IN_PLACE voids (then not significant) */
static void counted_side(const void *sbuf, int scount, MPI_Datatype stype)
{
    if (sbuf == MPI_IN_PLACE) {
        lt_int(0);
        lt_dtype_unused();
    } else {
        lt_int(scount);
        lt_dtype(stype);
    }
}

/* ================================================================== cores: life cycle */
LT_HIDDEN int lt_init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        lt_start(MPI_THREAD_SINGLE);
    double t1 = lt_now();
    if (lt_on) {
        lt_begin_init("MPI_Init");
        lt_ptr(argc);
        lt_ptr(argv);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        lt_start(*provided);
    double t1 = lt_now();
    if (lt_on) {
        lt_begin_init("MPI_Init_thread");
        lt_ptr(argc);
        lt_ptr(argv);
        lt_int(required);
        lt_ptr(provided);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_finalize(void)
{
    lt_finish(lt_now());
    return PMPI_Finalize();
}

/* ================================================================== cores: point to point */
LT_HIDDEN int lt_send(const char *name, lt_send_fn fn, const void *buf, int count,
                      MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    TIMED(fn(buf, count, type, dest, tag, comm));
    if (lt_on) {
        lt_begin(name, t0);
        p2p_args(buf, count, type, dest, tag, comm);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                      MPI_Status *status, const void *status_log)
{
    TIMED(PMPI_Recv(buf, count, type, source, tag, comm, status));
    if (lt_on) {
        lt_begin("MPI_Recv", t0);
        p2p_args(buf, count, type, source, tag, comm);
        lt_ptr(status_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_isend(const char *name, lt_isend_fn fn, const void *buf, int count,
                       MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *request,
                       const void *request_log)
{
    TIMED(fn(buf, count, type, dest, tag, comm, request));
    if (lt_on) {
        lt_begin(name, t0);
        p2p_args(buf, count, type, dest, tag, comm);
        lt_ptr(request_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_irecv(const char *name, lt_irecv_fn fn, void *buf, int count, MPI_Datatype type,
                       int source, int tag, MPI_Comm comm, MPI_Request *request,
                       const void *request_log)
{
    TIMED(fn(buf, count, type, source, tag, comm, request));
    if (lt_on) {
        lt_begin(name, t0);
        p2p_args(buf, count, type, source, tag, comm);
        lt_ptr(request_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                          void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag,
                          MPI_Comm comm, MPI_Status *status, const void *status_log)
{
    TIMED(PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm,
                        status));
    if (lt_on) {
        lt_begin("MPI_Sendrecv", t0);
        lt_ptr(sbuf);
        lt_int(scount);
        lt_dtype(stype);
        lt_int(dest);
        lt_int(stag);
        lt_ptr(rbuf);
        lt_int(rcount);
        lt_dtype(rtype);
        lt_int(source);
        lt_int(rtag);
        lt_comm(comm);
        lt_ptr(status_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag,
                                  int source, int rtag, MPI_Comm comm, MPI_Status *status,
                                  const void *status_log)
{
    TIMED(PMPI_Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status));
    if (lt_on) {
        lt_begin("MPI_Sendrecv_replace", t0);
        lt_ptr(buf);
        lt_int(count);
        lt_dtype(type);
        lt_int(dest);
        lt_int(stag);
        lt_int(source);
        lt_int(rtag);
        lt_comm(comm);
        lt_ptr(status_log);
        lt_end(t1);
    }
    return rc;
}

/* ================================================================== cores: completion */
LT_HIDDEN int lt_wait(MPI_Request *request, MPI_Status *status, const void *request_log,
                      const void *status_log)
{
    TIMED(PMPI_Wait(request, status));
    if (lt_on) {
        lt_begin("MPI_Wait", t0);
        lt_ptr(request_log);
        lt_ptr(status_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_waitall(int count, MPI_Request *requests, MPI_Status *statuses,
                         const void *requests_log, const void *statuses_log)
{
    TIMED(PMPI_Waitall(count, requests, statuses));
    if (lt_on) {
        lt_begin("MPI_Waitall", t0);
        lt_int(count);
        lt_ptr(requests_log);
        lt_ptr(statuses_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_waitany(int count, MPI_Request *requests, int *index, MPI_Status *status,
                         const void *requests_log, const void *index_log,
                         const void *status_log)
{
    TIMED(PMPI_Waitany(count, requests, index, status));
    if (lt_on) {
        lt_begin("MPI_Waitany", t0);
        lt_int(count);
        lt_ptr(requests_log);
        lt_ptr(index_log);
        lt_int(*index);
        lt_ptr(status_log);
        lt_end(t1);
    }
    return rc;
}

static void some_args(int incount, const void *requests_log, int outcount,
                      const void *outcount_log, const int *indices, const void *indices_log,
                      const void *statuses_log)
{
    lt_int(incount);
    lt_ptr(requests_log);
    lt_ptr(outcount_log);
    lt_int(outcount);
    lt_counts(indices_log, indices, outcount == MPI_UNDEFINED ? 0 : outcount);
    lt_ptr(statuses_log);
}

LT_HIDDEN int lt_waitsome(int incount, MPI_Request *requests, int *outcount, int *indices,
                          MPI_Status *statuses, const void *requests_log,
                          const void *outcount_log, const void *indices_log,
                          const void *statuses_log)
{
    TIMED(PMPI_Waitsome(incount, requests, outcount, indices, statuses));
    if (lt_on) {
        lt_begin("MPI_Waitsome", t0);
        some_args(incount, requests_log, *outcount, outcount_log, indices, indices_log,
                  statuses_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_test(MPI_Request *request, int *flag, MPI_Status *status,
                      const void *request_log, const void *flag_log, const void *status_log)
{
    TIMED(PMPI_Test(request, flag, status));
    if (lt_on) {
        lt_begin("MPI_Test", t0);
        lt_ptr(request_log);
        lt_ptr(flag_log);
        lt_int(*flag);
        lt_ptr(status_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_testall(int count, MPI_Request *requests, int *flag, MPI_Status *statuses,
                         const void *requests_log, const void *flag_log,
                         const void *statuses_log)
{
    TIMED(PMPI_Testall(count, requests, flag, statuses));
    if (lt_on) {
        lt_begin("MPI_Testall", t0);
        lt_int(count);
        lt_ptr(requests_log);
        lt_ptr(flag_log);
        lt_int(*flag);
        lt_ptr(statuses_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_testany(int count, MPI_Request *requests, int *index, int *flag,
                         MPI_Status *status, const void *requests_log, const void *index_log,
                         const void *flag_log, const void *status_log)
{
    TIMED(PMPI_Testany(count, requests, index, flag, status));
    if (lt_on) {
        lt_begin("MPI_Testany", t0);
        lt_int(count);
        lt_ptr(requests_log);
        lt_ptr(index_log);
        lt_int(*index);
        lt_ptr(flag_log);
        lt_int(*flag);
        lt_ptr(status_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_testsome(int incount, MPI_Request *requests, int *outcount, int *indices,
                          MPI_Status *statuses, const void *requests_log,
                          const void *outcount_log, const void *indices_log,
                          const void *statuses_log)
{
    TIMED(PMPI_Testsome(incount, requests, outcount, indices, statuses));
    if (lt_on) {
        lt_begin("MPI_Testsome", t0);
        some_args(incount, requests_log, *outcount, outcount_log, indices, indices_log,
                  statuses_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_start_request(MPI_Request *request, const void *request_log)
{
    TIMED(PMPI_Start(request));
    if (lt_on) {
        lt_begin("MPI_Start", t0);
        lt_ptr(request_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_startall(int count, MPI_Request *requests, const void *requests_log)
{
    TIMED(PMPI_Startall(count, requests));
    if (lt_on) {
        lt_begin("MPI_Startall", t0);
        lt_int(count);
        lt_ptr(requests_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_request_free(MPI_Request *request, const void *request_log)
{
    TIMED(PMPI_Request_free(request));
    if (lt_on) {
        lt_begin("MPI_Request_free", t0);
        lt_ptr(request_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_cancel(MPI_Request *request, const void *request_log)
{
    TIMED(PMPI_Cancel(request));
    if (lt_on) {
        lt_begin("MPI_Cancel", t0);
        lt_ptr(request_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_probe(int source, int tag, MPI_Comm comm, MPI_Status *status,
                       const void *status_log)
{
    TIMED(PMPI_Probe(source, tag, comm, status));
    if (lt_on) {
        lt_begin("MPI_Probe", t0);
        lt_int(source);
        lt_int(tag);
        lt_comm(comm);
        lt_ptr(status_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status,
                        const void *flag_log, const void *status_log)
{
    TIMED(PMPI_Iprobe(source, tag, comm, flag, status));
    if (lt_on) {
        lt_begin("MPI_Iprobe", t0);
        lt_int(source);
        lt_int(tag);
        lt_comm(comm);
        lt_ptr(flag_log);
        lt_ptr(status_log);
        lt_end(t1);
    }
    return rc;
}

/* ================================================================== cores: collectives
 * Each core serves the blocking call (req NULL) and its non-blocking version, whose record is
 * the blocking one plus the request (req_log) before t_end. */
LT_HIDDEN int lt_barrier(MPI_Comm comm, MPI_Request *req, const void *req_log)
{
    TIMED(req ? PMPI_Ibarrier(comm, req)
              : PMPI_Barrier(comm));
    if (lt_on) {
        lt_begin(req ? "MPI_Ibarrier" : "MPI_Barrier", t0);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                       MPI_Request *req, const void *req_log)
{
    TIMED(req ? PMPI_Ibcast(buf, count, type, root, comm, req)
              : PMPI_Bcast(buf, count, type, root, comm));
    if (lt_on) {
        lt_begin(req ? "MPI_Ibcast" : "MPI_Bcast", t0);
        lt_ptr(buf);
        lt_int(count);
        lt_dtype(type);
        lt_int(root);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                        int root, MPI_Comm comm, MPI_Request *req, const void *req_log)
{
    TIMED(req ? PMPI_Ireduce(sbuf, rbuf, count, type, op, root, comm, req)
              : PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm));
    if (lt_on) {
        lt_begin(req ? "MPI_Ireduce" : "MPI_Reduce", t0);
        lt_ptr(sbuf);
        lt_ptr(rbuf);
        lt_int(count);
        lt_dtype(type);
        lt_op(op);
        lt_int(root);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_allreduce(const char *name, lt_reduce_fn fn, lt_ireduce_fn ifn, const void *sbuf,
                           void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                           MPI_Request *req, const void *req_log)
{
    TIMED(req ? ifn(sbuf, rbuf, count, type, op, comm, req)
              : fn(sbuf, rbuf, count, type, op, comm));
    if (lt_on) {
        lt_begin(name, t0);
        lt_ptr(sbuf);
        lt_ptr(rbuf);
        lt_int(count);
        lt_dtype(type);
        lt_op(op);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

typedef int (*gather_fn)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
typedef int (*igather_fn)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm,
                          MPI_Request *);

static int all_to_all(const char *name, gather_fn fn, igather_fn ifn, const void *sbuf, int scount,
                      MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                      MPI_Comm comm, MPI_Request *req, const void *req_log)
{
    TIMED(req ? ifn(sbuf, scount, stype, rbuf, rcount, rtype, comm, req)
              : fn(sbuf, scount, stype, rbuf, rcount, rtype, comm));
    if (lt_on) {
        lt_begin(name, t0);
        lt_ptr(sbuf);
        counted_side(sbuf, scount, stype);
        lt_ptr(rbuf);
        lt_int(rcount);
        lt_dtype(rtype);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                           int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req,
                           const void *req_log)
{
    return all_to_all(req ? "MPI_Iallgather" : "MPI_Allgather", PMPI_Allgather, PMPI_Iallgather,
                      sbuf, scount, stype, rbuf, rcount, rtype, comm, req, req_log);
}

LT_HIDDEN int lt_alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                          MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req,
                          const void *req_log)
{
    return all_to_all(req ? "MPI_Ialltoall" : "MPI_Alltoall", PMPI_Alltoall, PMPI_Ialltoall,
                      sbuf, scount, stype, rbuf, rcount, rtype, comm, req, req_log);
}

LT_HIDDEN int lt_gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                        MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req,
                        const void *req_log)
{
    TIMED(req ? PMPI_Igather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req)
              : PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
    if (lt_on) {
        int at_root = is_root(comm, root);
        lt_begin(req ? "MPI_Igather" : "MPI_Gather", t0);
        lt_ptr(sbuf);
        counted_side(sbuf, scount, stype);
        lt_ptr(rbuf);
        lt_int(at_root ? rcount : 0);
        if (at_root)
            lt_dtype(rtype);
        else
            lt_dtype_unused();
        lt_int(root);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                         MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req,
                         const void *req_log)
{
    TIMED(req ? PMPI_Iscatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req)
              : PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
    if (lt_on) {
        int at_root = is_root(comm, root);
        lt_begin(req ? "MPI_Iscatter" : "MPI_Scatter", t0);
        lt_ptr(sbuf);
        lt_int(at_root ? scount : 0);
        if (at_root)
            lt_dtype(stype);
        else
            lt_dtype_unused();
        lt_ptr(rbuf);
        counted_side(rbuf, rcount, rtype);
        lt_int(root);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                            const int *rcounts, const int *displs, MPI_Datatype rtype,
                            MPI_Comm comm, MPI_Request *req, const void *req_log)
{
    TIMED(req ? PMPI_Iallgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req)
              : PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm));
    if (lt_on) {
        int n = comm_size(comm);
        lt_begin(req ? "MPI_Iallgatherv" : "MPI_Allgatherv", t0);
        lt_ptr(sbuf);
        counted_side(sbuf, scount, stype);
        lt_ptr(rbuf);
        lt_counts(rcounts, rcounts, n);
        lt_counts(displs, displs, n);
        lt_dtype(rtype);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                         const int *rcounts, const int *displs, MPI_Datatype rtype, int root,
                         MPI_Comm comm, MPI_Request *req, const void *req_log)
{
    TIMED(req ? PMPI_Igatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, req)
              : PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm));
    if (lt_on) {
        int n = is_root(comm, root) ? comm_size(comm) : 0;
        lt_begin(req ? "MPI_Igatherv" : "MPI_Gatherv", t0);
        lt_ptr(sbuf);
        counted_side(sbuf, scount, stype);
        lt_ptr(rbuf);
        lt_counts(rcounts, rcounts, n);
        lt_counts(displs, displs, n);
        if (n)
            lt_dtype(rtype);
        else
            lt_dtype_unused();
        lt_int(root);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_scatterv(const void *sbuf, const int *scounts, const int *displs,
                          MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root,
                          MPI_Comm comm, MPI_Request *req, const void *req_log)
{
    TIMED(req ? PMPI_Iscatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, req)
              : PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm));
    if (lt_on) {
        int n = is_root(comm, root) ? comm_size(comm) : 0;
        lt_begin(req ? "MPI_Iscatterv" : "MPI_Scatterv", t0);
        lt_ptr(sbuf);
        lt_counts(scounts, scounts, n);
        lt_counts(displs, displs, n);
        if (n)
            lt_dtype(stype);
        else
            lt_dtype_unused();
        lt_ptr(rbuf);
        counted_side(rbuf, rcount, rtype);
        lt_int(root);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                           MPI_Datatype stype, void *rbuf, const int *rcounts, const int *rdispls,
                           MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req,
                           const void *req_log)
{
    TIMED(req ? PMPI_Ialltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm,
                                req)
              : PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm));
    if (lt_on) {
        int n = comm_size(comm);
        int in_place = sbuf == MPI_IN_PLACE;
        lt_begin(req ? "MPI_Ialltoallv" : "MPI_Alltoallv", t0);
        lt_ptr(sbuf);
        lt_counts(scounts, in_place ? rcounts : scounts, n);
        lt_counts(sdispls, in_place ? rdispls : sdispls, n);
        lt_dtype(in_place ? rtype : stype);
        lt_ptr(rbuf);
        lt_counts(rcounts, rcounts, n);
        lt_counts(rdispls, rdispls, n);
        lt_dtype(rtype);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *req,
                                const void *req_log)
{
    TIMED(req ? PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, type, op, comm, req)
              : PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm));
    if (lt_on) {
        lt_begin(req ? "MPI_Ireduce_scatter" : "MPI_Reduce_scatter", t0);
        lt_ptr(sbuf);
        lt_ptr(rbuf);
        lt_counts(rcounts, rcounts, comm_size(comm));
        lt_dtype(type);
        lt_op(op);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_reduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                                      MPI_Op op, MPI_Comm comm, MPI_Request *req,
                                      const void *req_log)
{
    TIMED(req ? PMPI_Ireduce_scatter_block(sbuf, rbuf, count, type, op, comm, req)
              : PMPI_Reduce_scatter_block(sbuf, rbuf, count, type, op, comm));
    if (lt_on) {
        lt_begin(req ? "MPI_Ireduce_scatter_block" : "MPI_Reduce_scatter_block", t0);
        lt_ptr(sbuf);
        lt_ptr(rbuf);
        lt_int(count);
        lt_dtype(type);
        lt_op(op);
        lt_comm(comm);
        if (req)
            lt_ptr(req_log);
        lt_end(t1);
    }
    return rc;
}

/* ================================================================== cores: communicators */
LT_HIDDEN int lt_comm_rank(MPI_Comm comm, int *rank, const void *rank_log)
{
    TIMED(PMPI_Comm_rank(comm, rank));
    if (lt_on) {
        lt_begin("MPI_Comm_rank", t0);
        lt_comm(comm);
        lt_ptr(rank_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_comm_size(MPI_Comm comm, int *size, const void *size_log)
{
    TIMED(PMPI_Comm_size(comm, size));
    if (lt_on) {
        lt_begin("MPI_Comm_size", t0);
        lt_comm(comm);
        lt_ptr(size_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm,
                            const void *newcomm_log)
{
    TIMED(PMPI_Comm_split(comm, color, key, newcomm));
    if (lt_on) {
        lt_begin("MPI_Comm_split", t0);
        lt_comm(comm);
        lt_int(color);
        lt_int(key);
        lt_ptr(newcomm_log);
        lt_end(t1);
        if (rc == MPI_SUCCESS)
            lt_comm_created(*newcomm);
    }
    return rc;
}

LT_HIDDEN int lt_comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                                 MPI_Comm *newcomm, const void *newcomm_log)
{
    TIMED(PMPI_Comm_split_type(comm, split_type, key, info, newcomm));
    if (lt_on) {
        lt_begin("MPI_Comm_split_type", t0);
        lt_comm(comm);
        lt_int(split_type);
        lt_int(key);
        lt_handle(LT_HANDLE(info));
        lt_ptr(newcomm_log);
        lt_end(t1);
        if (rc == MPI_SUCCESS)
            lt_comm_created(*newcomm);
    }
    return rc;
}

LT_HIDDEN int lt_comm_dup(MPI_Comm comm, MPI_Comm *newcomm, const void *newcomm_log)
{
    TIMED(PMPI_Comm_dup(comm, newcomm));
    if (lt_on) {
        lt_begin("MPI_Comm_dup", t0);
        lt_comm(comm);
        lt_ptr(newcomm_log);
        lt_end(t1);
        if (rc == MPI_SUCCESS)
            lt_comm_created(*newcomm);
    }
    return rc;
}

LT_HIDDEN int lt_comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm,
                             const void *newcomm_log)
{
    TIMED(PMPI_Comm_create(comm, group, newcomm));
    if (lt_on) {
        lt_begin("MPI_Comm_create", t0);
        lt_comm(comm);
        lt_handle(LT_HANDLE(group));
        lt_ptr(newcomm_log);
        lt_end(t1);
        if (rc == MPI_SUCCESS)
            lt_comm_created(*newcomm);
    }
    return rc;
}

LT_HIDDEN int lt_comm_free(MPI_Comm *comm, const void *comm_log)
{
    unsigned long handle = LT_HANDLE(*comm);
    TIMED(PMPI_Comm_free(comm));
    if (rc == MPI_SUCCESS)
        lt_comm_forget(handle);
    if (lt_on) {
        lt_begin("MPI_Comm_free", t0);
        lt_ptr(comm_log);
        lt_end(t1);
    }
    return rc;
}

LT_HIDDEN int lt_cart_create(MPI_Comm comm, int ndims, const int *dims, const int *periods,
                             int reorder, MPI_Comm *newcomm, const void *dims_log,
                             const void *periods_log, const void *newcomm_log)
{
    TIMED(PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm));
    if (lt_on) {
        lt_begin("MPI_Cart_create", t0);
        lt_comm(comm);
        lt_int(ndims);
        lt_ptr(dims_log);
        lt_ptr(periods_log);
        lt_int(reorder);
        lt_ptr(newcomm_log);
        lt_end(t1);
        if (rc == MPI_SUCCESS)
            lt_comm_created(*newcomm);
    }
    return rc;
}

LT_HIDDEN int lt_cart_sub(MPI_Comm comm, const int *remain, MPI_Comm *newcomm,
                          const void *remain_log, const void *newcomm_log)
{
    TIMED(PMPI_Cart_sub(comm, remain, newcomm));
    if (lt_on) {
        lt_begin("MPI_Cart_sub", t0);
        lt_comm(comm);
        lt_ptr(remain_log);
        lt_ptr(newcomm_log);
        lt_end(t1);
        if (rc == MPI_SUCCESS)
            lt_comm_created(*newcomm);
    }
    return rc;
}

/* ================================================================== C entry points */
int MPI_Init(int *argc, char ***argv) { return lt_init(argc, argv); }

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    return lt_init_thread(argc, argv, required, provided);
}

int MPI_Finalize(void) { return lt_finalize(); }

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    lt_note_abort(errorcode);
    return PMPI_Abort(comm, errorcode);
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    return lt_send("MPI_Send", PMPI_Send, buf, count, type, dest, tag, comm);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    return lt_send("MPI_Ssend", PMPI_Ssend, buf, count, type, dest, tag, comm);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    return lt_send("MPI_Rsend", PMPI_Rsend, buf, count, type, dest, tag, comm);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    return lt_send("MPI_Bsend", PMPI_Bsend, buf, count, type, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    return lt_recv(buf, count, type, source, tag, comm, status, status);
}

#define ISEND_ENTRY(Name)                                                                      \
    int MPI_##Name(const void *buf, int count, MPI_Datatype type, int dest, int tag,          \
                   MPI_Comm comm, MPI_Request *request)                                        \
    {                                                                                          \
        return lt_isend("MPI_" #Name, PMPI_##Name, buf, count, type, dest, tag, comm, request, \
                        request);                                                              \
    }

ISEND_ENTRY(Isend)
ISEND_ENTRY(Issend)
ISEND_ENTRY(Irsend)
ISEND_ENTRY(Ibsend)
ISEND_ENTRY(Send_init)
ISEND_ENTRY(Ssend_init)
ISEND_ENTRY(Rsend_init)
ISEND_ENTRY(Bsend_init)

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    return lt_irecv("MPI_Irecv", PMPI_Irecv, buf, count, type, source, tag, comm, request,
                    request);
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                  MPI_Request *request)
{
    return lt_irecv("MPI_Recv_init", PMPI_Recv_init, buf, count, type, source, tag, comm,
                    request, request);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                 void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                 MPI_Status *status)
{
    return lt_sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm,
                       status, status);
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag, int source,
                         int rtag, MPI_Comm comm, MPI_Status *status)
{
    return lt_sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status, status);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    return lt_wait(request, status, request, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    return lt_waitall(count, requests, statuses, requests, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    return lt_waitany(count, requests, index, status, requests, index, status);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    return lt_waitsome(incount, requests, outcount, indices, statuses, requests, outcount,
                       indices, statuses);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    return lt_test(request, flag, status, request, flag, status);
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    return lt_testall(count, requests, flag, statuses, requests, flag, statuses);
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    return lt_testany(count, requests, index, flag, status, requests, index, flag, status);
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    return lt_testsome(incount, requests, outcount, indices, statuses, requests, outcount,
                       indices, statuses);
}

int MPI_Start(MPI_Request *request) { return lt_start_request(request, request); }

int MPI_Startall(int count, MPI_Request requests[])
{
    return lt_startall(count, requests, requests);
}

int MPI_Request_free(MPI_Request *request) { return lt_request_free(request, request); }

int MPI_Cancel(MPI_Request *request) { return lt_cancel(request, request); }

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    return lt_probe(source, tag, comm, status, status);
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    return lt_iprobe(source, tag, comm, flag, status, flag, status);
}

int MPI_Barrier(MPI_Comm comm) { return lt_barrier(comm, NULL, NULL); }

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    return lt_bcast(buf, count, type, root, comm, NULL, NULL);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm)
{
    return lt_reduce(sbuf, rbuf, count, type, op, root, comm, NULL, NULL);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    return lt_allreduce("MPI_Allreduce", PMPI_Allreduce, PMPI_Iallreduce, sbuf, rbuf, count, type,
                        op, comm, NULL, NULL);
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
             MPI_Comm comm)
{
    return lt_allreduce("MPI_Scan", PMPI_Scan, PMPI_Iscan, sbuf, rbuf, count, type, op, comm,
                        NULL, NULL);
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm)
{
    return lt_allreduce("MPI_Exscan", PMPI_Exscan, PMPI_Iexscan, sbuf, rbuf, count, type, op,
                        comm, NULL, NULL);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm)
{
    return lt_allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, NULL, NULL);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm)
{
    return lt_alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, NULL, NULL);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm)
{
    return lt_gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, NULL, NULL);
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm)
{
    return lt_scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, NULL, NULL);
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    return lt_allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, NULL, NULL);
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                MPI_Comm comm)
{
    return lt_gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, NULL, NULL);
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                 void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    return lt_scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, NULL, NULL);
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                  MPI_Comm comm)
{
    return lt_alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, NULL,
                        NULL);
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type,
                       MPI_Op op, MPI_Comm comm)
{
    return lt_reduce_scatter(sbuf, rbuf, rcounts, type, op, comm, NULL, NULL);
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm)
{
    return lt_reduce_scatter_block(sbuf, rbuf, count, type, op, comm, NULL, NULL);
}

int MPI_Comm_rank(MPI_Comm comm, int *rank) { return lt_comm_rank(comm, rank, rank); }

int MPI_Comm_size(MPI_Comm comm, int *size) { return lt_comm_size(comm, size, size); }

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    return lt_comm_split(comm, color, key, newcomm, newcomm);
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    return lt_comm_split_type(comm, split_type, key, info, newcomm, newcomm);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) { return lt_comm_dup(comm, newcomm, newcomm); }

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    return lt_comm_create(comm, group, newcomm, newcomm);
}

int MPI_Comm_free(MPI_Comm *comm) { return lt_comm_free(comm, comm); }

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                    MPI_Comm *newcomm)
{
    return lt_cart_create(comm, ndims, dims, periods, reorder, newcomm, dims, periods, newcomm);
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    return lt_cart_sub(comm, remain_dims, newcomm, remain_dims, newcomm);
}

/* C-only: communicator creators without a Fortran wrapper */
int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    TIMED(PMPI_Comm_dup_with_info(comm, info, newcomm));
    if (lt_on) {
        lt_begin("MPI_Comm_dup_with_info", t0);
        lt_comm(comm);
        lt_handle(LT_HANDLE(info));
        lt_ptr(newcomm);
        lt_end(t1);
        if (rc == MPI_SUCCESS)
            lt_comm_created(*newcomm);
    }
    return rc;
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    TIMED(PMPI_Comm_create_group(comm, group, tag, newcomm));
    if (lt_on) {
        lt_begin("MPI_Comm_create_group", t0);
        lt_comm(comm);
        lt_handle(LT_HANDLE(group));
        lt_int(tag);
        lt_ptr(newcomm);
        lt_end(t1);
        if (rc == MPI_SUCCESS)
            lt_comm_created(*newcomm);
    }
    return rc;
}

/* the new communicator is usable once the request completes: it is defined at its first use */
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    TIMED(PMPI_Comm_idup(comm, newcomm, request));
    if (lt_on) {
        lt_begin("MPI_Comm_idup", t0);
        lt_comm(comm);
        lt_ptr(newcomm);
        lt_ptr(request);
        lt_end(t1);
    }
    return rc;
}

int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder,
                     MPI_Comm *newcomm)
{
    TIMED(PMPI_Graph_create(comm, nnodes, index, edges, reorder, newcomm));
    if (lt_on) {
        lt_begin("MPI_Graph_create", t0);
        lt_comm(comm);
        lt_int(nnodes);
        lt_ptr(index);
        lt_ptr(edges);
        lt_int(reorder);
        lt_ptr(newcomm);
        lt_end(t1);
        if (rc == MPI_SUCCESS)
            lt_comm_created(*newcomm);
    }
    return rc;
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                   const int sourceweights[], int outdegree,
                                   const int destinations[], const int destweights[],
                                   MPI_Info info, int reorder, MPI_Comm *newcomm)
{
    TIMED(PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree,
                                          destinations, destweights, info, reorder, newcomm));
    if (lt_on) {
        lt_begin("MPI_Dist_graph_create_adjacent", t0);
        lt_comm(comm);
        lt_int(indegree);
        lt_ptr(sources);
        lt_ptr(sourceweights);
        lt_int(outdegree);
        lt_ptr(destinations);
        lt_ptr(destweights);
        lt_handle(LT_HANDLE(info));
        lt_int(reorder);
        lt_ptr(newcomm);
        lt_end(t1);
        if (rc == MPI_SUCCESS)
            lt_comm_created(*newcomm);
    }
    return rc;
}

int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[],
                          const int destinations[], const int weights[], MPI_Info info,
                          int reorder, MPI_Comm *newcomm)
{
    TIMED(PMPI_Dist_graph_create(comm, n, sources, degrees, destinations, weights, info, reorder,
                                 newcomm));
    if (lt_on) {
        lt_begin("MPI_Dist_graph_create", t0);
        lt_comm(comm);
        lt_int(n);
        lt_ptr(sources);
        lt_ptr(degrees);
        lt_ptr(destinations);
        lt_ptr(weights);
        lt_handle(LT_HANDLE(info));
        lt_int(reorder);
        lt_ptr(newcomm);
        lt_end(t1);
        if (rc == MPI_SUCCESS)
            lt_comm_created(*newcomm);
    }
    return rc;
}

int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newcomm)
{
    TIMED(PMPI_Intercomm_merge(intercomm, high, newcomm));
    if (lt_on) {
        lt_begin("MPI_Intercomm_merge", t0);
        lt_comm(intercomm);
        lt_int(high);
        lt_ptr(newcomm);
        lt_end(t1);
        if (rc == MPI_SUCCESS)
            lt_comm_created(*newcomm);
    }
    return rc;
}

/* non-blocking collectives: the blocking record plus the request */
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    return lt_barrier(comm, request, request);
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request *request)
{
    return lt_bcast(buf, count, type, root, comm, request, request);
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *request)
{
    return lt_reduce(sbuf, rbuf, count, type, op, root, comm, request, request);
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request)
{
    return lt_allreduce("MPI_Iallreduce", PMPI_Allreduce, PMPI_Iallreduce, sbuf, rbuf, count,
                        type, op, comm, request, request);
}

int MPI_Iscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm, MPI_Request *request)
{
    return lt_allreduce("MPI_Iscan", PMPI_Scan, PMPI_Iscan, sbuf, rbuf, count, type, op, comm,
                        request, request);
}

int MPI_Iexscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                MPI_Comm comm, MPI_Request *request)
{
    return lt_allreduce("MPI_Iexscan", PMPI_Exscan, PMPI_Iexscan, sbuf, rbuf, count, type, op,
                        comm, request, request);
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *request)
{
    return lt_allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, request, request);
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm, MPI_Request *request)
{
    return lt_alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, request, request);
}

int MPI_Igather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return lt_gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, request, request);
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return lt_scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, request, request);
}

int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                    const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm,
                    MPI_Request *request)
{
    return lt_allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, request,
                         request);
}

int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                 const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                 MPI_Comm comm, MPI_Request *request)
{
    return lt_gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, request,
                      request);
}

int MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                  void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
                  MPI_Request *request)
{
    return lt_scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, request,
                       request);
}

int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[],
                   MPI_Datatype stype, void *rbuf, const int rcounts[], const int rdispls[],
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *request)
{
    return lt_alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm,
                        request, request);
}

int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type,
                        MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return lt_reduce_scatter(sbuf, rbuf, rcounts, type, op, comm, request, request);
}

int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return lt_reduce_scatter_block(sbuf, rbuf, count, type, op, comm, request, request);
}
