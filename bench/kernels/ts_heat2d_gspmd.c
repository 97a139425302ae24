/* ts_heat2d_gspmd: a 2-D heat solver time loop written the way many OpenMP
 * ports write every kernel: a `target teams` region that reads its
 * coefficients into team-level scalars, then an inner `distribute parallel
 * for` (clang: generic mode, OpenMPOpt: Generic-SPMD; the host launches
 * with trip count 0). N x N doubly periodic grid with one ghost layer,
 * STEPS = 20 steps of
 *   h2_halo:  ONE teams region with two loops: the periodic copy of the
 *             ghost rows (N+2 entries each) and of the ghost columns (rows
 *             1..N, so the loops write disjoint cells)
 *   h2_step:  v = u + r (5-point Laplacian of u), collapse(2) over the
 *             interior, r = coef[0] read in the teams region
 *   h2_resid: sum of (v - u)^2 scaled by coef[1]: `target teams
 *             reduction(+)` around `distribute parallel for collapse(2)
 *             reduction(+)`: a Generic-SPMD kernel with a cross-team
 *             reduction
 * Each kernel is timed on its own on the initial state (whose ghosts are
 * already the periodic copies), then h2_run times the integration,
 * restarted from the initial state every repetition. The CPU runs the same
 * steps; the final field and the 20 residuals are checked (1e-9).
 * N is the grid edge; memory 3 (N+2)^2 doubles (1.6 GB at N = 8192).
 * Pattern: Generic-SPMD (trip count 0) kernels in a time loop, incl. a
 * Generic-SPMD cross-team reduction. */
#include "common.h"

#define STEPS 20

static void h2_halo(long n, double *u) {
  const long w = n + 2, tot = w * w;
#pragma omp target teams map(tofrom : u[0:tot])
  {
    const long last = n + 1;
#pragma omp distribute parallel for
    for (long i = 0; i < w; i++) {
      u[i] = u[n * w + i];
      u[last * w + i] = u[w + i];
    }
#pragma omp distribute parallel for
    for (long j = 1; j <= n; j++) {
      u[j * w] = u[j * w + n];
      u[j * w + last] = u[j * w + 1];
    }
  }
}

static void h2_step(long n, const double *coef, const double *u, double *v) {
  const long w = n + 2, tot = w * w;
#pragma omp target teams map(to : coef[0:2], u[0:tot]) map(tofrom : v[0:tot])
  {
    const double r = coef[0];
#pragma omp distribute parallel for collapse(2)
    for (long j = 1; j <= n; j++)
      for (long i = 1; i <= n; i++) {
        const long c = j * w + i;
        v[c] = u[c] + r * (u[c - 1] + u[c + 1] + u[c - w] + u[c + w] - 4.0 * u[c]);
      }
  }
}

static double h2_resid(long n, const double *coef, const double *u, const double *v) {
  const long w = n + 2, tot = w * w;
  double res = 0.0;
#pragma omp target teams reduction(+ : res) map(to : coef[0:2], u[0:tot], v[0:tot])
  {
    const double scale = coef[1];
#pragma omp distribute parallel for collapse(2) reduction(+ : res)
    for (long j = 1; j <= n; j++)
      for (long i = 1; i <= n; i++) {
        const double d = v[j * w + i] - u[j * w + i];
        res += scale * d * d;
      }
  }
  return res;
}

static double *h2_run(long n, const double *coef, double *u0, double *ua, double *ub,
                      double *res) {
  double *cur = u0;
  for (int s = 0; s < STEPS; s++) {
    double *nxt = s % 2 == 0 ? ua : ub;
    h2_halo(n, cur);
    h2_step(n, coef, cur, nxt);
    res[s] = h2_resid(n, coef, cur, nxt);
    cur = nxt;
  }
  return cur;
}

static void cpu_halo(long n, double *u) {
  const long w = n + 2;
  for (long i = 0; i < w; i++) u[i] = u[n * w + i], u[(n + 1) * w + i] = u[w + i];
  for (long j = 1; j <= n; j++) u[j * w] = u[j * w + n], u[j * w + n + 1] = u[j * w + 1];
}
static double cpu_step(long n, const double *coef, const double *u, double *v) {
  const long w = n + 2;
  double res = 0.0;
#pragma omp parallel for reduction(+ : res)
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) {
      const long c = j * w + i;
      v[c] = u[c] + coef[0] * (u[c - 1] + u[c + 1] + u[c - w] + u[c + w] - 4.0 * u[c]);
      res += coef[1] * (v[c] - u[c]) * (v[c] - u[c]);
    }
  return res;
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "ts_heat2d_gspmd", 4096);
  const long n = a.n < 2 ? 2 : a.n, w = n + 2, tot = w * w;
  double coef[2] = {0.2, 1.0 / ((double)n * n)};
  double *u0 = malloc(sizeof(double) * tot), *ua = calloc((size_t)tot, sizeof(double));
  double *ub = calloc((size_t)tot, sizeof(double));
  unsigned long st = 2222;
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++)
      u0[j * w + i] = ((i / 64 + j / 64) % 2) + 0.1 * gs_rand(&st); /* a checkerboard */
  cpu_halo(n, u0);
  double res[STEPS], r1 = 0.0, *out = NULL;

#pragma omp target data map(to : coef[0:2], u0[0:tot]) map(alloc : ua[0:tot], ub[0:tot])
  {
    GS_TIME(a, "h2_halo", { h2_halo(n, u0); });
    GS_TIME(a, "h2_step", { h2_step(n, coef, u0, ua); });
    GS_TIME(a, "h2_resid", { r1 = h2_resid(n, coef, u0, ua); });
    GS_TIME(a, "h2_run", { out = h2_run(n, coef, u0, ua, ub, res); });
    if (out == ua) {
#pragma omp target update from(ua[0:tot])
    } else {
#pragma omp target update from(ub[0:tot])
    }
  }

  double *cu = malloc(sizeof(double) * tot), *cv = calloc((size_t)tot, sizeof(double));
  memcpy(cu, u0, sizeof(double) * tot);
  const double cr1 = cpu_step(n, coef, cu, cv);
  double cres[STEPS];
  for (int s = 0; s < STEPS; s++) {
    cpu_halo(n, cu);
    cres[s] = cpu_step(n, coef, cu, cv);
    double *t = cu; cu = cv; cv = t;
  }
  const long m = n * n + STEPS + 1;
  double *got = malloc(sizeof(double) * m), *ref = malloc(sizeof(double) * m);
  long k = 0;
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) got[k] = out[j * w + i], ref[k++] = cu[j * w + i];
  for (int s = 0; s < STEPS; s++) got[k] = res[s] / cres[s], ref[k++] = 1.0;
  got[k] = r1 / cr1, ref[k++] = 1.0;
  gs_check(&a, got, ref, k, 1e-9);
  free(u0); free(ua); free(ub); free(cu); free(cv); free(got); free(ref);
  return 0;
}
