/* probe_nested: `target teams distribute` over the N rows of an N x N matrix
 * with a nested `parallel for` over the columns (Generic-SPMD mode; LLVM 19
 * by itself launches one team per row).
 *   nested_rowscale: B[r][c] = A[r][c] * s[r] + x[c]            (streaming)
 *   nested_rowsum:   y[r] = sum_c A[r][c] * x[c]   (inner parallel-for
 *                    reduction: a matrix-vector product, one row per team)
 * N is the row (and column) count; memory 2 N^2 doubles. */
#include "common.h"

static void nested_rowscale(long n, const double *A, const double *sr,
                            const double *x, double *B) {
#pragma omp target teams distribute \
    map(to : A[0:n * n], sr[0:n], x[0:n]) map(tofrom : B[0:n * n])
  for (long r = 0; r < n; r++) {
    const double f = sr[r];
#pragma omp parallel for
    for (long c = 0; c < n; c++) B[r * n + c] = A[r * n + c] * f + x[c];
  }
}

static void nested_rowsum(long n, const double *A, const double *x,
                          double *y) {
#pragma omp target teams distribute \
    map(to : A[0:n * n], x[0:n]) map(tofrom : y[0:n])
  for (long r = 0; r < n; r++) {
    double acc = 0.0;
#pragma omp parallel for reduction(+ : acc)
    for (long c = 0; c < n; c++) acc += A[r * n + c] * x[c];
    y[r] = acc;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "probe_nested", 4096);
  const long n = a.n, nn = n * n;
  double *A = malloc(sizeof(double) * nn), *sr = malloc(sizeof(double) * n);
  double *x = malloc(sizeof(double) * n);
  double *got = calloc((size_t)(nn + n), sizeof(double));
  double *ref = malloc(sizeof(double) * (nn + n));
  double *B = got, *y = got + nn;
  unsigned long s = 8080;
  for (long i = 0; i < nn; i++) A[i] = gs_rand(&s) - 0.5;
  for (long i = 0; i < n; i++) { sr[i] = gs_rand(&s); x[i] = gs_rand(&s) - 0.5; }

#pragma omp target data map(to : A[0:nn], sr[0:n], x[0:n]) \
    map(tofrom : B[0:nn], y[0:n])
  {
    GS_TIME(a, "nested_rowscale", { nested_rowscale(n, A, sr, x, B); });
    GS_TIME(a, "nested_rowsum", { nested_rowsum(n, A, x, y); });
  }

  for (long r = 0; r < n; r++) {
    double acc = 0.0;
    for (long c = 0; c < n; c++) {
      ref[r * n + c] = A[r * n + c] * sr[r] + x[c];
      acc += A[r * n + c] * x[c];
    }
    ref[nn + r] = acc;
  }
  gs_check(&a, got, ref, nn + n, 1e-12);
  free(A); free(sr); free(x); free(got); free(ref);
  return 0;
}
