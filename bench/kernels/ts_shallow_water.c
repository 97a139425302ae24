/* ts_shallow_water: a time-stepping application made of many small kernels,
 * the nonlinear shallow-water equations in flux form (h, hu, hv) on an
 * N x N doubly periodic grid with one ghost layer ((N+2)^2 cells per field,
 * the three fields stored one after the other), centred differences plus a
 * small Laplacian viscosity, forward Euler, STEPS = 20 steps. Kernels:
 *   sw_init:      the initial state (a Gaussian bump in h on a sheared zonal
 *                 flow), ghosts included, computed on the device; launched
 *                 ONCE per program run (not per repetition)
 *   sw_halo_rows: periodic boundary copy of the ghost rows (3 fields x (N+2))
 *   sw_halo_cols: periodic boundary copy of the ghost columns
 *   sw_tendency:  collapse(2) over the N^2 interior: flux divergence +
 *                 viscosity for the 3 fields (reads 5-point neighbourhoods)
 *   sw_update:    collapse(2): q_next = q + dt * tendency (ping-pong buffers)
 *   sw_diag:      reduction(+ : mass, energy) over the interior, every step
 *                 (copied back to the host each step, as a model's
 *                 diagnostics are)
 * Every kernel but sw_init is timed on its own on the initial state, then
 * sw_run times the whole 20-step integration (per step: 2 halo kernels,
 * tendency, update, diagnostic), which restarts from the initial state each
 * repetition, so it is idempotent. The CPU runs the same steps (same per-cell
 * code via declare target); the final fields and the 20 mass/energy values
 * are checked (1e-9; mass is conserved to rounding).
 * N is the grid edge; memory 4 states x 3 fields x (N+2)^2 doubles
 * (1.6 GB at N = 4096). Pattern: time stepping, many small kernels
 * (halo, tendency, update, reduction), a kernel launched once per run. */
#include "common.h"

#define STEPS 20
#define GRAV 9.81

#pragma omp declare target
/* Initial state at interior coordinates (i, j) in 1..N (wrapped). */
static inline void sw_initial(long n, long i, long j, double *h, double *hu,
                              double *hv) {
  const double x = (i - 0.5) / n, y = (j - 0.5) / n;
  const double dx = x - 0.4, dy = y - 0.55;
  const double hh = 1.0 + 0.1 * exp(-(dx * dx + dy * dy) / 0.01);
  const double u = 0.1 * sin(6.283185307179586 * y), v = 0.02 * cos(6.283185307179586 * x);
  *h = hh;
  *hu = hh * u;
  *hv = hh * v;
}
/* Tendency of the 3 fields at cell c (row stride w = N+2, field stride p). */
static inline void sw_cell_tend(const double *q, long c, long w, long p,
                                double inv2dx, double kvisc, double *t) {
  const double *h = q, *hu = q + p, *hv = q + 2 * p;
  const long e = c + 1, wst = c - 1, nn = c + w, s = c - w;
  /* x fluxes at east/west, y fluxes at north/south */
  const double ue = hu[e] / h[e], uw = hu[wst] / h[wst];
  const double vn = hv[nn] / h[nn], vs = hv[s] / h[s];
  const double fh = hu[e] - hu[wst];
  const double fu = (hu[e] * ue + 0.5 * GRAV * h[e] * h[e]) -
                    (hu[wst] * uw + 0.5 * GRAV * h[wst] * h[wst]);
  const double fv = hv[e] * ue - hv[wst] * uw;
  const double gh = hv[nn] - hv[s];
  const double gu = hu[nn] * vn - hu[s] * vs;
  const double gv = (hv[nn] * vn + 0.5 * GRAV * h[nn] * h[nn]) -
                    (hv[s] * vs + 0.5 * GRAV * h[s] * h[s]);
  for (int f = 0; f < 3; f++) {
    const double *a = q + f * p;
    const double lap = a[e] + a[wst] + a[nn] + a[s] - 4.0 * a[c];
    const double div = f == 0 ? fh + gh : f == 1 ? fu + gu : fv + gv;
    t[f] = -inv2dx * div + kvisc * lap;
  }
}
#pragma omp end declare target

typedef struct {
  long n, w, p;           /* edge, row stride N+2, field stride (N+2)^2 */
  double dt, inv2dx, kvisc;
} sw_grid;

static void sw_init(sw_grid g, double *q) {
  const long n = g.n, w = g.w, p = g.p;
#pragma omp target teams distribute parallel for collapse(2) map(tofrom : q[0:3 * p])
  for (long j = 0; j < n + 2; j++)
    for (long i = 0; i < n + 2; i++) {
      const long ii = i == 0 ? n : i == n + 1 ? 1 : i, jj = j == 0 ? n : j == n + 1 ? 1 : j;
      sw_initial(n, ii, jj, &q[j * w + i], &q[p + j * w + i], &q[2 * p + j * w + i]);
    }
}

static void sw_halo_rows(sw_grid g, double *q) {
  const long n = g.n, w = g.w, p = g.p;
#pragma omp target teams distribute parallel for collapse(2) map(tofrom : q[0:3 * p])
  for (long f = 0; f < 3; f++)
    for (long i = 0; i < n + 2; i++) {
      double *a = q + f * p;
      a[i] = a[n * w + i];
      a[(n + 1) * w + i] = a[w + i];
    }
}

static void sw_halo_cols(sw_grid g, double *q) {
  const long n = g.n, w = g.w, p = g.p;
#pragma omp target teams distribute parallel for collapse(2) map(tofrom : q[0:3 * p])
  for (long f = 0; f < 3; f++)
    for (long j = 0; j < n + 2; j++) {
      double *a = q + f * p + j * w;
      a[0] = a[n];
      a[n + 1] = a[1];
    }
}

static void sw_tendency(sw_grid g, const double *q, double *t) {
  const long n = g.n, w = g.w, p = g.p;
  const double inv2dx = g.inv2dx, kv = g.kvisc;
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : q[0:3 * p]) map(tofrom : t[0:3 * p])
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) {
      const long c = j * w + i;
      double tt[3];
      sw_cell_tend(q, c, w, p, inv2dx, kv, tt);
      t[c] = tt[0];
      t[p + c] = tt[1];
      t[2 * p + c] = tt[2];
    }
}

static void sw_update(sw_grid g, const double *q, const double *t, double *qn) {
  const long n = g.n, w = g.w, p = g.p;
  const double dt = g.dt;
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : q[0:3 * p], t[0:3 * p]) map(tofrom : qn[0:3 * p])
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) {
      const long c = j * w + i;
      qn[c] = q[c] + dt * t[c];
      qn[p + c] = q[p + c] + dt * t[p + c];
      qn[2 * p + c] = q[2 * p + c] + dt * t[2 * p + c];
    }
}

static void sw_diag(sw_grid g, const double *q, double *mass, double *energy) {
  const long n = g.n, w = g.w, p = g.p;
  double m = 0.0, e = 0.0;
#pragma omp target teams distribute parallel for collapse(2) \
    reduction(+ : m, e) map(to : q[0:3 * p]) map(tofrom : m, e)
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) {
      const long c = j * w + i;
      const double h = q[c], hu = q[p + c], hv = q[2 * p + c];
      m += h;
      e += 0.5 * (hu * hu + hv * hv) / h + 0.5 * GRAV * h * h;
    }
  *mass = m;
  *energy = e;
}

/* The whole integration from q0; returns the buffer holding the result. */
static double *sw_run(sw_grid g, double *q0, double *qa, double *qb, double *t,
                      double *hist) {
  double *cur = q0;
  for (int s = 0; s < STEPS; s++) {
    double *nxt = s % 2 == 0 ? qa : qb;
    sw_halo_rows(g, cur);
    sw_halo_cols(g, cur);
    sw_tendency(g, cur, t);
    sw_update(g, cur, t, nxt);
    sw_diag(g, nxt, &hist[2 * s], &hist[2 * s + 1]);
    cur = nxt;
  }
  return cur;
}

/* CPU reference: the same steps, host threads over rows. */
static void cpu_run(sw_grid g, double *q, double *t, double *hist) {
  const long n = g.n, w = g.w, p = g.p;
  for (int s = 0; s < STEPS; s++) {
    for (int f = 0; f < 3; f++) {
      double *a = q + f * p;
      for (long i = 0; i < n + 2; i++) a[i] = a[n * w + i], a[(n + 1) * w + i] = a[w + i];
      for (long j = 0; j < n + 2; j++) a[j * w] = a[j * w + n], a[j * w + n + 1] = a[j * w + 1];
    }
#pragma omp parallel for
    for (long j = 1; j <= n; j++)
      for (long i = 1; i <= n; i++) {
        double tt[3];
        sw_cell_tend(q, j * w + i, w, p, g.inv2dx, g.kvisc, tt);
        for (int f = 0; f < 3; f++) t[f * p + j * w + i] = tt[f];
      }
    double m = 0.0, e = 0.0;
#pragma omp parallel for reduction(+ : m, e)
    for (long j = 1; j <= n; j++)
      for (long i = 1; i <= n; i++) {
        const long c = j * w + i;
        for (int f = 0; f < 3; f++) q[f * p + c] += g.dt * t[f * p + c];
        const double h = q[c], hu = q[p + c], hv = q[2 * p + c];
        m += h;
        e += 0.5 * (hu * hu + hv * hv) / h + 0.5 * GRAV * h * h;
      }
    hist[2 * s] = m;
    hist[2 * s + 1] = e;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "ts_shallow_water", 2048);
  sw_grid g;
  g.n = a.n < 4 ? 4 : a.n;
  g.w = g.n + 2;
  g.p = g.w * g.w;
  const double dx = 1.0 / g.n;
  g.dt = 0.1 * dx / 3.5; /* CFL 0.1 for gravity waves sqrt(g h) ~ 3.3 */
  g.inv2dx = 0.5 / dx;
  g.kvisc = 0.05 / g.dt; /* diffusion number 0.05 per step */
  const long p = g.p, f3 = 3 * p;
  double *q0 = calloc((size_t)f3, sizeof(double)), *qa = calloc((size_t)f3, sizeof(double));
  double *qb = calloc((size_t)f3, sizeof(double)), *t = calloc((size_t)f3, sizeof(double));
  double hist[2 * STEPS], dm = 0.0, de = 0.0;
  double *res = NULL;

#pragma omp target data map(alloc : q0[0:f3], qa[0:f3], qb[0:f3], t[0:f3])
  {
    const double t0 = gs_now_ms();
    sw_init(g, q0); /* once per run: not repeated, so timed once */
    const double ti = gs_now_ms() - t0;
    printf("gridsel-bench: prog=%s n=%ld kernel=sw_init reps=1 median_ms=%.6f "
           "min_ms=%.6f max_ms=%.6f\n", a.prog, a.n, ti, ti, ti);
    GS_TIME(a, "sw_halo_rows", { sw_halo_rows(g, q0); });
    GS_TIME(a, "sw_halo_cols", { sw_halo_cols(g, q0); });
    GS_TIME(a, "sw_tendency", { sw_tendency(g, q0, t); });
    GS_TIME(a, "sw_update", { sw_update(g, q0, t, qa); });
    GS_TIME(a, "sw_diag", { sw_diag(g, q0, &dm, &de); });
    GS_TIME(a, "sw_run", { res = sw_run(g, q0, qa, qb, t, hist); });
#pragma omp target update from(q0[0:f3])
    if (res == qa) {
#pragma omp target update from(qa[0:f3])
    } else {
#pragma omp target update from(qb[0:f3])
    }
  }

  /* CPU: initial state (must equal the device's), then the steps */
  double *cq = malloc(sizeof(double) * f3), *ct = calloc((size_t)f3, sizeof(double));
  for (long j = 0; j < g.n + 2; j++)
    for (long i = 0; i < g.n + 2; i++) {
      const long ii = i == 0 ? g.n : i == g.n + 1 ? 1 : i;
      const long jj = j == 0 ? g.n : j == g.n + 1 ? 1 : j;
      sw_initial(g.n, ii, jj, &cq[j * g.w + i], &cq[p + j * g.w + i], &cq[2 * p + j * g.w + i]);
    }
  double *got = malloc(sizeof(double) * (2 * f3 + 2 * STEPS + 2));
  double *ref = malloc(sizeof(double) * (2 * f3 + 2 * STEPS + 2));
  memcpy(got, q0, sizeof(double) * f3);
  memcpy(ref, cq, sizeof(double) * f3);
  /* the standalone diagnostic on the initial state */
  double m0 = 0.0, e0 = 0.0;
  for (long j = 1; j <= g.n; j++)
    for (long i = 1; i <= g.n; i++) {
      const long c = j * g.w + i;
      m0 += cq[c];
      e0 += 0.5 * (cq[p + c] * cq[p + c] + cq[2 * p + c] * cq[2 * p + c]) / cq[c] +
            0.5 * GRAV * cq[c] * cq[c];
    }
  double chist[2 * STEPS];
  cpu_run(g, cq, ct, chist);
  /* interior of the final state (ghosts of the last step are not refreshed) */
  long k = f3;
  for (int f = 0; f < 3; f++)
    for (long j = 1; j <= g.n; j++)
      for (long i = 1; i <= g.n; i++) {
        const long c = f * p + j * g.w + i;
        got[k] = res[c];
        ref[k++] = cq[c];
      }
  for (int s = 0; s < 2 * STEPS; s++) got[k] = hist[s] / chist[s], ref[k++] = 1.0;
  got[k] = dm / m0, ref[k++] = 1.0;
  got[k] = de / e0, ref[k++] = 1.0;
  printf("gridsel-bench: prog=%s n=%ld mass_drift=%.3e energy_change=%.3e\n", a.prog, a.n,
         chist[2 * STEPS - 2] / m0 - 1.0, chist[2 * STEPS - 1] / e0 - 1.0);
  gs_check(&a, got, ref, k, 1e-9);
  free(q0); free(qa); free(qb); free(t); free(cq); free(ct); free(got); free(ref);
  return 0;
}
