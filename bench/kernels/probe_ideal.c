/* probe_ideal: a moderate per-iteration body over N iterations, N from a few
 * thousand to ~10^5: enough iterations to fill a GPU at modest block sizes,
 * each with a few hundred to a few thousand floating-point operations.
 *   ideal_cos:    y[i] = sum_{k<256} c[k] * cos(x[i] * (k + 1))  (independent
 *                 transcendental terms, coefficients read from a small table)
 *   ideal_horner: z[i] = 64 rounds of a degree-63 Horner polynomial (a
 *                 dependent FMA chain of 4032 steps)
 * N is the trip count. */
#include "common.h"

#define NC 256
#define DEG 64
#define ROUNDS 64

#pragma omp declare target
static inline double cos_sum(double x, const double *c) {
  double s = 0.0;
  for (int k = 0; k < NC; k++) s += c[k] * cos(x * (double)(k + 1));
  return s;
}
static inline double horner(double x, const double *p) {
  double t = x;
  for (int r = 0; r < ROUNDS; r++) {
    double acc = p[DEG - 1];
    for (int k = DEG - 2; k >= 0; k--) acc = fma(acc, t, p[k]);
    t = 0.5 * t + 0.25 * acc;
  }
  return t;
}
#pragma omp end declare target

static void ideal_cos(long n, const double *x, const double *c, double *y) {
#pragma omp target teams distribute parallel for \
    map(to : x[0:n], c[0:NC]) map(tofrom : y[0:n])
  for (long i = 0; i < n; i++) y[i] = cos_sum(x[i], c);
}

static void ideal_horner(long n, const double *x, const double *p, double *z) {
#pragma omp target teams distribute parallel for \
    map(to : x[0:n], p[0:DEG]) map(tofrom : z[0:n])
  for (long i = 0; i < n; i++) z[i] = horner(x[i], p);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "probe_ideal", 32768);
  const long n = a.n;
  double *x = malloc(sizeof(double) * n), c[NC], p[DEG];
  double *got = calloc(2 * (size_t)n, sizeof(double));
  double *ref = malloc(sizeof(double) * 2 * n);
  double *y = got, *z = got + n;
  unsigned long s = 5150;
  for (long i = 0; i < n; i++) x[i] = gs_rand(&s);
  for (int k = 0; k < NC; k++) c[k] = (gs_rand(&s) - 0.5) / (k + 1);
  /* |p[k]| <= 2^-(k+1): for |t| <= 1, |poly| <= 1 and |t_next| <= 0.75 */
  for (int k = 0; k < DEG; k++) p[k] = ldexp(gs_rand(&s) - 0.5, -k);

#pragma omp target data map(to : x[0:n], c[0:NC], p[0:DEG]) \
    map(tofrom : y[0:n], z[0:n])
  {
    GS_TIME(a, "ideal_cos", { ideal_cos(n, x, c, y); });
    GS_TIME(a, "ideal_horner", { ideal_horner(n, x, p, z); });
  }

  for (long i = 0; i < n; i++) {
    ref[i] = cos_sum(x[i], c);
    ref[n + i] = horner(x[i], p);
  }
  gs_check(&a, got, ref, 2 * n, 1e-10);
  free(x); free(got); free(ref);
  return 0;
}
