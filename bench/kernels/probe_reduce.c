/* probe_reduce: scalar reductions over N elements.
 *   reduce_sum: target teams distribute parallel for reduction(+:sum)
 *   reduce_max: target teams distribute parallel for reduction(max:m)
 * Loop class: memory-bound reductions (partial results combined across
 * threads and teams by the runtime). N is the element count. */
#include "common.h"

static double reduce_sum(long n, const double *x) {
  double sum = 0.0;
#pragma omp target teams distribute parallel for reduction(+ : sum) \
    map(to : x[0:n]) map(tofrom : sum)
  for (long i = 0; i < n; i++) sum += x[i];
  return sum;
}

static double reduce_max(long n, const double *x) {
  double m = -HUGE_VAL;
#pragma omp target teams distribute parallel for reduction(max : m) \
    map(to : x[0:n]) map(tofrom : m)
  for (long i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
  return m;
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "probe_reduce", 16777216);
  const long n = a.n;
  double *x = malloc(sizeof(double) * n);
  unsigned long s = 1234567;
  for (long i = 0; i < n; i++) x[i] = gs_rand(&s);
  x[(n * 7) / 11] = 2.0; /* a known, unique maximum */
  double got[2] = {0.0, 0.0}, ref[2] = {0.0, -HUGE_VAL};

#pragma omp target data map(to : x[0:n])
  {
    GS_TIME(a, "reduce_sum", { got[0] = reduce_sum(n, x); });
    GS_TIME(a, "reduce_max", { got[1] = reduce_max(n, x); });
  }

  for (long i = 0; i < n; i++) {
    ref[0] += x[i];
    ref[1] = x[i] > ref[1] ? x[i] : ref[1];
  }
  /* the sum is compared relative to its size (order of additions differs) */
  got[0] /= (double)n; ref[0] /= (double)n;
  gs_check(&a, got, ref, 2, 1e-12);
  free(x);
  return 0;
}
