/* stencil3d: one 7-point Jacobi sweep on an N x N x N grid (double).
 *   out[i][j][k] = c0*in[i][j][k] + c1*(sum of the 6 face neighbours)
 * over the interior points, as one collapse(3) loop nest. The boundary of out
 * is a copy of in, set once on the host, so every sweep is a pure function of
 * in (idempotent). N is the grid edge; memory is 2 * N^3 doubles.
 * Loop class: regular memory-bound 3-D stencil, large collapsed trip count. */
#include "common.h"

static void jacobi7(long n, const double *in, double *out) {
  const long nn = n * n, total = n * n * n;
  const double c0 = 0.4, c1 = 0.1;
#pragma omp target teams distribute parallel for collapse(3) \
    map(to : in[0:total]) map(tofrom : out[0:total])
  for (long i = 1; i < n - 1; i++)
    for (long j = 1; j < n - 1; j++)
      for (long k = 1; k < n - 1; k++) {
        long p = i * nn + j * n + k;
        out[p] = c0 * in[p] + c1 * (in[p - nn] + in[p + nn] + in[p - n] +
                                    in[p + n] + in[p - 1] + in[p + 1]);
      }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "stencil3d", 256);
  const long n = a.n < 3 ? 3 : a.n, nn = n * n, total = n * n * n;
  double *in = malloc(sizeof(double) * total);
  double *out = malloc(sizeof(double) * total);
  double *ref = malloc(sizeof(double) * total);
  unsigned long s = 12345;
  for (long p = 0; p < total; p++) in[p] = gs_rand(&s);
  memcpy(out, in, sizeof(double) * total);
  memcpy(ref, in, sizeof(double) * total);

#pragma omp target data map(to : in[0:total]) map(tofrom : out[0:total])
  {
    GS_TIME(a, "jacobi7", { jacobi7(n, in, out); });
  }

  for (long i = 1; i < n - 1; i++)
    for (long j = 1; j < n - 1; j++)
      for (long k = 1; k < n - 1; k++) {
        long p = i * nn + j * n + k;
        ref[p] = 0.4 * in[p] + 0.1 * (in[p - nn] + in[p + nn] + in[p - n] +
                                      in[p + n] + in[p - 1] + in[p + 1]);
      }
  gs_check(&a, out, ref, total, 1e-12);
  free(in); free(out); free(ref);
  return 0;
}
