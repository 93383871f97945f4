/*
 * Test program for llamp's tracer: every phase does a known number of MPI calls per rank
 * (tests/test_tracer.py checks the trace and the graph against these numbers). Ranks >= 2,
 * even count. Checks the data it receives and aborts (exit code 3) on a mismatch.
 *
 * Per rank, point-to-point messages sent (= received):
 *   BLOCKING  iterations of Send/Recv around a ring               1 each
 *   NONBLOCK  iterations of Irecv x2, Isend x2 (both neighbours), Waitall(4)     2 each
 *   PERSIST   iterations of Startall(2) + Waitall(2) on Send_init/Recv_init      1 each
 *   1 Sendrecv with the right neighbour                                          1
 *   1 round of Irecv x2 + Isend x2 completed by Waitany x2 (receives), Waitall   2
 *   1 round of Irecv x2 + Isend x2 completed by Waitsome (receives) and Testsome
 *     (sends) loops, as many calls as it takes                                   2
 * Collectives: Barrier x2 on MPI_COMM_WORLD, COLL x (Allreduce + Bcast) on the
 * Comm_split(rank % 2) sub-communicator, 1 Allreduce on a Comm_dup of MPI_COMM_WORLD.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCKING 5
#define NONBLOCK 10
#define PERSIST 4
#define COLL 3
#define N 64

static void check(int ok, const char *what, int rank)
{
    if (!ok) {
        fprintf(stderr, "rank %d: wrong data after %s\n", rank, what);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    double sbuf[N], rbuf[N], rbuf2[N];
    MPI_Request req[4];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    for (int it = 0; it < BLOCKING; it++) {
        for (int i = 0; i < N; i++)
            sbuf[i] = rank * 1000 + it;
        if (rank % 2 == 0) {
            MPI_Send(sbuf, N, MPI_DOUBLE, right, 10, MPI_COMM_WORLD);
            MPI_Recv(rbuf, N, MPI_DOUBLE, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, N, MPI_DOUBLE, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, N, MPI_DOUBLE, right, 10, MPI_COMM_WORLD);
        }
        check(rbuf[0] == left * 1000 + it, "Recv", rank);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < NONBLOCK; it++) {
        for (int i = 0; i < N; i++)
            sbuf[i] = rank;
        MPI_Irecv(rbuf, N, MPI_DOUBLE, left, 20, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(rbuf2, N, MPI_DOUBLE, right, 21, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(sbuf, N, MPI_DOUBLE, right, 20, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(sbuf, N, MPI_DOUBLE, left, 21, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        check(rbuf[0] == left && rbuf2[0] == right, "Waitall", rank);
    }

    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int half_rank, half_size;
    MPI_Comm_rank(half, &half_rank);
    MPI_Comm_size(half, &half_size);
    for (int it = 0; it < COLL; it++) {
        double mine = rank, sum = 0.0;
        MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, half);
        double expect = 0.0;
        for (int r = rank % 2; r < size; r += 2)
            expect += r;
        check(sum == expect, "Allreduce on the split communicator", rank);
        int root_value = half_rank == 0 ? 100 + rank : -1;
        MPI_Bcast(&root_value, 1, MPI_INT, 0, half);
        check(root_value == 100 + rank % 2, "Bcast on the split communicator", rank);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, dup);
    check(total == size, "Allreduce on the duplicate", rank);

    MPI_Send_init(sbuf, N, MPI_DOUBLE, right, 30, MPI_COMM_WORLD, &req[0]);
    MPI_Recv_init(rbuf, N, MPI_DOUBLE, left, 30, MPI_COMM_WORLD, &req[1]);
    for (int it = 0; it < PERSIST; it++) {
        for (int i = 0; i < N; i++)
            sbuf[i] = rank + it;
        MPI_Startall(2, req);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        check(rbuf[0] == left + it, "persistent Startall/Waitall", rank);
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);

    for (int i = 0; i < N; i++)
        sbuf[i] = -rank;
    MPI_Sendrecv(sbuf, N, MPI_DOUBLE, right, 40, rbuf, N, MPI_DOUBLE, left, 40, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    check(rbuf[0] == -left, "Sendrecv", rank);

    int index;
    MPI_Irecv(rbuf, N, MPI_DOUBLE, left, 50, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(rbuf2, N, MPI_DOUBLE, right, 51, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(sbuf, N, MPI_DOUBLE, right, 50, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(sbuf, N, MPI_DOUBLE, left, 51, MPI_COMM_WORLD, &req[3]);
    MPI_Waitany(2, req, &index, MPI_STATUS_IGNORE);
    MPI_Waitany(2, req, &index, MPI_STATUS_IGNORE);
    MPI_Waitall(2, req + 2, MPI_STATUSES_IGNORE);
    check(rbuf[0] == -left && rbuf2[0] == -right, "Waitany", rank);

    int done, indices[2], outcount;
    MPI_Irecv(rbuf, N, MPI_DOUBLE, left, 60, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(rbuf2, N, MPI_DOUBLE, right, 61, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(sbuf, N, MPI_DOUBLE, right, 60, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(sbuf, N, MPI_DOUBLE, left, 61, MPI_COMM_WORLD, &req[3]);
    for (done = 0; done < 2; done += outcount)
        MPI_Waitsome(2, req, &outcount, indices, MPI_STATUSES_IGNORE);
    for (done = 0; done < 2; done += outcount)
        MPI_Testsome(2, req + 2, &outcount, indices, MPI_STATUSES_IGNORE);
    check(rbuf[0] == -left && rbuf2[0] == -right, "Waitsome", rank);

    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
