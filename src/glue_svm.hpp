// Glue shared by the learners whose final model is a kernel SVM (src/glue_svm.cpp, src/glue_tkl.cpp): the
// R list of fitted machines that R/kernel_svm.R turns into a kernel_svm model.
#pragma once

#include <vector>

#include "glue.hpp"
#include "core/machines/svm.hpp"

namespace klr {

// Class labels from R (1..k) as the solver's 0-based vector (klr::labels_from_r).
inline std::vector<int> svm_labels_from_r(const Rcpp::IntegerVector& y) {
  const kl::IVec l = labels_from_r(y);
  return std::vector<int>(l.data(), l.data() + l.size());
}

// The SVM options of R/kernel_svm.R (.svm_params) with a thread count.
kl::SvmParams svm_params_from_r(const Rcpp::List& p, int threads);
// One-vs-one machines on rows with classes y (0..k-1): support vector rows (1-based, by class),
// their count per class, the coefficient matrix, and per pair rho, objective, iterations,
// convergence, kernel rows and Platt parameters.
Rcpp::List classify_result(const std::vector<kl::BinaryMachine>& m, const std::vector<int>& y,
                           int k);
// One regression machine.
Rcpp::List regress_result(const kl::BinaryMachine& m);

}  // namespace klr
