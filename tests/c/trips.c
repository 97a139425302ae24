/* One open loop launched at several trip counts, each many times: tune's
 * cache under concurrent processes.
 *   trips LAUNCHES FIRST COUNT   for n in FIRST..FIRST+COUNT-1, LAUNCHES
 *                                launches of n iterations
 * Prints a checksum (which does not depend on the grids) on stdout and the
 * longest launch on stderr: `trips: longest launch <us> us`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAXN 65536
static uint64_t v[MAXN];

static void step(int n) {
#pragma omp target teams distribute parallel for map(tofrom : v[0:n])
  for (int i = 0; i < n; i++) v[i] = v[i] * 3 + (uint64_t)i;
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  int launches = atoi(argv[1]), first = atoi(argv[2]), count = atoi(argv[3]);
  if (launches < 1 || first < 1 || count < 1 || first + count - 1 > MAXN) return 2;
  double longest = 0;
  for (int n = first; n < first + count; n++) {
    for (int r = 0; r < launches; r++) {
      double start = now_us();
      step(n);
      double took = now_us() - start;
      /* The first launch loads the offload image. */
      if (took > longest && !(n == first && r == 0)) longest = took;
    }
  }
  uint64_t s = 0;
  for (int i = 0; i < first + count - 1; i++) s = s * 31 + v[i];
  printf("trips %d x %d..%d: %llu\n", launches, first, first + count - 1, (unsigned long long)s);
  fprintf(stderr, "trips: longest launch %.0f us\n", longest);
  return 0;
}
