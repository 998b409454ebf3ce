// Localized kernel machines: the model of one cell of a partition (partition.hpp), with its
// hyper-parameters chosen inside the cell by cross-validation over a grid, as liquidSVM does
// (Steinwart and Thomann's integrated selection; Meister and Steinwart 2016 for the rates).
//
// A cell's fit, for an SVM (C-classification, one-vs-one, or epsilon-regression) or kernel
// ridge regression / the least-squares SVM:
//   1. the grid: the widths `gamma` given, or `gamma_factor` times the cell's reference width
//      g0 = 1 / median(-log k_1(x_i, x_j)) over a seeded sample of pairs of the cell's rows (k_1
//      the kernel at width 1; for the Gaussian kernel 1 / the median squared distance), so the
//      grid follows the scale of each cell; the costs (SVM) or penalties (kernel ridge) given,
//      penalties as multiples of the rows they are fitted on;
//   2. `folds`-fold cross-validation on seeded folds (stratified by class for classification)
//      of the cell's rows, or of a seeded sample of `cv_rows` of them (stratified by class):
//      one kernel matrix per width, shared by the folds; the SVM costs as a path in increasing
//      order, each solve warm-started from the last; the mean validation error (classification)
//      or squared error (regression) of every grid point;
//   3. the grid point of least validation error (ties to the smaller cost, then the smaller
//      width); when it lies on an edge of the grid, the grid grows one step beyond that edge
//      (the ratio of the two outermost values) and the new width or cost is cross-validated,
//      at most `extend` steps in each direction; then the final fit on all of the cell's rows
//      with the chosen point, computed exactly as the
//      global learner computes it (so one cell holding every row gives the global model).
// With a single grid point there is nothing to choose: no cross-validation runs.
//
// Classification cells hold only some of the classes: the cell's classes are renumbered
// 0..k-1 (`classes` maps them back), a fold whose training rows lack a class is fitted on the
// classes it has (its held-out rows of the missing class count as errors), and a cell with one
// class is a constant model.
//
// Threads: the widths are tasks on `threads` worker threads (base/tasks.hpp), each single
// threaded; the final fit uses all of them. Nothing depends on the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "base/common.hpp"
#include "kernels/kernel.hpp"
#include "machines/kernel_ridge.hpp"
#include "machines/types.hpp"

namespace kl {

enum class CellTask { Classify, Regress, Ridge };

struct CellOptions {
  CellTask task = CellTask::Classify;
  // The kernel at a width; widths are not used when has_gamma is false.
  std::function<KernelPtr(double)> kernel_at;
  bool has_gamma = true;
  std::vector<double> gamma;         // absolute widths; empty: gamma_factor x reference
  std::vector<double> gamma_factor;  // relative widths of the default grid
  std::vector<double> cost;          // SVM costs, or kernel ridge penalties
  bool cost_per_row = false;         // penalties multiply the rows of each fit (kernel ridge)
  int folds = 5;
  int cv_rows = 0;                   // selection on a seeded sample of this many rows (0: all)
  int extend = 2;                    // steps the grid may grow beyond each edge
  SvmParams par;                     // tolerance, epsilon, cache, probability, ... (cost unused)
  std::vector<double> class_weight;  // one per class of the whole problem (classification)
  int threads = 1;
  std::uint64_t seed = 1;
};

struct CellResult {
  std::vector<double> gamma, cost;   // the grid (gamma empty when the kernel has no width)
  Mat cv;                            // mean validation error per (gamma, cost); empty: no CV
  double reference_gamma = std::numeric_limits<double>::quiet_NaN();
  int chosen_gamma = -1, chosen_cost = 0;
  double gamma_value = std::numeric_limits<double>::quiet_NaN(), cost_value = 0.0;
  double cv_error = std::numeric_limits<double>::quiet_NaN();
  int extended = 0;                  // steps the grid grew beyond its edges
  std::vector<int> classes;             // classification: the cell's classes (codes), ascending
  std::vector<BinaryMachine> machines;  // SVM: over the cell's classes 0..k-1 (or regression)
  KrrFit ridge;                         // kernel ridge: alpha (rows x outputs) and bias
};

// The reference width of the rows of X for a kernel family: 1 / median(-log k_1(x_i, x_j)) over
// up to `pairs` seeded pairs of distinct rows (1 when no pair differs).
double reference_gamma(CMatRef X, const std::function<KernelPtr(double)>& kernel_at, int pairs,
                       std::uint64_t seed);

// One cell's selection and fit. y: class codes 0..K-1 of the whole problem (classification and
// least-squares classification, K = class_weight.size()); z: responses (regression, including
// kernel ridge regression). Exactly one of y and z is non-null.
CellResult fit_cell(CMatRef X, const std::vector<int>* y, const std::vector<double>* z,
                    const CellOptions& opt, const Callbacks& cb);

}  // namespace kl
