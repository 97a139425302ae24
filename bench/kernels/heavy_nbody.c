/* heavy_nbody: few, very heavy iterations: the field of M charged sources at
 * each of N targets, summed directly (an N-body-per-target scoring, written
 * here from the physics: a real-space Ewald-screened Coulomb potential and a
 * Plummer-softened field with a cut-off). Two `target teams distribute
 * parallel for` over the targets; each iteration walks every source, so
 * iterations are few (trip count N = 512-4096) and each is long:
 *   nb_potential: phi[i] = sum_j q_j erfc(alpha r) / r, for r < RCUT only
 *                 (a branch per pair; erfcf and a division per pair)
 *   nb_field:     E[i] = sum_j q_j (x_i - x_j) / (r^2 + eps^2)^(3/2), for
 *                 r < RCUT only (a square root and a division per pair,
 *                 3 components)
 * N sets the deck: N targets, M = 256 N sources (131 K at 512, 524 K at 2048),
 * so a launch costs 256 N^2 pair terms (1.1 G at 2048): ~1-2 ms of pairs per
 * target thread, 0.1-0.3 s per launch at 2048 on the H100 (estimated from
 * heavy_dock's 0.13-0.5 us per pair and thread), ~50 ms at 1024.
 * Float pair terms are summed in float over blocks of 256 sources, the block
 * sums in double (so a thread's rounding stays ~256 u of the block's terms).
 * Check: the CPU recomputes, in double from the same float inputs, every
 * STRIDE-th target (STRIDE = N / 128 rounded down, at least 1: a CPU
 * reference of every target would cost as much CPU time as the GPU's whole
 * launch in GPU time); |got - ref| <= 2e-4 S, S = the sum of |pair terms| of
 * the target (float erfcf, sqrtf ~ 4 ulp, 256 float additions per block).
 * Memory: 16 M bytes of sources at 2048. Pattern: few heavy iterations,
 * divergent pair loops. */
#include "common.h"

#define RCUT 0.35f
#define ALPHA 6.0f
#define EPS2 1e-4f
#define BLOCK 256

static void nb_potential(int nt, const float *t, int ns, const float *s, double *phi) {
  /* t: x y z per target; s: x y z q per source */
#pragma omp target teams distribute parallel for map(to : t[0:3 * nt], s[0:4 * ns]) \
    map(tofrom : phi[0:nt])
  for (int i = 0; i < nt; i++) {
    const float x = t[3 * i], y = t[3 * i + 1], z = t[3 * i + 2];
    double acc = 0.0;
    for (int b = 0; b < ns; b += BLOCK) {
      const int e = b + BLOCK < ns ? b + BLOCK : ns;
      float part = 0.0f;
      for (int j = b; j < e; j++) {
        const float dx = x - s[4 * j], dy = y - s[4 * j + 1], dz = z - s[4 * j + 2];
        const float r = sqrtf(dx * dx + dy * dy + dz * dz + EPS2);
        if (r < RCUT) part += s[4 * j + 3] * erfcf(ALPHA * r) / r;
      }
      acc += part;
    }
    phi[i] = acc;
  }
}

static void nb_field(int nt, const float *t, int ns, const float *s, double *ef) {
#pragma omp target teams distribute parallel for map(to : t[0:3 * nt], s[0:4 * ns]) \
    map(tofrom : ef[0:3 * nt])
  for (int i = 0; i < nt; i++) {
    const float x = t[3 * i], y = t[3 * i + 1], z = t[3 * i + 2];
    double ax = 0.0, ay = 0.0, az = 0.0;
    for (int b = 0; b < ns; b += BLOCK) {
      const int e = b + BLOCK < ns ? b + BLOCK : ns;
      float px = 0.0f, py = 0.0f, pz = 0.0f;
      for (int j = b; j < e; j++) {
        const float dx = x - s[4 * j], dy = y - s[4 * j + 1], dz = z - s[4 * j + 2];
        const float r2 = dx * dx + dy * dy + dz * dz + EPS2;
        if (r2 < RCUT * RCUT) {
          const float inv = 1.0f / sqrtf(r2), w = s[4 * j + 3] * inv * inv * inv;
          px += w * dx, py += w * dy, pz += w * dz;
        }
      }
      ax += px, ay += py, az += pz;
    }
    ef[3 * i] = ax, ef[3 * i + 1] = ay, ef[3 * i + 2] = az;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "heavy_nbody", 2048);
  const int nt = (int)a.n, ns = 256 * nt;
  float *t = malloc(sizeof(float) * 3 * nt), *s = malloc(sizeof(float) * 4 * (size_t)ns);
  double *phi = calloc((size_t)nt, sizeof(double)), *ef = calloc(3 * (size_t)nt, sizeof(double));
  unsigned long st = 31;
  /* sources: a unit box, charges of both signs; targets: the same box */
  for (int j = 0; j < ns; j++) {
    for (int k = 0; k < 3; k++) s[4 * j + k] = (float)gs_rand(&st);
    s[4 * j + 3] = (float)(gs_rand(&st) - 0.5);
  }
  for (int i = 0; i < 3 * nt; i++) t[i] = (float)gs_rand(&st);

#pragma omp target data map(to : t[0:3 * nt], s[0:4 * ns]) map(tofrom : phi[0:nt], ef[0:3 * nt])
  {
    GS_TIME(a, "nb_potential", { nb_potential(nt, t, ns, s, phi); });
    GS_TIME(a, "nb_field", { nb_field(nt, t, ns, s, ef); });
  }

  const int stride = nt / 128 > 1 ? nt / 128 : 1, nc = (nt + stride - 1) / stride;
  double *got = malloc(sizeof(double) * 4 * nc), *want = malloc(sizeof(double) * 4 * nc);
#pragma omp parallel for schedule(dynamic)
  for (int c = 0; c < nc; c++) {
    const int i = c * stride;
    double p = 0.0, pm = 0.0, e[3] = {0.0, 0.0, 0.0}, em = 0.0;
    for (int j = 0; j < ns; j++) {
      const double dx = (double)t[3 * i] - s[4 * j], dy = (double)t[3 * i + 1] - s[4 * j + 1];
      const double dz = (double)t[3 * i + 2] - s[4 * j + 2];
      const double r2 = dx * dx + dy * dy + dz * dz + (double)EPS2, r = sqrt(r2);
      /* the float kernel decides the branch on float r and r2: a pair on the
       * cut-off can differ, but its term is continuous there (erfc ~ 0.003)
       * or tiny against S, so the tolerance covers it */
      if (r < RCUT) {
        const double term = s[4 * j + 3] * erfc(ALPHA * r) / r;
        p += term, pm += fabs(term);
      }
      if (r2 < (double)(RCUT * RCUT)) {
        const double w = s[4 * j + 3] / (r2 * r);
        const double d[3] = {dx, dy, dz};
        for (int k = 0; k < 3; k++) e[k] += w * d[k], em += fabs(w * d[k]);
      }
    }
    pm = pm > 0.0 ? pm : 1.0, em = em > 0.0 ? em : 1.0;
    got[4 * c] = phi[i] / pm, want[4 * c] = p / pm;
    for (int k = 0; k < 3; k++) got[4 * c + 1 + k] = ef[3 * i + k] / em, want[4 * c + 1 + k] = e[k] / em;
  }
  gs_check(&a, got, want, 4L * nc, 2e-4);
  free(t); free(s); free(phi); free(ef); free(got); free(want);
  return 0;
}
