/* jacobi2d: one Jacobi sweep of the 2-D 5-point stencil on an N x N grid,
 * B = 0.2 * (A[i][j] + A[i-1][j] + A[i+1][j] + A[i][j-1] + A[i][j+1]) at
 * interior points, B = A on the border. One kernel ("jacobi2d"), a
 * collapse(2) loop over all N x N points; B is computed from A only, so the
 * kernel is idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "jacobi2d: out of memory\n"); exit(2); }
  return p;
}

#define JACOBI_POINT(A, B, i, j, n)                                            \
  do {                                                                         \
    long c_ = (i) * (n) + (j);                                                 \
    if ((i) > 0 && (i) < (n) - 1 && (j) > 0 && (j) < (n) - 1)                  \
      (B)[c_] = 0.2 * ((A)[c_] + (A)[c_ - (n)] + (A)[c_ + (n)] + (A)[c_ - 1] + \
                       (A)[c_ + 1]);                                           \
    else                                                                       \
      (B)[c_] = (A)[c_];                                                       \
  } while (0)

static void kernel_jacobi(long n, const double *restrict A,
                          double *restrict B) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) JACOBI_POINT(A, B, i, j, n);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "jacobi2d", 8000);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *A = xalloc(nn), *B = xalloc(nn), *ref = xalloc(nn);
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      A[i * n + j] = ((double)i * (double)(j + 2) + 2.0) / (double)n +
                     0.25 * (double)((i * 7 + j * 3) % 19);

#pragma omp target data map(to: A[0:nn]) map(from: B[0:nn])
  {
    GS_TIME(a, "jacobi2d", kernel_jacobi(n, A, B));
  }

  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) JACOBI_POINT(A, ref, i, j, n);
  gs_check(&a, B, ref, (long)nn, 1e-9);
  free(A); free(B); free(ref);
  return 0;
}
