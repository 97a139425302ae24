/* probe_localmem: a per-iteration private array indexed with data-dependent
 * subscripts, which the compiler cannot keep in registers, so it lives in the
 * thread's stack frame (local memory on NVIDIA GPUs). Each iteration fills a
 * 64-entry private buffer from x[i], runs 256 update steps whose two
 * subscripts come from a per-iteration LCG, and folds the buffer into out[i].
 * Loop class: local-memory (stack) traffic, moderate compute.
 * N is the trip count. */
#include "common.h"

#define NB 64
#define STEPS 256

#pragma omp declare target
static inline double local_hist(long i, double x) {
  double buf[NB];
  for (int k = 0; k < NB; k++) buf[k] = x * (double)(k + 1) * 1e-3;
  unsigned long h = (unsigned long)i * 0x9e3779b97f4a7c15UL + 1;
  for (int s = 0; s < STEPS; s++) {
    h = h * 6364136223846793005UL + 1442695040888963407UL;
    int p = (int)(h >> 58), q = (int)((h >> 52) & (NB - 1));
    buf[p] = buf[p] * 0.5 + buf[q] + 1e-3;
  }
  double out = 0.0;
  for (int k = 0; k < NB; k++) out += buf[k] * (double)(k + 1);
  return out;
}
#pragma omp end declare target

static void localmem_hist(long n, const double *x, double *out) {
#pragma omp target teams distribute parallel for \
    map(to : x[0:n]) map(tofrom : out[0:n])
  for (long i = 0; i < n; i++) out[i] = local_hist(i, x[i]);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "probe_localmem", 1048576);
  const long n = a.n;
  double *x = malloc(sizeof(double) * n);
  double *out = calloc(n, sizeof(double)), *ref = malloc(sizeof(double) * n);
  unsigned long s = 6464;
  for (long i = 0; i < n; i++) x[i] = gs_rand(&s);

#pragma omp target data map(to : x[0:n]) map(tofrom : out[0:n])
  {
    GS_TIME(a, "localmem_hist", { localmem_hist(n, x, out); });
  }

  for (long i = 0; i < n; i++) ref[i] = local_hist(i, x[i]);
  gs_check(&a, out, ref, n, 1e-12);
  free(x); free(out); free(ref);
  return 0;
}
