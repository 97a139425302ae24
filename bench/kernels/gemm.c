/* gemm: C = alpha * A * B + beta * C0, all N x N.
 * One kernel ("gemm"): one (i, j) output element per iteration of a
 * collapse(2) loop, dot product over k. C0 is kept as an input so the kernel
 * is idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "gemm: out of memory\n"); exit(2); }
  return p;
}

static void kernel_gemm(long n, double alpha, double beta,
                        const double *restrict A, const double *restrict B,
                        const double *restrict C0, double *restrict C) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      double s = 0.0;
      for (long k = 0; k < n; k++) s += A[i * n + k] * B[k * n + j];
      C[i * n + j] = alpha * s + beta * C0[i * n + j];
    }
}

/* Same summation order per element (k ascending), row-blocked for the cache. */
static void reference(long n, double alpha, double beta, const double *A,
                      const double *B, const double *C0, double *C) {
#pragma omp parallel for
  for (long i = 0; i < n; i++) {
    double *c = C + i * n;
    for (long j = 0; j < n; j++) c[j] = 0.0;
    for (long k = 0; k < n; k++) {
      double aik = A[i * n + k];
      const double *b = B + k * n;
      for (long j = 0; j < n; j++) c[j] += aik * b[j];
    }
    for (long j = 0; j < n; j++) c[j] = alpha * c[j] + beta * C0[i * n + j];
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "gemm", 1024);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *A = xalloc(nn), *B = xalloc(nn), *C0 = xalloc(nn);
  double *C = xalloc(nn), *R = xalloc(nn);
  unsigned long st = 11;
  for (size_t i = 0; i < nn; i++) A[i] = gs_rand(&st);
  for (size_t i = 0; i < nn; i++) B[i] = gs_rand(&st);
  for (size_t i = 0; i < nn; i++) C0[i] = gs_rand(&st);
  const double alpha = 1.5, beta = 1.2;

#pragma omp target data map(to: A[0:nn], B[0:nn], C0[0:nn]) map(from: C[0:nn])
  {
    GS_TIME(a, "gemm", kernel_gemm(n, alpha, beta, A, B, C0, C));
  }

  reference(n, alpha, beta, A, B, C0, R);
  gs_check(&a, C, R, (long)nn, 1e-9);
  free(A); free(B); free(C0); free(C); free(R);
  return 0;
}
