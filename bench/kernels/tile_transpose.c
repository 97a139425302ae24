/* tile_transpose: a blocked matrix transpose as CPU-first codes port it: one
 * iteration per 32 x 32 tile (collapse(2) over tile rows and columns, trip
 * count (N/32)^2: 65 536 tiles at N = 8192), each iteration a sequential
 * 32 x 32 loop, so the per-iteration work is small but not trivial.
 *   tp_tile:     out[j][i] = in[i][j] over the tile, double, row by row
 *   tp_tile_buf: the same through a per-thread double[32][32] buffer (8 KB
 *                of stack): read the tile's rows, write its columns
 *   tp_tile_f32: tp_tile in float
 * Checked exactly (copies). N is the edge, a multiple of 32 (4096, 8192,
 * 16384); memory 4 N^2 doubles and 2 N^2 floats (10.7 GB at N = 16384).
 * Pattern: small tiled kernel, one tile per iteration. */
#include "common.h"

#define TILE 32

static void tp_tile(long n, const double *in, double *out) {
  const long nb = n / TILE, t = n * n;
#pragma omp target teams distribute parallel for collapse(2) map(to : in[0:t]) \
    map(tofrom : out[0:t])
  for (long bi = 0; bi < nb; bi++)
    for (long bj = 0; bj < nb; bj++)
      for (int i = 0; i < TILE; i++)
        for (int j = 0; j < TILE; j++)
          out[(bj * TILE + j) * n + bi * TILE + i] = in[(bi * TILE + i) * n + bj * TILE + j];
}

static void tp_tile_buf(long n, const double *in, double *out) {
  const long nb = n / TILE, t = n * n;
#pragma omp target teams distribute parallel for collapse(2) map(to : in[0:t]) \
    map(tofrom : out[0:t])
  for (long bi = 0; bi < nb; bi++)
    for (long bj = 0; bj < nb; bj++) {
      double buf[TILE][TILE];
      for (int i = 0; i < TILE; i++)
        for (int j = 0; j < TILE; j++) buf[i][j] = in[(bi * TILE + i) * n + bj * TILE + j];
      for (int j = 0; j < TILE; j++)
        for (int i = 0; i < TILE; i++) out[(bj * TILE + j) * n + bi * TILE + i] = buf[i][j];
    }
}

static void tp_tile_f32(long n, const float *in, float *out) {
  const long nb = n / TILE, t = n * n;
#pragma omp target teams distribute parallel for collapse(2) map(to : in[0:t]) \
    map(tofrom : out[0:t])
  for (long bi = 0; bi < nb; bi++)
    for (long bj = 0; bj < nb; bj++)
      for (int i = 0; i < TILE; i++)
        for (int j = 0; j < TILE; j++)
          out[(bj * TILE + j) * n + bi * TILE + i] = in[(bi * TILE + i) * n + bj * TILE + j];
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "tile_transpose", 8192);
  const long n = a.n < TILE ? TILE : a.n / TILE * TILE, t = n * n;
  double *in = malloc(sizeof(double) * t), *o1 = calloc((size_t)t, sizeof(double));
  double *o2 = calloc((size_t)t, sizeof(double));
  float *fin = malloc(sizeof(float) * t), *fo = calloc((size_t)t, sizeof(float));
  unsigned long st = 31;
  for (long p = 0; p < t; p++) in[p] = gs_rand(&st), fin[p] = (float)in[p];

#pragma omp target data map(to : in[0:t], fin[0:t]) map(tofrom : o1[0:t], o2[0:t], fo[0:t])
  {
    GS_TIME(a, "tp_tile", { tp_tile(n, in, o1); });
    GS_TIME(a, "tp_tile_buf", { tp_tile_buf(n, in, o2); });
    GS_TIME(a, "tp_tile_f32", { tp_tile_f32(n, fin, fo); });
  }

  long bad = -1;
#pragma omp parallel for reduction(max : bad)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      if (o1[j * n + i] != in[i * n + j] || o2[j * n + i] != in[i * n + j] ||
          fo[j * n + i] != fin[i * n + j])
        bad = i * n + j > bad ? i * n + j : bad;
  if (bad >= 0) {
    printf("gridsel-bench: prog=%s n=%ld check=FAIL transpose differs at %ld\n", a.prog, a.n, bad);
    return 1;
  }
  printf("gridsel-bench: prog=%s n=%ld check=pass max_err=0\n", a.prog, a.n);
  free(in); free(o1); free(o2); free(fin); free(fo);
  return 0;
}
