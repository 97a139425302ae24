/* long_stream_minmax: streaming loops and the min/max reductions that follow
 * them, in double and in float (the shape of a data-analysis pass: update a
 * field, then find its range), separate 1-D kernels over N elements:
 *   sm_triad:      a = b + s c (double, 24 B per element)
 *   sm_scale_f32:  y = alpha x (float, 8 B per element)
 *   sm_range:      reduction(min) and reduction(max) of a (double, 8 B)
 *   sm_range_f32:  reduction(min) and reduction(max) of y (float, 4 B)
 *   sm_absmax:     reduction(max) of |a - b| (double, 16 B)
 * Each is timed on its own (GS_TIME); every kernel writes only what it does
 * not read, so repetitions leave the same result. The CPU reference runs the
 * same regions on the host (`if(target: 0)`: the region's host version, same
 * code). Checked exactly up to 1e-15 relative: per-element arithmetic (a
 * multiply and an add: FMA contraction may differ in the last bit) and
 * extremes of values computed per element.
 * N is the element count (4194304, 33554432, 67108864); memory 3 N doubles +
 * 2 N floats (1 GB at 33554432). Pattern: long loop, streaming kernels and
 * min/max cross-team reductions. */
#include "common.h"

static void sm_triad(long n, const double *b, const double *c, double s, double *a, int dev) {
#pragma omp target teams distribute parallel for if (target : dev) map(to : b[0:n], c[0:n]) \
    map(tofrom : a[0:n])
  for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

static void sm_scale_f32(long n, const float *x, float alpha, float *y, int dev) {
#pragma omp target teams distribute parallel for if (target : dev) map(to : x[0:n]) \
    map(tofrom : y[0:n])
  for (long i = 0; i < n; i++) y[i] = alpha * x[i];
}

static void sm_range(long n, const double *a, double *r, int dev) {
  double lo = INFINITY, hi = -INFINITY;
#pragma omp target teams distribute parallel for if (target : dev) reduction(min : lo) \
    reduction(max : hi) map(to : a[0:n]) map(tofrom : lo, hi)
  for (long i = 0; i < n; i++) {
    lo = a[i] < lo ? a[i] : lo;
    hi = a[i] > hi ? a[i] : hi;
  }
  r[0] = lo, r[1] = hi;
}

static void sm_range_f32(long n, const float *y, double *r, int dev) {
  float lo = INFINITY, hi = -INFINITY;
#pragma omp target teams distribute parallel for if (target : dev) reduction(min : lo) \
    reduction(max : hi) map(to : y[0:n]) map(tofrom : lo, hi)
  for (long i = 0; i < n; i++) {
    lo = y[i] < lo ? y[i] : lo;
    hi = y[i] > hi ? y[i] : hi;
  }
  r[0] = lo, r[1] = hi;
}

static double sm_absmax(long n, const double *a, const double *b, int dev) {
  double m = 0.0;
#pragma omp target teams distribute parallel for if (target : dev) reduction(max : m) \
    map(to : a[0:n], b[0:n]) map(tofrom : m)
  for (long i = 0; i < n; i++) {
    const double d = fabs(a[i] - b[i]);
    m = d > m ? d : m;
  }
  return m;
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "long_stream_minmax", 33554432);
  const long n = a.n;
  double *va = calloc((size_t)n, sizeof(double)), *vb = malloc(sizeof(double) * n);
  double *vc = malloc(sizeof(double) * n);
  float *x = malloc(sizeof(float) * n), *y = calloc((size_t)n, sizeof(float));
  unsigned long st = 41;
  for (long i = 0; i < n; i++) {
    vb[i] = gs_rand(&st) - 0.5, vc[i] = gs_rand(&st);
    x[i] = (float)(gs_rand(&st) * 4.0 - 1.0);
  }
  const double s = 3.0;
  const float alpha = 0.75f;
  double r[5]; /* range of a, range of y, max abs(a - b) */

#pragma omp target data map(to : vb[0:n], vc[0:n], x[0:n]) map(tofrom : va[0:n], y[0:n])
  {
    GS_TIME(a, "sm_triad", { sm_triad(n, vb, vc, s, va, 1); });
    GS_TIME(a, "sm_scale_f32", { sm_scale_f32(n, x, alpha, y, 1); });
    GS_TIME(a, "sm_range", { sm_range(n, va, &r[0], 1); });
    GS_TIME(a, "sm_range_f32", { sm_range_f32(n, y, &r[2], 1); });
    GS_TIME(a, "sm_absmax", { r[4] = sm_absmax(n, va, vb, 1); });
  }

  /* CPU: the same regions on the host */
  double *ca = malloc(sizeof(double) * n), cr[5];
  float *cy = malloc(sizeof(float) * n);
  sm_triad(n, vb, vc, s, ca, 0);
  sm_scale_f32(n, x, alpha, cy, 0);
  sm_range(n, ca, &cr[0], 0);
  sm_range_f32(n, cy, &cr[2], 0);
  cr[4] = sm_absmax(n, ca, vb, 0);
  const long k = 2 * n + 5;
  double *got = malloc(sizeof(double) * k), *ref = malloc(sizeof(double) * k);
  memcpy(got, va, sizeof(double) * n), memcpy(ref, ca, sizeof(double) * n);
  for (long i = 0; i < n; i++) got[n + i] = y[i], ref[n + i] = cy[i];
  for (int q = 0; q < 5; q++) got[2 * n + q] = r[q], ref[2 * n + q] = cr[q];
  printf("gridsel-bench: prog=%s n=%ld range=[%.6f, %.6f] range_f32=[%.6f, %.6f]\n", a.prog,
         a.n, cr[0], cr[1], cr[2], cr[3]);
  gs_check(&a, got, ref, k, 1e-15);
  free(va); free(vb); free(vc); free(x); free(y); free(ca); free(cy); free(got); free(ref);
  return 0;
}
