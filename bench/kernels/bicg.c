/* bicg: s = A^T r and q = A p, A is N x N (the two sub-kernels of BiCGStab).
 * Two kernels: "bicg_s" (one column of A per iteration) and "bicg_q" (one
 * row of A per iteration). Outer trip count N for both; idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "bicg: out of memory\n"); exit(2); }
  return p;
}

static void kernel_s(long n, const double *restrict A,
                     const double *restrict r, double *restrict s) {
#pragma omp target teams distribute parallel for
  for (long j = 0; j < n; j++) {
    double acc = 0.0;
    for (long i = 0; i < n; i++) acc += r[i] * A[i * n + j];
    s[j] = acc;
  }
}

static void kernel_q(long n, const double *restrict A,
                     const double *restrict p, double *restrict q) {
#pragma omp target teams distribute parallel for
  for (long i = 0; i < n; i++) {
    double acc = 0.0;
    for (long j = 0; j < n; j++) acc += A[i * n + j] * p[j];
    q[i] = acc;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "bicg", 4000);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *A = xalloc(nn), *r = xalloc(n), *p = xalloc(n);
  double *out = xalloc(2 * (size_t)n), *ref = xalloc(2 * (size_t)n);
  double *s = out, *q = out + n;
  unsigned long st = 51;
  for (size_t i = 0; i < nn; i++) A[i] = gs_rand(&st);
  for (long i = 0; i < n; i++) r[i] = (double)(i % 23) / 23.0 - 0.4;
  for (long i = 0; i < n; i++) p[i] = (double)(i % 29) / 29.0 + 0.1;

#pragma omp target data map(to: A[0:nn], r[0:n], p[0:n]) map(from: out[0:2 * n])
  {
    GS_TIME(a, "bicg_s", kernel_s(n, A, r, s));
    GS_TIME(a, "bicg_q", kernel_q(n, A, p, q));
  }

  /* Reference, same summation order per element. */
  double *rs = ref, *rq = ref + n;
  for (long j = 0; j < n; j++) rs[j] = 0.0;
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) rs[j] += r[i] * A[i * n + j];
#pragma omp parallel for
  for (long i = 0; i < n; i++) {
    double acc = 0.0;
    for (long j = 0; j < n; j++) acc += A[i * n + j] * p[j];
    rq[i] = acc;
  }
  gs_check(&a, out, ref, 2 * n, 1e-9);
  free(A); free(r); free(p); free(out); free(ref);
  return 0;
}
