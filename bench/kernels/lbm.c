/* lbm: one D2Q9 lattice-Boltzmann step (BGK collide, then push-stream) on an
 * N x N periodic lattice, from f_in to f_out (structure of arrays: f[q][y][x]).
 * Each cell computes density and velocity from its 9 populations, relaxes each
 * toward the equilibrium, and writes population q to the neighbour at
 * (x+cx[q], y+cy[q]) (periodic). Streaming is a bijection, so every f_out entry
 * is written exactly once per step and the step is a pure function of f_in.
 * Memory: 18 * N^2 doubles. Loop class: memory-bound 2-D cell update with
 * scattered (but coalesced per q) writes, collapse(2). */
#include "common.h"

#define Q 9
static const double W[Q] = {4.0 / 9, 1.0 / 9, 1.0 / 9, 1.0 / 9, 1.0 / 9,
                            1.0 / 36, 1.0 / 36, 1.0 / 36, 1.0 / 36};

/* The per-cell update, shared by the device kernel and the CPU reference. */
#pragma omp declare target
static inline void lbm_cell(long n, long x, long y, const double *fin,
                            double *fout, double omega) {
  const int cx[Q] = {0, 1, 0, -1, 0, 1, -1, -1, 1};
  const int cy[Q] = {0, 0, 1, 0, -1, 1, 1, -1, -1};
  const double w[Q] = {4.0 / 9, 1.0 / 9, 1.0 / 9, 1.0 / 9, 1.0 / 9,
                       1.0 / 36, 1.0 / 36, 1.0 / 36, 1.0 / 36};
  const long cells = n * n, c = y * n + x;
  double f[Q], rho = 0.0, ux = 0.0, uy = 0.0;
  for (int q = 0; q < Q; q++) {
    f[q] = fin[q * cells + c];
    rho += f[q];
    ux += cx[q] * f[q];
    uy += cy[q] * f[q];
  }
  ux /= rho;
  uy /= rho;
  const double usq = 1.5 * (ux * ux + uy * uy);
  for (int q = 0; q < Q; q++) {
    double cu = 3.0 * (cx[q] * ux + cy[q] * uy);
    double feq = w[q] * rho * (1.0 + cu + 0.5 * cu * cu - usq);
    long xn = x + cx[q], yn = y + cy[q];
    xn = xn < 0 ? n - 1 : (xn >= n ? 0 : xn);
    yn = yn < 0 ? n - 1 : (yn >= n ? 0 : yn);
    fout[q * cells + yn * n + xn] = f[q] - omega * (f[q] - feq);
  }
}
#pragma omp end declare target

static void lbm_step(long n, const double *fin, double *fout, double omega) {
  const long total = Q * n * n;
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : fin[0:total]) map(tofrom : fout[0:total])
  for (long y = 0; y < n; y++)
    for (long x = 0; x < n; x++) lbm_cell(n, x, y, fin, fout, omega);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "lbm", 2048);
  const long n = a.n, cells = n * n, total = Q * cells;
  const double omega = 1.0 / 0.6;
  double *fin = malloc(sizeof(double) * total);
  double *fout = calloc((size_t)total, sizeof(double));
  double *ref = malloc(sizeof(double) * total);
  unsigned long s = 777;
  /* Near-equilibrium start: weights times a perturbed density. */
  for (long c = 0; c < cells; c++) {
    double rho = 1.0 + 0.05 * (gs_rand(&s) - 0.5);
    for (int q = 0; q < Q; q++)
      fin[q * cells + c] = W[q] * rho * (1.0 + 0.02 * (gs_rand(&s) - 0.5));
  }

#pragma omp target data map(to : fin[0:total]) map(tofrom : fout[0:total])
  {
    GS_TIME(a, "lbm_collide_stream", { lbm_step(n, fin, fout, omega); });
  }

  for (long y = 0; y < n; y++)
    for (long x = 0; x < n; x++) lbm_cell(n, x, y, fin, ref, omega);
  gs_check(&a, fout, ref, total, 1e-12);
  free(fin); free(fout); free(ref);
  return 0;
}
