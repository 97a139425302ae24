/* Calls libomptarget's entry points by hand with inputs gridsel must survive.
 *
 *   rawcall nosym    built WITHOUT libomptarget: the weak __tgt_target_kernel
 *                    resolves only to gridsel's (LD_PRELOAD), which has no
 *                    real function to forward to
 *   rawcall version9 KernelArgs with Version 9 through the real libomptarget
 *   rawcall corrupt  __tgt_register_lib with a 100-byte garbage image */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  void *addr;
  char *name;
  size_t size;
  int32_t flags;
  int32_t data;
} entry_t;
typedef struct {
  void *start, *end;
  entry_t *entries_begin, *entries_end;
} image_t;
typedef struct {
  int32_t num_images;
  image_t *images;
  entry_t *host_begin, *host_end;
} bin_desc_t;
typedef struct {
  uint32_t version, num_args;
  void *ptrs[6];
  uint64_t tripcount, flags;
  uint32_t num_teams[3], thread_limit[3], dyn_cgroup_mem;
} kernel_args_t;

int __tgt_target_kernel(void *, int64_t, int32_t, int32_t, void *, kernel_args_t *) __attribute__((weak));
void __tgt_register_lib(bin_desc_t *) __attribute__((weak));
void __tgt_unregister_lib(bin_desc_t *) __attribute__((weak));

static char fake_kernel;
static unsigned char image[100];
static entry_t entries[1] = {{&fake_kernel, "fake_kernel_l1", 0, 0, 0}};
static image_t img = {image, image + sizeof image, entries, entries + 1};
static bin_desc_t desc = {1, &img, entries, entries + 1};

/* A descriptor whose one image is 100 bytes of garbage. */
static bin_desc_t *garbage_desc(void) {
  uint32_t x = 12345;
  for (int i = 0; i < 100; i++) {
    x = x * 1103515245u + 12345u;
    image[i] = (unsigned char)(x >> 16);
  }
  image[0] = 0x42; /* neither ELF, OffloadBinary nor bitcode magic */
  return &desc;
}

static int launch(uint32_t version) {
  kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.version = version;
  args.tripcount = 1000;
  return __tgt_target_kernel(NULL, -1, 0, 0, &fake_kernel, &args);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!__tgt_target_kernel || !__tgt_register_lib) {
    printf("no __tgt_target_kernel\n");
    return 3;
  }
  if (strcmp(mode, "nosym") == 0) {
    int rc = launch(3);
    printf("nosym: rc %s\n", rc == 0 ? "zero" : "nonzero");
    return 0;
  }
  if (strcmp(mode, "version9") == 0) {
    /* libomptarget 19 needs a registered library before any launch. */
    __tgt_register_lib(garbage_desc());
    int rc = launch(9);
    printf("version9: rc %s\n", rc == 0 ? "zero" : "nonzero");
    __tgt_unregister_lib(&desc);
    return 0;
  }
  if (strcmp(mode, "corrupt") == 0) {
    __tgt_register_lib(garbage_desc());
    __tgt_unregister_lib(&desc);
    printf("corrupt: registered and unregistered\n");
    return 0;
  }
  return 2;
}
