/* hydro_lagrange: the element loops of a 2-D staggered-grid Lagrangian
 * hydrodynamics code (the structure of BookLeaf/LULESH-style codes, written
 * here from the textbook compatible-hydro update): N x N quadrilateral
 * elements on (N+1)^2 nodes, node coordinates perturbed from a regular grid,
 * elements reaching their 4 nodes through a connectivity array (as
 * unstructured codes do). One `target teams distribute parallel for` per
 * phase, each a loop over the N^2 elements reading several arrays per
 * element and gathering node data:
 *   lg_geom:   volume (area from the diagonals), density = mass / volume,
 *              characteristic length sqrt(area)       -> 3 element arrays
 *   lg_eos:    ideal gas: p = (gamma-1) rho e, c = sqrt(gamma p / rho)
 *   lg_visc:   artificial viscosity from the velocity divergence (node
 *              velocities and coordinates gathered): q = rho (c2 l^2 d^2 +
 *              c1 l c |d|) when compressing, else 0
 *   lg_force:  the 4 corner forces (p + q) times the half-edge normals,
 *              8 doubles per element written to a corner array
 *   lg_energy: e' = e - dt / m * sum over corners of f . u (work of the
 *              corner forces on the nodes)
 * Every phase writes only arrays it does not read, so repetitions under any
 * grid give the same result. The CPU runs the same per-element functions
 * (declare target); checked to 1e-10 relative (differences of neighbouring
 * coordinates keep the geometry well conditioned: the FMA contractions of the
 * device move results by a few ulps of O(1) quantities).
 * N is the element edge (2048, 4096, 6144: 4.2 M to 37.7 M elements);
 * memory ~25 doubles per element (7.5 GB at N = 6144). Pattern: long loop,
 * element loops of a hydrodynamics code. */
#include "common.h"

#define GAMMA 1.4
#define CQ1 0.5
#define CQ2 0.75

typedef struct {
  long ne, nn;      /* elements, nodes */
  double dt;
} lg_mesh;

#pragma omp declare target
static inline void lg_geom_el(const int *conn, const double *x, const double *y,
                              const double *m, long e, double *vol, double *rho,
                              double *len) {
  const int *k = conn + 4 * e;
  const double a = 0.5 * ((x[k[2]] - x[k[0]]) * (y[k[3]] - y[k[1]]) -
                          (x[k[3]] - x[k[1]]) * (y[k[2]] - y[k[0]]));
  vol[e] = a;
  rho[e] = m[e] / a;
  len[e] = sqrt(a);
}
static inline double lg_div_el(const int *conn, const double *x, const double *y,
                               const double *u, const double *v, long e, double a) {
  /* divergence of the bilinear velocity field, averaged over the element:
   * (1 / A) sum over the 4 edges of (u . n) ds, edge k from node k to k+1 */
  const int *k = conn + 4 * e;
  double flux = 0.0;
  for (int c = 0; c < 4; c++) {
    const int i = k[c], j = k[(c + 1) & 3];
    const double nx = y[j] - y[i], ny = -(x[j] - x[i]);
    flux += 0.5 * ((u[i] + u[j]) * nx + (v[i] + v[j]) * ny);
  }
  return flux / a;
}
static inline double lg_visc_el(const int *conn, const double *x, const double *y,
                                const double *u, const double *v, const double *vol,
                                const double *rho, const double *len, const double *cs,
                                long e) {
  const double d = lg_div_el(conn, x, y, u, v, e, vol[e]);
  if (d >= 0.0) return 0.0;
  const double l = len[e];
  return rho[e] * (CQ2 * l * l * d * d + CQ1 * l * cs[e] * -d);
}
static inline void lg_force_el(const int *conn, const double *x, const double *y,
                               const double *p, const double *q, long e, double *fc) {
  /* corner c gets (p + q) times half the normal of its two adjacent edges */
  const int *k = conn + 4 * e;
  const double pq = p[e] + q[e];
  for (int c = 0; c < 4; c++) {
    const int prev = k[(c + 3) & 3], next = k[(c + 1) & 3];
    fc[8 * e + 2 * c] = 0.5 * pq * (y[next] - y[prev]);
    fc[8 * e + 2 * c + 1] = -0.5 * pq * (x[next] - x[prev]);
  }
}
static inline double lg_energy_el(const int *conn, const double *u, const double *v,
                                  const double *fc, const double *m, const double *en,
                                  long e, double dt) {
  const int *k = conn + 4 * e;
  double work = 0.0;
  for (int c = 0; c < 4; c++) work += fc[8 * e + 2 * c] * u[k[c]] + fc[8 * e + 2 * c + 1] * v[k[c]];
  return en[e] - dt * work / m[e];
}
#pragma omp end declare target

static void lg_geom(lg_mesh g, const int *conn, const double *x, const double *y,
                    const double *m, double *vol, double *rho, double *len) {
  const long ne = g.ne, nn = g.nn;
#pragma omp target teams distribute parallel for map(to : conn[0:4 * ne], x[0:nn], \
                                                         y[0:nn], m[0:ne]) \
    map(tofrom : vol[0:ne], rho[0:ne], len[0:ne])
  for (long e = 0; e < ne; e++) lg_geom_el(conn, x, y, m, e, vol, rho, len);
}

static void lg_eos(lg_mesh g, const double *rho, const double *en, double *p, double *cs) {
  const long ne = g.ne;
#pragma omp target teams distribute parallel for map(to : rho[0:ne], en[0:ne]) \
    map(tofrom : p[0:ne], cs[0:ne])
  for (long e = 0; e < ne; e++) {
    const double pe = (GAMMA - 1.0) * rho[e] * en[e];
    p[e] = pe;
    cs[e] = sqrt(GAMMA * pe / rho[e]);
  }
}

static void lg_visc(lg_mesh g, const int *conn, const double *x, const double *y,
                    const double *u, const double *v, const double *vol, const double *rho,
                    const double *len, const double *cs, double *q) {
  const long ne = g.ne, nn = g.nn;
#pragma omp target teams distribute parallel for \
    map(to : conn[0:4 * ne], x[0:nn], y[0:nn], u[0:nn], v[0:nn], vol[0:ne], rho[0:ne], \
        len[0:ne], cs[0:ne]) map(tofrom : q[0:ne])
  for (long e = 0; e < ne; e++) q[e] = lg_visc_el(conn, x, y, u, v, vol, rho, len, cs, e);
}

static void lg_force(lg_mesh g, const int *conn, const double *x, const double *y,
                     const double *p, const double *q, double *fc) {
  const long ne = g.ne, nn = g.nn;
#pragma omp target teams distribute parallel for \
    map(to : conn[0:4 * ne], x[0:nn], y[0:nn], p[0:ne], q[0:ne]) map(tofrom : fc[0:8 * ne])
  for (long e = 0; e < ne; e++) lg_force_el(conn, x, y, p, q, e, fc);
}

static void lg_energy(lg_mesh g, const int *conn, const double *u, const double *v,
                      const double *fc, const double *m, const double *en, double *en1) {
  const long ne = g.ne, nn = g.nn;
  const double dt = g.dt;
#pragma omp target teams distribute parallel for \
    map(to : conn[0:4 * ne], u[0:nn], v[0:nn], fc[0:8 * ne], m[0:ne], en[0:ne]) \
    map(tofrom : en1[0:ne])
  for (long e = 0; e < ne; e++) en1[e] = lg_energy_el(conn, u, v, fc, m, en, e, dt);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "hydro_lagrange", 4096);
  const long n = a.n < 2 ? 2 : a.n, ne = n * n, nn = (n + 1) * (n + 1);
  lg_mesh g = {ne, nn, 1e-4};
  int *conn = malloc(sizeof(int) * 4 * ne);
  double *node = malloc(sizeof(double) * 4 * nn);
  double *x = node, *y = node + nn, *u = node + 2 * nn, *v = node + 3 * nn;
  double *m = malloc(sizeof(double) * ne), *en = malloc(sizeof(double) * ne);
  /* outputs: vol rho len p cs q en1 | fc (8 per element) */
  double *out = calloc(15 * (size_t)ne, sizeof(double));
  double *vol = out, *rho = out + ne, *len = out + 2 * ne, *p = out + 3 * ne;
  double *cs = out + 4 * ne, *q = out + 5 * ne, *en1 = out + 6 * ne, *fc = out + 7 * ne;
  const double h = 1.0 / n;
  unsigned long st = 11;
  for (long j = 0; j <= n; j++)
    for (long i = 0; i <= n; i++) {
      const long k = j * (n + 1) + i;
      x[k] = h * (i + 0.2 * (gs_rand(&st) - 0.5));
      y[k] = h * (j + 0.2 * (gs_rand(&st) - 0.5));
      u[k] = 0.3 * (gs_rand(&st) - 0.5) - 0.2 * (x[k] - 0.5);
      v[k] = 0.3 * (gs_rand(&st) - 0.5) - 0.2 * (y[k] - 0.5);
    }
  for (long j = 0; j < n; j++)
    for (long i = 0; i < n; i++) {
      const long e = j * n + i;
      const int n0 = (int)(j * (n + 1) + i);
      conn[4 * e] = n0;               /* counter-clockwise */
      conn[4 * e + 1] = n0 + 1;
      conn[4 * e + 2] = n0 + 1 + (int)(n + 1);
      conn[4 * e + 3] = n0 + (int)(n + 1);
      m[e] = h * h * (1.0 + 0.5 * gs_rand(&st));
      en[e] = 1.0 + gs_rand(&st);
    }

#pragma omp target data map(to : conn[0:4 * ne], node[0:4 * nn], m[0:ne], en[0:ne]) \
    map(tofrom : out[0:15 * ne])
  {
    GS_TIME(a, "lg_geom", { lg_geom(g, conn, x, y, m, vol, rho, len); });
    GS_TIME(a, "lg_eos", { lg_eos(g, rho, en, p, cs); });
    GS_TIME(a, "lg_visc", { lg_visc(g, conn, x, y, u, v, vol, rho, len, cs, q); });
    GS_TIME(a, "lg_force", { lg_force(g, conn, x, y, p, q, fc); });
    GS_TIME(a, "lg_energy", { lg_energy(g, conn, u, v, fc, m, en, en1); });
  }

  double *ref = calloc(15 * (size_t)ne, sizeof(double));
  double *rv = ref, *rr = ref + ne, *rl = ref + 2 * ne, *rp = ref + 3 * ne, *rc = ref + 4 * ne;
  double *rq = ref + 5 * ne, *re = ref + 6 * ne, *rf = ref + 7 * ne;
  long compressing = 0;
#pragma omp parallel for reduction(+ : compressing)
  for (long e = 0; e < ne; e++) {
    lg_geom_el(conn, x, y, m, e, rv, rr, rl);
    rp[e] = (GAMMA - 1.0) * rr[e] * en[e];
    rc[e] = sqrt(GAMMA * rp[e] / rr[e]);
    rq[e] = lg_visc_el(conn, x, y, u, v, rv, rr, rl, rc, e);
    compressing += rq[e] > 0.0;
    lg_force_el(conn, x, y, rp, rq, e, rf);
    re[e] = lg_energy_el(conn, u, v, rf, m, en, e, g.dt);
  }
  printf("gridsel-bench: prog=%s n=%ld compressing_elements=%ld of %ld\n", a.prog, a.n,
         compressing, ne);
  gs_check(&a, out, ref, 15 * ne, 1e-10);
  free(conn); free(node); free(m); free(en); free(out); free(ref);
  return 0;
}
