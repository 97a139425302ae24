/* probe_regs: a register-heavy body. Each iteration builds a 16 x 16 matrix
 * M in locals from its own 16-vector v and a shared 16 x 16 table W
 * (M[r][c] = v[r] * W[r][c] + v[c]), forms P = M * M with every loop fully
 * unrolled, and reduces P against v: out[i] = sum_rc P[r][c] * v[(r+c)%16].
 * M (256 doubles) stays live through the whole 4096-FMA product, far beyond
 * the 255 registers a thread can hold, so the kernel is limited by registers
 * and spills. Loop class: high register pressure, compute-bound.
 * N is the trip count (memory: 16 N doubles). */
#include "common.h"

#define D 16

#pragma omp declare target
static inline double mat16(const double *v_in, const double *w) {
  double v[D], m[D][D], out = 0.0;
#pragma clang loop unroll(full)
  for (int r = 0; r < D; r++) v[r] = v_in[r];
#pragma clang loop unroll(full)
  for (int r = 0; r < D; r++)
#pragma clang loop unroll(full)
    for (int c = 0; c < D; c++) m[r][c] = v[r] * w[r * D + c] + v[c];
#pragma clang loop unroll(full)
  for (int r = 0; r < D; r++)
#pragma clang loop unroll(full)
    for (int c = 0; c < D; c++) {
      double p = 0.0;
#pragma clang loop unroll(full)
      for (int k = 0; k < D; k++) p += m[r][k] * m[k][c];
      out += p * v[(r + c) % D];
    }
  return out;
}
#pragma omp end declare target

static void regs_mat16(long n, const double *vin, const double *w,
                       double *out) {
#pragma omp target teams distribute parallel for \
    map(to : vin[0:n * D], w[0:D * D]) map(tofrom : out[0:n])
  for (long i = 0; i < n; i++) out[i] = mat16(&vin[i * D], w);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "probe_regs", 131072);
  const long n = a.n;
  double *vin = malloc(sizeof(double) * n * D), w[D * D];
  double *out = calloc(n, sizeof(double)), *ref = malloc(sizeof(double) * n);
  unsigned long s = 1616;
  for (long i = 0; i < n * D; i++) vin[i] = gs_rand(&s) - 0.5;
  for (int k = 0; k < D * D; k++) w[k] = gs_rand(&s) - 0.5;

#pragma omp target data map(to : vin[0:n * D], w[0:D * D]) map(tofrom : out[0:n])
  {
    GS_TIME(a, "regs_mat16", { regs_mat16(n, vin, w, out); });
  }

  for (long i = 0; i < n; i++) ref[i] = mat16(&vin[i * D], w);
  gs_check(&a, out, ref, n, 1e-12);
  free(vin); free(out); free(ref);
  return 0;
}
