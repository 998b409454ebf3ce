// The runner of the core's C++ tests (see harness.hpp).
//
//   core_tests                 run every test case
//   core_tests PATTERN...      run the cases whose names contain one of the patterns
//   core_tests --list          list the cases
#include "harness.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>

namespace ct {

namespace {

struct Case {
  const char* name;
  TestFn fn;
  const char* file;
  int line;
};

std::vector<Case>& registry() {
  static std::vector<Case> cases;
  return cases;
}

long checks_passed = 0, checks_failed = 0;
bool case_failed = false;

}  // namespace

Registrar::Registrar(const char* name, TestFn fn, const char* file, int line) {
  registry().push_back({name, fn, file, line});
}

void fail(const char* file, int line, const std::string& message) {
  ++checks_failed;
  case_failed = true;
  std::cout << "  " << file << ":" << line << ": " << message << std::endl;
}

void pass() { ++checks_passed; }

void note(const std::string& message) { std::cout << "  note: " << message << std::endl; }

bool all_equal(const double* got, const double* want, std::size_t n, double tol, std::string* why) {
  double sum_diff = 0.0, sum_want = 0.0;
  std::size_t m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool na_g = std::isnan(got[i]), na_w = std::isnan(want[i]);
    if (na_g != na_w) {
      if (why) *why = "NaN at element " + show(i);
      return false;
    }
    if (na_g || got[i] == want[i]) continue;
    sum_diff += std::fabs(got[i] - want[i]);
    sum_want += std::fabs(want[i]);
    ++m;
  }
  if (m == 0) return true;
  double avg_diff = sum_diff / static_cast<double>(m);
  const double avg_want = sum_want / static_cast<double>(m);
  const bool relative = std::isfinite(avg_want) && avg_want > tol;
  if (relative) avg_diff /= avg_want;
  if (avg_diff < tol) return true;
  if (why)
    *why = std::string("mean ") + (relative ? "relative" : "absolute") + " difference " +
           show(avg_diff) + " over " + show(m) + " differing element(s), not below " + show(tol);
  return false;
}

}  // namespace ct

int main(int argc, char** argv) {
  std::vector<std::string> patterns;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--list") {
      for (const auto& c : ct::registry()) std::cout << c.name << "\n";
      return 0;
    }
    if (a == "--help" || a == "-h") {
      std::cout << "usage: " << argv[0] << " [--list] [PATTERN...]\n"
                << "Runs the test cases whose names contain one of the patterns (all without "
                   "patterns).\n";
      return 0;
    }
    if (!a.empty() && a[0] == '-') {
      std::cerr << "unknown option " << a << " (see --help)\n";
      return 2;
    }
    patterns.push_back(a);
  }
  int passed = 0, failed = 0;
  const auto t_all = std::chrono::steady_clock::now();
  for (const auto& c : ct::registry()) {
    bool wanted = patterns.empty();
    for (const auto& p : patterns)
      if (std::strstr(c.name, p.c_str())) wanted = true;
    if (!wanted) continue;
    ct::case_failed = false;
    std::cout << "[ RUN  ] " << c.name << std::endl;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      c.fn();
    } catch (const std::exception& e) {
      ct::fail(c.file, c.line, std::string("uncaught exception: ") + e.what());
    } catch (...) {
      ct::fail(c.file, c.line, "uncaught exception of unknown type");
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%.2f s)", secs);
    std::cout << (ct::case_failed ? "[ FAIL ] " : "[  OK  ] ") << c.name << buf << std::endl;
    (ct::case_failed ? failed : passed) += 1;
  }
  if (passed + failed == 0 && !patterns.empty()) {
    std::cerr << "no test case matches the patterns given\n";
    return 2;
  }
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  std::printf("%ld checks passed, %ld failed, in %.1f s\n", ct::checks_passed, ct::checks_failed,
              total);
  std::printf("core tests: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
