// Shared pieces of the core's C++ tests: random matrices from the core's engine, the error
// measures the tests use, central differences, and plain-loop reference computations that do
// not share code with the routines they check.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/common.hpp"
#include "base/rng.hpp"
#include "heads/logistic_f32.hpp"
#include "kernels/hierarchical.hpp"

namespace ct {

constexpr double kPi = 3.14159265358979323846;

// The seed the R glue makes of two integers (a, b): (a << 32) | b.
std::uint64_t seed2(std::uint32_t a, std::uint32_t b);

// n x m matrices of independent draws.
kl::Mat runif(kl::Rng& rng, Eigen::Index n, Eigen::Index m, double lo = 0.0, double hi = 1.0);
kl::Mat rnorm(kl::Rng& rng, Eigen::Index n, Eigen::Index m, double mean = 0.0, double sd = 1.0);
kl::Vec runif_vec(kl::Rng& rng, Eigen::Index n, double lo = 0.0, double hi = 1.0);
kl::Vec rnorm_vec(kl::Rng& rng, Eigen::Index n, double mean = 0.0, double sd = 1.0);

// A vector read column-major as an r x c matrix.
inline kl::Mat reshape(const kl::Vec& v, Eigen::Index r, Eigen::Index c) {
  return Eigen::Map<const kl::Mat>(v.data(), r, c);
}

// max |a - b| / max |b|.
double rel_err(const kl::CMatRef& a, const kl::CMatRef& b);
double max_abs(const kl::CMatRef& a);

// Central differences (f(v + h e_i) - f(v - h e_i)) / (2 h) over every entry of v (a matrix
// read column-major), shaped like v.
kl::Mat central_diff(const std::function<double(const kl::Mat&)>& f, const kl::Mat& v,
                     double h = 1e-5);

// A B' and A' B by plain loops.
kl::Mat naive_nt(const kl::CMatRef& A, const kl::CMatRef& B);
kl::Mat naive_tn(const kl::CMatRef& A, const kl::CMatRef& B);

// A'A, exactly symmetric (the lower triangle mirrored), as R's crossprod() gives it.
kl::Mat crossprod(const kl::CMatRef& A);

// The eigenvalues of a symmetric matrix, in decreasing order.
kl::Vec sym_eigenvalues(const kl::Mat& S);

// Eigen's own thread count set for a scope (as the R glue sets it around core calls).
class EigenThreads {
 public:
  explicit EigenThreads(int n);
  ~EigenThreads();
  EigenThreads(const EigenThreads&) = delete;
  EigenThreads& operator=(const EigenThreads&) = delete;

 private:
  int old_;
};

// X rounded to single precision, row-major (the design the large-scale heads hold).
kl::RowMajorF32 to_single(const kl::CMatRef& X);

// Wall-clock seconds of f().
double seconds(const std::function<void()>& f);

// A hierarchical Gaussian kernel as hierarchical_gaussian_kernel() in R builds it: a leaf on
// the first weights.size() columns, or nodes that are each either a set of columns (1-based,
// as in R) with their weights or a subtree, with node weights and a width gamma.
struct HTree {
  std::vector<double> weights;  // depth 1: one weight per column
  struct Node {
    std::vector<int> cols;  // 1-based columns (empty for a subtree)
    std::vector<double> weights;
    std::shared_ptr<HTree> sub;
  };
  std::vector<Node> nodes;  // empty at depth 1
  std::vector<double> node_weights;
  double gamma = 1.0;

  static HTree leaf(std::vector<double> w, double gamma = 1.0);
  // The core's node list (post-order, 0-based members), as .hgk_flatten() in R makes it.
  std::vector<kl::HgkNode> flatten() const;
  // The largest column used.
  int cols() const;
  // Every weight in the core's parameter order (.hgk_params() in R), and back.
  std::vector<double> params() const;
  void set_params(const std::vector<double>& p);
  // k(x, z) by plain recursion over the tree (the independent evaluation of the R tests).
  double value(const double* x, std::ptrdiff_t incx, const double* z, std::ptrdiff_t incz) const;
  // The Gram matrix by value().
  kl::Mat gram(const kl::CMatRef& X, const kl::CMatRef& Z) const;
  // The core's kernel on d input columns (d < 0: cols()).
  kl::KernelPtr kernel(int d = -1) const;

 private:
  void flatten_into(std::vector<kl::HgkNode>& out, int* index) const;
  void collect(std::vector<double>& out) const;
  void assign(const std::vector<double>& p, std::size_t& pos);
};

}  // namespace ct
