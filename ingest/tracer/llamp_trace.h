/*
 * llamp PMPI tracer: the interface between the record writer (record.c), the C wrappers
 * (wrap_c.c) and the Fortran wrappers (wrap_f.c).
 *
 * Output: one liballprof text file per rank, pmpi-trace-rank-<N>.txt, in $LLAMP_TRACE_DIR
 * (default: the working directory). A record is
 *     <MPI_Name>:<t_start>:<arg>:...:<arg>:<t_end>
 * with times in µs from PMPI_Wtime()*1e6 (three decimals), arguments in C prototype order,
 * pointers as decimal addresses, a datatype as <id>,<size>,<extent>, a communicator as
 * <handle>,<rank>,<size>, count arrays as <ptr>:<c0>,<c1>,... (docs/formats.md).
 * Communicator membership: "# llamp comm <handle> <size> <r0>,<r1>,..." after every call that
 * creates a communicator (world ranks, via MPI_Group_translate_ranks), and in front of the first
 * record that uses a communicator made by a call the tracer does not wrap.
 *
 * A wrapper takes t_start, calls the PMPI function, takes t_end, then writes its record:
 * lt_begin(name, t0); lt_ptr(buf); lt_int(count); ...; lt_end(t1).  Between lt_begin and
 * lt_end the writer holds the record lock (only taken under MPI_THREAD_MULTIPLE).
 */
#ifndef LLAMP_TRACE_H
#define LLAMP_TRACE_H

#include <mpi.h>

#if defined(__GNUC__)
#define LT_HIDDEN __attribute__((visibility("hidden")))
#else
#define LT_HIDDEN
#endif

/* 1 while this rank's trace file is open (from MPI_Init to MPI_Finalize). */
extern LT_HIDDEN int lt_on;

/* ------------------------------------------------------------------ record writer */
LT_HIDDEN double lt_now(void);
LT_HIDDEN void lt_begin(const char *name, double t_start);
LT_HIDDEN void lt_begin_init(const char *name); /* t_start printed as '-' */
LT_HIDDEN void lt_int(long long value);
LT_HIDDEN void lt_ptr(const void *pointer);
LT_HIDDEN void lt_handle(unsigned long handle);
LT_HIDDEN void lt_dtype(MPI_Datatype type);
LT_HIDDEN void lt_dtype_unused(void);                    /* a datatype not significant here */
LT_HIDDEN void lt_comm(MPI_Comm comm);
LT_HIDDEN void lt_op(MPI_Op op);
LT_HIDDEN void lt_counts(const void *pointer, const int *values, int n); /* n <= 0: pointer only */
LT_HIDDEN void lt_end(double t_end);

/* ------------------------------------------------------------------ life cycle */
LT_HIDDEN void lt_start(int provided);        /* after PMPI_Init*: open the file, sync clocks */
LT_HIDDEN void lt_finish(double t_start);     /* before PMPI_Finalize: last records, close */
LT_HIDDEN void lt_comm_created(MPI_Comm comm);/* "# llamp comm" line (no-op for NULL/inter) */
LT_HIDDEN void lt_comm_forget(unsigned long handle); /* after MPI_Comm_free */
LT_HIDDEN void lt_note_abort(int errorcode);  /* flush before PMPI_Abort */

/* Handles as printed: pointers under Open MPI, integers under MPICH and its derivatives. */
#if defined(OPEN_MPI)
#include <stdint.h>
#define LT_HANDLE(h) ((unsigned long)(uintptr_t)(h))
#else
#define LT_HANDLE(h) ((unsigned long)(unsigned int)(h))
#endif

/* ------------------------------------------------------------------ traced cores
 * The C wrappers and the Fortran wrappers call these. Arguments named *_log are what the
 * record prints for the caller's variables (for Fortran: the address of the MPI_Fint handle
 * or status the program passed, not of the temporary C copy).
 */
typedef int (*lt_send_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*lt_isend_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
typedef int (*lt_irecv_fn)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
typedef int (*lt_reduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
typedef int (*lt_ireduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm,
                             MPI_Request *);

LT_HIDDEN int lt_init(int *argc, char ***argv);
LT_HIDDEN int lt_init_thread(int *argc, char ***argv, int required, int *provided);
LT_HIDDEN int lt_finalize(void);

LT_HIDDEN int lt_send(const char *name, lt_send_fn fn, const void *buf, int count,
                      MPI_Datatype type, int dest, int tag, MPI_Comm comm);
LT_HIDDEN int lt_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                      MPI_Status *status, const void *status_log);
LT_HIDDEN int lt_isend(const char *name, lt_isend_fn fn, const void *buf, int count,
                       MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *request,
                       const void *request_log);
LT_HIDDEN int lt_irecv(const char *name, lt_irecv_fn fn, void *buf, int count, MPI_Datatype type,
                       int source, int tag, MPI_Comm comm, MPI_Request *request,
                       const void *request_log);
LT_HIDDEN int lt_sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                          void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag,
                          MPI_Comm comm, MPI_Status *status, const void *status_log);
LT_HIDDEN int lt_sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag,
                                  int source, int rtag, MPI_Comm comm, MPI_Status *status,
                                  const void *status_log);

LT_HIDDEN int lt_wait(MPI_Request *request, MPI_Status *status, const void *request_log,
                      const void *status_log);
LT_HIDDEN int lt_waitall(int count, MPI_Request *requests, MPI_Status *statuses,
                         const void *requests_log, const void *statuses_log);
LT_HIDDEN int lt_waitany(int count, MPI_Request *requests, int *index, MPI_Status *status,
                         const void *requests_log, const void *index_log,
                         const void *status_log);
LT_HIDDEN int lt_waitsome(int incount, MPI_Request *requests, int *outcount, int *indices,
                          MPI_Status *statuses, const void *requests_log,
                          const void *outcount_log, const void *indices_log,
                          const void *statuses_log);
LT_HIDDEN int lt_test(MPI_Request *request, int *flag, MPI_Status *status,
                      const void *request_log, const void *flag_log, const void *status_log);
LT_HIDDEN int lt_testall(int count, MPI_Request *requests, int *flag, MPI_Status *statuses,
                         const void *requests_log, const void *flag_log,
                         const void *statuses_log);
LT_HIDDEN int lt_testany(int count, MPI_Request *requests, int *index, int *flag,
                         MPI_Status *status, const void *requests_log, const void *index_log,
                         const void *flag_log, const void *status_log);
LT_HIDDEN int lt_testsome(int incount, MPI_Request *requests, int *outcount, int *indices,
                          MPI_Status *statuses, const void *requests_log,
                          const void *outcount_log, const void *indices_log,
                          const void *statuses_log);
LT_HIDDEN int lt_start_request(MPI_Request *request, const void *request_log);
LT_HIDDEN int lt_startall(int count, MPI_Request *requests, const void *requests_log);
LT_HIDDEN int lt_request_free(MPI_Request *request, const void *request_log);
LT_HIDDEN int lt_cancel(MPI_Request *request, const void *request_log);
LT_HIDDEN int lt_probe(int source, int tag, MPI_Comm comm, MPI_Status *status,
                       const void *status_log);
LT_HIDDEN int lt_iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status,
                        const void *flag_log, const void *status_log);

/* collectives: req NULL for the blocking call, else the non-blocking version's request */
LT_HIDDEN int lt_barrier(MPI_Comm comm, MPI_Request *req, const void *req_log);
LT_HIDDEN int lt_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                       MPI_Request *req, const void *req_log);
LT_HIDDEN int lt_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                        int root, MPI_Comm comm, MPI_Request *req, const void *req_log);
LT_HIDDEN int lt_allreduce(const char *name, lt_reduce_fn fn, lt_ireduce_fn ifn, const void *sbuf,
                           void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                           MPI_Request *req, const void *req_log); /* also Scan, Exscan */
LT_HIDDEN int lt_allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                           int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req,
                           const void *req_log);
LT_HIDDEN int lt_alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                          MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req,
                          const void *req_log);
LT_HIDDEN int lt_gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                        MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req,
                        const void *req_log);
LT_HIDDEN int lt_scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                         MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req,
                         const void *req_log);
LT_HIDDEN int lt_allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                            const int *rcounts, const int *displs, MPI_Datatype rtype,
                            MPI_Comm comm, MPI_Request *req, const void *req_log);
LT_HIDDEN int lt_gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                         const int *rcounts, const int *displs, MPI_Datatype rtype, int root,
                         MPI_Comm comm, MPI_Request *req, const void *req_log);
LT_HIDDEN int lt_scatterv(const void *sbuf, const int *scounts, const int *displs,
                          MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root,
                          MPI_Comm comm, MPI_Request *req, const void *req_log);
LT_HIDDEN int lt_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                           MPI_Datatype stype, void *rbuf, const int *rcounts, const int *rdispls,
                           MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req,
                           const void *req_log);
LT_HIDDEN int lt_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *req,
                                const void *req_log);
LT_HIDDEN int lt_reduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                                      MPI_Op op, MPI_Comm comm, MPI_Request *req,
                                      const void *req_log);

LT_HIDDEN int lt_comm_rank(MPI_Comm comm, int *rank, const void *rank_log);
LT_HIDDEN int lt_comm_size(MPI_Comm comm, int *size, const void *size_log);
LT_HIDDEN int lt_comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm,
                            const void *newcomm_log);
LT_HIDDEN int lt_comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                                 MPI_Comm *newcomm, const void *newcomm_log);
LT_HIDDEN int lt_comm_dup(MPI_Comm comm, MPI_Comm *newcomm, const void *newcomm_log);
LT_HIDDEN int lt_comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm,
                             const void *newcomm_log);
LT_HIDDEN int lt_comm_free(MPI_Comm *comm, const void *comm_log);
LT_HIDDEN int lt_cart_create(MPI_Comm comm, int ndims, const int *dims, const int *periods,
                             int reorder, MPI_Comm *newcomm, const void *dims_log,
                             const void *periods_log, const void *newcomm_log);
LT_HIDDEN int lt_cart_sub(MPI_Comm comm, const int *remain, MPI_Comm *newcomm,
                          const void *remain_log, const void *newcomm_log);

#endif /* LLAMP_TRACE_H */
