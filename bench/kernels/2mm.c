/* 2mm: T = alpha * A * B, then D = T * C + beta * D0, all N x N.
 * Two kernels ("2mm_ab", "2mm_tc"), each a collapse(2) loop over output
 * elements with a dot product over k. D0 is kept as an input and T is fully
 * rewritten every repetition, so both kernels are idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "2mm: out of memory\n"); exit(2); }
  return p;
}

static void kernel_ab(long n, double alpha, const double *restrict A,
                      const double *restrict B, double *restrict T) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      double s = 0.0;
      for (long k = 0; k < n; k++) s += A[i * n + k] * B[k * n + j];
      T[i * n + j] = alpha * s;
    }
}

static void kernel_tc(long n, double beta, const double *restrict T,
                      const double *restrict C, const double *restrict D0,
                      double *restrict D) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      double s = 0.0;
      for (long k = 0; k < n; k++) s += T[i * n + k] * C[k * n + j];
      D[i * n + j] = s + beta * D0[i * n + j];
    }
}

/* P = X * Y with k ascending per element (same order as the kernels). */
static void ref_mm(long n, const double *X, const double *Y, double *P) {
#pragma omp parallel for
  for (long i = 0; i < n; i++) {
    double *p = P + i * n;
    for (long j = 0; j < n; j++) p[j] = 0.0;
    for (long k = 0; k < n; k++) {
      double x = X[i * n + k];
      const double *y = Y + k * n;
      for (long j = 0; j < n; j++) p[j] += x * y[j];
    }
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "2mm", 1024);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *A = xalloc(nn), *B = xalloc(nn), *C = xalloc(nn), *D0 = xalloc(nn);
  double *out = xalloc(2 * nn), *ref = xalloc(2 * nn);
  double *T = out, *D = out + nn;
  unsigned long st = 21;
  for (size_t i = 0; i < nn; i++) A[i] = gs_rand(&st);
  for (size_t i = 0; i < nn; i++) B[i] = gs_rand(&st);
  for (size_t i = 0; i < nn; i++) C[i] = gs_rand(&st);
  for (size_t i = 0; i < nn; i++) D0[i] = gs_rand(&st);
  const double alpha = 1.5, beta = 1.2;

#pragma omp target data map(to: A[0:nn], B[0:nn], C[0:nn], D0[0:nn]) \
    map(from: out[0:2 * nn])
  {
    GS_TIME(a, "2mm_ab", kernel_ab(n, alpha, A, B, T));
    GS_TIME(a, "2mm_tc", kernel_tc(n, beta, T, C, D0, D));
  }

  double *rT = ref, *rD = ref + nn;
  ref_mm(n, A, B, rT);
  for (size_t i = 0; i < nn; i++) rT[i] *= alpha;
  ref_mm(n, rT, C, rD);
  for (size_t i = 0; i < nn; i++) rD[i] += beta * D0[i];
  gs_check(&a, out, ref, (long)(2 * nn), 1e-9);
  free(A); free(B); free(C); free(D0); free(out); free(ref);
  return 0;
}
