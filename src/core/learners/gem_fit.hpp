// A whole GEM model fit in one call: for each ensemble member, the layers' directions (class
// moments and generalized eigenproblems), the representation each layer passes on, and the
// classifier on the last layer's features, with its penalty given or chosen by validation.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "base/common.hpp"
#include "learners/gem.hpp"
#include "learners/gem_head.hpp"

namespace kl {

// One layer: the eigenproblem settings (ridge, top, threshold, solver; the seed is per member)
// and the feature map of its projections.
struct GemLayerSettings {
  GemOptions dir;
  int base = 0;             // 0 smooth_sqrt, 1 relu_powers
  int degree = 1;
  bool keep_input = true;
  bool ones = false;
};

struct GemFitOptions {
  std::vector<GemLayerSettings> layers;
  // The head. lambda: one value (the penalty) or the grid searched; opt.n_train, single,
  // exhaustive and warm_rows are set per member by gem_fit.
  GemHeadOptions head;
  // cls search: try every value when a factorisation and its steps cost little next to the
  // Gram matrix (decided from the number of features), else a local search from head.start.
  bool cls_exhaustive_when_cheap = true;
  // A fit whose last layer's keep_max keeps out a direction that passed the threshold is a
  // comparison fit: with this set, its calibrated least-squares head stops after the search.
  bool search_only_when_capped = false;
  // A comparison fit on a sample of the rows: its calibrated least-squares head always stops
  // after the search.
  bool search_only = false;
  double single_cells = 2.5e7;  // feature matrices with more entries are held in single precision
  double memory_limit = std::numeric_limits<double>::infinity();  // bytes
};

// What differs between ensemble members: the class pairs, the held-out rows, the random
// Fourier map and the seeds.
struct GemMemberInput {
  std::vector<int> num, den;              // ordered class pairs, 0-based
  std::vector<Eigen::Index> validation;   // held-out rows (0-based, increasing); empty: none
  std::vector<std::uint64_t> seeds;       // one per layer, for the eigensolver's start
  std::vector<Eigen::Index> warm_rows;    // logistic head without a search: warm-start rows
  InputMap map;                           // applied to the input rows (identity when inactive)
};

struct GemLayerFit {
  std::vector<GemPair> pairs;  // per pair: spectrum and kept directions
  Mat V;                       // all kept directions, pair after pair (d x kept)
};

struct GemMemberFit {
  std::vector<GemLayerFit> layers;
  GemHeadFit head;
  double seconds_directions = 0, seconds_features = 0, seconds_head = 0;
};

// Fits every member on the rows x (n x d) with classes y (0..K-1). With held-out rows, the
// rows are reordered (the others first), the directions of every layer are learned from the
// other rows only and the head's penalty is chosen on the held-out rows (gem_head_fit); the
// head's training scores (head.cls.scores) are then in the reordered row order. Errors name
// the argument to change; an error about one class is a ClassError.
std::vector<GemMemberFit> gem_fit(const CMatRef& x, const IVec& y, int K,
                                  const std::vector<GemMemberInput>& members,
                                  const GemFitOptions& opt, const Callbacks& cb = Callbacks());

// "1.5 GiB": a byte count for messages.
std::string format_bytes(double bytes);

}  // namespace kl
