/*
 * Every collective the tracer records, once on MPI_COMM_WORLD and once on a Comm_split half,
 * with MPI_IN_PLACE variants and root-only arguments left NULL / garbage at non-roots (which
 * MPI allows and the tracer must neither dereference nor print as data). Checks its results
 * (MPI_Abort with error code 3 on a mismatch). Any rank count >= 2.
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

static void collectives(MPI_Comm comm)
{
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    int *counts = malloc(n * sizeof(int)), *displs = malloc(n * sizeof(int));
    int *all = malloc(n * sizeof(int)), *all2 = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) {
        counts[i] = 1;
        displs[i] = i;
    }
    int one = me, sum = 0;

    MPI_Barrier(comm);
    MPI_Bcast(&one, 1, MPI_INT, 0, comm);
    check(one == 0, "Bcast");
    one = me;
    MPI_Reduce(&one, &sum, 1, MPI_INT, MPI_SUM, 0, comm);
    check(me != 0 || sum == n * (n - 1) / 2, "Reduce");
    sum = me;
    if (me == 0)
        MPI_Reduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, 0, comm);
    else
        MPI_Reduce(&sum, NULL, 1, MPI_INT, MPI_SUM, 0, comm);
    check(me != 0 || sum == n * (n - 1) / 2, "Reduce(MPI_IN_PLACE)");
    sum = me;
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_MAX, comm);
    check(sum == n - 1, "Allreduce(MPI_IN_PLACE)");
    MPI_Scan(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    check(sum == me * (me + 1) / 2, "Scan");
    MPI_Exscan(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    check(me == 0 || sum == me * (me - 1) / 2, "Exscan");

    MPI_Allgather(&one, 1, MPI_INT, all, 1, MPI_INT, comm);
    check(all[n - 1] == n - 1, "Allgather");
    all[me] = -me;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, comm);
    check(all[n - 1] == 1 - n, "Allgather(MPI_IN_PLACE)");
    MPI_Allgatherv(&one, 1, MPI_INT, all, counts, displs, MPI_INT, comm);
    check(all[n - 1] == n - 1, "Allgatherv");
    MPI_Alltoall(all, 1, MPI_INT, all2, 1, MPI_INT, comm);
    check(all2[n - 1] == me, "Alltoall");
    for (int i = 0; i < n; i++)
        all[i] = me * 100 + i;
    MPI_Alltoallv(all, counts, displs, MPI_INT, all2, counts, displs, MPI_INT, comm);
    check(all2[n - 1] == (n - 1) * 100 + me, "Alltoallv");
    MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, all, counts, displs, MPI_INT, comm);
    check(all[n - 1] == (n - 1) * 100 + me, "Alltoallv(MPI_IN_PLACE)");

    /* root-only arguments: garbage types and counts at the others */
    MPI_Gather(&one, 1, MPI_INT, me == 0 ? all : NULL, me == 0 ? 1 : -7,
               me == 0 ? MPI_INT : MPI_DATATYPE_NULL, 0, comm);
    check(me != 0 || all[n - 1] == n - 1, "Gather");
    MPI_Gatherv(&one, 1, MPI_INT, all, me == 0 ? counts : NULL, me == 0 ? displs : NULL,
                me == 0 ? MPI_INT : MPI_DATATYPE_NULL, 0, comm);
    check(me != 0 || all[n - 1] == n - 1, "Gatherv");
    for (int i = 0; i < n; i++)
        all[i] = 10 * i;
    MPI_Scatter(me == 0 ? all : NULL, me == 0 ? 1 : -7, me == 0 ? MPI_INT : MPI_DATATYPE_NULL,
                &sum, 1, MPI_INT, 0, comm);
    check(sum == 10 * me, "Scatter");
    MPI_Scatterv(all, me == 0 ? counts : NULL, me == 0 ? displs : NULL,
                 me == 0 ? MPI_INT : MPI_DATATYPE_NULL, &sum, 1, MPI_INT, 0, comm);
    check(sum == 10 * me, "Scatterv");
    for (int i = 0; i < n; i++)
        all[i] = i;
    MPI_Reduce_scatter(all, &sum, counts, MPI_INT, MPI_SUM, comm);
    check(sum == n * me, "Reduce_scatter");
    MPI_Reduce_scatter_block(all, &sum, 1, MPI_INT, MPI_SUM, comm);
    check(sum == n * me, "Reduce_scatter_block");
    free(counts);
    free(displs);
    free(all);
    free(all2);
}

int main(int argc, char **argv)
{
    MPI_Comm half;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    collectives(MPI_COMM_WORLD);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half); /* reversed order inside */
    collectives(half);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
