// The classifier of a GEM model on its last layer's features: the features built once (double
// or single precision), standardised, then a multinomial logistic regression or calibrated least
// squares, with the penalty either given or chosen by validation on a split of the rows.
#pragma once

#include <vector>

#include "heads/cls.hpp"
#include "base/common.hpp"
#include "learners/gem.hpp"
#include "heads/logistic.hpp"

namespace kl {

struct GemHeadOptions {
  int head = 0;                 // 0 logistic regression, 1 calibrated least squares
  // One value: the penalty. Several: the grid searched (descending for the logistic head,
  // whose path is warm-started from the largest value; any order for cls).
  std::vector<double> lambda;
  int start = 0;                // cls local search: index of the first value tried
  bool exhaustive = false;      // cls: try every value
  int patience = 2;             // logistic path: stop after this many values without improving
  Eigen::Index n_train = 0;     // with a search: rows [0, n_train) train, the rest validate
  int max_iter = 500;
  double tol = 1e-6;
  bool standardize = true;
  bool single = false;          // hold the features in single precision
  double single_factor_min = 0;  // cls search: see ClsOptions::single_factor_min
  double single_final_min = std::numeric_limits<double>::infinity();  // see ClsOptions
  bool search_only = false;     // cls search: see ClsOptions::search_only
  int threads = 1;
  Backend* backend = nullptr;   // cls: see ClsOptions::backend
  // Logistic head without a search: a fit on these rows starts the full fit (empty: none).
  std::vector<Eigen::Index> warm_rows;
};

struct GemHeadFit {
  Vec center, scale;            // standardisation (empty without it)
  Eigen::Index p = 0;           // features
  bool single = false;
  int head = 0;
  double lambda = 0.0;          // the penalty of the final fit
  bool searched = false;
  bool search_only = false;     // cls: the search alone (no final fit: cls is empty)
  HeadSearch search;
  LogisticFit logistic;
  int sub_iterations = 0;       // iterations of the warm-start fits (subsample or path)
  ClsFit cls;
};

// z: the layer's input (n x d; with an active map, the unmapped rows), V its directions, y the
// classes 0..K-1 of the rows.
GemHeadFit gem_head_fit(const CMatRef& z, const CMatRef& V, int base, int degree,
                        bool keep_input, bool ones, const IVec& y, int K,
                        const GemHeadOptions& opt, const Callbacks& cb = Callbacks(),
                        const InputMap& map = InputMap());

// Scores of a calibrated least-squares head fitted on single-precision features, for the
// layer's input rows z: the features built and standardised (with the training statistics
// center / scale when `standardize`) in single precision exactly as the fit built them, then
// the fitted steps replayed. For the training rows this gives the fit's own scores.
Mat gem_cls_scores_single(const CMatRef& z, const CMatRef& V, int base, int degree,
                          bool keep_input, bool ones, bool standardize, const Vec& center,
                          const Vec& scale, const ClsFit& fit, int threads,
                          const Callbacks& cb = Callbacks(), const InputMap& map = InputMap());

// The logistic-regression penalty chosen by validation along a warm-started path (grid
// descending): each value is fitted on rows [0, n_train) starting from the previous solution and
// scored on the rest by its error rate (ties broken by the mean deviance); the path stops after
// `patience` values without improvement. The path's fits stop after at most 100 iterations
// (they only rank the penalties). The result is the fit on all rows at the chosen value, started
// from its training-part solution, with the full iteration budget.
LogisticFit logistic_fit_select(const CMatRef& X, Eigen::Index n_train, const IVec& y, int K,
                                const LogisticOptions& opt, const std::vector<double>& grid,
                                int patience, HeadSearch& search, int& path_iterations,
                                const Callbacks& cb = Callbacks());
LogisticFit logistic_fit_select(const RowMajorF32& X, Eigen::Index n_train, const IVec& y, int K,
                                const LogisticOptions& opt, const std::vector<double>& grid,
                                int patience, HeadSearch& search, int& path_iterations,
                                const Callbacks& cb = Callbacks());

}  // namespace kl
