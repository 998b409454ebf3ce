// Probabilities and one-vs-one bookkeeping of the SVM models.
#pragma once

#include <vector>

#include "base/common.hpp"
#include "backend/expansion.hpp"
#include "machines/types.hpp"

namespace kl {

// Platt scaling fit (Lin, Lin & Weng 2007): A, B minimising the regularised cross-entropy
// of P(y = +1 | f) = 1 / (1 + exp(A f + B)).
void platt_fit(const std::vector<double>& f, const std::vector<signed char>& y, double* A,
               double* B);

// Pairwise coupling (Wu, Lin & Weng 2004, second method). r: k x k, r(i, j) = P(i | i or j).
Vec pairwise_coupling(const Mat& r);

// The one-vs-one machines of a compact model: support vectors ordered by class (nsv[c] of
// class c), coef (nSV x (k - 1)) holding for a support vector of class c its coefficient in
// the pair with class o in column o (o < c) or o - 1 (o > c), as LIBSVM stores them.
std::vector<SparseMachine> ovo_machines(CMatRef coef, const std::vector<int>& nsv,
                                        CVecRef rho);

// One-vs-one votes -> class (0-based); ties go to the lower class. dec columns are the pairs
// (0,1), (0,2), ..., positive meaning the second class.
std::vector<int> ovo_vote(CMatRef dec, int k);

// Class probabilities (m x k) from pairwise decision values and Platt parameters.
Mat ovo_probabilities(CMatRef dec, int k, CVecRef A, CVecRef B);

// The compact form of one-vs-one machines fitted on rows with classes y (0..k-1): support
// vector rows (by class, then row), their count per class, and the coefficient matrix.
void compact_ovo(const std::vector<BinaryMachine>& m, const std::vector<int>& y, int k,
                 std::vector<int>* sv_rows, std::vector<int>* nsv, Mat* coef);

}  // namespace kl
