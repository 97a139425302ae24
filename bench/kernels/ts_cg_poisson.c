/* ts_cg_poisson: conjugate gradients on the 2-D 5-point Poisson matrix
 * (A u = 4 u - the 4 neighbours, zero Dirichlet boundary), matrix-free, on
 * N x N unknowns stored with a ghost ring ((N+2)^2 doubles per vector, ghosts
 * zero), ITERS = 25 iterations: mid-size cross-team reductions (N^2 = 0.26 M
 * to 1 M terms) inside an iteration loop, their results read back every
 * iteration as a solver's scalars are. Kernels (collapse(2) over the N^2
 * unknowns):
 *   cg_init:   x = 0, r = b, p = b, reduction(+) r . r; once per solve
 *   cg_apply:  Ap = A p
 *   cg_pap:    reduction(+) p . Ap
 *   cg_update: x' = x + alpha p, r' = r - alpha Ap, reduction(+) r' . r'
 *   cg_pdir:   p' = r' + beta p
 * Every kernel but cg_init is timed on its own (on b, out of place), then
 * cg_run times the whole solve (cg_init, then per iteration apply, pap,
 * update, pdir with ping-pong vectors), restarted from b each repetition.
 * The CPU runs the same solve with the same per-point code; the device's
 * reductions sum in another order (N^2 positive terms: at most ~N^2 u
 * relative, 1e-10 at N = 1024, usually ~sqrt(N^2) u), which CG carries into
 * alpha and beta; 25 iterations amplify it by well under 10^2 (measured:
 * ~1e-13 at N = 64 on the host), so the solution, the standalone kernels and
 * the 26 residual norms are checked to 1e-8 relative.
 * N is the grid edge (512, 724, 1024: 0.26 M, 0.52 M, 1.05 M unknowns);
 * memory 10 (N+2)^2 doubles. Pattern: time stepping (an iteration loop) with
 * mid-size cross-team reductions. */
#include "common.h"

#define ITERS 25

#pragma omp declare target
static inline double apply5(const double *p, long c, long w) {
  return 4.0 * p[c] - p[c - 1] - p[c + 1] - p[c - w] - p[c + w];
}
#pragma omp end declare target

typedef struct {
  long n, w, t; /* edge, row stride N+2, vector length (N+2)^2 */
} cg_grid;

static double cg_init(cg_grid g, const double *b, double *x, double *r, double *p) {
  const long n = g.n, w = g.w, t = g.t;
  double rr = 0.0;
#pragma omp target teams distribute parallel for collapse(2) reduction(+ : rr) \
    map(to : b[0:t]) map(tofrom : x[0:t], r[0:t], p[0:t], rr)
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) {
      const long c = j * w + i;
      x[c] = 0.0;
      r[c] = b[c];
      p[c] = b[c];
      rr += b[c] * b[c];
    }
  return rr;
}

static void cg_apply(cg_grid g, const double *p, double *ap) {
  const long n = g.n, w = g.w, t = g.t;
#pragma omp target teams distribute parallel for collapse(2) map(to : p[0:t]) \
    map(tofrom : ap[0:t])
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) ap[j * w + i] = apply5(p, j * w + i, w);
}

static double cg_pap(cg_grid g, const double *p, const double *ap) {
  const long n = g.n, w = g.w, t = g.t;
  double s = 0.0;
#pragma omp target teams distribute parallel for collapse(2) reduction(+ : s) \
    map(to : p[0:t], ap[0:t]) map(tofrom : s)
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) s += p[j * w + i] * ap[j * w + i];
  return s;
}

static double cg_update(cg_grid g, double alpha, const double *x, const double *r,
                        const double *p, const double *ap, double *x1, double *r1) {
  const long n = g.n, w = g.w, t = g.t;
  double rr = 0.0;
#pragma omp target teams distribute parallel for collapse(2) reduction(+ : rr) \
    map(to : x[0:t], r[0:t], p[0:t], ap[0:t]) map(tofrom : x1[0:t], r1[0:t], rr)
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) {
      const long c = j * w + i;
      x1[c] = x[c] + alpha * p[c];
      const double rc = r[c] - alpha * ap[c];
      r1[c] = rc;
      rr += rc * rc;
    }
  return rr;
}

static void cg_pdir(cg_grid g, double beta, const double *r, const double *p, double *p1) {
  const long n = g.n, w = g.w, t = g.t;
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : r[0:t], p[0:t]) map(tofrom : p1[0:t])
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) p1[j * w + i] = r[j * w + i] + beta * p[j * w + i];
}

/* vectors: x r p (two of each: ping-pong), ap; returns the final x */
static double *cg_run(cg_grid g, const double *b, double *v[2][3], double *ap, double *hist) {
  int cur = 0;
  double rr = cg_init(g, b, v[0][0], v[0][1], v[0][2]);
  hist[0] = rr;
  for (int k = 0; k < ITERS; k++) {
    double *x = v[cur][0], *r = v[cur][1], *p = v[cur][2];
    double *x1 = v[1 - cur][0], *r1 = v[1 - cur][1], *p1 = v[1 - cur][2];
    cg_apply(g, p, ap);
    const double alpha = rr / cg_pap(g, p, ap);
    const double rr1 = cg_update(g, alpha, x, r, p, ap, x1, r1);
    cg_pdir(g, rr1 / rr, r1, p, p1);
    rr = rr1;
    hist[k + 1] = rr;
    cur = 1 - cur;
  }
  return v[cur][0];
}

/* The same solve on the CPU (serial sums in row order). */
static void cpu_cg(cg_grid g, const double *b, double *x, double *hist) {
  const long n = g.n, w = g.w, t = g.t;
  double *r = calloc((size_t)t, sizeof(double)), *p = calloc((size_t)t, sizeof(double));
  double *ap = calloc((size_t)t, sizeof(double));
  double rr = 0.0;
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) {
      const long c = j * w + i;
      x[c] = 0.0, r[c] = b[c], p[c] = b[c], rr += b[c] * b[c];
    }
  hist[0] = rr;
  for (int k = 0; k < ITERS; k++) {
    double pap = 0.0, rr1 = 0.0;
    for (long j = 1; j <= n; j++)
      for (long i = 1; i <= n; i++) {
        ap[j * w + i] = apply5(p, j * w + i, w);
        pap += p[j * w + i] * ap[j * w + i];
      }
    const double alpha = rr / pap;
    for (long c = 0; c < t; c++) {
      x[c] += alpha * p[c];
      r[c] -= alpha * ap[c];
      rr1 += r[c] * r[c];
    }
    for (long c = 0; c < t; c++) p[c] = r[c] + rr1 / rr * p[c];
    rr = rr1;
    hist[k + 1] = rr;
  }
  free(r); free(p); free(ap);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "ts_cg_poisson", 724);
  cg_grid g;
  g.n = a.n < 2 ? 2 : a.n;
  g.w = g.n + 2;
  g.t = g.w * g.w;
  const long t = g.t, n = g.n, w = g.w;
  double *b = calloc((size_t)t, sizeof(double));
  /* vectors: 6 for the solve, ap, and the standalone outputs ap0 x1 r1 p1 */
  double *vec = calloc(11 * (size_t)t, sizeof(double));
  double *v[2][3] = {{vec, vec + t, vec + 2 * t}, {vec + 3 * t, vec + 4 * t, vec + 5 * t}};
  double *ap = vec + 6 * t, *ap0 = vec + 7 * t, *x1 = vec + 8 * t, *r1 = vec + 9 * t;
  double *p1 = vec + 10 * t;
  unsigned long st = 23;
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) b[j * w + i] = gs_rand(&st);
  double hist[ITERS + 1], sa[3] = {0, 0, 0};
  double *res = NULL;

#pragma omp target data map(to : b[0:t]) map(tofrom : vec[0:11 * t])
  {
    /* standalone: on p = r = b, x = 0 (b itself, and zeros, serve as inputs) */
    double *zero = v[1][0];
    GS_TIME(a, "cg_apply", { cg_apply(g, b, ap0); });
    GS_TIME(a, "cg_pap", { sa[0] = cg_pap(g, b, ap0); });
    GS_TIME(a, "cg_update", { sa[1] = cg_update(g, 0.25, zero, b, b, ap0, x1, r1); });
    GS_TIME(a, "cg_pdir", { cg_pdir(g, 0.5, r1, b, p1); });
    GS_TIME(a, "cg_run", { res = cg_run(g, b, v, ap, hist); });
#pragma omp target update from(vec[0:11 * t])
  }

  /* the CPU: standalone results, then the solve */
  double *ref = calloc(5 * (size_t)t + ITERS + 3, sizeof(double));
  double *got = calloc(5 * (size_t)t + ITERS + 3, sizeof(double));
  double rpap = 0.0, rrr = 0.0;
  for (long j = 1; j <= n; j++)
    for (long i = 1; i <= n; i++) {
      const long c = j * w + i;
      const double apc = apply5(b, c, w), rc = b[c] - 0.25 * apc;
      ref[c] = apc;
      ref[t + c] = 0.25 * b[c];
      ref[2 * t + c] = rc;
      ref[3 * t + c] = rc + 0.5 * b[c];
      rpap += b[c] * apc;
      rrr += rc * rc;
    }
  double chist[ITERS + 1];
  cpu_cg(g, b, ref + 4 * t, chist);
  memcpy(got, ap0, sizeof(double) * t);
  memcpy(got + t, x1, sizeof(double) * t);
  memcpy(got + 2 * t, r1, sizeof(double) * t);
  memcpy(got + 3 * t, p1, sizeof(double) * t);
  memcpy(got + 4 * t, res, sizeof(double) * t);
  long k = 5 * t;
  for (int s = 0; s <= ITERS; s++) got[k] = hist[s] / chist[s], ref[k++] = 1.0;
  got[k] = sa[0] / rpap, ref[k++] = 1.0;
  got[k] = sa[1] / rrr, ref[k++] = 1.0;
  printf("gridsel-bench: prog=%s n=%ld residual_reduction=%.3e\n", a.prog, a.n,
         sqrt(chist[ITERS] / chist[0]));
  gs_check(&a, got, ref, k, 1e-8);
  free(b); free(vec); free(ref); free(got);
  return 0;
}
