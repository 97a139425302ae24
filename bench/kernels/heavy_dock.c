/* heavy_dock: few, very heavy iterations: a docking-style pose scoring loop
 * (the shape of molecular-docking benchmarks, written here from the physics:
 * a rigid ligand placed by a rotation and a translation, scored against
 * every protein atom with steric, cut-off electrostatic and hydrophobic
 * terms). One `target teams distribute parallel for` over the poses; each
 * iteration builds its rotation (sinf/cosf), transforms the ligand into a
 * per-thread array (float[512][3]: 6 KB of stack) and sums L x R pair terms
 * with branches per pair, so iterations are few (trip count N = 512-4096)
 * and each is long.
 *   dk_score: energy[i] of pose i (float pair terms, a float sum per ligand
 *             atom, the ligand atoms summed in double)
 * N sets the deck: N poses, L = N / 8 ligand atoms, R = N protein atoms, so
 * a pose costs N^2 / 8 pair terms (32 K at 512, 2.1 M at 4096) and a launch
 * of the whole deck grows as N^2: 4-8 ms at the smallest size (sweepable),
 * 0.25-0.5 s at the largest (estimated: ~50-60 instructions per pair with
 * the correctly rounded sqrtf and two float divisions, 0.5-1 instruction
 * per cycle for one warp per scheduler, 4 poses per thread under LLVM's
 * 32-thread blocks and 128-pose distribute chunks).
 * Check: the CPU scores every pose in double from the same float inputs;
 * |got - ref| <= 1e-3 S, S = the sum of |pair terms| of the pose. The terms
 * are continuous at every cut-off (so a float/double disagreement on a branch
 * moves a term by rounding only), float sinf/cosf and ~10 float roundings per
 * term add ~1e-6 S, and a float sum of R terms is off by at most R u S
 * (2.4e-4 S at R = 4096).
 * Memory: tiny (a few hundred KB). Pattern: few heavy iterations, large
 * per-thread stack. */
#include "common.h"

#define LMAX 512
#define CUTOFF 12.0f
#define HPHOB 4.0f

#pragma omp declare target
/* the pair terms, continuous at every cut-off */
static inline float dk_pair(float d, float ra, float rb, float qa, float qb, int both) {
  float e = 0.0f;
  const float s = ra + rb - d;
  if (s > 0.0f) e += 4.0f * s * s;
  if (d < CUTOFF) e += qa * qb / fmaxf(d, 0.5f) * (1.0f - d / CUTOFF);
  if (both && d < HPHOB) e -= 0.5f * (HPHOB - d);
  return e;
}
#pragma omp end declare target

static void dk_score(int np, const float *pose, int nl, const float *l, int nr,
                     const float *pr, double *energy) {
  /* l: x y z q r type (as float) per ligand atom, 6 nl; pr likewise, 6 nr */
#pragma omp target teams distribute parallel for map(to : pose[0:6 * np], l[0:6 * nl], \
                                                         pr[0:6 * nr]) \
    map(tofrom : energy[0:np])
  for (int i = 0; i < np; i++) {
    const float *ps = pose + 6 * i;
    const float ca = cosf(ps[0]), sa = sinf(ps[0]), cb = cosf(ps[1]), sb = sinf(ps[1]);
    const float cc = cosf(ps[2]), sc = sinf(ps[2]);
    /* R = Rz(a) Ry(b) Rx(c) */
    const float m00 = ca * cb, m01 = ca * sb * sc - sa * cc, m02 = ca * sb * cc + sa * sc;
    const float m10 = sa * cb, m11 = sa * sb * sc + ca * cc, m12 = sa * sb * cc - ca * sc;
    const float m20 = -sb, m21 = cb * sc, m22 = cb * cc;
    float tl[LMAX][3];
    for (int a = 0; a < nl; a++) {
      const float x = l[6 * a], y = l[6 * a + 1], z = l[6 * a + 2];
      tl[a][0] = m00 * x + m01 * y + m02 * z + ps[3];
      tl[a][1] = m10 * x + m11 * y + m12 * z + ps[4];
      tl[a][2] = m20 * x + m21 * y + m22 * z + ps[5];
    }
    double etot = 0.0;
    for (int a = 0; a < nl; a++) {
      const float qa = l[6 * a + 3], ra = l[6 * a + 4];
      const int ha = l[6 * a + 5] != 0.0f;
      float e = 0.0f;
      for (int b = 0; b < nr; b++) {
        const float dx = tl[a][0] - pr[6 * b], dy = tl[a][1] - pr[6 * b + 1];
        const float dz = tl[a][2] - pr[6 * b + 2];
        const float d = sqrtf(dx * dx + dy * dy + dz * dz);
        e += dk_pair(d, ra, pr[6 * b + 4], qa, pr[6 * b + 3], ha && pr[6 * b + 5] != 0.0f);
      }
      etot += e;
    }
    energy[i] = etot;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "heavy_dock", 2048);
  const int np = (int)a.n, nl = np / 8 < 1 ? 1 : np / 8 > LMAX ? LMAX : np / 8, nr = np;
  float *pose = malloc(sizeof(float) * 6 * np), *l = malloc(sizeof(float) * 6 * nl);
  float *pr = malloc(sizeof(float) * 6 * nr);
  double *energy = calloc((size_t)np, sizeof(double));
  unsigned long st = 29;
  /* protein: a 40 A box; ligand: a 6 A cloud around its origin */
  for (int b = 0; b < nr; b++) {
    for (int k = 0; k < 3; k++) pr[6 * b + k] = (float)(40.0 * gs_rand(&st));
    pr[6 * b + 3] = (float)(gs_rand(&st) - 0.5);
    pr[6 * b + 4] = (float)(1.2 + 0.8 * gs_rand(&st));
    pr[6 * b + 5] = gs_rand(&st) < 0.3 ? 1.0f : 0.0f;
  }
  for (int k = 0; k < nl; k++) {
    for (int c = 0; c < 3; c++) l[6 * k + c] = (float)(12.0 * (gs_rand(&st) - 0.5));
    l[6 * k + 3] = (float)(gs_rand(&st) - 0.5);
    l[6 * k + 4] = (float)(1.2 + 0.8 * gs_rand(&st));
    l[6 * k + 5] = gs_rand(&st) < 0.4 ? 1.0f : 0.0f;
  }
  for (int i = 0; i < np; i++) {
    for (int c = 0; c < 3; c++) pose[6 * i + c] = (float)(6.283185307179586 * gs_rand(&st));
    for (int c = 3; c < 6; c++) pose[6 * i + c] = (float)(20.0 + 10.0 * (gs_rand(&st) - 0.5));
  }

#pragma omp target data map(to : pose[0:6 * np], l[0:6 * nl], pr[0:6 * nr]) \
    map(tofrom : energy[0:np])
  {
    GS_TIME(a, "dk_score", { dk_score(np, pose, nl, l, nr, pr, energy); });
  }

  double *got = malloc(sizeof(double) * np), *want = malloc(sizeof(double) * np);
#pragma omp parallel for schedule(dynamic)
  for (int i = 0; i < np; i++) {
    const float *ps = pose + 6 * i;
    const double ca = cos(ps[0]), sa = sin(ps[0]), cb = cos(ps[1]), sb = sin(ps[1]);
    const double cc = cos(ps[2]), sc = sin(ps[2]);
    const double m[3][3] = {{ca * cb, ca * sb * sc - sa * cc, ca * sb * cc + sa * sc},
                            {sa * cb, sa * sb * sc + ca * cc, sa * sb * cc - ca * sc},
                            {-sb, cb * sc, cb * cc}};
    double e = 0.0, mag = 0.0;
    for (int k = 0; k < nl; k++) {
      double t[3];
      for (int r = 0; r < 3; r++)
        t[r] = m[r][0] * l[6 * k] + m[r][1] * l[6 * k + 1] + m[r][2] * l[6 * k + 2] + ps[3 + r];
      for (int b = 0; b < nr; b++) {
        const double dx = t[0] - pr[6 * b], dy = t[1] - pr[6 * b + 1], dz = t[2] - pr[6 * b + 2];
        const double d = sqrt(dx * dx + dy * dy + dz * dz);
        double term = 0.0;
        const double s = (double)l[6 * k + 4] + pr[6 * b + 4] - d;
        if (s > 0.0) term += 4.0 * s * s;
        if (d < CUTOFF)
          term += (double)l[6 * k + 3] * pr[6 * b + 3] / fmax(d, 0.5) * (1.0 - d / CUTOFF);
        if (l[6 * k + 5] != 0.0f && pr[6 * b + 5] != 0.0f && d < HPHOB) term -= 0.5 * (HPHOB - d);
        e += term;
        mag += fabs(term);
      }
    }
    const double scale = mag > 0.0 ? mag : 1.0;
    got[i] = energy[i] / scale;
    want[i] = e / scale;
  }
  gs_check(&a, got, want, np, 1e-3);
  free(pose); free(l); free(pr); free(energy); free(got); free(want);
  return 0;
}
