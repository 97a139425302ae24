/* syr2k: lower triangle of C = alpha * (A B^T + B A^T) + beta * C0, all
 * N x N. One kernel ("syr2k"): a collapse(2) loop over all N x N elements;
 * elements with j <= i do the two row-row dot products over k, elements
 * above the diagonal are copied from C0 (unbalanced work, like syrk).
 * C0 is kept as an input, so the kernel is idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "syr2k: out of memory\n"); exit(2); }
  return p;
}

static void kernel_syr2k(long n, double alpha, double beta,
                         const double *restrict A, const double *restrict B,
                         const double *restrict C0, double *restrict C) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      if (j <= i) {
        double s = 0.0;
        for (long k = 0; k < n; k++)
          s += A[i * n + k] * B[j * n + k] + B[i * n + k] * A[j * n + k];
        C[i * n + j] = alpha * s + beta * C0[i * n + j];
      } else {
        C[i * n + j] = C0[i * n + j];
      }
    }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "syr2k", 1024);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *A = xalloc(nn), *B = xalloc(nn), *C0 = xalloc(nn);
  double *C = xalloc(nn), *R = xalloc(nn);
  unsigned long st = 91;
  for (size_t i = 0; i < nn; i++) A[i] = gs_rand(&st);
  for (size_t i = 0; i < nn; i++) B[i] = gs_rand(&st);
  for (size_t i = 0; i < nn; i++) C0[i] = gs_rand(&st);
  const double alpha = 1.5, beta = 1.2;

#pragma omp target data map(to: A[0:nn], B[0:nn], C0[0:nn]) map(from: C[0:nn])
  {
    GS_TIME(a, "syr2k", kernel_syr2k(n, alpha, beta, A, B, C0, C));
  }

  /* Reference: same expression and summation order. */
#pragma omp parallel for schedule(dynamic, 8)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      if (j <= i) {
        double s = 0.0;
        for (long k = 0; k < n; k++)
          s += A[i * n + k] * B[j * n + k] + B[i * n + k] * A[j * n + k];
        R[i * n + j] = alpha * s + beta * C0[i * n + j];
      } else {
        R[i * n + j] = C0[i * n + j];
      }
    }
  gs_check(&a, C, R, (long)nn, 1e-9);
  free(A); free(B); free(C0); free(C); free(R);
  return 0;
}
