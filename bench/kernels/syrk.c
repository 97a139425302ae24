/* syrk: lower triangle of C = alpha * A * A^T + beta * C0, A and C are N x N.
 * One kernel ("syrk"): a collapse(2) loop over all N x N elements; elements
 * with j <= i do a dot product of rows i and j of A, elements above the
 * diagonal are copied from C0 (BLAS semantics: only the lower triangle is
 * updated). The work per iteration is therefore unbalanced, O(N) or O(1).
 * C0 is kept as an input, so the kernel is idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "syrk: out of memory\n"); exit(2); }
  return p;
}

static void kernel_syrk(long n, double alpha, double beta,
                        const double *restrict A, const double *restrict C0,
                        double *restrict C) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      if (j <= i) {
        double s = 0.0;
        for (long k = 0; k < n; k++) s += A[i * n + k] * A[j * n + k];
        C[i * n + j] = alpha * s + beta * C0[i * n + j];
      } else {
        C[i * n + j] = C0[i * n + j];
      }
    }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "syrk", 1024);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *A = xalloc(nn), *C0 = xalloc(nn), *C = xalloc(nn), *R = xalloc(nn);
  unsigned long st = 81;
  for (size_t i = 0; i < nn; i++) A[i] = gs_rand(&st);
  for (size_t i = 0; i < nn; i++) C0[i] = gs_rand(&st);
  const double alpha = 1.5, beta = 1.2;

#pragma omp target data map(to: A[0:nn], C0[0:nn]) map(from: C[0:nn])
  {
    GS_TIME(a, "syrk", kernel_syrk(n, alpha, beta, A, C0, C));
  }

  /* Reference: row-row dot products, k ascending (same order). */
#pragma omp parallel for schedule(dynamic, 8)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      if (j <= i) {
        double s = 0.0;
        for (long k = 0; k < n; k++) s += A[i * n + k] * A[j * n + k];
        R[i * n + j] = alpha * s + beta * C0[i * n + j];
      } else {
        R[i * n + j] = C0[i * n + j];
      }
    }
  gs_check(&a, C, R, (long)nn, 1e-9);
  free(A); free(C0); free(C); free(R);
  return 0;
}
