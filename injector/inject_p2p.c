/*
 * llamp latency injector: point-to-point, completion, probe and communicator wrappers.
 *
 * Sends put a header (send start time, size) on the shadow communicator, then send the data
 * unchanged: the sender is never delayed. Receives are recorded; every call that can complete
 * one (Recv, Wait*, Test*, Request_get_status, Sendrecv) checks it with
 * PMPI_Request_get_status, which does not free the request, pairs it with its header and hands
 * it to the application only once its release time has passed. Until then Test* say "not
 * complete" and Wait* keep polling, so each receive is released at its own time.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "llamp_inject.h"

/* ------------------------------------------------------------------ completion engine */
/* 1 if *req is complete and released; else 0 (and *wake = its release time if known) */
static int poll_req(MPI_Request *req, int64_t *wake)
{
    if (*req == MPI_REQUEST_NULL)
        return 1;
    li_recv *r = li_recv_find(*req);
    if (r != NULL && r->state != LI_IDLE) {
        if (!li_recv_check(r))
            return 0;
        if (li_now() >= r->release)
            return 1;
        if (r->release < *wake)
            *wake = r->release;
        return 0;
    }
    li_sched *s = li_nbc_find(*req);
    if (s != NULL)
        return li_nbc_check(s);
    li_send *snd = li_send_find(*req);
    if (snd != NULL)
        return li_send_check(snd);
    int flag = 0;
    PMPI_Request_get_status(*req, &flag, MPI_STATUS_IGNORE);
    return flag;
}

/* free (or deactivate) a request that poll_req found complete; its status */
static int finish_req(MPI_Request *req, MPI_Status *status)
{
    li_recv *r = li_recv_find(*req);
    li_sched *s = r ? NULL : li_nbc_find(*req);
    li_send *snd = r || s ? NULL : li_send_find(*req);
    int rc = PMPI_Wait(req, status);
    if (r != NULL && r->state == LI_FOUND)
        li_recv_finished(r);
    if (s != NULL)
        li_nbc_finished(s);
    if (snd != NULL)
        li_send_finished(snd);
    return rc;
}

static void idle(void)
{
    if (li_nbc_active())
        li_nbc_progress_all();
    li_relax();
}

static MPI_Status *status_at(MPI_Status *statuses, int i)
{
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

static int wait_one(MPI_Request *req, MPI_Status *status)
{
    LI_IN_MPI;
    for (;;) {
        int64_t wake = INT64_MAX;
        if (poll_req(req, &wake))
            return finish_req(req, status);
        idle();
    }
}

static int wait_all(int count, MPI_Request reqs[], MPI_Status statuses[])
{
    LI_IN_MPI;
    char stack_done[64];
    char *done = count <= 64 ? stack_done : calloc((size_t)count, 1);
    int remaining = count, rc = MPI_SUCCESS;
    if (done == NULL)
        return MPI_ERR_NO_MEM;
    memset(done, 0, (size_t)(count <= 64 ? 64 : count));
    while (remaining > 0) {
        int64_t wake = INT64_MAX;
        for (int i = 0; i < count; i++)
            if (!done[i] && poll_req(&reqs[i], &wake)) {
                done[i] = 1;
                remaining--;
            }
        if (remaining > 0)
            idle();
    }
    for (int i = 0; i < count; i++) {
        int e = finish_req(&reqs[i], status_at(statuses, i));
        if (e != MPI_SUCCESS) {
            rc = MPI_ERR_IN_STATUS;
            if (statuses != MPI_STATUSES_IGNORE)
                statuses[i].MPI_ERROR = e;
        }
    }
    if (done != stack_done)
        free(done);
    return rc;
}

/* MPI_REQUEST_NULL and inactive persistent receives take no part in Waitany/Waitsome/... */
static int ignored(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        return 1;
    li_recv *r = li_recv_find(req);
    return r != NULL && r->state == LI_IDLE;
}

static int all_null(int count, const MPI_Request reqs[])
{
    for (int i = 0; i < count; i++)
        if (!ignored(reqs[i]))
            return 0;
    return 1;
}

static void empty_status(MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    status->MPI_ERROR = MPI_SUCCESS;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
}

/* ------------------------------------------------------------------ sends */
/* A send is held back only in the emulated rendezvous protocol (bytes > S); buffered sends
 * complete locally whatever their size. */
#define LI_SEND(NAME, RENDEZVOUS)                                                              \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype type, int dest, int tag,            \
                   MPI_Comm comm)                                                              \
    {                                                                                          \
        li_comm *c = li_comm_get(comm);                                                        \
        if (c == NULL) {                                                                       \
            if (li_cfg.active)                                                                 \
                li_note_passthrough("MPI_" #NAME " on an unshadowed communicator");            \
            return PMPI_##NAME(buf, count, type, dest, tag, comm);                             \
        }                                                                                      \
        LI_IN_MPI;                                                                             \
        int64_t t0 = li_now();                                                                 \
        li_send_header(c, dest, tag, count, type, t0);                                         \
        int rc = PMPI_##NAME(buf, count, type, dest, tag, comm);                               \
        if ((RENDEZVOUS) && dest != MPI_PROC_NULL) {                                           \
            int64_t done = li_now();                                                           \
            li_wait_until(li_send_release(t0, li_type_bytes(count, type), done, done));        \
        }                                                                                      \
        return rc;                                                                             \
    }

#define LI_ISEND(NAME, RENDEZVOUS)                                                             \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype type, int dest, int tag,            \
                   MPI_Comm comm, MPI_Request *request)                                        \
    {                                                                                          \
        li_comm *c = li_comm_get(comm);                                                        \
        if (c == NULL) {                                                                       \
            if (li_cfg.active)                                                                 \
                li_note_passthrough("MPI_" #NAME " on an unshadowed communicator");            \
            return PMPI_##NAME(buf, count, type, dest, tag, comm, request);                    \
        }                                                                                      \
        int64_t t0 = li_now();                                                                 \
        li_send_header(c, dest, tag, count, type, t0);                                         \
        int rc = PMPI_##NAME(buf, count, type, dest, tag, comm, request);                      \
        if ((RENDEZVOUS) && rc == MPI_SUCCESS && dest != MPI_PROC_NULL)                        \
            li_send_track(*request, t0, li_type_bytes(count, type));                           \
        return rc;                                                                             \
    }

#define LI_SEND_INIT(NAME)                                                                     \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype type, int dest, int tag,            \
                   MPI_Comm comm, MPI_Request *request)                                        \
    {                                                                                          \
        int rc = PMPI_##NAME(buf, count, type, dest, tag, comm, request);                      \
        if (rc == MPI_SUCCESS && li_cfg.active)                                                \
            li_psend_add(*request, comm, dest, tag, count, type);                              \
        return rc;                                                                             \
    }

LI_SEND(Send, 1)
LI_SEND(Ssend, 1)
LI_SEND(Rsend, 1)
LI_SEND(Bsend, 0)
LI_ISEND(Isend, 1)
LI_ISEND(Issend, 1)
LI_ISEND(Irsend, 1)
LI_ISEND(Ibsend, 0)
LI_SEND_INIT(Send_init)
LI_SEND_INIT(Ssend_init)
LI_SEND_INIT(Rsend_init)
LI_SEND_INIT(Bsend_init)

/* ------------------------------------------------------------------ receives */
int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    li_comm *c = li_comm_get(comm);
    int rc = PMPI_Irecv(buf, count, type, source, tag, comm, request);
    if (c != NULL && rc == MPI_SUCCESS)
        li_recv_post(*request, c, source, tag, 0);
    else if (c == NULL && li_cfg.active)
        li_note_passthrough("MPI_Irecv on an unshadowed communicator");
    return rc;
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    li_comm *c = li_comm_get(comm);
    if (c == NULL) {
        if (li_cfg.active)
            li_note_passthrough("MPI_Recv on an unshadowed communicator");
        return PMPI_Recv(buf, count, type, source, tag, comm, status);
    }
    MPI_Request req;
    int rc = PMPI_Irecv(buf, count, type, source, tag, comm, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    li_recv_post(req, c, source, tag, 0);
    return wait_one(&req, status);
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                  MPI_Request *request)
{
    li_comm *c = li_comm_get(comm);
    int rc = PMPI_Recv_init(buf, count, type, source, tag, comm, request);
    if (c != NULL && rc == MPI_SUCCESS)
        li_recv_post(*request, c, source, tag, 1);
    return rc;
}

static int start_one(MPI_Request *request)
{
    if (!li_cfg.active)
        return PMPI_Start(request);
    li_psend_start(*request); /* the header goes before the data */
    li_recv *r = li_recv_find(*request);
    int rc = PMPI_Start(request);
    if (r != NULL && rc == MPI_SUCCESS)
        li_recv_start(r);
    else if (rc == MPI_SUCCESS)
        li_psend_started(*request);
    return rc;
}

int MPI_Start(MPI_Request *request) { return start_one(request); }

int MPI_Startall(int count, MPI_Request requests[])
{
    for (int i = 0; i < count; i++) {
        int rc = start_one(&requests[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                 MPI_Status *status)
{
    LI_IN_MPI;
    li_comm *c = li_comm_get(comm);
    if (c == NULL) {
        if (li_cfg.active)
            li_note_passthrough("MPI_Sendrecv on an unshadowed communicator");
        return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag,
                             comm, status);
    }
    MPI_Request reqs[2];
    MPI_Status sts[2];
    int rc = PMPI_Irecv(rbuf, rcount, rtype, source, rtag, comm, &reqs[0]);
    if (rc != MPI_SUCCESS)
        return rc;
    li_recv_post(reqs[0], c, source, rtag, 0);
    int64_t t0 = li_now();
    li_send_header(c, dest, stag, scount, stype, t0);
    rc = PMPI_Isend(sbuf, scount, stype, dest, stag, comm, &reqs[1]);
    if (rc != MPI_SUCCESS)
        return rc;
    if (dest != MPI_PROC_NULL)
        li_send_track(reqs[1], t0, li_type_bytes(scount, stype));
    rc = wait_all(2, reqs, sts);
    if (status != MPI_STATUS_IGNORE)
        *status = sts[0];
    return rc == MPI_ERR_IN_STATUS ? sts[0].MPI_ERROR : rc;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag, int source,
                         int rtag, MPI_Comm comm, MPI_Status *status)
{
    LI_IN_MPI;
    li_comm *c = li_comm_get(comm);
    if (c == NULL) {
        if (li_cfg.active)
            li_note_passthrough("MPI_Sendrecv_replace on an unshadowed communicator");
        return PMPI_Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status);
    }
    int size = 0, position = 0;
    PMPI_Pack_size(count, type, comm, &size);
    void *packed = malloc(size > 0 ? (size_t)size : 1);
    if (packed == NULL)
        return MPI_ERR_NO_MEM;
    PMPI_Pack(buf, count, type, packed, size, &position, comm);
    MPI_Request reqs[2];
    MPI_Status sts[2];
    int rc = PMPI_Irecv(buf, count, type, source, rtag, comm, &reqs[0]);
    if (rc == MPI_SUCCESS) {
        li_recv_post(reqs[0], c, source, rtag, 0);
        int64_t t0 = li_now();
        li_send_header(c, dest, stag, count, type, t0);
        rc = PMPI_Isend(packed, position, MPI_PACKED, dest, stag, comm, &reqs[1]);
        if (rc == MPI_SUCCESS && dest != MPI_PROC_NULL)
            li_send_track(reqs[1], t0, li_type_bytes(count, type));
        if (rc == MPI_SUCCESS) {
            rc = wait_all(2, reqs, sts);
            if (status != MPI_STATUS_IGNORE)
                *status = sts[0];
            if (rc == MPI_ERR_IN_STATUS)
                rc = sts[0].MPI_ERROR;
        }
    }
    free(packed);
    return rc;
}

/* ------------------------------------------------------------------ completion */
int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (!li_cfg.active)
        return PMPI_Wait(request, status);
    return wait_one(request, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    if (!li_cfg.active)
        return PMPI_Waitall(count, requests, statuses);
    return wait_all(count, requests, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    LI_IN_MPI;
    if (!li_cfg.active)
        return PMPI_Waitany(count, requests, index, status);
    if (all_null(count, requests)) {
        *index = MPI_UNDEFINED;
        empty_status(status);
        return MPI_SUCCESS;
    }
    for (;;) {
        int64_t wake = INT64_MAX;
        for (int i = 0; i < count; i++) {
            if (ignored(requests[i]))
                continue;
            if (poll_req(&requests[i], &wake)) {
                *index = i;
                return finish_req(&requests[i], status);
            }
        }
        idle();
    }
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    LI_IN_MPI;
    if (!li_cfg.active)
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    if (all_null(incount, requests)) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    for (;;) {
        int64_t wake = INT64_MAX;
        int n = 0, rc = MPI_SUCCESS;
        for (int i = 0; i < incount; i++) {
            if (ignored(requests[i]))
                continue;
            if (poll_req(&requests[i], &wake))
                indices[n++] = i;
        }
        if (n > 0) {
            for (int k = 0; k < n; k++) {
                int e = finish_req(&requests[indices[k]], status_at(statuses, k));
                if (e != MPI_SUCCESS)
                    rc = MPI_ERR_IN_STATUS;
            }
            *outcount = n;
            return rc;
        }
        idle();
    }
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    LI_IN_MPI;
    if (!li_cfg.active)
        return PMPI_Test(request, flag, status);
    int64_t wake = INT64_MAX;
    if (li_nbc_active())
        li_nbc_progress_all();
    *flag = poll_req(request, &wake);
    if (*flag)
        return finish_req(request, status);
    return MPI_SUCCESS;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    LI_IN_MPI;
    if (!li_cfg.active)
        return PMPI_Testall(count, requests, flag, statuses);
    int64_t wake = INT64_MAX;
    int all = 1, rc = MPI_SUCCESS;
    if (li_nbc_active())
        li_nbc_progress_all();
    for (int i = 0; i < count; i++)
        if (!poll_req(&requests[i], &wake))
            all = 0;
    *flag = all;
    if (!all)
        return MPI_SUCCESS;
    for (int i = 0; i < count; i++)
        if (finish_req(&requests[i], status_at(statuses, i)) != MPI_SUCCESS)
            rc = MPI_ERR_IN_STATUS;
    return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    LI_IN_MPI;
    if (!li_cfg.active)
        return PMPI_Testany(count, requests, index, flag, status);
    if (li_nbc_active())
        li_nbc_progress_all();
    if (all_null(count, requests)) {
        *flag = 1;
        *index = MPI_UNDEFINED;
        empty_status(status);
        return MPI_SUCCESS;
    }
    int64_t wake = INT64_MAX;
    for (int i = 0; i < count; i++) {
        if (ignored(requests[i]))
            continue;
        if (poll_req(&requests[i], &wake)) {
            *flag = 1;
            *index = i;
            return finish_req(&requests[i], status);
        }
    }
    *flag = 0;
    *index = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    LI_IN_MPI;
    if (!li_cfg.active)
        return PMPI_Testsome(incount, requests, outcount, indices, statuses);
    if (li_nbc_active())
        li_nbc_progress_all();
    if (all_null(incount, requests)) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    int64_t wake = INT64_MAX;
    int n = 0, rc = MPI_SUCCESS;
    for (int i = 0; i < incount; i++) {
        if (ignored(requests[i]))
            continue;
        if (poll_req(&requests[i], &wake))
            indices[n++] = i;
    }
    for (int k = 0; k < n; k++)
        if (finish_req(&requests[indices[k]], status_at(statuses, k)) != MPI_SUCCESS)
            rc = MPI_ERR_IN_STATUS;
    *outcount = n;
    return rc;
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    LI_IN_MPI;
    if (!li_cfg.active || request == MPI_REQUEST_NULL)
        return PMPI_Request_get_status(request, flag, status);
    li_recv *r = li_recv_find(request);
    if (r != NULL && r->state != LI_IDLE) {
        *flag = li_recv_check(r) && li_now() >= r->release;
        if (*flag && status != MPI_STATUS_IGNORE)
            *status = r->status;
        return MPI_SUCCESS;
    }
    li_sched *s = li_nbc_find(request);
    if (s != NULL) {
        *flag = li_nbc_check(s);
        if (!*flag)
            return MPI_SUCCESS;
    }
    li_send *snd = li_send_find(request);
    if (snd != NULL && !li_send_check(snd)) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    return PMPI_Request_get_status(request, flag, status);
}

int MPI_Request_free(MPI_Request *request)
{
    if (li_cfg.active && *request != MPI_REQUEST_NULL) {
        li_recv *r = li_recv_find(*request);
        if (r != NULL)
            li_recv_forget(r);
        li_send *snd = li_send_find(*request);
        if (snd != NULL)
            li_send_finished(snd);
        li_psend_forget(*request);
    }
    return PMPI_Request_free(request);
}

/* ------------------------------------------------------------------ probes */
/* A message is visible to a probe only from its release time on (arrival + ΔL). */
int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    LI_IN_MPI;
    li_comm *c = li_comm_get(comm);
    if (c == NULL)
        return PMPI_Iprobe(source, tag, comm, flag, status);
    MPI_Status st;
    int rc = PMPI_Iprobe(source, tag, comm, flag, &st);
    if (rc != MPI_SUCCESS || !*flag)
        return rc;
    int64_t seen = li_now();
    int64_t release = li_probe_release(c, st.MPI_SOURCE, st.MPI_TAG, seen);
    if (release != LI_NEVER && seen < release) {
        *flag = 0;
        li_st.probes_delayed++;
        return MPI_SUCCESS;
    }
    if (status != MPI_STATUS_IGNORE)
        *status = st;
    return MPI_SUCCESS;
}

/* blocks until a message is visible; its status */
static int probe_visible(li_comm *c, int source, int tag, MPI_Comm comm, MPI_Status *st)
{
    for (;;) {
        int flag = 0;
        int rc = PMPI_Iprobe(source, tag, comm, &flag, st);
        if (rc != MPI_SUCCESS)
            return rc;
        if (flag) {
            int64_t release = li_probe_release(c, st->MPI_SOURCE, st->MPI_TAG, li_now());
            if (release == LI_NEVER || li_now() >= release)
                return MPI_SUCCESS;
            li_st.probes_delayed++;
            li_wait_until(release);
            return MPI_SUCCESS;
        }
        idle();
    }
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    LI_IN_MPI;
    li_comm *c = li_comm_get(comm);
    if (c == NULL)
        return PMPI_Probe(source, tag, comm, status);
    MPI_Status st;
    int rc = probe_visible(c, source, tag, comm, &st);
    if (status != MPI_STATUS_IGNORE)
        *status = st;
    return rc;
}

/* matched probes: the message → communicator of each outstanding MPI_Message */
typedef struct li_msg {
    MPI_Message msg;
    li_comm *c;
    struct li_msg *next;
} li_msg;
static li_msg *messages = NULL;

static void remember_message(MPI_Message msg, li_comm *c)
{
    li_msg *m = malloc(sizeof *m);
    if (m == NULL)
        return;
    m->msg = msg;
    m->c = c;
    c->refs++;
    m->next = messages;
    messages = m;
}

static li_comm *message_comm(MPI_Message msg)
{
    for (li_msg **pp = &messages; *pp; pp = &(*pp)->next)
        if ((*pp)->msg == msg) {
            li_msg *m = *pp;
            li_comm *c = m->c;
            *pp = m->next;
            free(m);
            c->refs--; /* the caller holds the communicator through its receive */
            return c;
        }
    return NULL;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    LI_IN_MPI;
    li_comm *c = li_comm_get(comm);
    if (c == NULL)
        return PMPI_Mprobe(source, tag, comm, message, status);
    MPI_Status st;
    int rc = probe_visible(c, source, tag, comm, &st);
    if (rc != MPI_SUCCESS)
        return rc;
    /* the message just probed is the first matching one: Mprobe takes it */
    rc = PMPI_Mprobe(st.MPI_SOURCE, st.MPI_TAG, comm, message, status);
    if (rc == MPI_SUCCESS && *message != MPI_MESSAGE_NO_PROC)
        remember_message(*message, c);
    return rc;
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *status)
{
    LI_IN_MPI;
    li_comm *c = li_comm_get(comm);
    if (c == NULL)
        return PMPI_Improbe(source, tag, comm, flag, message, status);
    MPI_Status st;
    int rc = MPI_Iprobe(source, tag, comm, flag, &st);
    if (rc != MPI_SUCCESS || !*flag)
        return rc;
    rc = PMPI_Improbe(st.MPI_SOURCE, st.MPI_TAG, comm, flag, message, status);
    if (rc == MPI_SUCCESS && *flag && *message != MPI_MESSAGE_NO_PROC)
        remember_message(*message, c);
    return rc;
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status)
{
    LI_IN_MPI;
    li_comm *c = li_cfg.active ? message_comm(*message) : NULL;
    if (c == NULL)
        return PMPI_Mrecv(buf, count, type, message, status);
    MPI_Request req;
    int rc = PMPI_Imrecv(buf, count, type, message, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    li_recv_post(req, c, MPI_ANY_SOURCE, MPI_ANY_TAG, 0);
    return wait_one(&req, status);
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
               MPI_Request *request)
{
    li_comm *c = li_cfg.active ? message_comm(*message) : NULL;
    int rc = PMPI_Imrecv(buf, count, type, message, request);
    if (c != NULL && rc == MPI_SUCCESS)
        li_recv_post(*request, c, MPI_ANY_SOURCE, MPI_ANY_TAG, 0);
    return rc;
}

/* ------------------------------------------------------------------ communicators */
#define LI_NEWCOMM(call, newcomm)                                                              \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        if (rc_ == MPI_SUCCESS && li_cfg.active && *(newcomm) != MPI_COMM_NULL)                \
            li_comm_register(*(newcomm));                                                      \
        return rc_;                                                                            \
    } while (0)

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    LI_NEWCOMM(PMPI_Comm_dup(comm, newcomm), newcomm);
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    LI_NEWCOMM(PMPI_Comm_dup_with_info(comm, info, newcomm), newcomm);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    LI_NEWCOMM(PMPI_Comm_split(comm, color, key, newcomm), newcomm);
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    LI_NEWCOMM(PMPI_Comm_split_type(comm, split_type, key, info, newcomm), newcomm);
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    LI_NEWCOMM(PMPI_Comm_create(comm, group, newcomm), newcomm);
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    LI_NEWCOMM(PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm);
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                    MPI_Comm *newcomm)
{
    LI_NEWCOMM(PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm), newcomm);
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    LI_NEWCOMM(PMPI_Cart_sub(comm, remain_dims, newcomm), newcomm);
}

int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder,
                     MPI_Comm *newcomm)
{
    LI_NEWCOMM(PMPI_Graph_create(comm, nnodes, index, edges, reorder, newcomm), newcomm);
}

int MPI_Dist_graph_create(MPI_Comm comm, int n, const int nodes[], const int degrees[],
                          const int targets[], const int weights[], MPI_Info info, int reorder,
                          MPI_Comm *newcomm)
{
    LI_NEWCOMM(PMPI_Dist_graph_create(comm, n, nodes, degrees, targets, weights, info, reorder,
                                      newcomm),
               newcomm);
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                   const int sourceweights[], int outdegree,
                                   const int destinations[], const int destweights[],
                                   MPI_Info info, int reorder, MPI_Comm *newcomm)
{
    LI_NEWCOMM(PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree,
                                               destinations, destweights, info, reorder, newcomm),
               newcomm);
}

int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newcomm)
{
    LI_NEWCOMM(PMPI_Intercomm_merge(intercomm, high, newcomm), newcomm);
}

/* ------------------------------------------------------------------ life cycle */
int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        li_start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        li_start();
    return rc;
}

int MPI_Finalize(void)
{
    li_finish();
    return PMPI_Finalize();
}
