/* gspmd_polyvec: Polybench's gesummv and atax written as their OpenMP ports
 * usually are: a `target teams` region that reads the kernel's scalars at
 * team level and holds an inner `distribute parallel for` over the rows or
 * columns (int indices, a sequential inner loop per iteration). The region
 * is not a tightly nested combined construct, so clang emits it in generic
 * mode and OpenMPOpt makes it Generic-SPMD: the host does not know the loop
 * and launches with trip count 0.
 *   gsv_gesummv: y = alpha A x + beta B x, one row per iteration (two
 *                row-major matrices walked row by row: uncoalesced)
 *   gsv_atax1:   t = A x, one row per iteration
 *   gsv_atax2:   y = A^T t, one column per iteration (coalesced across
 *                threads, the inner loop strides by N)
 * Checked to 1e-10 relative (N-term double dot products of O(1) values,
 * summed in the same order on the CPU; FMA contraction only).
 * N is the matrix edge (2048, 4096, 8192); memory 2 N^2 + 6 N doubles
 * (1 GB at N = 8192). Pattern: Generic-SPMD, trip count 0 at the launch. */
#include "common.h"

static void gsv_gesummv(int n, const double *coef, const double *A, const double *B,
                        const double *x, double *y) {
  const long nn = (long)n * n;
#pragma omp target teams map(to : coef[0:2], A[0:nn], B[0:nn], x[0:n]) map(tofrom : y[0:n])
  {
    const double alpha = coef[0], beta = coef[1];
#pragma omp distribute parallel for
    for (int i = 0; i < n; i++) {
      double ta = 0.0, tb = 0.0;
      for (int j = 0; j < n; j++) {
        ta += A[(long)i * n + j] * x[j];
        tb += B[(long)i * n + j] * x[j];
      }
      y[i] = alpha * ta + beta * tb;
    }
  }
}

static void gsv_atax1(int n, const double *coef, const double *A, const double *x,
                      double *t) {
  const long nn = (long)n * n;
#pragma omp target teams map(to : coef[0:2], A[0:nn], x[0:n]) map(tofrom : t[0:n])
  {
    const double one = coef[0] / coef[0];
#pragma omp distribute parallel for
    for (int i = 0; i < n; i++) {
      double s = 0.0;
      for (int j = 0; j < n; j++) s += A[(long)i * n + j] * x[j];
      t[i] = one * s;
    }
  }
}

static void gsv_atax2(int n, const double *coef, const double *A, const double *t,
                      double *y) {
  const long nn = (long)n * n;
#pragma omp target teams map(to : coef[0:2], A[0:nn], t[0:n]) map(tofrom : y[0:n])
  {
    const double one = coef[0] / coef[0];
#pragma omp distribute parallel for
    for (int j = 0; j < n; j++) {
      double s = 0.0;
      for (int i = 0; i < n; i++) s += A[(long)i * n + j] * t[i];
      y[j] = one * s;
    }
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "gspmd_polyvec", 4096);
  const int n = (int)a.n;
  const long nn = (long)n * n;
  double *A = malloc(sizeof(double) * nn), *B = malloc(sizeof(double) * nn);
  double coef[2] = {1.5, 1.2};
  double *x = malloc(sizeof(double) * n);
  double *out = calloc(3 * (size_t)n, sizeof(double)), *y = out, *t = out + n, *y2 = out + 2 * n;
  unsigned long st = 17;
  for (long p = 0; p < nn; p++) A[p] = gs_rand(&st) - 0.5, B[p] = gs_rand(&st) - 0.5;
  for (int i = 0; i < n; i++) x[i] = gs_rand(&st);

#pragma omp target data map(to : coef[0:2], A[0:nn], B[0:nn], x[0:n]) map(tofrom : out[0:3 * n])
  {
    GS_TIME(a, "gsv_gesummv", { gsv_gesummv(n, coef, A, B, x, y); });
    GS_TIME(a, "gsv_atax1", { gsv_atax1(n, coef, A, x, t); });
    GS_TIME(a, "gsv_atax2", { gsv_atax2(n, coef, A, t, y2); });
  }

  double *ref = calloc(3 * (size_t)n, sizeof(double));
#pragma omp parallel for
  for (int i = 0; i < n; i++) {
    double ta = 0.0, tb = 0.0;
    for (int j = 0; j < n; j++) ta += A[(long)i * n + j] * x[j], tb += B[(long)i * n + j] * x[j];
    ref[i] = 1.5 * ta + 1.2 * tb;
    ref[n + i] = ta;
  }
  /* atax2 from the device's t (checked above to 1e-10), in the same order */
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) ref[2 * n + j] += A[(long)i * n + j] * t[i];
  gs_check(&a, out, ref, 3 * n, 1e-10);
  free(A); free(B); free(x); free(out); free(ref);
  return 0;
}
