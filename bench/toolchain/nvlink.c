/* A stand-in for CUDA's `nvlink`, built over libnvJitLink (PyPI
 * nvidia-nvjitlink-cu12), so clang-nvlink-wrapper can link sm_90 device code
 * without a full CUDA installation. See bench/README.md "## Toolchain".
 *
 * clang-nvlink-wrapper (LLVM 19) runs it as
 *   nvlink -o OUT -v -arch sm_90 [-L dir]... INPUT...
 * -v, -g and -L/-l are accepted and ignored (the LLVM 19 wrapper resolves
 * archives itself and passes only .cubin files). Each input's kind is detected
 * from its content, not its name: ELF -> CUBIN, fatbin magic -> FATBIN,
 * anything else -> PTX text; LLVM bitcode is rejected (clang already compiled
 * it). A static archive ("!<arch>") is unpacked and every member is added as
 * above (whole-archive: nvJitLink's own LIBRARY input means host libraries
 * and silently dropped the kernels of device archives in a test). The linked cubin is written to OUT. On failure the
 * nvJitLink error log is printed to stderr and the exit status is 1.
 */
#include <errno.h>
#include <nvJitLink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *result_name(nvJitLinkResult r) {
  switch ((int)r) {
  case NVJITLINK_SUCCESS: return "SUCCESS";
  case 1: return "UNRECOGNIZED_OPTION";
  case 2: return "MISSING_ARCH";
  case 3: return "INVALID_INPUT";
  case 4: return "PTX_COMPILE";
  case 5: return "NVVM_COMPILE";
  case 6: return "INTERNAL";
  case 7: return "THREADPOOL";
  case 8: return "UNRECOGNIZED_INPUT";
  case 9: return "FINALIZE";
  default: return "UNKNOWN";
  }
}

static void print_logs(nvJitLinkHandle h, int verbose) {
  size_t n = 0;
  if (nvJitLinkGetErrorLogSize(h, &n) == NVJITLINK_SUCCESS && n > 1) {
    char *log = malloc(n);
    if (log && nvJitLinkGetErrorLog(h, log) == NVJITLINK_SUCCESS)
      fprintf(stderr, "nvlink (nvJitLink) error log:\n%s\n", log);
    free(log);
  }
  if (verbose && nvJitLinkGetInfoLogSize(h, &n) == NVJITLINK_SUCCESS && n > 1) {
    char *log = malloc(n);
    if (log && nvJitLinkGetInfoLog(h, log) == NVJITLINK_SUCCESS)
      fprintf(stderr, "nvlink (nvJitLink) info log:\n%s\n", log);
    free(log);
  }
}

/* Reads a whole file; appends a NUL byte (not counted in *size) so PTX text
 * is a proper C string. */
static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "nvlink: cannot open %s: %s\n", path, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, len = 0;
  unsigned char *buf = malloc(cap + 1);
  for (;;) {
    if (!buf) {
      fprintf(stderr, "nvlink: out of memory reading %s\n", path);
      fclose(f);
      return NULL;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (len < cap) break;
    cap *= 2;
    buf = realloc(buf, cap + 1);
  }
  if (ferror(f)) {
    fprintf(stderr, "nvlink: error reading %s\n", path);
    fclose(f);
    free(buf);
    return NULL;
  }
  fclose(f);
  buf[len] = 0;
  *size = len;
  return buf;
}

static nvJitLinkInputType detect(const unsigned char *d, size_t n,
                                 const char **what) {
  if (n >= 4 && d[0] == 0x7f && d[1] == 'E' && d[2] == 'L' && d[3] == 'F') {
    *what = "cubin";
    return NVJITLINK_INPUT_CUBIN;
  }
  if (n >= 4 && d[0] == 0x50 && d[1] == 0xed && d[2] == 0x55 && d[3] == 0xba) {
    *what = "fatbin";
    return NVJITLINK_INPUT_FATBIN;
  }
  if (n >= 4 && ((d[0] == 'B' && d[1] == 'C' && d[2] == 0xc0 && d[3] == 0xde) ||
                 (d[0] == 0xde && d[1] == 0xc0 && d[2] == 0x17 && d[3] == 0x0b))) {
    *what = "LLVM bitcode";
    return NVJITLINK_INPUT_NONE;
  }
  *what = "ptx";
  return NVJITLINK_INPUT_PTX;
}

static int add_one(nvJitLinkHandle h, const unsigned char *d, size_t n,
                   const char *name, int verbose);

/* Adds every member of a System V / GNU ar archive. */
static int add_archive(nvJitLinkHandle h, const unsigned char *d, size_t n,
                       const char *name, int verbose) {
  const char *names = NULL; /* GNU "//" long-name table */
  size_t names_len = 0, off = 8;
  int added = 0;
  while (off + 60 <= n) {
    const char *hdr = (const char *)d + off;
    char sizebuf[11];
    memcpy(sizebuf, hdr + 48, 10);
    sizebuf[10] = 0;
    size_t size = strtoul(sizebuf, NULL, 10);
    size_t data = off + 60;
    if (data + size > n) {
      fprintf(stderr, "nvlink: %s: truncated archive\n", name);
      return 1;
    }
    char member[512];
    if (hdr[0] == '/' && hdr[1] == '/' && hdr[2] == ' ') {
      names = (const char *)d + data;
      names_len = size;
    } else if (hdr[0] == '/' && (hdr[1] == ' ' || memcmp(hdr, "/SYM64/", 7) == 0)) {
      /* symbol table */
    } else {
      if (hdr[0] == '/' && names) {
        size_t at = strtoul(hdr + 1, NULL, 10), k = 0;
        while (at + k < names_len && names[at + k] != '/' && names[at + k] != '\n' &&
               k + 1 < sizeof member - 64)
          k++;
        memcpy(member, names + (at < names_len ? at : 0), at < names_len ? k : 0);
        member[at < names_len ? k : 0] = 0;
      } else {
        size_t k = 0;
        while (k < 16 && hdr[k] != '/' && hdr[k] != ' ') k++;
        memcpy(member, hdr, k);
        member[k] = 0;
      }
      char full[1100];
      snprintf(full, sizeof full, "%s(%s)", name, member);
      if (add_one(h, d + data, size, full, verbose)) return 1;
      added++;
    }
    off = data + size + (size & 1);
  }
  if (verbose) fprintf(stderr, "nvlink: %s: %d members\n", name, added);
  return 0;
}

/* Adds one input by content; returns non-zero on failure. */
static int add_one(nvJitLinkHandle h, const unsigned char *d, size_t n,
                   const char *name, int verbose) {
  if (n >= 8 && memcmp(d, "!<arch>\n", 8) == 0) {
    if (verbose) fprintf(stderr, "nvlink: unpacking archive %s\n", name);
    return add_archive(h, d, n, name, verbose);
  }
  const char *what;
  nvJitLinkInputType t = detect(d, n, &what);
  if (verbose) fprintf(stderr, "nvlink: adding %s (%s, %zu bytes)\n", name, what, n);
  if (t == NVJITLINK_INPUT_NONE) {
    fprintf(stderr, "nvlink: %s: %s input is not supported\n", name, what);
    return 1;
  }
  nvJitLinkResult r;
  if (t == NVJITLINK_INPUT_PTX) {
    /* nvJitLink wants PTX as a NUL-terminated string. */
    char *ptx = malloc(n + 1);
    if (!ptx) return 1;
    memcpy(ptx, d, n);
    ptx[n] = 0;
    r = nvJitLinkAddData(h, t, ptx, n + 1, name);
    free(ptx);
  } else {
    r = nvJitLinkAddData(h, t, d, n, name);
  }
  if (r != NVJITLINK_SUCCESS) {
    fprintf(stderr, "nvlink: adding %s (%s) failed: %s (%d)\n", name, what,
            result_name(r), (int)r);
    print_logs(h, verbose);
    return 1;
  }
  return 0;
}

static void usage(void) {
  fprintf(stderr,
          "usage: nvlink -o OUT -arch sm_NN [-v] [-g] [-L dir]... INPUT...\n");
}

int main(int argc, char **argv) {
  const char *out = NULL, *arch = NULL;
  int verbose = 0, debug = 0, ninputs = 0;
  const char **inputs = calloc((size_t)argc, sizeof(char *));
  if (!inputs) return 1;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (strncmp(a, "-o", 2) == 0 && a[2]) {
      out = a + 2;
    } else if ((strcmp(a, "-arch") == 0 || strcmp(a, "--arch") == 0) &&
               i + 1 < argc) {
      arch = argv[++i];
    } else if (strncmp(a, "-arch=", 6) == 0) {
      arch = a + 6;
    } else if (strncmp(a, "--arch=", 7) == 0) {
      arch = a + 7;
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
      verbose = 1;
    } else if (strcmp(a, "-g") == 0) {
      debug = 1;
    } else if ((strcmp(a, "-L") == 0 || strcmp(a, "-l") == 0) && i + 1 < argc) {
      i++; /* library search paths and names: the wrapper resolved them */
    } else if (strncmp(a, "-L", 2) == 0 || strncmp(a, "-l", 2) == 0) {
      /* ignored, as above */
    } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
      unsigned maj = 0, min = 0;
      nvJitLinkVersion(&maj, &min);
      printf("nvlink stand-in over nvJitLink %u.%u\n", maj, min);
      return 0;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "nvlink: warning: ignoring unknown option %s\n", a);
    } else {
      inputs[ninputs++] = a;
    }
  }
  if (!out || !arch || ninputs == 0) {
    usage();
    return 2;
  }

  char arch_opt[64];
  snprintf(arch_opt, sizeof arch_opt, "-arch=%s", arch);
  const char *opts[2] = {arch_opt, "-g"};
  nvJitLinkHandle h;
  nvJitLinkResult r = nvJitLinkCreate(&h, debug ? 2 : 1, opts);
  if (r != NVJITLINK_SUCCESS) {
    fprintf(stderr, "nvlink: nvJitLinkCreate(%s) failed: %s (%d)\n", arch_opt,
            result_name(r), (int)r);
    return 1;
  }

  int status = 0;
  for (int i = 0; i < ninputs && status == 0; i++) {
    size_t n = 0;
    unsigned char *d = read_file(inputs[i], &n);
    if (!d) {
      status = 1;
      break;
    }
    status = add_one(h, d, n, inputs[i], verbose);
    free(d);
  }

  if (status == 0) {
    r = nvJitLinkComplete(h);
    if (r != NVJITLINK_SUCCESS) {
      fprintf(stderr, "nvlink: link failed: %s (%d)\n", result_name(r), (int)r);
      print_logs(h, verbose);
      status = 1;
    }
  }

  if (status == 0) {
    size_t n = 0;
    void *cubin = NULL;
    r = nvJitLinkGetLinkedCubinSize(h, &n);
    if (r == NVJITLINK_SUCCESS && (cubin = malloc(n ? n : 1)) != NULL)
      r = nvJitLinkGetLinkedCubin(h, cubin);
    if (r != NVJITLINK_SUCCESS || !cubin) {
      fprintf(stderr, "nvlink: cannot get the linked cubin: %s (%d)\n",
              result_name(r), (int)r);
      status = 1;
    } else {
      FILE *f = fopen(out, "wb");
      if (!f || fwrite(cubin, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "nvlink: cannot write %s: %s\n", out, strerror(errno));
        status = 1;
      } else if (verbose) {
        print_logs(h, 1);
        fprintf(stderr, "nvlink: wrote %s (%zu bytes)\n", out, n);
      }
    }
    free(cubin);
  }

  nvJitLinkDestroy(&h);
  free(inputs);
  return status;
}
