/*
 * LogGP parameters of this machine's MPI as the applications see it (tests/test_apps.py):
 * ranks pair up (0-1, 2-3, ...) and ping-pong at the same time, as neighbours exchange in an
 * application, so oversubscription and background load count. For each message size the
 * median one-way time (half a round trip) over ITERS round trips is printed:
 *     <bytes> <one-way µs>
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERS 200

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rank, size;
    const int sizes[] = {8, 1024, 16384, 65536};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    char *buf = calloc(65536, 1);
    double *t = malloc(ITERS * sizeof(double));
    for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int n = sizes[k];
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < ITERS + 10; i++) {
            double t0 = MPI_Wtime();
            if (peer < size) {
                if (rank % 2 == 0) {
                    MPI_Send(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                    MPI_Recv(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                }
            }
            if (i >= 10)
                t[i - 10] = (MPI_Wtime() - t0) / 2.0;
        }
        qsort(t, ITERS, sizeof(double), cmp);
        double median = t[ITERS / 2], all = 0.0;
        MPI_Reduce(&median, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%d %.3f\n", n, all / size * 1e6);
    }
    free(t);
    free(buf);
    MPI_Finalize();
    return 0;
}
