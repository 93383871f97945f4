/*
 * MPI_THREAD_MULTIPLE: THREADS threads per rank each do ROUNDS MPI_Sendrecv with the partner
 * rank (rank ^ 1) on their own tag, so the tracer writes records from several threads at once.
 * Even rank count. Exit code 3 on wrong data, 4 if MPI_THREAD_MULTIPLE is not provided.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ROUNDS 200

static int rank;

static void *work(void *arg)
{
    int tag = (int)(long)arg, peer = rank ^ 1;
    for (int i = 0; i < ROUNDS; i++) {
        int out = rank * 1000000 + tag * 1000 + i, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, peer, tag, &in, 1, MPI_INT, peer, tag, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        if (in != peer * 1000000 + tag * 1000 + i) {
            fprintf(stderr, "rank %d thread %d: wrong data\n", rank, tag);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    pthread_t threads[THREADS];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (long t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, work, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
