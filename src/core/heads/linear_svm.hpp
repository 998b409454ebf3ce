// Linear SVM on explicit features by dual coordinate descent (Hsieh et al., 2008).
//
// Binary problem with labels s_i in {-1, +1} and augmented rows z_i = (x_i, bias):
//   primal  min_w  0.5 ||w||^2 + sum_i C_i * loss(1 - s_i w'z_i)
//   loss = "l1": max(0, t) (hinge);  "l2": max(0, t)^2 (squared hinge)
//   dual    max_a  sum_i a_i - 0.5 ||sum_i a_i s_i z_i||^2 - 0.5 sum_i D_i a_i^2,
//           0 <= a_i <= U_i, with U_i = C_i, D_i = 0 (l1) or U_i = inf, D_i = 1 / (2 C_i) (l2).
// The bias weight is regularised like the others (as in LIBLINEAR); bias <= 0 drops it.
// C_i = cost * class_weight[class of i]. K = 2 classes give one weight vector with the second
// class (index 1) as +1; K > 2 classes are fitted one-vs-rest, one weight vector per class.
#pragma once

#include <vector>

#include "base/common.hpp"
#include "base/rng.hpp"

namespace kl {

enum class SvmLoss { l1, l2 };

struct LinearSvmOptions {
  SvmLoss loss = SvmLoss::l2;
  double cost = 1.0;
  double bias = 1.0;      // value of the constant feature; <= 0 means no bias term
  double eps = 0.1;       // stop when the projected-gradient gap is at most eps
  int max_iter = 1000;    // epochs over the data per binary problem
  bool shrinking = true;
};

struct LinearSvmFit {
  Mat W;           // p x 1 (K = 2) or p x K
  Vec b;           // intercepts, bias * (weight of the constant feature); 0 without a bias
  IVec iterations; // epochs used per binary problem
  std::vector<bool> converged;
  Vec primal;      // primal objective per binary problem
  Vec dual;        // dual objective (maximisation form) per binary problem; primal >= dual
};

// y holds class indices 0..K-1 (K >= 2); class_weights is empty (all 1) or has K positive
// entries. Each binary problem gets its own stream split from rng, in class order. Calls
// cb.check() once per epoch.
LinearSvmFit linear_svm_fit(const CMatRef& x, const IVec& y, int K, const Vec& class_weights,
                            const LinearSvmOptions& opt, Rng& rng,
                            const Callbacks& cb = Callbacks());

// Decision values x W + b (n x columns of W).
Mat linear_svm_decision(const CMatRef& x, const CMatRef& W, const CVecRef& b);

// Classes 0..K-1: with one column, 1 where the decision value is > 0 and 0 otherwise; with
// several columns, the column of the largest decision value (ties to the lower index).
IVec linear_svm_predict(const CMatRef& x, const CMatRef& W, const CVecRef& b);

}  // namespace kl
