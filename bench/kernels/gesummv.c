/* gesummv: y = alpha * A x + beta * B x, A and B are N x N.
 * One kernel ("gesummv"): one row of A and B per iteration, outer trip
 * count N; idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "gesummv: out of memory\n"); exit(2); }
  return p;
}

static void kernel_gesummv(long n, double alpha, double beta,
                           const double *restrict A, const double *restrict B,
                           const double *restrict x, double *restrict y) {
#pragma omp target teams distribute parallel for
  for (long i = 0; i < n; i++) {
    double sa = 0.0, sb = 0.0;
    for (long j = 0; j < n; j++) {
      sa += A[i * n + j] * x[j];
      sb += B[i * n + j] * x[j];
    }
    y[i] = alpha * sa + beta * sb;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "gesummv", 4000);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *A = xalloc(nn), *B = xalloc(nn), *x = xalloc(n);
  double *y = xalloc(n), *ref = xalloc(n);
  unsigned long st = 71;
  for (size_t i = 0; i < nn; i++) A[i] = gs_rand(&st);
  for (size_t i = 0; i < nn; i++) B[i] = gs_rand(&st);
  for (long i = 0; i < n; i++) x[i] = gs_rand(&st);
  const double alpha = 1.5, beta = 1.2;

#pragma omp target data map(to: A[0:nn], B[0:nn], x[0:n]) map(from: y[0:n])
  {
    GS_TIME(a, "gesummv", kernel_gesummv(n, alpha, beta, A, B, x, y));
  }

#pragma omp parallel for
  for (long i = 0; i < n; i++) {
    double sa = 0.0, sb = 0.0;
    for (long j = 0; j < n; j++) {
      sa += A[i * n + j] * x[j];
      sb += B[i * n + j] * x[j];
    }
    ref[i] = alpha * sa + beta * sb;
  }
  gs_check(&a, y, ref, n, 1e-9);
  free(A); free(B); free(x); free(y); free(ref);
  return 0;
}
