/* A stand-in libomptarget whose entry points throw a C++ exception, as a
 * runtime written in C++ may; the exception must pass through gridsel to the
 * program that called the entry point (tests/c/unwind.cpp). */
#include <cstdint>
#include <stdexcept>

extern "C" void __tgt_register_lib(void *) { throw std::runtime_error("from __tgt_register_lib"); }

extern "C" void __tgt_unregister_lib(void *) { throw std::runtime_error("from __tgt_unregister_lib"); }

extern "C" int __tgt_target_kernel(void *, int64_t, int32_t, int32_t, void *, void *) {
  throw std::runtime_error("from __tgt_target_kernel");
}
