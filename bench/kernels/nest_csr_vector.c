/* nest_csr_vector: "vector CSR" sparse kernels as OpenMP ports write them:
 * `target teams distribute parallel for` over the N rows of a CSR matrix
 * (16 to 48 nonzeros per row, 32 on average; columns within +-4096 of the
 * diagonal), the body opening nested parallel regions over the row's
 * nonzeros (a variable, data-dependent inner trip count):
 *   csr_spmv_vec: y = A x; nested `parallel for simd reduction(+ : s)` over
 *                 the row's entries
 *   csr_rowscale: B = diag(1 / max_j |a_ij|) A (values only): a nested
 *                 `parallel for reduction(max : m)` (no simd) over the row,
 *                 then a nested `parallel for` writing the scaled values
 * Idempotent; y checked to 1e-12, scaled values exactly.
 * N is the row count; memory ~32 N (8 + 4 + 8) B + 3 N doubles (2.8 GB at
 * N = 4194304). Pattern: nested parallel for (simd + reduction, reduction,
 * plain) over a variable-length inner loop inside the combined construct. */
#include "common.h"

#define BANDW 4096

static void csr_spmv_vec(long n, long nnz, const long *rp, const int *ci,
                         const double *va, const double *x, double *y) {
#pragma omp target teams distribute parallel for \
    map(to : rp[0:n + 1], ci[0:nnz], va[0:nnz], x[0:n]) map(tofrom : y[0:n])
  for (long i = 0; i < n; i++) {
    double s = 0.0;
    const long b = rp[i], e = rp[i + 1];
#pragma omp parallel for simd reduction(+ : s)
    for (long k = b; k < e; k++) s += va[k] * x[ci[k]];
    y[i] = s;
  }
}

static void csr_rowscale(long n, long nnz, const long *rp, const double *va,
                         double *vb) {
#pragma omp target teams distribute parallel for \
    map(to : rp[0:n + 1], va[0:nnz]) map(tofrom : vb[0:nnz])
  for (long i = 0; i < n; i++) {
    double m = 0.0;
    const long b = rp[i], e = rp[i + 1];
#pragma omp parallel for reduction(max : m)
    for (long k = b; k < e; k++) m = fabs(va[k]) > m ? fabs(va[k]) : m;
    const double inv = m > 0.0 ? 1.0 / m : 0.0;
#pragma omp parallel for
    for (long k = b; k < e; k++) vb[k] = va[k] * inv;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "nest_csr_vector", 1048576);
  const long n = a.n;
  long *rp = malloc(sizeof(long) * (n + 1));
  unsigned long st = 4242;
  rp[0] = 0;
  for (long i = 0; i < n; i++) rp[i + 1] = rp[i] + 16 + (long)(33.0 * gs_rand(&st));
  const long nnz = rp[n];
  int *ci = malloc(sizeof(int) * nnz);
  double *va = malloc(sizeof(double) * nnz), *vb = calloc((size_t)nnz, sizeof(double));
  double *x = malloc(sizeof(double) * n), *y = calloc((size_t)n, sizeof(double));
  for (long i = 0; i < n; i++) {
    for (long k = rp[i]; k < rp[i + 1]; k++) {
      long j = i + (long)((2.0 * gs_rand(&st) - 1.0) * BANDW);
      j = j < 0 ? -j : j;
      j = j >= n ? 2 * (n - 1) - j : j;
      ci[k] = (int)(j < 0 ? 0 : j);
      va[k] = 2.0 * gs_rand(&st) - 1.0;
    }
    x[i] = gs_rand(&st);
  }

#pragma omp target data map(to : rp[0:n + 1], ci[0:nnz], va[0:nnz], x[0:n]) \
    map(tofrom : y[0:n], vb[0:nnz])
  {
    GS_TIME(a, "csr_spmv_vec", { csr_spmv_vec(n, nnz, rp, ci, va, x, y); });
    GS_TIME(a, "csr_rowscale", { csr_rowscale(n, nnz, rp, va, vb); });
  }

  for (long i = 0; i < n; i++) {
    double m = 0.0;
    for (long k = rp[i]; k < rp[i + 1]; k++) m = fabs(va[k]) > m ? fabs(va[k]) : m;
    const double inv = m > 0.0 ? 1.0 / m : 0.0;
    for (long k = rp[i]; k < rp[i + 1]; k++)
      if (vb[k] != va[k] * inv) {
        printf("gridsel-bench: prog=%s n=%ld check=FAIL scaled value %ld: %.17g want %.17g\n",
               a.prog, a.n, k, vb[k], va[k] * inv);
        return 1;
      }
  }
  double *ref = malloc(sizeof(double) * n);
  for (long i = 0; i < n; i++) {
    double s = 0.0;
    for (long k = rp[i]; k < rp[i + 1]; k++) s += va[k] * x[ci[k]];
    ref[i] = s;
  }
  gs_check(&a, y, ref, n, 1e-12);
  free(rp); free(ci); free(va); free(vb); free(x); free(y); free(ref);
  return 0;
}
