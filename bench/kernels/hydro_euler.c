/* hydro_euler: the cell and face loops of a 2-D Eulerian finite-volume code
 * for the compressible Euler equations (first-order Godunov-type scheme with
 * the Rusanov flux, ideal gas), on N x N cells with one ghost layer
 * ((N+2)^2 cells; 4 conserved fields rho, rho u, rho v, E stored as
 * separate planes of one array, as structure-of-arrays codes do):
 *   eu_prim:   conserved -> primitive rho, u, v, p and the sound speed c
 *              over every cell, ghosts included (4 planes in, 5 out)
 *   eu_flux_x: Rusanov flux at the (N+1) x N x-faces (2 cells x 4 fields of
 *              primitives and conserved values in, 4 flux planes out)
 *   eu_flux_y: the same at the N x (N+1) y-faces
 *   eu_update: U' = U - dt/h (flux differences), 4 planes over the interior
 *   eu_dt:     the CFL signal speed max(|u| + c, |v| + c) over the interior,
 *              reduction(max) (1 double)
 * collapse(2) everywhere (x fastest). Every kernel writes only what it does
 * not read, so repetitions leave the same result. The CPU runs the same
 * per-cell and per-face functions (declare target); checked to 1e-10
 * relative (O(1) states, a few tens of roundings, FMA contraction) and the
 * maximum exactly up to 1e-14 (a max of identically computed values; only
 * FMA contraction inside |u| + c can differ).
 * N is the cell edge (2048, 4096, 6144: 4.2 M to 37.7 M cells); memory
 * 21 (N+2)^2 doubles (6.3 GB at N = 6144). Pattern: long loop, element
 * (cell/face) loops of a hydrodynamics code; a cross-team max. */
#include "common.h"

#define GAMMA 1.4

#pragma omp declare target
static inline void eu_prim_cell(const double *U, double *W, long c, long p) {
  const double r = U[c], mu = U[p + c], mv = U[2 * p + c], E = U[3 * p + c];
  const double u = mu / r, v = mv / r;
  const double pr = (GAMMA - 1.0) * (E - 0.5 * r * (u * u + v * v));
  W[c] = r;
  W[p + c] = u;
  W[2 * p + c] = v;
  W[3 * p + c] = pr;
  W[4 * p + c] = sqrt(GAMMA * pr / r);
}
/* Rusanov flux between cells L and R along direction d (0: x, 1: y); f of
 * length 4 at face index k with plane stride fs. */
static inline void eu_face(const double *U, const double *W, long L, long R, long p, int d,
                           double *F, long k, long fs) {
  const double rl = W[L], rr = W[R];
  const double unl = W[(1 + d) * p + L], unr = W[(1 + d) * p + R];
  const double pl = W[3 * p + L], pr = W[3 * p + R];
  const double sl = fabs(unl) + W[4 * p + L], sr = fabs(unr) + W[4 * p + R];
  const double s = sl > sr ? sl : sr;
  double fl[4], fr[4];
  fl[0] = rl * unl;
  fr[0] = rr * unr;
  fl[1] = U[p + L] * unl + (d == 0 ? pl : 0.0);
  fr[1] = U[p + R] * unr + (d == 0 ? pr : 0.0);
  fl[2] = U[2 * p + L] * unl + (d == 1 ? pl : 0.0);
  fr[2] = U[2 * p + R] * unr + (d == 1 ? pr : 0.0);
  fl[3] = (U[3 * p + L] + pl) * unl;
  fr[3] = (U[3 * p + R] + pr) * unr;
  for (int f = 0; f < 4; f++)
    F[f * fs + k] = 0.5 * (fl[f] + fr[f]) - 0.5 * s * (U[f * p + R] - U[f * p + L]);
}
#pragma omp end declare target

typedef struct {
  long n, w, p, fx, fy; /* edge, row stride N+2, plane (N+2)^2, x faces, y faces */
  double dtdx;
} eu_grid;

static void eu_prim(eu_grid g, const double *U, double *W) {
  const long w = g.w, p = g.p;
#pragma omp target teams distribute parallel for collapse(2) map(to : U[0:4 * p]) \
    map(tofrom : W[0:5 * p])
  for (long j = 0; j < w; j++)
    for (long i = 0; i < w; i++) eu_prim_cell(U, W, j * w + i, p);
}

/* x face (i, j), i = 0..N between cells (i, j+1) and (i+1, j+1) in ghost
 * coordinates; index j * (N+1) + i */
static void eu_flux_x(eu_grid g, const double *U, const double *W, double *Fx) {
  const long n = g.n, w = g.w, p = g.p, fs = g.fx;
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : U[0:4 * p], W[0:5 * p]) map(tofrom : Fx[0:4 * fs])
  for (long j = 0; j < n; j++)
    for (long i = 0; i <= n; i++) {
      const long L = (j + 1) * w + i;
      eu_face(U, W, L, L + 1, p, 0, Fx, j * (n + 1) + i, fs);
    }
}

/* y face (i, j), j = 0..N between cells (i+1, j) and (i+1, j+1); index
 * j * N + i */
static void eu_flux_y(eu_grid g, const double *U, const double *W, double *Gy) {
  const long n = g.n, w = g.w, p = g.p, fs = g.fy;
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : U[0:4 * p], W[0:5 * p]) map(tofrom : Gy[0:4 * fs])
  for (long j = 0; j <= n; j++)
    for (long i = 0; i < n; i++) {
      const long L = j * w + i + 1;
      eu_face(U, W, L, L + w, p, 1, Gy, j * n + i, fs);
    }
}

#pragma omp declare target
static inline void eu_update_cell(const double *U, const double *Fx, const double *Gy,
                                  double *U1, long n, long w, long p, long fx, long fy,
                                  double dtdx, long j, long i) {
  const long c = (j + 1) * w + i + 1;
  for (int f = 0; f < 4; f++) {
    const double dfx = Fx[f * fx + j * (n + 1) + i + 1] - Fx[f * fx + j * (n + 1) + i];
    const double dgy = Gy[f * fy + (j + 1) * n + i] - Gy[f * fy + j * n + i];
    U1[f * p + c] = U[f * p + c] - dtdx * (dfx + dgy);
  }
}
#pragma omp end declare target

static void eu_update(eu_grid g, const double *U, const double *Fx, const double *Gy,
                      double *U1) {
  const long n = g.n, w = g.w, p = g.p, fx = g.fx, fy = g.fy;
  const double dtdx = g.dtdx;
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : U[0:4 * p], Fx[0:4 * fx], Gy[0:4 * fy]) map(tofrom : U1[0:4 * p])
  for (long j = 0; j < n; j++)
    for (long i = 0; i < n; i++) eu_update_cell(U, Fx, Gy, U1, n, w, p, fx, fy, dtdx, j, i);
}

static double eu_dt(eu_grid g, const double *W) {
  const long n = g.n, w = g.w, p = g.p;
  double smax = 0.0;
#pragma omp target teams distribute parallel for collapse(2) reduction(max : smax) \
    map(to : W[0:5 * p]) map(tofrom : smax)
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) {
      const long c = j * w + i;
      const double sx = fabs(W[p + c]) + W[4 * p + c], sy = fabs(W[2 * p + c]) + W[4 * p + c];
      const double s = sx > sy ? sx : sy;
      smax = s > smax ? s : smax;
    }
  return smax;
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "hydro_euler", 4096);
  eu_grid g;
  g.n = a.n < 2 ? 2 : a.n;
  g.w = g.n + 2;
  g.p = g.w * g.w;
  g.fx = (g.n + 1) * g.n;
  g.fy = g.n * (g.n + 1);
  g.dtdx = 0.2;
  const long n = g.n, w = g.w, p = g.p, fx = g.fx, fy = g.fy;
  double *U = malloc(sizeof(double) * 4 * p);
  /* outputs: W (5p) | Fx (4fx) | Gy (4fy) | U1 (4p) */
  const long nout = 5 * p + 4 * fx + 4 * fy + 4 * p;
  double *out = calloc((size_t)nout, sizeof(double));
  double *W = out, *Fx = out + 5 * p, *Gy = Fx + 4 * fx, *U1 = Gy + 4 * fy;
  unsigned long st = 13;
  for (long j = 0; j < w; j++)
    for (long i = 0; i < w; i++) {
      const long c = j * w + i;
      const double x = (double)i / w, y = (double)j / w;
      const double r = 1.0 + 0.5 * (x + y > 1.0) + 0.1 * gs_rand(&st); /* a shock-tube diagonal */
      const double u = 0.2 * (gs_rand(&st) - 0.5), v = 0.2 * (gs_rand(&st) - 0.5);
      const double pr = 1.0 + 0.5 * (x + y > 1.0) + 0.1 * gs_rand(&st);
      U[c] = r;
      U[p + c] = r * u;
      U[2 * p + c] = r * v;
      U[3 * p + c] = pr / (GAMMA - 1.0) + 0.5 * r * (u * u + v * v);
    }
  double smax = 0.0;

#pragma omp target data map(to : U[0:4 * p]) map(tofrom : out[0:nout])
  {
    GS_TIME(a, "eu_prim", { eu_prim(g, U, W); });
    GS_TIME(a, "eu_flux_x", { eu_flux_x(g, U, W, Fx); });
    GS_TIME(a, "eu_flux_y", { eu_flux_y(g, U, W, Gy); });
    GS_TIME(a, "eu_update", { eu_update(g, U, Fx, Gy, U1); });
    GS_TIME(a, "eu_dt", { smax = eu_dt(g, W); });
  }

  double *ref = calloc((size_t)nout, sizeof(double));
  double *rW = ref, *rFx = ref + 5 * p, *rGy = rFx + 4 * fx, *rU1 = rGy + 4 * fy;
#pragma omp parallel for
  for (long c = 0; c < p; c++) eu_prim_cell(U, rW, c, p);
  double rmax = 0.0;
#pragma omp parallel for reduction(max : rmax)
  for (long j = 0; j <= n; j++) {
    for (long i = 0; i <= n; i++) {
      if (j < n) eu_face(U, rW, (j + 1) * w + i, (j + 1) * w + i + 1, p, 0, rFx, j * (n + 1) + i, fx);
      if (i < n) eu_face(U, rW, j * w + i + 1, j * w + i + 1 + w, p, 1, rGy, j * n + i, fy);
      if (j >= 1 && i >= 1) {
        const long c = j * w + i;
        const double sx = fabs(rW[p + c]) + rW[4 * p + c], sy = fabs(rW[2 * p + c]) + rW[4 * p + c];
        const double s = sx > sy ? sx : sy;
        rmax = s > rmax ? s : rmax;
      }
    }
  }
#pragma omp parallel for
  for (long j = 0; j < n; j++)
    for (long i = 0; i < n; i++) eu_update_cell(U, rFx, rGy, rU1, n, w, p, fx, fy, g.dtdx, j, i);
  if (fabs(smax - rmax) > 1e-14 * rmax) {
    printf("gridsel-bench: prog=%s n=%ld check=FAIL eu_dt=%.17g want=%.17g\n", a.prog, a.n, smax,
           rmax);
    return 1;
  }
  gs_check(&a, out, ref, nout, 1e-10);
  free(U); free(out); free(ref);
  return 0;
}
