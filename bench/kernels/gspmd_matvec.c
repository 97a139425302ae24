/* gspmd_matvec: matrix-vector products written as most OpenMP ports of
 * Polybench write them: a `target teams` region whose body holds, besides the
 * loop, team-level code (a scalar read from device memory, or a second loop),
 * and an inner `distribute parallel for` over rows or columns with a
 * sequential inner loop per iteration. Because the region is not a tightly
 * nested combined construct, clang emits it in generic mode and OpenMPOpt
 * turns it into Generic-SPMD; the host does not know the loop and launches
 * with trip count 0 (LLVM then falls back to its default grid).
 *   mv_rows: y = alpha A x, one row per iteration (row-major A: each thread
 *            walks its own row, uncoalesced), alpha read from coef[0] in the
 *            teams region
 *   mv_cols: z = alpha A^T w, one column per iteration (coalesced across
 *            threads, the inner loop strides by N)
 *   mv_pair: mvt-style pair in ONE teams region, two independent distribute
 *            parallel for loops: x1 = x1_0 + A y1 and x2 = x2_0 + A^T y2
 *            (out of place, so idempotent)
 * N is the matrix edge (real codes: 4096); memory N^2 + 9 N doubles
 * (512 MB at N = 8192). Pattern: Generic-SPMD, trip count 0 at the launch. */
#include "common.h"

static void mv_rows(long n, const double *coef, const double *A,
                    const double *x, double *y) {
#pragma omp target teams map(to : coef[0:2], A[0:n * n], x[0:n]) \
    map(tofrom : y[0:n])
  {
    const double alpha = coef[0];
#pragma omp distribute parallel for
    for (long i = 0; i < n; i++) {
      double s = 0.0;
      for (long j = 0; j < n; j++) s += A[i * n + j] * x[j];
      y[i] = alpha * s;
    }
  }
}

static void mv_cols(long n, const double *coef, const double *A,
                    const double *w, double *z) {
#pragma omp target teams map(to : coef[0:2], A[0:n * n], w[0:n]) \
    map(tofrom : z[0:n])
  {
    const double alpha = coef[0];
#pragma omp distribute parallel for
    for (long j = 0; j < n; j++) {
      double s = 0.0;
      for (long i = 0; i < n; i++) s += A[i * n + j] * w[i];
      z[j] = alpha * s;
    }
  }
}

static void mv_pair(long n, const double *A, const double *y1,
                    const double *y2, const double *x10, const double *x20,
                    double *x1, double *x2) {
#pragma omp target teams map(to : A[0:n * n], y1[0:n], y2[0:n], x10[0:n], \
                                 x20[0:n]) map(tofrom : x1[0:n], x2[0:n])
  {
#pragma omp distribute parallel for
    for (long i = 0; i < n; i++) {
      double s = x10[i];
      for (long j = 0; j < n; j++) s += A[i * n + j] * y1[j];
      x1[i] = s;
    }
#pragma omp distribute parallel for
    for (long i = 0; i < n; i++) {
      double s = x20[i];
      for (long j = 0; j < n; j++) s += A[j * n + i] * y2[j];
      x2[i] = s;
    }
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "gspmd_matvec", 4096);
  const long n = a.n;
  double *A = malloc(sizeof(double) * n * n);
  double *coef = malloc(sizeof(double) * 2);
  /* vectors: x w y1 y2 x10 x20 | outputs y z x1 x2 */
  double *v = malloc(sizeof(double) * 10 * n);
  double *x = v, *w = v + n, *y1 = v + 2 * n, *y2 = v + 3 * n;
  double *x10 = v + 4 * n, *x20 = v + 5 * n;
  double *got = v + 6 * n; /* y z x1 x2, 4n */
  double *y = got, *z = got + n, *x1 = got + 2 * n, *x2 = got + 3 * n;
  unsigned long s = 4096;
  for (long p = 0; p < n * n; p++) A[p] = gs_rand(&s) - 0.5;
  for (long p = 0; p < 6 * n; p++) v[p] = gs_rand(&s);
  memset(got, 0, sizeof(double) * 4 * n);
  coef[0] = 1.5;
  coef[1] = 0.0;

#pragma omp target data map(to : coef[0:2], A[0:n * n], x[0:n], w[0:n], \
                                y1[0:n], y2[0:n], x10[0:n], x20[0:n]) \
    map(tofrom : y[0:n], z[0:n], x1[0:n], x2[0:n])
  {
    GS_TIME(a, "mv_rows", { mv_rows(n, coef, A, x, y); });
    GS_TIME(a, "mv_cols", { mv_cols(n, coef, A, w, z); });
    GS_TIME(a, "mv_pair", { mv_pair(n, A, y1, y2, x10, x20, x1, x2); });
  }

  double *ref = malloc(sizeof(double) * 4 * n);
  for (long i = 0; i < n; i++) {
    double sr = 0.0, s1 = x10[i];
    for (long j = 0; j < n; j++) {
      sr += A[i * n + j] * x[j];
      s1 += A[i * n + j] * y1[j];
    }
    ref[i] = 1.5 * sr;
    ref[2 * n + i] = s1;
  }
  for (long j = 0; j < n; j++) ref[n + j] = 0.0, ref[3 * n + j] = x20[j];
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      ref[n + j] += A[i * n + j] * w[i];
      ref[3 * n + j] += A[i * n + j] * y2[i];
    }
  for (long j = 0; j < n; j++) ref[n + j] *= 1.5;
  gs_check(&a, got, ref, 4 * n, 1e-10);
  free(A); free(coef); free(v); free(ref);
  return 0;
}
