/* fdtd2d: one time step of the 2-D finite-difference time-domain (Yee)
 * update of the fields ey, ex, hz on an N x N grid. Each repetition computes
 * the new fields from saved inputs into separate outputs (idempotent):
 *   "fdtd_ey": ey1[0][j] = src;  ey1[i][j] = ey0[i][j] - 0.5 (hz0[i][j] - hz0[i-1][j])
 *   "fdtd_ex": ex1[i][0] = ex0[i][0];
 *              ex1[i][j] = ex0[i][j] - 0.5 (hz0[i][j] - hz0[i][j-1])
 *   "fdtd_hz": hz1[i][j] = hz0[i][j] - 0.7 (ex1[i][j+1] - ex1[i][j]
 *                                          + ey1[i+1][j] - ey1[i][j])
 *              for i, j < N-1; hz1 = hz0 on the last row and column.
 * Each kernel is a collapse(2) loop over all N x N points. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "fdtd2d: out of memory\n"); exit(2); }
  return p;
}

static void kernel_ey(long n, double src, const double *restrict ey0,
                      const double *restrict hz0, double *restrict ey1) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      ey1[i * n + j] = i == 0 ? src
                              : ey0[i * n + j] -
                                    0.5 * (hz0[i * n + j] - hz0[(i - 1) * n + j]);
}

static void kernel_ex(long n, const double *restrict ex0,
                      const double *restrict hz0, double *restrict ex1) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      ex1[i * n + j] = j == 0 ? ex0[i * n]
                              : ex0[i * n + j] -
                                    0.5 * (hz0[i * n + j] - hz0[i * n + j - 1]);
}

static void kernel_hz(long n, const double *restrict hz0,
                      const double *restrict ex1, const double *restrict ey1,
                      double *restrict hz1) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      hz1[i * n + j] =
          (i < n - 1 && j < n - 1)
              ? hz0[i * n + j] - 0.7 * (ex1[i * n + j + 1] - ex1[i * n + j] +
                                        ey1[(i + 1) * n + j] - ey1[i * n + j])
              : hz0[i * n + j];
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "fdtd2d", 8000);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *in = xalloc(3 * nn), *out = xalloc(3 * nn), *ref = xalloc(3 * nn);
  double *ey0 = in, *ex0 = in + nn, *hz0 = in + 2 * nn;
  double *ey1 = out, *ex1 = out + nn, *hz1 = out + 2 * nn;
  const double src = 1.25;
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      double x = (double)i / (double)n, y = (double)j / (double)n;
      ex0[i * n + j] = x * (y + 1.0);
      ey0[i * n + j] = (x + 2.0) * y;
      hz0[i * n + j] = sin(6.0 * x) * cos(5.0 * y) + x * y;
    }

#pragma omp target data map(to: in[0:3 * nn]) map(from: out[0:3 * nn])
  {
    GS_TIME(a, "fdtd_ey", kernel_ey(n, src, ey0, hz0, ey1));
    GS_TIME(a, "fdtd_ex", kernel_ex(n, ex0, hz0, ex1));
    GS_TIME(a, "fdtd_hz", kernel_hz(n, hz0, ex1, ey1, hz1));
  }

  double *rey = ref, *rex = ref + nn, *rhz = ref + 2 * nn;
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      rey[i * n + j] = i == 0 ? src
                              : ey0[i * n + j] -
                                    0.5 * (hz0[i * n + j] - hz0[(i - 1) * n + j]);
      rex[i * n + j] = j == 0 ? ex0[i * n]
                              : ex0[i * n + j] -
                                    0.5 * (hz0[i * n + j] - hz0[i * n + j - 1]);
    }
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      rhz[i * n + j] =
          (i < n - 1 && j < n - 1)
              ? hz0[i * n + j] - 0.7 * (rex[i * n + j + 1] - rex[i * n + j] +
                                        rey[(i + 1) * n + j] - rey[i * n + j])
              : hz0[i * n + j];
  gs_check(&a, out, ref, (long)(3 * nn), 1e-9);
  free(in); free(out); free(ref);
  return 0;
}
