/*
 * Fortran MPI bindings (mpif.h, gfortran's names) that call the C bindings.
 *
 * Open MPI's own Fortran bindings call PMPI_* directly, past any tool that wraps the C
 * bindings: the latency injector (C bindings only) would leave a Fortran application's
 * messages undelayed. Linked into a Fortran application, these definitions take the place of
 * the library's for the calls that communicate, so the tracer and the injector see them as C
 * calls. Covered: MPI_Init and MPI_Finalize (where the tools start and report), what NPB CG
 * calls to communicate (send, irecv, wait, barrier, bcast, reduce) and their
 * neighbours (recv, isend, allreduce). Not translated: MPI_IN_PLACE and MPI_BOTTOM
 * (NPB CG passes neither).
 */
#include <mpi.h>
#include <stdio.h>

/* The C request of each Fortran request variable lives at one address from the call that
 * starts it to the wait that completes it: tools that pair a wait with its send or receive
 * by the MPI_Request* they were given (the tracer) see the same pointer in both: one slot per
 * Fortran variable address (at most SLOTS variables; more stop the run with a message). */
#define SLOTS 256
static MPI_Fint *slot_owner[SLOTS];
static MPI_Request slot_request[SLOTS];

static MPI_Request *slot(MPI_Fint *fortran) {
    int i = 0;
    while (i < SLOTS && slot_owner[i] != NULL && slot_owner[i] != fortran) ++i;
    if (i == SLOTS) {
        fprintf(stderr, "fortran_mpi.c: more than %d Fortran request variables\n", SLOTS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    slot_owner[i] = fortran;
    return &slot_request[i];
}

void mpi_init_(MPI_Fint *ierr) { *ierr = MPI_Init(NULL, NULL); }

void mpi_finalize_(MPI_Fint *ierr) { *ierr = MPI_Finalize(); }

void mpi_send_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest, MPI_Fint *tag,
               MPI_Fint *comm, MPI_Fint *ierr) {
    *ierr = MPI_Send(buf, *count, MPI_Type_f2c(*type), *dest, *tag, MPI_Comm_f2c(*comm));
}

void mpi_isend_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest, MPI_Fint *tag,
                MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr) {
    MPI_Request *r = slot(request);
    *ierr = MPI_Isend(buf, *count, MPI_Type_f2c(*type), *dest, *tag, MPI_Comm_f2c(*comm), r);
    if (*ierr == MPI_SUCCESS) *request = MPI_Request_c2f(*r);
}

static void status_out(MPI_Status *s, MPI_Fint *status) {
    if (status != MPI_F_STATUS_IGNORE) MPI_Status_c2f(s, status);
}

void mpi_recv_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source, MPI_Fint *tag,
               MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr) {
    MPI_Status s;
    *ierr = MPI_Recv(buf, *count, MPI_Type_f2c(*type), *source, *tag, MPI_Comm_f2c(*comm), &s);
    if (*ierr == MPI_SUCCESS) status_out(&s, status);
}

void mpi_irecv_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source, MPI_Fint *tag,
                MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr) {
    MPI_Request *r = slot(request);
    *ierr = MPI_Irecv(buf, *count, MPI_Type_f2c(*type), *source, *tag, MPI_Comm_f2c(*comm), r);
    if (*ierr == MPI_SUCCESS) *request = MPI_Request_c2f(*r);
}

void mpi_wait_(MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierr) {
    MPI_Request *r = slot(request);
    MPI_Status s;
    *r = MPI_Request_f2c(*request);
    *ierr = MPI_Wait(r, &s);
    if (*ierr != MPI_SUCCESS) return;
    *request = MPI_Request_c2f(*r);
    status_out(&s, status);
}

void mpi_barrier_(MPI_Fint *comm, MPI_Fint *ierr) { *ierr = MPI_Barrier(MPI_Comm_f2c(*comm)); }

void mpi_bcast_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm,
                MPI_Fint *ierr) {
    *ierr = MPI_Bcast(buf, *count, MPI_Type_f2c(*type), *root, MPI_Comm_f2c(*comm));
}

void mpi_reduce_(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,
                 MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr) {
    *ierr = MPI_Reduce(sendbuf, recvbuf, *count, MPI_Type_f2c(*type), MPI_Op_f2c(*op), *root,
                       MPI_Comm_f2c(*comm));
}

void mpi_allreduce_(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,
                    MPI_Fint *comm, MPI_Fint *ierr) {
    *ierr = MPI_Allreduce(sendbuf, recvbuf, *count, MPI_Type_f2c(*type), MPI_Op_f2c(*op),
                          MPI_Comm_f2c(*comm));
}
