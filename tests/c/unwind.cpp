/* Calls each libomptarget entry point of tests/c/throwing_omptarget.cpp,
 * which it is linked against, inside try/catch. Under gridsel the calls go
 * through gridsel's exports, which must let the exception pass. Prints one
 * "caught <what>" line per entry point and exits 0. */
#include <cstdint>
#include <cstdio>
#include <stdexcept>

extern "C" void __tgt_register_lib(void *);
extern "C" void __tgt_unregister_lib(void *);
extern "C" int __tgt_target_kernel(void *, int64_t, int32_t, int32_t, void *, void *);

template <typename Call> static void expect_throw(Call call) {
  try {
    call();
    std::printf("returned\n");
  } catch (const std::runtime_error &e) {
    std::printf("caught %s\n", e.what());
  }
}

int main() {
  expect_throw([] { __tgt_register_lib(nullptr); });
  expect_throw([] { __tgt_target_kernel(nullptr, -1, 0, 0, nullptr, nullptr); });
  expect_throw([] { __tgt_unregister_lib(nullptr); });
  return 0;
}
