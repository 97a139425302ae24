/* probe_short: short loops with heavy bodies. N iterations (meant for 1..264,
 * i.e. up to 2x the 132 SMs of an H100), each a long dependent recurrence, so
 * the run time is the latency of one iteration times the number of iterations
 * each hardware thread gets. This is the case where the 1-thread-per-block
 * rule for short loops is slow under clang 19 (the distribute hands out chunks
 * of 128 iterations whatever the block size).
 *   short_sin: 2^13 steps of x = sin(fma(x, a, c)) + 0.5 x   (contracting,
 *              so rounding differences between libms do not grow)
 *   short_fma: 2^16 steps of a dependent FMA recurrence
 * (sin steps are ~30x the cost of an FMA step, hence the smaller count: the
 * per-iteration latency of both is a few hundred microseconds on an H100, so
 * the slowest grids, 128 iterations per thread, stay under a second.)
 * N is the trip count of the loop. */
#include "common.h"

#define SIN_STEPS (1L << 13)
#define FMA_STEPS (1L << 16)

#pragma omp declare target
static inline double sin_chain(long i) {
  double x = 0.5 + 1e-3 * (double)(i % 97);
  const double a = 0.999, c = 1e-4 * (double)(i % 13);
  for (long s = 0; s < SIN_STEPS; s++) x = sin(fma(x, a, c)) + 0.5 * x;
  return x;
}
static inline double fma_chain(long i) {
  double x = 1.0 + 1e-6 * (double)i;
  const double a = 0.9999999, c = 1e-7;
  for (long s = 0; s < FMA_STEPS; s++) x = fma(x, a, c);
  return x;
}
#pragma omp end declare target

static void short_sin(long n, double *out) {
#pragma omp target teams distribute parallel for map(tofrom : out[0:n])
  for (long i = 0; i < n; i++) out[i] = sin_chain(i);
}

static void short_fma(long n, double *out) {
#pragma omp target teams distribute parallel for map(tofrom : out[0:n])
  for (long i = 0; i < n; i++) out[i] = fma_chain(i);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "probe_short", 132);
  const long n = a.n;
  double *got = calloc(2 * (size_t)n, sizeof(double));
  double *ref = malloc(sizeof(double) * 2 * n);
  double *o1 = got, *o2 = got + n;

#pragma omp target data map(tofrom : o1[0:n], o2[0:n])
  {
    GS_TIME(a, "short_sin", { short_sin(n, o1); });
    GS_TIME(a, "short_fma", { short_fma(n, o2); });
  }

  for (long i = 0; i < n; i++) {
    ref[i] = sin_chain(i);
    ref[n + i] = fma_chain(i);
  }
  gs_check(&a, got, ref, 2 * n, 1e-9);
  free(got); free(ref);
  return 0;
}
