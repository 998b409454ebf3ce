// A small test harness for the core's C++ tests: named test cases registered at static
// initialisation, CHECK macros that report file:line and keep going, and a runner (see
// harness.cpp) that runs all cases or those whose names contain one of the given patterns,
// prints "core tests: N passed, N failed" and exits non-zero when a case failed.
#pragma once

#include <Eigen/Dense>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace ct {

using TestFn = void (*)();

struct Registrar {
  Registrar(const char* name, TestFn fn, const char* file, int line);
};

// Records a failed check of the running test case (message printed with file:line).
void fail(const char* file, int line, const std::string& message);
// Counts a passed check.
void pass();
// A note printed under the running test case (skips and the like).
void note(const std::string& message);

template <class T>
std::string show(const T& v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// expect_equal(got, want, tolerance = tol) of testthat's third edition (waldo's num_equal):
// over the elements that differ, mean |got - want| divided by mean |want| when that mean is
// above tol (else the plain mean), strictly below tol. Sizes must match. `why` receives the
// mean difference (or the size mismatch) when the comparison fails.
bool all_equal(const double* got, const double* want, std::size_t n, double tol, std::string* why);

template <class A, class B>
bool all_equal(const Eigen::MatrixBase<A>& got, const Eigen::MatrixBase<B>& want, double tol,
               std::string* why) {
  if (got.rows() != want.rows() || got.cols() != want.cols()) {
    if (why)
      *why = "dimensions " + show(got.rows()) + " x " + show(got.cols()) + " and " +
             show(want.rows()) + " x " + show(want.cols());
    return false;
  }
  const Eigen::MatrixXd g = got.template cast<double>(), w = want.template cast<double>();
  return all_equal(g.data(), w.data(), static_cast<std::size_t>(g.size()), tol, why);
}

inline bool all_equal(double got, double want, double tol, std::string* why) {
  return all_equal(&got, &want, 1, tol, why);
}

// Bitwise equality of two matrices (expect_identical); `why` receives the first difference.
template <class A, class B>
bool identical(const Eigen::MatrixBase<A>& a, const Eigen::MatrixBase<B>& b, std::string* why) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) {
    if (why) *why = "dimensions differ";
    return false;
  }
  for (Eigen::Index j = 0; j < a.cols(); ++j)
    for (Eigen::Index i = 0; i < a.rows(); ++i)
      if (!(a(i, j) == b(i, j)) && !(std::isnan(double(a(i, j))) && std::isnan(double(b(i, j))))) {
        if (why)
          *why = "first difference at (" + show(i) + ", " + show(j) + "): " + show(a(i, j)) +
                 " vs " + show(b(i, j));
        return false;
      }
  return true;
}

}  // namespace ct

#define CT_CAT2(a, b) a##b
#define CT_CAT(a, b) CT_CAT2(a, b)

// TEST_CASE("name") { ... } defines and registers a test case.
#define TEST_CASE(name)                                                                         \
  static void CT_CAT(ct_case_, __LINE__)();                                                     \
  static ::ct::Registrar CT_CAT(ct_reg_, __LINE__)(name, &CT_CAT(ct_case_, __LINE__), __FILE__, \
                                                   __LINE__);                                   \
  static void CT_CAT(ct_case_, __LINE__)()

#define CHECK(cond)                                                \
  do {                                                             \
    if (cond)                                                      \
      ::ct::pass();                                                \
    else                                                           \
      ::ct::fail(__FILE__, __LINE__, "CHECK(" #cond ") is false"); \
  } while (0)

#define CT_CMP(a, op, b, name)                                                                   \
  do {                                                                                           \
    const auto ct_a = (a);                                                                       \
    const auto ct_b = (b);                                                                       \
    if (ct_a op ct_b)                                                                            \
      ::ct::pass();                                                                              \
    else                                                                                         \
      ::ct::fail(__FILE__, __LINE__,                                                             \
                 name "(" #a ", " #b "): " + ::ct::show(ct_a) + " " #op " " + ::ct::show(ct_b) + \
                     " is false");                                                               \
  } while (0)

#define CHECK_EQ(a, b) CT_CMP(a, ==, b, "CHECK_EQ")
#define CHECK_NE(a, b) CT_CMP(a, !=, b, "CHECK_NE")
#define CHECK_LT(a, b) CT_CMP(a, <, b, "CHECK_LT")
#define CHECK_LE(a, b) CT_CMP(a, <=, b, "CHECK_LE")
#define CHECK_GT(a, b) CT_CMP(a, >, b, "CHECK_GT")
#define CHECK_GE(a, b) CT_CMP(a, >=, b, "CHECK_GE")

// expect_equal(got, want, tolerance = tol): numbers or Eigen matrices / vectors.
#define CHECK_EQUAL(got, want, tol)                                                            \
  do {                                                                                         \
    std::string ct_why;                                                                        \
    if (::ct::all_equal((got), (want), (tol), &ct_why))                                        \
      ::ct::pass();                                                                            \
    else                                                                                       \
      ::ct::fail(__FILE__, __LINE__, "CHECK_EQUAL(" #got ", " #want ", " #tol "): " + ct_why); \
  } while (0)

// expect_identical for Eigen matrices / vectors.
#define CHECK_IDENTICAL(a, b)                                                       \
  do {                                                                              \
    std::string ct_why;                                                             \
    if (::ct::identical((a), (b), &ct_why))                                         \
      ::ct::pass();                                                                 \
    else                                                                            \
      ::ct::fail(__FILE__, __LINE__, "CHECK_IDENTICAL(" #a ", " #b "): " + ct_why); \
  } while (0)

// The expression throws an exception of type `type` whose what() contains `text`.
#define CHECK_THROWS(expr, type, text)                                           \
  do {                                                                           \
    bool ct_ok = false;                                                          \
    std::string ct_msg = "no exception";                                         \
    try {                                                                        \
      (void)(expr);                                                              \
    } catch (const type& e) {                                                    \
      ct_msg = e.what();                                                         \
      ct_ok = ct_msg.find(text) != std::string::npos;                            \
    } catch (const std::exception& e) {                                          \
      ct_msg = std::string("another exception: ") + e.what();                    \
    }                                                                            \
    if (ct_ok)                                                                   \
      ::ct::pass();                                                              \
    else                                                                         \
      ::ct::fail(__FILE__, __LINE__,                                             \
                 "CHECK_THROWS(" #expr ", " #type ", \"" text "\"): " + ct_msg); \
  } while (0)
