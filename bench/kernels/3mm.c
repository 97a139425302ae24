/* 3mm: E = A * B, F = C * D, G = E * F, all N x N.
 * Three kernels ("3mm_e", "3mm_f", "3mm_g"), each a collapse(2) loop over
 * output elements with a dot product over k. Every output is fully rewritten
 * from inputs each repetition, so all kernels are idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "3mm: out of memory\n"); exit(2); }
  return p;
}

static void kernel_mm(long n, const double *restrict X,
                      const double *restrict Y, double *restrict P) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      double s = 0.0;
      for (long k = 0; k < n; k++) s += X[i * n + k] * Y[k * n + j];
      P[i * n + j] = s;
    }
}

/* P = X * Y with k ascending per element (same order as the kernel). */
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
  gs_args a = gs_parse(argc, argv, "3mm", 1024);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *A = xalloc(nn), *B = xalloc(nn), *C = xalloc(nn), *D = xalloc(nn);
  double *out = xalloc(3 * nn), *ref = xalloc(3 * nn);
  double *E = out, *F = out + nn, *G = out + 2 * nn;
  unsigned long st = 31;
  /* Centred inputs keep the magnitudes of G moderate. */
  for (size_t i = 0; i < nn; i++) A[i] = gs_rand(&st) - 0.5;
  for (size_t i = 0; i < nn; i++) B[i] = gs_rand(&st) - 0.5;
  for (size_t i = 0; i < nn; i++) C[i] = gs_rand(&st) - 0.5;
  for (size_t i = 0; i < nn; i++) D[i] = gs_rand(&st) - 0.5;

#pragma omp target data map(to: A[0:nn], B[0:nn], C[0:nn], D[0:nn]) \
    map(from: out[0:3 * nn])
  {
    GS_TIME(a, "3mm_e", kernel_mm(n, A, B, E));
    GS_TIME(a, "3mm_f", kernel_mm(n, C, D, F));
    GS_TIME(a, "3mm_g", kernel_mm(n, E, F, G));
  }

  ref_mm(n, A, B, ref);
  ref_mm(n, C, D, ref + nn);
  ref_mm(n, ref, ref + nn, ref + 2 * nn);
  gs_check(&a, out, ref, (long)(3 * nn), 1e-9);
  free(A); free(B); free(C); free(D); free(out); free(ref);
  return 0;
}
