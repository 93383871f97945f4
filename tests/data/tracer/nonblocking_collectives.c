/*
 * Every non-blocking collective once on MPI_COMM_WORLD, each overlapped with computation and
 * completed in a different way: Wait, Waitall, a Test loop, Waitany, Waitsome and a Testall
 * loop. Checks its results (MPI_Abort with error code 3 on a mismatch). Any rank count >= 2.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "rank %d: wrong result of %s\n", rank, what);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

static double work(int n)
{
    volatile double x = 0.0;
    for (int i = 0; i < n; i++)
        x += 1e-9 * i;
    return x;
}

int main(int argc, char **argv)
{
    int n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm comm = MPI_COMM_WORLD;
    int *counts = malloc(n * sizeof(int)), *displs = malloc(n * sizeof(int));
    int *all = malloc(n * sizeof(int)), *all2 = malloc(n * sizeof(int));
    int *ones = malloc(n * sizeof(int)), *spread = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) {
        counts[i] = 1;
        displs[i] = i;
        ones[i] = rank;
        spread[i] = i;
    }
    MPI_Request r[4];
    int me = rank, sum = 0, one = rank, red = 0, flag = 0, idx = 0, outcount = 0, done = 0;
    int indices[4];

    /* Iallreduce overlapped with computation, completed by Wait */
    MPI_Iallreduce(&me, &sum, 1, MPI_INT, MPI_SUM, comm, &r[0]);
    work(100000);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    check(sum == n * (n - 1) / 2, "Iallreduce");

    /* Ibcast, Ireduce, Ibarrier: Waitall */
    one = rank == 0 ? 7 : -1;
    MPI_Ibcast(&one, 1, MPI_INT, 0, comm, &r[0]);
    MPI_Ireduce(&me, &red, 1, MPI_INT, MPI_SUM, 0, comm, &r[1]);
    MPI_Ibarrier(comm, &r[2]);
    work(50000);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    check(one == 7, "Ibcast");
    check(rank != 0 || red == n * (n - 1) / 2, "Ireduce");

    /* Iallgather: a Test loop */
    MPI_Iallgather(&me, 1, MPI_INT, all, 1, MPI_INT, comm, &r[0]);
    for (flag = 0; !flag;) {
        work(1000);
        MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
    }
    check(all[n - 1] == n - 1, "Iallgather");

    /* Ialltoall, Igather, Iscatter: Waitany */
    MPI_Ialltoall(ones, 1, MPI_INT, all2, 1, MPI_INT, comm, &r[0]);
    MPI_Igather(&me, 1, MPI_INT, all, 1, MPI_INT, 0, comm, &r[1]);
    MPI_Iscatter(spread, 1, MPI_INT, &one, 1, MPI_INT, 0, comm, &r[2]);
    work(50000);
    for (int k = 0; k < 3; k++)
        MPI_Waitany(3, r, &idx, MPI_STATUS_IGNORE);
    check(all2[n - 1] == n - 1, "Ialltoall");
    check(one == rank, "Iscatter");

    /* Iallgatherv, Igatherv, Iscatterv, Ialltoallv: Waitsome */
    MPI_Iallgatherv(&me, 1, MPI_INT, all, counts, displs, MPI_INT, comm, &r[0]);
    MPI_Igatherv(&me, 1, MPI_INT, all2, counts, displs, MPI_INT, 0, comm, &r[1]);
    MPI_Iscatterv(spread, counts, displs, MPI_INT, &one, 1, MPI_INT, 0, comm, &r[2]);
    MPI_Ialltoallv(ones, counts, displs, MPI_INT, spread, counts, displs, MPI_INT, comm, &r[3]);
    work(50000);
    for (done = 0; done < 4; done += outcount)
        MPI_Waitsome(4, r, &outcount, indices, MPI_STATUSES_IGNORE);
    check(all[n - 1] == n - 1, "Iallgatherv");
    check(spread[n - 1] == n - 1, "Ialltoallv");

    /* Ireduce_scatter, Ireduce_scatter_block, Iscan, Iexscan: a Testall loop */
    int got = 0, got2 = 0, scan = 0, exscan = 0;
    for (int i = 0; i < n; i++)
        ones[i] = 1;
    MPI_Ireduce_scatter(ones, &got, counts, MPI_INT, MPI_SUM, comm, &r[0]);
    MPI_Ireduce_scatter_block(ones, &got2, 1, MPI_INT, MPI_SUM, comm, &r[1]);
    MPI_Iscan(&me, &scan, 1, MPI_INT, MPI_SUM, comm, &r[2]);
    MPI_Iexscan(&me, &exscan, 1, MPI_INT, MPI_SUM, comm, &r[3]);
    for (flag = 0; !flag;) {
        work(1000);
        MPI_Testall(4, r, &flag, MPI_STATUSES_IGNORE);
    }
    check(got == n && got2 == n, "Ireduce_scatter");
    check(scan == rank * (rank + 1) / 2, "Iscan");
    check(rank == 0 || exscan == rank * (rank - 1) / 2, "Iexscan");

    free(counts);
    free(displs);
    free(all);
    free(all2);
    free(ones);
    free(spread);
    MPI_Finalize();
    return 0;
}
