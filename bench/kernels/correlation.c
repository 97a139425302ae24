/* correlation: Pearson correlation matrix of a data matrix D with N rows
 * (observations) and N columns (variables).
 * Four kernels:
 *   "corr_mean"      mean[j]   = sum_i D[i][j] / N              (trip count N)
 *   "corr_stddev"    std[j]    = sqrt(sum_i (D[i][j]-mean[j])^2 / N),
 *                    replaced by 1 when tiny                     (trip count N)
 *   "corr_normalize" X[i][j]   = (D[i][j]-mean[j]) / (sqrt(N) std[j])
 *                                                    (collapse(2), N x N)
 *   "corr_corr"      corr[i][j] = sum_k X[k][i] X[k][j]   (collapse(2), N x N)
 * Every kernel rewrites its whole output from its inputs: idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "correlation: out of memory\n"); exit(2); }
  return p;
}

#define CORR_EPS 1e-10

static void kernel_mean(long n, const double *restrict D,
                        double *restrict mean) {
#pragma omp target teams distribute parallel for
  for (long j = 0; j < n; j++) {
    double s = 0.0;
    for (long i = 0; i < n; i++) s += D[i * n + j];
    mean[j] = s / (double)n;
  }
}

static void kernel_stddev(long n, const double *restrict D,
                          const double *restrict mean, double *restrict sd) {
#pragma omp target teams distribute parallel for
  for (long j = 0; j < n; j++) {
    double s = 0.0, m = mean[j];
    for (long i = 0; i < n; i++) {
      double d = D[i * n + j] - m;
      s += d * d;
    }
    double v = sqrt(s / (double)n);
    sd[j] = v <= CORR_EPS ? 1.0 : v;
  }
}

static void kernel_normalize(long n, const double *restrict D,
                             const double *restrict mean,
                             const double *restrict sd, double *restrict X) {
  double sqn = sqrt((double)n);
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      X[i * n + j] = (D[i * n + j] - mean[j]) / (sqn * sd[j]);
}

static void kernel_corr(long n, const double *restrict X,
                        double *restrict corr) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      double s = 0.0;
      for (long k = 0; k < n; k++) s += X[k * n + i] * X[k * n + j];
      corr[i * n + j] = s;
    }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "correlation", 1024);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  size_t total = 2 * (size_t)n + 2 * nn;
  double *D = xalloc(nn);
  double *out = xalloc(total), *ref = xalloc(total);
  double *mean = out, *sd = out + n, *X = out + 2 * n, *corr = X + nn;
  unsigned long st = 101;
  /* Noise plus a few structured components so variables are correlated. */
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      D[i * n + j] = gs_rand(&st) + 0.5 * (double)((i * (j % 7 + 1)) % 11) / 11.0;

#pragma omp target data map(to: D[0:nn]) map(from: out[0:total])
  {
    GS_TIME(a, "corr_mean", kernel_mean(n, D, mean));
    GS_TIME(a, "corr_stddev", kernel_stddev(n, D, mean, sd));
    GS_TIME(a, "corr_normalize", kernel_normalize(n, D, mean, sd, X));
    GS_TIME(a, "corr_corr", kernel_corr(n, X, corr));
  }

  /* Reference, same summation order per element. */
  double *rmean = ref, *rsd = ref + n, *rX = ref + 2 * n, *rcorr = rX + nn;
  for (long j = 0; j < n; j++) rmean[j] = 0.0;
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) rmean[j] += D[i * n + j];
  for (long j = 0; j < n; j++) rmean[j] /= (double)n;
  for (long j = 0; j < n; j++) rsd[j] = 0.0;
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      double d = D[i * n + j] - rmean[j];
      rsd[j] += d * d;
    }
  for (long j = 0; j < n; j++) {
    double v = sqrt(rsd[j] / (double)n);
    rsd[j] = v <= CORR_EPS ? 1.0 : v;
  }
  double sqn = sqrt((double)n);
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      rX[i * n + j] = (D[i * n + j] - rmean[j]) / (sqn * rsd[j]);
#pragma omp parallel for
  for (long i = 0; i < n; i++) {
    double *c = rcorr + i * n;
    for (long j = 0; j < n; j++) c[j] = 0.0;
    for (long k = 0; k < n; k++) {
      double xi = rX[k * n + i];
      const double *xk = rX + k * n;
      for (long j = 0; j < n; j++) c[j] += xi * xk[j];
    }
  }
  gs_check(&a, out, ref, (long)total, 1e-9);
  free(D); free(out); free(ref);
  return 0;
}
