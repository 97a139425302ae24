/* sten_2d9: 2-D stencils over the interior of an N x N grid (x fastest),
 * collapse(2), out of place:
 *   b9_box:     9-point box in double: v = (4 u_c + 2 (faces) + corners) / 16
 *               (a 3x3 binomial smoothing)
 *   b9_star5:   5-point star Jacobi step for -lap u = f in double:
 *               v = (f h^2 + sum of the 4 face neighbours) / 4
 *   b9_box_f32: the 9-point box with its own weights per point (a stencil
 *               "matrix" stored as 9 float coefficient planes, as a
 *               discretised variable operator is): 10 float streams
 * The CPU computes the same per-point functions (declare target). Checked
 * to 1e-13 relative for the double kernels (at most ~10 roundings of O(1)
 * values, FMA contraction a few ulps); b9_box_f32 accumulates 9 float
 * products: the device may contract them into FMAs, so it is checked to
 * 1e-5 (9 roundings of 6e-8 each, relative to a sum of magnitude <= 1,
 * with a margin) against the double reference.
 * N is the edge (2048, 4096, 8192: 4.2 M to 67 M points); memory 4 N^2
 * doubles and 10 N^2 floats (2.8 GB at N = 8192). Pattern: long loop, 2-D
 * box and star stencils. */
#include "common.h"

#pragma omp declare target
static inline double box9(const double *u, long c, long w) {
  return (4.0 * u[c] + 2.0 * (u[c - 1] + u[c + 1] + u[c - w] + u[c + w]) + u[c - w - 1] +
          u[c - w + 1] + u[c + w - 1] + u[c + w + 1]) *
         (1.0 / 16.0);
}
static inline double star5(const double *u, const double *f, long c, long w, double h2) {
  return 0.25 * (f[c] * h2 + u[c - 1] + u[c + 1] + u[c - w] + u[c + w]);
}
#pragma omp end declare target

static void b9_box(long n, const double *u, double *v) {
  const long t = n * n;
#pragma omp target teams distribute parallel for collapse(2) map(to : u[0:t]) \
    map(tofrom : v[0:t])
  for (long y = 1; y < n - 1; y++)
    for (long x = 1; x < n - 1; x++) v[y * n + x] = box9(u, y * n + x, n);
}

static void b9_star5(long n, const double *u, const double *f, double *v) {
  const long t = n * n;
  const double h2 = 1.0 / ((double)(n - 1) * (n - 1));
#pragma omp target teams distribute parallel for collapse(2) map(to : u[0:t], f[0:t]) \
    map(tofrom : v[0:t])
  for (long y = 1; y < n - 1; y++)
    for (long x = 1; x < n - 1; x++) v[y * n + x] = star5(u, f, y * n + x, n, h2);
}

/* coefficient plane k (k = 3 (dy + 1) + dx + 1) at cell c: cf[k t + c] */
static void b9_box_f32(long n, const float *uf, const float *cf, float *vf) {
  const long t = n * n;
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : uf[0:t], cf[0:9 * t]) map(tofrom : vf[0:t])
  for (long y = 1; y < n - 1; y++)
    for (long x = 1; x < n - 1; x++) {
      const long c = y * n + x;
      float acc = 0.0f;
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++)
          acc += cf[(3 * (dy + 1) + dx + 1) * t + c] * uf[c + dy * n + dx];
      vf[c] = acc;
    }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "sten_2d9", 4096);
  const long n = a.n < 3 ? 3 : a.n, t = n * n;
  double *u = malloc(sizeof(double) * t), *f = malloc(sizeof(double) * t);
  double *out = calloc(2 * (size_t)t, sizeof(double)), *v = out, *v5 = out + t;
  float *uf = malloc(sizeof(float) * t), *cf = malloc(sizeof(float) * 9 * t);
  float *vf = calloc((size_t)t, sizeof(float));
  unsigned long st = 9;
  for (long p = 0; p < t; p++) u[p] = gs_rand(&st), f[p] = gs_rand(&st), uf[p] = (float)u[p];
  for (long p = 0; p < 9 * t; p++) cf[p] = (float)(gs_rand(&st) / 9.0);
  const double h2 = 1.0 / ((double)(n - 1) * (n - 1));

#pragma omp target data map(to : u[0:t], f[0:t], uf[0:t], cf[0:9 * t]) \
    map(tofrom : out[0:2 * t], vf[0:t])
  {
    GS_TIME(a, "b9_box", { b9_box(n, u, v); });
    GS_TIME(a, "b9_star5", { b9_star5(n, u, f, v5); });
    GS_TIME(a, "b9_box_f32", { b9_box_f32(n, uf, cf, vf); });
  }

  double *ref = calloc(2 * (size_t)t, sizeof(double));
  double *gf = calloc((size_t)t, sizeof(double)), *rf = calloc((size_t)t, sizeof(double));
#pragma omp parallel for
  for (long y = 1; y < n - 1; y++)
    for (long x = 1; x < n - 1; x++) {
      const long c = y * n + x;
      ref[c] = box9(u, c, n);
      ref[t + c] = star5(u, f, c, n, h2);
      double acc = 0.0;
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++)
          acc += (double)cf[(3 * (dy + 1) + dx + 1) * t + c] * uf[c + dy * n + dx];
      rf[c] = acc;
      gf[c] = vf[c];
    }
  double max_err = 0.0;
  for (long p = 0; p < t; p++) {
    const double e = fabs(gf[p] - rf[p]);
    if (!(e <= 1e-5)) {
      printf("gridsel-bench: prog=%s n=%ld check=FAIL b9_box_f32 at %ld: got %.9g want %.9g\n",
             a.prog, a.n, p, gf[p], rf[p]);
      return 1;
    }
    max_err = e > max_err ? e : max_err;
  }
  printf("gridsel-bench: prog=%s n=%ld b9_box_f32_max_abs_err=%.3e\n", a.prog, a.n, max_err);
  gs_check(&a, out, ref, 2 * t, 1e-13);
  free(u); free(f); free(out); free(uf); free(cf); free(vf); free(ref); free(gf); free(rf);
  return 0;
}
