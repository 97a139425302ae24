/* sten_3d7: 3-D 7-point star stencils over the interior of an N^3 grid of
 * doubles (x fastest), collapse(3), out of place, as the operator applies
 * of structured-grid solvers are written:
 *   s7_lap:     v = u + r (sum of the 6 face neighbours - 6 u), a constant-
 *               coefficient Laplacian step (2 streams)
 *   s7_varcoef: w = div(k grad u) with the conductivity k stored per cell
 *               and face values k_f = (k_c + k_nb) / 2 (reads u and k at 7
 *               points: 3 streams)
 * The CPU computes the same per-point function (declare target); checked to
 * 1e-13 relative (values O(1), at most ~20 roundings per point, and the
 * device may contract a multiply-add into an FMA: a few ulps).
 * N is the edge (160, 256, 320: 4.1 M to 32.8 M points, 2^22-2^25); memory
 * 4 N^3 doubles (1 GB at N = 320). Pattern: long loop, 3-D star stencil. */
#include "common.h"

#define RATE 0.1

#pragma omp declare target
static inline double lap7(const double *u, long c, long sy, long sz) {
  return u[c] + RATE * (u[c - 1] + u[c + 1] + u[c - sy] + u[c + sy] + u[c - sz] +
                        u[c + sz] - 6.0 * u[c]);
}
static inline double varcoef7(const double *u, const double *k, long c, long sy, long sz) {
  const long o[3] = {1, sy, sz};
  double acc = 0.0;
  for (int d = 0; d < 3; d++) {
    const double kp = 0.5 * (k[c] + k[c + o[d]]), km = 0.5 * (k[c] + k[c - o[d]]);
    acc += kp * (u[c + o[d]] - u[c]) - km * (u[c] - u[c - o[d]]);
  }
  return acc;
}
#pragma omp end declare target

static void s7_lap(long n, const double *u, double *v) {
  const long t = n * n * n, sy = n, sz = n * n;
#pragma omp target teams distribute parallel for collapse(3) map(to : u[0:t]) \
    map(tofrom : v[0:t])
  for (long z = 1; z < n - 1; z++)
    for (long y = 1; y < n - 1; y++)
      for (long x = 1; x < n - 1; x++) v[z * sz + y * sy + x] = lap7(u, z * sz + y * sy + x, sy, sz);
}

static void s7_varcoef(long n, const double *u, const double *k, double *w) {
  const long t = n * n * n, sy = n, sz = n * n;
#pragma omp target teams distribute parallel for collapse(3) map(to : u[0:t], k[0:t]) \
    map(tofrom : w[0:t])
  for (long z = 1; z < n - 1; z++)
    for (long y = 1; y < n - 1; y++)
      for (long x = 1; x < n - 1; x++)
        w[z * sz + y * sy + x] = varcoef7(u, k, z * sz + y * sy + x, sy, sz);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "sten_3d7", 256);
  const long n = a.n < 3 ? 3 : a.n, t = n * n * n, sy = n, sz = n * n;
  double *u = malloc(sizeof(double) * t), *k = malloc(sizeof(double) * t);
  double *out = calloc(2 * (size_t)t, sizeof(double)), *v = out, *w = out + t;
  unsigned long st = 7;
  for (long p = 0; p < t; p++) u[p] = gs_rand(&st), k[p] = 0.5 + gs_rand(&st);

#pragma omp target data map(to : u[0:t], k[0:t]) map(tofrom : out[0:2 * t])
  {
    GS_TIME(a, "s7_lap", { s7_lap(n, u, v); });
    GS_TIME(a, "s7_varcoef", { s7_varcoef(n, u, k, w); });
  }

  double *ref = calloc(2 * (size_t)t, sizeof(double));
#pragma omp parallel for
  for (long z = 1; z < n - 1; z++)
    for (long y = 1; y < n - 1; y++)
      for (long x = 1; x < n - 1; x++) {
        const long c = z * sz + y * sy + x;
        ref[c] = lap7(u, c, sy, sz);
        ref[t + c] = varcoef7(u, k, c, sy, sz);
      }
  gs_check(&a, out, ref, 2 * t, 1e-13);
  free(u); free(k); free(out); free(ref);
  return 0;
}
