// Generalized eigenvector features (GEM; Karampatziakis & Mineiro): class-conditional second
// moments, top generalized eigenvectors of ordered class pairs, and the nonlinear feature map.
#pragma once

#include <cstdint>
#include <vector>

#include "base/common.hpp"
#include "heads/logistic_f32.hpp"

namespace kl {

// An optional random Fourier map applied to the input rows before GEM:
// z = sqrt(2 / D) cos(x W + b), W d x D, b of length D. The GEM routines below apply it to one
// block of rows at a time, so the n x D matrix of mapped rows is never formed. Inactive (the
// identity) when W is null.
struct InputMap {
  const double* W = nullptr;
  const double* b = nullptr;
  Eigen::Index d = 0, D = 0;
  bool active() const { return W != nullptr; }
  Eigen::Index out_dim(Eigen::Index in_dim) const { return active() ? D : in_dim; }
  // out (xb.rows() x D) = the map of the rows xb.
  void apply(const CMatRef& xb, MatRef out) const;
};

// Class-conditional second moments, not centred: C[m] = (1 / n_m) sum_{i: y_i = m} x_i x_i'
// (full symmetric d x d), and the class means (d x K) and counts. y holds classes 0..K-1.
// Each entry is summed over fixed row chunks and column tiles, so the result does not depend
// on the thread count.
struct ClassMoments {
  std::vector<Mat> second;  // K matrices d x d
  Mat mean;                 // d x K
  IVec count;               // K
};
// With an active `map`, the moments are those of the mapped rows.
ClassMoments class_moments(const CMatRef& x, const IVec& y, int K, int threads,
                           const Callbacks& cb = Callbacks(), const InputMap& map = InputMap());

// Top eigenpairs of a symmetric operator, by block Davidson iterations with an identity
// preconditioner (each expansion block is the residual block, so the basis spans a Krylov
// space) with Rayleigh-Ritz extraction and thick restarts. `apply(X, AX)` sets AX = A X.
// Converged when every wanted Ritz pair has ||A y - theta y|| <= tol * max |theta|.
struct TopEigen {
  Vec values;    // descending
  Mat vectors;   // orthonormal columns
  int applications = 0;  // operator applications (columns)
  bool converged = false;
};
TopEigen top_eigen_block(Eigen::Index d, int k, const std::function<void(const Mat&, Mat&)>& apply,
                         std::uint64_t seed, double tol, Eigen::Index max_applications);

struct GemOptions {
  double ridge = 0.1;      // regularisation of the denominator
  bool relative = true;    // ridge * trace(C_j) / d (true) or ridge (false)
  int top = 30;            // eigenvectors computed per pair
  double threshold = 0.0;  // keep those with eigenvalue >= threshold
  int keep_max = 0;        // and at most this many per pair (0: no cap beyond top)
  int method = 0;          // 0 automatic, 1 dense, 2 iterative
  double tol = 1e-8;       // relative residual tolerance of the iterative solver
  int threads = 1;
  std::uint64_t seed = 1;
};

struct GemPair {
  int num = 0, den = 0;  // classes i (numerator) and j (denominator)
  Vec spectrum;          // the top min(top, d) eigenvalues, descending
  Mat vectors;           // d x kept: v' B_j v = 1 and v' mean_i >= 0
  bool dense = false;    // solved by the dense eigensolver
  int applications = 0;  // operator applications of the iterative solver
};

// For each pair (num[q], den[q]): the top eigenpairs of C_i v = lambda (C_j + r_j I) v, keeping
// those with lambda >= threshold. Throws Error naming the class when C_j + r_j I is not
// positive definite.
std::vector<GemPair> gem_directions(const ClassMoments& M, const std::vector<int>& num,
                                    const std::vector<int>& den, const GemOptions& opt,
                                    const Callbacks& cb = Callbacks());

// Nonlinear map of the projections p = x' V (F columns of V). base 0 ("smooth_sqrt"):
// pos = sqrt(1 + max(p, 0)) - 1, neg = sqrt(1 + max(-p, 0)) - 1; base 1 ("relu_powers"):
// pos = max(p, 0)^(1/2), neg = max(-p, 0)^(1/2). raw = [1 if ones, x if keep_input, pos, neg]
// and the output is [raw, raw^2, ..., raw^degree] (the constant column only once), so
// base 1 gives max(0, +-p)^(alpha / 2) for alpha = 1..degree. Columns:
//   gem_feature_count(d, F, degree, keep_input, ones).
Eigen::Index gem_feature_count(Eigen::Index d, Eigen::Index F, int degree, bool keep_input,
                               bool ones);
// With an active `map`, x holds the unmapped rows and everything else (V's rows, the kept
// input) refers to the mapped ones.
void gem_features(const CMatRef& x, const CMatRef& V, int base, int degree, bool keep_input,
                  bool ones, MatRef out, int threads, const Callbacks& cb = Callbacks(),
                  const InputMap& map = InputMap());

// The same map written as a row-major single-precision matrix (for the large-scale head).
void gem_features_f32(const CMatRef& x, const CMatRef& V, int base, int degree, bool keep_input,
                      bool ones, RowMajorF32& out, int threads, const Callbacks& cb = Callbacks(),
                      const InputMap& map = InputMap());

// Column centring and scaling in place: with compute, center / scale are set to the column
// means and 1 / standard deviations (0 for constant columns) first.
void standardize_columns(MatRef z, Vec& center, Vec& scale, bool compute, int threads);

}  // namespace kl
