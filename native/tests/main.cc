// Runs the unit tests of native/core (check.h), without MPI:
//   core_tests                 every test
//   core_tests SUITE|SUITE.TEST ...   those suites and tests only
//   core_tests --list          the tests, one SUITE.TEST a line
// One line per test as it ends, and a summary. Exit status 0 only if every check passed; 2 when
// an argument matches no test.
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "check.h"

namespace {

std::string FullName(const mpirep_test::TestCase& test) { return std::string(test.suite) + "." + test.name; }

bool Selected(const mpirep_test::TestCase& test, const std::vector<std::string>& patterns) {
  if (patterns.empty()) return true;
  for (const std::string& pattern : patterns) {
    if (pattern == test.suite || pattern == FullName(test)) return true;
  }
  return false;
}

// Runs `test`; true when every check it made passed and it threw nothing.
bool Run(const mpirep_test::TestCase& test) {
  const int checks_before = mpirep_test::checks, failures_before = mpirep_test::failures;
  const auto started = std::chrono::steady_clock::now();
  std::string thrown;
  mpirep_test::current_test = FullName(test);
  try {
    test.body();
  } catch (const std::exception& e) {
    thrown = e.what();
  } catch (...) {
    thrown = "an exception that is not a std::exception";
  }
  const long ms = static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
  const int checks = mpirep_test::checks - checks_before, failed = mpirep_test::failures - failures_before;
  if (!thrown.empty()) {
    std::printf("FAILED %s: threw %s (%d checks before, %ld ms)\n", FullName(test).c_str(), thrown.c_str(), checks,
                ms);
  } else if (failed > 0) {
    std::printf("FAILED %s: %d of %d checks failed (%ld ms)\n", FullName(test).c_str(), failed, checks, ms);
  } else {
    std::printf("ok     %s: %d checks (%ld ms)\n", FullName(test).c_str(), checks, ms);
  }
  std::fflush(stdout);
  return thrown.empty() && failed == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto& tests = mpirep_test::Registry();
  std::vector<std::string> patterns(argv + 1, argv + argc);
  if (patterns.size() == 1 && patterns[0] == "--list") {
    for (const auto& test : tests) std::printf("%s\n", FullName(test).c_str());
    return 0;
  }
  for (const std::string& pattern : patterns) {
    bool matched = false;
    for (const auto& test : tests) matched = matched || Selected(test, {pattern});
    if (!matched) {
      std::fprintf(stderr, "no test matches '%s' (--list lists them)\n", pattern.c_str());
      return 2;
    }
  }
  int ran = 0, failed = 0;
  for (const auto& test : tests) {
    if (!Selected(test, patterns)) continue;
    ++ran;
    if (!Run(test)) ++failed;
  }
  std::printf("%d tests, %d checks: %d tests failed\n", ran, mpirep_test::checks.load(), failed);
  return failed == 0 ? 0 : 1;
}
