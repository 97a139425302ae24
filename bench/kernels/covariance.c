/* covariance: sample covariance matrix of a data matrix D with N rows
 * (observations) and N columns (variables).
 * Three kernels:
 *   "cov_mean"   mean[j]   = sum_i D[i][j] / N                  (trip count N)
 *   "cov_center" X[i][j]   = D[i][j] - mean[j]        (collapse(2), N x N)
 *   "cov_cov"    cov[i][j] = sum_k X[k][i] X[k][j] / (N-1)  (collapse(2))
 * Every kernel rewrites its whole output from its inputs: idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "covariance: out of memory\n"); exit(2); }
  return p;
}

static void kernel_mean(long n, const double *restrict D,
                        double *restrict mean) {
#pragma omp target teams distribute parallel for
  for (long j = 0; j < n; j++) {
    double s = 0.0;
    for (long i = 0; i < n; i++) s += D[i * n + j];
    mean[j] = s / (double)n;
  }
}

static void kernel_center(long n, const double *restrict D,
                          const double *restrict mean, double *restrict X) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) X[i * n + j] = D[i * n + j] - mean[j];
}

static void kernel_cov(long n, const double *restrict X,
                       double *restrict cov) {
  double div = n > 1 ? (double)(n - 1) : 1.0;
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      double s = 0.0;
      for (long k = 0; k < n; k++) s += X[k * n + i] * X[k * n + j];
      cov[i * n + j] = s / div;
    }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "covariance", 1024);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  size_t total = (size_t)n + 2 * nn;
  double *D = xalloc(nn);
  double *out = xalloc(total), *ref = xalloc(total);
  double *mean = out, *X = out + n, *cov = X + nn;
  unsigned long st = 111;
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      D[i * n + j] = gs_rand(&st) + 0.5 * (double)((i * (j % 5 + 2)) % 13) / 13.0;

#pragma omp target data map(to: D[0:nn]) map(from: out[0:total])
  {
    GS_TIME(a, "cov_mean", kernel_mean(n, D, mean));
    GS_TIME(a, "cov_center", kernel_center(n, D, mean, X));
    GS_TIME(a, "cov_cov", kernel_cov(n, X, cov));
  }

  /* Reference, same summation order per element. */
  double *rmean = ref, *rX = ref + n, *rcov = rX + nn;
  double div = n > 1 ? (double)(n - 1) : 1.0;
  for (long j = 0; j < n; j++) rmean[j] = 0.0;
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) rmean[j] += D[i * n + j];
  for (long j = 0; j < n; j++) rmean[j] /= (double)n;
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) rX[i * n + j] = D[i * n + j] - rmean[j];
#pragma omp parallel for
  for (long i = 0; i < n; i++) {
    double *c = rcov + i * n;
    for (long j = 0; j < n; j++) c[j] = 0.0;
    for (long k = 0; k < n; k++) {
      double xi = rX[k * n + i];
      const double *xk = rX + k * n;
      for (long j = 0; j < n; j++) c[j] += xi * xk[j];
    }
    for (long j = 0; j < n; j++) c[j] /= div;
  }
  gs_check(&a, out, ref, (long)total, 1e-9);
  free(D); free(out); free(ref);
  return 0;
}
