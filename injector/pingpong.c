/*
 * llamp-pingpong: the measurements behind `llamp calibrate` (a Netgauge-like LogGP benchmark).
 *
 * Ranks 0 and 1 (others wait in MPI_Finalize) measure, for each message size s:
 *   rtt   round trip of a blocking ping-pong (MPI_Send + MPI_Recv at both ends);
 *   o_s   duration of MPI_Send at the sender (the receive is posted and waiting);
 *   o_r   duration of MPI_Recv at the receiver when the message arrived long before the call.
 * Each is the median of `iters` samples after `warmup` unmeasured ones; the sample count
 * shrinks for large messages. Output: one JSON object per size on rank 0's stdout.
 *
 * usage: llamp-pingpong [-s SIZE,SIZE,...] [-n ITERS] [-w WARMUP]
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* the q-quantile (0..1) of v[0..n) — v is sorted in place */
static int64_t quantile(int64_t *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp64);
    int k = (int)(q * (n - 1) + 0.5);
    return v[k];
}

static int parse_sizes(const char *text, long *sizes, int max)
{
    int n = 0;
    char *copy = strdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save))
        sizes[n++] = strtol(tok, NULL, 10);
    free(copy);
    return n;
}

/* messages in the burst that measures the message rate (gap per message g) */
#define BURST 64

int main(int argc, char **argv)
{
    long sizes[128];
    int nsizes = 0, iters = 400, warmup = 20, opt;
    while ((opt = getopt(argc, argv, "s:n:w:")) != -1) {
        if (opt == 's')
            nsizes = parse_sizes(optarg, sizes, 128);
        else if (opt == 'n')
            iters = atoi(optarg);
        else if (opt == 'w')
            warmup = atoi(optarg);
    }
    if (nsizes == 0)
        for (long s = 1; s <= 4L << 20; s *= 2)
            sizes[nsizes++] = s;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "llamp-pingpong: needs 2 ranks (mpirun -n 2 ...), got %d\n", size);
        MPI_Finalize();
        return 2;
    }
    long maxsize = 1;
    for (int k = 0; k < nsizes; k++)
        if (sizes[k] > maxsize)
            maxsize = sizes[k];
    char *buf = calloc((size_t)maxsize, 1);
    int64_t *rtt = calloc((size_t)iters, sizeof *rtt), *os = calloc((size_t)iters, sizeof *os),
            *orr = calloc((size_t)iters, sizeof *orr);
    if (!buf || !rtt || !os || !orr)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int k = 0; k < nsizes && rank < 2; k++) {
        int s = (int)sizes[k], peer = 1 - rank;
        int n = (int)((int64_t)iters * 65536 / (65536 + s));
        if (n < 10)
            n = iters < 10 ? iters : 10;
        int64_t rtt_max = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        /* round trip */
        for (int it = -warmup; it < n; it++) {
            if (rank == 0) {
                int64_t t0 = now_ns();
                MPI_Send(buf, s, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, s, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                int64_t t1 = now_ns();
                if (it >= 0)
                    rtt[it] = t1 - t0;
            } else {
                MPI_Recv(buf, s, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, s, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            }
        }
        int64_t rtt_med = 0;
        if (rank == 0) {
            for (int it = 0; it < n; it++)
                if (rtt[it] > rtt_max)
                    rtt_max = rtt[it];
            int64_t *tmp = malloc((size_t)n * sizeof *tmp);
            memcpy(tmp, rtt, (size_t)n * sizeof *tmp);
            rtt_med = median(tmp, n);
            free(tmp);
        }
        MPI_Bcast(&rtt_med, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
        /* send overhead: the receiver is waiting in MPI_Recv */
        for (int it = -warmup; it < n; it++) {
            if (rank == 0) {
                spin_ns(rtt_med); /* let the receiver post */
                int64_t t0 = now_ns();
                MPI_Send(buf, s, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
                int64_t t1 = now_ns();
                MPI_Recv(NULL, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (it >= 0)
                    os[it] = t1 - t0;
            } else {
                MPI_Recv(buf, s, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
            }
        }
        /* receive overhead: the message arrived long before the receive is called */
        for (int it = -warmup; it < n; it++) {
            if (rank == 0) {
                MPI_Send(buf, s, MPI_BYTE, peer, 4, MPI_COMM_WORLD);
                MPI_Recv(NULL, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                spin_ns(2 * rtt_med + 10000);
                int64_t t0 = now_ns();
                MPI_Recv(buf, s, MPI_BYTE, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                int64_t t1 = now_ns();
                MPI_Send(NULL, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD);
                if (it >= 0)
                    orr[it] = t1 - t0;
            }
        }
        int64_t or_med = rank == 1 ? median(orr, n) : 0;
        MPI_Bcast(&or_med, 1, MPI_INT64_T, 1, MPI_COMM_WORLD);
        if (rank == 0) {
            int64_t rtt_q1 = quantile(rtt, n, 0.25), rtt_min = rtt[0];
            printf("{\"size\": %d, \"samples\": %d, \"rtt_ns\": %lld, \"rtt_q1_ns\": %lld, "
                   "\"rtt_min_ns\": %lld, \"rtt_max_ns\": %lld, \"os_ns\": %lld, "
                   "\"or_ns\": %lld}\n",
                   s, n, (long long)rtt_med, (long long)rtt_q1, (long long)rtt_min,
                   (long long)rtt_max, (long long)median(os, n), (long long)or_med);
            fflush(stdout);
        }
    }
    /* message rate: rank 0 sends a burst of B one-byte messages back to back, rank 1 answers
     * the last with an empty ack; T(B) - T(1) = (B - 1) * max(o, g) (LogGP's gap per message) */
    static const int bursts[2] = {1, BURST};
    for (int b = 0; b < 2 && rank < 2; b++) {
        int count = bursts[b], n = iters / 4 > 10 ? iters / 4 : (iters < 10 ? iters : 10);
        for (int it = -warmup; it < n; it++) {
            if (rank == 0) {
                int64_t t0 = now_ns();
                for (int m = 0; m < count; m++)
                    MPI_Send(buf, 1, MPI_BYTE, 1, 6, MPI_COMM_WORLD);
                MPI_Recv(NULL, 0, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                int64_t t1 = now_ns();
                if (it >= 0)
                    rtt[it] = t1 - t0;
            } else {
                for (int m = 0; m < count; m++)
                    MPI_Recv(buf, 1, MPI_BYTE, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
            }
        }
        if (rank == 0) {
            printf("{\"burst\": %d, \"samples\": %d, \"time_ns\": %lld}\n", count, n,
                   (long long)quantile(rtt, n, 0.25));
            fflush(stdout);
        }
    }
    if (size > 2 && rank >= 2) {
        /* ranks beyond the pair only join the collectives */
        for (int k = 0; k < nsizes; k++) {
            int64_t dummy = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Bcast(&dummy, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
            MPI_Bcast(&dummy, 1, MPI_INT64_T, 1, MPI_COMM_WORLD);
        }
    }
    free(buf);
    free(rtt);
    free(os);
    free(orr);
    MPI_Finalize();
    return 0;
}
