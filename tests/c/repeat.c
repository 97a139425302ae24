/* One open loop launched many times with the same trip count (tune's case).
 *   repeat LAUNCHES N [ROUNDS [ODD_ROUNDS [nowait]]]   prints the checksum, which does not
 *   depend on the grid; ROUNDS (default 1) times the work of each iteration,
 *   ODD_ROUNDS (default ROUNDS) that of the odd-numbered launches (1, 3, ...
 *   from 0), which a tuning session's alternating runs give the learned grid;
 *   `nowait`: each launch is a `nowait` region, waited for by a taskwait */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 4096
static uint64_t v[MAXN];

static void step(int n, int rounds) {
#pragma omp target teams distribute parallel for map(tofrom : v[0:n])
  for (int i = 0; i < n; i++) for (int k = 0; k < rounds; k++) v[i] = v[i] * 3 + (uint64_t)i;
}

static void step_nowait(int n, int rounds) {
#pragma omp target teams distribute parallel for map(tofrom : v[0:n]) nowait
  for (int i = 0; i < n; i++) for (int k = 0; k < rounds; k++) v[i] = v[i] * 3 + (uint64_t)i;
#pragma omp taskwait
}

int main(int argc, char **argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 100;
  int n = argc > 2 ? atoi(argv[2]) : 1000;
  int rounds = argc > 3 ? atoi(argv[3]) : 1;
  int odd_rounds = argc > 4 ? atoi(argv[4]) : rounds;
  int nowait = argc > 5 && strcmp(argv[5], "nowait") == 0;
  if (n < 1 || n > MAXN || rounds < 1 || odd_rounds < 1) return 2;
  for (int r = 0; r < launches; r++) (nowait ? step_nowait : step)(n, r % 2 == 1 ? odd_rounds : rounds);
  uint64_t s = 0;
  for (int i = 0; i < n; i++) s = s * 31 + v[i];
  printf("repeat %d x %d: %llu\n", launches, n, (unsigned long long)s);
  return 0;
}
