/*
 * llamp PMPI tracer: Fortran (mpif.h / "use mpi") entry points for Open MPI.
 *
 * Open MPI's Fortran bindings call PMPI_* directly, so the C wrappers never see a Fortran
 * program's calls. These wrappers replace mpi_xxx_ (and the mpi_xxx, mpi_xxx__, MPI_XXX
 * manglings, as aliases), convert the handles with MPI_*_f2c, call the traced core (which calls
 * the C PMPI function), and convert results back with MPI_*_c2f. Records print the addresses
 * of the program's own Fortran variables (a Fortran request array has 4-byte entries).
 * MPI_IN_PLACE and MPI_BOTTOM arrive as the addresses of Open MPI's Fortran sentinels and are
 * mapped to the C constants; MPI_STATUS(ES)_IGNORE as MPI_F_STATUS(ES)_IGNORE.
 *
 * MPICH and its derivatives need none of this: their Fortran bindings call the C MPI_*
 * functions, which the C wrappers trace; this file is then empty. The mpi_f08 module
 * (mpi_xxx_f08 symbols) is not wrapped.
 */
#include <stdlib.h>

#include "llamp_trace.h"

#if defined(OPEN_MPI)

_Static_assert(sizeof(MPI_Fint) == sizeof(int),
               "the Fortran wrappers assume a default INTEGER of the size of a C int");

#define F_TRUE 1 /* gfortran's .TRUE. (Open MPI's OMPI_FORTRAN_VALUE_TRUE for gfortran) */
#define F_STATUS_INTS (sizeof(MPI_Status) / sizeof(MPI_Fint))
#define SMALL 32

#define SET_IERR(ierr, rc)          \
    do {                            \
        if ((ierr) != NULL)         \
            *(ierr) = (MPI_Fint)(rc); \
    } while (0)

/* void NAME_(params) plus its aliases NAME, NAME__, UPPER */
#define F_ENTRY(lower, UPPER, params)                        \
    void lower##_ params;                                    \
    void lower params __attribute__((alias(#lower "_")));    \
    void lower##__ params __attribute__((alias(#lower "_"))); \
    void UPPER params __attribute__((alias(#lower "_")));    \
    void lower##_ params

/* Open MPI's Fortran sentinels (common blocks); weak: absent in some builds or manglings */
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_bottom __attribute__((weak));
extern int mpi_fortran_bottom__ __attribute__((weak));
extern int MPI_FORTRAN_BOTTOM __attribute__((weak));

static void *cbuf(void *p)
{
    if (p == NULL)
        return p;
    if (p == (void *)&mpi_fortran_in_place_ || p == (void *)&mpi_fortran_in_place ||
        p == (void *)&mpi_fortran_in_place__ || p == (void *)&MPI_FORTRAN_IN_PLACE)
        return MPI_IN_PLACE;
    if (p == (void *)&mpi_fortran_bottom_ || p == (void *)&mpi_fortran_bottom ||
        p == (void *)&mpi_fortran_bottom__ || p == (void *)&MPI_FORTRAN_BOTTOM)
        return MPI_BOTTOM;
    return p;
}

#define COMM(f) MPI_Comm_f2c(*(f))
#define TYPE(f) MPI_Type_f2c(*(f))
#define OP(f) MPI_Op_f2c(*(f))

static MPI_Status *c_status(MPI_Fint *f, MPI_Status *tmp)
{
    return f == MPI_F_STATUS_IGNORE ? MPI_STATUS_IGNORE : tmp;
}

static void f_status(MPI_Status *c, MPI_Fint *f)
{
    if (c != MPI_STATUS_IGNORE)
        MPI_Status_c2f(c, f);
}

/* scratch arrays for request/status/index conversions: on the stack up to SMALL entries */
typedef struct {
    MPI_Request req_small[SMALL];
    MPI_Status st_small[SMALL];
    int idx_small[SMALL];
    MPI_Request *req;
    MPI_Status *st;
    int *idx;
} scratch;

static int scratch_init(scratch *s, int n, MPI_Fint *freqs, MPI_Fint *fstatuses, int with_idx)
{
    int big = n > SMALL, failed = 0;
    s->req = big ? malloc((size_t)n * sizeof(MPI_Request)) : s->req_small;
    failed |= s->req == NULL;
    s->st = MPI_STATUSES_IGNORE; /* NULL under Open MPI */
    if (fstatuses != MPI_F_STATUSES_IGNORE) {
        s->st = big ? malloc((size_t)n * sizeof(MPI_Status)) : s->st_small;
        failed |= s->st == NULL;
    }
    s->idx = s->idx_small;
    if (with_idx && big) {
        s->idx = malloc((size_t)n * sizeof(int));
        failed |= s->idx == NULL;
    }
    if (failed)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < n; i++)
        s->req[i] = MPI_Request_f2c(freqs[i]);
    return MPI_SUCCESS;
}

static void scratch_free(scratch *s)
{
    if (s->req != s->req_small)
        free(s->req);
    if (s->st != s->st_small && s->st != MPI_STATUSES_IGNORE)
        free(s->st);
    if (s->idx != s->idx_small)
        free(s->idx);
}

/* request i back to Fortran, with its status when statuses are wanted */
static void f_done(scratch *s, int i, MPI_Fint *freqs, MPI_Fint *fstatuses, int status_slot)
{
    freqs[i] = MPI_Request_c2f(s->req[i]);
    if (s->st != MPI_STATUSES_IGNORE)
        MPI_Status_c2f(&s->st[status_slot], fstatuses + (size_t)status_slot * F_STATUS_INTS);
}

/* ================================================================== life cycle */
F_ENTRY(mpi_init, MPI_INIT, (MPI_Fint *ierr)) { SET_IERR(ierr, lt_init(NULL, NULL)); }

F_ENTRY(mpi_init_thread, MPI_INIT_THREAD, (MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr))
{
    int p = 0;
    int rc = lt_init_thread(NULL, NULL, *required, &p);
    *provided = p;
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_finalize, MPI_FINALIZE, (MPI_Fint *ierr)) { SET_IERR(ierr, lt_finalize()); }

F_ENTRY(mpi_abort, MPI_ABORT, (MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr))
{
    lt_note_abort(*errorcode);
    SET_IERR(ierr, PMPI_Abort(COMM(comm), *errorcode));
}

/* ================================================================== communicators */
F_ENTRY(mpi_comm_rank, MPI_COMM_RANK, (MPI_Fint *comm, MPI_Fint *rank, MPI_Fint *ierr))
{
    int r = 0;
    int rc = lt_comm_rank(COMM(comm), &r, rank);
    *rank = r;
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_comm_size, MPI_COMM_SIZE, (MPI_Fint *comm, MPI_Fint *size, MPI_Fint *ierr))
{
    int n = 0;
    int rc = lt_comm_size(COMM(comm), &n, size);
    *size = n;
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_comm_split, MPI_COMM_SPLIT,
        (MPI_Fint *comm, MPI_Fint *color, MPI_Fint *key, MPI_Fint *newcomm, MPI_Fint *ierr))
{
    MPI_Comm c = MPI_COMM_NULL;
    int rc = lt_comm_split(COMM(comm), *color, *key, &c, newcomm);
    if (rc == MPI_SUCCESS)
        *newcomm = MPI_Comm_c2f(c);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_comm_split_type, MPI_COMM_SPLIT_TYPE,
        (MPI_Fint *comm, MPI_Fint *split_type, MPI_Fint *key, MPI_Fint *info, MPI_Fint *newcomm,
         MPI_Fint *ierr))
{
    MPI_Comm c = MPI_COMM_NULL;
    int rc = lt_comm_split_type(COMM(comm), *split_type, *key, MPI_Info_f2c(*info), &c, newcomm);
    if (rc == MPI_SUCCESS)
        *newcomm = MPI_Comm_c2f(c);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_comm_dup, MPI_COMM_DUP, (MPI_Fint *comm, MPI_Fint *newcomm, MPI_Fint *ierr))
{
    MPI_Comm c = MPI_COMM_NULL;
    int rc = lt_comm_dup(COMM(comm), &c, newcomm);
    if (rc == MPI_SUCCESS)
        *newcomm = MPI_Comm_c2f(c);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_comm_create, MPI_COMM_CREATE,
        (MPI_Fint *comm, MPI_Fint *group, MPI_Fint *newcomm, MPI_Fint *ierr))
{
    MPI_Comm c = MPI_COMM_NULL;
    int rc = lt_comm_create(COMM(comm), MPI_Group_f2c(*group), &c, newcomm);
    if (rc == MPI_SUCCESS)
        *newcomm = MPI_Comm_c2f(c);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_comm_free, MPI_COMM_FREE, (MPI_Fint *comm, MPI_Fint *ierr))
{
    MPI_Comm c = COMM(comm);
    int rc = lt_comm_free(&c, comm);
    if (rc == MPI_SUCCESS)
        *comm = MPI_Comm_c2f(c);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_cart_create, MPI_CART_CREATE,
        (MPI_Fint *comm, MPI_Fint *ndims, MPI_Fint *dims, MPI_Fint *periods, MPI_Fint *reorder,
         MPI_Fint *newcomm, MPI_Fint *ierr))
{
    int n = *ndims > 0 ? *ndims : 0;
    int *p = malloc((size_t)(n ? n : 1) * sizeof(int));
    if (p == NULL) {
        SET_IERR(ierr, MPI_ERR_NO_MEM);
        return;
    }
    for (int i = 0; i < n; i++)
        p[i] = periods[i] != 0;
    MPI_Comm c = MPI_COMM_NULL;
    int rc = lt_cart_create(COMM(comm), *ndims, dims, p, *reorder != 0, &c, dims, periods,
                            newcomm);
    free(p);
    if (rc == MPI_SUCCESS)
        *newcomm = MPI_Comm_c2f(c);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_cart_sub, MPI_CART_SUB,
        (MPI_Fint *comm, MPI_Fint *remain_dims, MPI_Fint *newcomm, MPI_Fint *ierr))
{
    MPI_Comm cc = COMM(comm);
    int n = 0;
    PMPI_Cartdim_get(cc, &n);
    int *r = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (r == NULL) {
        SET_IERR(ierr, MPI_ERR_NO_MEM);
        return;
    }
    for (int i = 0; i < n; i++)
        r[i] = remain_dims[i] != 0;
    MPI_Comm c = MPI_COMM_NULL;
    int rc = lt_cart_sub(cc, r, &c, remain_dims, newcomm);
    free(r);
    if (rc == MPI_SUCCESS)
        *newcomm = MPI_Comm_c2f(c);
    SET_IERR(ierr, rc);
}

/* ================================================================== point to point */
#define F_SEND(lower, UPPER, Name)                                                            \
    F_ENTRY(lower, UPPER,                                                                     \
            (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest, MPI_Fint *tag,       \
             MPI_Fint *comm, MPI_Fint *ierr))                                                 \
    {                                                                                         \
        SET_IERR(ierr, lt_send("MPI_" #Name, PMPI_##Name, cbuf(buf), *count, TYPE(type),     \
                               *dest, *tag, COMM(comm)));                                     \
    }

F_SEND(mpi_send, MPI_SEND, Send)
F_SEND(mpi_ssend, MPI_SSEND, Ssend)
F_SEND(mpi_rsend, MPI_RSEND, Rsend)
F_SEND(mpi_bsend, MPI_BSEND, Bsend)

F_ENTRY(mpi_recv, MPI_RECV,
        (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source, MPI_Fint *tag,
         MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr))
{
    MPI_Status s;
    MPI_Status *cs = c_status(status, &s);
    int rc = lt_recv(cbuf(buf), *count, TYPE(type), *source, *tag, COMM(comm), cs, status);
    if (rc == MPI_SUCCESS)
        f_status(cs, status);
    SET_IERR(ierr, rc);
}

#define F_ISEND(lower, UPPER, Name)                                                           \
    F_ENTRY(lower, UPPER,                                                                     \
            (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest, MPI_Fint *tag,       \
             MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))                              \
    {                                                                                         \
        MPI_Request r = MPI_REQUEST_NULL;                                                     \
        int rc = lt_isend("MPI_" #Name, PMPI_##Name, cbuf(buf), *count, TYPE(type), *dest,   \
                          *tag, COMM(comm), &r, request);                                     \
        if (rc == MPI_SUCCESS)                                                                \
            *request = MPI_Request_c2f(r);                                                    \
        SET_IERR(ierr, rc);                                                                   \
    }

F_ISEND(mpi_isend, MPI_ISEND, Isend)
F_ISEND(mpi_issend, MPI_ISSEND, Issend)
F_ISEND(mpi_irsend, MPI_IRSEND, Irsend)
F_ISEND(mpi_ibsend, MPI_IBSEND, Ibsend)
F_ISEND(mpi_send_init, MPI_SEND_INIT, Send_init)
F_ISEND(mpi_ssend_init, MPI_SSEND_INIT, Ssend_init)
F_ISEND(mpi_rsend_init, MPI_RSEND_INIT, Rsend_init)
F_ISEND(mpi_bsend_init, MPI_BSEND_INIT, Bsend_init)

#define F_IRECV(lower, UPPER, Name)                                                           \
    F_ENTRY(lower, UPPER,                                                                     \
            (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source, MPI_Fint *tag,     \
             MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))                              \
    {                                                                                         \
        MPI_Request r = MPI_REQUEST_NULL;                                                     \
        int rc = lt_irecv("MPI_" #Name, PMPI_##Name, cbuf(buf), *count, TYPE(type), *source, \
                          *tag, COMM(comm), &r, request);                                     \
        if (rc == MPI_SUCCESS)                                                                \
            *request = MPI_Request_c2f(r);                                                    \
        SET_IERR(ierr, rc);                                                                   \
    }

F_IRECV(mpi_irecv, MPI_IRECV, Irecv)
F_IRECV(mpi_recv_init, MPI_RECV_INIT, Recv_init)

F_ENTRY(mpi_sendrecv, MPI_SENDRECV,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, MPI_Fint *dest, MPI_Fint *stag,
         void *rbuf, MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *source, MPI_Fint *rtag,
         MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr))
{
    MPI_Status s;
    MPI_Status *cs = c_status(status, &s);
    int rc = lt_sendrecv(cbuf(sbuf), *scount, TYPE(stype), *dest, *stag, cbuf(rbuf), *rcount,
                         TYPE(rtype), *source, *rtag, COMM(comm), cs, status);
    if (rc == MPI_SUCCESS)
        f_status(cs, status);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_sendrecv_replace, MPI_SENDRECV_REPLACE,
        (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest, MPI_Fint *stag,
         MPI_Fint *source, MPI_Fint *rtag, MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr))
{
    MPI_Status s;
    MPI_Status *cs = c_status(status, &s);
    int rc = lt_sendrecv_replace(cbuf(buf), *count, TYPE(type), *dest, *stag, *source, *rtag,
                                 COMM(comm), cs, status);
    if (rc == MPI_SUCCESS)
        f_status(cs, status);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_probe, MPI_PROBE,
        (MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr))
{
    MPI_Status s;
    MPI_Status *cs = c_status(status, &s);
    int rc = lt_probe(*source, *tag, COMM(comm), cs, status);
    if (rc == MPI_SUCCESS)
        f_status(cs, status);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_iprobe, MPI_IPROBE,
        (MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *flag, MPI_Fint *status,
         MPI_Fint *ierr))
{
    MPI_Status s;
    MPI_Status *cs = c_status(status, &s);
    int f = 0;
    int rc = lt_iprobe(*source, *tag, COMM(comm), &f, cs, flag, status);
    if (rc == MPI_SUCCESS) {
        *flag = f ? F_TRUE : 0;
        if (f)
            f_status(cs, status);
    }
    SET_IERR(ierr, rc);
}

/* ================================================================== completion */
F_ENTRY(mpi_wait, MPI_WAIT, (MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierr))
{
    MPI_Request r = MPI_Request_f2c(*request);
    MPI_Status s;
    MPI_Status *cs = c_status(status, &s);
    int rc = lt_wait(&r, cs, request, status);
    if (rc == MPI_SUCCESS) {
        *request = MPI_Request_c2f(r);
        f_status(cs, status);
    }
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_waitall, MPI_WAITALL,
        (MPI_Fint *count, MPI_Fint *requests, MPI_Fint *statuses, MPI_Fint *ierr))
{
    scratch s;
    int n = *count, rc = scratch_init(&s, n, requests, statuses, 0);
    if (rc == MPI_SUCCESS) {
        rc = lt_waitall(n, s.req, s.st, requests, statuses);
        if (rc == MPI_SUCCESS)
            for (int i = 0; i < n; i++)
                f_done(&s, i, requests, statuses, i);
    }
    scratch_free(&s);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_waitany, MPI_WAITANY,
        (MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *status, MPI_Fint *ierr))
{
    scratch s;
    MPI_Status st;
    MPI_Status *cs = c_status(status, &st);
    int n = *count, i = MPI_UNDEFINED, rc = scratch_init(&s, n, requests, MPI_F_STATUSES_IGNORE, 0);
    if (rc == MPI_SUCCESS) {
        rc = lt_waitany(n, s.req, &i, cs, requests, index, status);
        if (rc == MPI_SUCCESS) {
            if (i != MPI_UNDEFINED) {
                requests[i] = MPI_Request_c2f(s.req[i]);
                f_status(cs, status);
            }
            *index = i == MPI_UNDEFINED ? i : i + 1;
        }
    }
    scratch_free(&s);
    SET_IERR(ierr, rc);
}

typedef int (*some_fn)(int, MPI_Request *, int *, int *, MPI_Status *, const void *, const void *,
                       const void *, const void *);

static void f_some(some_fn fn, MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount,
                   MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
    scratch s;
    int n = *incount, out = 0, rc = scratch_init(&s, n, requests, statuses, 1);
    if (rc == MPI_SUCCESS) {
        rc = fn(n, s.req, &out, s.idx, s.st, requests, outcount, indices, statuses);
        if (rc == MPI_SUCCESS) {
            *outcount = out;
            for (int j = 0; out != MPI_UNDEFINED && j < out; j++) {
                f_done(&s, s.idx[j], requests, statuses, j);
                indices[j] = s.idx[j] + 1;
            }
        }
    }
    scratch_free(&s);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_waitsome, MPI_WAITSOME,
        (MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
         MPI_Fint *statuses, MPI_Fint *ierr))
{
    f_some(lt_waitsome, incount, requests, outcount, indices, statuses, ierr);
}

F_ENTRY(mpi_testsome, MPI_TESTSOME,
        (MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
         MPI_Fint *statuses, MPI_Fint *ierr))
{
    f_some(lt_testsome, incount, requests, outcount, indices, statuses, ierr);
}

F_ENTRY(mpi_test, MPI_TEST, (MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr))
{
    MPI_Request r = MPI_Request_f2c(*request);
    MPI_Status s;
    MPI_Status *cs = c_status(status, &s);
    int f = 0;
    int rc = lt_test(&r, &f, cs, request, flag, status);
    if (rc == MPI_SUCCESS) {
        *flag = f ? F_TRUE : 0;
        if (f) {
            *request = MPI_Request_c2f(r);
            f_status(cs, status);
        }
    }
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_testall, MPI_TESTALL,
        (MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr))
{
    scratch s;
    int n = *count, f = 0, rc = scratch_init(&s, n, requests, statuses, 0);
    if (rc == MPI_SUCCESS) {
        rc = lt_testall(n, s.req, &f, s.st, requests, flag, statuses);
        if (rc == MPI_SUCCESS) {
            *flag = f ? F_TRUE : 0;
            for (int i = 0; f && i < n; i++)
                f_done(&s, i, requests, statuses, i);
        }
    }
    scratch_free(&s);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_testany, MPI_TESTANY,
        (MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status,
         MPI_Fint *ierr))
{
    scratch s;
    MPI_Status st;
    MPI_Status *cs = c_status(status, &st);
    int n = *count, i = MPI_UNDEFINED, f = 0;
    int rc = scratch_init(&s, n, requests, MPI_F_STATUSES_IGNORE, 0);
    if (rc == MPI_SUCCESS) {
        rc = lt_testany(n, s.req, &i, &f, cs, requests, index, flag, status);
        if (rc == MPI_SUCCESS) {
            *flag = f ? F_TRUE : 0;
            if (f && i != MPI_UNDEFINED) {
                requests[i] = MPI_Request_c2f(s.req[i]);
                f_status(cs, status);
            }
            *index = i == MPI_UNDEFINED ? i : i + 1;
        }
    }
    scratch_free(&s);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_start, MPI_START, (MPI_Fint *request, MPI_Fint *ierr))
{
    MPI_Request r = MPI_Request_f2c(*request);
    SET_IERR(ierr, lt_start_request(&r, request));
}

F_ENTRY(mpi_startall, MPI_STARTALL, (MPI_Fint *count, MPI_Fint *requests, MPI_Fint *ierr))
{
    scratch s;
    int n = *count, rc = scratch_init(&s, n, requests, MPI_F_STATUSES_IGNORE, 0);
    if (rc == MPI_SUCCESS)
        rc = lt_startall(n, s.req, requests);
    scratch_free(&s);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_request_free, MPI_REQUEST_FREE, (MPI_Fint *request, MPI_Fint *ierr))
{
    MPI_Request r = MPI_Request_f2c(*request);
    int rc = lt_request_free(&r, request);
    if (rc == MPI_SUCCESS)
        *request = MPI_Request_c2f(r);
    SET_IERR(ierr, rc);
}

F_ENTRY(mpi_cancel, MPI_CANCEL, (MPI_Fint *request, MPI_Fint *ierr))
{
    MPI_Request r = MPI_Request_f2c(*request);
    SET_IERR(ierr, lt_cancel(&r, request));
}

/* ================================================================== collectives */
F_ENTRY(mpi_barrier, MPI_BARRIER, (MPI_Fint *comm, MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_barrier(COMM(comm), NULL, NULL));
}

F_ENTRY(mpi_bcast, MPI_BCAST,
        (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm,
         MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_bcast(cbuf(buf), *count, TYPE(type), *root, COMM(comm), NULL, NULL));
}

F_ENTRY(mpi_reduce, MPI_REDUCE,
        (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, MPI_Fint *root,
         MPI_Fint *comm, MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_reduce(cbuf(sbuf), cbuf(rbuf), *count, TYPE(type), OP(op), *root,
                             COMM(comm), NULL, NULL));
}

#define F_ALLREDUCE(lower, UPPER, Name, Lname)                                                \
    F_ENTRY(lower, UPPER,                                                                     \
            (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,           \
             MPI_Fint *comm, MPI_Fint *ierr))                                                 \
    {                                                                                         \
        SET_IERR(ierr, lt_allreduce("MPI_" #Name, PMPI_##Name, PMPI_I##Lname, cbuf(sbuf),    \
                                    cbuf(rbuf), *count, TYPE(type), OP(op), COMM(comm), NULL, \
                                    NULL));                                                   \
    }

F_ALLREDUCE(mpi_allreduce, MPI_ALLREDUCE, Allreduce, allreduce)
F_ALLREDUCE(mpi_scan, MPI_SCAN, Scan, scan)
F_ALLREDUCE(mpi_exscan, MPI_EXSCAN, Exscan, exscan)

F_ENTRY(mpi_allgather, MPI_ALLGATHER,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount,
         MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_allgather(cbuf(sbuf), *scount, TYPE(stype), cbuf(rbuf), *rcount,
                                TYPE(rtype), COMM(comm), NULL, NULL));
}

F_ENTRY(mpi_alltoall, MPI_ALLTOALL,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount,
         MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_alltoall(cbuf(sbuf), *scount, TYPE(stype), cbuf(rbuf), *rcount,
                               TYPE(rtype), COMM(comm), NULL, NULL));
}

F_ENTRY(mpi_gather, MPI_GATHER,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount,
         MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_gather(cbuf(sbuf), *scount, TYPE(stype), cbuf(rbuf), *rcount, TYPE(rtype),
                             *root, COMM(comm), NULL, NULL));
}

F_ENTRY(mpi_scatter, MPI_SCATTER,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount,
         MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_scatter(cbuf(sbuf), *scount, TYPE(stype), cbuf(rbuf), *rcount,
                              TYPE(rtype), *root, COMM(comm), NULL, NULL));
}

F_ENTRY(mpi_allgatherv, MPI_ALLGATHERV,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcounts,
         MPI_Fint *displs, MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_allgatherv(cbuf(sbuf), *scount, TYPE(stype), cbuf(rbuf), rcounts, displs,
                                 TYPE(rtype), COMM(comm), NULL, NULL));
}

F_ENTRY(mpi_gatherv, MPI_GATHERV,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcounts,
         MPI_Fint *displs, MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_gatherv(cbuf(sbuf), *scount, TYPE(stype), cbuf(rbuf), rcounts, displs,
                              TYPE(rtype), *root, COMM(comm), NULL, NULL));
}

F_ENTRY(mpi_scatterv, MPI_SCATTERV,
        (void *sbuf, MPI_Fint *scounts, MPI_Fint *displs, MPI_Fint *stype, void *rbuf,
         MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_scatterv(cbuf(sbuf), scounts, displs, TYPE(stype), cbuf(rbuf), *rcount,
                               TYPE(rtype), *root, COMM(comm), NULL, NULL));
}

F_ENTRY(mpi_alltoallv, MPI_ALLTOALLV,
        (void *sbuf, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *stype, void *rbuf,
         MPI_Fint *rcounts, MPI_Fint *rdispls, MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_alltoallv(cbuf(sbuf), scounts, sdispls, TYPE(stype), cbuf(rbuf), rcounts,
                                rdispls, TYPE(rtype), COMM(comm), NULL, NULL));
}

F_ENTRY(mpi_reduce_scatter, MPI_REDUCE_SCATTER,
        (void *sbuf, void *rbuf, MPI_Fint *rcounts, MPI_Fint *type, MPI_Fint *op, MPI_Fint *comm,
         MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_reduce_scatter(cbuf(sbuf), cbuf(rbuf), rcounts, TYPE(type), OP(op),
                                     COMM(comm), NULL, NULL));
}

F_ENTRY(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK,
        (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, MPI_Fint *comm,
         MPI_Fint *ierr))
{
    SET_IERR(ierr, lt_reduce_scatter_block(cbuf(sbuf), cbuf(rbuf), *count, TYPE(type), OP(op),
                                           COMM(comm), NULL, NULL));
}

/* non-blocking collectives: the core with a C request, handed back as a Fortran handle */
#define F_NONBLOCKING(call)                \
    MPI_Request r = MPI_REQUEST_NULL;      \
    int rc = (call);                       \
    if (rc == MPI_SUCCESS)                 \
        *request = MPI_Request_c2f(r);     \
    SET_IERR(ierr, rc)

F_ENTRY(mpi_ibarrier, MPI_IBARRIER, (MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_barrier(COMM(comm), &r, request));
}

F_ENTRY(mpi_ibcast, MPI_IBCAST,
        (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm,
         MPI_Fint *request, MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_bcast(cbuf(buf), *count, TYPE(type), *root, COMM(comm), &r, request));
}

F_ENTRY(mpi_ireduce, MPI_IREDUCE,
        (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, MPI_Fint *root,
         MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_reduce(cbuf(sbuf), cbuf(rbuf), *count, TYPE(type), OP(op), *root,
                            COMM(comm), &r, request));
}

#define F_IALLREDUCE(lower, UPPER, Name, Blocking)                                            \
    F_ENTRY(lower, UPPER,                                                                     \
            (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,           \
             MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))                              \
    {                                                                                         \
        F_NONBLOCKING(lt_allreduce("MPI_" #Name, PMPI_##Blocking, PMPI_##Name, cbuf(sbuf),   \
                                   cbuf(rbuf), *count, TYPE(type), OP(op), COMM(comm), &r,   \
                                   request));                                                 \
    }

F_IALLREDUCE(mpi_iallreduce, MPI_IALLREDUCE, Iallreduce, Allreduce)
F_IALLREDUCE(mpi_iscan, MPI_ISCAN, Iscan, Scan)
F_IALLREDUCE(mpi_iexscan, MPI_IEXSCAN, Iexscan, Exscan)

F_ENTRY(mpi_iallgather, MPI_IALLGATHER,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount,
         MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_allgather(cbuf(sbuf), *scount, TYPE(stype), cbuf(rbuf), *rcount,
                               TYPE(rtype), COMM(comm), &r, request));
}

F_ENTRY(mpi_ialltoall, MPI_IALLTOALL,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount,
         MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_alltoall(cbuf(sbuf), *scount, TYPE(stype), cbuf(rbuf), *rcount,
                              TYPE(rtype), COMM(comm), &r, request));
}

F_ENTRY(mpi_igather, MPI_IGATHER,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount,
         MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_gather(cbuf(sbuf), *scount, TYPE(stype), cbuf(rbuf), *rcount, TYPE(rtype),
                            *root, COMM(comm), &r, request));
}

F_ENTRY(mpi_iscatter, MPI_ISCATTER,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount,
         MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_scatter(cbuf(sbuf), *scount, TYPE(stype), cbuf(rbuf), *rcount,
                             TYPE(rtype), *root, COMM(comm), &r, request));
}

F_ENTRY(mpi_iallgatherv, MPI_IALLGATHERV,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcounts,
         MPI_Fint *displs, MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_allgatherv(cbuf(sbuf), *scount, TYPE(stype), cbuf(rbuf), rcounts, displs,
                                TYPE(rtype), COMM(comm), &r, request));
}

F_ENTRY(mpi_igatherv, MPI_IGATHERV,
        (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcounts,
         MPI_Fint *displs, MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *request,
         MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_gatherv(cbuf(sbuf), *scount, TYPE(stype), cbuf(rbuf), rcounts, displs,
                             TYPE(rtype), *root, COMM(comm), &r, request));
}

F_ENTRY(mpi_iscatterv, MPI_ISCATTERV,
        (void *sbuf, MPI_Fint *scounts, MPI_Fint *displs, MPI_Fint *stype, void *rbuf,
         MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *request,
         MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_scatterv(cbuf(sbuf), scounts, displs, TYPE(stype), cbuf(rbuf), *rcount,
                              TYPE(rtype), *root, COMM(comm), &r, request));
}

F_ENTRY(mpi_ialltoallv, MPI_IALLTOALLV,
        (void *sbuf, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *stype, void *rbuf,
         MPI_Fint *rcounts, MPI_Fint *rdispls, MPI_Fint *rtype, MPI_Fint *comm,
         MPI_Fint *request, MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_alltoallv(cbuf(sbuf), scounts, sdispls, TYPE(stype), cbuf(rbuf), rcounts,
                               rdispls, TYPE(rtype), COMM(comm), &r, request));
}

F_ENTRY(mpi_ireduce_scatter, MPI_IREDUCE_SCATTER,
        (void *sbuf, void *rbuf, MPI_Fint *rcounts, MPI_Fint *type, MPI_Fint *op, MPI_Fint *comm,
         MPI_Fint *request, MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_reduce_scatter(cbuf(sbuf), cbuf(rbuf), rcounts, TYPE(type), OP(op),
                                    COMM(comm), &r, request));
}

F_ENTRY(mpi_ireduce_scatter_block, MPI_IREDUCE_SCATTER_BLOCK,
        (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, MPI_Fint *comm,
         MPI_Fint *request, MPI_Fint *ierr))
{
    F_NONBLOCKING(lt_reduce_scatter_block(cbuf(sbuf), cbuf(rbuf), *count, TYPE(type), OP(op),
                                          COMM(comm), &r, request));
}

#else
typedef int lt_no_fortran_wrappers; /* MPICH-family: Fortran reaches the C wrappers */
#endif
