/* nest_rowhist: nested parallelism inside the combined construct:
 * `target teams distribute parallel for` over N rows of C = 256 samples
 * (float in [0, 1), row-major), whose body opens a nested parallel region
 * over an inner loop, as per-row feature extraction codes write it:
 *   row_hist:     nested `parallel for` over the B = 16 bins, each bin
 *                 counting the row's samples that fall in it (no reduction;
 *                 every bin written by one inner iteration)
 *   row_moments:  nested `parallel for simd reduction(+ : s, q)` over the C
 *                 samples: row mean and variance (double accumulators)
 *   row_hist_atm: nested `parallel for` over the C samples with
 *                 `atomic update` into the row's 16 bins (the histogram the
 *                 scatter way; bins zeroed in the same body first)
 * Counts are exact; moments are checked to 1e-9.
 * N is the row count; memory N C floats + 2 N B ints + 2 N doubles
 * (0.3 GB at N = 262144). Pattern: nested parallel for (with and without
 * simd, reduction, atomics) inside target teams distribute parallel for. */
#include "common.h"

#define C 256
#define B 16

static void row_hist(long n, const float *x, int *hist) {
#pragma omp target teams distribute parallel for map(to : x[0:n * C]) \
    map(tofrom : hist[0:n * B])
  for (long r = 0; r < n; r++) {
    const float *xr = x + r * C;
#pragma omp parallel for
    for (int b = 0; b < B; b++) {
      int cnt = 0;
      for (int j = 0; j < C; j++) cnt += (int)(xr[j] * B) == b;
      hist[r * B + b] = cnt;
    }
  }
}

static void row_moments(long n, const float *x, double *mean, double *var) {
#pragma omp target teams distribute parallel for map(to : x[0:n * C]) \
    map(tofrom : mean[0:n], var[0:n])
  for (long r = 0; r < n; r++) {
    const float *xr = x + r * C;
    double s = 0.0, q = 0.0;
#pragma omp parallel for simd reduction(+ : s, q)
    for (int j = 0; j < C; j++) {
      const double v = xr[j];
      s += v;
      q += v * v;
    }
    mean[r] = s / C;
    var[r] = q / C - (s / C) * (s / C);
  }
}

static void row_hist_atm(long n, const float *x, int *hist) {
#pragma omp target teams distribute parallel for map(to : x[0:n * C]) \
    map(tofrom : hist[0:n * B])
  for (long r = 0; r < n; r++) {
    const float *xr = x + r * C;
    int *h = hist + r * B;
    for (int b = 0; b < B; b++) h[b] = 0;
#pragma omp parallel for
    for (int j = 0; j < C; j++) {
      const int b = (int)(xr[j] * B);
#pragma omp atomic update
      h[b] += 1;
    }
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "nest_rowhist", 65536);
  const long n = a.n;
  float *x = malloc(sizeof(float) * n * C);
  int *h1 = calloc((size_t)n * B, sizeof(int)), *h2 = calloc((size_t)n * B, sizeof(int));
  double *mv = calloc(2 * (size_t)n, sizeof(double)), *mean = mv, *var = mv + n;
  unsigned long st = 8;
  for (long p = 0; p < n * C; p++) {
    /* row-dependent skew so rows differ: u^(1 + r mod 3) */
    const double u = gs_rand(&st);
    const long r = p / C;
    const float f = (float)(r % 3 == 0 ? u : r % 3 == 1 ? u * u : u * u * u);
    x[p] = f < 1.0f ? f : 0.99999994f; /* (float) may round up to 1 */
  }

#pragma omp target data map(to : x[0:n * C]) \
    map(tofrom : h1[0:n * B], h2[0:n * B], mean[0:n], var[0:n])
  {
    GS_TIME(a, "row_hist", { row_hist(n, x, h1); });
    GS_TIME(a, "row_moments", { row_moments(n, x, mean, var); });
    GS_TIME(a, "row_hist_atm", { row_hist_atm(n, x, h2); });
  }

  for (long r = 0; r < n; r++) {
    int want[B] = {0};
    for (int j = 0; j < C; j++) want[(int)(x[r * C + j] * B)]++;
    for (int b = 0; b < B; b++)
      if (h1[r * B + b] != want[b] || h2[r * B + b] != want[b]) {
        printf("gridsel-bench: prog=%s n=%ld check=FAIL row %ld bin %d: hist %d, "
               "atomic hist %d, want %d\n", a.prog, a.n, r, b, h1[r * B + b],
               h2[r * B + b], want[b]);
        return 1;
      }
  }
  double *ref = malloc(sizeof(double) * 2 * n);
  for (long r = 0; r < n; r++) {
    double s = 0.0, q = 0.0;
    for (int j = 0; j < C; j++) s += x[r * C + j], q += (double)x[r * C + j] * x[r * C + j];
    ref[r] = s / C;
    ref[n + r] = q / C - (s / C) * (s / C);
  }
  gs_check(&a, mv, ref, 2 * n, 1e-9);
  free(x); free(h1); free(h2); free(mv); free(ref);
  return 0;
}
