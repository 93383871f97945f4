/* HPCC's PTRANS test alone: the parallel matrix transpose of HPC Challenge 1.5.0, without the
   suite's other tests (HPL, DGEMM, STREAM, RandomAccess, FFT, b_eff), several of which run for
   a fixed time rather than a fixed amount of work: a trace of such a test cannot predict a run
   under injected latency, which does less work in the same time.

   Built by benchmarks/app_sources.py (build_ptrans) against HPCC's own PTRANS, input and HPL
   grid sources. HPCC_Init reads ./hpccinf.txt (PTRANS transposes an N/2 x N/2 matrix, N the
   HPL problem size, on each of the HPL process grids) and appends its report to ./hpccoutf.txt;
   rank 0 prints one line with PTRANS's own result. */
#include <hpcc.h>

int main(int argc, char *argv[]) {
  HPCC_Params params;
  int rank, failed;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  failed = HPCC_Init(&params);
  if (!failed) {
    MPI_Barrier(MPI_COMM_WORLD);
    PTRANS(&params);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  HPCC_Finalize(&params);
  MPI_Finalize();
  if (failed)
    return 1;
  if (rank == 0)
    printf("PTRANS %s: n = %d, nb = %d, grid %d x %d, %g GB/s, %g s\n",
           params.Failure ? "failed" : "passed", params.PTRANSrdata.n, params.PTRANSrdata.nb,
           params.PTRANSrdata.nprow, params.PTRANSrdata.npcol, params.PTRANSrdata.GBs,
           params.PTRANSrdata.time);
  return params.Failure ? 1 : 0;
}
