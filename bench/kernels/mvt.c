/* mvt: x1 = x1_0 + A y1 and x2 = x2_0 + A^T y2, A is N x N.
 * Two kernels: "mvt_x1" (one row of A per iteration) and "mvt_x2" (one
 * column per iteration). Outer trip count N; the initial vectors are kept as
 * inputs, so both kernels are idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "mvt: out of memory\n"); exit(2); }
  return p;
}

static void kernel_x1(long n, const double *restrict A,
                      const double *restrict y1, const double *restrict x10,
                      double *restrict x1) {
#pragma omp target teams distribute parallel for
  for (long i = 0; i < n; i++) {
    double s = x10[i];
    for (long j = 0; j < n; j++) s += A[i * n + j] * y1[j];
    x1[i] = s;
  }
}

static void kernel_x2(long n, const double *restrict A,
                      const double *restrict y2, const double *restrict x20,
                      double *restrict x2) {
#pragma omp target teams distribute parallel for
  for (long j = 0; j < n; j++) {
    double s = x20[j];
    for (long i = 0; i < n; i++) s += A[i * n + j] * y2[i];
    x2[j] = s;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "mvt", 4000);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *A = xalloc(nn), *in = xalloc(4 * (size_t)n);
  double *y1 = in, *y2 = in + n, *x10 = in + 2 * n, *x20 = in + 3 * n;
  double *out = xalloc(2 * (size_t)n), *ref = xalloc(2 * (size_t)n);
  double *x1 = out, *x2 = out + n;
  unsigned long st = 61;
  for (size_t i = 0; i < nn; i++) A[i] = gs_rand(&st);
  for (size_t i = 0; i < 4 * (size_t)n; i++) in[i] = gs_rand(&st) - 0.3;

#pragma omp target data map(to: A[0:nn], in[0:4 * n]) map(from: out[0:2 * n])
  {
    GS_TIME(a, "mvt_x1", kernel_x1(n, A, y1, x10, x1));
    GS_TIME(a, "mvt_x2", kernel_x2(n, A, y2, x20, x2));
  }

  /* Reference, same summation order per element. */
  double *r1 = ref, *r2 = ref + n;
#pragma omp parallel for
  for (long i = 0; i < n; i++) {
    double s = x10[i];
    for (long j = 0; j < n; j++) s += A[i * n + j] * y1[j];
    r1[i] = s;
  }
  for (long j = 0; j < n; j++) r2[j] = x20[j];
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) r2[j] += A[i * n + j] * y2[i];
  gs_check(&a, out, ref, 2 * n, 1e-9);
  free(A); free(in); free(out); free(ref);
  return 0;
}
