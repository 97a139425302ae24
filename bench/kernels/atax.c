/* atax: y = A^T (A x), A is N x N, x and y vectors of N.
 * Two kernels: "atax_ax" (t = A x, one row per iteration) and "atax_aty"
 * (y = A^T t, one column per iteration). Outer trip count N for both; t is
 * fully rewritten every repetition, so both kernels are idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "atax: out of memory\n"); exit(2); }
  return p;
}

static void kernel_ax(long n, const double *restrict A,
                      const double *restrict x, double *restrict t) {
#pragma omp target teams distribute parallel for
  for (long i = 0; i < n; i++) {
    double s = 0.0;
    for (long j = 0; j < n; j++) s += A[i * n + j] * x[j];
    t[i] = s;
  }
}

static void kernel_aty(long n, const double *restrict A,
                       const double *restrict t, double *restrict y) {
#pragma omp target teams distribute parallel for
  for (long j = 0; j < n; j++) {
    double s = 0.0;
    for (long i = 0; i < n; i++) s += A[i * n + j] * t[i];
    y[j] = s;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "atax", 4000);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *A = xalloc(nn), *x = xalloc(n);
  double *out = xalloc(2 * (size_t)n), *ref = xalloc(2 * (size_t)n);
  double *t = out, *y = out + n;
  unsigned long st = 41;
  for (size_t i = 0; i < nn; i++) A[i] = gs_rand(&st) - 0.5;
  for (long i = 0; i < n; i++) x[i] = 1.0 + (double)(i % 17) / 17.0;

#pragma omp target data map(to: A[0:nn], x[0:n]) map(from: out[0:2 * n])
  {
    GS_TIME(a, "atax_ax", kernel_ax(n, A, x, t));
    GS_TIME(a, "atax_aty", kernel_aty(n, A, t, y));
  }

  /* Reference, same summation order per element. */
  double *rt = ref, *ry = ref + n;
#pragma omp parallel for
  for (long i = 0; i < n; i++) {
    double s = 0.0;
    for (long j = 0; j < n; j++) s += A[i * n + j] * x[j];
    rt[i] = s;
  }
  for (long j = 0; j < n; j++) ry[j] = 0.0;
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) ry[j] += A[i * n + j] * rt[i];
  gs_check(&a, out, ref, 2 * n, 1e-9);
  free(A); free(x); free(out); free(ref);
  return 0;
}
