/* red_sum_minmax: cross-team reductions over tens of millions of points, the
 * diagnostics of simulation codes (total energy, extreme values).
 * `target teams distribute parallel for reduction(...)` over N points:
 *   red_sum:    sum_i x_i^2                          reduction(+), 1 double
 *   red_minmax: min_i x_i and max_i x_i              reduction(min) and
 *                                                    reduction(max)
 *   red_energy: e = sum 0.5 (u^2 + v^2), vmin = min(u), vmax = max of the
 *               speed sqrt(u^2 + v^2) over two arrays (+, min and max in one
 *               kernel, 3 doubles)
 * Inputs: x, u in [-1, 1), v in [0, 2); extreme values are planted at known
 * positions so min/max are exact; sums are checked to 1e-10 relative.
 * N is the point count (16.7 M to 134 M); memory 3 N doubles (3.2 GB at
 * N = 2^27). Pattern: cross-team reduction (sum/min/max). */
#include "common.h"

static double red_sum(long n, const double *x) {
  double s = 0.0;
#pragma omp target teams distribute parallel for reduction(+ : s) \
    map(to : x[0:n]) map(tofrom : s)
  for (long i = 0; i < n; i++) s += x[i] * x[i];
  return s;
}

static void red_minmax(long n, const double *x, double *mn, double *mx) {
  double lo = INFINITY, hi = -INFINITY;
#pragma omp target teams distribute parallel for reduction(min : lo) \
    reduction(max : hi) map(to : x[0:n]) map(tofrom : lo, hi)
  for (long i = 0; i < n; i++) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  *mn = lo;
  *mx = hi;
}

static void red_energy(long n, const double *u, const double *v, double *out) {
  double e = 0.0, umin = INFINITY, smax = 0.0;
#pragma omp target teams distribute parallel for reduction(+ : e) \
    reduction(min : umin) reduction(max : smax) map(to : u[0:n], v[0:n]) \
    map(tofrom : e, umin, smax)
  for (long i = 0; i < n; i++) {
    const double k = u[i] * u[i] + v[i] * v[i];
    e += 0.5 * k;
    umin = u[i] < umin ? u[i] : umin;
    const double sp = sqrt(k);
    smax = sp > smax ? sp : smax;
  }
  out[0] = e;
  out[1] = umin;
  out[2] = smax;
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "red_sum_minmax", 67108864);
  const long n = a.n < 4 ? 4 : a.n;
  double *x = malloc(sizeof(double) * n), *u = malloc(sizeof(double) * n);
  double *v = malloc(sizeof(double) * n);
  unsigned long st = 2024;
  for (long i = 0; i < n; i++) {
    x[i] = 2.0 * gs_rand(&st) - 1.0;
    u[i] = 2.0 * gs_rand(&st) - 1.0;
    v[i] = 2.0 * gs_rand(&st);
  }
  /* planted extremes, away from the ends */
  x[n / 3] = -3.25; x[(2 * n) / 3 + 1] = 5.5;
  u[n - 2] = -7.0; v[n / 2] = 9.0;
  double got[6], ref[6];

#pragma omp target data map(to : x[0:n], u[0:n], v[0:n])
  {
    GS_TIME(a, "red_sum", { got[0] = red_sum(n, x); });
    GS_TIME(a, "red_minmax", { red_minmax(n, x, &got[1], &got[2]); });
    GS_TIME(a, "red_energy", { red_energy(n, u, v, &got[3]); });
  }

  double s = 0.0, lo = INFINITY, hi = -INFINITY, e = 0.0, umin = INFINITY,
         smax = 0.0;
  for (long i = 0; i < n; i++) {
    s += x[i] * x[i];
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
    const double k = u[i] * u[i] + v[i] * v[i];
    e += 0.5 * k;
    umin = u[i] < umin ? u[i] : umin;
    smax = sqrt(k) > smax ? sqrt(k) : smax;
  }
  ref[0] = s; ref[1] = lo; ref[2] = hi; ref[3] = e; ref[4] = umin; ref[5] = smax;
  /* sums relative to their size; extremes exact */
  got[0] /= s; ref[0] = 1.0;
  got[3] /= e; ref[3] = 1.0;
  /* min/max of stored values are exact; smax (a computed sqrt, which the
   * device may contract into an FMA) is left to the tolerance */
  if (got[1] != lo || got[2] != hi || got[4] != umin) {
    printf("gridsel-bench: prog=%s n=%ld check=FAIL extremes differ\n", a.prog, a.n);
    return 1;
  }
  gs_check(&a, got, ref, 6, 1e-10);
  free(x); free(u); free(v);
  return 0;
}
