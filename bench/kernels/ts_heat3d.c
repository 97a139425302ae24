/* ts_heat3d: a 3-D time-stepping heat solver on an N^3 triply periodic grid
 * with two ghost layers ((N+4)^3 doubles per field, x fastest), STEPS = 10
 * steps, every kernel a collapse(3) loop nest:
 *   h3_halo_x/y/z: periodic boundary copies of the 2-wide ghost slabs, one
 *                  kernel per axis, run x, y, z in turn (so edges and
 *                  corners are filled too); small kernels, trip count
 *                  2 (N+4)^2; x ghosts are scattered (2 + 2 elements per
 *                  row), z ghosts contiguous planes
 *   h3_lap4:       v = u + r L4(u), L4 the 4th-order 13-point Laplacian
 *                  (-1, 16, -30, 16, -1)/12 along each axis (r = 0.05)
 *   h3_smooth27:   v = the 27-point full-weighting average (8, 4, 2, 1)/64 of
 *                  u (every 5th step replaces the heat step)
 *   h3_resid:      reduction(+) of (v - u)^2 over the interior, every step
 * Each is timed on its own on the initial state (whose ghosts already hold
 * the periodic copies, so the halo kernels change nothing), then h3_run
 * times the 10-step integration (per step: 3 halo kernels, lap4 or smooth27,
 * resid), restarted from the initial state each repetition. The CPU runs the
 * same steps (same per-point code); the final field and the 10 residuals are
 * checked (1e-9).
 * N is the grid edge (real codes: 256); memory 3 (N+4)^3 doubles (1.4 GB at
 * N = 384). Pattern: time stepping with collapse(3) stencils with heavy
 * bodies, halo kernels and a reduction per step. */
#include "common.h"

#define STEPS 10
#define RATE 0.05

#pragma omp declare target
static inline double lap4_point(const double *u, long c, long sy, long sz) {
  const long s[3] = {1, sy, sz};
  double l = 0.0;
  for (int d = 0; d < 3; d++) {
    const long o = s[d];
    l += -u[c - 2 * o] + 16.0 * u[c - o] - 30.0 * u[c] + 16.0 * u[c + o] - u[c + 2 * o];
  }
  return u[c] + RATE * l * (1.0 / 12.0);
}
static inline double smooth27_point(const double *u, long c, long sy, long sz) {
  double acc = 0.0;
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        const int far = (dz != 0) + (dy != 0) + (dx != 0); /* 0 centre .. 3 corner */
        const double wgt = far == 0 ? 8.0 : far == 1 ? 4.0 : far == 2 ? 2.0 : 1.0;
        acc += wgt * u[c + dz * sz + dy * sy + dx];
      }
  return acc * (1.0 / 64.0);
}
#pragma omp end declare target

/* Halo along one axis (stride st): the two ghost planes on each side get
 * the periodic copies; (a, b) run over the two other axes (strides sa, sb),
 * full extent. Shared by the three halo kernels and the CPU. */
#pragma omp declare target
static inline void halo_point(double *u, long n, long st, long sa, long sb,
                              long b, long a, long g) {
  const long base = b * sb + a * sa;
  u[base + g * st] = u[base + (n + g) * st];
  u[base + (n + 2 + g) * st] = u[base + (2 + g) * st];
}
#pragma omp end declare target

/* One kernel per axis, as real codes have: x ghosts are scattered (a few
 * elements per row), z ghosts contiguous planes. */
static void h3_halo_x(long n, double *u) {
  const long w = n + 4, tot = w * w * w;
#pragma omp target teams distribute parallel for collapse(3) map(tofrom : u[0:tot])
  for (long b = 0; b < w; b++)
    for (long a = 0; a < w; a++)
      for (long g = 0; g < 2; g++) halo_point(u, n, 1, w, w * w, b, a, g);
}
static void h3_halo_y(long n, double *u) {
  const long w = n + 4, tot = w * w * w;
#pragma omp target teams distribute parallel for collapse(3) map(tofrom : u[0:tot])
  for (long b = 0; b < w; b++)
    for (long g = 0; g < 2; g++)
      for (long a = 0; a < w; a++) halo_point(u, n, w, 1, w * w, b, a, g);
}
static void h3_halo_z(long n, double *u) {
  const long w = n + 4, tot = w * w * w;
#pragma omp target teams distribute parallel for collapse(3) map(tofrom : u[0:tot])
  for (long g = 0; g < 2; g++)
    for (long b = 0; b < w; b++)
      for (long a = 0; a < w; a++) halo_point(u, n, w * w, 1, w, b, a, g);
}

static void h3_lap4(long n, const double *u, double *v) {
  const long w = n + 4, tot = w * w * w, sz = w * w;
#pragma omp target teams distribute parallel for collapse(3) \
    map(to : u[0:tot]) map(tofrom : v[0:tot])
  for (long z = 2; z < n + 2; z++)
    for (long y = 2; y < n + 2; y++)
      for (long x = 2; x < n + 2; x++) {
        const long c = z * sz + y * w + x;
        v[c] = lap4_point(u, c, w, sz);
      }
}

static void h3_smooth27(long n, const double *u, double *v) {
  const long w = n + 4, tot = w * w * w, sz = w * w;
#pragma omp target teams distribute parallel for collapse(3) \
    map(to : u[0:tot]) map(tofrom : v[0:tot])
  for (long z = 2; z < n + 2; z++)
    for (long y = 2; y < n + 2; y++)
      for (long x = 2; x < n + 2; x++) {
        const long c = z * sz + y * w + x;
        v[c] = smooth27_point(u, c, w, sz);
      }
}

static double h3_resid(long n, const double *u, const double *v) {
  const long w = n + 4, tot = w * w * w, sz = w * w;
  double r = 0.0;
#pragma omp target teams distribute parallel for collapse(3) reduction(+ : r) \
    map(to : u[0:tot], v[0:tot]) map(tofrom : r)
  for (long z = 2; z < n + 2; z++)
    for (long y = 2; y < n + 2; y++)
      for (long x = 2; x < n + 2; x++) {
        const long c = z * sz + y * w + x;
        const double d = v[c] - u[c];
        r += d * d;
      }
  return r;
}

static double *h3_run(long n, double *u0, double *ua, double *ub, double *res) {
  double *cur = u0;
  for (int s = 0; s < STEPS; s++) {
    double *nxt = s % 2 == 0 ? ua : ub;
    h3_halo_x(n, cur);
    h3_halo_y(n, cur);
    h3_halo_z(n, cur);
    if (s % 5 == 4) h3_smooth27(n, cur, nxt);
    else h3_lap4(n, cur, nxt);
    res[s] = h3_resid(n, cur, nxt);
    cur = nxt;
  }
  return cur;
}

/* CPU versions (host threads over z planes) */
static void cpu_halo(long n, double *u) { /* x, then y, then z */
  const long w = n + 4;
  const long st[3] = {1, w, w * w}, sa[3] = {w, 1, 1}, sb[3] = {w * w, w * w, w};
  for (int d = 0; d < 3; d++)
    for (long b = 0; b < w; b++)
      for (long a = 0; a < w; a++)
        for (long g = 0; g < 2; g++) halo_point(u, n, st[d], sa[d], sb[d], b, a, g);
}
static double cpu_step(long n, int smooth, const double *u, double *v) {
  const long w = n + 4, sz = w * w;
  double r = 0.0;
#pragma omp parallel for reduction(+ : r)
  for (long z = 2; z < n + 2; z++)
    for (long y = 2; y < n + 2; y++)
      for (long x = 2; x < n + 2; x++) {
        const long c = z * sz + y * w + x;
        v[c] = smooth ? smooth27_point(u, c, w, sz) : lap4_point(u, c, w, sz);
        r += (v[c] - u[c]) * (v[c] - u[c]);
      }
  return r;
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "ts_heat3d", 256);
  const long n = a.n < 4 ? 4 : a.n, w = n + 4, tot = w * w * w;
  double *u0 = malloc(sizeof(double) * tot), *ua = calloc((size_t)tot, sizeof(double));
  double *ub = calloc((size_t)tot, sizeof(double));
  unsigned long st = 333;
  for (long z = 0; z < w; z++)
    for (long y = 0; y < w; y++)
      for (long x = 0; x < w; x++) {
        const double fx = (double)(x - 2) / n, fy = (double)(y - 2) / n, fz = (double)(z - 2) / n;
        u0[(z * w + y) * w + x] = sin(6.283185307179586 * fx) * cos(6.283185307179586 * fy) *
                                      sin(12.566370614359172 * fz) + 0.2 * gs_rand(&st);
      }
  cpu_halo(n, u0); /* ghosts = periodic copies */
  double res[STEPS], r1 = 0.0, *out = NULL;

#pragma omp target data map(to : u0[0:tot]) map(alloc : ua[0:tot], ub[0:tot])
  {
    GS_TIME(a, "h3_halo_x", { h3_halo_x(n, u0); });
    GS_TIME(a, "h3_halo_y", { h3_halo_y(n, u0); });
    GS_TIME(a, "h3_halo_z", { h3_halo_z(n, u0); });
    GS_TIME(a, "h3_smooth27", { h3_smooth27(n, u0, ua); });
    GS_TIME(a, "h3_lap4", { h3_lap4(n, u0, ua); });
    GS_TIME(a, "h3_resid", { r1 = h3_resid(n, u0, ua); });
    GS_TIME(a, "h3_run", { out = h3_run(n, u0, ua, ub, res); });
    if (out == ua) {
#pragma omp target update from(ua[0:tot])
    } else {
#pragma omp target update from(ub[0:tot])
    }
  }

  double *cu = malloc(sizeof(double) * tot), *cv = calloc((size_t)tot, sizeof(double));
  memcpy(cu, u0, sizeof(double) * tot);
  const double cr1 = cpu_step(n, 0, cu, cv);
  double cres[STEPS];
  for (int s = 0; s < STEPS; s++) {
    cpu_halo(n, cu);
    cres[s] = cpu_step(n, s % 5 == 4, cu, cv);
    double *tmp = cu; cu = cv; cv = tmp;
  }
  /* compare the interior of the final field, then the residuals */
  const long m = n * n * n + STEPS + 1;
  double *got = malloc(sizeof(double) * m), *ref = malloc(sizeof(double) * m);
  long k = 0;
  for (long z = 2; z < n + 2; z++)
    for (long y = 2; y < n + 2; y++)
      for (long x = 2; x < n + 2; x++) {
        const long c = (z * w + y) * w + x;
        got[k] = out[c];
        ref[k++] = cu[c];
      }
  for (int s = 0; s < STEPS; s++) got[k] = res[s] / cres[s], ref[k++] = 1.0;
  got[k] = r1 / cr1, ref[k++] = 1.0;
  gs_check(&a, got, ref, k, 1e-9);
  free(u0); free(ua); free(ub); free(cu); free(cv); free(got); free(ref);
  return 0;
}
