/* ts_ocean: a time-stepping code with dozens of kernels: a wind-driven
 * shallow-water ocean on an N x N doubly periodic f-plane (a C grid: h and
 * the tracer at cell centres, u on west faces, v on south faces, vorticity at
 * south-west corners; the vector-invariant form with an energy-conserving
 * Coriolis average, as classic ocean models discretise it, written here from
 * the equations), forward Euler, STEPS = 10 steps, a passive tracer carried
 * by upwind fluxes, and per-step diagnostics read back by the host. 23
 * distinct target regions per step, each `collapse(2)` over the N^2 cells
 * (periodic neighbours by index wrap-around):
 *   oc_flux_u, oc_flux_v       mass fluxes U = h_u u, V = h_v v
 *   oc_kinetic, oc_vort, oc_pv kinetic energy, relative and potential vorticity
 *   oc_bernoulli               B = g h + K
 *   oc_dh, oc_du, oc_dv        tendencies (Coriolis via PV x flux, grad B,
 *                              Laplacian viscosity)
 *   oc_wind                    wind stress and bottom drag added to du
 *   oc_conc, oc_tflux_x, oc_tflux_y  tracer concentration and upwind fluxes
 *   oc_h_new, oc_u_new, oc_v_new, oc_m_new  the updates (ping-pong states)
 *   oc_mass, oc_energy, oc_enstrophy, oc_tracer_mass  reduction(+)
 *   oc_speed                   reduction(max) of |u|, |v|
 *   oc_tracer_range            reduction(min) and reduction(max) of c
 * oc_run times the whole integration, restarted from the initial state each
 * repetition (idempotent); every kernel is launched STEPS x (REPS + WARMUP)
 * times. The CPU reference runs the same regions on the host
 * (`if(target: 0)`: the region's host version, same code). Checked to 1e-10:
 * the final state (per-cell arithmetic, FMA contraction over 10 steps) and the
 * diagnostics (sums relative to their value: N^2 terms reassociated by the
 * team reductions; extremes exactly up to contraction).
 * N is the grid edge (512, 1024, 2048); memory 25 N^2 doubles (200 MB at
 * 1024). Pattern: time stepping, many distinct small kernels, mid-size
 * cross-team reductions. */
#include "common.h"

#define STEPS 10
#define GRAV 9.81
#define FCOR 10.0
#define NDIAG 7

/* planes of one allocation: 3 states of 4 fields (h u v m: m = h c, the
 * tracer's mass), then the work planes */
enum { S0 = 0, SA = 4, SB = 8, U_ = 12, V_, K_, Z_, Q_, B_, DH, DU, DV, C_, FX, FY, PLANES };

typedef struct {
  long n, t;           /* edge, cells per plane */
  double dt, idx, nu; /* time step, 1/dx, viscosity number nu dt / dx^2 / dt */
  int dev;             /* 1: offload, 0: the host version of every region */
} oc_grid;

#define WE(i) ((i) + 1 == n ? 0 : (i) + 1)
#define WW(i) ((i) == 0 ? n - 1 : (i) - 1)
#define AT(p, j, i) mem[(long)(p) * t + (j) * n + (i)]
/* one region over every cell, with the plane-array map every kernel shares
 * (present in the enclosing data region: no transfer) and any more clauses */
#define OC_PRAGMA(...) _Pragma(#__VA_ARGS__)
#define OC_CELLS(...)                                                                  \
  OC_PRAGMA(omp target teams distribute parallel for collapse(2) if (target : dev)     \
            map(tofrom : mem[0 : PLANES * t]) __VA_ARGS__)                             \
  for (long j = 0; j < n; j++)                                                         \
    for (long i = 0; i < n; i++)

static void oc_step(oc_grid g, double *mem, int in, int out, double *diag) {
  const long n = g.n, t = g.t;
  const double idx = g.idx, dt = g.dt, nu = g.nu;
  const int dev = g.dev, H = in, U = in + 1, V = in + 2, M = in + 3;
  OC_CELLS() AT(U_, j, i) = 0.5 * (AT(H, j, WW(i)) + AT(H, j, i)) * AT(U, j, i);
  OC_CELLS() AT(V_, j, i) = 0.5 * (AT(H, WW(j), i) + AT(H, j, i)) * AT(V, j, i);
  OC_CELLS() {
    const double ue = AT(U, j, WE(i)), uw = AT(U, j, i), vn = AT(V, WE(j), i), vs = AT(V, j, i);
    AT(K_, j, i) = 0.25 * (ue * ue + uw * uw + vn * vn + vs * vs);
  }
  OC_CELLS() AT(Z_, j, i) = (AT(V, j, i) - AT(V, j, WW(i)) - AT(U, j, i) + AT(U, WW(j), i)) * idx;
  OC_CELLS() {
    const double hc = 0.25 * (AT(H, j, i) + AT(H, j, WW(i)) + AT(H, WW(j), i) + AT(H, WW(j), WW(i)));
    AT(Q_, j, i) = (FCOR + AT(Z_, j, i)) / hc;
  }
  OC_CELLS() AT(B_, j, i) = GRAV * AT(H, j, i) + AT(K_, j, i);
  OC_CELLS() AT(DH, j, i) = -(AT(U_, j, WE(i)) - AT(U_, j, i) + AT(V_, WE(j), i) - AT(V_, j, i)) * idx;
  OC_CELLS() {
    const double va = 0.25 * (AT(V_, j, WW(i)) + AT(V_, j, i) + AT(V_, WE(j), WW(i)) + AT(V_, WE(j), i));
    const double lap = AT(U, j, WE(i)) + AT(U, j, WW(i)) + AT(U, WE(j), i) + AT(U, WW(j), i) - 4.0 * AT(U, j, i);
    AT(DU, j, i) = 0.5 * (AT(Q_, j, i) + AT(Q_, WE(j), i)) * va - (AT(B_, j, i) - AT(B_, j, WW(i))) * idx + nu * lap;
  }
  OC_CELLS() {
    const double ua = 0.25 * (AT(U_, WW(j), i) + AT(U_, WW(j), WE(i)) + AT(U_, j, i) + AT(U_, j, WE(i)));
    const double lap = AT(V, j, WE(i)) + AT(V, j, WW(i)) + AT(V, WE(j), i) + AT(V, WW(j), i) - 4.0 * AT(V, j, i);
    AT(DV, j, i) = -0.5 * (AT(Q_, j, i) + AT(Q_, j, WE(i))) * ua - (AT(B_, j, i) - AT(B_, WW(j), i)) * idx + nu * lap;
  }
  OC_CELLS() {
    const double y = (j + 0.5) / n, hu = 0.5 * (AT(H, j, WW(i)) + AT(H, j, i));
    AT(DU, j, i) += 0.1 * cos(6.283185307179586 * y) / hu - 0.05 * AT(U, j, i);
  }
  OC_CELLS() AT(C_, j, i) = AT(M, j, i) / AT(H, j, i);
  OC_CELLS() {
    const double f = AT(U_, j, i);
    AT(FX, j, i) = f > 0.0 ? f * AT(C_, j, WW(i)) : f * AT(C_, j, i);
  }
  OC_CELLS() {
    const double f = AT(V_, j, i);
    AT(FY, j, i) = f > 0.0 ? f * AT(C_, WW(j), i) : f * AT(C_, j, i);
  }
  OC_CELLS() AT(out, j, i) = AT(H, j, i) + dt * AT(DH, j, i);
  OC_CELLS() AT(out + 1, j, i) = AT(U, j, i) + dt * AT(DU, j, i);
  OC_CELLS() AT(out + 2, j, i) = AT(V, j, i) + dt * AT(DV, j, i);
  OC_CELLS() {
    const double div = AT(FX, j, WE(i)) - AT(FX, j, i) + AT(FY, WE(j), i) - AT(FY, j, i);
    AT(out + 3, j, i) = AT(M, j, i) - dt * idx * div;
  }
  double mass = 0.0, energy = 0.0, enst = 0.0, tmass = 0.0, speed = 0.0, lo = INFINITY, hi = -INFINITY;
  OC_CELLS(reduction(+ : mass) map(tofrom : mass)) mass += AT(out, j, i);
  OC_CELLS(reduction(+ : energy) map(tofrom : energy)) {
    const double h = AT(out, j, i), u = AT(out + 1, j, i), v = AT(out + 2, j, i);
    energy += 0.5 * h * (u * u + v * v) + 0.5 * GRAV * h * h;
  }
  OC_CELLS(reduction(+ : enst) map(tofrom : enst)) enst += AT(Q_, j, i) * AT(Q_, j, i);
  OC_CELLS(reduction(+ : tmass) map(tofrom : tmass)) tmass += AT(out + 3, j, i);
  OC_CELLS(reduction(max : speed) map(tofrom : speed)) {
    const double s = fmax(fabs(AT(out + 1, j, i)), fabs(AT(out + 2, j, i)));
    speed = s > speed ? s : speed;
  }
  OC_CELLS(reduction(min : lo) reduction(max : hi) map(tofrom : lo, hi)) {
    const double c = AT(C_, j, i);
    lo = c < lo ? c : lo;
    hi = c > hi ? c : hi;
  }
  diag[0] = mass, diag[1] = energy, diag[2] = enst, diag[3] = tmass;
  diag[4] = speed, diag[5] = lo, diag[6] = hi;
}

/* the integration from S0; returns the first plane of the final state */
static int oc_run(oc_grid g, double *mem, double *hist) {
  int cur = S0;
  for (int s = 0; s < STEPS; s++) {
    const int nxt = s % 2 == 0 ? SA : SB;
    oc_step(g, mem, cur, nxt, &hist[NDIAG * s]);
    cur = nxt;
  }
  return cur;
}

static void oc_initial(long n, double *mem) {
  const long t = n * n;
  for (long j = 0; j < n; j++)
    for (long i = 0; i < n; i++) {
      const double x = (i + 0.5) / n, y = (j + 0.5) / n, dx = x - 0.3, dy = y - 0.6;
      AT(S0, j, i) = 1.0 + 0.05 * exp(-(dx * dx + dy * dy) / 0.005);
      AT(S0 + 1, j, i) = 0.2 * sin(6.283185307179586 * y);
      AT(S0 + 2, j, i) = 0.05 * sin(6.283185307179586 * 2.0 * x);
      AT(S0 + 3, j, i) = AT(S0, j, i) * (x > 0.5 && y > 0.25 && y < 0.75 ? 1.0 : 0.1);
    }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "ts_ocean", 1024);
  const long n = a.n < 4 ? 4 : a.n, t = n * n;
  /* gravity waves sqrt(g h) ~ 3.2, flow <= 0.3: CFL 0.1; diffusion number 0.02 */
  oc_grid g = {n, t, 0.1 / (n * 3.5), (double)n, 0.0, 1};
  g.nu = 0.02 / g.dt;
  double *mem = calloc((size_t)PLANES * t, sizeof(double));
  double *cmem = calloc((size_t)PLANES * t, sizeof(double));
  oc_initial(n, mem);
  memcpy(cmem, mem, sizeof(double) * PLANES * t);
  double hist[NDIAG * STEPS], chist[NDIAG * STEPS];
  int res = S0;

#pragma omp target data map(tofrom : mem[0:PLANES * t])
  {
    GS_TIME(a, "oc_run", { res = oc_run(g, mem, hist); });
  }

  /* CPU: the same regions on the host */
  g.dev = 0;
  const int cres = oc_run(g, cmem, chist);
  const long k = 4 * t + NDIAG * STEPS;
  double *got = malloc(sizeof(double) * k), *ref = malloc(sizeof(double) * k);
  memcpy(got, mem + (long)res * t, sizeof(double) * 4 * t);
  memcpy(ref, cmem + (long)cres * t, sizeof(double) * 4 * t);
  for (int s = 0; s < STEPS; s++)
    for (int d = 0; d < NDIAG; d++) {
      const long o = 4 * t + NDIAG * s + d;
      /* sums (mass, energy, enstrophy, tracer mass) relative to their value */
      if (d < 4) got[o] = hist[NDIAG * s + d] / chist[NDIAG * s + d], ref[o] = 1.0;
      else got[o] = hist[NDIAG * s + d], ref[o] = chist[NDIAG * s + d];
    }
  printf("gridsel-bench: prog=%s n=%ld mass_drift=%.3e energy_change=%.3e tracer=[%.4f, %.4f]\n",
         a.prog, a.n, chist[NDIAG * (STEPS - 1)] / chist[0] - 1.0,
         chist[NDIAG * (STEPS - 1) + 1] / chist[1] - 1.0, chist[NDIAG * STEPS - 2],
         chist[NDIAG * STEPS - 1]);
  gs_check(&a, got, ref, k, 1e-10);
  free(mem); free(cmem); free(got); free(ref);
  return 0;
}
