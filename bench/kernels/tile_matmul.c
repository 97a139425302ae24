/* tile_matmul: a tiled matrix multiply C = A B with one output tile per
 * iteration (collapse(2) over tile rows and columns) and a tile loop inside:
 * for each k, the tile's T x T accumulator (a per-thread array) gets
 * A[i][k] B[k][j]; so iterations are few thousand and each does T^2 N
 * multiply-adds out of a local array, the way codes blocked for CPU caches
 * are offloaded unchanged. T = 16: (N/16)^2 iterations.
 *   mm_tile16:     double (2 KB accumulator)
 *   mm_tile16_f32: float (1 KB accumulator)
 * Each element is summed over k in ascending order on the device and on the
 * CPU (double reference from the same inputs): mm_tile16 is checked to 1e-12
 * relative (N products of O(1) values per element; only FMA contraction
 * differs: ~N u = 2.3e-13 at N = 2048), mm_tile16_f32 to 1e-3 of S = sum
 * |a b| (a float sum of N terms is off by at most N u S = 1.2e-4 S at
 * N = 2048).
 * N is the edge, a multiple of 16 (512, 1024, 2048: 1024 to 16384
 * iterations); memory 6 N^2 doubles and 3 N^2 floats. Pattern: small tiled
 * kernel, a tile loop per iteration. */
#include "common.h"

static void mm_tile16(long n, const double *A, const double *B, double *C) {
  const long nb = n / 16, t = n * n;
#pragma omp target teams distribute parallel for collapse(2) map(to : A[0:t], B[0:t]) \
    map(tofrom : C[0:t])
  for (long bi = 0; bi < nb; bi++)
    for (long bj = 0; bj < nb; bj++) {
      double acc[16][16];
      for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) acc[i][j] = 0.0;
      for (long k = 0; k < n; k++)
        for (int i = 0; i < 16; i++) {
          const double aik = A[(bi * 16 + i) * n + k];
          for (int j = 0; j < 16; j++) acc[i][j] += aik * B[k * n + bj * 16 + j];
        }
      for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) C[(bi * 16 + i) * n + bj * 16 + j] = acc[i][j];
    }
}

static void mm_tile16_f32(long n, const float *A, const float *B, float *C) {
  const long nb = n / 16, t = n * n;
#pragma omp target teams distribute parallel for collapse(2) map(to : A[0:t], B[0:t]) \
    map(tofrom : C[0:t])
  for (long bi = 0; bi < nb; bi++)
    for (long bj = 0; bj < nb; bj++) {
      float acc[16][16];
      for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) acc[i][j] = 0.0f;
      for (long k = 0; k < n; k++)
        for (int i = 0; i < 16; i++) {
          const float aik = A[(bi * 16 + i) * n + k];
          for (int j = 0; j < 16; j++) acc[i][j] += aik * B[k * n + bj * 16 + j];
        }
      for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) C[(bi * 16 + i) * n + bj * 16 + j] = acc[i][j];
    }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "tile_matmul", 1024);
  const long n = a.n < 16 ? 16 : a.n / 16 * 16, t = n * n;
  double *A = malloc(sizeof(double) * t), *B = malloc(sizeof(double) * t);
  double *C = calloc((size_t)t, sizeof(double));
  float *fA = malloc(sizeof(float) * t), *fB = malloc(sizeof(float) * t);
  float *fC = calloc((size_t)t, sizeof(float));
  unsigned long st = 37;
  for (long p = 0; p < t; p++) {
    A[p] = gs_rand(&st) - 0.5, B[p] = gs_rand(&st) - 0.5;
    fA[p] = (float)A[p], fB[p] = (float)B[p];
  }

#pragma omp target data map(to : A[0:t], B[0:t], fA[0:t], fB[0:t]) map(tofrom : C[0:t], fC[0:t])
  {
    GS_TIME(a, "mm_tile16", { mm_tile16(n, A, B, C); });
    GS_TIME(a, "mm_tile16_f32", { mm_tile16_f32(n, fA, fB, fC); });
  }

  /* double references (same k order) and, for the float kernel, |a b| sums */
  double *ref = calloc((size_t)t, sizeof(double)), *fr = calloc((size_t)t, sizeof(double));
  double *fm = calloc((size_t)t, sizeof(double));
#pragma omp parallel for
  for (long i = 0; i < n; i++)
    for (long k = 0; k < n; k++) {
      const double aik = A[i * n + k], faik = fA[i * n + k];
      for (long j = 0; j < n; j++) {
        ref[i * n + j] += aik * B[k * n + j];
        const double p = faik * fB[k * n + j];
        fr[i * n + j] += p;
        fm[i * n + j] += fabs(p);
      }
    }
  for (long p = 0; p < t; p++) {
    if (!(fabs(fC[p] - fr[p]) <= 1e-3 * fm[p])) {
      printf("gridsel-bench: prog=%s n=%ld check=FAIL mm_tile16_f32 at %ld: got %.9g want %.9g\n",
             a.prog, a.n, p, fC[p], fr[p]);
      return 1;
    }
  }
  gs_check(&a, C, ref, t, 1e-12);
  free(A); free(B); free(C); free(fA); free(fB); free(fC); free(ref); free(fr); free(fm);
  return 0;
}
