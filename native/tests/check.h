// The test harness of native/tests, as small as serves:
//   TEST(Suite, Name) { ... }  defines a test and registers it with its suite, in the order of
//                              its file; main.cc runs them (all, or the suites asked for) and
//                              reports each test.
//   CHECK(cond, << detail)     records a failure with its location and goes on. Any thread may
//                              check: a test's threads (OnRanks) count towards that test.
#pragma once

#include <atomic>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace mpirep_test {

inline std::atomic<int> failures{0};
inline std::atomic<int> checks{0};
// "Suite.Name" of the test that runs now (main.cc sets it).
inline std::string current_test;

struct TestCase {
  const char* suite;
  const char* name;
  void (*body)();
};

// Every registered test, in the order of registration (per file, the order of definition).
inline std::vector<TestCase>& Registry() {
  static std::vector<TestCase> tests;
  return tests;
}

struct Registration {
  Registration(const char* suite, const char* name, void (*body)()) { Registry().push_back({suite, name, body}); }
};

#define TEST(Suite, Name)                                                                      \
  static void Suite##_##Name##_Test();                                                         \
  static const ::mpirep_test::Registration Suite##_##Name##_registration(#Suite, #Name,        \
                                                                         Suite##_##Name##_Test); \
  static void Suite##_##Name##_Test()

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
