/* probe_cap: the same moderate body (a 64-step dependent FMA chain seeded
 * from x[i]) compiled under four thread caps. clang 19 writes the cap into
 * the kernel (MaxThreads in the kernel environment, .maxntid in the PTX);
 * with no clause and no launch bounds it is 128.
 *   cap_default: no clause                                  -> cap 128
 *   cap_tl256:   thread_limit(256)                          -> cap 256
 *                (a clause: the user's choice, fixed for the launch too)
 *   cap_lb512:   ompx_attribute(__attribute__((launch_bounds(512))))
 *                only, no clause                            -> cap 512
 *   cap_lb1024:  launch_bounds(1024) only, no clause        -> cap 1024
 * The launch_bounds-only kernels pass ThreadLimit 0, so a grid chooser may
 * pick any block size up to their raised cap.
 * N is the trip count. */
#include "common.h"

#define CHAIN 64

#pragma omp declare target
static inline double chain(double x) {
  double t = x;
  for (int k = 0; k < CHAIN; k++) t = fma(t, 0.999, 0.001 * x);
  return t;
}
#pragma omp end declare target

static void cap_default(long n, const double *x, double *y) {
#pragma omp target teams distribute parallel for map(to : x[0:n]) \
    map(tofrom : y[0:n])
  for (long i = 0; i < n; i++) y[i] = chain(x[i]);
}

static void cap_tl256(long n, const double *x, double *y) {
#pragma omp target teams distribute parallel for thread_limit(256) \
    map(to : x[0:n]) map(tofrom : y[0:n])
  for (long i = 0; i < n; i++) y[i] = chain(x[i]);
}

static void cap_lb512(long n, const double *x, double *y) {
#pragma omp target teams distribute parallel for map(to : x[0:n]) \
    map(tofrom : y[0:n]) ompx_attribute(__attribute__((launch_bounds(512))))
  for (long i = 0; i < n; i++) y[i] = chain(x[i]);
}

static void cap_lb1024(long n, const double *x, double *y) {
#pragma omp target teams distribute parallel for map(to : x[0:n]) \
    map(tofrom : y[0:n]) ompx_attribute(__attribute__((launch_bounds(1024))))
  for (long i = 0; i < n; i++) y[i] = chain(x[i]);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "probe_cap", 4194304);
  const long n = a.n;
  double *x = malloc(sizeof(double) * n);
  double *got = calloc(4 * (size_t)n, sizeof(double));
  double *ref = malloc(sizeof(double) * 4 * n);
  double *y0 = got, *y1 = got + n, *y2 = got + 2 * n, *y3 = got + 3 * n;
  unsigned long s = 512;
  for (long i = 0; i < n; i++) x[i] = gs_rand(&s);

#pragma omp target data map(to : x[0:n]) \
    map(tofrom : y0[0:n], y1[0:n], y2[0:n], y3[0:n])
  {
    GS_TIME(a, "cap_default", { cap_default(n, x, y0); });
    GS_TIME(a, "cap_tl256", { cap_tl256(n, x, y1); });
    GS_TIME(a, "cap_lb512", { cap_lb512(n, x, y2); });
    GS_TIME(a, "cap_lb1024", { cap_lb1024(n, x, y3); });
  }

  for (long i = 0; i < n; i++) {
    double c = chain(x[i]);
    ref[i] = ref[n + i] = ref[2 * n + i] = ref[3 * n + i] = c;
  }
  gs_check(&a, got, ref, 4 * n, 1e-12);
  free(x); free(got); free(ref);
  return 0;
}
