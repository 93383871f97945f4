/*
 * A communicator the tracer cannot define when it is created: MPI_Comm_idup's (usable only
 * once its request completes), made after a Comm_split communicator was freed (whose handle it
 * may reuse). The tracer must define it ("# llamp comm") in front of its first use. Any rank
 * count >= 2.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, sum = 0;
    MPI_Comm half, copy;
    MPI_Request request;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Barrier(half);
    MPI_Comm_free(&half);
    MPI_Comm_idup(MPI_COMM_WORLD, &copy, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, copy);
    if (sum != size * (size - 1) / 2)
        MPI_Abort(MPI_COMM_WORLD, 3);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, got = -1;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 0, &got, 1, MPI_INT, left, 0, copy, MPI_STATUS_IGNORE);
    if (got != left)
        MPI_Abort(MPI_COMM_WORLD, 3);
    MPI_Comm_free(&copy);
    MPI_Finalize();
    return 0;
}
