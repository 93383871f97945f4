/*
 * llamp PMPI tracer: the record writer and the tracer's life cycle (see llamp_trace.h).
 *
 * Records go into one large per-rank buffer ($LLAMP_TRACE_BUFFER_MB, default 16 MiB) that is
 * written to pmpi-trace-rank-<N>.txt when it is nearly full and at MPI_Finalize: a call costs
 * two PMPI_Wtime and the formatting (about 100 ns) and no system call between flushes. The
 * buffer is also written if the process exits without MPI_Finalize (atexit) or calls
 * MPI_Abort, so a failed run leaves a readable, visibly truncated trace.
 *
 * Clocks: PMPI_Wtime is not synchronised across ranks (Open MPI counts from each process's
 * MPI_Init). At MPI_Init and MPI_Finalize rank 0 measures every rank's offset by ping-pong on a
 * private duplicate of MPI_COMM_WORLD (the round trip with the smallest delay of several wins,
 * as liballprof's sync_tree) and each file gets "# Init clockdiff: <µs>" / "# Finalize
 * clockdiff: <µs>" = clock_0 - clock_r, which the reader uses to align ranks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llamp_trace.h"

#define LT_VERSION "1.0"
#define LT_RECORD_MAX 2048   /* bytes a record without count arrays can take */
#define LT_SYNC_ROUNDS 12

LT_HIDDEN int lt_on = 0;

static char *buf = NULL;
static size_t cap = 0, pos = 0;
static size_t rec_start = 0; /* where the record being written starts, if in_record */
static int in_record = 0;
static int fd = -1;
static int world_rank = 0, world_size = 1;
static MPI_Comm sync_comm = MPI_COMM_NULL;
static MPI_Group world_group = MPI_GROUP_NULL;
static int locking = 0;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char path[4096];
static pid_t owner = 0; /* a fork()ed child must not write its copy of the buffer */

/* ------------------------------------------------------------------ output buffer */
/* Write the buffer out, except the record being written: it stays, moved to the front, so that
 * a "# llamp comm" line can still be put in front of it (lt_comm). */
static void flush_buffer(void)
{
    size_t keep = in_record ? rec_start : pos, done = 0;
    while (done < keep && fd >= 0) {
        ssize_t n = write(fd, buf + done, keep - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "llamp tracer: rank %d: writing %s failed: %s; tracing stops\n",
                    world_rank, path, strerror(errno));
            close(fd);
            fd = -1;
            lt_on = 0;
            break;
        }
        done += (size_t)n;
    }
    memmove(buf, buf + keep, pos - keep);
    pos -= keep;
    rec_start = 0;
}

static void reserve(size_t n)
{
    if (pos + n <= cap)
        return;
    flush_buffer();
    if (pos + n > cap) {
        size_t want = 2 * (pos + n);
        char *bigger = realloc(buf, want);
        if (bigger == NULL) {
            fprintf(stderr, "llamp tracer: rank %d: out of memory for a %zu-byte record\n",
                    world_rank, pos + n);
            abort();
        }
        buf = bigger;
        cap = want;
    }
}

static inline void put_char(char c) { buf[pos++] = c; }

static inline void put_str(const char *s)
{
    while (*s)
        buf[pos++] = *s++;
}

static const char digits2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* decimal at p, two digits per step from the end (addresses have 15 digits); returns the end */
static inline char *fmt_u64(char *p, unsigned long long v)
{
    char tmp[24];
    char *end = tmp + sizeof tmp, *q = end;
    while (v >= 100) {
        unsigned i = (unsigned)(v % 100) * 2;
        v /= 100;
        *--q = digits2[i + 1];
        *--q = digits2[i];
    }
    if (v >= 10) {
        *--q = digits2[v * 2 + 1];
        *--q = digits2[v * 2];
    } else {
        *--q = (char)('0' + v);
    }
    size_t n = (size_t)(end - q);
    memcpy(p, q, n);
    return p + n;
}

static inline void put_u64(unsigned long long v) { pos = (size_t)(fmt_u64(buf + pos, v) - buf); }

static inline void put_i64(long long v)
{
    if (v < 0) {
        put_char('-');
        put_u64((unsigned long long)(-(v + 1)) + 1ULL);
    } else {
        put_u64((unsigned long long)v);
    }
}

/* µs with three decimals (ns resolution) from seconds */
static inline void put_time(double seconds)
{
    double ns = seconds * 1e9 + 0.5;
    unsigned long long v = ns > 0 ? (unsigned long long)ns : 0;
    unsigned frac = (unsigned)(v % 1000);
    put_u64(v / 1000);
    buf[pos] = '.';
    buf[pos + 1] = (char)('0' + frac / 100);
    buf[pos + 2] = digits2[(frac % 100) * 2];
    buf[pos + 3] = digits2[(frac % 100) * 2 + 1];
    pos += 4;
}

/* ------------------------------------------------------------------ record API */
LT_HIDDEN double lt_now(void) { return PMPI_Wtime(); }

LT_HIDDEN void lt_begin(const char *name, double t_start)
{
    if (locking)
        pthread_mutex_lock(&lock);
    reserve(LT_RECORD_MAX);
    rec_start = pos;
    in_record = 1;
    put_str(name);
    put_char(':');
    put_time(t_start);
}

LT_HIDDEN void lt_begin_init(const char *name)
{
    if (locking)
        pthread_mutex_lock(&lock);
    reserve(LT_RECORD_MAX);
    rec_start = pos;
    in_record = 1;
    put_str(name);
    put_str(":-");
}

LT_HIDDEN void lt_int(long long value)
{
    put_char(':');
    put_i64(value);
}

LT_HIDDEN void lt_ptr(const void *pointer)
{
    put_char(':');
    put_u64((unsigned long long)(uintptr_t)pointer);
}

LT_HIDDEN void lt_handle(unsigned long handle)
{
    put_char(':');
    put_u64(handle);
}

/* liballprof's datatype ids (LogGOPSim numbers.h); other types print their handle */
static unsigned long dtype_id(MPI_Datatype t)
{
    if (t == MPI_INT) return 1;
    if (t == MPI_INTEGER) return 2;
    if (t == MPI_LONG) return 3;
    if (t == MPI_SHORT) return 4;
    if (t == MPI_UNSIGNED) return 5;
    if (t == MPI_UNSIGNED_LONG) return 6;
    if (t == MPI_UNSIGNED_SHORT) return 7;
    if (t == MPI_FLOAT) return 8;
    if (t == MPI_REAL) return 9;
    if (t == MPI_DOUBLE) return 10;
    if (t == MPI_DOUBLE_PRECISION) return 11;
    if (t == MPI_LONG_DOUBLE) return 12;
    if (t == MPI_BYTE) return 13;
    if (t == MPI_FLOAT_INT) return 14;
    if (t == MPI_DOUBLE_INT) return 15;
    if (t == MPI_LONG_INT) return 16;
    if (t == MPI_2INT) return 17;
    if (t == MPI_SHORT_INT) return 18;
    if (t == MPI_LONG_DOUBLE_INT) return 19;
    if (t == MPI_LOGICAL) return 20;
    if (t == MPI_COMPLEX || t == MPI_CHARACTER) return 21;
    if (t == MPI_DOUBLE_COMPLEX) return 22;
    return LT_HANDLE(t);
}

LT_HIDDEN void lt_dtype(MPI_Datatype type)
{
    if (type == MPI_DATATYPE_NULL) {
        lt_dtype_unused();
        return;
    }
    /* one-entry cache for liballprof's predefined types (a derived type's handle may be
     * reused for another type after MPI_Type_free) */
    static MPI_Datatype last = MPI_DATATYPE_NULL;
    static unsigned long last_id;
    static int last_size;
    static MPI_Aint last_extent;
    if (type != last) {
        MPI_Aint lb;
        last_id = dtype_id(type);
        PMPI_Type_size(type, &last_size);
        PMPI_Type_get_extent(type, &lb, &last_extent);
        last = last_id <= 22 ? type : MPI_DATATYPE_NULL;
    }
    put_char(':');
    put_u64(last_id);
    put_char(',');
    put_i64(last_size);
    put_char(',');
    put_i64((long long)last_extent);
}

LT_HIDDEN void lt_dtype_unused(void) { put_str(":0,0,0"); }

static void define_in_record(MPI_Comm comm);
static int known_has(unsigned long handle);

LT_HIDDEN void lt_comm(MPI_Comm comm)
{
    int rank = 0, size = 0;
    if (comm != MPI_COMM_WORLD && comm != MPI_COMM_SELF && comm != MPI_COMM_NULL &&
        !known_has(LT_HANDLE(comm)))
        define_in_record(comm); /* created by a call the tracer does not wrap */
    if (comm == MPI_COMM_WORLD) {
        rank = world_rank;
        size = world_size;
    } else if (comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(comm, &rank);
        PMPI_Comm_size(comm, &size);
    }
    put_char(':');
    put_u64(LT_HANDLE(comm));
    put_char(',');
    put_i64(rank);
    put_char(',');
    put_i64(size);
}

LT_HIDDEN void lt_op(MPI_Op op)
{
    unsigned long code;
    if (op == MPI_MIN) code = 1;
    else if (op == MPI_MAX) code = 2;
    else if (op == MPI_SUM) code = 3;
    else if (op == MPI_PROD) code = 4;
    else if (op == MPI_LAND) code = 5;
    else if (op == MPI_BAND) code = 6;
    else if (op == MPI_LOR) code = 7;
    else if (op == MPI_BOR) code = 8;
    else if (op == MPI_LXOR) code = 9;
    else if (op == MPI_BXOR) code = 10;
    else if (op == MPI_MINLOC) code = 11;
    else if (op == MPI_MAXLOC) code = 12;
    else code = LT_HANDLE(op);
    put_char(':');
    put_u64(code);
}

LT_HIDDEN void lt_counts(const void *pointer, const int *values, int n)
{
    lt_ptr(pointer);
    if (values == NULL || n <= 0)
        return;
    reserve(16 + 12 * (size_t)n);
    put_char(':');
    for (int i = 0; i < n; i++) {
        if (i)
            put_char(',');
        put_i64(values[i]);
    }
    reserve(LT_RECORD_MAX);
}

LT_HIDDEN void lt_end(double t_end)
{
    put_char(':');
    put_time(t_end);
    put_char('\n');
    in_record = 0;
    if (locking)
        pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------------ communicators */
/* Handles whose "# llamp comm" line is in force: open addressing, 0 = empty, 1 = deleted
 * (handles are non-null pointers or MPICH's 0x84... integers, never 0 or 1). A handle freed
 * with MPI_Comm_free leaves the set, so a communicator that later gets the same handle from a
 * call the tracer does not wrap is defined afresh where it is first used. */
static unsigned long *known = NULL;
static size_t known_cap = 0, known_fill = 0;

static size_t known_slot(unsigned long handle)
{
    return (size_t)((handle * 0x9E3779B97F4A7C15ULL) >> 20) & (known_cap - 1);
}

static int known_has(unsigned long handle)
{
    if (known_cap == 0)
        return 0;
    for (size_t i = known_slot(handle);; i = (i + 1) & (known_cap - 1)) {
        if (known[i] == handle)
            return 1;
        if (known[i] == 0)
            return 0;
    }
}

static void known_add(unsigned long handle)
{
    if (known_has(handle))
        return;
    if (2 * (known_fill + 1) > known_cap) { /* grow (and drop deleted slots) */
        unsigned long *old = known;
        size_t old_cap = known_cap;
        known_cap = known_cap ? 2 * known_cap : 64;
        known = calloc(known_cap, sizeof *known);
        known_fill = 0;
        if (known == NULL)
            abort();
        for (size_t i = 0; i < old_cap; i++)
            if (old[i] > 1)
                known_add(old[i]);
        free(old);
    }
    size_t i = known_slot(handle);
    while (known[i] > 1)
        i = (i + 1) & (known_cap - 1);
    if (known[i] == 0)
        known_fill++;
    known[i] = handle;
}

LT_HIDDEN void lt_comm_forget(unsigned long handle)
{
    if (known_cap == 0)
        return;
    if (locking)
        pthread_mutex_lock(&lock);
    for (size_t i = known_slot(handle); known[i] != 0; i = (i + 1) & (known_cap - 1))
        if (known[i] == handle) {
            known[i] = 1;
            break;
        }
    if (locking)
        pthread_mutex_unlock(&lock);
}

/* "# llamp comm <handle> <size> <r0>,...\n" in a malloc'd string (NULL for an intercommunicator);
 * remembers the handle */
static char *comm_line(MPI_Comm comm, size_t *length)
{
    int inter = 0, n = 0;
    known_add(LT_HANDLE(comm));
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        return NULL;
    PMPI_Comm_size(comm, &n);
    int *ranks = malloc(2 * (size_t)n * sizeof(int));
    char *line = malloc(64 + 12 * (size_t)n), *p = line;
    if (ranks == NULL || line == NULL) {
        free(ranks);
        free(line);
        return NULL;
    }
    MPI_Group group;
    PMPI_Comm_group(comm, &group);
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    PMPI_Group_translate_ranks(group, n, ranks, world_group, ranks + n);
    PMPI_Group_free(&group);
    memcpy(p, "# llamp comm ", 13);
    p = fmt_u64(p + 13, LT_HANDLE(comm));
    *p++ = ' ';
    p = fmt_u64(p, (unsigned long long)n);
    *p++ = ' ';
    for (int i = 0; i < n; i++) {
        if (i)
            *p++ = ',';
        p = fmt_u64(p, (unsigned long long)ranks[n + i]);
    }
    *p++ = '\n';
    free(ranks);
    *length = (size_t)(p - line);
    return line;
}

LT_HIDDEN void lt_comm_created(MPI_Comm comm)
{
    size_t n;
    if (!lt_on || comm == MPI_COMM_NULL)
        return;
    if (locking)
        pthread_mutex_lock(&lock);
    char *line = comm_line(comm, &n);
    if (line != NULL) {
        reserve(n);
        memcpy(buf + pos, line, n);
        pos += n;
        free(line);
    }
    if (locking)
        pthread_mutex_unlock(&lock);
}

/* a communicator first seen inside a record: its line goes in front of the record */
static void define_in_record(MPI_Comm comm)
{
    size_t n;
    char *line = comm_line(comm, &n);
    if (line == NULL)
        return;
    reserve(n); /* keeps the open record in the buffer */
    memmove(buf + rec_start + n, buf + rec_start, pos - rec_start);
    memcpy(buf + rec_start, line, n);
    pos += n;
    rec_start += n;
    free(line);
}

/* ------------------------------------------------------------------ clocks */
/* clock_0 - clock_this in µs, measured by rank 0 against every rank (0 at rank 0) */
static double clock_offset_us(void)
{
    double mine = 0.0, *all = NULL;
    const int tag = 1;
    if (world_size == 1)
        return 0.0;
    if (world_rank == 0) {
        all = calloc((size_t)world_size, sizeof(double));
        for (int r = 1; r < world_size; r++) {
            double best = INFINITY, offset = 0.0;
            for (int k = 0; k < LT_SYNC_ROUNDS; k++) {
                double remote = 0.0, t0 = PMPI_Wtime();
                PMPI_Send(NULL, 0, MPI_BYTE, r, tag, sync_comm);
                PMPI_Recv(&remote, 1, MPI_DOUBLE, r, tag, sync_comm, MPI_STATUS_IGNORE);
                double t1 = PMPI_Wtime();
                if (t1 - t0 < best) {
                    best = t1 - t0;
                    offset = (t0 + t1) / 2.0 - remote;
                }
            }
            if (all)
                all[r] = offset * 1e6;
        }
    } else {
        for (int k = 0; k < LT_SYNC_ROUNDS; k++) {
            PMPI_Recv(NULL, 0, MPI_BYTE, 0, tag, sync_comm, MPI_STATUS_IGNORE);
            double now = PMPI_Wtime();
            PMPI_Send(&now, 1, MPI_DOUBLE, 0, tag, sync_comm);
        }
    }
    PMPI_Scatter(all, 1, MPI_DOUBLE, &mine, 1, MPI_DOUBLE, 0, sync_comm);
    free(all);
    return mine;
}

/* ------------------------------------------------------------------ life cycle */
static void at_exit(void)
{
    if (fd < 0 || getpid() != owner)
        return;
    if (in_record) { /* exit() from another thread in the middle of a record */
        pos = rec_start;
        in_record = 0;
    }
    reserve(128);
    put_str("# process exited without MPI_Finalize: trace truncated\n");
    flush_buffer();
    close(fd);
    fd = -1;
    lt_on = 0;
}

static void put_header_line(const char *text)
{
    reserve(strlen(text) + 1);
    put_str(text);
}

LT_HIDDEN void lt_start(int provided)
{
    static int registered = 0;
    char line[512];
    const char *dir = getenv("LLAMP_TRACE_DIR");
    const char *mb = getenv("LLAMP_TRACE_BUFFER_MB");
    size_t size = (size_t)16 << 20;

    owner = getpid();
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    PMPI_Comm_dup(MPI_COMM_WORLD, &sync_comm);
    locking = provided == MPI_THREAD_MULTIPLE;
    if (mb != NULL && atoi(mb) > 0)
        size = (size_t)atoi(mb) << 20;
    buf = malloc(size);
    if (buf == NULL) {
        fprintf(stderr, "llamp tracer: rank %d: cannot allocate a %zu-byte buffer; not traced\n",
                world_rank, size);
        return;
    }
    cap = size;
    pos = 0;
    if (dir == NULL || *dir == '\0')
        dir = ".";
    mkdir(dir, 0755); /* one level; the launcher normally created it */
    snprintf(path, sizeof path, "%s/pmpi-trace-rank-%d.txt", dir, world_rank);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "llamp tracer: rank %d: cannot create %s: %s; not traced\n", world_rank,
                path, strerror(errno));
        free(buf);
        buf = NULL;
        cap = 0;
        return;
    }
    double offset = clock_offset_us();
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    snprintf(line, sizeof line, "# llamp-tracer %s output file (liballprof format)\n",
             LT_VERSION);
    put_header_line(line);
#if defined(OPEN_MPI)
    put_header_line("# llamp mpi openmpi\n");
#elif defined(MPICH) || defined(MPICH_VERSION)
    put_header_line("# llamp mpi mpich\n");
#endif
    snprintf(line, sizeof line, "# host: %s\n# world size: %d\n# Init clockdiff: %.3f\n\n", host,
             world_size, offset);
    put_header_line(line);
    lt_on = 1;
    lt_comm_created(MPI_COMM_WORLD);
    if (!registered) {
        atexit(at_exit);
        registered = 1;
    }
}

LT_HIDDEN void lt_finish(double t_start)
{
    char line[128];
    if (!lt_on)
        return;
    double offset = clock_offset_us();
    if (locking)
        pthread_mutex_lock(&lock);
    snprintf(line, sizeof line, "# Finalize clockdiff: %.3f\n", offset);
    put_header_line(line);
    reserve(LT_RECORD_MAX);
    put_str("MPI_Finalize:");
    put_time(t_start);
    put_str(":-\n");
    lt_on = 0;
    flush_buffer();
    if (fd >= 0 && close(fd) != 0)
        fprintf(stderr, "llamp tracer: rank %d: closing %s failed: %s\n", world_rank, path,
                strerror(errno));
    fd = -1;
    free(buf);
    buf = NULL;
    cap = pos = 0;
    if (locking)
        pthread_mutex_unlock(&lock);
    PMPI_Comm_free(&sync_comm);
    PMPI_Group_free(&world_group);
}

LT_HIDDEN void lt_note_abort(int errorcode)
{
    char line[96];
    if (fd < 0)
        return;
    snprintf(line, sizeof line, "# MPI_Abort called with errorcode %d: trace truncated\n",
             errorcode);
    put_header_line(line);
    flush_buffer();
    close(fd);
    fd = -1;
    lt_on = 0;
}
