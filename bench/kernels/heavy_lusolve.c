/* heavy_lusolve: few, very heavy iterations, each a sequence of small dense
 * solves held in per-thread arrays, as per-cell implicit solvers (stiff
 * chemistry, constitutive updates) do: iteration i solves K systems
 * A_ik x = b of order M = 24 (A in a double[24][24] local array: 4.6 KB of
 * stack, reached with data-dependent row indices), each by Gaussian
 * elimination with partial pivoting, and accumulates w . x_ik.
 *   lu_solve: out[i] = sum_k w . x_ik, k < K
 * A_ik = P_ik (R_ik + 10 I) with R_ik's entries hashed from (i, k, row,
 * column) into [-1, 1) and P_ik a hashed row permutation: the large entries
 * sit off the diagonal, so partial pivoting swaps rows at almost every step,
 * and the condition number stays small (||R||_2 ~ 2 sqrt(24/3) = 5.7, so
 * cond(A) <~ (10 + 5.7) / (10 - 5.7) ~ 4 and no pivot choice is close).
 * N (the trip count, 512-4096) also sets K = N^2 / 32768 (8 at
 * 512, 512 at 4096), so a launch grows as N^3 / 32768 solves: ~2 ms at the
 * smallest size (sweepable), ~0.1-0.2 s at the largest (estimated: ~35 K
 * instructions per solve, 4.6 K of them multiply-adds on operands in local
 * memory, at 0.3-0.5 instructions per cycle for one warp per scheduler; 4
 * iterations per thread under LLVM's grid).
 * Checked to 1e-9 relative against the same per-iteration code on the CPU
 * (declare target): both pick the same pivots (the permuted diagonal entry,
 * ~10 against at most a few) and eliminate in the same order; FMA
 * contraction moves each result by ~cond(A) M u ~ 1e-14.
 * Memory: N doubles. Pattern: few heavy iterations, large per-thread stack,
 * a per-iteration small dense solve. */
#include "common.h"

#define M 24

#pragma omp declare target
static inline unsigned long lu_hash(unsigned long i, unsigned long k, unsigned long x) {
  unsigned long h = (i * 0x9E3779B97F4A7C15UL) ^ (k * 0xC2B2AE3D27D4EB4FUL) ^
                    (x * 0x165667B19E3779F9UL);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9UL;
  return h ^ (h >> 32);
}
/* Entry (r, c) of A_ik = P (R + 10 I): R uniform in [-1, 1) from the hash,
 * P the row permutation r -> (a r + b) mod M with a odd and not a multiple
 * of 3 (so coprime to 24), a and b hashed from (i, k). */
static inline double lu_entry(unsigned long i, unsigned long k, int r, int c) {
  static const int coprime[8] = {1, 5, 7, 11, 13, 17, 19, 23};
  const unsigned long ab = lu_hash(i, k, M * M);
  const int pr = (int)((coprime[ab & 7] * r + (long)((ab >> 3) % M)) % M);
  const unsigned long h = lu_hash(i, k, (unsigned long)(pr * M + c));
  return (double)(h >> 11) * (2.0 / 9007199254740992.0) - 1.0 + (pr == c ? 10.0 : 0.0);
}
static inline double lu_iteration(long i, int nk) {
  double acc = 0.0;
  for (int k = 0; k < nk; k++) {
    double A[M][M], b[M];
    for (int r = 0; r < M; r++) {
      for (int c = 0; c < M; c++) A[r][c] = lu_entry((unsigned long)i, (unsigned long)k, r, c);
      b[r] = 1.0;
    }
    for (int p = 0; p < M; p++) {
      int piv = p;
      double best = fabs(A[p][p]);
      for (int r = p + 1; r < M; r++)
        if (fabs(A[r][p]) > best) best = fabs(A[r][p]), piv = r;
      if (piv != p) {
        for (int c = p; c < M; c++) {
          const double t = A[p][c];
          A[p][c] = A[piv][c];
          A[piv][c] = t;
        }
        const double t = b[p];
        b[p] = b[piv];
        b[piv] = t;
      }
      const double inv = 1.0 / A[p][p];
      for (int r = p + 1; r < M; r++) {
        const double f = A[r][p] * inv;
        for (int c = p + 1; c < M; c++) A[r][c] -= f * A[p][c];
        b[r] -= f * b[p];
      }
    }
    for (int r = M - 1; r >= 0; r--) {
      double s = b[r];
      for (int c = r + 1; c < M; c++) s -= A[r][c] * b[c];
      b[r] = s / A[r][r];
    }
    for (int r = 0; r < M; r++) acc += (r + 1.0) / M * b[r];
  }
  return acc;
}
#pragma omp end declare target

static void lu_solve(long n, int nk, double *out) {
#pragma omp target teams distribute parallel for map(tofrom : out[0:n])
  for (long i = 0; i < n; i++) out[i] = lu_iteration(i, nk);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "heavy_lusolve", 2048);
  const long n = a.n;
  const int nk = n * n / 32768 < 1 ? 1 : (int)(n * n / 32768);
  double *out = calloc((size_t)n, sizeof(double)), *ref = malloc(sizeof(double) * n);

#pragma omp target data map(tofrom : out[0:n])
  {
    GS_TIME(a, "lu_solve", { lu_solve(n, nk, out); });
  }

#pragma omp parallel for schedule(dynamic)
  for (long i = 0; i < n; i++) ref[i] = lu_iteration(i, nk);
  printf("gridsel-bench: prog=%s n=%ld solves_per_iteration=%d\n", a.prog, a.n, nk);
  gs_check(&a, out, ref, n, 1e-9);
  free(out); free(ref);
  return 0;
}
