/*
 * llamp-injector-check: micro-benchmarks and self-checks of the latency injector.
 * Ranks share CLOCK_MONOTONIC (one host), so one-way times are measured directly.
 *
 *   rtt SIZE ITERS         median ping-pong round trip between ranks 0 and 1
 *   exchange SIZE ITERS    ranks 0 and 1 each post Irecv, Send (blocking), Wait (NPB CG's
 *                          exchange): median time of one exchange on rank 0
 *   b2b ITERS              two back-to-back 8-byte sends from 0 to a waiting receiver 1:
 *                          arrival of each after its send started, gap between the two
 *                          arrivals and between the two sends (LLAMP Fig. 8A vs 8C)
 *   compute US ITERS [BYTES]
 *                          receiver 1 posts Irecv (of BYTES, default 8), computes US µs,
 *                          then waits: time in MPI_Wait when the message was due (send + ΔL)
 *                          before the compute ended, and completion − (send + ΔL) when it was
 *                          due after
 *   coll                   every collective (roots, counts, MPI_IN_PLACE, non-commutative
 *                          operation, non-blocking variants) checked against known results
 *   p2p                    wildcards, probes, Waitany/Waitsome/Testsome, persistent requests,
 *                          Sendrecv_replace, overlapping non-blocking collectives
 * Timing modes print one JSON object on rank 1 (rtt: rank 0); check modes print "ok" or the
 * first failure and exit 1.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, size;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void spin_ns(int64_t ns)
{
    int64_t end = now_ns() + ns;
    while (now_ns() < end)
        ;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t median(int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp64);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* MPI_STATUSES_IGNORE through a call, so that GCC does not take MPICH's (MPI_Status *)1 for a
 * zero-length array (-Wstringop-overflow); the injector must handle it like any caller's */
__attribute__((noinline)) static MPI_Status *statuses_ignore(void) { return MPI_STATUSES_IGNORE; }

static int64_t *samples(int n)
{
    int64_t *v = calloc((size_t)n, sizeof *v);
    if (v == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    return v;
}

/* ------------------------------------------------------------------ timing */
static void mode_rtt(int bytes, int iters)
{
    char *buf = calloc((size_t)bytes + 1, 1);
    int64_t *rtt = samples(iters);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = -20; it < iters; it++) {
        if (rank == 0) {
            int64_t t0 = now_ns();
            MPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (it >= 0)
                rtt[it] = now_ns() - t0;
        } else if (rank == 1) {
            MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    if (rank == 0)
        printf("{\"mode\": \"rtt\", \"bytes\": %d, \"iters\": %d, \"rtt_ns\": %lld}\n", bytes,
               iters, (long long)median(rtt, iters));
    free(buf);
    free(rtt);
}

static void mode_exchange(int bytes, int iters)
{
    char *out = calloc((size_t)bytes + 1, 1), *in = calloc((size_t)bytes + 1, 1);
    int64_t *took = samples(iters);
    int peer = 1 - rank;
    for (int it = -20; it < iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank > 1)
            continue;
        MPI_Request r;
        int64_t t0 = now_ns();
        MPI_Irecv(in, bytes, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &r);
        MPI_Send(out, bytes, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        if (it >= 0)
            took[it] = now_ns() - t0;
    }
    if (rank == 0)
        printf("{\"mode\": \"exchange\", \"bytes\": %d, \"iters\": %d, \"exchange_ns\": %lld}\n",
               bytes, iters, (long long)median(took, iters));
    free(out);
    free(in);
    free(took);
}

static void mode_b2b(int iters)
{
    int64_t *first = samples(iters), *second = samples(iters), *gap = samples(iters),
            *sgap = samples(iters), *sender = samples(iters), *both = samples(iters);
    double a = 0, b = 0;
    for (int it = -10; it < 2 * iters; it++) {
        int all = it >= iters; /* second half: one MPI_Waitall for both */
        int k = all ? it - iters : it;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            MPI_Request r[2];
            int64_t tA, tB, ts[3];
            MPI_Irecv(&a, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, &r[0]);
            MPI_Irecv(&b, 1, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD, &r[1]);
            if (all) {
                MPI_Waitall(2, r, statuses_ignore());
                tA = tB = now_ns();
            } else {
                MPI_Wait(&r[0], MPI_STATUS_IGNORE);
                tA = now_ns();
                MPI_Wait(&r[1], MPI_STATUS_IGNORE);
                tB = now_ns();
            }
            MPI_Recv(ts, 3, MPI_INT64_T, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (it >= 0 && !all) {
                first[k] = tA - ts[0];
                second[k] = tB - ts[1];
                gap[k] = tB - tA;
                sgap[k] = ts[1] - ts[0];
                sender[k] = ts[2] - ts[0];
            } else if (it >= 0) {
                both[k] = tB - ts[1];
            }
        } else if (rank == 0) {
            int64_t ts[3];
            double x = 1.0;
            spin_ns(30000); /* the receives are posted */
            ts[0] = now_ns();
            MPI_Send(&x, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD);
            ts[1] = now_ns();
            MPI_Send(&x, 1, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD);
            ts[2] = now_ns();
            MPI_Send(ts, 3, MPI_INT64_T, 1, 3, MPI_COMM_WORLD);
        }
    }
    if (rank == 1)
        printf("{\"mode\": \"b2b\", \"iters\": %d, \"first_ns\": %lld, \"second_ns\": %lld, "
               "\"gap_ns\": %lld, \"send_gap_ns\": %lld, \"sender_ns\": %lld, "
               "\"waitall_ns\": %lld}\n",
               iters, (long long)median(first, iters), (long long)median(second, iters),
               (long long)median(gap, iters), (long long)median(sgap, iters),
               (long long)median(sender, iters), (long long)median(both, iters));
    free(first);
    free(second);
    free(gap);
    free(sgap);
    free(sender);
    free(both);
}

/* Receiver computes `compute_us` after posting its receive. With ΔL = $LLAMP_INJECT_DELTA_NS
 * the message is due at t_send + ΔL (+ the base one-way time): if that is before the compute
 * ends ("early"), MPI_Wait must return at once; else ("late") at about t_send + ΔL. */
static void mode_compute(int compute_us, int iters, int bytes)
{
    const char *d = getenv("LLAMP_INJECT_DELTA_NS");
    int64_t delta = d ? (int64_t)atof(d) : 0;
    int64_t *early = samples(iters), *late = samples(iters);
    int ne = 0, nl = 0;
    char *x = calloc((size_t)(bytes > 0 ? bytes : 1), 1);
    for (int it = -10; it < iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            MPI_Request r;
            int64_t t_send;
            MPI_Irecv(x, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r);
            spin_ns((int64_t)compute_us * 1000);
            int64_t tw = now_ns();
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            int64_t te = now_ns();
            MPI_Recv(&t_send, 1, MPI_INT64_T, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (it < 0)
                continue;
            if (t_send + delta + 5000 < tw)
                early[ne++] = te - tw;
            else if (t_send + delta > tw)
                late[nl++] = te - (t_send + delta);
        } else if (rank == 0) {
            int64_t t_send = now_ns();
            MPI_Send(x, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Send(&t_send, 1, MPI_INT64_T, 1, 2, MPI_COMM_WORLD);
        }
    }
    if (rank == 1)
        printf("{\"mode\": \"compute\", \"compute_us\": %d, \"delta_ns\": %lld, \"iters\": %d, "
               "\"early\": %d, \"early_wait_ns\": %lld, \"late\": %d, \"late_excess_ns\": %lld}\n",
               compute_us, (long long)delta, iters, ne, (long long)(ne ? median(early, ne) : -1),
               nl, (long long)(nl ? median(late, nl) : -1));
    free(early);
    free(late);
    free(x);
}

/* ------------------------------------------------------------------ checks */
static int failures = 0;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            if (failures++ < 5) {                                                              \
                fprintf(stderr, "rank %d/%d: %s:%d: ", rank, size, __FILE__, __LINE__);        \
                fprintf(stderr, __VA_ARGS__);                                                  \
                fprintf(stderr, "\n");                                                         \
            }                                                                                  \
        }                                                                                      \
    } while (0)

static int val(int r, int k) { return r * 1000 + k; }

/* x ↦ m·x + c (mod 2^32) as (m, c); a∘b = "a then b": associative, not commutative */
static void affine_then(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    unsigned *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        unsigned m1 = a[2 * i], c1 = a[2 * i + 1], m2 = b[2 * i], c2 = b[2 * i + 1];
        b[2 * i] = m2 * m1;
        b[2 * i + 1] = m2 * c1 + c2;
    }
}

static void affine_of(int r, int k, unsigned out[2])
{
    out[0] = 2u * (unsigned)r + 3u + (unsigned)k;
    out[1] = 7u * (unsigned)r + (unsigned)k;
}

static void affine_fold(int from, int to, int k, unsigned out[2])
{
    out[0] = 1u;
    out[1] = 0u;
    for (int r = from; r < to; r++) {
        unsigned f[2];
        affine_of(r, k, f);
        unsigned m = f[0] * out[0], c = f[0] * out[1] + f[1];
        out[0] = m;
        out[1] = c;
    }
}

static void check_reductions(int n, int nonblocking)
{
    int *s = malloc((size_t)n * sizeof *s), *r = malloc((size_t)n * sizeof *r);
    MPI_Request req;
    for (int k = 0; k < n; k++)
        s[k] = val(rank, k);
    /* allreduce, in place and not */
    memset(r, 0, (size_t)n * sizeof *r);
    if (nonblocking) {
        MPI_Iallreduce(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Allreduce(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    for (int k = 0; k < n; k++)
        CHECK(r[k] == size * k + 1000 * size * (size - 1) / 2, "allreduce[%d]=%d", k, r[k]);
    memcpy(r, s, (size_t)n * sizeof *r);
    MPI_Allreduce(MPI_IN_PLACE, r, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (int k = 0; k < n; k++)
        CHECK(r[k] == val(size - 1, k), "allreduce in place max[%d]=%d", k, r[k]);
    /* reduce at every root */
    for (int root = 0; root < size; root++) {
        memset(r, 0, (size_t)n * sizeof *r);
        const void *sb = s;
        if (rank == root) {
            memcpy(r, s, (size_t)n * sizeof *r);
            sb = MPI_IN_PLACE;
        }
        if (nonblocking) {
            MPI_Ireduce(sb, r, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Reduce(sb, r, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        }
        if (rank == root)
            for (int k = 0; k < n; k++)
                CHECK(r[k] == size * k + 1000 * size * (size - 1) / 2, "reduce root %d [%d]=%d",
                      root, k, r[k]);
    }
    /* scan / exscan */
    MPI_Scan(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int k = 0; k < n; k++)
        CHECK(r[k] == (rank + 1) * k + 1000 * rank * (rank + 1) / 2, "scan[%d]=%d", k, r[k]);
    MPI_Exscan(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank > 0)
        for (int k = 0; k < n; k++)
            CHECK(r[k] == rank * k + 1000 * (rank - 1) * rank / 2, "exscan[%d]=%d", k, r[k]);
    /* reduce_scatter with uneven blocks, and _block */
    int *counts = malloc((size_t)size * sizeof *counts), total = 0;
    for (int i = 0; i < size; i++)
        total += counts[i] = (i % 3) + (n > 1 ? n / 2 : 0);
    int *big = malloc((size_t)total * sizeof *big), *mine = malloc((size_t)total * sizeof *big);
    for (int k = 0; k < total; k++)
        big[k] = val(rank, k);
    MPI_Reduce_scatter(big, mine, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int off = 0;
    for (int i = 0; i < rank; i++)
        off += counts[i];
    for (int k = 0; k < counts[rank]; k++)
        CHECK(mine[k] == size * (off + k) + 1000 * size * (size - 1) / 2,
              "reduce_scatter[%d]=%d", k, mine[k]);
    int *blk = malloc((size_t)(n * size) * sizeof *blk);
    for (int k = 0; k < n * size; k++)
        blk[k] = val(rank, k);
    MPI_Reduce_scatter_block(MPI_IN_PLACE, blk, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int k = 0; k < n; k++)
        CHECK(blk[k] == size * (rank * n + k) + 1000 * size * (size - 1) / 2,
              "reduce_scatter_block[%d]=%d", k, blk[k]);
    /* non-commutative: affine maps composed in rank order */
    MPI_Datatype pair;
    MPI_Op then;
    MPI_Type_contiguous(2, MPI_UNSIGNED, &pair);
    MPI_Type_commit(&pair);
    MPI_Op_create(affine_then, 0, &then);
    unsigned *as = malloc((size_t)(2 * n) * sizeof *as), *ar = malloc((size_t)(2 * n) * sizeof *ar);
    for (int k = 0; k < n; k++)
        affine_of(rank, k, &as[2 * k]);
    MPI_Allreduce(as, ar, n, pair, then, MPI_COMM_WORLD);
    for (int k = 0; k < n; k++) {
        unsigned e[2];
        affine_fold(0, size, k, e);
        CHECK(ar[2 * k] == e[0] && ar[2 * k + 1] == e[1], "non-commutative allreduce[%d]", k);
    }
    MPI_Scan(as, ar, n, pair, then, MPI_COMM_WORLD);
    for (int k = 0; k < n; k++) {
        unsigned e[2];
        affine_fold(0, rank + 1, k, e);
        CHECK(ar[2 * k] == e[0] && ar[2 * k + 1] == e[1], "non-commutative scan[%d]", k);
    }
    MPI_Reduce(as, ar, n, pair, then, 0, MPI_COMM_WORLD); /* passes through */
    if (rank == 0)
        for (int k = 0; k < n; k++) {
            unsigned e[2];
            affine_fold(0, size, k, e);
            CHECK(ar[2 * k] == e[0] && ar[2 * k + 1] == e[1], "non-commutative reduce[%d]", k);
        }
    MPI_Op_free(&then);
    MPI_Type_free(&pair);
    free(as);
    free(ar);
    free(s);
    free(r);
    free(counts);
    free(big);
    free(mine);
    free(blk);
}

static void check_movement(int n, int nonblocking)
{
    int *s = malloc((size_t)(n * size + 4) * sizeof *s);
    int *r = malloc((size_t)(n * size + 4) * sizeof *r);
    MPI_Request req;
    /* bcast from every root, and a strided datatype */
    for (int root = 0; root < size; root++) {
        for (int k = 0; k < n; k++)
            r[k] = rank == root ? val(root, k) : -1;
        if (nonblocking) {
            MPI_Ibcast(r, n, MPI_INT, root, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Bcast(r, n, MPI_INT, root, MPI_COMM_WORLD);
        }
        for (int k = 0; k < n; k++)
            CHECK(r[k] == val(root, k), "bcast root %d [%d]=%d", root, k, r[k]);
    }
    MPI_Datatype every_other;
    MPI_Type_vector(n, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int *wide = malloc((size_t)(2 * n) * sizeof *wide);
    for (int k = 0; k < 2 * n; k++)
        wide[k] = rank == 0 ? k : -1;
    MPI_Bcast(wide, 1, every_other, 0, MPI_COMM_WORLD);
    for (int k = 0; k < n; k++)
        CHECK(wide[2 * k] == 2 * k && (rank == 0 || wide[2 * k + 1] == -1), "strided bcast %d", k);
    MPI_Type_free(&every_other);
    free(wide);
    /* allgather (in place too) */
    for (int k = 0; k < n; k++)
        s[k] = val(rank, k);
    if (nonblocking) {
        MPI_Iallgather(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Allgather(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD);
    }
    for (int i = 0; i < size; i++)
        for (int k = 0; k < n; k++)
            CHECK(r[i * n + k] == val(i, k), "allgather [%d][%d]=%d", i, k, r[i * n + k]);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < n; k++)
            r[i * n + k] = i == rank ? val(rank, k) : -1;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < n; k++)
            CHECK(r[i * n + k] == val(i, k), "allgather in place [%d][%d]", i, k);
    /* allgatherv with uneven, some empty, blocks */
    int *cnt = malloc((size_t)size * sizeof *cnt), *dis = malloc((size_t)size * sizeof *dis);
    int tot = 0;
    for (int i = 0; i < size; i++) {
        cnt[i] = (i + n) % 3;
        dis[i] = tot;
        tot += cnt[i];
    }
    int *rv = malloc((size_t)(tot + 1) * sizeof *rv);
    for (int k = 0; k < 3; k++)
        s[k] = val(rank, k);
    MPI_Allgatherv(s, cnt[rank], MPI_INT, rv, cnt, dis, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < cnt[i]; k++)
            CHECK(rv[dis[i] + k] == val(i, k), "allgatherv [%d][%d]", i, k);
    /* alltoall, in place too */
    for (int i = 0; i < size; i++)
        for (int k = 0; k < n; k++)
            s[i * n + k] = val(rank, i * 100 + k);
    if (nonblocking) {
        MPI_Ialltoall(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Alltoall(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD);
    }
    for (int i = 0; i < size; i++)
        for (int k = 0; k < n; k++)
            CHECK(r[i * n + k] == val(i, rank * 100 + k), "alltoall [%d][%d]", i, k);
    memcpy(r, s, (size_t)(n * size) * sizeof *r);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < n; k++)
            CHECK(r[i * n + k] == val(i, rank * 100 + k), "alltoall in place [%d][%d]", i, k);
    /* alltoallv: member i sends (i + j) % 2 · n elements to j */
    int *sc = malloc((size_t)(4 * size) * sizeof *sc), *sd = sc + size, *rc = sc + 2 * size,
        *rd = sc + 3 * size, so = 0, ro = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = ((rank + j) % 2) * n;
        sd[j] = so;
        so += sc[j];
        rc[j] = ((j + rank) % 2) * n;
        rd[j] = ro;
        ro += rc[j];
    }
    int *sv = malloc((size_t)(so + 1) * sizeof *sv), *rvv = malloc((size_t)(ro + 1) * sizeof *rvv);
    for (int j = 0; j < size; j++)
        for (int k = 0; k < sc[j]; k++)
            sv[sd[j] + k] = val(rank, j * 100 + k);
    MPI_Alltoallv(sv, sc, sd, MPI_INT, rvv, rc, rd, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++)
        for (int k = 0; k < rc[j]; k++)
            CHECK(rvv[rd[j] + k] == val(j, rank * 100 + k), "alltoallv [%d][%d]", j, k);
    /* gather / scatter (binomial) and the v-variants at every root */
    for (int root = 0; root < size; root++) {
        for (int k = 0; k < n; k++)
            s[k] = val(rank, k);
        for (int k = 0; k < n * size; k++)
            r[k] = -1;
        const void *sb = s;
        if (rank == root && root % 2 == 1) {
            for (int k = 0; k < n; k++)
                r[root * n + k] = val(root, k);
            sb = MPI_IN_PLACE;
        }
        if (nonblocking) {
            MPI_Igather(sb, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Gather(sb, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD);
        }
        if (rank == root)
            for (int i = 0; i < size; i++)
                for (int k = 0; k < n; k++)
                    CHECK(r[i * n + k] == val(i, k), "gather root %d [%d][%d]=%d", root, i, k,
                          r[i * n + k]);
        for (int k = 0; k < n * size; k++)
            s[k] = rank == root ? val(k / (n ? n : 1), k % (n ? n : 1)) : -1;
        for (int k = 0; k < n; k++)
            r[k] = -1;
        if (nonblocking) {
            MPI_Iscatter(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Scatter(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD);
        }
        for (int k = 0; k < n; k++)
            CHECK(r[k] == val(rank, k), "scatter root %d [%d]=%d", root, k, r[k]);
        for (int k = 0; k < cnt[rank]; k++)
            s[k] = val(rank, k);
        MPI_Gatherv(s, cnt[rank], MPI_INT, rv, cnt, dis, MPI_INT, root, MPI_COMM_WORLD);
        if (rank == root)
            for (int i = 0; i < size; i++)
                for (int k = 0; k < cnt[i]; k++)
                    CHECK(rv[dis[i] + k] == val(i, k), "gatherv root %d [%d][%d]", root, i, k);
        for (int i = 0; i < size; i++)
            for (int k = 0; k < cnt[i]; k++)
                rv[dis[i] + k] = val(i, 50 + k);
        for (int k = 0; k < n; k++)
            r[k] = -1;
        MPI_Scatterv(rv, cnt, dis, MPI_INT, r, cnt[rank], MPI_INT, root, MPI_COMM_WORLD);
        for (int k = 0; k < cnt[rank]; k++)
            CHECK(r[k] == val(rank, 50 + k), "scatterv root %d [%d]", root, k);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (nonblocking) {
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    free(s);
    free(r);
    free(cnt);
    free(dis);
    free(rv);
    free(sc);
    free(sv);
    free(rvv);
}

static void mode_coll(void)
{
    int ns[] = {0, 1, 3, 1000};
    for (int nb = 0; nb < 2; nb++)
        for (unsigned t = 0; t < sizeof ns / sizeof ns[0]; t++) {
            check_reductions(ns[t], nb);
            check_movement(ns[t], nb);
        }
    /* a sub-communicator (odd/even split) runs the same algorithms on its group */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hr, hs, x, sum;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    x = rank;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, half);
    int expect = 0;
    for (int i = rank % 2; i < size; i += 2)
        expect += i;
    CHECK(sum == expect, "allreduce on a split communicator: %d, expected %d", sum, expect);
    MPI_Comm_free(&half);
}

static void mode_p2p(void)
{
    int peer = (rank + 1) % size, from = (rank - 1 + size) % size;
    /* wildcard receives: everybody sends 3 tagged messages to rank 0 (own communicator) */
    MPI_Comm wild;
    MPI_Comm_dup(MPI_COMM_WORLD, &wild);
    if (rank == 0) {
        int got[64] = {0}, v;
        MPI_Status st;
        for (int k = 0; k < 3 * (size - 1); k++) {
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, wild, &st);
            CHECK(v == val(st.MPI_SOURCE, st.MPI_TAG), "wildcard recv %d from %d tag %d", v,
                  st.MPI_SOURCE, st.MPI_TAG);
            CHECK(st.MPI_TAG == got[st.MPI_SOURCE]++, "per-source order broken");
        }
    } else {
        for (int t = 0; t < 3; t++) {
            int v = val(rank, t);
            MPI_Send(&v, 1, MPI_INT, 0, t, wild);
        }
    }
    MPI_Comm_free(&wild);
    /* probe, then receive the probed size */
    if (rank == 0) {
        for (int k = 1; k < size; k++) {
            MPI_Status st;
            int n;
            MPI_Probe(MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_INT, &n);
            CHECK(n == st.MPI_SOURCE + 1, "probe count %d from %d", n, st.MPI_SOURCE);
            int *b = malloc((size_t)n * sizeof *b);
            MPI_Recv(b, n, MPI_INT, st.MPI_SOURCE, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(b[n - 1] == val(st.MPI_SOURCE, n - 1), "probed message content");
            free(b);
        }
    } else {
        int *b = malloc((size_t)(rank + 1) * sizeof *b);
        for (int k = 0; k <= rank; k++)
            b[k] = val(rank, k);
        MPI_Send(b, rank + 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
        free(b);
    }
    /* Iprobe polling loop */
    if (rank == 0 && size > 1) {
        int flag = 0, v;
        MPI_Status st;
        while (!flag)
            MPI_Iprobe(1, 11, MPI_COMM_WORLD, &flag, &st);
        MPI_Recv(&v, 1, MPI_INT, 1, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(v == 42, "iprobe message %d", v);
    } else if (rank == 1) {
        int v = 42;
        MPI_Send(&v, 1, MPI_INT, 0, 11, MPI_COMM_WORLD);
    }
    /* ring with Irecv posted twice on the same (source, tag), completed out of order */
    {
        int a = -1, b = -1, x = val(rank, 1), y = val(rank, 2);
        MPI_Request r[2];
        MPI_Irecv(&a, 1, MPI_INT, from, 5, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(&b, 1, MPI_INT, from, 5, MPI_COMM_WORLD, &r[1]);
        MPI_Send(&x, 1, MPI_INT, peer, 5, MPI_COMM_WORLD);
        MPI_Send(&y, 1, MPI_INT, peer, 5, MPI_COMM_WORLD);
        MPI_Wait(&r[1], MPI_STATUS_IGNORE);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        CHECK(a == val(from, 1) && b == val(from, 2), "FIFO order a=%d b=%d", a, b);
    }
    /* Waitany / Waitsome / Testsome over a mix of sends and receives */
    {
        int in[4], out[4];
        MPI_Request r[8];
        MPI_Status sts[8];
        for (int k = 0; k < 4; k++) {
            out[k] = val(rank, 10 + k);
            MPI_Irecv(&in[k], 1, MPI_INT, from, 20 + k, MPI_COMM_WORLD, &r[k]);
        }
        for (int k = 3; k >= 0; k--)
            MPI_Isend(&out[k], 1, MPI_INT, peer, 20 + k, MPI_COMM_WORLD, &r[4 + k]);
        int done = 0, idx, outc, ids[8];
        MPI_Waitany(8, r, &idx, MPI_STATUS_IGNORE);
        done++;
        while (done < 8) {
            MPI_Waitsome(8, r, &outc, ids, sts);
            if (outc == MPI_UNDEFINED)
                break;
            done += outc;
        }
        CHECK(done == 8, "waitsome completed %d of 8", done);
        MPI_Testsome(8, r, &outc, ids, sts);
        CHECK(outc == MPI_UNDEFINED, "testsome on null requests gave %d", outc);
        for (int k = 0; k < 4; k++)
            CHECK(in[k] == val(from, 10 + k), "waitany/waitsome data %d", k);
    }
    /* Test loop until completion */
    {
        int v = -1, w = val(rank, 77), flag = 0;
        MPI_Request r;
        MPI_Irecv(&v, 1, MPI_INT, from, 30, MPI_COMM_WORLD, &r);
        MPI_Send(&w, 1, MPI_INT, peer, 30, MPI_COMM_WORLD);
        while (!flag)
            MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        CHECK(v == val(from, 77), "test loop data %d", v);
    }
    /* persistent requests, three rounds */
    {
        int v = -1, w = 0;
        MPI_Request r[2];
        MPI_Recv_init(&v, 1, MPI_INT, from, 40, MPI_COMM_WORLD, &r[0]);
        MPI_Send_init(&w, 1, MPI_INT, peer, 40, MPI_COMM_WORLD, &r[1]);
        for (int it = 0; it < 3; it++) {
            w = val(rank, it);
            MPI_Startall(2, r);
            MPI_Waitall(2, r, statuses_ignore());
            CHECK(v == val(from, it), "persistent round %d: %d", it, v);
        }
        MPI_Request_free(&r[0]);
        MPI_Request_free(&r[1]);
    }
    /* Sendrecv_replace around the ring */
    {
        int v[3] = {val(rank, 0), val(rank, 1), val(rank, 2)};
        MPI_Sendrecv_replace(v, 3, MPI_INT, peer, 50, from, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(v[0] == val(from, 0) && v[2] == val(from, 2), "sendrecv_replace");
    }
    /* overlapping non-blocking collectives, progressed by Test */
    {
        int x = rank, sum = -1, flag = 0;
        MPI_Request r[2];
        MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
        MPI_Ibarrier(MPI_COMM_WORLD, &r[1]);
        while (!flag)
            MPI_Testall(2, r, &flag, statuses_ignore());
        CHECK(sum == size * (size - 1) / 2, "iallreduce under Testall: %d", sum);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "";
    int code = 0;
    if (strcmp(mode, "rtt") == 0 && argc > 3 && size >= 2) {
        mode_rtt(atoi(argv[2]), atoi(argv[3]));
    } else if (strcmp(mode, "exchange") == 0 && argc > 3 && size >= 2) {
        mode_exchange(atoi(argv[2]), atoi(argv[3]));
    } else if (strcmp(mode, "b2b") == 0 && argc > 2 && size >= 2) {
        mode_b2b(atoi(argv[2]));
    } else if (strcmp(mode, "compute") == 0 && argc > 3 && size >= 2) {
        mode_compute(atoi(argv[2]), atoi(argv[3]), argc > 4 ? atoi(argv[4]) : 8);
    } else if (strcmp(mode, "coll") == 0 || strcmp(mode, "p2p") == 0) {
        if (mode[0] == 'c')
            mode_coll();
        else
            mode_p2p();
        int all = 0;
        MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
            printf(all ? "failed: %d checks\n" : "ok\n", all);
        code = all ? 1 : 0;
    } else {
        if (rank == 0)
            fprintf(stderr,
                    "usage: %s rtt SIZE ITERS | exchange SIZE ITERS | b2b ITERS | "
                    "compute US ITERS [BYTES] | coll | p2p "
                    "(rtt, exchange, b2b, compute need 2 ranks)\n",
                    argv[0]);
        code = 2;
    }
    MPI_Finalize();
    return code;
}
