/* probe_shared: a team-local array in shared memory, and the Generic-SPMD
 * example. `target teams distribute` over tiles of TILE = 256 elements; inside
 * each distribute iteration a tile array is declared (one per team, shared
 * by its threads, which LLVM places in GPU shared memory) and filled and used
 * by nested `parallel for` loops (implicit barrier between them).
 *   shared_tile3:    out[j] = (t[j-1] + t[j] + t[j+1]) / 3 within the tile
 *                    (clamped at the tile's ends), t = in^2 loaded to the tile
 *   shared_blocksum: sums[b] = sum of the tile after in -> in * (1 + in),
 *                    a parallel-for reduction over the team-local array
 * LLVM 19 runs this as Generic-SPMD with one team per distribute iteration.
 * N is the element count (N / 256 tiles, rounded up). */
#include "common.h"

#define TILE 256

static void shared_tile3(long n, const double *in, double *out) {
  const long nt = (n + TILE - 1) / TILE;
#pragma omp target teams distribute map(to : in[0:n]) map(tofrom : out[0:n])
  for (long b = 0; b < nt; b++) {
    double tile[TILE];
    const long base = b * TILE;
    const int len = (int)(n - base < TILE ? n - base : TILE);
#pragma omp parallel for
    for (int j = 0; j < len; j++) tile[j] = in[base + j] * in[base + j];
#pragma omp parallel for
    for (int j = 0; j < len; j++) {
      double l = tile[j > 0 ? j - 1 : j], r = tile[j < len - 1 ? j + 1 : j];
      out[base + j] = (l + tile[j] + r) / 3.0;
    }
  }
}

static void shared_blocksum(long n, const double *in, double *sums) {
  const long nt = (n + TILE - 1) / TILE;
#pragma omp target teams distribute map(to : in[0:n]) map(tofrom : sums[0:nt])
  for (long b = 0; b < nt; b++) {
    double tile[TILE];
    const long base = b * TILE;
    const int len = (int)(n - base < TILE ? n - base : TILE);
    double s = 0.0;
#pragma omp parallel for
    for (int j = 0; j < len; j++) tile[j] = in[base + j] * (1.0 + in[base + j]);
#pragma omp parallel for reduction(+ : s)
    for (int j = 0; j < len; j++) s += tile[len - 1 - j];
    sums[b] = s;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "probe_shared", 4194304);
  const long n = a.n, nt = (n + TILE - 1) / TILE;
  double *in = malloc(sizeof(double) * n);
  double *got = calloc((size_t)(n + nt), sizeof(double));
  double *ref = malloc(sizeof(double) * (n + nt));
  double *out = got, *sums = got + n;
  unsigned long s = 256;
  for (long i = 0; i < n; i++) in[i] = gs_rand(&s);

#pragma omp target data map(to : in[0:n]) map(tofrom : out[0:n], sums[0:nt])
  {
    GS_TIME(a, "shared_tile3", { shared_tile3(n, in, out); });
    GS_TIME(a, "shared_blocksum", { shared_blocksum(n, in, sums); });
  }

  for (long b = 0; b < nt; b++) {
    const long base = b * TILE;
    const long len = n - base < TILE ? n - base : TILE;
    double sum = 0.0;
    for (long j = 0; j < len; j++) {
      double t = in[base + j] * in[base + j];
      double l = j > 0 ? in[base + j - 1] * in[base + j - 1] : t;
      double r = j < len - 1 ? in[base + j + 1] * in[base + j + 1] : t;
      ref[base + j] = (l + t + r) / 3.0;
      sum += in[base + j] * (1.0 + in[base + j]);
    }
    ref[n + b] = sum;
  }
  gs_check(&a, got, ref, n + nt, 1e-12);
  free(in); free(got); free(ref);
  return 0;
}
