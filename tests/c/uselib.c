/* An executable with a kernel of its own that also calls libkern's. */
#include <stdint.h>
#include <stdio.h>

void lib_loop(uint64_t *v, int n);

static void exe_loop(uint64_t *v, int n) {
#pragma omp target teams distribute parallel for map(tofrom : v[0:n])
  for (int i = 0; i < n; i++) v[i] = v[i] * 3 + 1;
}

int main(void) {
  enum { N = 1000 };
  static uint64_t v[N];
  exe_loop(v, N);
  lib_loop(v, N);
  uint64_t s = 0;
  for (int i = 0; i < N; i++) s = s * 31 + v[i];
  printf("uselib: %llu\n", (unsigned long long)s);
  return 0;
}
