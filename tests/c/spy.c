/* Preloaded after gridsel (LD_PRELOAD="libgridsel.so libspy.so"): gridsel's
 * dlsym(RTLD_NEXT) finds this function, which prints exactly what gridsel
 * forwards (call arguments and, for KernelArgs v2+, the struct's grid and
 * flags) and
 * then calls libomptarget. Works with runtimes that print no INFO line. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef int (*target_kernel_fn)(void *, int64_t, int32_t, int32_t, void *, void *);

int __tgt_target_kernel(void *loc, int64_t dev, int32_t teams, int32_t limit, void *host_ptr, void *args) {
  const unsigned char *p = args;
  uint32_t version = *(const uint32_t *)p;
  uint64_t trip = *(const uint64_t *)(p + 56);
  long long st = -1, sl = -1;
  if (version >= 2) {
    st = *(const uint32_t *)(p + 72);
    sl = *(const uint32_t *)(p + 84);
  }
  fprintf(stderr, "spy: version %u trip %llu teams %d limit %d struct %lld %lld\n", version,
          (unsigned long long)trip, teams, limit, st, sl);
  /* The flags on a line of their own, so that "spy: " lines keep six numbers. */
  if (version >= 2) fprintf(stderr, "spy flags: %llu\n", (unsigned long long)*(const uint64_t *)(p + 64));
  target_kernel_fn real = (target_kernel_fn)dlsym(RTLD_NEXT, "__tgt_target_kernel");
  if (!real) return -1;
  return real(loc, dev, teams, limit, host_ptr, args);
}
