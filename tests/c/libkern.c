/* A shared library with its own offload kernel (registers its own image). */
#include <stdint.h>

void lib_loop(uint64_t *v, int n) {
#pragma omp target teams distribute parallel for map(tofrom : v[0:n])
  for (int i = 0; i < n; i++) v[i] = v[i] * 7 + (uint64_t)i;
}
