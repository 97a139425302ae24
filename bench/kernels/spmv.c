/* spmv: y = A*x for an N x N sparse matrix in CSR form. Row i holds the band
 * i-2..i+2 (clipped at the edges) plus 0..11 extra entries at pseudo-random
 * columns, so row lengths vary between 3 and 16 (about 10 on average). The
 * structure and values come from a fixed-seed generator. One row per loop
 * iteration. Loop class: irregular, memory-bound, indirect (gather) accesses.
 * N is the number of rows. */
#include "common.h"

static void spmv_csr(long n, long nnz, const long *rp, const int *ci,
                     const double *va, const double *x, double *y) {
#pragma omp target teams distribute parallel for \
    map(to : rp[0:n + 1], ci[0:nnz], va[0:nnz], x[0:n]) map(tofrom : y[0:n])
  for (long i = 0; i < n; i++) {
    double s = 0.0;
    for (long e = rp[i]; e < rp[i + 1]; e++) s += va[e] * x[ci[e]];
    y[i] = s;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "spmv", 4194304);
  const long n = a.n;
  long *rp = malloc(sizeof(long) * (n + 1));
  unsigned long s = 2024;
  /* first pass: row lengths */
  rp[0] = 0;
  for (long i = 0; i < n; i++) {
    long lo = i - 2 < 0 ? 0 : i - 2, hi = i + 2 >= n ? n - 1 : i + 2;
    long extra = (long)(gs_rand(&s) * 12.0);
    rp[i + 1] = rp[i] + (hi - lo + 1) + extra;
  }
  const long nnz = rp[n];
  int *ci = malloc(sizeof(int) * nnz);
  double *va = malloc(sizeof(double) * nnz);
  double *x = malloc(sizeof(double) * n), *y = calloc(n, sizeof(double));
  double *ref = malloc(sizeof(double) * n);
  s = 99;
  for (long i = 0; i < n; i++) {
    long lo = i - 2 < 0 ? 0 : i - 2, hi = i + 2 >= n ? n - 1 : i + 2;
    long e = rp[i];
    for (long j = lo; j <= hi; j++) {
      ci[e] = (int)j;
      va[e++] = j == i ? 4.0 : -0.5;
    }
    for (; e < rp[i + 1]; e++) {
      ci[e] = (int)(gs_rand(&s) * (double)n);
      va[e] = gs_rand(&s) - 0.5;
    }
  }
  for (long i = 0; i < n; i++) x[i] = gs_rand(&s);

#pragma omp target data map(to : rp[0:n + 1], ci[0:nnz], va[0:nnz], x[0:n]) \
    map(tofrom : y[0:n])
  {
    GS_TIME(a, "spmv_csr", { spmv_csr(n, nnz, rp, ci, va, x, y); });
  }

  for (long i = 0; i < n; i++) {
    double t = 0.0;
    for (long e = rp[i]; e < rp[i + 1]; e++) t += va[e] * x[ci[e]];
    ref[i] = t;
  }
  gs_check(&a, y, ref, n, 1e-12);
  free(rp); free(ci); free(va); free(x); free(y); free(ref);
  return 0;
}
