/* sten_3d27: 3-D 27-point box stencils over an N^3 grid of doubles (x
 * fastest), out of place, in the two forms real codes use:
 *   s27_box:  collapse(3) over the interior; v = the full-weighting
 *             average of the 3x3x3 box (weights 8, 4, 2, 1 / 64 for the
 *             centre, 6 faces, 12 edges, 8 corners: a multigrid
 *             restriction's stencil, evaluated at every point)
 *   s27_flat: ONE loop over all N^3 points (trip count N^3, the form of codes
 *             that flatten their grids): interior points get the plain
 *             27-point mean, boundary points are copied (a branch per point)
 * Checked to 1e-13 relative against the same per-point code on the CPU
 * (27 products and sums of O(1) values; FMA contraction on the device
 * changes a few ulps).
 * N is the edge (128, 256, 320: 2.1 M to 32.8 M points); memory 3 N^3
 * doubles (786 MB at N = 320). Pattern: long loop, 3-D box stencil. */
#include "common.h"

#pragma omp declare target
static inline double box27(const double *u, long c, long sy, long sz) {
  double acc = 0.0;
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        const int far = (dz != 0) + (dy != 0) + (dx != 0);
        const double wgt = far == 0 ? 8.0 : far == 1 ? 4.0 : far == 2 ? 2.0 : 1.0;
        acc += wgt * u[c + dz * sz + dy * sy + dx];
      }
  return acc * (1.0 / 64.0);
}
static inline double mean27_or_copy(const double *u, long p, long n) {
  const long sy = n, sz = n * n;
  const long z = p / sz, y = (p / sy) % n, x = p % n;
  if (z == 0 || y == 0 || x == 0 || z == n - 1 || y == n - 1 || x == n - 1) return u[p];
  double acc = 0.0;
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) acc += u[p + dz * sz + dy * sy + dx];
  return acc * (1.0 / 27.0);
}
#pragma omp end declare target

static void s27_box(long n, const double *u, double *v) {
  const long t = n * n * n, sy = n, sz = n * n;
#pragma omp target teams distribute parallel for collapse(3) map(to : u[0:t]) \
    map(tofrom : v[0:t])
  for (long z = 1; z < n - 1; z++)
    for (long y = 1; y < n - 1; y++)
      for (long x = 1; x < n - 1; x++) v[z * sz + y * sy + x] = box27(u, z * sz + y * sy + x, sy, sz);
}

static void s27_flat(long n, const double *u, double *v) {
  const long t = n * n * n;
#pragma omp target teams distribute parallel for map(to : u[0:t]) map(tofrom : v[0:t])
  for (long p = 0; p < t; p++) v[p] = mean27_or_copy(u, p, n);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "sten_3d27", 256);
  const long n = a.n < 3 ? 3 : a.n, t = n * n * n, sy = n, sz = n * n;
  double *u = malloc(sizeof(double) * t);
  double *out = calloc(2 * (size_t)t, sizeof(double)), *v = out, *w = out + t;
  unsigned long st = 27;
  for (long p = 0; p < t; p++) u[p] = gs_rand(&st);

#pragma omp target data map(to : u[0:t]) map(tofrom : out[0:2 * t])
  {
    GS_TIME(a, "s27_box", { s27_box(n, u, v); });
    GS_TIME(a, "s27_flat", { s27_flat(n, u, w); });
  }

  double *ref = calloc(2 * (size_t)t, sizeof(double));
#pragma omp parallel for
  for (long z = 0; z < n; z++)
    for (long y = 0; y < n; y++)
      for (long x = 0; x < n; x++) {
        const long c = z * sz + y * sy + x;
        if (z > 0 && y > 0 && x > 0 && z < n - 1 && y < n - 1 && x < n - 1)
          ref[c] = box27(u, c, sy, sz);
        ref[t + c] = mean27_or_copy(u, c, n);
      }
  gs_check(&a, out, ref, 2 * t, 1e-13);
  free(u); free(out); free(ref);
  return 0;
}
