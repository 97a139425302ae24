/* gramschmidt: QR factorisation A = Q R of an N x N matrix by modified
 * Gram-Schmidt. Per repetition (one GS_TIME label, "gramschmidt"):
 *   an init kernel copies the input A0 into the work matrix W and clears R
 *   (collapse(2)), so every repetition starts from the same input;
 *   then for k = 0 .. N-1:
 *     norm kernel:   nrm = sum_i W[i][k]^2      (reduction, trip count N)
 *     scale kernel:  Q[i][k] = W[i][k] / sqrt(nrm), R[k][k] = sqrt(nrm)
 *                                                (trip count N)
 *     update kernel: for j in k+1 .. N-1 (trip count N-k-1, shrinking):
 *                      R[k][j] = sum_i Q[i][k] W[i][j]
 *                      W[i][j] -= Q[i][k] R[k][j]   for all i
 * That is 3N+1 launches per repetition. The norm reduction's summation order
 * depends on the launch grid, so results match the CPU reference only up to
 * rounding; A0 is made diagonally dominant to keep that rounding benign. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "gramschmidt: out of memory\n"); exit(2); }
  return p;
}

static void factorise(long n, const double *restrict A0, double *restrict W,
                      double *restrict Q, double *restrict R) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      W[i * n + j] = A0[i * n + j];
      R[i * n + j] = 0.0;
    }

  for (long k = 0; k < n; k++) {
    double nrm = 0.0;
#pragma omp target teams distribute parallel for reduction(+ : nrm)
    for (long i = 0; i < n; i++) nrm += W[i * n + k] * W[i * n + k];
    double rkk = sqrt(nrm);

#pragma omp target teams distribute parallel for
    for (long i = 0; i < n; i++) {
      Q[i * n + k] = W[i * n + k] / rkk;
      if (i == 0) R[k * n + k] = rkk;
    }

#pragma omp target teams distribute parallel for
    for (long j = k + 1; j < n; j++) {
      double s = 0.0;
      for (long i = 0; i < n; i++) s += Q[i * n + k] * W[i * n + j];
      R[k * n + j] = s;
      for (long i = 0; i < n; i++) W[i * n + j] -= Q[i * n + k] * s;
    }
  }
}

/* Same algorithm on the host, summations in ascending index order. */
static void reference(long n, const double *A0, double *W, double *Q,
                      double *R) {
  memcpy(W, A0, sizeof(double) * (size_t)n * (size_t)n);
  memset(R, 0, sizeof(double) * (size_t)n * (size_t)n);
  double *s = xalloc((size_t)n);
  for (long k = 0; k < n; k++) {
    double nrm = 0.0;
    for (long i = 0; i < n; i++) nrm += W[i * n + k] * W[i * n + k];
    double rkk = sqrt(nrm);
    R[k * n + k] = rkk;
    for (long i = 0; i < n; i++) Q[i * n + k] = W[i * n + k] / rkk;
    /* Row-wise loops over j for the cache; per-j order is still i ascending. */
    for (long j = k + 1; j < n; j++) s[j] = 0.0;
    for (long i = 0; i < n; i++) {
      double q = Q[i * n + k];
      for (long j = k + 1; j < n; j++) s[j] += q * W[i * n + j];
    }
    for (long j = k + 1; j < n; j++) R[k * n + j] = s[j];
#pragma omp parallel for if (n >= 256)
    for (long i = 0; i < n; i++) {
      double q = Q[i * n + k];
      for (long j = k + 1; j < n; j++) W[i * n + j] -= q * s[j];
    }
  }
  free(s);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "gramschmidt", 512);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *A0 = xalloc(nn), *W = xalloc(nn);
  double *out = xalloc(2 * nn), *ref = xalloc(2 * nn);
  double *Q = out, *R = out + nn;
  unsigned long st = 121;
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      A0[i * n + j] = gs_rand(&st) - 0.5 + (i == j ? 0.5 * (double)n + 1.0 : 0.0);

#pragma omp target data map(to: A0[0:nn]) map(alloc: W[0:nn]) \
    map(from: out[0:2 * nn])
  {
    GS_TIME(a, "gramschmidt", factorise(n, A0, W, Q, R));
  }

  reference(n, A0, W, ref, ref + nn);
  gs_check(&a, out, ref, (long)(2 * nn), 1e-8);
  free(A0); free(W); free(out); free(ref);
  return 0;
}
