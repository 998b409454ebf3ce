// Calibrated least squares (Agarwal, Kakade, Karampatziakis, Song and Valiant, 2014): a
// multiclass linear classifier fitted by a sequence of least-squares steps, each preceded by a
// learned link (a polynomial calibration of the current scores projected onto the simplex).
//
// With F the n x (p + 1) design (the features and a constant column), Y the one-hot labels and
// A = F'F / 2 + lambda sqrt(n) I (factored once):
//   W0 = A^-1 F'Y,  S = F W0;
//   for t = 1, 2, ...:
//     E = [S, S^2 / 2, S^3 / 6, S^4 / 24] (elementwise, n x 4K),
//     C_t = (E'E + sqrt(n) I)^-1 E'Y,
//     P = rows of E C_t projected onto the probability simplex,
//     D_t = A^-1 F'(Y - P),
//     S_new = P + F D_t,
//   until the root-mean-square change of S is below tol, or max_iter steps.
// New rows replay the same sequence with the stored W0, C_t and D_t.
#pragma once

#include <limits>
#include <vector>

#include "base/common.hpp"
#include "heads/logistic_f32.hpp"
#include "linalg/simd.hpp"

namespace kl {

class Backend;

// The least-squares system is not positive definite at the penalty asked for.
struct SingularSystem : Error {
  using Error::Error;
};

// The calibration steps of each fit of a penalty search are capped at this many (those fits
// only rank the penalties; the final fit has the full budget, max_iter).
constexpr int kClsSearchMaxSteps = 25;

struct ClsOptions {
  double lambda = 0.5;  // ridge of the least-squares steps (times sqrt(n))
  int max_iter = 10;    // calibration steps
  double tol = 0.002;   // stop when the RMS change of the training scores is below this
  int threads = 1;
  // Penalty search: systems with at least this many columns (features + 1) are factored in
  // single precision for the values tried (falling back to double where that factorisation
  // fails); the final fit follows single_final_min.
  double single_factor_min = 0;
  // The final fit (with or without a search): systems with at least this many columns are
  // factored and solved in single precision, falling back to double where that factorisation
  // fails. The Gram matrix is summed in single precision within blocks of rows, so its entries
  // carry relative errors near single precision's already.
  double single_final_min = std::numeric_limits<double>::infinity();
  // Penalty search: stop once the penalty is chosen, without the final fit on all rows (the
  // fit returned is empty; the search is filled in).
  bool search_only = false;
  // Where the Gram matrix of single-precision features and the factorisations may run (the
  // GPU backend takes those its operation set allows; nullptr: the CPU).
  Backend* backend = nullptr;
};

struct ClsFit {
  Mat W0;                  // (p + 1) x K, last row the intercept
  std::vector<Mat> link;   // per step: 4K x K calibration coefficients C_t
  std::vector<Mat> delta;  // per step: (p + 1) x K, last row the intercept
  Vec change;              // per step: RMS change of the training scores
  Vec train_error;         // per step: training error rate of the scores
  int iterations = 0;
  bool converged = false;
  bool single_factor = false;  // factored and solved in single precision
  bool exact_gram = false;     // the Gram matrix was summed again in double precision (after
                               // its single-precision sums left the system indefinite)
  Mat scores;              // the final scores of the rows fitted (n x K), as cls_scores gives
                           // them for those rows
  // Wall time by stage; with a penalty search, seconds_search is the time of the fits on the
  // training part (their factorisations and steps), and the others belong to the final fit.
  double seconds_gram = 0, seconds_factor = 0, seconds_steps = 0, seconds_search = 0;
};

// y: classes 0..K-1. Throws Error when A is not positive definite (lambda = 0 with
// collinear features).
ClsFit cls_fit(const RowMajorF32& X, const IVec& y, int K, const ClsOptions& opt,
               const Callbacks& cb = Callbacks());
ClsFit cls_fit(const CMatRef& X, const IVec& y, int K, const ClsOptions& opt,
               const Callbacks& cb = Callbacks());

// Chooses the penalty by validation, then fits on all rows with it. Rows [0, n_train) are the
// training part and the rest the validation part; every penalty tried is fitted on the
// training part (with lambda sqrt(n_train) in A) and scored on the validation part by its error
// rate (ties broken by the squared distance between the projected scores and the one-hot
// labels). The Gram matrices of the two parts are computed once and summed for the final fit.
// exhaustive: try every value of `grid`; otherwise a local search from grid[start] that walks
// towards the better neighbour while it improves. `search` receives the values tried.
ClsFit cls_fit_select(const RowMajorF32& X, Eigen::Index n_train, const IVec& y, int K,
                      const ClsOptions& opt, const std::vector<double>& grid, int start,
                      bool exhaustive, HeadSearch& search, const Callbacks& cb = Callbacks());
ClsFit cls_fit_select(const CMatRef& X, Eigen::Index n_train, const IVec& y, int K,
                      const ClsOptions& opt, const std::vector<double>& grid, int start,
                      bool exhaustive, HeadSearch& search, const Callbacks& cb = Callbacks());

// The final scores of new rows (n x K), replaying the fitted steps; for a row of the fit's own
// design, exactly its entry of fit.scores.
Mat cls_scores(const CMatRef& X, const ClsFit& fit, int threads);
Mat cls_scores(const RowMajorF32& X, const ClsFit& fit, int threads);

// The products of the steps for a single-precision design: [X 1] W (n x K, W with p + 1 rows)
// and [X 1]' R ((p + 1) x K), summed in single precision within fixed row blocks and in double
// across them, so that they do not depend on the thread count.
Mat cls_product(const RowMajorF32& X, const Mat& W, int threads);
Mat cls_crossprod(const RowMajorF32& X, const Mat& R, int threads);

// Each row replaced by its Euclidean projection onto the probability simplex.
void simplex_project_rows(MatRef S);

// The Gram matrix [X 1]'[X 1] ((p + 1) x (p + 1), full), accumulated over fixed row chunks
// and column tiles so that it does not depend on the thread count. Single-precision input uses
// the widest vectorised kernel of linalg/simd.hpp up to `max_level` that the processor has (the
// fit allows all), Eigen when there is none.
Mat gram_with_intercept(const RowMajorF32& X, int threads,
                        SimdLevel max_level = SimdLevel::avx512,
                        const Callbacks& cb = Callbacks());
Mat gram_with_intercept(const CMatRef& X, int threads, const Callbacks& cb = Callbacks());
// The same with every product of the single-precision rows summed in double precision (the
// matrix the fits fall back to when the single-precision sums leave a system indefinite).
Mat gram_with_intercept_double_sums(const RowMajorF32& X, int threads,
                                    const Callbacks& cb = Callbacks());

}  // namespace kl
