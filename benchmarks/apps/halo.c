/* Halo exchange on a periodic ring, overlapped with computation: the pattern of stencil codes.
 *
 * Per iteration each rank posts MPI_Irecv from both neighbours, MPI_Isend to both, computes
 * the interior (-c µs, a busy loop), waits for all four requests (MPI_Waitall) and computes the
 * boundary (-b µs). -s sets the message size: 8 KiB is latency/overhead-bound, 256 KiB–4 MiB
 * is bandwidth-bound. Used by benchmarks/validation.py to choose the model defaults.
 *
 *   mpirun -n 2 ./halo -n 200 -s 8192 -c 50 -b 10
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void compute_us(double us)
{
    int64_t end = now_ns() + (int64_t)(us * 1000.0);
    while (now_ns() < end)
        ;
}

int main(int argc, char **argv)
{
    int iterations = 200, opt;
    long bytes = 8192;
    double interior = 50.0, boundary = 10.0;
    while ((opt = getopt(argc, argv, "n:s:c:b:")) != -1) {
        if (opt == 'n')
            iterations = atoi(optarg);
        else if (opt == 's')
            bytes = atol(optarg);
        else if (opt == 'c')
            interior = atof(optarg);
        else if (opt == 'b')
            boundary = atof(optarg);
        else {
            fprintf(stderr, "usage: halo [-n iterations] [-s bytes] [-c interior_us] [-b boundary_us]\n");
            return 2;
        }
    }
    if (iterations < 1 || bytes < 1) {
        fprintf(stderr, "halo: iterations and bytes must be >= 1\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    char *out = calloc(2 * (size_t)bytes, 1), *in = calloc(2 * (size_t)bytes, 1);
    if (!out || !in)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Request req[4];
    for (int it = 0; it < iterations; it++) {
        MPI_Irecv(in, (int)bytes, MPI_BYTE, left, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(in + bytes, (int)bytes, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(out, (int)bytes, MPI_BYTE, right, 0, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(out + bytes, (int)bytes, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[3]);
        compute_us(interior);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        compute_us(boundary);
    }
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
