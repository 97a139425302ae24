/* gspmd_stencil1d: light 1-D loops over N elements written as `target teams`
 * regions with an inner `distribute parallel for`, the teams region also
 * holding team-level code (coefficients read from device memory) or two
 * loops. clang emits them in generic mode, OpenMPOpt makes them Generic-SPMD,
 * and the host launches them with trip count 0.
 *   adj_diff:  d[i] = (x[i+1] - x[i]) * inv_h, i < N-1; d[N-1] = 0
 *              (inv_h = coef[3] read in the teams region)
 *   stencil5:  y[i] = c0 x[i] + c1 (x[i-1] + x[i+1]) + c2 (x[i-2] + x[i+2])
 *              on 2 <= i < N-2, coefficients coef[0..2] read in the teams
 *              region (the stencil sweep of a 1-D Jacobi/heat solver)
 *   edge_pair: one teams region, two loops: the interior 3-point smoothing
 *              s[i] = (x[i-1] + 2 x[i] + x[i+1]) / 4 and a boundary loop
 *              writing s at both ends (writes are disjoint, so no barrier
 *              between the loops is needed)
 * The ends of y are a copy of x set on the host. N is the element count
 * (real codes: 2^17 to 2^26); memory 4 N doubles (2 GB at N = 2^26).
 * Pattern: Generic-SPMD, trip count 0, light memory-bound body. */
#include "common.h"

static void adj_diff(long n, const double *coef, const double *x, double *d) {
#pragma omp target teams map(to : coef[0:4], x[0:n]) map(tofrom : d[0:n])
  {
    const double inv_h = coef[3];
#pragma omp distribute parallel for
    for (long i = 0; i < n; i++) d[i] = i + 1 < n ? (x[i + 1] - x[i]) * inv_h : 0.0;
  }
}

static void stencil5(long n, const double *coef, const double *x, double *y) {
#pragma omp target teams map(to : coef[0:4], x[0:n]) map(tofrom : y[0:n])
  {
    const double c0 = coef[0], c1 = coef[1], c2 = coef[2];
#pragma omp distribute parallel for
    for (long i = 2; i < n - 2; i++)
      y[i] = c0 * x[i] + c1 * (x[i - 1] + x[i + 1]) + c2 * (x[i - 2] + x[i + 2]);
  }
}

static void edge_pair(long n, const double *x, double *s) {
#pragma omp target teams map(to : x[0:n]) map(tofrom : s[0:n])
  {
#pragma omp distribute parallel for
    for (long i = 1; i < n - 1; i++)
      s[i] = 0.25 * (x[i - 1] + 2.0 * x[i] + x[i + 1]);
#pragma omp distribute parallel for
    for (long e = 0; e < 2; e++) {
      const long i = e == 0 ? 0 : n - 1, o = e == 0 ? 1 : n - 2;
      s[i] = 0.75 * x[i] + 0.25 * x[o];
    }
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "gspmd_stencil1d", 33554432);
  const long n = a.n < 5 ? 5 : a.n;
  double coef[4] = {0.5, 0.2, 0.05, 1024.0};
  double *x = malloc(sizeof(double) * n);
  double *got = malloc(sizeof(double) * 3 * n); /* d y s */
  double *d = got, *y = got + n, *sm = got + 2 * n;
  unsigned long st = 17;
  for (long i = 0; i < n; i++) x[i] = gs_rand(&st);
  memset(got, 0, sizeof(double) * 3 * n);
  y[0] = x[0]; y[1] = x[1]; y[n - 2] = x[n - 2]; y[n - 1] = x[n - 1];

#pragma omp target data map(to : coef[0:4], x[0:n]) \
    map(tofrom : d[0:n], y[0:n], sm[0:n])
  {
    GS_TIME(a, "adj_diff", { adj_diff(n, coef, x, d); });
    GS_TIME(a, "stencil5", { stencil5(n, coef, x, y); });
    GS_TIME(a, "edge_pair", { edge_pair(n, x, sm); });
  }

  double *ref = malloc(sizeof(double) * 3 * n);
  for (long i = 0; i < n; i++) {
    ref[i] = i + 1 < n ? (x[i + 1] - x[i]) * coef[3] : 0.0;
    ref[n + i] = (i >= 2 && i < n - 2)
                     ? coef[0] * x[i] + coef[1] * (x[i - 1] + x[i + 1]) +
                           coef[2] * (x[i - 2] + x[i + 2])
                     : x[i];
    ref[2 * n + i] = (i >= 1 && i < n - 1)
                         ? 0.25 * (x[i - 1] + 2.0 * x[i] + x[i + 1])
                         : 0.75 * x[i] + 0.25 * x[i == 0 ? 1 : n - 2];
  }
  gs_check(&a, got, ref, 3 * n, 1e-12);
  free(x); free(got); free(ref);
  return 0;
}
