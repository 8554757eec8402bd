// The smallest test harness that serves: CHECK records a failure with its location and goes on.
#pragma once

#include <atomic>
#include <cstdio>
#include <sstream>

namespace mpirep_test {

inline std::atomic<int> failures{0};
inline std::atomic<int> checks{0};

#define CHECK(cond, ...)                                                              \
  do {                                                                                \
    ++mpirep_test::checks;                                                            \
    if (!(cond)) {                                                                    \
      ++mpirep_test::failures;                                                        \
      std::ostringstream detail_;                                                     \
      detail_ << "" __VA_ARGS__;                                                      \
      std::fprintf(stderr, "%s:%d: CHECK(%s) failed %s\n", __FILE__, __LINE__, #cond, \
                   detail_.str().c_str());                                            \
    }                                                                                 \
  } while (0)

}  // namespace mpirep_test
